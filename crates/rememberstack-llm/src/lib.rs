//! RememberStack providers: the OpenAI-compatible embeddings client and the
//! deterministic, offline hashing embedder.
//!
//! Not for direct use: depend on `rememberstack`.
//!
//! Both embedders implement [`rememberstack_core::embed::Embedder`]:
//!
//! * [`HashingEmbedder`] — deterministic feature hashing of words and character
//!   trigrams. No network, no model, identical vectors on every machine. It is the
//!   default when no embedding provider is configured; its generation string
//!   (`hashing/feature-hash-v1/d256/v1`) says plainly that it is not a semantic model.
//! * [`OpenAiEmbedder`] — a client for any `/embeddings` endpoint that speaks the
//!   OpenAI wire format (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server), with
//!   batching, `Retry-After`-aware backoff and strict answer validation.
//!
//! [`EmbedderConfig`] is the serializable provider choice the facade reads from its
//! configuration, and [`build_embedder`] turns it into a shared embedder.
#![forbid(unsafe_code)]
#![warn(clippy::print_stdout, clippy::print_stderr)]
#![warn(missing_docs)]

mod config;
mod hashing;
mod openai;

pub use config::{DEFAULT_API_KEY_ENV, EmbedderConfig, build_embedder};
pub use hashing::{DEFAULT_HASHING_DIMENSION, HashingEmbedder};
pub use openai::{OpenAiEmbedder, OpenAiEmbedderConfig};
