//! Integration tests of rememberstack-llm: one binary, hermetic (a local wiremock
//! server stands in for every provider; no network).

mod chat;
mod config;
mod hashing;
mod openai;
mod scripted_chat;
