//! Integration tests of rememberstack-llm: one binary, hermetic (a local wiremock
//! server stands in for every provider; no network). The `local` tests need the
//! `local-embedder` feature and model files named by `REMEMBERSTACK_TEST_MODEL_DIR`.

mod chat;
mod config;
mod hashing;
#[cfg(feature = "local-embedder")]
mod local;
mod openai;
mod scripted_chat;
