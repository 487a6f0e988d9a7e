//! RememberStack providers: the OpenAI-compatible embeddings and chat clients, the
//! deterministic, offline hashing embedder and a scripted chat model for tests.
//!
//! Not for direct use: depend on `rememberstack`.
//!
//! The embedders implement [`rememberstack_core::embed::Embedder`]:
//!
//! * [`HashingEmbedder`] — deterministic feature hashing of words and character
//!   trigrams. No network, no model, identical vectors on every machine. It stands in
//!   when the default semantic model cannot be had, and says so
//!   ([`rememberstack_core::embed::Embedder::degraded`]); its generation string
//!   (`hashing/feature-hash-v1/d256/v1`) says plainly that it is not a semantic model.
//! * [`OpenAiEmbedder`] — a client for any `/embeddings` endpoint that speaks the
//!   OpenAI wire format (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server), with
//!   batching, `Retry-After`-aware backoff and strict answer validation.
//! * `LocalEmbedder` (feature `local-embedder`, on by default in the facade) — a
//!   sentence-embedding model such as all-MiniLM-L6-v2 run in-process on the CPU
//!   (candle), loaded from a directory or from the [`models`] cache; no network
//!   after the first download. Without the feature, [`EmbedderConfig::Local`] still
//!   parses; [`build_embedder`] refuses a model directory, and [`resolve_embedder`]
//!   stands the hashing embedder in for the cached model.
//! * `StaticEmbedder` (feature `static-embedder`, on by default in the facade) — a
//!   static model2vec-style table: a text's vector is the weighted mean of its
//!   tokens' rows, L2-normalized. No neural network, thousands of texts a second.
//!   Without the feature, [`EmbedderConfig::Static`] parses and [`build_embedder`]
//!   refuses it.
//!
//! [`EmbedderConfig`] is the serializable provider choice the facade reads from its
//! configuration, and [`resolve_embedder`] turns it into a shared embedder.
//!
//! Both chat models implement [`rememberstack_core::chat::ChatModel`]:
//!
//! * [`OpenAiChatModel`] — a client for any OpenAI-compatible `/chat/completions`
//!   endpoint asking for strict `json_schema` output, falling back to `json_object`
//!   when the provider refuses it ([`StrictMode`]), and validating every answer
//!   locally against the request's schema.
//! * [`ScriptedChatModel`] — answers from a script keyed by call key and request
//!   hash, for hermetic pipeline tests.
//!
//! [`ChatConfig`] is the serializable chat-provider choice, and
//! [`build_chat_models`] turns it into [`ChatSeats`]: one model per pipeline seat.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod chat;
mod chat_config;
mod config;
mod hashing;
mod http;
#[cfg(feature = "local-embedder")]
mod local;
#[cfg(any(feature = "local-embedder", feature = "static-embedder"))]
mod model_files;
pub mod models;
mod openai;
mod scripted;
#[cfg(feature = "static-embedder")]
mod static_model;

pub use chat::{OpenAiChatConfig, OpenAiChatModel, StrictMode, is_strict_mode_refusal};
pub use chat_config::{ChatConfig, ChatSeats, OFFLINE_MODEL, build_chat_models};
pub use config::{
    DEFAULT_API_KEY_ENV, EmbedderConfig, ResolvedEmbedder, build_embedder, resolve_cached,
    resolve_embedder,
};
pub use hashing::{DEFAULT_HASHING_DIMENSION, HashingEmbedder};
#[cfg(feature = "local-embedder")]
pub use local::LocalEmbedder;
pub use openai::{OpenAiEmbedder, OpenAiEmbedderConfig};
pub use scripted::ScriptedChatModel;
#[cfg(feature = "static-embedder")]
pub use static_model::StaticEmbedder;
