//! The response envelope (D49): typed, honest, JSON-serialisable. Every read
//! operation returns one; later operations add grains and fields without
//! breaking the ones here.

use crate::ids::{ChunkId, DocumentId, VersionId};
use crate::text::SectionRole;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The envelope contract identifier.
pub const ENVELOPE_CONTRACT: &str = "rememberstack.envelope/v1";

/// Which operation produced an envelope.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationInfo {
    /// The operation name.
    pub name: String,
    /// The operation's version.
    pub version: u32,
}

/// The grain of an envelope's results.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grain {
    /// What sources said: chunks, claims.
    Evidence,
    /// What is believed: relations and observations.
    Fact,
    /// Who or what: entities.
    Entity,
}

/// A result envelope.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Envelope_for_{R}"))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope<R> {
    /// Always [`ENVELOPE_CONTRACT`].
    pub contract: String,
    /// The operation.
    pub operation: OperationInfo,
    /// The grain.
    pub grain: Grain,
    /// The namespace the operation ran in.
    pub namespace: String,
    /// The results, best first.
    pub results: Vec<R>,
    /// What was cut, and how to continue.
    pub truncation: Truncation,
    /// How current the answer is.
    pub freshness: Freshness,
    /// Per-channel status.
    pub channels: BTreeMap<String, ChannelReport>,
    /// A typed negative when there is nothing (or nothing trustworthy) to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negative: Option<Negative>,
    /// The time scope facts were evaluated in, echoed with the evaluation instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal_scope: Option<ScopeEcho>,
    /// The parameters as applied (defaults filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<serde_json::Value>,
    /// How results were fitted to a character budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetReport>,
    /// Candidates dropped at confirmation (the record changed or vanished after
    /// ranking), by reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hydration_drops: BTreeMap<String, u64>,
    /// Why a name is ambiguous (`resolve_entity`): several entities match it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ambiguity: Option<String>,
    /// The recall receipt recorded for this answer (`record_receipt: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_id: Option<crate::ids::ReceiptId>,
}

/// A typed negative (D49).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Negative {
    /// `unknown_entity` (an anchor is not a current entity of the namespace),
    /// `known_empty` (everything was searched and nothing matches), `boundary`
    /// (nothing found, but the search was limited: the named limitation) or
    /// `no_relevant_memory` (results are listed, but none reaches the relevance
    /// floor: they are weak guesses, not memories of the subject).
    pub kind: String,
    /// What it means.
    pub message: String,
    /// The limitation of a `boundary` (e.g. `semantic_channel_unready`, `pending_work`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limitation: Option<String>,
    /// The best result's relevance, for `no_relevant_memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_relevance: Option<f64>,
}

/// The time scope an operation applied, with the instant it was evaluated at.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeEcho {
    /// `current`, `at`, `overlap` or `history`.
    pub mode: String,
    /// The instant of `at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// The start of `overlap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Timestamp>,
    /// The end of `overlap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Timestamp>,
    /// When the scope was evaluated.
    pub evaluated_at: Timestamp,
}

/// How results were fitted to a character budget: whole items, in rank order.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetReport {
    /// The budget, in characters.
    pub chars: usize,
    /// Characters of the returned results' texts.
    pub used: usize,
    /// Ids of ranked results left out because they did not fit.
    pub omitted: Vec<String>,
}

/// Truncation markers: every cap is disclosed with a continuation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncation {
    /// Results returned.
    pub returned: usize,
    /// Whether more results exist past this page.
    pub more_available: bool,
    /// Pass back as `cursor` to get the next page.
    pub continuation: Option<String>,
}

/// Freshness: what the store has not finished yet.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freshness {
    /// Open (pending, running, failed) work items by stage.
    pub pending_work: BTreeMap<String, u64>,
    /// Originals stored without a conversion route.
    pub parked_no_route: u64,
    /// Dead-lettered work items (see `remember status`).
    pub dead_letters: u64,
    /// The semantic channel's readiness.
    pub semantic: SemanticReadiness,
}

/// Whether the semantic channel covers every current chunk with the configured generation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SemanticReadiness {
    /// The configured embedder generation.
    pub generation: String,
    /// True when every current chunk has a vector of `generation`.
    pub ready: bool,
    /// Current chunks.
    pub chunks: u64,
    /// Current chunks still without a vector of `generation`.
    pub missing_vectors: u64,
    /// Set when the embedder is not a semantic model: `lexical embedder` when the
    /// hashing embedder runs (configured, or standing in for a model that could not
    /// be had), so the semantic channel matches words, not meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// A channel's status in one call.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelReport {
    /// `ok`, `partial` (ran over an incomplete index), `skipped` or `error`.
    pub status: String,
    /// Candidates the channel returned.
    pub candidates: usize,
    /// Why, for anything but `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A channel's rank and score for one result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelScore {
    /// 1-based rank in the channel.
    pub rank: usize,
    /// The channel's raw score (cosine; BM25 with higher = better).
    pub score: f64,
}

/// Scores of one result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Semantic channel, if the result was in it.
    pub semantic: Option<ChannelScore>,
    /// Lexical channel, if the result was in it.
    pub lexical: Option<ChannelScore>,
    /// The fused score: reciprocal rank fusion, or under `[engine.fusion]
    /// method = "scores"` the weighted sum of cosine and relative lexical score.
    /// Relative to this answer's other results.
    pub fused: f64,
    /// How likely the result is to be about the question, in [0, 1], calibrated
    /// from its semantic similarity (comparable across questions, unlike
    /// `fused`). Absent on results that were fetched, not ranked for a question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<f64>,
}

/// A character span (Unicode scalar values) into a version's `document.md`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CharSpan {
    /// Start.
    pub start: u64,
    /// End (exclusive).
    pub end: u64,
}

/// One chunk result of an evidence search.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkResult {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// Its document lineage.
    pub document_id: DocumentId,
    /// The document's title.
    pub document_title: String,
    /// The version the chunk belongs to.
    pub version_id: VersionId,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// The chunk text.
    pub text: String,
    /// The section's title path.
    pub section_path: Vec<String>,
    /// The section's role.
    pub section_role: SectionRole,
    /// Where the chunk sits in the version's `document.md`.
    pub char_span: CharSpan,
    /// Message ids of the conversation turns it covers.
    pub event_ids: Vec<String>,
    /// When the source said it (the version's source time).
    pub asserted_at: Timestamp,
    /// Scores.
    pub scores: Scores,
}

/// One fact result of a fact search (grain `fact`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactResult {
    /// The fact, as adjudicated (redirects followed: subject and object are active entities).
    #[serde(flatten)]
    pub fact: crate::facts::FactRecord,
    /// Scores.
    pub scores: Scores,
    /// How many of the operation's anchored entities the fact touches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchors: Option<usize>,
    /// The fact's contradiction group, with its co-members inline (never one-sided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contradiction: Option<Contradiction>,
    /// `supported` (current testimony backs it) or `support_withdrawn` (none does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support_state: Option<String>,
    /// Where it comes from: supporting claims with their document, version, spans and
    /// dates, current testimony first (at most [`PROVENANCE_CAP`]; `trace` has all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance: Vec<FactSupport>,
}

/// Supporting claims shown per fact at most.
pub const PROVENANCE_CAP: usize = 3;

/// One supporting claim of a fact.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactSupport {
    /// The claim.
    pub claim_id: crate::ids::ClaimId,
    /// Its text.
    pub text: String,
    /// Its document.
    pub document_id: DocumentId,
    /// The document's title.
    pub document_title: String,
    /// The version of the occurrence shown (the newest).
    pub version_id: VersionId,
    /// Evidence spans in that version.
    pub spans: Vec<CharSpan>,
    /// Message ids of conversation turns.
    pub event_ids: Vec<String>,
    /// When the source said it.
    pub asserted_at: Timestamp,
    /// Whether the claim is current testimony.
    pub is_current: bool,
}

/// A contradiction group shown with a fact.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Contradiction {
    /// The group.
    pub group_id: uuid::Uuid,
    /// The other members, up to [`CONTRADICTION_CAP`].
    pub members: Vec<crate::facts::FactRecord>,
    /// Members returned here (the fact itself included).
    pub returned: usize,
    /// Members in the group.
    pub total: usize,
}

/// Co-members of a contradiction group always shown inline.
pub const CONTRADICTION_CAP: usize = 8;

/// One entity result (`resolve_entity`, grain `entity`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityResult {
    /// The entity (an active one: redirects are followed).
    pub entity_id: crate::ids::EntityId,
    /// Its canonical name.
    pub canonical_name: String,
    /// Names it is known by.
    pub aliases: Vec<String>,
    /// Its profile summary, if built.
    pub profile: Option<String>,
    /// The blocking score (exact name 1.0, trigram similarity, phonetic 0.5).
    pub score: f32,
    /// How it matched: `T0` exact name, `T1` trigrams, `T2` phonetic.
    pub matched_by: Vec<crate::entities::BlockingTier>,
    /// Cosine of the name's embedding and the profile's, when both exist (T3 signal).
    pub profile_similarity: Option<f32>,
    /// Entities merged into it that matched the name (redirects disclosed).
    pub merged_from: Vec<crate::ids::EntityId>,
    /// Mentions resolved to it.
    pub mention_count: u64,
}

/// One evidence result of `claims_and_sources_context`: a claim or a source chunk.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EvidenceResult {
    /// A claim with its evidence spans.
    Claim(ClaimResult),
    /// A source chunk.
    Chunk(ChunkResult),
}

impl EvidenceResult {
    /// The result's id as a string.
    pub fn id(&self) -> String {
        match self {
            EvidenceResult::Claim(c) => c.claim_id.to_string(),
            EvidenceResult::Chunk(c) => c.chunk_id.to_string(),
        }
    }
    /// The result's text.
    pub fn text(&self) -> &str {
        match self {
            EvidenceResult::Claim(c) => &c.text,
            EvidenceResult::Chunk(c) => &c.text,
        }
    }
}

/// The combined operation's answer (D87): exactly the two child envelopes.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextBundle {
    /// Always [`CONTEXT_BUNDLE_CONTRACT`].
    pub contract: String,
    /// The `claims_and_sources_context` envelope.
    pub claims_and_sources: Envelope<EvidenceResult>,
    /// The `facts_context` envelope.
    pub facts: Envelope<FactResult>,
}

/// The combined bundle's contract identifier.
pub const CONTEXT_BUNDLE_CONTRACT: &str = "ContextBundle/v2";

/// One claim result of an evidence search.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    /// The claim.
    pub claim_id: crate::ids::ClaimId,
    /// Its document lineage.
    pub document_id: DocumentId,
    /// The document's title.
    pub document_title: String,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// The standalone claim text.
    pub text: String,
    /// The version of the occurrence shown (the newest).
    pub version_id: VersionId,
    /// The chunk of that occurrence.
    pub chunk_id: ChunkId,
    /// Exact evidence spans in that version's `document.md`.
    pub spans: Vec<CharSpan>,
    /// Message ids of the conversation turns the evidence falls in.
    pub event_ids: Vec<String>,
    /// When the source said it.
    pub asserted_at: Timestamp,
    /// When the claim says it happened or held (source-asserted, immutable).
    pub validity: crate::claims::Validity,
    /// Context the extractor added to make the claim standalone.
    pub added_context: Vec<String>,
    /// The extractor generation.
    pub extractor_version: String,
    /// Whether the claim is current testimony.
    pub is_current: bool,
    /// Whether the claim opens with a third-person pronoun the extractor could
    /// not resolve (`She moved to Oslo.`): read it with its source.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_context: bool,
    /// Scores.
    pub scores: Scores,
}
