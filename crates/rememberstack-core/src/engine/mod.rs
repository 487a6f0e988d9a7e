//! The engine: ingest (E0), the pipeline stages run from the work ledger (E0/E1),
//! hybrid chunk search, document listings and ledger status. One instance is
//! shared by every shell (library, CLI, later the server).

use crate::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use crate::envelope::*;
use crate::fuse::rrf;
use crate::hash::{sha256_hex, sha256_parts};
use crate::ids::*;
use crate::ledger::*;
use crate::source::*;
use crate::store::*;
use crate::text::{self, ChunkParams, SectionRole, SourceFormat};
use crate::time::{Clock, Timestamp};
use crate::{Error, ErrorCode, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

mod context;
mod extract;
mod facts;
mod keys;
mod lifecycle;
mod primitives;
mod proposals;
mod query_vectors;
mod search;

pub use context::{
    ClaimsAndSourcesInput, CombinedContextInput, FactsContextInput, OperationDescriptor,
    ReceiptResolution, ResolveEntityInput, ResolvedRecord, TemporalScope, operations,
};
pub use extract::{EXTRACT_NEIGHBOURS, next_current_claims};
pub use facts::{
    EntityDetail, FactModels, FactPage, FactQuery, FactTrace, FactsConfig, TracedEvidence,
    profile_summary, unit_id,
};
pub use lifecycle::{
    AppendReceipt, ExportSelection, FactCorrection, FeedbackInput, NoteInput, NotePage,
    PACK_FORMAT, canonical_json,
};
pub use primitives::{
    DocumentFilter, DocumentQuery, DocumentResult, HYDRATE_MAX_RECORDS, HydratedEvidence,
    HydratedRecord, NEIGHBORHOOD_MAX_DEPTH, NEIGHBORHOOD_MAX_EXPANSIONS, NEIGHBORHOOD_MAX_FRONTIER,
    NEIGHBORHOOD_MAX_RESULTS, NeighborhoodRequest, PathResult, RecordRef,
};
pub use proposals::{AUTO_MERGES_PER_PASS, MAX_PROPOSAL_SCAN, MergeProposal};

/// The version of the deterministic embedding-input policy (D80).
pub const EMBED_INPUT_POLICY_VERSION: &str = "embed-input-v1";

/// The setting key holding the component versions last seen on open.
const COMPONENTS_SETTING: &str = "component_versions";

/// The setting key holding the secret that signs continuation cursors.
const CURSOR_SECRET_SETTING: &str = "cursor_secret";

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
    /// ([`MemoryStore::locks_in_process`]): no model call waits in such a batch,
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
    fn backoff(&self) -> Backoff {
        Backoff {
            base: self.backoff_base,
            max: self.backoff_max,
        }
    }
}

/// What an ingest did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IngestReceipt {
    /// The namespace.
    pub namespace: String,
    /// The lineage.
    pub document_id: DocumentId,
    /// The created (or, for identical bytes, existing) version.
    pub version_id: VersionId,
    /// `created` or `unchanged`.
    pub outcome: String,
    /// Whether the lineage was new.
    pub new_lineage: bool,
    /// The routed format, or `None` when the original is parked without a route.
    pub format: Option<SourceFormat>,
    /// Whether the original was parked (`defer_reason = no_route`).
    pub parked: bool,
    /// The lineage key.
    pub source_kind: String,
    /// The lineage key.
    pub source_ref: String,
}

/// What one drain did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DrainReport {
    /// Work items completed.
    pub completed: u64,
    /// Attempts that failed and will be retried.
    pub retried: u64,
    /// Items dead-lettered.
    pub dead_lettered: u64,
    /// Items parked.
    pub parked: u64,
    /// The next instant at which waiting work becomes due, if any.
    pub next_wakeup: Option<Timestamp>,
    /// Per stage (keyed by the stage name, e.g. `e3.normalize`): batches, items
    /// claimed and time spent running them. Stages that ran nothing are absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stages: BTreeMap<String, StageStats>,
}

/// What one stage did during a drain.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStats {
    /// Batches of this stage that ran.
    pub batches: u64,
    /// Work items claimed by those batches (completed, retried, parked or
    /// dead-lettered).
    pub items: u64,
    /// Wall time inside those batches (running the stage and settling its items;
    /// claiming excluded), in microseconds.
    pub micros: u64,
}

impl StageStats {
    /// Seconds inside this stage's batches.
    pub fn secs(&self) -> f64 {
        self.micros as f64 / 1e6
    }
}

impl DrainReport {
    /// Fold another report (of a later drain) into this one. `next_wakeup` is
    /// taken from `other`.
    pub fn add(&mut self, other: &DrainReport) {
        self.completed += other.completed;
        self.retried += other.retried;
        self.dead_lettered += other.dead_lettered;
        self.parked += other.parked;
        self.next_wakeup = other.next_wakeup;
        for (stage, s) in &other.stages {
            let into = self.stages.entry(stage.clone()).or_default();
            into.batches += s.batches;
            into.items += s.items;
            into.micros += s.micros;
        }
    }
}

/// A chunk search request.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchRequest {
    /// The namespace slug.
    pub namespace: String,
    /// The caller's text (never query syntax).
    pub query: String,
    /// Results per page.
    pub k: usize,
    /// Section roles to include; `None` drops references, nav, boilerplate and legal.
    pub roles: Option<Vec<SectionRole>>,
    /// A continuation from a previous page.
    pub cursor: Option<String>,
    /// Claims only: include claims that are no longer current testimony (audit).
    pub include_retired: bool,
    /// When not empty: only records about these entities (merges are followed).
    pub entities: Vec<EntityId>,
    /// When set: only records from the documents this filter admits (D134), applied
    /// before the top-k cut. Chunks of live versions, claims of the lineages, facts
    /// through current supporting claims.
    pub documents: Option<DocumentFilter>,
    /// Chunks: rank the semantic channel by an exact scan even where the store
    /// has an approximate index (PostgreSQL); slower on large stores, never
    /// approximate.
    pub exact: bool,
}

impl SearchRequest {
    /// A first-page request for `query` in `namespace`.
    pub fn new(namespace: impl Into<String>, query: impl Into<String>, k: usize) -> Self {
        SearchRequest {
            namespace: namespace.into(),
            query: query.into(),
            k,
            roles: None,
            cursor: None,
            include_retired: false,
            entities: vec![],
            documents: None,
            exact: false,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Cursor {
    /// Offset into the fused list.
    o: usize,
    /// Channel depth.
    d: usize,
    /// Query digest.
    q: String,
}

/// A lineage as listed.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentSummary {
    /// The lineage.
    pub doc_id: DocumentId,
    /// Lineage key.
    pub source_kind: String,
    /// Lineage key.
    pub source_ref: String,
    /// File name, if any.
    pub file_name: Option<String>,
    /// Display title.
    pub title: String,
    /// The served version.
    pub current_version_id: Option<VersionId>,
    /// The newest observed version.
    pub latest_version_id: VersionId,
    /// `processing`, `ready`, `parked` (no conversion route), `stalled` (a dead
    /// letter) or `deleted`.
    pub status: String,
    /// Versioning mode.
    pub mode: VersioningMode,
    /// Versions.
    pub version_count: u32,
    /// When the lineage was deleted (shown by a document's detail; deleted lineages
    /// are not listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<Timestamp>,
}

/// One version in a document's detail.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VersionSummary {
    /// The version.
    pub version_id: VersionId,
    /// 1-based position.
    pub ordinal: u32,
    /// sha256 of the original.
    pub content_sha256: String,
    /// Size.
    pub size: u64,
    /// MIME type.
    pub mime: String,
    /// Routed format.
    pub format: Option<SourceFormat>,
    /// Source time.
    pub source_modified_at: Timestamp,
    /// Origin.
    pub origin: Origin,
    /// Ingested at.
    pub created_at: Timestamp,
    /// Served by search.
    pub is_current: bool,
    /// `current` when the version is testimony the source still stands by (every
    /// processed version of a snapshot lineage; only the current one of a living
    /// lineage), `superseded` for older living versions, `pending` before processing.
    pub testimony: String,
    /// Metadata.
    pub metadata: DocumentMetadata,
    /// Who created this version (D101), when its creator said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingested_by: Option<crate::source::IngestPrincipal>,
    /// When this superseded conversation version was compacted: its original bytes
    /// and derived rows are gone (every message it held is in the latest version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted_at: Option<Timestamp>,
}

/// A document's detail.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentDetail {
    /// The summary.
    #[serde(flatten)]
    pub summary: DocumentSummary,
    /// Every version, oldest first.
    pub versions: Vec<VersionSummary>,
    /// Every name (file name, title) the lineage was observed under.
    pub names: Vec<String>,
    /// Sections of the current version.
    pub sections: Vec<SectionRow>,
    /// Chunks of the current version.
    pub chunk_count: u32,
}

/// One dead letter in a status report.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// The work item.
    pub work_id: WorkId,
    /// The stage.
    pub stage: Stage,
    /// The target's kind.
    pub target_kind: TargetKind,
    /// The target.
    pub target_id: uuid::Uuid,
    /// The version.
    pub version_id: VersionId,
    /// Attempts made.
    pub attempts: u32,
    /// The limit.
    pub max_attempts: u32,
    /// The last error.
    pub last_error: Option<String>,
}

/// Ledger status.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusReport {
    /// The store kind.
    pub store: String,
    /// The namespace reported on.
    pub namespace: String,
    /// Counts by stage, then status.
    pub ledger: BTreeMap<String, BTreeMap<String, u64>>,
    /// Originals parked without a conversion route.
    pub parked_no_route: u64,
    /// Dead letters with their errors.
    pub dead_letters: Vec<DeadLetter>,
    /// The configured embedder generation.
    pub embedder: String,
    /// Why the configured semantic model is not in use, when the hashing embedder
    /// stands in for it (with the command that fixes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder_fallback: Option<String>,
    /// Semantic channel readiness.
    pub semantic: SemanticReadiness,
    /// Documents in the namespace.
    pub documents: u64,
    /// The incomplete forget that keeps this namespace closed (every read and
    /// write is `forget_in_progress` until it finishes), with why it stopped and
    /// the command that resumes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forget_in_progress: Option<crate::forget::PendingForget>,
}

impl StatusReport {
    /// Work the pipeline still has to do: items pending, running or failed (to be
    /// retried), less those parked for want of a conversion route, which wait for a
    /// configuration change rather than a worker. The pipeline is idle when it is 0.
    pub fn open_work(&self) -> u64 {
        self.ledger
            .values()
            .flat_map(|by_status| {
                by_status
                    .iter()
                    .filter(|(s, _)| matches!(s.as_str(), "pending" | "running" | "failed"))
                    .map(|(_, n)| *n)
            })
            .sum::<u64>()
            .saturating_sub(self.parked_no_route)
    }
}

/// The chat models that run model-backed extraction (D31's two calls).
#[derive(Debug, Clone)]
pub struct ExtractorModels {
    /// The Selection seat.
    pub selection: Arc<dyn crate::chat::ChatModel>,
    /// The Claimify seat.
    pub claimify: Arc<dyn crate::chat::ChatModel>,
}

/// The providers an engine uses.
#[derive(Debug, Clone)]
pub struct Providers {
    /// Embeds chunks, claims and queries.
    pub embedder: Arc<dyn Embedder>,
    /// Model-backed extraction; `None` runs the deterministic offline extractor.
    pub extractor: Option<ExtractorModels>,
    /// E3 chat models; each empty seat runs its offline path.
    pub facts: FactModels,
}

/// One provider (or store) check of `doctor`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderCheck {
    /// What was checked: `store`, `embedder`, or `chat:<seat>` for the first seat of each
    /// distinct chat model (`selection`, `claimify`, `normalize`, `resolve`, `adjudicate`).
    pub name: String,
    /// The identity checked (store kind, embedder generation, model).
    pub identity: String,
    /// Whether the cheap call succeeded.
    pub ok: bool,
    /// How long it took, in milliseconds (wall clock, informational).
    pub millis: u64,
    /// The error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What `doctor` found.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// Every check.
    pub checks: Vec<ProviderCheck>,
    /// Whether claim extraction runs offline (no chat model configured).
    pub offline_extractor: bool,
    /// All checks passed.
    pub ok: bool,
}

/// The engine.
#[derive(Debug, Clone)]
pub struct Engine {
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    extractor: Option<ExtractorModels>,
    fact_models: FactModels,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    worker_id: String,
    locks: Arc<facts::Locks>,
    bootstrapped: Arc<std::sync::Mutex<HashSet<NamespaceId>>>,
    aggregates: Arc<AggregateCache>,
    /// Whether this engine looked for currency refreshes owed since before it
    /// started (a process killed between a completion and its refresh).
    resumed: Arc<std::sync::atomic::AtomicBool>,
    /// The store's secret that signs continuation cursors, so a client cannot
    /// forge one (e.g. to ask the channels for an arbitrary depth).
    cursor_key: Arc<[u8; 32]>,
    /// Recent queries' vectors: the searches of one operation share one embedding.
    query_vectors: Arc<query_vectors::QueryVectors>,
    /// Per namespace, the change stamp the last idle merge-proposal pass of this
    /// process saw: an unchanged namespace is not scanned again.
    merge_pass_stamps: Arc<std::sync::Mutex<HashMap<NamespaceId, u64>>>,
    /// Whether the idle merge-proposal pass already ran since this process last
    /// ran work.
    merge_pass_idle: Arc<std::sync::atomic::AtomicBool>,
}

/// Read-side aggregates (freshness, vector coverage) per namespace and key, each
/// with the store's change stamp it was computed under: reused while the stamp is
/// unchanged, recomputed as soon as anything relevant is written.
#[derive(Debug, Default)]
struct AggregateCache {
    freshness: Stamped<Freshness>,
    coverage: Stamped<VectorCoverage>,
}

/// Values per (namespace, key), each with the change stamp it was computed under.
type Stamped<V> = std::sync::Mutex<HashMap<(NamespaceId, String), (u64, V)>>;

/// Look `key` up in a stamped cache map.
fn cached<V: Clone>(map: &Stamped<V>, key: &(NamespaceId, String), stamp: u64) -> Option<V> {
    let map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.get(key)
        .filter(|(s, _)| *s == stamp)
        .map(|(_, v)| v.clone())
}

/// Store `value` under `key` with its stamp (the map stays small: one entry per
/// namespace and key).
fn remember_cached<V>(map: &Stamped<V>, key: (NamespaceId, String), stamp: u64, value: V) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.insert(key, (stamp, value));
}

#[derive(Clone)]
enum StageError {
    /// Another worker holds the item now: do nothing.
    LeaseLost,
    /// A failure, retryable or not.
    Failed { message: String, retryable: bool },
}

impl From<Error> for StageError {
    fn from(e: Error) -> Self {
        match e.code() {
            ErrorCode::LeaseLost => StageError::LeaseLost,
            ErrorCode::Provider => StageError::Failed {
                retryable: match &e {
                    Error::Provider(p) => p.is_retryable(),
                    _ => true,
                },
                message: e.to_string(),
            },
            ErrorCode::Store | ErrorCode::Internal => StageError::Failed {
                message: e.to_string(),
                retryable: true,
            },
            _ => StageError::Failed {
                message: e.to_string(),
                retryable: false,
            },
        }
    }
}

impl Engine {
    /// Build an engine over `store` and reconcile the ledger with the configured
    /// components: a changed component version or embedder generation enqueues the
    /// affected stages.
    pub async fn open(
        store: Arc<dyn MemoryStore>,
        providers: Providers,
        clock: Arc<dyn Clock>,
        config: EngineConfig,
    ) -> Result<Self> {
        if config.chunk.token_budget == 0 || config.chunk.anchor_period == 0 {
            return Err(Error::new(
                ErrorCode::Config,
                "chunk token_budget and anchor_period must be positive",
            ));
        }
        if config.claim_limit == 0 || config.grouped_claim_limit == 0 || config.max_k == 0 {
            return Err(Error::new(
                ErrorCode::Config,
                "claim_limit, grouped_claim_limit and max_k must be positive",
            ));
        }
        config
            .fusion
            .validate()
            .map_err(|m| Error::new(ErrorCode::Config, m))?;
        config
            .relevance
            .validate()
            .map_err(|m| Error::new(ErrorCode::Config, m))?;
        let engine = Engine {
            store,
            embedder: providers.embedder,
            extractor: providers.extractor,
            fact_models: providers.facts,
            clock,
            config,
            worker_id: format!("worker-{}", uuid::Uuid::new_v4().simple()),
            locks: Arc::default(),
            bootstrapped: Arc::default(),
            aggregates: Arc::default(),
            query_vectors: Arc::default(),
            resumed: Arc::default(),
            merge_pass_stamps: Arc::default(),
            merge_pass_idle: Arc::default(),
            cursor_key: Arc::new([0; 32]),
        };
        let engine = Engine {
            cursor_key: Arc::new(engine.cursor_secret().await?),
            ..engine
        };
        engine.reconcile().await?;
        Ok(engine)
    }

    /// Forget the kept query vectors, so the next operation embeds its query as a
    /// question never asked before would (benchmarks time first questions).
    pub fn clear_query_vectors(&self) {
        self.query_vectors.clear();
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// What the envelopes' `freshness.semantic.degraded` says: the kind of a
    /// non-semantic embedder.
    pub(crate) fn semantic_degraded(&self) -> Option<String> {
        self.embedder().degraded().map(|d| d.kind)
    }

    /// Why the configured semantic model is not in use, if it is not.
    pub fn embedder_fallback(&self) -> Option<String> {
        self.embedder().degraded().and_then(|d| d.reason)
    }

    /// The embedder (benchmarks embed their baselines with the same one).
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The relevance curve in force, and whether it was fitted for this embedder
    /// (or configured) rather than borrowed from the default model.
    pub fn relevance_curve(&self) -> (crate::relevance::Calibration, bool) {
        self.config.relevance.curve(self.embedder_identity())
    }

    /// The embedder identity.
    pub fn embedder_identity(&self) -> &EmbedderIdentity {
        self.embedder.identity()
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The component version of each stage under this configuration.
    pub fn component_version(&self, stage: Stage) -> String {
        match stage {
            Stage::Prepare => format!(
                "{}+{}+{}",
                text::CONVERTER_VERSION,
                text::BLOCKIZER_VERSION,
                text::SECTIONER_VERSION
            ),
            Stage::Chunk => format!(
                "{}+{}",
                self.config.chunk.component_version(),
                EMBED_INPUT_POLICY_VERSION
            ),
            Stage::Embed | Stage::EmbedClaims => self.embedder.identity().generation(),
            Stage::Extract => self.extractor_version(),
            Stage::Normalize => self.normalizer_version(),
            Stage::Adjudicate => self.adjudicator_version(),
            Stage::EmbedFacts => self.embedder.identity().generation(),
        }
    }

    /// The store's cursor-signing secret, created on first open. Kept in the store
    /// so every process on it accepts the others' cursors.
    async fn cursor_secret(&self) -> Result<[u8; 32]> {
        let parse = |hex: &str| -> Option<[u8; 32]> {
            let mut key = [0u8; 32];
            if hex.len() != 64 {
                return None;
            }
            for (i, byte) in key.iter_mut().enumerate() {
                *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
            }
            Some(key)
        };
        if let Some(key) = self
            .store
            .setting(CURSOR_SECRET_SETTING)
            .await?
            .as_deref()
            .and_then(parse)
        {
            return Ok(key);
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| Error::internal(format!("no randomness for the cursor secret: {e}")))?;
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        self.store.set_setting(CURSOR_SECRET_SETTING, &hex).await?;
        // Another process may have written its secret first: the stored one wins.
        Ok(self
            .store
            .setting(CURSOR_SECRET_SETTING)
            .await?
            .as_deref()
            .and_then(parse)
            .unwrap_or(key))
    }

    async fn reconcile(&self) -> Result<()> {
        let now = self.clock.now();
        let current: BTreeMap<String, String> = Stage::ALL
            .iter()
            .map(|s| (s.as_str().to_string(), self.component_version(*s)))
            .collect();
        let stored: Option<BTreeMap<String, String>> = self
            .store
            .setting(COMPONENTS_SETTING)
            .await?
            .and_then(|s| serde_json::from_str(&s).ok());
        let Some(stored) = stored else {
            let json =
                serde_json::to_string(&current).map_err(|e| Error::internal(e.to_string()))?;
            return self.store.set_setting(COMPONENTS_SETTING, &json).await;
        };
        let changed = |s: Stage| stored.get(s.as_str()) != current.get(s.as_str());
        let rerun = if changed(Stage::Prepare) {
            Some(Stage::Prepare)
        } else if changed(Stage::Chunk) {
            Some(Stage::Chunk)
        } else {
            None
        };
        if let Some(stage) = rerun {
            let mut work = Vec::new();
            for (ns, version, format) in self.store.latest_versions().await? {
                if format.is_some() {
                    work.push(NewWork::now(
                        ns,
                        stage,
                        version.uuid(),
                        version,
                        self.component_version(stage),
                        now,
                    ));
                }
            }
            let n = self.store.enqueue(work, now).await?;
            tracing::info!(
                stage = stage.as_str(),
                enqueued = n,
                "component changed: re-running stage"
            );
        }
        if rerun.is_none() && changed(Stage::Extract) {
            // A new extractor generation re-extracts the latest version of every lineage;
            // the previous generation's claims retire when it completes (D54).
            let extractor = self.component_version(Stage::Extract);
            let mut work = Vec::new();
            for (ns, version, format) in self.store.latest_versions().await? {
                if format.is_none() {
                    continue;
                }
                for c in self.store.version_chunks(ns, version).await? {
                    work.push(NewWork::now(
                        ns,
                        Stage::Extract,
                        c.chunk_id.uuid(),
                        version,
                        extractor.clone(),
                        now,
                    ));
                }
            }
            let n = self.store.enqueue(work, now).await?;
            tracing::info!(extractor = %extractor, enqueued = n, "extractor changed: re-extracting");
        }
        if rerun.is_none() && !changed(Stage::Extract) && changed(Stage::Normalize) {
            // A new normalizer generation (or a store from before E3) normalizes every
            // current claim again; re-extraction enqueues its own normalization.
            let normalizer = self.component_version(Stage::Normalize);
            let mut total = 0;
            for ns in self.store.namespaces().await? {
                let filter = ClaimFilter {
                    namespace_id: ns.id,
                    include_retired: false,
                    document_id: None,
                    entities: vec![],
                    documents: None,
                };
                let work = self
                    .store
                    .list_claims(&filter, u32::MAX)
                    .await?
                    .into_iter()
                    .filter_map(|c| {
                        let version = c.occurrences.first()?.version_id;
                        Some(NewWork::now(
                            ns.id,
                            Stage::Normalize,
                            c.claim_id.uuid(),
                            version,
                            normalizer.clone(),
                            now,
                        ))
                    })
                    .collect();
                total += self.store.enqueue(work, now).await?;
            }
            tracing::info!(normalizer = %normalizer, enqueued = total, "normalizer changed: normalizing current claims");
        }
        if changed(Stage::Embed) {
            let generation = self.component_version(Stage::Embed);
            let mut total = 0;
            for ns in self.store.namespaces().await? {
                let filter = crate::facts::FactFilter {
                    namespace_id: ns.id,
                    entities: vec![],
                    at: None,
                    history: true,
                    overlap: None,
                    documents: None,
                    group: None,
                    unsupported: false,
                };
                let facts = self.store.list_facts(&filter, u32::MAX).await?;
                let keys: Vec<String> = facts.iter().map(|f| f.embedding_key.clone()).collect();
                let have: HashSet<String> = self
                    .store
                    .existing_vectors(ns.id, &generation, &keys)
                    .await?
                    .into_iter()
                    .collect();
                let mut queued = HashSet::new();
                let work: Vec<NewWork> = facts
                    .into_iter()
                    .filter(|f| {
                        !have.contains(&f.embedding_key) && queued.insert(f.embedding_key.clone())
                    })
                    .map(|f| {
                        // A fact's embedding belongs to no version barrier; the fact id
                        // keeps the row well-formed.
                        NewWork::now(
                            ns.id,
                            Stage::EmbedFacts,
                            f.fact_id.uuid(),
                            VersionId(f.fact_id.uuid()),
                            generation.clone(),
                            now,
                        )
                    })
                    .collect();
                total += self.store.enqueue(work, now).await?;
            }
            for ns in self.store.namespaces().await? {
                let claims = self
                    .store
                    .claims_missing_vectors(ns.id, &generation)
                    .await?
                    .into_iter()
                    .map(|(claim, version)| {
                        NewWork::now(
                            ns.id,
                            Stage::EmbedClaims,
                            claim.uuid(),
                            version,
                            generation.clone(),
                            now,
                        )
                    })
                    .collect();
                total += self.store.enqueue(claims, now).await?;
                let missing = self
                    .store
                    .chunks_missing_vectors(ns.id, &generation)
                    .await?;
                let work = missing
                    .into_iter()
                    .map(|c| {
                        NewWork::now(
                            ns.id,
                            Stage::Embed,
                            c.chunk_id.uuid(),
                            c.version_id,
                            generation.clone(),
                            now,
                        )
                    })
                    .collect();
                total += self.store.enqueue(work, now).await?;
            }
            tracing::info!(generation = %generation, enqueued = total, "embedder generation changed: re-embedding");
        }
        let json = serde_json::to_string(&current).map_err(|e| Error::internal(e.to_string()))?;
        self.store.set_setting(COMPONENTS_SETTING, &json).await
    }

    // ------------------------------------------------------------------ ingest

    /// Store a source and enqueue its processing. Bad input is refused with a typed
    /// error and writes nothing; identical bytes to the lineage's latest version are a no-op.
    pub async fn ingest(&self, req: IngestRequest) -> Result<IngestReceipt> {
        self.ingest_with(req, None).await
    }

    /// [`Engine::ingest`], recording a note revision with the version.
    pub(super) async fn ingest_with(
        &self,
        mut req: IngestRequest,
        mut note: Option<NewNote>,
    ) -> Result<IngestReceipt> {
        validate_namespace(&req.namespace)?;
        validate_lineage(&req.source_kind, &req.source_ref)?;
        if req.bytes.iter().all(|b| b.is_ascii_whitespace()) {
            return Err(Error::new(
                ErrorCode::EmptyInput,
                "the input is empty: nothing to remember",
            ));
        }
        if req.bytes.len() as u64 > self.config.max_source_bytes {
            return Err(Error::new(
                ErrorCode::TooLarge,
                format!(
                    "the input is {} bytes, over the maximum source size of {} bytes (raise max_source_bytes in the configuration)",
                    req.bytes.len(),
                    self.config.max_source_bytes
                ),
            ));
        }
        // Convert once now to refuse bad input before anything is written and to read
        // the metadata the source declares; the prepare stage converts again. Routing,
        // conversion and hashing are CPU work over up to max_source_bytes: they run
        // on the blocking pool so a large source never stalls the async runtime.
        let (bytes, format, converted, sha256) = {
            let bytes = std::mem::take(&mut req.bytes);
            let (kind, file_name, source_time) = (req.kind, req.file_name.clone(), req.source_time);
            blocking(move || {
                let format = route(kind, file_name.as_deref(), &bytes);
                let converted = match format {
                    Some(f) => Some(text::convert(f, &bytes, source_time)?),
                    None => None,
                };
                let sha256 = sha256_hex(&bytes);
                Ok((bytes, format, converted, sha256))
            })
            .await?
        };
        let now = self.clock.now();
        let declared = converted
            .as_ref()
            .map(|c| c.metadata.clone())
            .unwrap_or_default();
        let source_modified_at = match format {
            Some(SourceFormat::Conversation) => declared
                .created_at
                .or(req.source_time)
                .or(req.file_modified_at)
                .unwrap_or(now),
            _ => req.source_time.or(req.file_modified_at).unwrap_or(now),
        };
        let metadata = DocumentMetadata {
            file_name: req.file_name.clone().map(Field::connector),
            title: declared
                .title
                .clone()
                .map(Field::source)
                .or_else(|| req.title.clone().map(Field::connector)),
            authors: (!declared.authors.is_empty())
                .then(|| Field::source(declared.authors.clone())),
            created_at: declared.created_at.map(Field::source),
            modified_at: req
                .source_time
                .or(req.file_modified_at)
                .map(Field::connector),
            language: declared.language.clone().map(Field::source),
            thread_ref: req.thread_ref.clone().map(Field::connector),
        };
        let namespace = self.store.ensure_namespace(&req.namespace, now).await?;
        let version_id = VersionId::new();
        let mut work = NewWork::now(
            namespace.id,
            Stage::Prepare,
            version_id.uuid(),
            version_id,
            self.component_version(Stage::Prepare),
            now,
        );
        if format.is_none() {
            work.defer_reason = Some(DeferReason::NoRoute);
        }
        let mime = match format {
            Some(f) => f.mime().to_string(),
            None => guess_mime(req.file_name.as_deref()),
        };
        let outcome = self
            .store
            .create_version(NewVersion {
                namespace_id: namespace.id,
                document_id: DocumentId::new(),
                version_id,
                source_kind: req.source_kind.clone(),
                source_ref: req.source_ref.clone(),
                mode: req.mode,
                content: ContentObject {
                    sha256,
                    mime,
                    bytes,
                },
                format,
                source_modified_at,
                origin: req.origin,
                metadata,
                work,
                expected_latest: req.expected_latest,
                admission: req.admission,
                distinct: req.distinct,
                note: note.take(),
                principal: req.principal.clone(),
                now,
            })
            .await?;
        let (document_id, version_id, created, new_lineage) = match outcome {
            VersionOutcome::Created {
                document_id,
                version_id,
                new_lineage,
            } => (document_id, version_id, true, new_lineage),
            VersionOutcome::Unchanged {
                document_id,
                version_id,
            } => (document_id, version_id, false, false),
        };
        tracing::info!(namespace = %req.namespace, %document_id, %version_id, created, "ingested");
        Ok(IngestReceipt {
            namespace: req.namespace,
            document_id,
            version_id,
            outcome: if created { "created" } else { "unchanged" }.to_string(),
            new_lineage,
            format,
            parked: format.is_none(),
            source_kind: req.source_kind,
            source_ref: req.source_ref,
        })
    }

    // ------------------------------------------------------------------ work

    /// Claim and run due work until none is due. Returns what happened and when
    /// waiting work (backoffs, leases held elsewhere) becomes due next.
    pub async fn drain(&self) -> Result<DrainReport> {
        let mut report = DrainReport::default();
        loop {
            let (claimed, batch) = self.run_batch(&self.worker_id).await?;
            report.add(&batch);
            if claimed == 0 {
                break;
            }
        }
        report.next_wakeup = self.store.next_wakeup().await?;
        Ok(report)
    }

    /// When waiting work (backoffs, leases held elsewhere) falls due next, if any.
    pub async fn next_wakeup(&self) -> Result<Option<Timestamp>> {
        self.store.next_wakeup().await
    }

    /// Claim one batch of due work as `owner` and run it. Returns the number claimed.
    pub async fn run_batch(&self, owner: &str) -> Result<(usize, DrainReport)> {
        // Refreshes owed from before this process started come first, so what runs
        // next finds the currency an uninterrupted run would have left.
        if !self.resumed.swap(true, std::sync::atomic::Ordering::AcqRel) {
            self.refresh_due_currency().await?;
        }
        let now = self.clock.now();
        let lease_until = now
            + chrono::Duration::from_std(self.config.lease).unwrap_or(chrono::Duration::minutes(5));
        let items = self
            .store
            .claim(&ClaimRequest {
                owner: owner.to_string(),
                stages: Stage::ALL.to_vec(),
                limit: self.config.claim_limit,
                stage_limits: self.stage_limits(),
                lease_until,
                now,
            })
            .await?;
        let mut report = DrainReport::default();
        let Some(first) = items.first() else {
            // Idle: refreshes another worker did not live to apply are done here,
            // and the names that turned out to be one entity are merged.
            self.refresh_due_currency().await?;
            // Only after this process ran work (or on its first idle look): an idle
            // poll of a quiet store reads nothing.
            if !self
                .merge_pass_idle
                .swap(true, std::sync::atomic::Ordering::AcqRel)
            {
                Box::pin(self.apply_merge_proposals()).await?;
            }
            return Ok((0, report));
        };
        self.merge_pass_idle
            .store(false, std::sync::atomic::Ordering::Release);
        let stage = first.stage;
        let claimed = items.len();
        let started = std::time::Instant::now();
        if self.runs_grouped(stage) {
            let mut ran = Ok(());
            let grouped = self
                .store
                .grouped(Box::pin(async {
                    ran = self.run_items(stage, items, &mut report).await;
                }))
                .await;
            if let Err(e) = grouped {
                // The group's writes were rolled back: what this process remembers
                // of them goes too.
                self.bootstrapped
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear();
                return Err(e);
            }
            ran?;
        } else {
            self.run_items(stage, items, &mut report).await?;
        }
        let micros = started.elapsed().as_micros() as u64;
        tracing::debug!(
            target: "rememberstack::work",
            stage = stage.as_str(),
            items = claimed,
            micros,
            "batch ran"
        );
        report.stages.insert(
            stage.as_str().to_string(),
            StageStats {
                batches: 1,
                items: claimed as u64,
                micros,
            },
        );
        Ok((claimed, report))
    }

    /// The claim sizes of stages whose batches run as one write group on a store
    /// this process alone writes ([`EngineConfig::grouped_claim_limit`]).
    fn stage_limits(&self) -> Vec<(Stage, u32)> {
        if !self.store.locks_in_process() {
            return vec![];
        }
        Stage::ALL
            .iter()
            .filter(|s| self.runs_grouped(**s))
            .map(|s| (*s, self.config.grouped_claim_limit))
            .collect()
    }

    /// Whether a batch of `stage` runs as one write group
    /// ([`MemoryStore::grouped`]): it calls no remote provider, that is no chat
    /// model takes part, and where the stage embeds, the embedder runs in this
    /// process ([`Embedder::is_in_process`]).
    pub fn runs_grouped(&self, stage: Stage) -> bool {
        let embeds_here = self.embedder.is_in_process();
        let facts = &self.fact_models;
        match stage {
            Stage::Prepare | Stage::Chunk => true,
            Stage::Extract => self.extractor.is_none(),
            Stage::Normalize => facts.normalizer.is_none() && facts.resolver.is_none(),
            Stage::Adjudicate => facts.adjudicator.is_none() && embeds_here,
            Stage::Embed | Stage::EmbedClaims | Stage::EmbedFacts => embeds_here,
        }
    }

    /// Run one claimed batch of `stage` and settle each item.
    async fn run_items(
        &self,
        stage: Stage,
        items: Vec<WorkItem>,
        report: &mut DrainReport,
    ) -> Result<()> {
        match stage {
            Stage::Prepare | Stage::Chunk => {
                for item in items {
                    let result = if stage == Stage::Prepare {
                        self.run_prepare(&item).await
                    } else {
                        self.run_chunk(&item).await
                    };
                    self.settle(&[item], result, report).await?;
                }
            }
            Stage::Extract => self.run_extract_batch(items, report).await?,
            Stage::Normalize | Stage::Adjudicate if self.decides_together(stage) => {
                let mut by_ns: BTreeMap<NamespaceId, Vec<WorkItem>> = BTreeMap::new();
                for item in items {
                    by_ns.entry(item.namespace_id).or_default().push(item);
                }
                for (ns, group) in by_ns {
                    let decided = if stage == Stage::Normalize {
                        self.normalize_together(ns, &group).await
                    } else {
                        self.adjudicate_together(ns, &group).await
                    };
                    match decided {
                        Ok(outcomes) => {
                            for (item, result) in outcomes {
                                self.settle(&[item], result, report).await?;
                            }
                        }
                        Err(e) => self.settle(&group, Err(e), report).await?,
                    }
                }
            }
            Stage::Normalize | Stage::Adjudicate => {
                for item in items {
                    let result = if stage == Stage::Normalize {
                        self.run_normalize(&item).await
                    } else {
                        self.run_adjudicate(&item).await
                    };
                    self.settle(&[item], result, report).await?;
                }
            }
            Stage::Embed | Stage::EmbedClaims | Stage::EmbedFacts => {
                let mut by_ns: BTreeMap<NamespaceId, Vec<WorkItem>> = BTreeMap::new();
                for item in items {
                    by_ns.entry(item.namespace_id).or_default().push(item);
                }
                for (ns, group) in by_ns {
                    let result = self.run_embed(ns, &group).await;
                    self.settle(&group, result, report).await?;
                }
            }
        }
        Ok(())
    }

    async fn settle(
        &self,
        items: &[WorkItem],
        result: std::result::Result<Outcome, StageError>,
        report: &mut DrainReport,
    ) -> Result<()> {
        let now = self.clock.now();
        match result {
            Ok(Outcome::Completed) => report.completed += items.len() as u64,
            Ok(Outcome::Parked) => report.parked += items.len() as u64,
            Ok(Outcome::Deferred) => {}
            Err(StageError::LeaseLost) => {
                tracing::warn!(
                    count = items.len(),
                    "lease lost: another worker finishes this work"
                );
            }
            Err(StageError::Failed { message, retryable }) => {
                for item in items {
                    let outcome = self.config.backoff().outcome(item, retryable, now);
                    tracing::warn!(stage = item.stage.as_str(), work_id = %item.id, attempts = item.attempts, error = %message, "stage failed");
                    match &outcome {
                        FailureOutcome::DeadLetter => report.dead_lettered += 1,
                        FailureOutcome::Retry { .. } => report.retried += 1,
                    }
                    match self
                        .store
                        .fail(&Lease::of(item), &message, outcome, now)
                        .await
                    {
                        Ok(()) => {}
                        Err(e) if e.code() == ErrorCode::LeaseLost => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    async fn run_prepare(&self, item: &WorkItem) -> std::result::Result<Outcome, StageError> {
        let ns = item.namespace_id;
        let version = self
            .store
            .version(ns, item.version_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("version {} not found", item.version_id)))?;
        let Some(format) = version.format else {
            let now = self.clock.now();
            self.store
                .park(&Lease::of(item), DeferReason::NoRoute, now, now)
                .await?;
            return Ok(Outcome::Parked);
        };
        let bytes = self.store.content(ns, &version.content_sha256).await?;
        let title = version.metadata.display_title(&version.source_ref);
        let source_time = version.source_modified_at;
        let (representation, blocks, sections, title) = blocking(move || {
            let converted = text::convert(format, &bytes, Some(source_time))?;
            let representation = converted.representation;
            let blocks = text::blockize(&representation);
            let sections = text::build_sections(&representation.markdown, &blocks, &title);
            Ok((representation, blocks, sections, title))
        })
        .await?;
        let now = self.clock.now();
        let follow_up = vec![NewWork::now(
            ns,
            Stage::Chunk,
            version.version_id.uuid(),
            version.version_id,
            self.component_version(Stage::Chunk),
            now,
        )];
        self.store
            .commit_prepared(
                &Lease::of(item),
                PreparedVersion {
                    version_id: version.version_id,
                    representation,
                    blocks,
                    sections,
                    title,
                    component_version: item.component_version.clone(),
                },
                follow_up,
                now,
            )
            .await?;
        Ok(Outcome::Completed)
    }

    async fn run_chunk(&self, item: &WorkItem) -> std::result::Result<Outcome, StageError> {
        let ns = item.namespace_id;
        let prepared = self
            .store
            .prepared(ns, item.version_id)
            .await?
            .ok_or_else(|| {
                Error::internal(format!(
                    "version {} has no prepared structure",
                    item.version_id
                ))
            })?;
        let plans = text::chunk_document(
            &prepared.representation.markdown,
            &prepared.blocks,
            &prepared.sections,
            &self.config.chunk,
        );
        let is_conversation = !prepared.representation.turns.is_empty();
        let mut chunks = Vec::with_capacity(plans.len());
        let mut paths = Vec::with_capacity(plans.len());
        for plan in plans {
            let section = prepared
                .sections
                .iter()
                .find(|s| s.ordinal == plan.section_ordinal);
            let path: &[String] = section.map(|s| s.path.as_slice()).unwrap_or(&[]);
            let embed_text = embedding_text(&prepared.title, path, is_conversation, &plan.text);
            let event_ids = prepared
                .blocks
                .iter()
                .filter(|b| b.ordinal >= plan.block_start && b.ordinal < plan.block_end)
                .filter_map(|b| b.turn.as_ref().and_then(|t| t.event_id.clone()))
                .collect();
            paths.push(path.to_vec());
            chunks.push(NewChunk {
                id: ChunkId::new(),
                embedding_key: embedding_key(&embed_text),
                plan,
                event_ids,
            });
        }
        // A conversation version is its predecessor plus appended turns: the chunks
        // before the last anchor are byte-identical, so their extractions are carried
        // over in this commit and only the new chunks get `e2.extract` units — the
        // processing of an append costs what the append adds.
        let version = self
            .store
            .version(ns, item.version_id)
            .await?
            .ok_or_else(|| Error::not_found(format!("version {} not found", item.version_id)))?;
        let carried = if version.source_kind == "conversation" {
            let ctx = extract::VersionContext::new(
                version.clone(),
                prepared,
                chunks
                    .iter()
                    .zip(paths)
                    .map(|(c, path)| {
                        let p = &c.plan;
                        let span = crate::claims::bundle::ChunkSpan {
                            ordinal: p.ordinal,
                            section_ordinal: p.section_ordinal,
                            block_start: p.block_start,
                            block_end: p.block_end,
                            start: p.start,
                            end: p.end,
                        };
                        (c.id, path, span)
                    })
                    .collect(),
            );
            self.carried_extractions(&ctx).await?
        } else {
            vec![None; chunks.len()]
        };
        // Reuse: a chunk whose embedding key already has a vector of the current
        // generation (an unchanged chunk of an earlier version) is not embedded again.
        let generation = self.component_version(Stage::Embed);
        let keys: Vec<String> = chunks.iter().map(|c| c.embedding_key.clone()).collect();
        let existing: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        let now = self.clock.now();
        let extractor = self.component_version(Stage::Extract);
        let follow_up = chunks
            .iter()
            .filter(|c| !existing.contains(&c.embedding_key))
            .map(|c| {
                NewWork::now(
                    ns,
                    Stage::Embed,
                    c.id.uuid(),
                    item.version_id,
                    generation.clone(),
                    now,
                )
            })
            .chain(
                chunks
                    .iter()
                    .zip(&carried)
                    .filter(|(_, x)| x.is_none())
                    .map(|(c, _)| {
                        NewWork::now(
                            ns,
                            Stage::Extract,
                            c.id.uuid(),
                            item.version_id,
                            extractor.clone(),
                            now,
                        )
                    }),
            )
            .collect::<Vec<_>>();
        let carried: Vec<ExtractionCommit> = carried.into_iter().flatten().collect();
        let extracts_left = follow_up.iter().any(|w| w.stage == Stage::Extract);
        let carried_any = !carried.is_empty();
        self.store
            .commit_chunks_carrying(
                &Lease::of(item),
                item.version_id,
                chunks,
                carried,
                follow_up,
                now,
            )
            .await?;
        // Nothing left to extract: the version's currency is refreshed now (the
        // commit recorded that it is owed, so a failure here is retried).
        if carried_any
            && !extracts_left
            && let Err(e) = self.after_extraction(ns, &version).await
        {
            tracing::warn!(version_id = %version.version_id, error = %e, "testimony currency refresh postponed");
        }
        Ok(Outcome::Completed)
    }

    async fn run_embed(
        &self,
        ns: NamespaceId,
        items: &[WorkItem],
    ) -> std::result::Result<Outcome, StageError> {
        let identity = self.embedder.identity().clone();
        let generation = identity.generation();
        // Work enqueued for another embedder generation is obsolete: the open that
        // changed the generation enqueued fresh work for everything still missing.
        let (stale, items): (Vec<&WorkItem>, Vec<&WorkItem>) = items
            .iter()
            .partition(|i| i.component_version != generation);
        for item in stale {
            tracing::info!(work_id = %item.id, "embed work of a former generation: completed as obsolete");
            self.store
                .complete(&Lease::of(item), vec![], self.clock.now())
                .await?;
        }
        if items.is_empty() {
            return Ok(Outcome::Completed);
        }
        let mut texts: Vec<(String, String)> = Vec::new();
        let mut seen = HashSet::new();
        let chunk_ids: Vec<ChunkId> = items
            .iter()
            .filter(|i| i.target_kind == TargetKind::Chunk)
            .map(|i| ChunkId(i.target_id))
            .collect();
        for c in self.store.chunks(ns, &chunk_ids).await? {
            if seen.insert(c.embedding_key.clone()) {
                let is_conversation = c.format == Some(SourceFormat::Conversation);
                let text =
                    embedding_text(&c.document_title, &c.section_path, is_conversation, &c.text);
                texts.push((c.embedding_key.clone(), text));
            }
        }
        let claim_ids: Vec<ClaimId> = items
            .iter()
            .filter(|i| i.target_kind == TargetKind::Claim)
            .map(|i| ClaimId(i.target_id))
            .collect();
        if !claim_ids.is_empty() {
            for c in self.store.claims(ns, &claim_ids).await? {
                if seen.insert(c.embedding_key.clone()) {
                    texts.push((c.embedding_key.clone(), c.text.clone()));
                }
            }
        }
        let fact_ids: Vec<FactId> = items
            .iter()
            .filter(|i| i.target_kind == TargetKind::Fact)
            .map(|i| FactId(i.target_id))
            .collect();
        if !fact_ids.is_empty() {
            for f in self.store.facts(ns, &fact_ids).await? {
                if seen.insert(f.embedding_key.clone()) {
                    texts.push((f.embedding_key.clone(), f.statement.clone()));
                }
            }
        }
        let keys: Vec<String> = texts.iter().map(|(k, _)| k.clone()).collect();
        let existing: HashSet<String> = self
            .store
            .existing_vectors(ns, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        texts.retain(|(k, _)| !existing.contains(k));
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.embedder.max_batch().max(1)) {
            let inputs: Vec<String> = batch.iter().map(|(_, t)| t.clone()).collect();
            let out = self
                .embedder
                .embed(&inputs, EmbedPurpose::Document)
                .await
                .map_err(Error::from)?;
            if out.len() != inputs.len() {
                return Err(Error::from(ProviderError::Malformed {
                    message: format!("asked for {} vectors, got {}", inputs.len(), out.len()),
                })
                .into());
            }
            for ((key, _), v) in batch.iter().zip(out) {
                if v.len() != identity.dimension {
                    return Err(Error::from(ProviderError::DimensionMismatch {
                        expected: identity.dimension,
                        got: v.len(),
                    })
                    .into());
                }
                vectors.push((key.clone(), v));
            }
        }
        let leases: Vec<Lease> = items.iter().map(|i| Lease::of(i)).collect();
        self.store
            .commit_vectors(&leases, ns, &identity, vectors, self.clock.now())
            .await?;
        Ok(Outcome::Completed)
    }

    /// Replay dead letters (and make failed items waiting for their backoff due now,
    /// unless `dead_letters_only`). Returns how many items were released.
    pub async fn retry(
        &self,
        namespace: Option<&str>,
        stage: Option<Stage>,
        dead_letters_only: bool,
    ) -> Result<u64> {
        let ns = match namespace {
            Some(slug) => match self.store.namespace(slug).await? {
                Some(n) => Some(n.id),
                None => return Ok(0),
            },
            None => None,
        };
        let now = self.clock.now();
        let mut n = self
            .store
            .replay_dead_letters(ns, stage, DEFAULT_MAX_ATTEMPTS, now)
            .await?;
        if !dead_letters_only {
            n += self.store.expedite_failed(ns, stage, now).await?;
        }
        Ok(n)
    }

    // ------------------------------------------------------------------ reads

    async fn freshness(&self, ns: NamespaceId, generation: &str) -> Result<Freshness> {
        // The stamp is read before the aggregates: a write that lands in between
        // bumps it again, so a stale value is never kept under a current stamp.
        let stamp = self.store.change_stamp(ns).await?;
        let key = (ns, generation.to_string());
        if let Some(f) = cached(&self.aggregates.freshness, &key, stamp) {
            return Ok(f);
        }
        let fresh = self.compute_freshness(ns, generation).await?;
        remember_cached(&self.aggregates.freshness, key, stamp, fresh.clone());
        Ok(fresh)
    }

    /// Coverage of a target's current records by vectors of `generation`, through
    /// the stamped cache. `target` names the records (`claims`, `facts`).
    pub(super) async fn coverage<F>(
        &self,
        ns: NamespaceId,
        target: &str,
        generation: &str,
        compute: F,
    ) -> Result<VectorCoverage>
    where
        F: std::future::Future<Output = Result<VectorCoverage>>,
    {
        let stamp = self.store.change_stamp(ns).await?;
        let key = (ns, format!("{target}|{generation}"));
        if let Some(c) = cached(&self.aggregates.coverage, &key, stamp) {
            return Ok(c);
        }
        let c = compute.await?;
        remember_cached(&self.aggregates.coverage, key, stamp, c);
        Ok(c)
    }

    async fn compute_freshness(&self, ns: NamespaceId, generation: &str) -> Result<Freshness> {
        let counts = self.store.work_counts(Some(ns)).await?;
        let mut pending_work = BTreeMap::new();
        let mut parked = 0;
        let mut dead = 0;
        for c in &counts {
            match c.status {
                WorkStatus::Pending | WorkStatus::Running | WorkStatus::Failed => {
                    let open = c.count - c.parked_no_route;
                    if open > 0 {
                        *pending_work
                            .entry(c.stage.as_str().to_string())
                            .or_insert(0) += open;
                    }
                    parked += c.parked_no_route;
                }
                WorkStatus::DeadLetter => dead += c.count,
                WorkStatus::Done => {}
            }
        }
        let coverage = self.store.vector_coverage(ns, generation).await?;
        Ok(Freshness {
            pending_work,
            parked_no_route: parked,
            dead_letters: dead,
            semantic: SemanticReadiness {
                generation: generation.to_string(),
                ready: coverage.missing == 0,
                chunks: coverage.chunks,
                missing_vectors: coverage.missing,
                degraded: self.semantic_degraded(),
            },
        })
    }

    /// Lineages in a namespace (empty when the namespace does not exist).
    pub async fn documents(&self, namespace: &str) -> Result<Vec<DocumentSummary>> {
        validate_namespace(namespace)?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        let rows = self.store.documents(ns.id).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push(self.summarize(ns.id, row).await?);
        }
        Ok(out)
    }

    async fn summarize(&self, ns: NamespaceId, row: DocumentRow) -> Result<DocumentSummary> {
        let status = if row.deleted_at.is_some() {
            "deleted"
        } else if row.latest_work.parked > 0 {
            "parked"
        } else if row.latest_work.dead_letter > 0 {
            "stalled"
        } else if row.latest_work.open > 0 || row.current_version_id != Some(row.latest_version_id)
        {
            "processing"
        } else {
            let barrier = self
                .store
                .barrier(ns, row.latest_version_id, Stage::Embed)
                .await?;
            if barrier.is_complete() {
                "ready"
            } else {
                "processing"
            }
        };
        Ok(DocumentSummary {
            doc_id: row.document_id,
            source_kind: row.source_kind.clone(),
            source_ref: row.source_ref.clone(),
            file_name: row.metadata.file_name.as_ref().map(|f| f.value.clone()),
            title: row.metadata.display_title(&row.source_ref),
            current_version_id: row.current_version_id,
            latest_version_id: row.latest_version_id,
            status: status.to_string(),
            mode: row.mode,
            version_count: row.version_count,
            deleted_at: row.deleted_at,
        })
    }

    /// One lineage with its versions and the current version's sections.
    pub async fn document(&self, namespace: &str, id: DocumentId) -> Result<DocumentDetail> {
        validate_namespace(namespace)?;
        let not_found = || {
            Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {id} not found in namespace `{namespace}`"),
            )
        };
        let ns = self
            .store
            .namespace(namespace)
            .await?
            .ok_or_else(not_found)?;
        let row = self
            .store
            .document(ns.id, id)
            .await?
            .ok_or_else(not_found)?;
        let versions = self.store.versions(ns.id, id).await?;
        let current = row.current_version_id;
        let current_ordinal = versions
            .iter()
            .find(|v| Some(v.version_id) == current)
            .map(|v| v.ordinal);
        let mode = row.mode;
        let summaries = versions
            .into_iter()
            .map(|v| {
                let testimony = match (mode, current_ordinal) {
                    (_, None) => "pending",
                    (_, Some(c)) if v.ordinal == c => "current",
                    (VersioningMode::Snapshot, Some(c)) if v.ordinal < c => "current",
                    (VersioningMode::Living, Some(c)) if v.ordinal < c => "superseded",
                    _ => "pending",
                };
                VersionSummary {
                    version_id: v.version_id,
                    ordinal: v.ordinal,
                    content_sha256: v.content_sha256,
                    size: v.size,
                    mime: v.mime,
                    format: v.format,
                    source_modified_at: v.source_modified_at,
                    origin: v.origin,
                    created_at: v.created_at,
                    is_current: v.is_current,
                    testimony: testimony.to_string(),
                    metadata: v.metadata,
                    ingested_by: v.ingested_by,
                    compacted_at: v.compacted_at,
                }
            })
            .collect();
        let sections = match current {
            Some(v) => self.store.sections(ns.id, v).await?,
            None => vec![],
        };
        let chunk_count = sections.iter().map(|s| s.chunk_count).sum();
        Ok(DocumentDetail {
            summary: self.summarize(ns.id, row).await?,
            versions: summaries,
            names: self.store.document_names(ns.id, id).await?,
            sections,
            chunk_count,
        })
    }

    /// Check the store and every configured provider with one cheap call each.
    pub async fn doctor(&self) -> DoctorReport {
        let mut checks = Vec::new();
        let started = std::time::Instant::now();
        let store = self.store.namespaces().await;
        checks.push(ProviderCheck {
            name: "store".into(),
            identity: self.store.kind().into(),
            ok: store.is_ok(),
            millis: started.elapsed().as_millis() as u64,
            error: store.err().map(|e| e.to_string()),
        });
        // Forgets that could not finish (their namespaces are closed) and a file
        // rewrite a forget left pending.
        let started = std::time::Instant::now();
        let problems = match (
            self.store.pending_forgets().await,
            self.store.file_rewrite_pending().await,
            self.store.manifest_root_warning().await,
        ) {
            (Ok(pending), Ok(rewrite), Ok(hosts)) => {
                let mut lines: Vec<String> = pending.iter().map(|p| p.describe()).collect();
                if let Some(reason) = rewrite {
                    lines.push(format!(
                        "the database file rewrite after a forget is pending ({reason}); every \
                         row is erased and freed pages are zeroed; it is retried when the store \
                         next opens or forgets"
                    ));
                }
                lines.extend(hosts);
                lines
            }
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => vec![e.to_string()],
        };
        checks.push(ProviderCheck {
            name: "forgets".into(),
            identity: self.store.kind().into(),
            ok: problems.is_empty(),
            millis: started.elapsed().as_millis() as u64,
            error: (!problems.is_empty()).then(|| problems.join("\n")),
        });
        let started = std::time::Instant::now();
        let embedded = self
            .embedder
            .embed(&["doctor".to_string()], EmbedPurpose::Query)
            .await;
        let error = match &embedded {
            Ok(v) if v.len() == 1 && v[0].len() == self.embedder.identity().dimension => None,
            Ok(_) => Some("the embedder returned a vector of the wrong shape".to_string()),
            Err(e) => Some(e.to_string()),
        }
        // A semantic model that could not be had is a problem to fix, even though
        // the hashing embedder standing in works.
        .or_else(|| {
            self.embedder_fallback()
                .map(|why| format!("{why} (the hashing embedder stands in: lexical, not semantic)"))
        });
        checks.push(ProviderCheck {
            name: "embedder".into(),
            identity: self.embedder.identity().generation(),
            ok: error.is_none(),
            millis: started.elapsed().as_millis() as u64,
            error,
        });
        // Every configured chat seat, each distinct model once (offline seats have
        // none).
        let mut seats: Vec<(&str, &Arc<dyn crate::chat::ChatModel>)> = Vec::new();
        if let Some(m) = &self.extractor {
            seats.extend([("selection", &m.selection), ("claimify", &m.claimify)]);
        }
        let f = &self.fact_models;
        for (seat, model) in [
            ("normalize", &f.normalizer),
            ("resolve", &f.resolver),
            ("adjudicate", &f.adjudicator),
        ] {
            if let Some(model) = model {
                seats.push((seat, model));
            }
        }
        {
            let mut seen: Vec<String> = Vec::new();
            for (seat, model) in seats {
                if seen.contains(&model.model().to_string()) {
                    continue;
                }
                seen.push(model.model().to_string());
                let request = crate::chat::ChatRequest::new(
                    "doctor",
                    "You check connectivity. Answer with JSON only.",
                    "Reply with {\"ok\": true}.",
                    "doctor",
                    serde_json::json!({
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["ok"],
                        "properties": {"ok": {"type": "boolean"}}
                    }),
                );
                let started = std::time::Instant::now();
                let answer = model.complete_json(&request).await;
                checks.push(ProviderCheck {
                    name: format!("chat:{seat}"),
                    identity: model.model().to_string(),
                    ok: answer.is_ok(),
                    millis: started.elapsed().as_millis() as u64,
                    error: answer.err().map(|e| e.to_string()),
                });
            }
        }
        DoctorReport {
            ok: checks.iter().all(|c| c.ok),
            offline_extractor: self.extractor.is_none(),
            checks,
        }
    }

    /// Claims of a namespace (optionally of one lineage), newest first: current
    /// testimony only unless `include_retired`.
    pub async fn claims(
        &self,
        namespace: &str,
        document: Option<DocumentId>,
        include_retired: bool,
        limit: u32,
    ) -> Result<Vec<ClaimRecord>> {
        validate_namespace(namespace)?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            return Ok(vec![]);
        };
        if let Some(doc) = document
            && self.store.document(ns.id, doc).await?.is_none()
        {
            return Err(Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {doc} not found in namespace `{namespace}`"),
            ));
        }
        let filter = ClaimFilter {
            namespace_id: ns.id,
            include_retired,
            document_id: document,
            entities: vec![],
            documents: None,
        };
        self.store
            .list_claims(&filter, limit.clamp(1, 10_000))
            .await
    }

    /// The extraction ledger of one lineage, in write order (D33).
    pub async fn claim_decisions(
        &self,
        namespace: &str,
        document: DocumentId,
    ) -> Result<Vec<DecisionRecord>> {
        validate_namespace(namespace)?;
        let not_found = || {
            Error::new(
                ErrorCode::DocumentNotFound,
                format!("document {document} not found in namespace `{namespace}`"),
            )
        };
        let ns = self
            .store
            .namespace(namespace)
            .await?
            .ok_or_else(not_found)?;
        self.store
            .document(ns.id, document)
            .await?
            .ok_or_else(not_found)?;
        self.store.decisions(ns.id, document).await
    }

    /// Ledger counts by stage and status, dead letters with their errors.
    pub async fn status(&self, namespace: &str) -> Result<StatusReport> {
        validate_namespace(namespace)?;
        let generation = self.component_version(Stage::Embed);
        let mut ledger: BTreeMap<String, BTreeMap<String, u64>> = Stage::ALL
            .iter()
            .map(|s| {
                (
                    s.as_str().to_string(),
                    WorkStatus::ALL
                        .iter()
                        .map(|st| (st.as_str().to_string(), 0))
                        .collect(),
                )
            })
            .collect();
        // A namespace closed by an incomplete forget still reports its ledger and
        // says what keeps it closed: status is how an operator finds out.
        let (ns, forget_in_progress) = match self.store.namespace(namespace).await {
            Ok(ns) => (ns, None),
            Err(e) if e.code() == ErrorCode::ForgetInProgress => {
                let pending = self
                    .store
                    .pending_forgets()
                    .await?
                    .into_iter()
                    .find(|p| p.namespace == namespace);
                let ns = self
                    .store
                    .namespaces()
                    .await?
                    .into_iter()
                    .find(|n| n.slug == namespace);
                (ns, pending)
            }
            Err(e) => return Err(e),
        };
        let Some(ns) = ns else {
            return Ok(StatusReport {
                store: self.store.kind().to_string(),
                namespace: namespace.to_string(),
                ledger,
                parked_no_route: 0,
                dead_letters: vec![],
                embedder: generation.clone(),
                embedder_fallback: self.embedder_fallback(),
                semantic: empty_freshness(generation, self.semantic_degraded()).semantic,
                documents: 0,
                forget_in_progress: None,
            });
        };
        let mut parked = 0;
        for c in self.store.work_counts(Some(ns.id)).await? {
            *ledger
                .entry(c.stage.as_str().to_string())
                .or_default()
                .entry(c.status.as_str().to_string())
                .or_insert(0) += c.count;
            parked += c.parked_no_route;
        }
        let dead_letters = self
            .store
            .work_items(Some(ns.id), WorkStatus::DeadLetter, 1000)
            .await?
            .into_iter()
            .map(|w| DeadLetter {
                work_id: w.id,
                stage: w.stage,
                target_kind: w.target_kind,
                target_id: w.target_id,
                version_id: w.version_id,
                attempts: w.attempts,
                max_attempts: w.max_attempts,
                last_error: w.last_error,
            })
            .collect();
        let freshness = self.freshness(ns.id, &generation).await?;
        Ok(StatusReport {
            store: self.store.kind().to_string(),
            namespace: namespace.to_string(),
            ledger,
            parked_no_route: parked,
            dead_letters,
            embedder: generation,
            embedder_fallback: self.embedder_fallback(),
            semantic: freshness.semantic,
            documents: self.store.documents(ns.id).await?.len() as u64,
            forget_in_progress,
        })
    }
}

enum Outcome {
    Completed,
    Parked,
    /// Put back to wait for a barrier; the attempt does not count.
    Deferred,
}

fn channel(status: &str, candidates: usize, message: Option<String>) -> ChannelReport {
    ChannelReport {
        status: status.to_string(),
        candidates,
        message,
    }
}

fn empty_freshness(generation: String, degraded: Option<String>) -> Freshness {
    Freshness {
        pending_work: BTreeMap::new(),
        parked_no_route: 0,
        dead_letters: 0,
        semantic: SemanticReadiness {
            generation,
            ready: true,
            chunks: 0,
            missing_vectors: 0,
            degraded,
        },
    }
}

/// Run CPU-bound work (conversion, hashing) on the blocking pool, off the async
/// runtime's workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("a blocking task failed: {e}")))?
}

/// Bytes of the HMAC-SHA256 tag a cursor carries.
const CURSOR_TAG_BYTES: usize = 16;

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut ipad = [0x36u8; 64];
    let mut opad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        ipad[i] ^= k;
        opad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// A cursor as the client sees it: its JSON followed by a truncated HMAC tag, in
/// URL-safe base64.
fn encode_cursor(key: &[u8; 32], c: &Cursor) -> String {
    encode_signed(key, c)
}

/// Any cursor state, signed: its JSON followed by a truncated HMAC tag, in
/// URL-safe base64.
fn encode_signed<T: Serialize>(key: &[u8; 32], c: &T) -> String {
    let mut bytes = serde_json::to_vec(c).unwrap_or_default();
    let tag = hmac_sha256(key, &bytes);
    bytes.extend_from_slice(&tag[..CURSOR_TAG_BYTES]);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The refusal of a cursor this store did not issue.
fn foreign_cursor() -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        "the cursor is not one this store issued (or it was altered): repeat the request without it",
    )
}

/// State signed by [`encode_signed`] under `key`, if `s` (at most `max_len`
/// characters) is exactly that; `None` for anything else.
fn decode_signed<T: serde::de::DeserializeOwned>(
    key: &[u8; 32],
    s: &str,
    max_len: usize,
) -> Option<T> {
    if s.len() > max_len {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim())
        .ok()?;
    if bytes.len() <= CURSOR_TAG_BYTES {
        return None;
    }
    let (json, tag) = bytes.split_at(bytes.len() - CURSOR_TAG_BYTES);
    let expected = hmac_sha256(key, json);
    // Compare every byte, so the time taken says nothing about where they differ.
    let diff = expected[..CURSOR_TAG_BYTES]
        .iter()
        .zip(tag)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if diff != 0 {
        return None;
    }
    serde_json::from_slice::<T>(json).ok()
}

/// A cursor this store issued; anything else (garbage, another store's, one with
/// a changed offset or depth) is `invalid_parameter`.
fn decode_cursor(key: &[u8; 32], s: &str) -> Result<Cursor> {
    decode_signed::<Cursor>(key, s, 1024)
        .filter(|c| c.d > 0 && c.d <= crate::limits::MAX_SEARCH_DEPTH)
        .ok_or_else(foreign_cursor)
}

/// Decide the format of an input: the declared kind, else the file extension
/// (a `.json` file holding a conversation is a conversation), else Markdown for
/// text without a name. `None` means no conversion route: the original is parked.
pub fn route(kind: DeclaredKind, file_name: Option<&str>, bytes: &[u8]) -> Option<SourceFormat> {
    match kind {
        DeclaredKind::Format(f) => Some(f),
        DeclaredKind::Auto => {
            let Some(name) = file_name else {
                return Some(SourceFormat::Markdown);
            };
            let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
            match SourceFormat::from_extension(ext) {
                Some(SourceFormat::Json) if text::parse_conversation(bytes).is_ok() => {
                    Some(SourceFormat::Conversation)
                }
                other => other,
            }
        }
    }
}

fn guess_mime(file_name: Option<&str>) -> String {
    let ext = file_name
        .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()))
        .unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "csv" => "text/csv",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
    .to_string()
}

/// The deterministic embedding-input policy (D80): conversation turns embed their
/// body alone; other chunks get a short location header (title › section path).
pub fn embedding_text(title: &str, path: &[String], is_conversation: bool, body: &str) -> String {
    if is_conversation {
        return body.to_string();
    }
    let mut header = String::new();
    let title = title.trim();
    if !title.is_empty() {
        header.push_str(title);
    }
    for p in path {
        if p.trim() == title {
            continue;
        }
        if !header.is_empty() {
            header.push_str(" › ");
        }
        header.push_str(p.trim());
    }
    if header.is_empty() {
        return body.to_string();
    }
    let header: String = header.chars().take(200).collect();
    format!("{header}\n\n{body}")
}

/// The key a chunk's vector is stored under: the embedding text and the policy version.
pub fn embedding_key(embedding_text: &str) -> String {
    sha256_parts([
        EMBED_INPUT_POLICY_VERSION.as_bytes(),
        embedding_text.as_bytes(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing() {
        assert_eq!(
            route(DeclaredKind::Auto, Some("a.md"), b"# x"),
            Some(SourceFormat::Markdown)
        );
        assert_eq!(
            route(DeclaredKind::Auto, Some("page.HTM"), b"<p>x</p>"),
            Some(SourceFormat::Html)
        );
        assert_eq!(route(DeclaredKind::Auto, Some("scan.pdf"), b"%PDF"), None);
        assert_eq!(
            route(
                DeclaredKind::Auto,
                Some("chat.json"),
                br#"[{"speaker":"A","text":"hi"}]"#
            ),
            Some(SourceFormat::Conversation)
        );
        assert_eq!(
            route(DeclaredKind::Auto, Some("data.json"), br#"{"a":1}"#),
            Some(SourceFormat::Json)
        );
        assert_eq!(
            route(DeclaredKind::Auto, None, b"x"),
            Some(SourceFormat::Markdown)
        );
    }

    #[test]
    fn embedding_policy() {
        assert_eq!(embedding_text("T", &[], true, "A: hi"), "A: hi");
        assert_eq!(
            embedding_text("Guide", &["Guide".into(), "Setup".into()], false, "body"),
            "Guide › Setup\n\nbody"
        );
        assert_ne!(embedding_key("a"), embedding_key("b"));
    }

    #[test]
    fn cursor_round_trip_and_rejects_garbage() {
        let key = [7u8; 32];
        let c = Cursor {
            o: 10,
            d: 50,
            q: "abc".into(),
        };
        let back = decode_cursor(&key, &encode_cursor(&key, &c)).unwrap();
        assert_eq!((back.o, back.d, back.q.as_str()), (10, 50, "abc"));
        let refused = |s: &str, key: &[u8; 32]| decode_cursor(key, s).unwrap_err().code();
        assert_eq!(refused("!!!", &key), ErrorCode::InvalidParameter);
        // Another store's cursor.
        assert_eq!(
            refused(&encode_cursor(&[8u8; 32], &c), &key),
            ErrorCode::InvalidParameter
        );
        // A forged depth with the old tag, and the unsigned form of before.
        let good = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encode_cursor(&key, &c))
            .unwrap();
        let tag = &good[good.len() - CURSOR_TAG_BYTES..];
        let mut forged = br#"{"o":10,"d":9999,"q":"abc"}"#.to_vec();
        forged.extend_from_slice(tag);
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged);
        assert_eq!(refused(&forged, &key), ErrorCode::InvalidParameter);
        let unsigned = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"o":10,"d":50,"q":"abc"}"#);
        assert_eq!(refused(&unsigned, &key), ErrorCode::InvalidParameter);
        // A signed cursor past the depth limit is refused too.
        let deep = Cursor {
            o: 0,
            d: crate::limits::MAX_SEARCH_DEPTH + 1,
            q: "abc".into(),
        };
        assert_eq!(
            refused(&encode_cursor(&key, &deep), &key),
            ErrorCode::InvalidParameter
        );
    }

    #[test]
    fn hmac_matches_rfc_4231_case_1() {
        // The key is 20 bytes of 0x0b; HMAC pads a short key with zeros.
        let mut key = [0u8; 32];
        key[..20].fill(0x0b);
        let tag: String = hmac_sha256(&key, b"Hi There")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            tag,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn open_work_counts_what_a_worker_will_still_do() {
        let counts = |pairs: &[(&str, u64)]| {
            pairs
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect::<BTreeMap<_, _>>()
        };
        let mut status = StatusReport {
            store: "sqlite".into(),
            namespace: "default".into(),
            ledger: BTreeMap::from([
                (
                    "e0.prepare".to_string(),
                    counts(&[("done", 4), ("pending", 2)]),
                ),
                (
                    "e2.extract".to_string(),
                    counts(&[("running", 1), ("failed", 3), ("dead_letter", 5)]),
                ),
            ]),
            parked_no_route: 2,
            dead_letters: vec![],
            embedder: "hashing".into(),
            embedder_fallback: None,
            semantic: SemanticReadiness {
                generation: "hashing".into(),
                ready: true,
                chunks: 0,
                missing_vectors: 0,
                degraded: None,
            },
            documents: 1,
            forget_in_progress: None,
        };
        // Pending, running and failed count; done and dead letters do not; parked
        // originals wait for a route, not for a worker.
        assert_eq!(status.open_work(), 2 + 1 + 3 - 2);
        status.ledger.clear();
        assert_eq!(status.open_work(), 0);
    }
}
