//! The `MemoryStore` trait: the one authority. Each write method is one atomic
//! unit of work with its precondition; business rules live in the engine.
//!
//! Every method is namespace-scoped. Stage commits take a [`Lease`] and fail with
//! `lease_lost` if the worker no longer holds the work item, so a worker that lost
//! its lease can never write twice.

use crate::Result;
use crate::embed::EmbedderIdentity;
use crate::ids::*;
use crate::ledger::{
    BarrierStatus, ClaimRequest, DeferReason, FailureOutcome, NewWork, Stage, WorkCount, WorkItem,
    WorkStatus,
};
use crate::source::{DocumentMetadata, Origin, VersioningMode};
use crate::text::{Block, ChunkPlan, Representation, Section, SectionRole, SourceFormat};
use crate::time::Timestamp;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A namespace row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Namespace {
    /// Its id.
    pub id: NamespaceId,
    /// Its slug.
    pub slug: String,
    /// When its first write happened.
    pub created_at: Timestamp,
}

/// The original bytes of a version, content-addressed.
#[derive(Clone, Debug, PartialEq)]
pub struct ContentObject {
    /// sha256 of `bytes`, lowercase hex.
    pub sha256: String,
    /// The MIME type recorded for the bytes.
    pub mime: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// A version to create (E0 ingest).
#[derive(Clone, Debug, PartialEq)]
pub struct NewVersion {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The lineage id to use if the lineage is new.
    pub document_id: DocumentId,
    /// The version id to use if a version is created.
    pub version_id: VersionId,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// Requested mode; `None` keeps the lineage's (snapshot for a new lineage).
    pub mode: Option<VersioningMode>,
    /// The original.
    pub content: ContentObject,
    /// The routed format, `None` when no conversion route exists.
    pub format: Option<SourceFormat>,
    /// The version's source time (claims' `asserted_at`).
    pub source_modified_at: Timestamp,
    /// Origin.
    pub origin: Origin,
    /// General metadata.
    pub metadata: DocumentMetadata,
    /// The first unit of work, targeting `version_id`.
    pub work: NewWork,
    /// When.
    pub now: Timestamp,
}

/// What `create_version` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum VersionOutcome {
    /// A new version was created (and, if `new_lineage`, its lineage).
    Created {
        /// The lineage.
        document_id: DocumentId,
        /// The new version.
        version_id: VersionId,
        /// Whether the lineage was created too.
        new_lineage: bool,
    },
    /// The bytes equal the lineage's latest version: nothing was written.
    Unchanged {
        /// The lineage.
        document_id: DocumentId,
        /// The existing version.
        version_id: VersionId,
    },
}

/// A version as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VersionRecord {
    /// Its id.
    pub version_id: VersionId,
    /// Its lineage.
    pub document_id: DocumentId,
    /// Its namespace.
    pub namespace_id: NamespaceId,
    /// 1-based position in the lineage.
    pub ordinal: u32,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// The lineage's mode.
    pub mode: VersioningMode,
    /// sha256 of the original.
    pub content_sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// MIME type.
    pub mime: String,
    /// Routed format.
    pub format: Option<SourceFormat>,
    /// Source time.
    pub source_modified_at: Timestamp,
    /// Origin.
    pub origin: Origin,
    /// Metadata.
    pub metadata: DocumentMetadata,
    /// When it was ingested.
    pub created_at: Timestamp,
    /// Whether this is the lineage's current (processed, served) version.
    pub is_current: bool,
    /// Whether this is the lineage's newest observed version.
    pub is_latest: bool,
}

/// A version's prepared structure (E0 output).
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedVersion {
    /// The version.
    pub version_id: VersionId,
    /// `document.md` and its source map.
    pub representation: Representation,
    /// The block sequence.
    pub blocks: Vec<Block>,
    /// The sections.
    pub sections: Vec<Section>,
    /// The display title derived from metadata.
    pub title: String,
    /// The component version that produced it.
    pub component_version: String,
}

/// A chunk to store.
#[derive(Clone, Debug, PartialEq)]
pub struct NewChunk {
    /// Its id.
    pub id: ChunkId,
    /// The chunk as planned.
    pub plan: ChunkPlan,
    /// The key its vector is stored under: hash of the embedding text and input policy.
    pub embedding_key: String,
    /// Message ids of the conversation turns it covers.
    pub event_ids: Vec<String>,
}

/// A worker's hold on a work item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The work item.
    pub work_id: WorkId,
    /// The worker.
    pub owner: String,
}

impl Lease {
    /// The lease a claimed item carries.
    pub fn of(item: &WorkItem) -> Self {
        Lease {
            work_id: item.id,
            owner: item.lease_owner.clone().unwrap_or_default(),
        }
    }
}

/// Eligibility of chunks for ranked search, applied before ranking.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkFilter {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// Section roles allowed.
    pub roles: Vec<SectionRole>,
}

/// One ranked candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkHit {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The channel's score (higher is better).
    pub score: f64,
}

/// A chunk with its provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// Its lineage.
    pub document_id: DocumentId,
    /// Its version.
    pub version_id: VersionId,
    /// Position in the version.
    pub ordinal: u32,
    /// Document title.
    pub document_title: String,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// The section's title path.
    pub section_path: Vec<String>,
    /// The section's title.
    pub section_title: String,
    /// The section's role.
    pub section_role: SectionRole,
    /// The text.
    pub text: String,
    /// Unicode-scalar span into the representation.
    pub char_start: u64,
    /// Unicode-scalar span end.
    pub char_end: u64,
    /// Message ids covered.
    pub event_ids: Vec<String>,
    /// Source time of the version.
    pub source_modified_at: Timestamp,
    /// Content hash.
    pub content_hash: String,
    /// Embedding key.
    pub embedding_key: String,
    /// Whether the version is the lineage's current one.
    pub is_current: bool,
    /// The version's routed format.
    pub format: Option<SourceFormat>,
}

/// Semantic channel coverage for one generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorCoverage {
    /// Current chunks eligible for search.
    pub chunks: u64,
    /// Of those, chunks without a vector of the generation.
    pub missing: u64,
}

/// A chunk needing a vector.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkRef {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// Its version.
    pub version_id: VersionId,
}

/// Work state of a version, as the store sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkSummary {
    /// Items not yet terminal (pending, running, failed), excluding parked ones.
    pub open: u64,
    /// Items parked with `no_route`.
    pub parked: u64,
    /// Dead letters.
    pub dead_letter: u64,
}

/// A lineage row with its latest version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentRow {
    /// The lineage.
    pub document_id: DocumentId,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// Mode.
    pub mode: VersioningMode,
    /// The current (served) version.
    pub current_version_id: Option<VersionId>,
    /// The newest observed version.
    pub latest_version_id: VersionId,
    /// The latest version's metadata.
    pub metadata: DocumentMetadata,
    /// The latest version's work state.
    pub latest_work: WorkSummary,
    /// Versions in the lineage.
    pub version_count: u32,
    /// When the lineage was created.
    pub created_at: Timestamp,
}

/// A stored section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SectionRow {
    /// The section.
    #[serde(flatten)]
    pub section: Section,
    /// Chunks in the section.
    pub chunk_count: u32,
}

/// The trait every store implements.
#[async_trait]
pub trait MemoryStore: Send + Sync + std::fmt::Debug {
    /// A short name for the store kind (`sqlite`, `postgres`).
    fn kind(&self) -> &'static str;

    // --- namespaces
    /// The namespace with this slug, if it exists.
    async fn namespace(&self, slug: &str) -> Result<Option<Namespace>>;
    /// The namespace with this slug, created if missing.
    async fn ensure_namespace(&self, slug: &str, now: Timestamp) -> Result<Namespace>;
    /// Every namespace.
    async fn namespaces(&self) -> Result<Vec<Namespace>>;

    // --- sources
    /// Store the original and create a version of the lineage with its first work
    /// item, atomically. Identical bytes to the lineage's latest version write nothing.
    /// A mode different from the lineage's is refused with `conflict`.
    async fn create_version(&self, version: NewVersion) -> Result<VersionOutcome>;
    /// One version.
    async fn version(&self, ns: NamespaceId, id: VersionId) -> Result<Option<VersionRecord>>;
    /// Every version of a lineage, oldest first.
    async fn versions(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<VersionRecord>>;
    /// The original bytes of a content object.
    async fn content(&self, ns: NamespaceId, sha256: &str) -> Result<Vec<u8>>;
    /// Commit a prepared version (replacing any earlier preparation) and complete the work item.
    async fn commit_prepared(
        &self,
        lease: &Lease,
        prepared: PreparedVersion,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()>;
    /// A version's representation, blocks and sections.
    async fn prepared(&self, ns: NamespaceId, id: VersionId) -> Result<Option<PreparedVersion>>;
    /// Commit a version's chunks (replacing earlier ones), make the version current if
    /// it is newer than the current one, and complete the work item.
    async fn commit_chunks(
        &self,
        lease: &Lease,
        version_id: VersionId,
        chunks: Vec<NewChunk>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()>;
    /// Lineages in a namespace, newest first.
    async fn documents(&self, ns: NamespaceId) -> Result<Vec<DocumentRow>>;
    /// One lineage.
    async fn document(&self, ns: NamespaceId, doc: DocumentId) -> Result<Option<DocumentRow>>;
    /// Every name (file name, title) the lineage was observed under, in first-seen order.
    async fn document_names(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<String>>;
    /// A version's sections with their chunk counts.
    async fn sections(&self, ns: NamespaceId, version: VersionId) -> Result<Vec<SectionRow>>;

    // --- vectors
    /// Which of `keys` already have a vector of `generation`.
    async fn existing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<String>>;
    /// Store vectors and complete the embed work items, atomically.
    async fn commit_vectors(
        &self,
        leases: &[Lease],
        ns: NamespaceId,
        generation: &EmbedderIdentity,
        vectors: Vec<(String, Vec<f32>)>,
        now: Timestamp,
    ) -> Result<()>;
    /// Coverage of current chunks by vectors of `generation`.
    async fn vector_coverage(&self, ns: NamespaceId, generation: &str) -> Result<VectorCoverage>;
    /// Current chunks without a vector of `generation`.
    async fn chunks_missing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<ChunkRef>>;

    // --- search and reads
    /// Lexical ranking (BM25 where the store has it) over eligible chunks; terms are plain
    /// words, never query syntax: the store quotes them and OR-joins them.
    async fn search_chunks_lexical(
        &self,
        filter: &ChunkFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ChunkHit>>;
    /// Exact cosine ranking over eligible chunks' vectors of `generation`.
    async fn search_chunks_semantic(
        &self,
        filter: &ChunkFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ChunkHit>>;
    /// Chunks by id with their provenance (any version), in the order asked; missing ids are skipped.
    async fn chunks(&self, ns: NamespaceId, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>>;

    // --- ledger
    /// Enqueue work idempotently; returns how many rows were new.
    async fn enqueue(&self, items: Vec<NewWork>, now: Timestamp) -> Result<u64>;
    /// Claim due work: pending or failed rows whose `not_before` has passed (never
    /// parked `no_route` rows), and running rows whose lease expired. Attempts are
    /// incremented; all claimed rows share one stage.
    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<WorkItem>>;
    /// Complete a work item and enqueue its follow-ups, atomically.
    async fn complete(&self, lease: &Lease, follow_up: Vec<NewWork>, now: Timestamp) -> Result<()>;
    /// Record a failed attempt.
    async fn fail(
        &self,
        lease: &Lease,
        error: &str,
        outcome: FailureOutcome,
        now: Timestamp,
    ) -> Result<()>;
    /// Park a claimed item without consuming an attempt.
    async fn park(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()>;
    /// One work item.
    async fn work_item(&self, id: WorkId) -> Result<Option<WorkItem>>;
    /// Barrier status of a version for a stage.
    async fn barrier(
        &self,
        ns: NamespaceId,
        version: VersionId,
        stage: Stage,
    ) -> Result<BarrierStatus>;
    /// Ledger counts by stage and status.
    async fn work_counts(&self, ns: Option<NamespaceId>) -> Result<Vec<WorkCount>>;
    /// Work items with a status, oldest first.
    async fn work_items(
        &self,
        ns: Option<NamespaceId>,
        status: WorkStatus,
        limit: u32,
    ) -> Result<Vec<WorkItem>>;
    /// Replay dead letters: back to pending, attempts kept, `max_attempts` raised to
    /// attempts + `allowance`. Returns how many.
    async fn replay_dead_letters(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        allowance: u32,
        now: Timestamp,
    ) -> Result<u64>;
    /// Make failed rows waiting for their backoff due now. Returns how many.
    async fn expedite_failed(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        now: Timestamp,
    ) -> Result<u64>;
    /// The earliest `not_before` among waiting (pending/failed, not parked) rows, and the
    /// earliest lease expiry among running rows.
    async fn next_wakeup(&self) -> Result<Option<Timestamp>>;
    /// Versions that are the latest of their lineage, for re-running a stage after a component change.
    async fn latest_versions(&self) -> Result<Vec<(NamespaceId, VersionId, Option<SourceFormat>)>>;

    // --- settings
    /// A store-wide setting.
    async fn setting(&self, key: &str) -> Result<Option<String>>;
    /// Set a store-wide setting.
    async fn set_setting(&self, key: &str, value: &str) -> Result<()>;
}
