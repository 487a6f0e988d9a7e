//! T4: the joint, match-biased resolution call (D100).
//!
//! T4 reads the incoming canonical name with the claim text and its document
//! title, and every candidate of the bounded snapshot in the supplied
//! (deterministic relevance) order. Candidates are shown with short
//! attempt-local handles `C1`, `C2`, … — never their UUIDs — each with its
//! canonical name, a bounded list of aliases, its profile description, a bounded
//! list of salient facts and its T3 score when one was computed. The model
//! answers exactly one handle or `new`, with a rationale.
//!
//! The prompt is match-biased: compatible facts favour a match, missing overlap
//! proves nothing, and `new` needs positive evidence that the incoming referent
//! differs from every candidate. Among several compatible candidates the first in
//! the supplied order wins.

use crate::chat::{ChatRequest, validate_json};
use crate::ids::EntityId;
use serde::Serialize;
use serde_json::{Value, json};

/// The T4 prompt generation; part of the resolver's transcript.
pub const T4_PROMPT_VERSION: &str = "t4-2026.11a";
/// At most this many aliases are rendered per candidate.
pub const T4_MAX_ALIASES: usize = 8;
/// At most this many salient facts are rendered per candidate.
pub const T4_MAX_FACTS: usize = 8;
/// Each rendered fact is cut to at most this many characters.
pub const T4_MAX_FACT_CHARS: usize = 300;
/// A rendered profile description is cut to at most this many characters.
pub const T4_MAX_PROFILE_CHARS: usize = 1200;

/// The answer that mints a new entity.
const NEW: &str = "new";

/// One candidate entity as T4 sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct T4Candidate {
    /// The entity (never shown to the model).
    pub entity_id: EntityId,
    /// Its canonical name.
    pub canonical_name: String,
    /// Other names it is known by (the first [`T4_MAX_ALIASES`] distinct ones
    /// that differ from the canonical name are rendered).
    pub aliases: Vec<String>,
    /// Its current profile description, if one was built.
    pub profile: Option<String>,
    /// Salient fact statements (the first [`T4_MAX_FACTS`] are rendered, each cut
    /// to [`T4_MAX_FACT_CHARS`] characters).
    pub facts: Vec<String>,
    /// Its T3 similarity, when computed.
    pub t3_score: Option<f32>,
}

/// Everything one T4 call reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct T4Input {
    /// The incoming canonical name.
    pub name: String,
    /// The claim that names it.
    pub claim_text: String,
    /// The title of the claim's document.
    pub document_title: String,
    /// The candidates, in the deterministic relevance order.
    pub candidates: Vec<T4Candidate>,
}

/// What T4 decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum T4Verdict {
    /// The reference is this existing entity.
    Match(EntityId),
    /// The reference is a new referent.
    New,
}

const T4_SYSTEM: &str = "You resolve one entity reference for an agent memory.
You read an INCOMING name, the claim that mentions it and the title of the claim's document, and the
CANDIDATES: entities already in memory, labelled C1, C2, … in order of relevance. Each candidate
shows its canonical name, other names it is known by, its profile (\"none yet\" when none was
built), salient facts already believed about it, and a similarity score when one was computed.
Decide whether the incoming name refers to one of the candidates or to a referent not yet in memory.
The evidence about the incoming referent is the claim text and its document context. A name alone
decides nothing: the same name can belong to two different people (a father and son, two colleagues
who share a name), and one person can appear under several names.
Be match-biased:
- Compatible facts favour a match.
- Missing overlap does NOT prove a different referent: a candidate known for other things, or a
  claim about a different topic, is still compatible. Memory is incomplete.
- Answer new only with positive evidence that the incoming referent differs from EVERY candidate:
  facts that cannot both be true of one referent (a different employer at the same time, a
  different age or birth year, a different home at the same time), or the text describing them as
  a different person (a namesake, the father rather than the son).
- If several candidates remain compatible, choose the first of them in the order supplied.
choice: exactly one candidate handle (C1, C2, …) or new. rationale: one or two sentences naming
the evidence that decided. Answer with JSON only.";

/// The handle of the candidate at `index` (0-based): `C1`, `C2`, ….
pub fn t4_handle(index: usize) -> String {
    format!("C{}", index + 1)
}

/// `s` cut to at most `max` characters (on a character boundary); a cut text
/// ends with `…` (counted within `max`).
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// The aliases rendered for a candidate: distinct, trimmed, non-empty, not equal
/// to the canonical name, at most [`T4_MAX_ALIASES`], in the given order.
fn rendered_aliases(c: &T4Candidate) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for a in &c.aliases {
        let a = a.trim();
        if a.is_empty() || a == c.canonical_name.trim() || out.contains(&a) {
            continue;
        }
        out.push(a);
        if out.len() == T4_MAX_ALIASES {
            break;
        }
    }
    out
}

/// Collapses line breaks so one value stays on one rendered line.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn render_user(input: &T4Input) -> String {
    let mut s = String::new();
    s.push_str("INCOMING\n");
    s.push_str(&format!("Name: {}\n", one_line(&input.name)));
    s.push_str(&format!("Claim: {}\n", one_line(&input.claim_text)));
    s.push_str(&format!("Document: {}\n", one_line(&input.document_title)));
    s.push_str("\nCANDIDATES (in order of relevance)\n");
    if input.candidates.is_empty() {
        s.push_str("(none)\n");
    }
    for (i, c) in input.candidates.iter().enumerate() {
        s.push_str(&format!(
            "[{}] {}\n",
            t4_handle(i),
            one_line(&c.canonical_name)
        ));
        let aliases = rendered_aliases(c);
        if aliases.is_empty() {
            s.push_str("  Also known as: -\n");
        } else {
            s.push_str(&format!("  Also known as: {}\n", aliases.join("; ")));
        }
        match c
            .profile
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            Some(p) => s.push_str(&format!(
                "  Profile: {}\n",
                truncate_chars(&one_line(p), T4_MAX_PROFILE_CHARS)
            )),
            None => s.push_str("  Profile: none yet\n"),
        }
        if c.facts.is_empty() {
            s.push_str("  Facts: none recorded\n");
        } else {
            s.push_str("  Facts:\n");
            for f in c.facts.iter().take(T4_MAX_FACTS) {
                s.push_str(&format!(
                    "  - {}\n",
                    truncate_chars(&one_line(f), T4_MAX_FACT_CHARS)
                ));
            }
        }
        if let Some(score) = c.t3_score {
            s.push_str(&format!("  Similarity (T3): {score:.2}\n"));
        }
    }
    let mut options: Vec<String> = (0..input.candidates.len()).map(t4_handle).collect();
    options.push(NEW.to_string());
    s.push_str(&format!(
        "\nAnswer with exactly one of: {}.",
        options.join(", ")
    ));
    s
}

/// The T4 answer schema for `input`: `{choice, rationale}`, where `choice` is
/// one of the candidate handles or `new` (strict-compatible).
pub fn t4_schema(input: &T4Input) -> Value {
    let mut choices: Vec<Value> = (0..input.candidates.len())
        .map(|i| Value::String(t4_handle(i)))
        .collect();
    choices.push(Value::String(NEW.to_string()));
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["choice", "rationale"],
        "properties": {
            "choice": {"type": "string", "enum": choices},
            "rationale": {"type": "string"}
        }
    })
}

/// The T4 request (call key `resolve_t4`).
pub fn t4_request(input: &T4Input) -> ChatRequest {
    ChatRequest::new(
        "resolve_t4",
        T4_SYSTEM,
        render_user(input),
        "resolution",
        t4_schema(input),
    )
}

/// Parse a T4 answer: validate it against [`t4_schema`] and map the handle back to
/// the candidate's entity. Returns the verdict and the trimmed rationale; an
/// invalid answer or an unknown handle is an error (the caller fails safe).
pub fn parse_t4(value: &Value, input: &T4Input) -> Result<(T4Verdict, String), String> {
    validate_json(&t4_schema(input), value).map_err(|e| format!("T4 answer is invalid: {e}"))?;
    let choice = value["choice"].as_str().unwrap_or_default().trim();
    let rationale = value["rationale"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string();
    if choice == NEW {
        return Ok((T4Verdict::New, rationale));
    }
    let index = choice
        .strip_prefix('C')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n >= 1)
        .map(|n| n - 1);
    match index.and_then(|i| input.candidates.get(i)) {
        Some(c) => Ok((T4Verdict::Match(c.entity_id), rationale)),
        None => Err(format!("T4 chose an unknown candidate `{choice}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn id(n: u128) -> EntityId {
        EntityId(Uuid::from_u128(n))
    }

    fn jan_novak() -> T4Input {
        T4Input {
            name: "Jan Novak".into(),
            claim_text: "Jan Novak, a cardiologist at the St. Anne's University Hospital in Brno, \
                         published a study on atrial fibrillation in 2025."
                .into(),
            document_title: "Brno Cardiology Newsletter, spring 2025".into(),
            candidates: vec![
                T4Candidate {
                    entity_id: id(1),
                    canonical_name: "Jan Novak".into(),
                    aliases: vec!["Jan Novak".into(), "Jan Novák".into(), "J. Novak".into()],
                    profile: Some(
                        "Jan Novak is a chess player from Prague who plays for the Prague \
                         Chess Club."
                            .into(),
                    ),
                    facts: vec![
                        "Jan Novak plays for the Prague Chess Club.".into(),
                        "Jan Novak won the Prague Open in 2023.".into(),
                        "Jan Novak lives in Prague.".into(),
                    ],
                    t3_score: Some(0.62),
                },
                T4Candidate {
                    entity_id: id(2),
                    canonical_name: "Jana Nováková".into(),
                    aliases: vec![],
                    profile: None,
                    facts: vec![],
                    t3_score: None,
                },
            ],
        }
    }

    #[test]
    fn parses_a_match() {
        let input = jan_novak();
        let (v, r) = parse_t4(
            &json!({"choice": "C2", "rationale": " same person "}),
            &input,
        )
        .unwrap();
        assert_eq!(v, T4Verdict::Match(id(2)));
        assert_eq!(r, "same person");
        let (v, _) = parse_t4(&json!({"choice": "C1", "rationale": ""}), &input).unwrap();
        assert_eq!(v, T4Verdict::Match(id(1)));
    }

    #[test]
    fn parses_new() {
        let input = jan_novak();
        let (v, r) = parse_t4(
            &json!({"choice": "new", "rationale": "a cardiologist in Brno, not the chess player"}),
            &input,
        )
        .unwrap();
        assert_eq!(v, T4Verdict::New);
        assert!(r.contains("cardiologist"));
    }

    #[test]
    fn rejects_unknown_handles_and_bad_answers() {
        let input = jan_novak();
        for bad in [
            json!({"choice": "C3", "rationale": "x"}),
            json!({"choice": "C0", "rationale": "x"}),
            json!({"choice": "00000000-0000-0000-0000-000000000001", "rationale": "x"}),
            json!({"choice": "NEW", "rationale": "x"}),
            json!({"choice": "C1"}),
            json!({"choice": "C1", "rationale": "x", "extra": 1}),
            json!("C1"),
        ] {
            assert!(parse_t4(&bad, &input).is_err(), "{bad}");
        }
        let empty = T4Input {
            candidates: vec![],
            ..jan_novak()
        };
        assert!(parse_t4(&json!({"choice": "C1", "rationale": "x"}), &empty).is_err());
        assert_eq!(
            parse_t4(&json!({"choice": "new", "rationale": "x"}), &empty)
                .unwrap()
                .0,
            T4Verdict::New
        );
    }

    #[test]
    fn schema_lists_exactly_the_handles() {
        let schema = t4_schema(&jan_novak());
        assert_eq!(
            schema["properties"]["choice"]["enum"],
            json!(["C1", "C2", "new"])
        );
        assert_eq!(schema["required"], json!(["choice", "rationale"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        let req = t4_request(&jan_novak());
        assert_eq!(req.call_key, "resolve_t4");
        assert!(!req.user.contains("00000000-0000"));
    }

    #[test]
    fn bounds_are_applied() {
        let long_fact = "é".repeat(400);
        let mut input = jan_novak();
        input.candidates[0].aliases = (0..20).map(|i| format!("Alias {i}")).collect();
        input.candidates[0].facts = (0..20).map(|i| format!("Fact {i}. {long_fact}")).collect();
        let user = t4_request(&input).user;
        assert!(user.contains("Alias 7"));
        assert!(!user.contains("Alias 8"));
        assert!(user.contains("Fact 7."));
        assert!(!user.contains("Fact 8."));
        let fact_lines: Vec<&str> = user.lines().filter(|l| l.starts_with("  - ")).collect();
        assert_eq!(fact_lines.len(), T4_MAX_FACTS);
        for l in fact_lines {
            let fact = l.trim_start_matches("  - ");
            assert_eq!(fact.chars().count(), T4_MAX_FACT_CHARS);
            assert!(fact.ends_with('…'));
        }
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abcd", 3), "ab…");
        assert_eq!(truncate_chars("žžžž", 2), "ž…");
        assert_eq!(truncate_chars("abc", 0), "");
    }

    #[test]
    fn t4_prompt_snapshot() {
        let req = t4_request(&jan_novak());
        let rendered = format!(
            "SYSTEM\n{}\n\nUSER\n{}\n\nSCHEMA {}\n{}\n",
            req.system,
            req.user,
            req.schema_name,
            serde_json::to_string_pretty(&req.schema).unwrap()
        );
        insta::assert_snapshot!("t4_prompt", rendered);
    }
}
