//! Claims (E2): the context bundle an extractor reads, the drafts it returns,
//! the grounding gates every draft must pass, relative-date resolution, and the
//! deterministic offline extractor.
//!
//! A claim is immutable testimony: what a source said, when (`asserted_at`, the
//! version's source time), with exact spans into the version's `document.md`, and
//! the world-time window the source asserted (`Validity`).

pub mod bundle;
pub mod claimify;
pub mod grounding;
pub mod offline;
pub mod temporal;

use crate::text::TurnMeta;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The precision of a claim's source-asserted validity (D41).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// An exact instant.
    Instant,
    /// A calendar day.
    Day,
    /// A calendar month.
    Month,
    /// A calendar quarter.
    Quarter,
    /// A calendar year.
    Year,
    /// An open interval: a known start, no known end.
    Open,
    /// Nothing is known: `from` and `until` are empty.
    Unknown,
}

/// What the validity window means (D41).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValidityKind {
    /// A state that held over the window.
    State,
    /// An event that happened within the window.
    Event,
    /// The period a figure (a measurement) covers.
    MeasurementPeriod,
}

/// A claim's source-asserted world-time window. `from` is inclusive, `until`
/// exclusive (a day `2023-05-07` is `[2023-05-07T00:00Z, 2023-05-08T00:00Z)`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// Start (inclusive).
    pub from: Option<Timestamp>,
    /// End (exclusive).
    pub until: Option<Timestamp>,
    /// Precision.
    pub precision: Precision,
    /// Meaning.
    pub kind: ValidityKind,
}

impl Validity {
    /// No asserted time.
    pub fn unknown(kind: ValidityKind) -> Self {
        Validity {
            from: None,
            until: None,
            precision: Precision::Unknown,
            kind,
        }
    }
}

/// Which part of the bundle a passage is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassageRole {
    /// A sentence (or turn) of the target chunk: claims are extracted from these.
    Target,
    /// A block of a neighbouring chunk in the same section: context only.
    Neighbour,
}

/// A labelled, exact piece of the version's text the extractor may cite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// The label the model cites (`T1`, `T2`, … for target sentences; `N1`, … for neighbours).
    pub label: String,
    /// Target or neighbour.
    pub role: PassageRole,
    /// Byte offset into the version's `document.md`.
    pub start: usize,
    /// Byte offset one past the end.
    pub end: usize,
    /// The exact text: `document_md[start..end]`.
    pub text: String,
    /// The conversation turn the passage belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnMeta>,
}

/// The deterministic document header of a bundle: stable facts only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentHeader {
    /// The document title.
    pub title: String,
    /// The lineage's source kind.
    pub source_kind: String,
    /// The version's source time: the anchor for relative dates.
    pub source_time: Option<Timestamp>,
    /// The file name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
}

impl DocumentHeader {
    /// The header as the text the model reads (and the grounding union contains).
    pub fn render(&self) -> String {
        let mut s = format!("Title: {}\nSource kind: {}\n", self.title, self.source_kind);
        if let Some(t) = &self.source_time {
            s.push_str(&format!(
                "Source time: {}\n",
                t.format("%Y-%m-%d %H:%M UTC")
            ));
        }
        if let Some(f) = &self.file_name {
            s.push_str(&format!("File name: {f}\n"));
        }
        s
    }
}

/// Everything an extractor may read for one target chunk (D31).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextBundle {
    /// Stable document facts.
    pub header: DocumentHeader,
    /// The target chunk's section path.
    pub section_path: Vec<String>,
    /// Whether the document is a conversation (turns are `Speaker: text`).
    pub is_conversation: bool,
    /// The target chunk's passages (sentences; for conversations, sentences within turns), in order.
    pub target: Vec<Passage>,
    /// Neighbouring chunks' passages (blocks) before the target, in order.
    pub before: Vec<Passage>,
    /// Neighbouring chunks' passages (blocks) after the target, in order.
    pub after: Vec<Passage>,
    /// The target chunk's exact text.
    pub target_text: String,
}

impl ContextBundle {
    /// The passage with `label`.
    pub fn passage(&self, label: &str) -> Option<&Passage> {
        self.target
            .iter()
            .chain(&self.before)
            .chain(&self.after)
            .find(|p| p.label == label)
    }
}

/// A Selection label for one target passage (D34, D35).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionLabel {
    /// Keep: a specific, verifiable proposition.
    Keep,
    /// Keep, but low confidence: kept and marked.
    KeepFlagged,
    /// Drop, with a reason.
    Drop,
}

/// Why Selection dropped a passage (closed set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// A question.
    Question,
    /// A greeting, filler or bare acknowledgement.
    Filler,
    /// An opinion nobody is named as holding.
    UnattributedOpinion,
    /// Advice or an instruction.
    Advice,
    /// A hypothetical.
    Hypothetical,
    /// A generic statement with no specific content.
    Generic,
    /// Talk about the text itself (intro, conclusion, outline).
    Meta,
    /// Nothing to extract.
    NoInfo,
}

/// Selection's verdict on one target passage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// The passage label.
    pub passage: String,
    /// The label.
    pub label: SelectionLabel,
    /// The drop reason, for `Drop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<DropReason>,
}

/// The extractor's own entailment verdict on a claim (gate layer 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The cited passages entail the claim.
    Entailed,
    /// They do not.
    NotEntailed,
    /// Unsure.
    Uncertain,
}

/// A claim as an extractor proposes it, before the grounding gates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimDraft {
    /// The standalone, decontextualized claim text.
    pub text: String,
    /// Labels of the passages that support it (one or more, D119).
    pub passages: Vec<String>,
    /// Substrings the extractor added to make the claim standalone.
    pub added_context: Vec<String>,
    /// The source-asserted validity.
    pub validity: Validity,
    /// The extractor's self-verdict.
    pub verdict: Verdict,
}

/// What an extractor returns for one bundle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// One Selection verdict per target passage.
    pub selections: Vec<Selection>,
    /// Proposed claims.
    pub claims: Vec<ClaimDraft>,
}

/// An exact span of a claim's evidence in one version's `document.md`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceSpan {
    /// Byte offset.
    pub start: usize,
    /// Byte offset one past the end.
    pub end: usize,
    /// Unicode-scalar offset of `start`.
    pub char_start: usize,
    /// Unicode-scalar offset of `end`.
    pub char_end: usize,
}

/// The gate that rejected a draft (D32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Layer 1: a cited passage is unknown or not an exact slice of the version text.
    Span,
    /// Layer 2: added context holds tokens absent from the source-derived union.
    AddedContext,
    /// Layer 3: the self-verdict is not `entailed`.
    Verdict,
    /// The draft is empty or malformed (no text, no passage).
    Shape,
}

/// Why a draft was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateFailure {
    /// The gate.
    pub gate: Gate,
    /// The failing tokens (layer 2) or labels (layer 1).
    pub tokens: Vec<String>,
    /// A sentence for people.
    pub message: String,
}

/// A draft that passed every gate, with its spans computed by the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundedClaim {
    /// The claim text.
    pub text: String,
    /// Exact spans, in document order, merged where adjacent.
    pub spans: Vec<EvidenceSpan>,
    /// The passage labels cited.
    pub passages: Vec<String>,
    /// Added context.
    pub added_context: Vec<String>,
    /// Validity.
    pub validity: Validity,
}
