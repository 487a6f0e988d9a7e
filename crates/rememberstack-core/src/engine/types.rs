//! The engine's request and report types: what an ingest, a drain, a status or
//! `doctor` returns, and a chunk search request.

use super::*;

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
