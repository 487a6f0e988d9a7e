//! The model-backed extractor (D31): a Selection call and a Claimify call over the
//! context bundle. This module renders the prompts and JSON schemas and parses the
//! answers into an [`Extraction`]; the engine makes the calls, records them, and
//! runs every returned claim through the same grounding gates as the offline
//! extractor.

use super::*;
use crate::chat::ChatRequest;
use crate::{Error, Result};
use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use serde_json::{Value, json};

/// The prompt generation; part of the extractor version.
pub const CLAIMIFY_PROMPT_VERSION: &str = "claimify-v1";

const SELECTION_SYSTEM: &str =
    "You are the Selection stage of a claim extractor for an agent memory.
You read a context bundle: a document header, a section path, context passages (labelled N1, N2, …)
and the TARGET passages (labelled T1, T2, …). For EVERY target passage return one verdict:
- keep: it states something specific and verifiable (who did what, when, where, how much, a
  change of state, a named entity with a predicate, a quantity, a date, an attributed opinion or
  stance such as \"Alice thinks the plan is risky\").
- keep_flagged: it probably states something verifiable but you are unsure.
- drop, with exactly one reason: question, filler (greetings, thanks, bare acknowledgements),
  unattributed_opinion, advice, hypothetical, generic, meta (talk about the text itself),
  no_info.
Never drop quantities, dates, a named entity with a predicate, or a change of state. Keep only
what the passage itself says; do not use outside knowledge. Answer with JSON only.";

const CLAIMIFY_SYSTEM: &str = "You are the Claimify stage of a claim extractor for an agent memory.
From the KEEP passages listed, write standalone, decontextualized, coherent claims.
Rules:
1. A claim must be understandable alone: resolve pronouns, demonstratives and ellipsis using the
   bundle ONLY (header, section path, passages). In conversations a passage belongs to the speaker
   named before the colon; first-person statements become statements about that speaker.
2. Keep attribution: \"X said Y\" yields a claim that X said Y, never Y alone.
3. Cross-turn answers: when a speaker affirms a question from the previous turn (\"Is that your
   third one?\" - \"Yep! …\"), the claim keeps the question's specifics (ordinals, names, kinds);
   on a negation or correction, claim only what the speaker asserts.
4. Relative times (\"yesterday\", \"last Friday\", \"two weeks ago\", \"last year\") resolve against
   the header's source time; write the resolved value in ISO form in the claim text (\"on 2023-05-05\",
   \"in 2022\", \"in 2023-04\") and in valid_from/valid_until. With no source time, keep the wording
   and leave the dates null. Never guess a date.
5. Do not split every conjunction: one claim per coherent proposition; do not merge unrelated ones.
6. passages: the labels of every passage that supports the claim (the target passage and any
   passage that establishes a referent). added_context: every substring you inserted that is not in
   the cited passage (resolved names, the speaker, dates), verbatim as it appears in your claim.
7. precision: instant, day, month, quarter, year, open (known start only) or unknown; kind: state
   (something held over time), event (something happened), measurement_period (the period a figure
   covers).
8. verdict: entailed only if the cited passages (plus the header) entail the claim; otherwise
   not_entailed or uncertain.
Answer with JSON only.";

fn render_bundle(bundle: &ContextBundle) -> String {
    let mut s = String::new();
    s.push_str("HEADER\n");
    s.push_str(&bundle.header.render());
    if !bundle.section_path.is_empty() {
        s.push_str(&format!("Section: {}\n", bundle.section_path.join(" > ")));
    }
    if !bundle.before.is_empty() {
        s.push_str("\nCONTEXT BEFORE\n");
        for p in &bundle.before {
            s.push_str(&format!("[{}] {}\n", p.label, p.text));
        }
    }
    s.push_str("\nTARGET\n");
    for p in &bundle.target {
        match &p.turn {
            Some(t) => s.push_str(&format!("[{}] ({}) {}\n", p.label, t.speaker, p.text)),
            None => s.push_str(&format!("[{}] {}\n", p.label, p.text)),
        }
    }
    if !bundle.after.is_empty() {
        s.push_str("\nCONTEXT AFTER\n");
        for p in &bundle.after {
            s.push_str(&format!("[{}] {}\n", p.label, p.text));
        }
    }
    s
}

const DROP_REASONS: [&str; 8] = [
    "question",
    "filler",
    "unattributed_opinion",
    "advice",
    "hypothetical",
    "generic",
    "meta",
    "no_info",
];

/// The Selection call's JSON schema.
pub fn selection_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["selections"],
        "properties": {
            "selections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["passage", "label", "reason"],
                    "properties": {
                        "passage": {"type": "string"},
                        "label": {"type": "string", "enum": ["keep", "keep_flagged", "drop"]},
                        "reason": {"anyOf": [
                            {"type": "string", "enum": DROP_REASONS},
                            {"type": "null"}
                        ]}
                    }
                }
            }
        }
    })
}

/// The Claimify call's JSON schema.
pub fn claimify_schema() -> Value {
    let nullable_string = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["claims"],
        "properties": {
            "claims": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["text", "passages", "added_context", "valid_from", "valid_until",
                                 "precision", "kind", "verdict"],
                    "properties": {
                        "text": {"type": "string", "minLength": 1},
                        "passages": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                        "added_context": {"type": "array", "items": {"type": "string"}},
                        "valid_from": nullable_string,
                        "valid_until": nullable_string,
                        "precision": {"type": "string", "enum": ["instant", "day", "month", "quarter", "year", "open", "unknown"]},
                        "kind": {"type": "string", "enum": ["state", "event", "measurement_period"]},
                        "verdict": {"type": "string", "enum": ["entailed", "not_entailed", "uncertain"]}
                    }
                }
            }
        }
    })
}

/// The Selection request for a bundle.
pub fn selection_request(bundle: &ContextBundle) -> ChatRequest {
    ChatRequest::new(
        "selection",
        SELECTION_SYSTEM,
        format!(
            "{}\nReturn one selection per TARGET passage ({}).",
            render_bundle(bundle),
            bundle
                .target
                .iter()
                .map(|p| p.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "selection",
        selection_schema(),
    )
}

/// The Claimify request for a bundle and the passages Selection kept.
pub fn claimify_request(bundle: &ContextBundle, kept: &[String]) -> ChatRequest {
    ChatRequest::new(
        "claimify",
        CLAIMIFY_SYSTEM,
        format!(
            "{}\nKEEP passages: {}\nWrite the claims they support.",
            render_bundle(bundle),
            kept.join(", ")
        ),
        "claims",
        claimify_schema(),
    )
}

/// Parse a Selection answer (already schema-valid). Target passages the model did not
/// mention are recorded as dropped with `no_info`; unknown labels are ignored.
pub fn parse_selection(bundle: &ContextBundle, answer: &Value) -> Result<Vec<Selection>> {
    let items = answer["selections"]
        .as_array()
        .ok_or_else(|| Error::invalid_input("selection answer has no `selections` array"))?;
    let mut out = Vec::with_capacity(bundle.target.len());
    for p in &bundle.target {
        let found = items
            .iter()
            .find(|i| i["passage"].as_str() == Some(p.label.as_str()));
        let (label, reason) = match found {
            Some(i) => {
                let label = match i["label"].as_str() {
                    Some("keep") => SelectionLabel::Keep,
                    Some("keep_flagged") => SelectionLabel::KeepFlagged,
                    _ => SelectionLabel::Drop,
                };
                let reason = if label == SelectionLabel::Drop {
                    Some(
                        i["reason"]
                            .as_str()
                            .and_then(|r| serde_json::from_value(Value::String(r.into())).ok())
                            .unwrap_or(DropReason::NoInfo),
                    )
                } else {
                    None
                };
                (label, reason)
            }
            None => (SelectionLabel::Drop, Some(DropReason::NoInfo)),
        };
        out.push(Selection {
            passage: p.label.clone(),
            label,
            reason,
        });
    }
    Ok(out)
}

/// Parse a Claimify answer (already schema-valid) into drafts.
pub fn parse_claims(answer: &Value) -> Result<Vec<ClaimDraft>> {
    let items = answer["claims"]
        .as_array()
        .ok_or_else(|| Error::invalid_input("claimify answer has no `claims` array"))?;
    let mut out = Vec::with_capacity(items.len());
    for i in items {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let precision: Precision =
            serde_json::from_value(i["precision"].clone()).unwrap_or(Precision::Unknown);
        let kind: ValidityKind =
            serde_json::from_value(i["kind"].clone()).unwrap_or(ValidityKind::Event);
        let verdict: Verdict =
            serde_json::from_value(i["verdict"].clone()).unwrap_or(Verdict::Uncertain);
        out.push(ClaimDraft {
            text: i["text"].as_str().unwrap_or_default().trim().to_string(),
            passages: strings(&i["passages"]),
            added_context: strings(&i["added_context"]),
            validity: model_validity(
                i["valid_from"].as_str(),
                i["valid_until"].as_str(),
                precision,
                kind,
            ),
            verdict,
        });
    }
    Ok(out)
}

/// Turn the model's ISO strings into a validity window. A value that does not parse,
/// or a precision of `unknown`, yields an unknown window: nothing is guessed.
pub fn model_validity(
    from: Option<&str>,
    until: Option<&str>,
    precision: Precision,
    kind: ValidityKind,
) -> Validity {
    if precision == Precision::Unknown {
        return Validity::unknown(kind);
    }
    let start = from.and_then(parse_iso_start);
    let Some((start_ts, start_grain)) = start else {
        return Validity::unknown(kind);
    };
    let end = match until.and_then(parse_iso_start) {
        Some((t, grain)) => Some(advance(t, grain)),
        None if precision == Precision::Open => None,
        None => Some(advance(start_ts, start_grain)),
    };
    Validity {
        from: Some(start_ts),
        until: end,
        precision,
        kind,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Grain {
    Instant,
    Day,
    Month,
    Year,
}

fn parse_iso_start(s: &str) -> Option<(Timestamp, Grain)> {
    let s = s.trim();
    if let Some(t) = crate::time::parse_rfc3339(s) {
        return Some((t, Grain::Instant));
    }
    let parts: Vec<&str> = s.split('-').collect();
    let num = |p: &str| p.parse::<u32>().ok();
    let (y, m, d, grain) = match parts.as_slice() {
        [y] if y.len() == 4 => (num(y)?, 1, 1, Grain::Year),
        [y, m] if y.len() == 4 => (num(y)?, num(m)?, 1, Grain::Month),
        [y, m, d] if y.len() == 4 => (num(y)?, num(m)?, num(d)?, Grain::Day),
        _ => return None,
    };
    let date = NaiveDate::from_ymd_opt(y as i32, m, d)?;
    Some((Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0)?), grain))
}

fn advance(t: Timestamp, grain: Grain) -> Timestamp {
    match grain {
        Grain::Instant => t,
        Grain::Day => t + chrono::Duration::days(1),
        Grain::Month => {
            let (y, m) = if t.month() == 12 {
                (t.year() + 1, 1)
            } else {
                (t.year(), t.month() + 1)
            };
            Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0).single().unwrap_or(t)
        }
        Grain::Year => Utc
            .with_ymd_and_hms(t.year() + 1, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_dates_become_windows() {
        let v = model_validity(
            Some("2023-05-05"),
            None,
            Precision::Day,
            ValidityKind::Event,
        );
        assert_eq!(v.from.unwrap().to_rfc3339(), "2023-05-05T00:00:00+00:00");
        assert_eq!(v.until.unwrap().to_rfc3339(), "2023-05-06T00:00:00+00:00");
        let v = model_validity(Some("2022"), None, Precision::Year, ValidityKind::State);
        assert_eq!(v.until.unwrap().to_rfc3339(), "2023-01-01T00:00:00+00:00");
        let v = model_validity(Some("2023-12"), None, Precision::Month, ValidityKind::Event);
        assert_eq!(v.until.unwrap().to_rfc3339(), "2024-01-01T00:00:00+00:00");
        let v = model_validity(Some("2019"), None, Precision::Open, ValidityKind::State);
        assert!(v.until.is_none());
        let v = model_validity(Some("yesterday"), None, Precision::Day, ValidityKind::Event);
        assert_eq!(v.precision, Precision::Unknown);
        let v = model_validity(
            Some("2023-05-05"),
            None,
            Precision::Unknown,
            ValidityKind::Event,
        );
        assert!(v.from.is_none());
    }

    #[test]
    fn claims_parse_from_a_schema_valid_answer() {
        let answer = json!({"claims": [{
            "text": "Melanie painted a lake sunrise in 2022.",
            "passages": ["T1"], "added_context": ["Melanie", "in 2022"],
            "valid_from": "2022", "valid_until": null, "precision": "year", "kind": "event",
            "verdict": "entailed"
        }]});
        let drafts = parse_claims(&answer).unwrap();
        assert_eq!(drafts.len(), 1);
        assert_eq!(drafts[0].passages, vec!["T1".to_string()]);
        assert_eq!(drafts[0].verdict, Verdict::Entailed);
        assert_eq!(drafts[0].validity.precision, Precision::Year);
        assert!(parse_claims(&json!({"nope": 1})).is_err());
    }
}
