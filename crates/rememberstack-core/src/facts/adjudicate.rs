//! Fact adjudication: the cheap-first ladder, the chat verdict and its prompt
//! (D4, D43, D118, D120, D121).
//!
//! An incoming [`Assertion`] is compared with the candidate facts of its entity
//! block ([`rank_candidates`]). The verdicts:
//!
//! * `evidence` — the same proposition (same property and value, same event); it
//!   may revise the fact's window.
//! * `supersede` — a changing state was replaced; the predecessor's window closes
//!   at the successor's start, only when that instant lies strictly inside it
//!   ([`supersede_close`]). A measurement for a period is never capped.
//! * `contradict` — same property, same period, incompatible values: both stand
//!   in one contradiction group.
//! * `new` — anything else, and the fail-safe whenever no positive judgement was
//!   reached.
//!
//! Without a chat model, an identical statement of the same shape with compatible
//! windows is evidence ([`offline_verdict`]); the values of a single-valued
//! predicate (`works_for`, `located_in`, `reports_to`) are decided as a chain
//! ([`crate::facts::chain`]): a later value supersedes, and another source's value
//! for the same time contradicts; anything else is new.

use crate::chat::{ChatRequest, validate_json};
use crate::claims::{Precision, ValidityKind};
use crate::entities::normalize::{fold_lower, trigram_code_similarity, trigram_codes};
use crate::entities::t4::truncate_chars;
use crate::facts::{Assertion, FactKind, FactRecord, Window};
use crate::ids::{ClaimId, DocumentId, EntityId, FactId};
use crate::time::{Timestamp, parse_rfc3339, to_rfc3339};
use chrono::Timelike;
use serde_json::{Value, json};

/// The adjudication prompt generation.
pub const ADJUDICATE_PROMPT_VERSION: &str = "adjudicate-2026.11a";
/// A rendered statement is cut to at most this many characters.
pub const ADJUDICATE_MAX_STATEMENT_CHARS: usize = 300;

const VERDICTS: [&str; 4] = ["evidence", "supersede", "contradict", "new"];
/// The `valid_until` value that reopens a closed end in an evidence revision.
const REOPEN: &str = "open";

// ---------------------------------------------------------------------------
// The deterministic ladder
// ---------------------------------------------------------------------------

/// The form statements are compared in: Unicode lowercase, Latin diacritics
/// folded (as in [`crate::entities::normalize::lemma`]), whitespace collapsed and
/// trimmed. Punctuation is dropped unless it sits between two letters or digits
/// (`5.0`, `1,000`, `O'Brien`, `co-founder` keep theirs, typographic apostrophes
/// and hyphens unified), so `$5.0M` and `$50M` stay different; symbols that carry
/// meaning (`$ € £ ¥ % + # & @ °`) are kept.
pub fn normalized_statement(s: &str) -> String {
    let chars: Vec<char> = fold_lower(s)
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' => '-',
            c => c,
        })
        .collect();
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        if c.is_alphanumeric() {
            out.push(c);
        } else if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else if matches!(c, '$' | '€' | '£' | '¥' | '%' | '+' | '#' | '&' | '@' | '°') {
            out.push(c);
        } else {
            let inner = i > 0
                && chars[i - 1].is_alphanumeric()
                && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
            if inner {
                out.push(c);
            }
        }
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out
}

/// Whether an assertion and a fact have the same shape: the same kind and the
/// same subject; for relations also the same predicate and the same object.
pub fn same_shape(a: &Assertion, f: &FactRecord) -> bool {
    a.kind == f.kind
        && a.subject == f.subject
        && match a.kind {
            FactKind::Observation => true,
            FactKind::Relation => a.predicate == f.predicate && a.object == f.object,
        }
}

/// Whether an assertion restates a fact: [`same_shape`] and equal
/// [`normalized_statement`]s.
pub fn identical(a: &Assertion, f: &FactRecord) -> bool {
    same_shape(a, f) && normalized_statement(&a.statement) == normalized_statement(&f.statement)
}

/// The offline adjudicator: the first candidate (in the given order) that is
/// [`identical`] to the assertion with a compatible window ([`Window::compatible`])
/// is the evidence target; `None` means `new`.
///
/// Compatibility keeps recurring events distinct: two identically worded events
/// whose windows are both known and do not overlap are different facts. A window
/// that is entirely unknown is compatible with anything.
pub fn offline_verdict(a: &Assertion, candidates: &[FactRecord]) -> Option<FactId> {
    candidates
        .iter()
        .find(|f| identical(a, f) && a.window.compatible(&f.window))
        .map(|f| f.fact_id)
}

/// When and where a fact's supporting testimony was said, as the offline
/// adjudicator compares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Said {
    /// The supporting claim.
    pub claim: ClaimId,
    /// The claim's lineage.
    pub document: DocumentId,
    /// When the source said it.
    pub at: Timestamp,
    /// The world-time start the claim gives the value, if it gives one.
    pub from: Option<Timestamp>,
    /// Where a conversation turn said it (its byte offset in the document), so
    /// that turns said at one time keep their order; `None` outside turns.
    pub turn: Option<u64>,
}

/// Rule names, as the adjudication transcript records them.
pub const RULE_LATER_VALUE: &str =
    "single-valued predicate: a later value replaces the earlier one";
/// See [`RULE_LATER_VALUE`].
pub const RULE_CHANGE_CUE: &str = "single-valued predicate: a change cue (now, no longer, moved, left, since) marks the new value";
/// See [`RULE_LATER_VALUE`].
pub const RULE_LATER_REPORT: &str = "single-valued predicate: a dated change reported after an undated value, dated within 30 days of it, replaces it";
/// See [`RULE_LATER_VALUE`].
pub const RULE_PAST_REPORT: &str = "single-valued predicate: a value only ever reported as past (previously, lived, worked) is history: the value live when it was said replaced it";
/// See [`RULE_LATER_VALUE`].
pub const RULE_SAME_PERIOD: &str = "single-valued predicate: another source gives another value for the same time (said within 30 days, undated, no change cue)";

/// Two undated values said less than this many days apart by different sources,
/// with no change cue, are about the same time: they contradict rather than
/// supersede.
pub const SAME_PERIOD_DAYS: i64 = 30;

/// The words of `text` in lowercase (apostrophes kept: `don't`), as the cue
/// readers compare them.
fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Words and phrases that say a state changed: `now`, `no longer`, `moved to`,
/// `left`, `quit`, `since`, ….
pub fn has_change_cue(text: &str) -> bool {
    let words = lower_words(text);
    const SINGLE: &[&str] = &[
        "now",
        "since",
        "moved",
        "relocated",
        "left",
        "quit",
        "resigned",
        "joined",
        "switched",
        "anymore",
        "currently",
        "nowadays",
        "formerly",
        "previously",
        "became",
        "promoted",
    ];
    words.iter().any(|w| SINGLE.contains(&w.as_str()))
        || words
            .windows(2)
            .any(|p| p[0] == "no" && p[1] == "longer" || p[0] == "these" && p[1] == "days")
}

/// Words that report a state as over by the time it is said: `previously`,
/// `formerly`, `used to`, and the past of the state verbs (`lived`, `worked`,
/// `resided`). "Previously she lived in Lyon" says where she lived, not where she
/// lives: it does not renew the value.
pub fn reports_past_state(text: &str) -> bool {
    let words = lower_words(text);
    const PAST: &[&str] = &["previously", "formerly", "lived", "worked", "resided"];
    words.iter().any(|w| PAST.contains(&w.as_str()))
        || words.windows(2).any(|p| p[0] == "used" && p[1] == "to")
}

/// The precision of a window built from `w`'s bounds when its recorded precision
/// no longer describes them: `Unknown` without bounds, `Open` with only a start;
/// otherwise `fallback` unless that is `Open`/`Unknown` (then `Instant`).
fn settle_precision(w: &Window, preferred: Precision, fallback: Precision) -> Precision {
    match (w.valid_from, w.valid_until) {
        (None, None) => Precision::Unknown,
        (Some(_), None) => Precision::Open,
        _ => {
            for p in [preferred, fallback] {
                if !matches!(p, Precision::Open | Precision::Unknown) {
                    return p;
                }
            }
            Precision::Instant
        }
    }
}

/// The window of an offline evidence verdict: the fact's unknown bounds are filled
/// from the incoming window; a known bound never moves, and a filled bound that
/// would leave `valid_from >= valid_until` is not used. `Some(window)` only if it
/// changed.
///
/// Precision: the fact's, unless it no longer describes the bounds (an `Unknown`
/// window that gained a bound, an `Open` one that gained an end): then the
/// incoming window's precision (`Instant` when that is `Open`/`Unknown` too, `Open`
/// when only a start is known).
pub fn merged_window(fact: &Window, incoming: &Window) -> Option<Window> {
    let mut out = fact.clone();
    if out.valid_from.is_none()
        && let Some(f) = incoming.valid_from
        && out.valid_until.is_none_or(|u| f < u)
    {
        out.valid_from = Some(f);
    }
    if out.valid_until.is_none()
        && let Some(u) = incoming.valid_until
        && out.valid_from.is_none_or(|f| f < u)
    {
        out.valid_until = Some(u);
    }
    if out.valid_from == fact.valid_from && out.valid_until == fact.valid_until {
        return None;
    }
    let stale = match fact.precision {
        Precision::Unknown => true,
        Precision::Open => out.valid_until.is_some(),
        _ => false,
    };
    if stale {
        out.precision = settle_precision(&out, incoming.precision, fact.precision);
    }
    Some(out)
}

/// The predecessor's window after a supersession: closed at the successor's
/// start. `None` when nothing is capped: the successor's start is unknown, the
/// predecessor is a measurement for a period (never capped), or the start does not
/// lie strictly inside the predecessor's window (it must be after a known
/// `valid_from` and before a known `valid_until`).
///
/// The capped window keeps the predecessor's precision; an `Open` or `Unknown`
/// predecessor becomes `Instant` (its end is the exact instant given).
pub fn supersede_close(
    predecessor: &Window,
    predecessor_kind: ValidityKind,
    successor_start: Option<Timestamp>,
) -> Option<Window> {
    if predecessor_kind == ValidityKind::MeasurementPeriod {
        return None;
    }
    let start = successor_start?;
    if predecessor.valid_from.is_some_and(|f| start <= f)
        || predecessor.valid_until.is_some_and(|u| u <= start)
    {
        return None;
    }
    let precision = match predecessor.precision {
        Precision::Open | Precision::Unknown => Precision::Instant,
        p => p,
    };
    Some(Window {
        valid_from: predecessor.valid_from,
        valid_until: Some(start),
        precision,
    })
}

/// The candidate facts shown for an assertion, best first. The entity block
/// nominates all live facts (`facts`); they are ordered deterministically —
/// [`same_shape`] facts first, then by trigram similarity of the
/// [`normalized_statement`]s (descending), then `recorded_at`, then `fact_id` —
/// and, when there are more than `hub_top_k`, only the first `hub_top_k` are kept.
pub fn rank_candidates(a: &Assertion, facts: Vec<FactRecord>, hub_top_k: usize) -> Vec<FactRecord> {
    let codes: Vec<Vec<u64>> = facts
        .iter()
        .map(|f| statement_codes(&f.statement))
        .collect();
    let refs: Vec<(&FactRecord, &[u64])> = facts
        .iter()
        .zip(&codes)
        .map(|(f, c)| (f, c.as_slice()))
        .collect();
    rank_candidate_refs(a, &refs, hub_top_k)
        .into_iter()
        .cloned()
        .collect()
}

/// The trigram codes [`rank_candidates`] compares a statement by: those of its
/// [`normalized_statement`]. Compute them once for a fact ranked many times.
pub fn statement_codes(statement: &str) -> Vec<u64> {
    trigram_codes(&normalized_statement(statement))
}

/// [`rank_candidates`] over borrowed facts, each with its [`statement_codes`].
pub fn rank_candidate_refs<'a>(
    a: &Assertion,
    facts: &[(&'a FactRecord, &[u64])],
    hub_top_k: usize,
) -> Vec<&'a FactRecord> {
    let statement = statement_codes(&a.statement);
    let mut keyed: Vec<(bool, f32, &FactRecord)> = facts
        .iter()
        .map(|(f, codes)| {
            let sim = trigram_code_similarity(&statement, codes);
            (same_shape(a, f), sim, *f)
        })
        .collect();
    keyed.sort_by(|(sa, xa, fa), (sb, xb, fb)| {
        sb.cmp(sa)
            .then_with(|| xb.total_cmp(xa))
            .then_with(|| fa.recorded_at.cmp(&fb.recorded_at))
            .then_with(|| fa.fact_id.cmp(&fb.fact_id))
    });
    keyed.truncate(hub_top_k);
    keyed.into_iter().map(|(_, _, f)| f).collect()
}

// ---------------------------------------------------------------------------
// The chat call
// ---------------------------------------------------------------------------

/// Everything one adjudication call reads.
#[derive(Clone, Debug, PartialEq)]
pub struct AdjudicationInput {
    /// The incoming assertion.
    pub assertion: Assertion,
    /// The text of the claim that asserts it.
    pub claim_text: String,
    /// The subject's canonical name.
    pub subject_name: String,
    /// The object's canonical name (relations).
    pub object_name: Option<String>,
    /// The candidate facts, in [`rank_candidates`] order.
    pub candidates: Vec<FactRecord>,
}

/// The chat adjudicator's verdict, with handles mapped back to facts.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatVerdict {
    /// The assertion is evidence for `fact`; `revised` is its new window, if the
    /// model revised it.
    Evidence {
        /// The fact.
        fact: FactId,
        /// The revised window, if it changed.
        revised: Option<Window>,
    },
    /// The assertion's fact supersedes `fact` (a replaced state).
    Supersede {
        /// The predecessor.
        fact: FactId,
    },
    /// The assertion contradicts `fact` (same property and period).
    Contradict {
        /// The contradicted fact.
        fact: FactId,
    },
    /// A new fact.
    New,
}

const ADJUDICATE_SYSTEM: &str = "You adjudicate facts for an agent memory.
A CLAIM is immutable testimony: what a source said, and when it said it. A FACT is an adjudicated
belief built from claims: one proposition with ONE world-time window (valid from, valid until;
an unknown bound stays unknown). The date a source said something (\"said on\") is NOT a validity
bound: \"On 2026-03-10 Bob said that Alice works for Acme\" says nothing about when Alice started.

You read one INCOMING assertion (a relation \"subject predicate object\" with its label, or an
observation about one entity), the claim it comes from, and the CANDIDATE facts already believed
about that entity, labelled F1, F2, …. Return exactly one verdict:
- evidence: the incoming assertion states the same proposition as a candidate (the same property
  with the same value, or the same single event). Example: another source saying \"Alice works for
  Acme.\" is evidence for F1 \"Alice works for Acme.\". Evidence may revise the fact's window when the
  claim states a bound: \"Alice joined Acme on 2024-03-04.\" is evidence for \"Alice works for Acme.\"
  (from 2024-03, month precision) with valid_from 2024-03-04T00:00:00Z. Leave valid_from and
  valid_until empty to keep the window; write \"open\" as valid_until to reopen a closed end when the
  claim says the state still held later.
- supersede: a changing state (an employer, a residence, a status, a role, a stance) was replaced by
  a new value of the same property. Example: F1 \"Alice works for Acme.\" (since March 2024) and the
  claim \"In February 2026 Alice left Acme and joined Globex.\" asserting \"Alice works for Globex.\":
  the new employer supersedes the old one, so supersede F1. A figure for a period (FY2023 revenue)
  never supersedes.
- contradict: the same property for the same period with incompatible values; both cannot be true.
  Example: F1 \"Acme's FY2023 revenue was $5M.\" and the incoming \"Acme's FY2023 revenue was $7M.\":
  contradict F1. Both facts stand, marked as contradicting each other.
- new: anything else: a different property, another event, a proposition not among the candidates.
  Recurring events are distinct facts: \"Alice won the Prague Open in March 2024.\" and \"Alice won
  the Prague Open in October 2024.\" are two wins, so new, even with identical wording. Participation
  or enjoyment is not a win: \"Alice played in the Prague Open.\" is new against \"Alice won the Prague
  Open.\", not evidence.
Choose new unless you are positively sure of another verdict: a wrong evidence, supersede or
contradict verdict corrupts memory, a wrong new only duplicates a fact.
fact: the handle (F1, F2, …) the verdict names, or \"\" for new. valid_from, valid_until: RFC 3339
instants (such as 2024-03-04T00:00:00Z) revising the fact's window, for evidence only; otherwise
\"\". reason: one or two sentences naming the evidence that decided. Answer with JSON only.";

/// The handle of the candidate at `index` (0-based): `F1`, `F2`, ….
pub fn fact_handle(index: usize) -> String {
    format!("F{}", index + 1)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Instant => "instant",
        Precision::Day => "day",
        Precision::Month => "month",
        Precision::Quarter => "quarter",
        Precision::Year => "year",
        Precision::Open => "open",
        Precision::Unknown => "unknown",
    }
}

fn kind_name(k: ValidityKind) -> &'static str {
    match k {
        ValidityKind::State => "state",
        ValidityKind::Event => "event",
        ValidityKind::MeasurementPeriod => "measurement_period",
    }
}

fn render_window(w: &Window) -> String {
    if w.valid_from.is_none() && w.valid_until.is_none() {
        return "unknown".to_string();
    }
    let bound = |t: Option<Timestamp>| t.map_or_else(|| "unknown".to_string(), |t| to_rfc3339(&t));
    format!(
        "from {} until {} (precision {})",
        bound(w.valid_from),
        bound(w.valid_until),
        precision_name(w.precision)
    )
}

fn render_user(input: &AdjudicationInput) -> String {
    let a = &input.assertion;
    let mut s = String::new();
    s.push_str("INCOMING ASSERTION\n");
    s.push_str(&format!("Kind: {}\n", a.kind.as_str()));
    s.push_str(&format!("Subject: {}\n", one_line(&input.subject_name)));
    if a.kind == FactKind::Relation {
        s.push_str(&format!(
            "Predicate: {}\n",
            a.predicate.as_deref().unwrap_or("-")
        ));
        s.push_str(&format!(
            "Object: {}\n",
            one_line(input.object_name.as_deref().unwrap_or("-"))
        ));
    }
    s.push_str(&format!(
        "Statement: {}\n",
        truncate_chars(&one_line(&a.statement), ADJUDICATE_MAX_STATEMENT_CHARS)
    ));
    s.push_str(&format!("Window: {}\n", render_window(&a.window)));
    s.push_str(&format!("Validity kind: {}\n", kind_name(a.validity_kind)));
    s.push_str(&format!(
        "Said on: {} (when the source said it; not a validity bound)\n",
        a.asserted_at.format("%Y-%m-%d")
    ));
    s.push_str(&format!("Claim: {}\n", one_line(&input.claim_text)));
    s.push_str("\nCANDIDATE FACTS\n");
    if input.candidates.is_empty() {
        s.push_str("(none)\n");
    }
    for (i, f) in input.candidates.iter().enumerate() {
        match f.kind {
            FactKind::Relation => s.push_str(&format!(
                "[{}] relation: {} {} {}\n",
                fact_handle(i),
                one_line(&f.subject_name),
                f.predicate.as_deref().unwrap_or("-"),
                one_line(f.object_name.as_deref().unwrap_or("-"))
            )),
            FactKind::Observation => s.push_str(&format!(
                "[{}] observation about {}\n",
                fact_handle(i),
                one_line(&f.subject_name)
            )),
        }
        s.push_str(&format!(
            "  Statement: {}\n",
            truncate_chars(&one_line(&f.statement), ADJUDICATE_MAX_STATEMENT_CHARS)
        ));
        s.push_str(&format!("  Window: {}\n", render_window(&f.window)));
        s.push_str(&format!(
            "  Validity kind: {}\n",
            kind_name(f.validity_kind)
        ));
        s.push_str(&format!(
            "  Evidence: {} supporting source(s), {} contradicting\n",
            f.evidence_count, f.contradict_count
        ));
    }
    let handles: Vec<String> = (0..input.candidates.len()).map(fact_handle).collect();
    if handles.is_empty() {
        s.push_str("\nNo candidate facts: the verdict is new.");
    } else {
        s.push_str(&format!(
            "\nReturn exactly one verdict. Valid fact handles: {}.",
            handles.join(", ")
        ));
    }
    s
}

/// The adjudication answer schema for `input` (strict-compatible): `verdict`,
/// `fact` (one of the handles, or `""`), `valid_from`, `valid_until` (RFC 3339 or
/// `""`; `valid_until` may also be `open`) and `reason`.
pub fn adjudication_schema(input: &AdjudicationInput) -> Value {
    let mut facts: Vec<Value> = (0..input.candidates.len())
        .map(|i| Value::String(fact_handle(i)))
        .collect();
    facts.push(Value::String(String::new()));
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["verdict", "fact", "valid_from", "valid_until", "reason"],
        "properties": {
            "verdict": {"type": "string", "enum": VERDICTS},
            "fact": {"type": "string", "enum": facts},
            "valid_from": {"type": "string"},
            "valid_until": {"type": "string"},
            "reason": {"type": "string"}
        }
    })
}

/// The adjudication request (call key `adjudicate`).
pub fn adjudication_request(input: &AdjudicationInput) -> ChatRequest {
    ChatRequest::new(
        "adjudicate",
        ADJUDICATE_SYSTEM,
        render_user(input),
        "adjudication",
        adjudication_schema(input),
    )
}

fn is_midnight(t: &Timestamp) -> bool {
    t.num_seconds_from_midnight() == 0 && t.nanosecond() == 0
}

/// A revised bound: `""` keeps, an RFC 3339 instant replaces.
fn parse_bound(raw: &str, field: &str) -> Result<Option<Timestamp>, String> {
    parse_rfc3339(raw)
        .map(Some)
        .ok_or_else(|| format!("{field} `{raw}` is not an RFC 3339 instant"))
}

/// The revised window of an evidence verdict, or `None` when it is unchanged.
///
/// An empty bound keeps the fact's; an RFC 3339 bound replaces it; `valid_until`
/// `open` removes a known end. Precision (kept simple): the fact's when no
/// instant was given; otherwise `Day` when every given instant is midnight UTC,
/// else `Instant`; a window with only a start is `Open`, one without bounds
/// `Unknown`.
fn revised_window(fact: &Window, from: &str, until: &str) -> Result<Option<Window>, String> {
    let (from, until) = (from.trim(), until.trim());
    let new_from = if from.is_empty() {
        None
    } else {
        parse_bound(from, "valid_from")?
    };
    let (new_until, reopen) = if until.is_empty() {
        (None, false)
    } else if until.eq_ignore_ascii_case(REOPEN) {
        (None, true)
    } else {
        (parse_bound(until, "valid_until")?, false)
    };
    let mut out = fact.clone();
    if let Some(f) = new_from {
        out.valid_from = Some(f);
    }
    if reopen {
        out.valid_until = None;
    } else if let Some(u) = new_until {
        out.valid_until = Some(u);
    }
    if let (Some(f), Some(u)) = (out.valid_from, out.valid_until)
        && f >= u
    {
        return Err(format!(
            "revised window is empty: valid_from {} is not before valid_until {}",
            to_rfc3339(&f),
            to_rfc3339(&u)
        ));
    }
    if out.valid_from == fact.valid_from && out.valid_until == fact.valid_until {
        return Ok(None);
    }
    let given: Vec<Timestamp> = new_from.into_iter().chain(new_until).collect();
    let preferred = if given.is_empty() {
        fact.precision
    } else if given.iter().all(is_midnight) {
        Precision::Day
    } else {
        Precision::Instant
    };
    out.precision = match (out.valid_from, out.valid_until) {
        (None, None) => Precision::Unknown,
        (Some(_), None) => Precision::Open,
        _ => preferred,
    };
    Ok(Some(out))
}

/// Parse an adjudication answer: validate it against [`adjudication_schema`], map
/// the handle back to the candidate fact and check the verdict is applicable.
/// Returns the verdict and the trimmed reason.
///
/// Errors (the engine then fails safe to `new`): a schema violation; a non-`new`
/// verdict without a valid handle; an unparsable or empty revised window; an
/// `evidence` verdict naming a fact of another kind (or, for relations, another
/// pair of entities); a `supersede` naming a fact of another kind or, for
/// relations, another predicate; a `contradict` naming a fact of another kind.
pub fn parse_adjudication(
    value: &Value,
    input: &AdjudicationInput,
) -> Result<(ChatVerdict, String), String> {
    validate_json(&adjudication_schema(input), value)
        .map_err(|e| format!("adjudication answer is invalid: {e}"))?;
    let verdict = value["verdict"].as_str().unwrap_or_default();
    let reason = value["reason"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string();
    if verdict == "new" {
        return Ok((ChatVerdict::New, reason));
    }
    let handle = value["fact"].as_str().unwrap_or_default().trim();
    let fact = handle
        .strip_prefix('F')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .and_then(|n| input.candidates.get(n - 1))
        .ok_or_else(|| format!("verdict `{verdict}` names an unknown fact `{handle}`"))?;
    let a = &input.assertion;
    if fact.kind != a.kind {
        return Err(format!(
            "verdict `{verdict}` names {handle}, a {} fact, for a {} assertion",
            fact.kind.as_str(),
            a.kind.as_str()
        ));
    }
    let verdict = match verdict {
        "evidence" => {
            if a.kind == FactKind::Relation {
                let pair = |s: EntityId, o: Option<EntityId>| {
                    let o = o.map(|o| o.0);
                    let s = Some(s.0);
                    if s <= o { (s, o) } else { (o, s) }
                };
                if pair(a.subject, a.object) != pair(fact.subject, fact.object) {
                    return Err(format!(
                        "evidence names {handle}, a relation between other entities"
                    ));
                }
            }
            let revised = revised_window(
                &fact.window,
                value["valid_from"].as_str().unwrap_or_default(),
                value["valid_until"].as_str().unwrap_or_default(),
            )?;
            ChatVerdict::Evidence {
                fact: fact.fact_id,
                revised,
            }
        }
        "supersede" => {
            if a.kind == FactKind::Relation && a.predicate != fact.predicate {
                return Err(format!(
                    "supersede names {handle}, a `{}` relation, for a `{}` assertion",
                    fact.predicate.as_deref().unwrap_or("-"),
                    a.predicate.as_deref().unwrap_or("-")
                ));
            }
            ChatVerdict::Supersede { fact: fact.fact_id }
        }
        "contradict" => ChatVerdict::Contradict { fact: fact.fact_id },
        other => return Err(format!("unknown verdict `{other}`")),
    };
    Ok((verdict, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{AssertionId, ClaimId, DocumentId, NamespaceId, VersionId};
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    fn ts(y: i32, m: u32, d: u32) -> Timestamp {
        Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
    }

    fn eid(n: u128) -> EntityId {
        EntityId(Uuid::from_u128(n))
    }

    fn fid(n: u128) -> FactId {
        FactId(Uuid::from_u128(0x100 + n))
    }

    const ALICE: u128 = 1;
    const ACME: u128 = 2;
    const GLOBEX: u128 = 3;

    fn window(from: Option<Timestamp>, until: Option<Timestamp>, p: Precision) -> Window {
        Window {
            valid_from: from,
            valid_until: until,
            precision: p,
        }
    }

    fn assertion(
        kind: FactKind,
        predicate: Option<&str>,
        object: Option<u128>,
        statement: &str,
        w: Window,
        vk: ValidityKind,
    ) -> Assertion {
        Assertion {
            assertion_id: AssertionId(Uuid::from_u128(0xa)),
            namespace_id: NamespaceId(Uuid::from_u128(0xb)),
            claim_id: ClaimId(Uuid::from_u128(0xc)),
            document_id: DocumentId(Uuid::from_u128(0xd)),
            version_id: VersionId(Uuid::from_u128(0xe)),
            kind,
            subject: eid(ALICE),
            predicate: predicate.map(str::to_string),
            object: object.map(eid),
            statement: statement.into(),
            window: w,
            validity_kind: vk,
            asserted_at: ts(2026, 3, 10),
            ordinal: 0,
        }
    }

    fn fact(
        n: u128,
        kind: FactKind,
        predicate: Option<&str>,
        object: Option<u128>,
        statement: &str,
        w: Window,
        vk: ValidityKind,
    ) -> FactRecord {
        FactRecord {
            fact_id: fid(n),
            namespace_id: NamespaceId(Uuid::from_u128(0xb)),
            kind,
            subject: eid(ALICE),
            subject_name: "Alice".into(),
            predicate: predicate.map(str::to_string),
            object: object.map(eid),
            object_name: object.map(|o| if o == ACME { "Acme" } else { "Globex" }.to_string()),
            statement: statement.into(),
            window: w,
            validity_kind: vk,
            recorded_at: ts(2025, 1, 1),
            invalidated_at: None,
            closed_reason: None,
            contradiction_group: None,
            superseded_by: None,
            evidence_count: 1,
            contradict_count: 0,
            embedding_key: format!("k{n}"),
            updated_at: ts(2025, 1, 1),
        }
    }

    fn obs(statement: &str, w: Window, vk: ValidityKind) -> Assertion {
        assertion(FactKind::Observation, None, None, statement, w, vk)
    }

    fn obs_fact(n: u128, statement: &str, w: Window, vk: ValidityKind) -> FactRecord {
        fact(n, FactKind::Observation, None, None, statement, w, vk)
    }

    fn acme_fact() -> FactRecord {
        fact(
            1,
            FactKind::Relation,
            Some("works_for"),
            Some(ACME),
            "Alice works for Acme.",
            window(Some(ts(2024, 3, 1)), None, Precision::Month),
            ValidityKind::State,
        )
    }

    fn globex_input() -> AdjudicationInput {
        AdjudicationInput {
            assertion: assertion(
                FactKind::Relation,
                Some("works_for"),
                Some(GLOBEX),
                "Alice works for Globex.",
                window(Some(ts(2026, 2, 1)), None, Precision::Month),
                ValidityKind::State,
            ),
            claim_text: "In February 2026 Alice left Acme and joined Globex.".into(),
            subject_name: "Alice".into(),
            object_name: Some("Globex".into()),
            candidates: vec![acme_fact()],
        }
    }

    #[test]
    fn statements_normalize() {
        assert_eq!(
            normalized_statement("  Alice  works for\tÁcme. "),
            "alice works for acme"
        );
        assert_eq!(
            normalized_statement("Alice’s co‐founder won!"),
            "alice's co-founder won"
        );
        assert_ne!(
            normalized_statement("Revenue was $5.0M."),
            normalized_statement("Revenue was $50M.")
        );
        assert_eq!(normalized_statement("Up 5%."), "up 5%");
    }

    #[test]
    fn shape_and_identity() {
        let a = assertion(
            FactKind::Relation,
            Some("works_for"),
            Some(ACME),
            "alice works for ACME",
            Window::unknown(),
            ValidityKind::State,
        );
        let f = acme_fact();
        assert!(same_shape(&a, &f));
        assert!(identical(&a, &f));
        let mut other_object = a.clone();
        other_object.object = Some(eid(GLOBEX));
        assert!(!same_shape(&other_object, &f));
        let mut other_predicate = a.clone();
        other_predicate.predicate = Some("founded".into());
        assert!(!same_shape(&other_predicate, &f));
        let mut other_subject = a.clone();
        other_subject.subject = eid(GLOBEX);
        assert!(!same_shape(&other_subject, &f));
        let o = obs(
            "Alice works for Acme.",
            Window::unknown(),
            ValidityKind::State,
        );
        assert!(!same_shape(&o, &f));
        let of = obs_fact(
            2,
            "Alice likes chess.",
            Window::unknown(),
            ValidityKind::State,
        );
        assert!(same_shape(&o, &of));
        assert!(!identical(&o, &of));
    }

    #[test]
    fn change_cues() {
        assert!(has_change_cue("Alice Moreno works for Globex now."));
        assert!(has_change_cue("Alice no longer works for Acme."));
        assert!(has_change_cue("She moved to Madrid."));
        assert!(!has_change_cue("Alice Moreno works for Acme."));
        assert!(!has_change_cue("Nobody knows."));
        assert!(reports_past_state("Previously Odile lived in Lyon."));
        assert!(reports_past_state("Alice used to work for Acme."));
        assert!(!reports_past_state("Alice lives in Lyon."));
    }

    #[test]
    fn offline_evidence_versus_new() {
        let day = |d| {
            window(
                Some(ts(2024, 3, d)),
                Some(ts(2024, 3, d + 1)),
                Precision::Day,
            )
        };
        let win = obs_fact(1, "Alice won the Prague Open.", day(3), ValidityKind::Event);
        // Different statement: new.
        let played = obs(
            "Alice played in the Prague Open.",
            day(3),
            ValidityKind::Event,
        );
        assert_eq!(offline_verdict(&played, std::slice::from_ref(&win)), None);
        // Identical wording, disjoint known windows: a recurring event, new.
        let later = obs("Alice won the Prague Open.", day(20), ValidityKind::Event);
        assert_eq!(offline_verdict(&later, std::slice::from_ref(&win)), None);
        // Identical, overlapping: evidence.
        let same = obs("alice won the prague open", day(3), ValidityKind::Event);
        assert_eq!(
            offline_verdict(&same, std::slice::from_ref(&win)),
            Some(fid(1))
        );
        // Identical, one window unknown: evidence.
        let undated = obs(
            "Alice won the Prague Open.",
            Window::unknown(),
            ValidityKind::Event,
        );
        assert_eq!(
            offline_verdict(&undated, std::slice::from_ref(&win)),
            Some(fid(1))
        );
        let undated_fact = obs_fact(
            2,
            "Alice won the Prague Open.",
            Window::unknown(),
            ValidityKind::Event,
        );
        assert_eq!(
            offline_verdict(&later, &[win.clone(), undated_fact]),
            Some(fid(2))
        );
        // The first matching candidate in order wins.
        let dup = FactRecord {
            fact_id: fid(9),
            ..win.clone()
        };
        assert_eq!(offline_verdict(&same, &[dup, win]), Some(fid(9)));
        assert_eq!(offline_verdict(&same, &[]), None);
    }

    #[test]
    fn supersede_close_cases() {
        let pred = window(Some(ts(2024, 3, 1)), None, Precision::Month);
        // Inside: capped.
        let capped = supersede_close(&pred, ValidityKind::State, Some(ts(2026, 2, 1))).unwrap();
        assert_eq!(capped.valid_from, Some(ts(2024, 3, 1)));
        assert_eq!(capped.valid_until, Some(ts(2026, 2, 1)));
        assert_eq!(capped.precision, Precision::Month);
        // Unknown successor start: nothing capped.
        assert_eq!(supersede_close(&pred, ValidityKind::State, None), None);
        // A measurement for a period is never capped.
        assert_eq!(
            supersede_close(&pred, ValidityKind::MeasurementPeriod, Some(ts(2026, 2, 1))),
            None
        );
        // Successor start before (or at) the predecessor's start: nothing capped.
        assert_eq!(
            supersede_close(&pred, ValidityKind::State, Some(ts(2023, 1, 1))),
            None
        );
        assert_eq!(
            supersede_close(&pred, ValidityKind::State, Some(ts(2024, 3, 1))),
            None
        );
        // At or after a known end: nothing capped.
        let closed = window(Some(ts(2024, 3, 1)), Some(ts(2025, 1, 1)), Precision::Month);
        assert_eq!(
            supersede_close(&closed, ValidityKind::State, Some(ts(2025, 1, 1))),
            None
        );
        assert_eq!(
            supersede_close(&closed, ValidityKind::State, Some(ts(2024, 6, 1)))
                .unwrap()
                .valid_until,
            Some(ts(2024, 6, 1))
        );
        // An unknown predecessor window is capped at the instant.
        let capped = supersede_close(
            &Window::unknown(),
            ValidityKind::State,
            Some(ts(2026, 2, 1)),
        )
        .unwrap();
        assert_eq!(capped.valid_from, None);
        assert_eq!(capped.valid_until, Some(ts(2026, 2, 1)));
        assert_eq!(capped.precision, Precision::Instant);
    }

    #[test]
    fn merged_window_fills_unknown_bounds_only() {
        let open = window(Some(ts(2024, 3, 1)), None, Precision::Open);
        let incoming = window(Some(ts(2024, 1, 1)), Some(ts(2025, 1, 1)), Precision::Year);
        let m = merged_window(&open, &incoming).unwrap();
        assert_eq!(m.valid_from, Some(ts(2024, 3, 1)));
        assert_eq!(m.valid_until, Some(ts(2025, 1, 1)));
        assert_eq!(m.precision, Precision::Year);
        // Nothing to fill: None.
        assert_eq!(merged_window(&m, &incoming), None);
        assert_eq!(merged_window(&open, &Window::unknown()), None);
        // Unknown fact takes the incoming window.
        assert_eq!(
            merged_window(&Window::unknown(), &incoming),
            Some(incoming.clone())
        );
        // A known precision is kept when an end is filled in.
        let month = window(Some(ts(2024, 3, 1)), None, Precision::Month);
        let m = merged_window(&month, &incoming).unwrap();
        assert_eq!(m.valid_until, Some(ts(2025, 1, 1)));
        assert_eq!(m.precision, Precision::Month);
        // A fill that would empty the window is not used.
        let late = window(Some(ts(2026, 1, 1)), None, Precision::Open);
        assert_eq!(merged_window(&late, &incoming), None);
        // An incoming start only: Unknown becomes Open.
        let start_only = window(Some(ts(2024, 1, 1)), None, Precision::Open);
        assert_eq!(
            merged_window(&Window::unknown(), &start_only)
                .unwrap()
                .precision,
            Precision::Open
        );
    }

    #[test]
    fn rank_candidates_orders_and_truncates() {
        let a = assertion(
            FactKind::Relation,
            Some("works_for"),
            Some(ACME),
            "Alice works for Acme.",
            Window::unknown(),
            ValidityKind::State,
        );
        let mut facts = vec![
            obs_fact(
                1,
                "Alice likes chess.",
                Window::unknown(),
                ValidityKind::State,
            ),
            obs_fact(
                2,
                "Alice works for Acme Corp.",
                Window::unknown(),
                ValidityKind::State,
            ),
            acme_fact(),
            obs_fact(
                3,
                "Alice lives in Prague.",
                Window::unknown(),
                ValidityKind::State,
            ),
            obs_fact(
                4,
                "Alice likes chess.",
                Window::unknown(),
                ValidityKind::State,
            ),
        ];
        facts[2].fact_id = fid(7);
        let ranked = rank_candidates(&a, facts.clone(), 10);
        let ids: Vec<FactId> = ranked.iter().map(|f| f.fact_id).collect();
        // Same shape first; then similarity; ties by recorded_at then fact_id.
        assert_eq!(ids[0], fid(7));
        assert_eq!(ids[1], fid(2));
        assert_eq!(ranked.len(), 5);
        let pos = |id| ids.iter().position(|x| *x == id).unwrap();
        assert!(pos(fid(1)) < pos(fid(4)));
        // Deterministic whatever the input order.
        let mut reversed = facts.clone();
        reversed.reverse();
        let again: Vec<FactId> = rank_candidates(&a, reversed, 10)
            .iter()
            .map(|f| f.fact_id)
            .collect();
        assert_eq!(ids, again);
        // Truncation keeps the top k.
        let top: Vec<FactId> = rank_candidates(&a, facts.clone(), 2)
            .iter()
            .map(|f| f.fact_id)
            .collect();
        assert_eq!(top, ids[..2].to_vec());
        assert_eq!(rank_candidates(&a, facts, 5).len(), 5);
    }

    fn answer(verdict: &str, fact: &str, from: &str, until: &str) -> Value {
        json!({"verdict": verdict, "fact": fact, "valid_from": from, "valid_until": until,
               "reason": " because "})
    }

    #[test]
    fn parse_each_verdict() {
        let input = globex_input();
        let (v, r) = parse_adjudication(&answer("supersede", "F1", "", ""), &input).unwrap();
        assert_eq!(v, ChatVerdict::Supersede { fact: fid(1) });
        assert_eq!(r, "because");
        let (v, _) = parse_adjudication(&answer("new", "", "", ""), &input).unwrap();
        assert_eq!(v, ChatVerdict::New);
        let (v, _) = parse_adjudication(&answer("contradict", "F1", "", ""), &input).unwrap();
        assert_eq!(v, ChatVerdict::Contradict { fact: fid(1) });

        // Evidence: needs the same entities for relations.
        let mut same = globex_input();
        same.assertion.object = Some(eid(ACME));
        same.assertion.statement = "Alice joined Acme on 2024-03-04.".into();
        let (v, _) = parse_adjudication(&answer("evidence", "F1", "", ""), &same).unwrap();
        assert_eq!(
            v,
            ChatVerdict::Evidence {
                fact: fid(1),
                revised: None
            }
        );
        let (v, _) =
            parse_adjudication(&answer("evidence", "F1", "2024-03-04T00:00:00Z", ""), &same)
                .unwrap();
        let ChatVerdict::Evidence {
            revised: Some(w), ..
        } = v
        else {
            panic!("expected a revision: {v:?}");
        };
        assert_eq!(w.valid_from, Some(ts(2024, 3, 4)));
        assert_eq!(w.valid_until, None);
        assert_eq!(w.precision, Precision::Open);
        let (v, _) = parse_adjudication(
            &answer("evidence", "F1", "", "2025-06-30T12:00:00+02:00"),
            &same,
        )
        .unwrap();
        let ChatVerdict::Evidence {
            revised: Some(w), ..
        } = v
        else {
            panic!("expected a revision: {v:?}");
        };
        assert_eq!(w.valid_from, Some(ts(2024, 3, 1)));
        assert_eq!(
            w.valid_until,
            Some(Utc.with_ymd_and_hms(2025, 6, 30, 10, 0, 0).unwrap())
        );
        assert_eq!(w.precision, Precision::Instant);
        let (v, _) = parse_adjudication(
            &answer(
                "evidence",
                "F1",
                "2024-03-04T00:00:00Z",
                "2025-01-01T00:00:00Z",
            ),
            &same,
        )
        .unwrap();
        assert!(matches!(
            v,
            ChatVerdict::Evidence {
                revised: Some(Window {
                    precision: Precision::Day,
                    ..
                }),
                ..
            }
        ));
        // Reopening a closed end.
        let mut closed = same.clone();
        closed.candidates[0].window.valid_until = Some(ts(2025, 1, 1));
        let (v, _) = parse_adjudication(&answer("evidence", "F1", "", "open"), &closed).unwrap();
        assert_eq!(
            v,
            ChatVerdict::Evidence {
                fact: fid(1),
                revised: Some(window(Some(ts(2024, 3, 1)), None, Precision::Open))
            }
        );
        // Evidence for a relation between other entities is refused.
        assert!(parse_adjudication(&answer("evidence", "F1", "", ""), &input).is_err());
    }

    #[test]
    fn parse_rejects_bad_handles_dates_and_shapes() {
        let input = globex_input();
        for bad in [
            answer("supersede", "F2", "", ""),
            answer("supersede", "", "", ""),
            answer("contradict", "F0", "", ""),
            answer("maybe", "F1", "", ""),
            json!({"verdict": "new", "fact": ""}),
        ] {
            assert!(parse_adjudication(&bad, &input).is_err(), "{bad}");
        }
        let mut same = globex_input();
        same.assertion.object = Some(eid(ACME));
        for bad in [
            answer("evidence", "F1", "March 2024", ""),
            answer("evidence", "F1", "2024-03-04", ""),
            answer("evidence", "F1", "", "soon"),
            answer(
                "evidence",
                "F1",
                "2025-01-01T00:00:00Z",
                "2024-01-01T00:00:00Z",
            ),
        ] {
            assert!(parse_adjudication(&bad, &same).is_err(), "{bad}");
        }
        // Supersede across predicates or kinds is refused.
        let mut other_predicate = globex_input();
        other_predicate.assertion.predicate = Some("founded".into());
        assert!(parse_adjudication(&answer("supersede", "F1", "", ""), &other_predicate).is_err());
        let mut observation = globex_input();
        observation.assertion.kind = FactKind::Observation;
        observation.assertion.predicate = None;
        observation.assertion.object = None;
        assert!(parse_adjudication(&answer("supersede", "F1", "", ""), &observation).is_err());
        assert!(parse_adjudication(&answer("contradict", "F1", "", ""), &observation).is_err());
        assert_eq!(
            parse_adjudication(&answer("new", "", "", ""), &observation)
                .unwrap()
                .0,
            ChatVerdict::New
        );
    }

    #[test]
    fn request_uses_handles_not_ids() {
        let req = adjudication_request(&globex_input());
        assert_eq!(req.call_key, "adjudicate");
        assert!(req.user.contains("[F1]"));
        assert!(!req.user.contains(&fid(1).to_string()));
        assert_eq!(req.schema["properties"]["fact"]["enum"], json!(["F1", ""]));
    }

    #[test]
    fn adjudication_prompt_snapshot() {
        let req = adjudication_request(&globex_input());
        let rendered = format!(
            "SYSTEM\n{}\n\nUSER\n{}\n\nSCHEMA {}\n{}\n",
            req.system,
            req.user,
            req.schema_name,
            serde_json::to_string_pretty(&req.schema).unwrap()
        );
        insta::assert_snapshot!("adjudication_prompt", rendered);
    }
}
