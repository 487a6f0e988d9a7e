//! The `Embedder` port and the provider error type shared by every provider.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a vector was made by. Part of every stored vector's generation: vectors of
/// different generations never meet in one ranking.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// The provider family, e.g. `openai-compatible` or `hashing`.
    pub provider: String,
    /// The model name as the provider knows it.
    pub model: String,
    /// The vector dimension.
    pub dimension: usize,
    /// The adapter's own version (bumped when the adapter changes how it embeds).
    pub version: String,
}

impl EmbedderIdentity {
    /// The generation key: `provider/model/dDIM/vVERSION`.
    pub fn generation(&self) -> String {
        format!(
            "{}/{}/d{}/v{}",
            self.provider, self.model, self.dimension, self.version
        )
    }
}

/// What a text is embedded for. Some models use different prefixes for queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbedPurpose {
    /// A stored passage.
    Document,
    /// A search query.
    Query,
}

/// How an embedder falls short of a semantic model ([`Embedder::degraded`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Degraded {
    /// What the embedder is instead, e.g. [`Degraded::LEXICAL`].
    pub kind: String,
    /// Why no semantic model is used, when one was configured but could not be had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Degraded {
    /// The kind of an embedder that matches words and word pieces, not meaning.
    pub const LEXICAL: &'static str = "lexical embedder";
}

/// Turns texts into vectors.
#[async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// The identity every vector from this embedder is stamped with.
    fn identity(&self) -> &EmbedderIdentity;
    /// The largest batch one call should carry.
    fn max_batch(&self) -> usize {
        64
    }
    /// Whether vectors are computed in this process (no network call): pipeline
    /// work that embeds may then run as one write group
    /// ([`crate::store::MemoryStore::grouped`]). Default `false`.
    fn is_in_process(&self) -> bool {
        false
    }
    /// Why this embedder's vectors do not carry meaning, when they do not (a
    /// lexical stand-in for a semantic model). Envelopes and `status` say so.
    /// Default `None`.
    fn degraded(&self) -> Option<Degraded> {
        None
    }
    /// Embed `texts`, returning one vector of `identity().dimension` per text, in order.
    async fn embed(
        &self,
        texts: &[String],
        purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError>;
}

/// A provider failure. `is_retryable` tells the work ledger whether to back off
/// and retry or to dead-letter.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The request never got an HTTP answer (connect, timeout, reset).
    #[error("provider transport error: {message}")]
    Transport {
        /// What failed.
        message: String,
    },
    /// The provider answered with an error status.
    #[error("provider answered HTTP {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The provider's message (truncated, never a secret).
        message: String,
        /// The provider's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// The provider answered 2xx with a body that does not have the expected shape.
    #[error("provider answer is malformed: {message}")]
    Malformed {
        /// What was wrong with it.
        message: String,
    },
    /// The provider returned vectors of the wrong dimension.
    #[error("provider returned vectors of dimension {got}, configured dimension is {expected}")]
    DimensionMismatch {
        /// The configured dimension.
        expected: usize,
        /// What came back.
        got: usize,
    },
    /// The provider is misconfigured (missing key, bad URL).
    #[error("provider configuration error: {0}")]
    Config(String),
}

impl ProviderError {
    /// Whether a later attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Transport { .. } | ProviderError::Malformed { .. } => true,
            ProviderError::Status { status, .. } => *status == 429 || *status >= 500,
            ProviderError::DimensionMismatch { .. } | ProviderError::Config(_) => false,
        }
    }
}

/// The dot product of two vectors of equal length, summed in eight lanes so that
/// the compiler can vectorize it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let mut sum: f32 = lanes.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}

/// `v` scaled to unit length (a zero vector stays zero): the cosine of two unit
/// vectors is their [`dot`] product.
pub fn unit(v: &[f32]) -> Vec<f32> {
    let norm = dot(v, v).sqrt();
    if norm == 0.0 {
        v.to_vec()
    } else {
        v.iter().map(|x| x / norm).collect()
    }
}

/// Cosine similarity of two vectors of equal length (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let mut dot = 0.0f32;
    let mut na = 0.0f32;
    let mut nb = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}
