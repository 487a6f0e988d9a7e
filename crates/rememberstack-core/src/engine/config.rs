//! The engine's configuration.

use super::*;

/// Engine configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Largest accepted source, in bytes.
    pub max_source_bytes: u64,
    /// Chunking parameters.
    pub chunk: ChunkParams,
    /// How long a claimed work item is leased.
    #[serde(with = "secs")]
    pub lease: Duration,
    /// Retry backoff base.
    #[serde(with = "secs")]
    pub backoff_base: Duration,
    /// Retry backoff cap.
    #[serde(with = "secs")]
    pub backoff_max: Duration,
    /// Work items claimed per batch.
    pub claim_limit: u32,
    /// Work items claimed per batch of a stage that runs as one write group
    /// ([`Engine::runs_grouped`]) on a store one process writes
    /// ([`StoreTuning::one_writer_process`](crate::store::StoreTuning)): no model call waits in such a batch,
    /// and the batch's reads and commits are shared by more items.
    pub grouped_claim_limit: u32,
    /// Largest `k` a search accepts.
    pub max_k: usize,
    /// Entity resolution and fact adjudication (E3).
    pub facts: FactsConfig,
    /// How long feedback on recall receipts is kept (seconds; default 180 days).
    #[serde(with = "secs")]
    pub feedback_retention: Duration,
    /// How a search's semantic and lexical lists are fused (default: score fusion
    /// at equal weights).
    pub fusion: crate::fuse::Fusion,
    /// How results' relevance is calibrated, and the floor below which an answer
    /// is `no_relevant_memory`.
    pub relevance: crate::relevance::RelevanceConfig,
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        if !(0.0..=1e9).contains(&v) {
            return Err(serde::de::Error::custom("duration out of range"));
        }
        Ok(Duration::from_secs_f64(v))
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_source_bytes: 64 * 1024 * 1024,
            chunk: ChunkParams::default(),
            lease: Duration::from_secs(300),
            backoff_base: Duration::from_secs(2),
            backoff_max: Duration::from_secs(300),
            claim_limit: 32,
            grouped_claim_limit: 1024,
            max_k: 100,
            facts: FactsConfig::default(),
            feedback_retention: Duration::from_secs(180 * 24 * 3600),
            fusion: crate::fuse::Fusion::default(),
            relevance: crate::relevance::RelevanceConfig::default(),
        }
    }
}

impl EngineConfig {
    pub(super) fn backoff(&self) -> Backoff {
        Backoff {
            base: self.backoff_base,
            max: self.backoff_max,
        }
    }
}
