//! The work ledger (D12, D67): every unit of pipeline work is a `processing_state`
//! row keyed by (namespace, target, stage, component version). The rules of the
//! state machine live here; stores only commit them atomically.

use crate::ids::{NamespaceId, VersionId, WorkId};
use crate::time::Timestamp;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use uuid::Uuid;

/// The default total execution limit: one initial attempt plus two retries (D67).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// A pipeline stage.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stage {
    /// E0: convert the original to `document.md`, blockize, build sections. Target: a version.
    #[serde(rename = "e0.prepare")]
    Prepare,
    /// E1: pack blocks into chunks. Target: a version.
    #[serde(rename = "e1.chunk")]
    Chunk,
    /// E1: embed one chunk with the configured embedder. Target: a chunk.
    #[serde(rename = "e1.embed")]
    Embed,
    /// E2: extract claims from one chunk (Selection, Claimify, grounding). Target: a chunk.
    #[serde(rename = "e2.extract")]
    Extract,
    /// E2: embed one claim with the configured embedder. Target: a claim.
    #[serde(rename = "e2.embed")]
    EmbedClaims,
    /// E3: normalize one claim into entity references, relations and observations,
    /// resolve its entities and stage its fact assertions (D88). Target: a claim.
    #[serde(rename = "e3.normalize")]
    Normalize,
    /// E3: apply one entity's staged assertions in order once its version's
    /// normalization barrier is complete (D90). Target: a version-scoped entity unit.
    #[serde(rename = "e3.adjudicate")]
    Adjudicate,
    /// E3: embed one fact's label. Target: a fact.
    #[serde(rename = "e3.embed")]
    EmbedFacts,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 8] = [
        Stage::Prepare,
        Stage::Chunk,
        Stage::Embed,
        Stage::Extract,
        Stage::EmbedClaims,
        Stage::Normalize,
        Stage::Adjudicate,
        Stage::EmbedFacts,
    ];

    /// The stable name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Stage::Prepare => "e0.prepare",
            Stage::Chunk => "e1.chunk",
            Stage::Embed => "e1.embed",
            Stage::Extract => "e2.extract",
            Stage::EmbedClaims => "e2.embed",
            Stage::Normalize => "e3.normalize",
            Stage::Adjudicate => "e3.adjudicate",
            Stage::EmbedFacts => "e3.embed",
        }
    }
    /// Parse the stable name.
    pub fn parse(s: &str) -> Result<Self> {
        Stage::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown stage `{s}`: use one of e0.prepare, e1.chunk, e1.embed, e2.extract, e2.embed, e3.normalize, e3.adjudicate, e3.embed"
                ))
            })
    }
    /// What kind of record the stage works on.
    pub fn target_kind(&self) -> TargetKind {
        match self {
            Stage::Prepare | Stage::Chunk => TargetKind::Version,
            Stage::Embed | Stage::Extract => TargetKind::Chunk,
            Stage::EmbedClaims | Stage::Normalize => TargetKind::Claim,
            Stage::Adjudicate => TargetKind::Unit,
            Stage::EmbedFacts => TargetKind::Fact,
        }
    }
}

/// The kind of record a work item targets.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A document version.
    Version,
    /// A chunk.
    Chunk,
    /// A claim.
    Claim,
    /// A version-scoped entity unit (D90): the id derives from (version, entity).
    Unit,
    /// A fact.
    Fact,
}

impl TargetKind {
    /// The stable name.
    pub fn as_str(&self) -> &'static str {
        match self {
            TargetKind::Version => "version",
            TargetKind::Chunk => "chunk",
            TargetKind::Claim => "claim",
            TargetKind::Unit => "unit",
            TargetKind::Fact => "fact",
        }
    }
    /// Parse the stable name.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "version" => Ok(TargetKind::Version),
            "chunk" => Ok(TargetKind::Chunk),
            "claim" => Ok(TargetKind::Claim),
            "unit" => Ok(TargetKind::Unit),
            "fact" => Ok(TargetKind::Fact),
            other => Err(Error::store(format!("unknown target kind `{other}`"))),
        }
    }
}

/// A work item's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkStatus {
    /// Waiting to be claimed (possibly deferred, see `defer_reason`).
    Pending,
    /// Claimed by a worker holding a lease.
    Running,
    /// Finished.
    Done,
    /// Failed with attempts remaining; waits for its backoff.
    Failed,
    /// Failed for good; replayed only by an explicit retry.
    DeadLetter,
}

impl WorkStatus {
    /// Every status.
    pub const ALL: [WorkStatus; 5] = [
        WorkStatus::Pending,
        WorkStatus::Running,
        WorkStatus::Done,
        WorkStatus::Failed,
        WorkStatus::DeadLetter,
    ];
    /// The stable name.
    pub fn as_str(&self) -> &'static str {
        match self {
            WorkStatus::Pending => "pending",
            WorkStatus::Running => "running",
            WorkStatus::Done => "done",
            WorkStatus::Failed => "failed",
            WorkStatus::DeadLetter => "dead_letter",
        }
    }
    /// Parse the stable name.
    pub fn parse(s: &str) -> Result<Self> {
        WorkStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| Error::store(format!("unknown work status `{s}`")))
    }
    /// Done or dead-lettered: nothing more happens without a caller.
    pub fn is_terminal(&self) -> bool {
        matches!(self, WorkStatus::Done | WorkStatus::DeadLetter)
    }
}

/// Why a pending or failed item waits (D67, D117).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeferReason {
    /// The caller asked for later delivery.
    Scheduled,
    /// A failed attempt waits for its backoff.
    RetryBackoff,
    /// Healthy work parked until its budget window rolls.
    Budget,
    /// No conversion route exists for the stored original; parked, never failed.
    NoRoute,
    /// Waits for its version's barrier (every extraction and normalization done).
    Barrier,
}

impl DeferReason {
    /// The stable name.
    pub fn as_str(&self) -> &'static str {
        match self {
            DeferReason::Scheduled => "scheduled",
            DeferReason::RetryBackoff => "retry_backoff",
            DeferReason::Budget => "budget",
            DeferReason::NoRoute => "no_route",
            DeferReason::Barrier => "barrier",
        }
    }
    /// Parse the stable name.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "scheduled" => Ok(DeferReason::Scheduled),
            "retry_backoff" => Ok(DeferReason::RetryBackoff),
            "budget" => Ok(DeferReason::Budget),
            "no_route" => Ok(DeferReason::NoRoute),
            "barrier" => Ok(DeferReason::Barrier),
            other => Err(Error::store(format!("unknown defer reason `{other}`"))),
        }
    }
}

/// A unit of work to enqueue. Enqueueing is idempotent on
/// (namespace, target kind, target id, stage, component version).
#[derive(Clone, Debug, PartialEq)]
pub struct NewWork {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The target's kind.
    pub target_kind: TargetKind,
    /// The target's id.
    pub target_id: Uuid,
    /// The document version the target belongs to (the barrier group).
    pub version_id: VersionId,
    /// The stage.
    pub stage: Stage,
    /// The component version that will do the work.
    pub component_version: String,
    /// Earliest claim time.
    pub not_before: Timestamp,
    /// Why it waits, if it does.
    pub defer_reason: Option<DeferReason>,
    /// Execution limit.
    pub max_attempts: u32,
}

impl NewWork {
    /// Immediate work for `stage` on `target_id` of `version_id`.
    pub fn now(
        namespace_id: NamespaceId,
        stage: Stage,
        target_id: Uuid,
        version_id: VersionId,
        component_version: impl Into<String>,
        now: Timestamp,
    ) -> Self {
        NewWork {
            namespace_id,
            target_kind: stage.target_kind(),
            target_id,
            version_id,
            stage,
            component_version: component_version.into(),
            not_before: now,
            defer_reason: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}

/// A ledger row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkItem {
    /// The row id.
    pub id: WorkId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The target's kind.
    pub target_kind: TargetKind,
    /// The target's id.
    pub target_id: Uuid,
    /// The barrier group.
    pub version_id: VersionId,
    /// The stage.
    pub stage: Stage,
    /// The component version.
    pub component_version: String,
    /// The status.
    pub status: WorkStatus,
    /// Handler executions that began.
    pub attempts: u32,
    /// Execution limit.
    pub max_attempts: u32,
    /// Earliest claim time.
    pub not_before: Timestamp,
    /// Why it waits.
    pub defer_reason: Option<DeferReason>,
    /// The worker holding the lease.
    pub lease_owner: Option<String>,
    /// When the lease expires.
    pub lease_expires_at: Option<Timestamp>,
    /// The last failure.
    pub last_error: Option<String>,
    /// Created.
    pub created_at: Timestamp,
    /// Last changed.
    pub updated_at: Timestamp,
}

/// A request to claim due work.
#[derive(Clone, Debug)]
pub struct ClaimRequest {
    /// The claiming worker.
    pub owner: String,
    /// Stages to claim from, in priority order (empty = any).
    pub stages: Vec<Stage>,
    /// At most this many items, all of one stage.
    pub limit: u32,
    /// Stages claimed in batches of another size than `limit` (see
    /// [`ClaimRequest::limit_for`]).
    pub stage_limits: Vec<(Stage, u32)>,
    /// Lease expiry for the claimed items.
    pub lease_until: Timestamp,
    /// The claim instant.
    pub now: Timestamp,
}

impl ClaimRequest {
    /// At most how many items of `stage` one claim takes: its entry in
    /// `stage_limits`, else `limit`.
    pub fn limit_for(&self, stage: Stage) -> u32 {
        self.stage_limits
            .iter()
            .find(|(s, _)| *s == stage)
            .map_or(self.limit, |(_, n)| *n)
    }
}

/// How a failed attempt ends.
#[derive(Clone, Debug, PartialEq)]
pub enum FailureOutcome {
    /// Back to `failed`, claimable again at `retry_at`.
    Retry {
        /// When.
        retry_at: Timestamp,
    },
    /// Dead-lettered.
    DeadLetter,
}

/// Retry backoff policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// Delay after the first failure.
    pub base: Duration,
    /// Upper bound.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(2),
            max: Duration::from_secs(300),
        }
    }
}

impl Backoff {
    /// The delay after the `attempts`-th failed attempt (1-based): base × 4^(attempts-1), capped.
    pub fn delay(&self, attempts: u32) -> Duration {
        let exp = attempts.saturating_sub(1).min(16);
        let factor = 4u32.saturating_pow(exp);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// Decide the outcome of a failure of `item` (whose `attempts` already counts this one).
    pub fn outcome(&self, item: &WorkItem, retryable: bool, now: Timestamp) -> FailureOutcome {
        if !retryable || item.attempts >= item.max_attempts {
            FailureOutcome::DeadLetter
        } else {
            let d = chrono::Duration::from_std(self.delay(item.attempts))
                .unwrap_or(chrono::Duration::seconds(300));
            FailureOutcome::Retry { retry_at: now + d }
        }
    }
}

/// Work leased now by one holder (a process on the embedded store, a worker on
/// PostgreSQL), as a `process` waiting for it reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// Who holds the leases (`process 1234`, `worker-…`).
    pub holder: String,
    /// Items leased.
    pub items: u64,
    /// When the last of those leases runs out.
    pub until: Timestamp,
}

/// Barrier status of one version for one stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BarrierStatus {
    /// Units of the stage for the version.
    pub total: u64,
    /// Units done.
    pub done: u64,
    /// Units dead-lettered.
    pub dead_letter: u64,
}

impl BarrierStatus {
    /// Every unit finished successfully. A dead letter never counts as finished:
    /// the barrier holds until it is replayed and done.
    pub fn is_complete(&self) -> bool {
        self.done == self.total
    }
    /// Every unit is terminal, at least one dead.
    pub fn is_stalled(&self) -> bool {
        self.dead_letter > 0 && self.done + self.dead_letter == self.total
    }
}

/// Ledger counts for one (stage, status).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkCount {
    /// The stage.
    pub stage: Stage,
    /// The status.
    pub status: WorkStatus,
    /// Parked rows among them (pending with `no_route`).
    pub parked_no_route: u64,
    /// How many rows.
    pub count: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let b = Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(10),
        };
        assert_eq!(b.delay(1), Duration::from_secs(1));
        assert_eq!(b.delay(2), Duration::from_secs(4));
        assert_eq!(b.delay(3), Duration::from_secs(10));
        assert_eq!(b.delay(40), Duration::from_secs(10));
    }

    #[test]
    fn stage_names_round_trip() {
        for s in Stage::ALL {
            assert_eq!(Stage::parse(s.as_str()).unwrap(), s);
        }
        assert!(Stage::parse("e9.nope").is_err());
    }

    #[test]
    fn barrier_never_skips_dead_letters() {
        let b = BarrierStatus {
            total: 3,
            done: 2,
            dead_letter: 1,
        };
        assert!(!b.is_complete());
        assert!(b.is_stalled());
    }
}
