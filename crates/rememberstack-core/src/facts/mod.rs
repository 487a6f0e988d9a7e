//! Facts (E3): relations and observations (D2, D43), the normalization that
//! derives them from claims, the predicate registry (D5) and the adjudication
//! ladder that applies assertions to facts (D4, D43, D118).
//!
//! A fact is mutable belief: it carries one world-time window (D118), a belief
//! clock (`recorded_at`, `invalidated_at`), a contradiction group, and evidence
//! rows linking the immutable claims that support or contradict it. Its counts
//! are distinct document lineages with current testimony per stance (D54).

pub mod adjudicate;
pub mod chain;
pub mod english;
pub mod normalization;
pub mod offline;
pub mod predicates;
pub mod state;

use crate::claims::{Precision, ValidityKind};
use crate::ids::{
    AdjudicationId, AssertionId, ClaimId, DocumentId, EntityId, FactId, NamespaceId, VersionId,
};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The normalizer generation used without a chat model.
pub const OFFLINE_NORMALIZER_VERSION: &str = "normalizer-offline-2026.12a";
/// The offline adjudicator generation: an identical statement with compatible
/// windows is evidence; the values of a single-valued predicate are ordered and
/// supersede or contradict as a chain decided again whenever it changes (see
/// [`chain::rechain`]); anything else is `new`.
pub const OFFLINE_ADJUDICATOR_VERSION: &str = "adjudicator-offline-2026.12b";
/// The chat adjudicator generation.
pub const ADJUDICATOR_VERSION: &str = "adjudicator-2026.11a";

/// Relation or observation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// Entity → entity with a governed predicate.
    Relation,
    /// A statement about one entity.
    Observation,
}

impl FactKind {
    /// The stable name.
    pub fn as_str(&self) -> &'static str {
        match self {
            FactKind::Relation => "relation",
            FactKind::Observation => "observation",
        }
    }
    /// Parse the stable name.
    pub fn parse(s: &str) -> crate::Result<Self> {
        match s {
            "relation" => Ok(FactKind::Relation),
            "observation" => Ok(FactKind::Observation),
            other => Err(crate::Error::store(format!("unknown fact kind `{other}`"))),
        }
    }
}

/// One world-time window (D118): `from` inclusive, `until` exclusive; unknown stays
/// unknown. A said-on date is never a validity bound.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Start.
    pub valid_from: Option<Timestamp>,
    /// End (exclusive).
    pub valid_until: Option<Timestamp>,
    /// Precision of the bounds.
    pub precision: Precision,
}

impl Window {
    /// Nothing known.
    pub fn unknown() -> Self {
        Window {
            valid_from: None,
            valid_until: None,
            precision: Precision::Unknown,
        }
    }

    /// Whether two windows are compatible: they overlap, or either side is
    /// entirely unknown.
    pub fn compatible(&self, other: &Window) -> bool {
        let unknown = |w: &Window| w.valid_from.is_none() && w.valid_until.is_none();
        if unknown(self) || unknown(other) {
            return true;
        }
        let starts_before_end = |a: &Window, b: &Window| match (a.valid_from, b.valid_until) {
            (Some(f), Some(u)) => f < u,
            _ => true,
        };
        starts_before_end(self, other) && starts_before_end(other, self)
    }
}

/// Support or contradiction.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stance {
    /// The claim asserts the fact.
    Support,
    /// The claim asserts an incompatible value for the same property and period.
    Contradict,
}

impl Stance {
    /// The stable name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Stance::Support => "support",
            Stance::Contradict => "contradict",
        }
    }
    /// Parse the stable name.
    pub fn parse(s: &str) -> crate::Result<Self> {
        match s {
            "support" => Ok(Stance::Support),
            "contradict" => Ok(Stance::Contradict),
            other => Err(crate::Error::store(format!("unknown stance `{other}`"))),
        }
    }
}

/// A fact assertion staged by normalization, applied later in order (D90).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assertion {
    /// Its id.
    pub assertion_id: AssertionId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The claim that asserts it.
    pub claim_id: ClaimId,
    /// The claim's lineage.
    pub document_id: DocumentId,
    /// The version whose barrier gates it.
    pub version_id: VersionId,
    /// Relation or observation.
    pub kind: FactKind,
    /// The subject (the observation's entity).
    pub subject: EntityId,
    /// The predicate (relations).
    pub predicate: Option<String>,
    /// The object (relations).
    pub object: Option<EntityId>,
    /// The readable statement: a relation's fact label, an observation's statement.
    pub statement: String,
    /// World-time hints from the claim's validity fields.
    pub window: Window,
    /// What the window means.
    pub validity_kind: ValidityKind,
    /// When the source said it.
    pub asserted_at: Timestamp,
    /// Position within the claim's normalization.
    pub ordinal: u32,
}

/// A fact as stored, with counts computed from current testimony.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactRecord {
    /// Its id.
    pub fact_id: FactId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// Relation or observation.
    pub kind: FactKind,
    /// The subject entity.
    pub subject: EntityId,
    /// The subject's canonical name.
    pub subject_name: String,
    /// The predicate (relations).
    pub predicate: Option<String>,
    /// The object entity (relations).
    pub object: Option<EntityId>,
    /// The object's canonical name (relations).
    pub object_name: Option<String>,
    /// The fact label (relations) or statement (observations).
    pub statement: String,
    /// The chosen world-time window.
    pub window: Window,
    /// What the window means.
    pub validity_kind: ValidityKind,
    /// When it was first believed.
    pub recorded_at: Timestamp,
    /// When it stopped being believed (a belief-clock close), if it did.
    pub invalidated_at: Option<Timestamp>,
    /// Why a lifecycle operation closed it (`retracted_source_removal`,
    /// `invalidated`, `corrected`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_reason: Option<String>,
    /// The contradiction group, when incompatible facts stand together.
    pub contradiction_group: Option<Uuid>,
    /// The fact that superseded it, if one did.
    pub superseded_by: Option<FactId>,
    /// Distinct lineages with current supporting testimony (D54).
    pub evidence_count: u64,
    /// Distinct lineages with current contradicting testimony (D54).
    pub contradict_count: u64,
    /// The embedding key of its label.
    pub embedding_key: String,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A fact to create.
#[derive(Clone, Debug, PartialEq)]
pub struct NewFact {
    /// Its id.
    pub fact_id: FactId,
    /// Relation or observation.
    pub kind: FactKind,
    /// The subject.
    pub subject: EntityId,
    /// The predicate (relations).
    pub predicate: Option<String>,
    /// The object (relations).
    pub object: Option<EntityId>,
    /// The label or statement.
    pub statement: String,
    /// The window.
    pub window: Window,
    /// What the window means.
    pub validity_kind: ValidityKind,
    /// The embedding key of the label.
    pub embedding_key: String,
}

/// An evidence row: a claim supports or contradicts a fact.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    /// The fact.
    pub fact_id: FactId,
    /// The claim.
    pub claim_id: ClaimId,
    /// Support or contradict.
    pub stance: Stance,
    /// The claim's lineage.
    pub document_id: DocumentId,
    /// Whether the claim is current testimony.
    pub is_current: bool,
    /// When the row was added.
    pub added_at: Timestamp,
}

/// One adjudication transcript row: what was judged, against what, and why.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdjudicationRecord {
    /// Its id.
    pub adjudication_id: AdjudicationId,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The assertion judged.
    pub assertion_id: AssertionId,
    /// Its claim.
    pub claim_id: ClaimId,
    /// `evidence`, `supersede`, `contradict` or `new`.
    pub verdict: String,
    /// The fact the verdict names (the matched, superseded or contradicted fact),
    /// if any.
    pub target_fact: Option<FactId>,
    /// The fact the assertion ended up in.
    pub result_fact: FactId,
    /// The candidate facts shown, in order.
    pub candidates: Vec<FactId>,
    /// Why (the rule that fired, or the model's reason).
    pub reason: String,
    /// What the adjudicator read beyond the assertion and the candidates: a chat
    /// model's rendered prompt, or the offline rule's inputs (`rule`: whether an
    /// identical statement matched, any window revision, the chain links it
    /// changed). The assertion judged is `assertion_id`, the facts shown
    /// `candidates`.
    pub input: serde_json::Value,
    /// The model, when a chat model judged.
    pub model: Option<String>,
    /// The adjudicator generation.
    pub adjudicator_version: String,
    /// When.
    pub created_at: Timestamp,
}

/// Everything one applied assertion writes, atomically; marks the assertion applied.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyCommit {
    /// The assertion.
    pub assertion_id: AssertionId,
    /// A fact to create.
    pub new_fact: Option<NewFact>,
    /// Evidence rows to add (idempotent on fact, claim and stance).
    pub evidence: Vec<(FactId, ClaimId, Stance)>,
    /// Window revisions (D118): the fact's new window.
    pub windows: Vec<(FactId, Window)>,
    /// Facts to put into one contradiction group (an existing group id is reused).
    pub contradiction: Option<(Uuid, Vec<FactId>)>,
    /// (predecessor, successor): the predecessor's `superseded_by`.
    pub superseded: Option<(FactId, FactId)>,
    /// The transcript.
    pub transcript: AdjudicationRecord,
    /// Work to enqueue in the same transaction (the new fact's label embedding).
    pub follow_up: Vec<crate::ledger::NewWork>,
    /// Facts whose links a chain decision rewrites, applied last (absolute
    /// states, not changes: applying them twice leaves the same facts).
    pub links: Vec<FactLink>,
}

/// A fact's window, successor, contradiction group and contradicting claims as
/// a single-valued chain decision leaves them ([`chain::rechain`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FactLink {
    /// The fact.
    pub fact: FactId,
    /// Its window.
    pub window: Window,
    /// The fact that replaced it.
    pub superseded_by: Option<FactId>,
    /// The contradiction group it stands in.
    pub contradiction_group: Option<Uuid>,
    /// Every claim that contradicts it: contradict-stance evidence rows of the
    /// fact for other claims are removed, missing ones added.
    pub contradicted_by: Vec<ClaimId>,
}

impl ApplyCommit {
    /// Every fact this commit creates or changes (evidence, window, contradiction
    /// group, succession), sorted, each once.
    pub fn changed_facts(&self) -> Vec<FactId> {
        let mut changed: Vec<FactId> = self.new_fact.iter().map(|f| f.fact_id).collect();
        changed.extend(self.evidence.iter().map(|(f, _, _)| *f));
        changed.extend(self.windows.iter().map(|(f, _)| *f));
        if let Some((_, members)) = &self.contradiction {
            changed.extend(members.iter().copied());
        }
        if let Some((old, new)) = self.superseded {
            changed.extend([old, new]);
        }
        changed.extend(self.links.iter().map(|l| l.fact));
        changed.sort();
        changed.dedup();
        changed
    }
}

/// The key of a fact: enough to rank it in a neighbourhood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactKey {
    /// The fact.
    pub fact_id: FactId,
    /// Its subject (as stored; merges not followed).
    pub subject: EntityId,
    /// Its object, for a relation.
    pub object: Option<EntityId>,
    /// Its statement.
    pub statement: String,
}

/// Why a lifecycle operation closed a fact (`FactRecord::closed_reason`), one
/// vocabulary for every store.
pub mod closed_reason {
    /// Its only current support was a document that was deleted (D54, D135).
    pub const SOURCE_REMOVAL: &str = "retracted_source_removal";
    /// Its only current support was a claim that was retracted.
    pub const CLAIM_RETRACTED: &str = "retracted_claim";
    /// A caller invalidated it.
    pub const INVALIDATED: &str = "invalidated";
    /// A caller corrected it (the correction is a note of its own).
    pub const CORRECTED: &str = "corrected";
}

/// Listing filter for facts.
#[derive(Clone, Debug, PartialEq)]
pub struct FactFilter {
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// Only facts whose subject or object is one of these entities.
    pub entities: Vec<EntityId>,
    /// Only facts whose window holds at this instant (and are not invalidated);
    /// superseded facts count when their capped window holds. Without it (and
    /// without `history`), only current facts: not invalidated, not superseded.
    /// Without `history` (and without `unsupported`), a fact is listed only while
    /// some current testimony supports it: every store applies this rule in the
    /// ranked statement, so testimony that is not promoted never serves a fact.
    pub at: Option<Timestamp>,
    /// Include facts that no longer hold (closed windows, invalidated, superseded).
    pub history: bool,
    /// Only facts whose window overlaps `[from, until)` (either bound open); like `at`,
    /// superseded facts count when their window overlaps. Ignored with `history`.
    pub overlap: Option<(Option<Timestamp>, Option<Timestamp>)>,
    /// When set: only facts with current supporting testimony from these lineages
    /// (D134; empty admits nothing).
    pub documents: Option<Vec<DocumentId>>,
    /// Only the members of this contradiction group.
    pub group: Option<Uuid>,
    /// Also facts no current testimony supports (adjudication compares against
    /// them; reads never serve them).
    pub unsupported: bool,
}

/// A predicate registry row of a namespace (D5).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PredicateRow {
    /// The name (`works_for`, or `other:<text>`).
    pub name: String,
    /// Its description (empty for `other:` values).
    pub description: String,
    /// Synonyms.
    pub synonyms: Vec<String>,
    /// `core` or `other` (an `other:` value awaiting review).
    pub status: String,
    /// How many staged assertions used it.
    pub uses: u64,
}
