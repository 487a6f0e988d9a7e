//! The `MemoryStore` trait: the one authority. Each write method is one atomic
//! unit of work with its precondition; business rules live in the engine.
//!
//! Every method is namespace-scoped. Stage commits take a [`Lease`] and fail with
//! `lease_lost` if the worker no longer holds the work item, so a worker that lost
//! its lease can never write twice.

use crate::Result;
use crate::claims::{EvidenceSpan, Validity};
use crate::embed::EmbedderIdentity;
use crate::entities::{
    BlockingKey, BlockingQuery, BlockingResult, DocumentBinding, EntityFilter, EntityRecord,
    KeyData, MergeEvent, ResolutionCommit, ResolutionDecision,
};
use crate::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, EvidenceRecord, FactFilter, FactKey, FactRecord,
    PredicateRow,
};
use crate::ids::*;
use crate::keys::ApiKey;
use crate::ledger::{
    BarrierStatus, ClaimRequest, DeferReason, FailureOutcome, LeaseHolder, NewWork, Stage,
    WorkCount, WorkItem, WorkStatus,
};
use crate::source::{Admission, DocumentMetadata, Origin, VersioningMode};
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
    /// Compare-and-set on the lineage's latest version (`Conflict` when it moved).
    pub expected_latest: Option<VersionId>,
    /// The version's admission state.
    pub admission: Admission,
    /// Create a version even for bytes identical to the latest.
    pub distinct: bool,
    /// A note revision recorded with the version, in the same transaction.
    pub note: Option<NewNote>,
    /// When.
    /// Who creates the version (D101); recorded only when a version is created.
    pub principal: Option<crate::source::IngestPrincipal>,
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
    /// Who created it (D101), when the creator said so.
    pub ingested_by: Option<crate::source::IngestPrincipal>,
    /// When a newer version of its conversation superseded it and its bytes and
    /// derived rows were compacted away (see `compact_conversation`).
    pub compacted_at: Option<Timestamp>,
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
    /// The typed refusal of a write made under this lease once another worker
    /// holds the item (or none does): `lease_lost`.
    pub fn lost(&self) -> crate::Error {
        crate::Error::new(
            crate::ErrorCode::LeaseLost,
            format!(
                "work item {} is no longer leased to {}",
                self.work_id, self.owner
            ),
        )
    }

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
    /// When not empty: only chunks with a claim that mentions one of these entities.
    pub entities: Vec<EntityId>,
    /// When set: only chunks of these lineages' live versions (D134; empty admits
    /// nothing).
    pub documents: Option<Vec<DocumentId>>,
    /// Rank the semantic channel by an exact scan even where an approximate index
    /// exists (PostgreSQL's HNSW, the embedded store's index of a large table).
    pub exact: bool,
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
    /// The section it belongs to.
    pub section_ordinal: u32,
    /// First block (inclusive).
    pub block_start: u32,
    /// One past the last block.
    pub block_end: u32,
    /// Byte offset into the representation.
    pub start: u64,
    /// Byte offset one past the end.
    pub end: u64,
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

/// The rule every store applies to vectors it is given to keep: each has its
/// generation's dimension and only finite components (a cosine with a NaN is NaN,
/// and an index cannot hold another dimension). A batch with one such vector is
/// refused, typed, before anything is written.
pub fn check_vectors(generation: &EmbedderIdentity, vectors: &[(String, Vec<f32>)]) -> Result<()> {
    for (key, v) in vectors {
        if v.len() != generation.dimension {
            return Err(crate::Error::invalid_input(format!(
                "vector `{key}` has dimension {}, generation `{}` has {}",
                v.len(),
                generation.generation(),
                generation.dimension
            )));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(crate::Error::invalid_input(format!(
                "vector `{key}` has a non-finite component"
            )));
        }
    }
    Ok(())
}

/// The rule every store applies to a query vector: a non-finite component is
/// refused, typed (every cosine with it would be NaN, and NaN has no rank).
pub fn check_query_vector(query: &[f32]) -> Result<()> {
    if query.iter().any(|x| !x.is_finite()) {
        return Err(crate::Error::invalid_input(
            "the query vector has a non-finite component",
        ));
    }
    Ok(())
}

/// Both stores keep vectors at half precision (`f16`: two bytes a component, 11
/// significant bits, finite values up to ±65,504), which every reader compares by
/// cosine only. A vector whose largest component half precision would not hold
/// well (above 65,504, or below 0.01 where it loses significant bits) is stored
/// scaled to unit length instead, which no cosine sees; any other vector is stored
/// as it is. Non-finite vectors are left as they are (a store refuses or keeps them
/// whole).
pub fn vector_for_half_precision(v: &[f32]) -> std::borrow::Cow<'_, [f32]> {
    /// The largest finite `f16`.
    const LARGEST: f32 = 65_504.0;
    /// Below this largest component, scale: `f16` keeps 11 significant bits only
    /// from 2^-14 up (its normal range).
    const SMALLEST_LARGEST: f32 = 1.0e-2;
    let largest = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !v.iter().all(|x| x.is_finite()) || (SMALLEST_LARGEST..=LARGEST).contains(&largest) {
        return std::borrow::Cow::Borrowed(v);
    }
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return std::borrow::Cow::Borrowed(v);
    }
    std::borrow::Cow::Owned(v.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
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
    /// When the lineage was deleted (D135), if it is tombstoned.
    pub deleted_at: Option<Timestamp>,
}

/// What deleting a document lineage did (D135): one atomic episode.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentDeletion {
    /// The lineage.
    pub doc_id: DocumentId,
    /// The tombstone instant (the first deletion's, for an episode finished by a repeat).
    pub deleted_at: Timestamp,
    /// Claims of the lineage that stopped being current testimony in this episode.
    pub claims_retired: u64,
    /// Relations closed (`retracted_source_removal`) because the lineage was their
    /// only current support.
    pub relations_closed: u64,
    /// Observations closed likewise.
    pub observations_closed: u64,
    /// Entities whose facts changed (subjects and objects of closed facts).
    #[serde(skip)]
    pub touched_entities: Vec<EntityId>,
}

/// A caller's request id with what it asked, for exact replay (the same id and
/// input return the stored result; the same id with another input is refused with
/// `request_conflict`).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestKey {
    /// The caller's id (1 to 200 characters).
    pub request_id: String,
    /// The operation (`retract_claim`, `invalidate_fact`, …).
    pub operation: String,
    /// sha256 of the operation's canonical input.
    pub digest: String,
}

impl RequestKey {
    /// A stored request under this id may be replayed only if it was the same
    /// operation with the same input; anything else is `request_conflict`.
    pub fn check_replay(&self, operation: &str, digest: &str) -> Result<()> {
        if operation == self.operation && digest == self.digest {
            return Ok(());
        }
        Err(crate::Error::new(
            crate::ErrorCode::RequestConflict,
            format!(
                "request id `{}` was already used for a different {operation} request",
                self.request_id
            ),
        ))
    }
}

/// A note revision to record with its version.
#[derive(Clone, Debug, PartialEq)]
pub struct NewNote {
    /// The source key (the note lineage's `source_ref`).
    pub source_key: String,
    /// The caller's revision label.
    pub source_revision: String,
    /// sha256 of the note text.
    pub content_digest: String,
    /// sha256 of the whole request (key, revision, text, metadata).
    pub request_digest: String,
    /// The caller's request id.
    pub request_id: String,
    /// Caller metadata.
    pub metadata: serde_json::Value,
}

/// A note revision's metadata (never its text).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoteRecord {
    /// The note lineage.
    pub note_id: DocumentId,
    /// The revision's version.
    pub version_id: VersionId,
    /// The source key.
    pub source_key: String,
    /// The revision label.
    pub source_revision: String,
    /// sha256 of the text.
    pub digest: String,
    /// `candidate`, `promoted`, `archived` or `revoked`.
    pub lifecycle: Admission,
    /// Bumped by every transition; a transition names the version it expects.
    pub lifecycle_version: u32,
    /// Caller metadata.
    pub metadata: serde_json::Value,
    /// When the revision was remembered.
    pub created_at: Timestamp,
    /// The last transition.
    pub updated_at: Timestamp,
    /// Keyset position (listing order).
    #[serde(skip)]
    pub seq: i64,
}

impl NoteRecord {
    /// The compare-and-set rule of every note transition: the caller's
    /// `expected` lifecycle version must be current (a stale one is refused, never
    /// guessed) and [`Admission::may_become`] must allow `to`; `Conflict` otherwise.
    pub fn check_transition(&self, expected: u32, to: Admission) -> crate::Result<()> {
        use crate::{Error, ErrorCode};
        if self.lifecycle_version != expected {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "stale lifecycle version: the revision is at version {}, not {expected}; read it again and decide",
                    self.lifecycle_version
                ),
            ));
        }
        if !self.lifecycle.may_become(to) {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "a {} revision cannot become {} (candidate → promoted → archived; candidate or promoted → revoked)",
                    self.lifecycle.as_str(),
                    to.as_str()
                ),
            ));
        }
        Ok(())
    }
}

/// How a note intake request relates to what is stored.
#[derive(Clone, Debug, PartialEq)]
pub enum NoteLookup {
    /// Nothing stored under this request id or revision.
    New,
    /// The request id is known: its request digest and note.
    Request(String, NoteRecord),
    /// The revision is known (under another request id).
    Revision(NoteRecord),
}

/// What retracting a claim did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimRetraction {
    /// The claim.
    pub claim_id: ClaimId,
    /// When it was retracted (the first retraction's instant on a repeat).
    pub retracted_at: Timestamp,
    /// The recorded reason.
    pub reason: String,
    /// Whether the claim was current testimony when retracted.
    pub was_current: bool,
    /// Facts the claim evidenced (either stance), whose support was recounted.
    pub facts_recounted: u64,
    /// Relations closed (`retracted_claim`) because it was their only current support.
    pub relations_closed: u64,
    /// Observations closed likewise.
    pub observations_closed: u64,
    /// Entities whose facts changed (not part of the public answer).
    #[serde(skip)]
    pub touched_entities: Vec<EntityId>,
}

/// What invalidating a fact did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactInvalidation {
    /// The fact.
    pub fact_id: FactId,
    /// When it stopped being believed.
    pub invalidated_at: Timestamp,
    /// The recorded closing reason (`invalidated` or `corrected`).
    pub closed_reason: String,
    /// The caller's reason.
    pub reason: String,
    /// Entities whose facts changed (not part of the public answer).
    #[serde(skip)]
    pub touched_entities: Vec<EntityId>,
}

/// One lifecycle event of a fact (append-only; shown by `trace`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactEvent {
    /// `closed`, `invalidated`, `support_retracted`.
    pub event: String,
    /// The reason (`retracted_source_removal`, `retracted_claim`, or the caller's).
    pub reason: String,
    /// Ids the event concerns (a document, a claim, a request).
    pub detail: serde_json::Value,
    /// When.
    pub created_at: Timestamp,
}

/// Feedback on one item a recall receipt selected.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeedbackRecord {
    /// Its id.
    pub feedback_id: uuid::Uuid,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The receipt.
    pub receipt_id: ReceiptId,
    /// The selected item, `kind:id` (e.g. `claim:…`).
    pub item_ref: String,
    /// `useful`, `not_useful` or `wrong`.
    pub rating: String,
    /// The caller's comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// When.
    pub created_at: Timestamp,
}

/// The outcome of a deletion request at the store.
#[derive(Clone, Debug, PartialEq)]
pub enum DeletionOutcome {
    /// No such lineage in the namespace.
    NotFound,
    /// The lineage was already deleted and the cascade changed nothing.
    AlreadyDeleted,
    /// The episode ran (a first deletion, or a repeat that finished an episode or
    /// retired work that landed after the tombstone).
    Deleted(DocumentDeletion),
}

/// A stored section.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SectionRow {
    /// The section.
    #[serde(flatten)]
    pub section: Section,
    /// Chunks in the section.
    pub chunk_count: u32,
}

/// A claim to store (immutable once written).
#[derive(Clone, Debug, PartialEq)]
pub struct NewClaim {
    /// Its id.
    pub id: ClaimId,
    /// The lineage that said it.
    pub document_id: DocumentId,
    /// The standalone claim text.
    pub text: String,
    /// Context the extractor added.
    pub added_context: Vec<String>,
    /// The source-asserted validity.
    pub validity: Validity,
    /// When the source said it (the version's source time).
    pub asserted_at: Timestamp,
    /// The extractor generation.
    pub extractor_version: String,
    /// The reuse key.
    pub extraction_input_hash: String,
    /// The version it was first extracted from.
    pub origin_version_id: VersionId,
    /// The chunk it was first extracted from.
    pub origin_chunk_id: ChunkId,
    /// Key of its vector.
    pub embedding_key: String,
    /// Its identity within the lineage: extractor generation, text and evidence text.
    pub claim_key: String,
}

/// Where a claim occurs in one version chunk (the `chunk_claims` map).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occurrence {
    /// The claim.
    pub claim_id: ClaimId,
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The chunk's version.
    pub version_id: VersionId,
    /// The lineage.
    pub document_id: DocumentId,
    /// The extractor generation of the extraction basis.
    pub extractor_version: String,
    /// The reuse key.
    pub extraction_input_hash: String,
    /// Position among the chunk's claims.
    pub ordinal: u32,
    /// Exact spans in this version's `document.md`.
    pub spans: Vec<EvidenceSpan>,
    /// Passage labels cited (positional within the bundle that produced it).
    pub passages: Vec<String>,
    /// Message ids of the conversation turns the spans fall in.
    pub event_ids: Vec<String>,
    /// Whether the occurrence was reused from an earlier version.
    pub reused: bool,
}

/// A row of the extraction ledger (D33).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionRow {
    /// `keep`, `keep_flagged`, `drop`, `accepted`, `grounding_rejected`,
    /// `claimify_omitted` or `reused`.
    pub kind: String,
    /// The passage label it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    /// A drop reason or a failed gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The claim it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_id: Option<ClaimId>,
    /// Details: passage text, edits, failing tokens.
    pub detail: serde_json::Value,
}

/// One chunk's extraction, committed atomically with its work item.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtractionCommit {
    /// The lineage.
    pub document_id: DocumentId,
    /// The version.
    pub version_id: VersionId,
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The reuse key.
    pub extraction_input_hash: String,
    /// The extractor generation.
    pub extractor_version: String,
    /// New claims (empty on reuse).
    pub claims: Vec<NewClaim>,
    /// Occurrences in this chunk.
    pub occurrences: Vec<Occurrence>,
    /// Ledger rows.
    pub decisions: Vec<DecisionRow>,
}

/// An earlier extraction of the same input in the same lineage.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorExtraction {
    /// The chunk it was made for.
    pub chunk_id: ChunkId,
    /// Its occurrences.
    pub occurrences: Vec<Occurrence>,
}

/// A stored ledger row with its coordinates.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// The version.
    pub version_id: VersionId,
    /// The chunk.
    pub chunk_id: ChunkId,
    /// The extractor generation.
    pub extractor_version: String,
    /// The row.
    #[serde(flatten)]
    pub row: DecisionRow,
    /// When.
    pub created_at: Timestamp,
}

/// A claim with its provenance.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The claim.
    pub claim_id: ClaimId,
    /// Its lineage.
    pub document_id: DocumentId,
    /// The lineage's display title.
    pub document_title: String,
    /// Lineage key.
    pub source_kind: String,
    /// Lineage key.
    pub source_ref: String,
    /// The claim text.
    pub text: String,
    /// Added context.
    pub added_context: Vec<String>,
    /// Validity.
    pub validity: Validity,
    /// When the source said it.
    pub asserted_at: Timestamp,
    /// The extractor generation.
    pub extractor_version: String,
    /// Whether it is current testimony.
    pub is_current: bool,
    /// Key of its vector.
    pub embedding_key: String,
    /// Its occurrences, oldest version first.
    pub occurrences: Vec<Occurrence>,
}

/// Eligibility of claims for ranked search.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimFilter {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// Include claims that are no longer current testimony (audit).
    pub include_retired: bool,
    /// Only these lineages.
    pub document_id: Option<DocumentId>,
    /// When not empty: only claims that mention one of these entities.
    pub entities: Vec<EntityId>,
    /// When set: only claims of these lineages (D134; empty admits nothing).
    pub documents: Option<Vec<DocumentId>>,
}

/// One ranked claim.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimHit {
    /// The claim.
    pub claim_id: ClaimId,
    /// The channel's score (higher is better).
    pub score: f64,
}

/// A durable recall receipt (Archive ADR): what a context operation selected, with
/// no query or source text.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// Its id.
    pub receipt_id: ReceiptId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The caller's request id (a replay returns this receipt).
    pub request_id: Option<String>,
    /// The operation that selected.
    pub operation: String,
    /// Who the recall was for, if given.
    pub subject: Option<String>,
    /// What it was for, if given.
    pub purpose: Option<String>,
    /// sha256 of the trimmed query.
    pub query_digest: String,
    /// The applied parameters and budgets (anchors, k, budget, time scope) — never the query.
    pub parameters: serde_json::Value,
    /// The selected records, in rank order.
    pub selections: Vec<ReceiptSelection>,
    /// Coverage: candidates considered, returned, omitted by the budget.
    pub coverage: serde_json::Value,
    /// When.
    pub created_at: Timestamp,
}

/// One selected record of a receipt.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceiptSelection {
    /// `claim`, `chunk` or `fact`.
    pub kind: String,
    /// The record id.
    pub id: String,
    /// The version the record belonged to (claims, chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<VersionId>,
    /// sha256 of the record's content as selected (text; a fact's statement and window).
    pub content_digest: String,
    /// Its fused score.
    pub score: f64,
}

/// One provider call, for the cost ledger and the transcript.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The work item.
    pub processing_id: WorkId,
    /// The handler attempt.
    pub attempt: u32,
    /// The logical call (`selection`, `claimify`).
    pub call_key: String,
    /// The stage.
    pub stage: Stage,
    /// The model.
    pub model: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Hash of the rendered request.
    pub request_hash: String,
    /// The prompt's version.
    pub prompt_version: String,
    /// The raw answer (or the error).
    pub raw_output: String,
    /// `ok`, `malformed`, `error`.
    pub verdict: String,
    /// Why, for anything but `ok`.
    pub reason: Option<String>,
}

/// One claim's normalization, as [`MemoryStore::commit_normalization`] takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct NormalizationCommit {
    /// The normalize item's lease.
    pub lease: Lease,
    /// The claim.
    pub claim: ClaimId,
    /// The normalizer generation.
    pub normalizer_version: String,
    /// The normalizer output.
    pub output: serde_json::Value,
    /// The staged assertions.
    pub assertions: Vec<Assertion>,
    /// Follow-up work.
    pub follow_up: Vec<NewWork>,
}

/// One batch of pipeline work handed to [`MemoryStore::grouped`].
pub type GroupWork<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

/// The trait every store implements: one capability trait per area, so each
/// area's methods are found, implemented and reviewed together. Any type
/// implementing all of them is a `MemoryStore`.
pub trait MemoryStore:
    StoreRuntime
    + SourceStore
    + LedgerStore
    + SearchStore
    + ClaimStore
    + IdentityStore
    + FactStore
    + LifecycleStore
    + KeyStore
{
}

impl<T> MemoryStore for T where
    T: StoreRuntime
        + SourceStore
        + LedgerStore
        + SearchStore
        + ClaimStore
        + IdentityStore
        + FactStore
        + LifecycleStore
        + KeyStore
{
}

/// How a store asks to be driven: decided by the store's own configuration and read
/// once by the engine when it opens ([`StoreRuntime::tuning`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct StoreTuning {
    /// Run pipeline work on a thread of its own that first calls this (the embedded
    /// store pins the thread to the CPU beside its writer, since every statement is
    /// a hand-off between the two). `None`: pipeline work runs where it is called.
    pub pipeline_thread: Option<fn()>,
    /// One process writes the store, so this process's locks are the whole lock
    /// ([`StoreRuntime::lock_key`] returns `None`): batches of the stages that run
    /// as write groups claim [`crate::engine::EngineConfig::grouped_claim_limit`]
    /// items.
    pub one_writer_process: bool,
    /// The engine may hold a batch's keys at once ([`StoreRuntime::lock_keys`]
    /// takes them together) and decide an offline batch's references and entity
    /// units together, with a few reads and one commit per batch instead of a
    /// dozen statements per item. The store provides the batch reads the
    /// together path makes ([`IdentityStore::entity_key_data`],
    /// [`IdentityStore::entity_key_rows`]).
    pub decides_batches: bool,
}

/// What kind of store this is and how it runs: its kind, its tuning, write groups,
/// store-wide settings and change stamps, cross-process locks, namespaces.
#[async_trait]
pub trait StoreRuntime: Send + Sync + std::fmt::Debug {
    /// A short name for the store kind (`sqlite`, `postgres`).
    fn kind(&self) -> &'static str;

    /// How the engine should drive this store, as the store's own configuration
    /// decides. The default suits any store: pipeline work runs where it is called,
    /// and locks are held across processes.
    fn tuning(&self) -> StoreTuning {
        StoreTuning::default()
    }

    /// Run `work`, one batch of pipeline work that calls no remote provider, as one
    /// write group: the store may keep the group's writes in one transaction and
    /// commit them together when the group ends, each write method staying atomic
    /// inside it (the embedded store does: each small commit rewrote every page it
    /// touched). Reads made by the group see its writes; writes made outside any
    /// group stay durable when they return. An error means the group's commit failed
    /// and its writes (ledger transitions included) were rolled back. The default
    /// runs `work` as it is.
    async fn grouped<'a>(&'a self, work: GroupWork<'a>) -> Result<()> {
        work.await;
        Ok(())
    }

    /// The namespace with this slug, if it exists.
    async fn namespace(&self, slug: &str) -> Result<Option<Namespace>>;

    /// The namespace with this slug, created if missing.
    async fn ensure_namespace(&self, slug: &str, now: Timestamp) -> Result<Namespace>;

    /// Every namespace.
    async fn namespaces(&self) -> Result<Vec<Namespace>>;

    /// A number that changes whenever anything that decides the namespace's
    /// freshness or vector coverage is written (work items, documents, chunks,
    /// claims, vectors, facts), by any process. Readers reuse those aggregates while
    /// it is unchanged.
    async fn change_stamp(&self, ns: NamespaceId) -> Result<u64>;

    /// A store-wide setting.
    async fn setting(&self, key: &str) -> Result<Option<String>>;

    /// Set a store-wide setting.
    async fn set_setting(&self, key: &str, value: &str) -> Result<()>;

    /// Hold `key` (`lemma:<ns>:<lemma>`, `entity:<ns>:<id>`) against every other
    /// process using this store until the returned guard drops. The engine holds its
    /// in-process lock on the same key first. A store only one process writes (the
    /// embedded store) returns `None`: the in-process lock is the whole lock.
    async fn lock_key(&self, key: &str) -> Result<Option<StoreLock>> {
        let _ = key;
        Ok(None)
    }

    /// Hold every key of `keys` (sorted, distinct) as [`StoreRuntime::lock_key`]
    /// holds one, until the returned guard drops. A store should take them without
    /// holding some while it waits for others, so that holders of overlapping sets
    /// taken in any order never wait on each other crosswise. The default takes
    /// them one by one in the order given.
    async fn lock_keys(&self, keys: &[String]) -> Result<Option<StoreLock>> {
        let mut held = Vec::new();
        for key in keys {
            held.extend(self.lock_key(key).await?);
        }
        Ok((!held.is_empty()).then(|| StoreLock::new(held)))
    }
}

/// Sources: originals, versions and their preparation, chunks, lineages, notes.
#[async_trait]
pub trait SourceStore: Send + Sync + std::fmt::Debug {
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
    ) -> Result<()> {
        self.commit_chunks_carrying(lease, version_id, chunks, vec![], follow_up, now)
            .await
    }

    /// [`MemoryStore::commit_chunks`], writing in the same transaction the
    /// extractions `carried` over from an earlier version for chunks whose
    /// extraction input is unchanged (those chunks get no `e2.extract` unit). When
    /// any are carried, the version owes a currency refresh
    /// ([`MemoryStore::currency_due`]) from the same commit, so a crash before the
    /// refresh cannot leave the carried claims non-current.
    async fn commit_chunks_carrying(
        &self,
        lease: &Lease,
        version_id: VersionId,
        chunks: Vec<NewChunk>,
        carried: Vec<ExtractionCommit>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()>;

    /// Lineages in a namespace, newest first.
    async fn documents(&self, ns: NamespaceId) -> Result<Vec<DocumentRow>>;

    /// One lineage.
    async fn document(&self, ns: NamespaceId, doc: DocumentId) -> Result<Option<DocumentRow>>;

    /// A lineage by its key, deleted or not.
    async fn document_by_ref(
        &self,
        ns: NamespaceId,
        source_kind: &str,
        source_ref: &str,
    ) -> Result<Option<DocumentRow>>;

    /// Every name (file name, title) the lineage was observed under, in first-seen order.
    async fn document_names(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<String>>;

    /// A version's sections with their chunk counts.
    async fn sections(&self, ns: NamespaceId, version: VersionId) -> Result<Vec<SectionRow>>;

    /// Delete a lineage (D135) in one transaction: tombstone the lineage and every
    /// version (no version is served any more), retire every current claim of the
    /// lineage (reason `document_deleted`), and close, with the recorded reason
    /// `retracted_source_removal`, every live fact that any claim of the lineage
    /// evidences and that is left without current support. Facts with other current
    /// support stay. Rerunning it on a deleted lineage retires whatever landed since
    /// (work that was still queued) and reports `AlreadyDeleted` when nothing changed.
    async fn delete_document(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<DeletionOutcome>;

    /// Compact the superseded versions of conversation lineage `doc` (appends make a
    /// new version holding every message, so without this a conversation's storage
    /// grows with the square of its turns). Each compacted version keeps its row
    /// (id, ordinal, sha256, size, times, principal) with `compacted_at` set, and
    /// loses its original bytes, its prepared structure (the representation row keeps
    /// only its title), its blocks, its `reused` extraction decisions, its terminal
    /// ledger items (unless a transcript or cost row names them), and every chunk
    /// except (a) the source of a fresh extraction whose input a retained version
    /// still uses (so that input is never extracted again) and (b) one chunk holding
    /// each claim's last remaining occurrence (so every claim keeps its evidence).
    /// Claims, entities and facts are never touched; vectors nothing uses any more go.
    ///
    /// A version is compacted when (processed) it is older than the current version,
    /// whose extraction is complete, and none of its own ledger items is open; or
    /// (never started) it is older than the latest version and its processing has not
    /// begun: its pending items are withdrawn in the same transaction (a leased item
    /// is never touched). Each version goes in one transaction, so a crash leaves
    /// every version either whole or compacted and a rerun finishes the rest.
    /// Lineages of other kinds, and deleted ones, are left alone. Returns how many
    /// versions were compacted.
    async fn compact_conversation(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<u64>;

    /// Chunks by id with their provenance (any version), in the order asked; missing ids are skipped.
    async fn chunks(&self, ns: NamespaceId, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>>;

    /// Versions that are the latest of their lineage, for re-running a stage after a component change.
    async fn latest_versions(&self) -> Result<Vec<(NamespaceId, VersionId, Option<SourceFormat>)>>;

    /// Look up a note intake: by request id first, then by (source key, revision).
    async fn note_lookup(
        &self,
        ns: NamespaceId,
        request_id: &str,
        source_key: &str,
        source_revision: &str,
    ) -> Result<NoteLookup>;

    /// Remember another request id for an existing revision.
    async fn add_note_request(
        &self,
        ns: NamespaceId,
        request_id: &str,
        request_digest: &str,
        version: VersionId,
        now: Timestamp,
    ) -> Result<()>;

    /// A note revision by its version.
    async fn note(&self, ns: NamespaceId, version: VersionId) -> Result<Option<NoteRecord>>;

    /// Move a note revision to `to` if its lifecycle version is still `expected`
    /// and [`Admission::may_become`] allows it (`Conflict` otherwise), in one
    /// transaction: promotion archives the source's earlier promoted revision and
    /// makes this one the lineage's current version; archiving the current
    /// revision leaves the lineage without one. Returns the revision.
    async fn transition_note(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        to: Admission,
        now: Timestamp,
    ) -> Result<NoteRecord>;

    /// Note revisions' metadata in remember order, after a keyset position.
    async fn list_notes(&self, ns: NamespaceId, after: i64, limit: u32) -> Result<Vec<NoteRecord>>;

    /// Chunks of a version, in order.
    async fn version_chunks(&self, ns: NamespaceId, version: VersionId)
    -> Result<Vec<ChunkRecord>>;
}

/// The work ledger: enqueueing, leasing, settling and replaying work, currency
/// refreshes due, and the provider call ledger.
#[async_trait]
pub trait LedgerStore: Send + Sync + std::fmt::Debug {
    /// Enqueue work idempotently; returns how many rows were new.
    async fn enqueue(&self, items: Vec<NewWork>, now: Timestamp) -> Result<u64>;

    /// Claim due work: pending or failed rows whose `not_before` has passed (never
    /// parked `no_route` rows), and running rows whose lease expired. Attempts are
    /// incremented; all claimed rows share one stage.
    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<WorkItem>>;

    /// Complete a work item and enqueue its follow-ups, atomically.
    async fn complete(&self, lease: &Lease, follow_up: Vec<NewWork>, now: Timestamp) -> Result<()>;

    /// Complete several work items without follow-ups, each exactly as
    /// [`MemoryStore::complete`] would (a store may fence them all in one
    /// statement). The outer error is a failure that completed nothing; each inner
    /// result is that item's own (`lease_lost` when its lease is gone).
    async fn complete_many(&self, leases: &[Lease], now: Timestamp) -> Result<Vec<Result<()>>> {
        let mut out = Vec::with_capacity(leases.len());
        for lease in leases {
            match self.complete(lease, vec![], now).await {
                Err(e) if e.code() != crate::ErrorCode::LeaseLost => return Err(e),
                result => out.push(result),
            }
        }
        Ok(out)
    }

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

    /// A namespace's unfinished work (every status but `done`) counted by stage and
    /// status: what a read's freshness reports, on every read of a store being
    /// written, so it must not count the namespace's finished history.
    async fn unfinished_work_counts(&self, ns: NamespaceId) -> Result<Vec<WorkCount>>;

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

    /// Run again every adjudication unit that has run while assertions of its
    /// version still wait to be decided (none should: a unit is enqueued with its
    /// assertions, and enqueueing a finished unit runs it again), so that no
    /// testimony waits forever. Returns how many units are pending again.
    async fn rearm_stranded_units(&self, now: Timestamp) -> Result<u64>;

    /// The earliest `not_before` among waiting (pending/failed, not parked) rows, and the
    /// earliest lease expiry among running rows.
    async fn next_wakeup(&self) -> Result<Option<Timestamp>>;

    /// A signal that the ledger changed in a way an idle worker should look at (new
    /// work, an item back to pending, a lease released), sent by whichever process
    /// wrote it: its value changes each time. An idle worker marks it seen before it
    /// claims and waits for the next change (or its poll interval) when it found
    /// nothing, so work another process enqueues starts at once instead of at the
    /// next poll. `None` (the default): the store has no such signal and idle
    /// workers poll.
    fn work_signal(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// Work leased at `now` and not yet expired, per holder, for a worker that waits
    /// for it to say whom it waits for. The default reports nothing.
    async fn lease_holders(&self, now: Timestamp) -> Result<Vec<LeaseHolder>> {
        let _ = now;
        Ok(vec![])
    }

    /// Versions whose extraction completed and whose lineage's testimony currency
    /// has not been refreshed since (written with the completion of the last
    /// `e2.extract` unit; see [`MemoryStore::apply_currency`]).
    async fn currency_due(&self) -> Result<Vec<(NamespaceId, VersionId)>>;

    /// Forget that `version` owes a currency refresh (the refresh had nothing to
    /// apply: the version or its lineage is gone, or the currency rule changes
    /// nothing for it).
    async fn clear_currency_due(&self, ns: NamespaceId, version: VersionId) -> Result<()>;

    /// Record a provider call: a cost-ledger row (unique on work item, attempt and
    /// call key; a duplicate is ignored) and an append-only transcript row.
    async fn record_call(&self, call: CallRecord, now: Timestamp) -> Result<()>;

    /// Cost-ledger rows of a namespace in write order: (call key, model, prompt tokens,
    /// completion tokens).
    async fn call_costs(&self, ns: NamespaceId) -> Result<Vec<(String, String, u64, u64)>>;

    /// Put a claimed item back to pending until `not_before`, without counting the
    /// attempt (a barrier wait).
    async fn defer(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()>;
}

/// Vectors and the lexical and semantic channels over chunks, claims and facts.
#[async_trait]
pub trait SearchStore: Send + Sync + std::fmt::Debug {
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

    /// Lexical ranking over eligible claims.
    async fn search_claims_lexical(
        &self,
        filter: &ClaimFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ClaimHit>>;

    /// Exact cosine ranking over eligible claims' vectors of `generation`.
    async fn search_claims_semantic(
        &self,
        filter: &ClaimFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ClaimHit>>;

    /// Coverage of current claims by vectors of `generation`.
    async fn claim_vector_coverage(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<VectorCoverage>;

    /// Current claims without a vector of `generation`, with their origin version.
    async fn claims_missing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<(ClaimId, VersionId)>>;

    /// Coverage of live facts (not invalidated, not superseded) by label vectors of
    /// `generation`.
    async fn fact_vector_coverage(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<VectorCoverage>;

    /// Lexical ranking over eligible facts' statements.
    async fn search_facts_lexical(
        &self,
        filter: &FactFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>>;

    /// Exact cosine ranking over eligible facts' label vectors of `generation`.
    async fn search_facts_semantic(
        &self,
        filter: &FactFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>>;

    /// Vectors by embedding key of `generation` (missing keys are skipped).
    async fn vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<(String, Vec<f32>)>>;
}

/// Claims: extractions, their reuse, currency and retraction.
#[async_trait]
pub trait ClaimStore: Send + Sync + std::fmt::Debug {
    /// Commit a batch of chunk extractions (claims, occurrences, ledger rows, follow-up
    /// work) and complete their work items, in one transaction. An item whose lease was
    /// lost is skipped (`false` in the returned flags); the others commit.
    async fn commit_extractions(
        &self,
        ns: NamespaceId,
        extractions: Vec<(Lease, ExtractionCommit, Vec<NewWork>)>,
        now: Timestamp,
    ) -> Result<Vec<bool>>;

    /// The newest earlier (fresh, not reused) extraction of each input hash in the
    /// lineage: (input hash, extraction).
    async fn prior_extractions(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        input_hashes: &[String],
    ) -> Result<Vec<(String, PriorExtraction)>>;

    /// Existing claims of the lineage with these claim keys: (key, claim).
    async fn claims_by_key(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        keys: &[String],
    ) -> Result<Vec<(String, ClaimId)>>;

    /// Distinct claims occurring in a version under an extractor generation.
    async fn version_claims(
        &self,
        ns: NamespaceId,
        version: VersionId,
        extractor_version: &str,
    ) -> Result<Vec<ClaimId>>;

    /// The lineage's claims currently marked current, with their extractor generation.
    async fn current_claim_refs(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<(ClaimId, String)>>;

    /// Make exactly `current` the lineage's current claims, recording each transition
    /// with `reason`. With `version`, the version's due currency refresh
    /// ([`MemoryStore::currency_due`]) is done in the same transaction. Returns how
    /// many claims changed.
    async fn apply_currency(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        current: &[ClaimId],
        reason: &str,
        version: Option<VersionId>,
        now: Timestamp,
    ) -> Result<u64>;

    /// Retract a claim in one transaction: it stops being current testimony for
    /// good (reason recorded; no later currency refresh revives it), every fact it
    /// evidences gets a `support_retracted` event, and a live fact left without
    /// current support closes with the reason `retracted_claim`. A repeat returns
    /// the first retraction. `NotFound` for an unknown claim; `RequestConflict` for a
    /// request id reused with another input.
    async fn retract_claim(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        reason: &str,
        request: Option<&RequestKey>,
        now: Timestamp,
    ) -> Result<ClaimRetraction>;

    /// Claims of a namespace (optionally one lineage), newest first.
    async fn list_claims(&self, filter: &ClaimFilter, limit: u32) -> Result<Vec<ClaimRecord>>;

    /// Claims by id, in the order asked; missing ids are skipped.
    async fn claims(&self, ns: NamespaceId, ids: &[ClaimId]) -> Result<Vec<ClaimRecord>>;

    /// The extraction ledger of a lineage, in write order.
    async fn decisions(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<DecisionRecord>>;
}

/// Entities: blocking, resolution decisions, bindings, mentions, profiles, merges.
#[async_trait]
pub trait IdentityStore: Send + Sync + std::fmt::Debug {
    /// Aliases matching the query's keys: every exact-lemma (T0) alias, aliases sharing
    /// trigrams (T1, the entities with most shared trigrams first) and aliases sharing a
    /// phonetic code (T2), each tier limited to `limit` distinct entities (with
    /// `truncated` set when a tier had more). Merged entities are included: the caller
    /// follows redirects.
    async fn block_entities(&self, query: &BlockingQuery) -> Result<BlockingResult>;

    /// Entities by id (any state), in the order asked; missing ids are skipped.
    async fn entities(&self, ns: NamespaceId, ids: &[EntityId]) -> Result<Vec<EntityRecord>>;

    /// Entities of a namespace, oldest first.
    async fn list_entities(&self, filter: &EntityFilter, limit: u32) -> Result<Vec<EntityRecord>>;

    /// The resolution decision already committed for (claim, ordinal) under
    /// `resolver_version`, if any (a re-run after a crash reuses it).
    async fn resolution_for(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        ordinal: u32,
        resolver_version: &str,
    ) -> Result<Option<ResolutionDecision>>;

    /// Commit one resolution atomically: mint (when `mint` is set, with the decision's
    /// `entity_id`), aliases, mention, decision row, exclusions and binding. A decision
    /// already committed for the same (claim, ordinal, resolver) stands and nothing is
    /// written. Returns the entity of the decision that stands.
    async fn commit_resolution(&self, commit: ResolutionCommit, now: Timestamp)
    -> Result<EntityId>;

    /// Record the cannot-link pair `a`–`b`, `a < b` (the engine orders it),
    /// decided by `decided_by` (e.g. `rejected:short_form_first_word`); an existing
    /// pair stands.
    async fn add_exclusion(
        &self,
        ns: NamespaceId,
        a: EntityId,
        b: EntityId,
        decided_by: &str,
    ) -> Result<()>;

    /// Cannot-link exclusions touching any of `ids`: (a, b) pairs.
    async fn exclusions(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<Vec<(EntityId, EntityId)>>;

    /// D102 binding rows of (document, lemma).
    async fn document_bindings(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        lemma: &str,
    ) -> Result<Vec<DocumentBinding>>;

    /// Every binding row of one document, of every lemma, in insertion order: the
    /// names the document already resolved (what a short form may abbreviate).
    async fn document_entity_bindings(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<DocumentBinding>>;

    /// The blocking results of several queries of one namespace, in the order asked
    /// (each as [`MemoryStore::block_entities`] gives it).
    async fn block_entities_many(&self, queries: &[BlockingQuery]) -> Result<Vec<BlockingResult>> {
        let mut out = Vec::with_capacity(queries.len());
        for q in queries {
            out.push(self.block_entities(q).await?);
        }
        Ok(out)
    }

    /// The D102 binding rows of several (document, lemma) pairs: for each pair in
    /// the order asked, its rows in [`MemoryStore::document_bindings`] order.
    async fn document_bindings_many(
        &self,
        ns: NamespaceId,
        pairs: &[(DocumentId, String)],
    ) -> Result<Vec<DocumentBinding>> {
        let mut out = Vec::new();
        for (doc, lemma) in pairs {
            out.extend(self.document_bindings(ns, *doc, lemma).await?);
        }
        Ok(out)
    }

    /// The decisions already committed for any of these (claim, ordinal) references
    /// under `resolver_version`.
    async fn resolutions_for_many(
        &self,
        ns: NamespaceId,
        references: &[(ClaimId, u32)],
        resolver_version: &str,
    ) -> Result<Vec<ResolutionDecision>> {
        let mut out = Vec::new();
        for (claim, ordinal) in references {
            out.extend(
                self.resolution_for(ns, *claim, *ordinal, resolver_version)
                    .await?,
            );
        }
        Ok(out)
    }

    /// Commit several resolutions of one namespace in order, each exactly as
    /// [`MemoryStore::commit_resolution`] would at its decision's `created_at` (a
    /// store may write them in one transaction); returns the entity that stands for
    /// each.
    async fn commit_resolutions(&self, commits: Vec<ResolutionCommit>) -> Result<Vec<EntityId>> {
        let mut out = Vec::with_capacity(commits.len());
        for c in commits {
            let at = c.decision.created_at;
            out.push(self.commit_resolution(c, at).await?);
        }
        Ok(out)
    }

    /// The blocking data of these keys: every key's alias-row count, and the rows of
    /// the keys [`KeyData::rows_read_with_counts`] names, from which
    /// [`KeyData::block`] computes a block exactly as [`MemoryStore::block_entities`]
    /// does. A store whose engine resolves batches (see
    /// [`StoreTuning::one_writer_process`]) provides it; the default refuses.
    async fn entity_key_data(&self, ns: NamespaceId, keys: &[BlockingKey]) -> Result<KeyData> {
        let _ = (ns, keys);
        Err(crate::Error::internal(
            "this store does not give blocking key data",
        ))
    }

    /// The alias rows (entity, alias lemma) of these keys, however many carry them.
    async fn entity_key_rows(
        &self,
        ns: NamespaceId,
        keys: &[BlockingKey],
    ) -> Result<Vec<(BlockingKey, Vec<(EntityId, String)>)>> {
        let _ = (ns, keys);
        Err(crate::Error::internal(
            "this store does not give blocking key rows",
        ))
    }

    /// A decision by id.
    async fn resolution_decision(
        &self,
        ns: NamespaceId,
        id: DecisionId,
    ) -> Result<Option<ResolutionDecision>>;

    /// Decisions that resolved to any of `entities`, oldest first.
    async fn resolution_decisions(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
    ) -> Result<Vec<ResolutionDecision>>;

    /// Mentions of an entity: (claim, start, end, surface), oldest first.
    async fn mentions(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        limit: u32,
    ) -> Result<Vec<crate::entities::Mention>>;

    /// Set an entity's profile summary and its embedding key.
    async fn set_profile(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        summary: &str,
        profile_key: &str,
        now: Timestamp,
    ) -> Result<()>;

    /// Redirect `from` into `into` and record the event with `snapshot`. Refused
    /// (`invalid_input`) when either is already merged, they are the same entity, or
    /// either is missing.
    async fn merge_entities(&self, event: MergeEvent) -> Result<()>;

    /// Undo a merge: clear the redirect and mark the event reverted. Refused
    /// (`invalid_input`) when the event is unknown or already reverted; `not_found`
    /// style errors use `invalid_input` too.
    async fn unmerge_entities(
        &self,
        ns: NamespaceId,
        merge: MergeId,
        now: Timestamp,
    ) -> Result<MergeEvent>;

    /// Merge events of a namespace touching any of `entities` (all when empty), oldest first.
    async fn merge_events(&self, ns: NamespaceId, entities: &[EntityId])
    -> Result<Vec<MergeEvent>>;
}

/// Facts: the predicate registry, normalizations, staged assertions and their
/// adjudication, fact reads and events.
#[async_trait]
pub trait FactStore: Send + Sync + std::fmt::Debug {
    /// Invalidate a fact (the belief ends now; `closed_reason = invalidated`, an
    /// `invalidated` event with the caller's reason). A replayed request id returns
    /// the stored result; `NotFound` for an unknown fact; `Conflict` for a fact
    /// already closed by another request or path.
    /// With `correction` (the corrected statement), the closing reason is
    /// `corrected` and the event `corrected` records the statement.
    async fn invalidate_fact(
        &self,
        ns: NamespaceId,
        fact: FactId,
        reason: &str,
        correction: Option<&str>,
        request: Option<&RequestKey>,
        now: Timestamp,
    ) -> Result<FactInvalidation>;

    /// A fact's lifecycle events, oldest first.
    async fn fact_events(&self, ns: NamespaceId, fact: FactId) -> Result<Vec<FactEvent>>;

    /// Seed the namespace's predicate registry with the core predicates
    /// (name, description, synonyms); idempotent.
    async fn bootstrap_predicates(
        &self,
        ns: NamespaceId,
        core: &[(String, String, Vec<String>)],
    ) -> Result<()>;

    /// The namespace's predicate registry: core rows, then `other:` values by use count.
    async fn predicates(&self, ns: NamespaceId) -> Result<Vec<PredicateRow>>;

    /// Commit one claim's normalization and complete its work item, atomically: the
    /// normalizer output (JSON, kept for audit), the staged assertions (idempotent on
    /// claim, normalizer version and ordinal), predicate use counts (`other:` values
    /// counted for review), and follow-up work. Fails with `lease_lost` when the lease
    /// is gone.
    #[allow(clippy::too_many_arguments)]
    async fn commit_normalization(
        &self,
        lease: &Lease,
        claim: ClaimId,
        normalizer_version: &str,
        output: serde_json::Value,
        assertions: Vec<Assertion>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()>;

    /// Several claims' normalizations, each exactly as
    /// [`MemoryStore::commit_normalization`] would commit it (a store may write them
    /// in one transaction). The outer error is a failure that wrote nothing; each
    /// inner result is that commit's own (`lease_lost` when its lease is gone, the
    /// others committing all the same).
    async fn commit_normalizations(
        &self,
        commits: Vec<NormalizationCommit>,
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        let mut out = Vec::with_capacity(commits.len());
        for c in commits {
            out.push(
                self.commit_normalization(
                    &c.lease,
                    c.claim,
                    &c.normalizer_version,
                    c.output,
                    c.assertions,
                    c.follow_up,
                    now,
                )
                .await,
            );
        }
        Ok(out)
    }

    /// A claim's normalizer output under `normalizer_version`, if committed.
    async fn normalization(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        normalizer_version: &str,
    ) -> Result<Option<serde_json::Value>>;

    /// Staged, unapplied assertions whose subject is one of `subjects`, in apply order
    /// `(asserted_at, claim_id, statement, ordinal)`.
    async fn unapplied_assertions(
        &self,
        ns: NamespaceId,
        subjects: &[EntityId],
    ) -> Result<Vec<Assertion>>;

    /// Distinct subjects of a version's unapplied assertions.
    async fn pending_subjects(&self, ns: NamespaceId, version: VersionId) -> Result<Vec<EntityId>>;

    /// Apply several assertions of one namespace in order, each exactly as
    /// [`MemoryStore::apply_assertion`] would at its transcript's `created_at` (a
    /// store may write them in one transaction). Returns, for each, whether it was
    /// applied (`false`: applied before).
    async fn apply_assertions(
        &self,
        ns: NamespaceId,
        commits: Vec<ApplyCommit>,
    ) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(commits.len());
        for c in commits {
            let at = c.transcript.created_at;
            out.push(self.apply_assertion(ns, c, at).await?);
        }
        Ok(out)
    }

    /// Apply one assertion atomically (new fact, evidence, windows, contradiction group,
    /// supersession, transcript) and mark it applied. A second apply of the same
    /// assertion is a no-op returning `false`.
    async fn apply_assertion(
        &self,
        ns: NamespaceId,
        commit: ApplyCommit,
        now: Timestamp,
    ) -> Result<bool>;

    /// Facts matching the filter, subject name then recorded order.
    async fn list_facts(&self, filter: &FactFilter, limit: u32) -> Result<Vec<FactRecord>>;

    /// One page of [`MemoryStore::list_facts`]: the facts after `after` (subject
    /// name, recorded order) in the same order, each with its recorded order so the
    /// next page can start after it.
    async fn list_facts_after(
        &self,
        filter: &FactFilter,
        after: Option<(&str, i64)>,
        limit: u32,
    ) -> Result<Vec<(i64, FactRecord)>>;

    /// The keys of the facts matching the filter (ids, ends, statement; no counts or
    /// names), by statement then id: enough to rank a large neighbourhood before
    /// reading whole records for one page.
    async fn list_fact_keys(&self, filter: &FactFilter, limit: u32) -> Result<Vec<FactKey>>;

    /// Facts by id, in the order asked; missing ids are skipped.
    async fn facts(&self, ns: NamespaceId, ids: &[FactId]) -> Result<Vec<FactRecord>>;

    /// Evidence rows of a fact, oldest first.
    async fn fact_evidence(&self, ns: NamespaceId, fact: FactId) -> Result<Vec<EvidenceRecord>>;

    /// Adjudication transcripts naming a fact (as target or result), oldest first.
    async fn adjudications(&self, ns: NamespaceId, fact: FactId)
    -> Result<Vec<AdjudicationRecord>>;
}

/// What outlives a read: hard forget and note revocation, recall receipts, feedback.
#[async_trait]
pub trait LifecycleStore: Send + Sync + std::fmt::Debug {
    /// Revoke a note revision if its lifecycle version is still `expected` (a
    /// candidate or promoted revision; `Conflict` otherwise), in one transaction:
    /// the revision becomes `revoked` and serves nothing; its text (representation,
    /// blocks, sections, chunks and their lexical rows), the claims only it carried
    /// (with their mentions, evidence, normalizations and staged assertions),
    /// facts and entities left without support, and vectors no record uses any
    /// more are removed. The note row and the version row stay as a tombstone (ids,
    /// digests, times). Returns the revision and the entities whose facts changed.
    async fn revoke_note(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        now: Timestamp,
    ) -> Result<(NoteRecord, Vec<EntityId>)>;

    /// Hard-forget a lineage (D74), resumable: append `manifest` to the manifest
    /// root first, fail the namespace closed (`forget_in_progress`), scrub every
    /// record derived from the lineage in one transaction (see
    /// [`ForgetReport`](crate::forget::ForgetReport)), keep the content hashes as
    /// ingest guards (`forgotten_content`), remove the bytes from the store's
    /// files, verify that nothing remains, and reopen the namespace. Running it
    /// again with the same manifest finishes an interrupted forget. Returns the
    /// report and the surviving entities whose facts changed.
    async fn forget(
        &self,
        manifest: &crate::forget::ForgetManifest,
        now: Timestamp,
    ) -> Result<(crate::forget::ForgetReport, Vec<EntityId>)>;

    /// The first step of [`MemoryStore::forget`] alone: append the manifest and
    /// fail the namespace closed. A forget that stops here (a crash) is finished by
    /// `forget` with the same manifest, or when the store next opens.
    async fn begin_forget(
        &self,
        manifest: &crate::forget::ForgetManifest,
        now: Timestamp,
    ) -> Result<()>;

    /// Manifests of the namespace's forgets that are not complete.
    async fn incomplete_forgets(
        &self,
        ns: NamespaceId,
    ) -> Result<Vec<crate::forget::ForgetManifest>>;

    /// Every forget of the store that has not completed, with the slug of the
    /// namespace it keeps closed and why its last attempt stopped: the one read of
    /// a closed namespace that `status` and `doctor` may make.
    async fn pending_forgets(&self) -> Result<Vec<crate::forget::PendingForget>>;

    /// Why the store's files still await the rewrite of a completed forget (see
    /// [`ForgetReport::file_rewrite_pending`](crate::forget::ForgetReport)), if they do.
    async fn file_rewrite_pending(&self) -> Result<Option<String>> {
        Ok(None)
    }

    /// Why this deployment's forget manifests may not be re-honoured everywhere
    /// (a server store reached from several hosts, some keeping manifests in a
    /// host-local root), if that is so now.
    async fn manifest_root_warning(&self) -> Result<Option<String>> {
        Ok(None)
    }

    /// Store feedback, first pruning feedback recorded before `prune_before`
    /// (every namespace), in one transaction.
    async fn put_feedback(&self, feedback: FeedbackRecord, prune_before: Timestamp) -> Result<()>;

    /// Feedback of a namespace (optionally one receipt), oldest first.
    async fn list_feedback(
        &self,
        ns: NamespaceId,
        receipt: Option<ReceiptId>,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>>;

    /// Delete feedback recorded before `before`; returns how many rows went.
    async fn prune_feedback(&self, before: Timestamp) -> Result<u64>;

    /// Store a receipt. When the namespace already holds a receipt with the same
    /// `request_id`, nothing is written and that receipt is returned.
    async fn put_receipt(&self, receipt: Receipt) -> Result<Receipt>;

    /// A receipt by id.
    async fn receipt(&self, ns: NamespaceId, id: ReceiptId) -> Result<Option<Receipt>>;

    /// A receipt by request id.
    async fn receipt_by_request(
        &self,
        ns: NamespaceId,
        request_id: &str,
    ) -> Result<Option<Receipt>>;
}

/// API keys (deployment-wide, not namespace data: forget and delete never touch them).
#[async_trait]
pub trait KeyStore: Send + Sync + std::fmt::Debug {
    /// Store a new key with the SHA-256 of its secret (never the secret). A taken id
    /// or secret hash is a `conflict`.
    async fn insert_api_key(&self, key: &ApiKey, secret_hash: &str) -> Result<()>;

    /// Every key, revoked ones included, oldest first.
    async fn api_keys(&self) -> Result<Vec<ApiKey>>;

    /// The key whose secret hashes to `secret_hash`, revoked or not.
    async fn api_key_by_hash(&self, secret_hash: &str) -> Result<Option<ApiKey>>;

    /// Revoke a key at `at` and return it; revoking a revoked key keeps the first
    /// revocation time. `not_found` for an unknown id.
    async fn revoke_api_key(&self, id: &str, at: Timestamp) -> Result<ApiKey>;

    /// How many keys are not revoked.
    async fn active_api_key_count(&self) -> Result<u64>;
}

/// The store traits, for code that calls a store's methods on a concrete store
/// type rather than through `dyn MemoryStore` (`use …::store::traits::*`).
pub mod traits {
    pub use super::{
        ClaimStore, FactStore, IdentityStore, KeyStore, LedgerStore, LifecycleStore, MemoryStore,
        SearchStore, SourceStore, StoreRuntime,
    };
}

/// A store's cross-process lock on one key, released when dropped.
pub struct StoreLock {
    _guard: Box<dyn std::any::Any + Send + Sync>,
}

impl StoreLock {
    /// Wrap a guard whose `Drop` releases the lock.
    pub fn new(guard: impl std::any::Any + Send + Sync) -> Self {
        StoreLock {
            _guard: Box::new(guard),
        }
    }
}

impl std::fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreLock")
    }
}
