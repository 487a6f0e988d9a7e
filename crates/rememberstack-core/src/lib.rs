//! RememberStack core: domain types, text processing, the work ledger, the
//! [`MemoryStore`](store::MemoryStore) trait and the provider traits.
//!
//! Not for direct use: depend on the `rememberstack` facade. This crate does no
//! IO of its own: stores and providers are reached through traits.
#![forbid(unsafe_code)]
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod chat;
pub mod claims;
pub mod embed;
pub mod engine;
pub mod entities;
pub mod envelope;
pub mod error;
pub mod facts;
pub mod forget;
pub mod fuse;
pub mod hash;
pub mod ids;
pub mod keys;
pub mod ledger;
pub mod limits;
pub mod relevance;
pub mod source;
pub mod store;
pub mod text;
pub mod time;

pub use error::{Error, ErrorCode, Result};
pub use ids::*;
