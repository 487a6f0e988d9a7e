//! Normalization (E3, D88): one claim becomes entity references, relations and
//! observations. Both normalizers — the chat call and the deterministic offline
//! one ([`super::offline`]) — produce a [`NormalizedClaim`].

use crate::chat::{ChatRequest, validate_json};
use crate::claims::Validity;
use crate::entities::normalize::lemma;
use crate::facts::predicates::{self, Predicate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What a normalizer reads.
#[derive(Clone, Debug, PartialEq)]
pub struct NormalizeInput {
    /// The claim text (standalone, decontextualized by E2).
    pub claim_text: String,
    /// Context the extractor added.
    pub added_context: Vec<String>,
    /// The document's own title: never an entity (D96/D134).
    pub document_title: String,
    /// The claim's source-asserted validity (world-time hints).
    pub validity: Validity,
}

/// A reference to an entity in the claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntityRef {
    /// The canonical name form (full name, as the claim best identifies it).
    pub name: String,
    /// The surface as written in the claim.
    pub surface: String,
    /// Byte offset of `surface` in the claim text, when it occurs verbatim.
    pub start: Option<usize>,
    /// Byte offset one past the end.
    pub end: Option<usize>,
}

/// A relation between two referenced entities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelationDraft {
    /// Index into [`NormalizedClaim::entities`].
    pub subject: usize,
    /// A registry predicate or `other:<text>` (D5).
    pub predicate: Predicate,
    /// Index into [`NormalizedClaim::entities`].
    pub object: usize,
    /// One readable sentence stating the relation (the fact label).
    pub label: String,
}

/// A statement about one referenced entity (D43); an attributed stance is an
/// observation on its holder (D59).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservationDraft {
    /// Index into [`NormalizedClaim::entities`].
    pub entity: usize,
    /// The standalone statement.
    pub statement: String,
}

/// A normalizer's output for one claim. Every index is in range.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct NormalizedClaim {
    /// Entity references.
    pub entities: Vec<EntityRef>,
    /// Relations.
    pub relations: Vec<RelationDraft>,
    /// Observations.
    pub observations: Vec<ObservationDraft>,
}

/// The chat normalization prompt generation; part of the normalizer version.
pub const NORMALIZE_PROMPT_VERSION: &str = "normalize-2026.11a";

const NORMALIZE_SYSTEM: &str = "You are the normalization stage of an agent memory.
You read ONE claim: a standalone sentence a source asserted. A claim is testimony and never
changes. You turn it into facts, the memory's current beliefs, which later claims may confirm or
contradict. Facts are of two kinds: relations between two entities, and observations about one
entity. Use only what the claim says (and the added context shown with it); no outside knowledge.

ENTITIES
List every entity the claim refers to: people, organizations, places, products, projects,
events, works, named topics.
- name: the canonical full name, as the claim best identifies it (\"Alice Martin\", \"Acme\").
  Entities have no type; do not add one to the name.
- surface: the exact text as written in the claim for that reference, character for character
  (\"Acme\" for \"Acme's\").
- Never list pronouns (he, she, they, it, we, I), bare head nouns (\"the company\", \"the team\",
  \"the project\") or dates, months, quarters and fiscal periods (\"March\", \"Q1\", \"FY2023\").
- Never list the document's own title, which is given: the document is the source, not a subject.
- List each entity once.

RELATIONS
A relation links two DIFFERENT listed entities: subject and object are indices into entities.
predicate is one of the registry predicates below, in the stated subject -> object direction,
or other:<short_snake_text> (for example other:acquired) when none fits. label is one readable
sentence stating the relation (\"Alice works for Acme.\").
Make no relation from a claim that a relation does not hold, might hold or will hold, nor from
a change such as leaving: \"Alice left Acme\" is an observation on Alice, not a works_for
relation. A relation that held over a past period (\"Alice worked for Acme from 2019 to 2021.\")
is still a relation.

Registry predicates:
{predicates}
OBSERVATIONS
An observation is one standalone statement about one listed entity (entity is its index):
values and measurements with the period they cover (\"Acme's revenue was $5M in FY2023.\"),
states, attributes, roles, events and changes. Write the statement so it reads alone, naming the
entity. Do not repeat a relation as an observation; add an observation only for what the claim
says beyond its relations.

ATTRIBUTED STANCES
When someone said, believes, thinks, prefers, opposes, supports, argued or claimed something,
the stance is an observation on its HOLDER, and nothing is stated about its content.
Example: \"Bob said that Acme is going bankrupt.\" gives the entity Bob and the observation
\"Bob said that Acme is going bankrupt.\" on Bob. It gives NO entity Acme, NO relation and NO
observation about Acme: the claim does not say Acme is going bankrupt, only that Bob said so.
Contrast: \"Acme is going bankrupt.\" (no holder) gives the entity Acme and that observation on it.

TIME
Keep dates and periods in the statement and label text as the claim words them. Do not invent
dates. The world-time window of every fact is taken separately from the claim's validity, which
is shown for reference.

If the claim names no entity, answer with three empty lists. Answer with JSON only.";

/// The normalization call's JSON schema (strict-mode compatible: every object
/// forbids additional properties and requires all of its properties).
pub fn normalization_schema() -> Value {
    let index = json!({"type": "integer", "minimum": 0});
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["entities", "relations", "observations"],
        "properties": {
            "entities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name", "surface"],
                    "properties": {
                        "name": {"type": "string"},
                        "surface": {"type": "string"}
                    }
                }
            },
            "relations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["subject", "predicate", "object", "label"],
                    "properties": {
                        "subject": index.clone(),
                        "predicate": {"type": "string"},
                        "object": index.clone(),
                        "label": {"type": "string"}
                    }
                }
            },
            "observations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["entity", "statement"],
                    "properties": {
                        "entity": index,
                        "statement": {"type": "string"}
                    }
                }
            }
        }
    })
}

/// A serde enum's snake_case name (`"unknown"` when it does not serialize to a
/// string).
fn serde_name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

fn render_validity(validity: &Validity) -> String {
    let time = |t: &Option<crate::time::Timestamp>| {
        t.as_ref()
            .map_or_else(|| "unknown".to_string(), crate::time::to_rfc3339)
    };
    format!(
        "from {}, until {}, precision {}, kind {}",
        time(&validity.from),
        time(&validity.until),
        serde_name(&validity.precision),
        serde_name(&validity.kind)
    )
}

/// The normalization request for one claim. `predicates_prompt` is the
/// rendered registry, normally [`predicates::render_for_prompt`].
pub fn normalization_request(input: &NormalizeInput, predicates_prompt: &str) -> ChatRequest {
    let system = NORMALIZE_SYSTEM.replace("{predicates}", predicates_prompt);
    let mut user = String::new();
    user.push_str(&format!("Document title: {}\n", input.document_title));
    user.push_str(&format!("Claim: {}\n", input.claim_text));
    if input.added_context.is_empty() {
        user.push_str("Added context: none\n");
    } else {
        user.push_str("Added context (inserted by the extractor):\n");
        for c in &input.added_context {
            user.push_str(&format!("- {c}\n"));
        }
    }
    user.push_str(&format!(
        "Claim validity: {}\n",
        render_validity(&input.validity)
    ));
    user.push_str("Return the entities, relations and observations of this claim.");
    ChatRequest::new(
        "normalize",
        system,
        user,
        "normalization",
        normalization_schema(),
    )
}

/// Where `surface` occurs in `text`: the first exact occurrence, else the first
/// case-insensitive one (compared character by character with Unicode
/// lowercase), as exact byte offsets into `text`.
fn find_surface(text: &str, surface: &str) -> Option<(usize, usize)> {
    if surface.is_empty() {
        return None;
    }
    if let Some(start) = text.find(surface) {
        return Some((start, start + surface.len()));
    }
    let eq = |a: char, b: char| a == b || a.to_lowercase().eq(b.to_lowercase());
    for (start, _) in text.char_indices() {
        let mut hay = text[start..].char_indices();
        let mut matched = true;
        let mut end = start;
        for n in surface.chars() {
            match hay.next() {
                Some((i, h)) if eq(h, n) => end = start + i + h.len_utf8(),
                _ => {
                    matched = false;
                    break;
                }
            }
        }
        if matched {
            return Some((start, end));
        }
    }
    None
}

fn index_of(item: &Value, key: &str, len: usize, what: &str) -> Result<usize, String> {
    let raw = item[key]
        .as_u64()
        .ok_or_else(|| format!("{what} {key} is not a non-negative integer: {}", item[key]))?;
    usize::try_from(raw)
        .ok()
        .filter(|&i| i < len)
        .ok_or_else(|| format!("{what} {key} index {raw} is out of range ({len} entities)"))
}

/// Parse a normalization answer.
///
/// The answer is validated against [`normalization_schema`]; an index out of
/// range or a relation whose subject equals its object is an error. Predicates
/// go through [`Predicate::parse`], falling back to [`predicates::resolve`].
/// Entities with an empty name and surface, or whose name or surface has the
/// document title's lemma, are dropped together with the relations and
/// observations that reference them; entities are deduplicated by the lemma of
/// their name (the first wins) and every index is remapped. `start`/`end` locate
/// the surface in the claim (first exact occurrence, else a case-insensitive
/// one, whose exact text then becomes the surface; else none). A relation whose
/// ends collapse to one entity, and exact duplicate relations and observations,
/// are dropped; an empty label is replaced by a generated one.
pub fn parse_normalization(
    value: &Value,
    input: &NormalizeInput,
) -> Result<NormalizedClaim, String> {
    validate_json(&normalization_schema(), value)
        .map_err(|v| format!("normalization answer does not match its schema: {v}"))?;
    let empty = Vec::new();
    let raw_entities = value["entities"].as_array().unwrap_or(&empty);
    let raw_relations = value["relations"].as_array().unwrap_or(&empty);
    let raw_observations = value["observations"].as_array().unwrap_or(&empty);
    let n = raw_entities.len();

    // Check every index first: an answer with a broken reference is rejected.
    let mut relations = Vec::with_capacity(raw_relations.len());
    for (i, r) in raw_relations.iter().enumerate() {
        let what = format!("relation {i}");
        let subject = index_of(r, "subject", n, &what)?;
        let object = index_of(r, "object", n, &what)?;
        if subject == object {
            return Err(format!(
                "relation {i} has the same entity ({subject}) as subject and object"
            ));
        }
        let text = r["predicate"].as_str().unwrap_or_default();
        let predicate = Predicate::parse(text).unwrap_or_else(|_| predicates::resolve(text));
        let label = r["label"].as_str().unwrap_or_default().trim().to_string();
        relations.push((subject, predicate, object, label));
    }
    let mut observations = Vec::with_capacity(raw_observations.len());
    for (i, o) in raw_observations.iter().enumerate() {
        let entity = index_of(o, "entity", n, &format!("observation {i}"))?;
        let statement = o["statement"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        observations.push((entity, statement));
    }

    // Entities: drop the title and empty names, dedupe by lemma, remap.
    let title = lemma(&input.document_title);
    let mut out = NormalizedClaim::default();
    let mut lemmas: Vec<String> = Vec::new();
    let mut map: Vec<Option<usize>> = Vec::with_capacity(n);
    for e in raw_entities {
        let surface = e["surface"].as_str().unwrap_or_default().trim();
        let mut name = e["name"].as_str().unwrap_or_default().trim();
        if name.is_empty() {
            name = surface;
        }
        let l = lemma(name);
        if l.is_empty() || l == title || (!surface.is_empty() && lemma(surface) == title) {
            map.push(None);
            continue;
        }
        if let Some(existing) = lemmas.iter().position(|x| *x == l) {
            map.push(Some(existing));
            continue;
        }
        let span = find_surface(&input.claim_text, surface);
        let surface = match span {
            Some((s, t)) => input.claim_text[s..t].to_string(),
            None => surface.to_string(),
        };
        lemmas.push(l);
        out.entities.push(EntityRef {
            name: name.to_string(),
            surface,
            start: span.map(|(s, _)| s),
            end: span.map(|(_, t)| t),
        });
        map.push(Some(out.entities.len() - 1));
    }

    for (subject, predicate, object, label) in relations {
        let (Some(subject), Some(object)) = (map[subject], map[object]) else {
            continue;
        };
        if subject == object
            || out
                .relations
                .iter()
                .any(|r| r.subject == subject && r.object == object && r.predicate == predicate)
        {
            continue;
        }
        let label = if label.is_empty() {
            format!(
                "{} {} {}.",
                out.entities[subject].name,
                predicate
                    .as_str()
                    .trim_start_matches("other:")
                    .replace('_', " "),
                out.entities[object].name
            )
        } else {
            label
        };
        out.relations.push(RelationDraft {
            subject,
            predicate,
            object,
            label,
        });
    }
    for (entity, statement) in observations {
        let Some(entity) = map[entity] else {
            continue;
        };
        if statement.is_empty()
            || out
                .observations
                .iter()
                .any(|o| o.entity == entity && o.statement == statement)
        {
            continue;
        }
        out.observations
            .push(ObservationDraft { entity, statement });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{Precision, ValidityKind};

    fn input() -> NormalizeInput {
        NormalizeInput {
            claim_text: "Alice has worked for Acme since March 2024, says the Weekly Update."
                .to_string(),
            added_context: vec!["Alice".to_string()],
            document_title: "Weekly Update".to_string(),
            validity: Validity {
                from: crate::time::parse_rfc3339("2024-03-01T00:00:00Z"),
                until: None,
                precision: Precision::Open,
                kind: ValidityKind::State,
            },
        }
    }

    fn plain_input(claim: &str) -> NormalizeInput {
        NormalizeInput {
            claim_text: claim.to_string(),
            added_context: Vec::new(),
            document_title: "Notes".to_string(),
            validity: Validity::unknown(ValidityKind::Event),
        }
    }

    #[test]
    fn prompt_snapshot() {
        let req = normalization_request(&input(), &predicates::render_for_prompt());
        assert_eq!(req.call_key, "normalize");
        assert!(req.system.contains("- works_for: "));
        assert!(!req.system.contains("{predicates}"));
        let rendered = format!(
            "SYSTEM\n{}\n\nUSER\n{}\n\nSCHEMA {}\n{}\n",
            req.system,
            req.user,
            req.schema_name,
            serde_json::to_string_pretty(&req.schema).unwrap()
        );
        insta::assert_snapshot!("normalize_prompt", rendered);
    }

    #[test]
    fn unknown_validity_renders_unknown() {
        let req = normalization_request(&plain_input("Alice met Bob."), "");
        assert!(req.user.contains(
            "Claim validity: from unknown, until unknown, precision unknown, kind event"
        ));
        assert!(req.user.contains("Added context: none"));
    }

    /// Every object in the schema forbids extra properties and requires all of
    /// its properties (strict structured-output mode).
    #[test]
    fn schema_is_strict_compatible() {
        fn check(v: &Value) {
            match v {
                Value::Object(map) => {
                    if map.get("type") == Some(&json!("object")) {
                        assert_eq!(map.get("additionalProperties"), Some(&json!(false)));
                        let props: Vec<&String> =
                            map["properties"].as_object().unwrap().keys().collect();
                        let required: Vec<&str> = map["required"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_str().unwrap())
                            .collect();
                        assert_eq!(props.len(), required.len());
                        for p in props {
                            assert!(required.contains(&p.as_str()), "{p}");
                        }
                    }
                    map.values().for_each(check);
                }
                Value::Array(items) => items.iter().for_each(check),
                _ => {}
            }
        }
        check(&normalization_schema());
    }

    #[test]
    fn a_good_answer_parses() {
        let inp = input();
        let answer = json!({
            "entities": [
                {"name": "Alice", "surface": "Alice"},
                {"name": "Acme Corporation", "surface": "Acme"}
            ],
            "relations": [
                {"subject": 0, "predicate": "works_for", "object": 1, "label": "Alice works for Acme."}
            ],
            "observations": [
                {"entity": 0, "statement": "Alice has worked for Acme since March 2024."}
            ]
        });
        let n = parse_normalization(&answer, &inp).unwrap();
        assert_eq!(n.entities.len(), 2);
        assert_eq!(n.entities[1].name, "Acme Corporation");
        let (s, t) = (n.entities[1].start.unwrap(), n.entities[1].end.unwrap());
        assert_eq!(&inp.claim_text[s..t], "Acme");
        assert_eq!(n.relations[0].predicate.as_str(), "works_for");
        assert_eq!((n.relations[0].subject, n.relations[0].object), (0, 1));
        assert_eq!(n.observations[0].entity, 0);
        assert!(validate_json(&normalization_schema(), &answer).is_ok());
    }

    #[test]
    fn schema_violations_and_bad_indices_are_errors() {
        let inp = plain_input("Alice met Bob.");
        let ents =
            json!([{"name": "Alice", "surface": "Alice"}, {"name": "Bob", "surface": "Bob"}]);
        let out_of_range = json!({
            "entities": ents,
            "relations": [{"subject": 0, "predicate": "knows", "object": 2, "label": "x"}],
            "observations": []
        });
        let err = parse_normalization(&out_of_range, &inp).unwrap_err();
        assert!(err.contains("out of range"), "{err}");
        let bad_obs = json!({
            "entities": ents, "relations": [],
            "observations": [{"entity": 7, "statement": "Alice is tall."}]
        });
        assert!(
            parse_normalization(&bad_obs, &inp)
                .unwrap_err()
                .contains("out of range")
        );
        let self_rel = json!({
            "entities": ents,
            "relations": [{"subject": 1, "predicate": "knows", "object": 1, "label": "x"}],
            "observations": []
        });
        assert!(
            parse_normalization(&self_rel, &inp)
                .unwrap_err()
                .contains("same entity")
        );
        let negative = json!({
            "entities": ents,
            "relations": [{"subject": -1, "predicate": "knows", "object": 1, "label": "x"}],
            "observations": []
        });
        assert!(parse_normalization(&negative, &inp).is_err());
        let missing = json!({"entities": ents, "relations": []});
        assert!(
            parse_normalization(&missing, &inp)
                .unwrap_err()
                .contains("schema")
        );
        let extra = json!({
            "entities": [{"name": "Alice", "surface": "Alice", "type": "person"}],
            "relations": [], "observations": []
        });
        assert!(parse_normalization(&extra, &inp).is_err());
    }

    #[test]
    fn predicates_map_to_the_registry_or_other() {
        let inp = plain_input("Acme acquired Globex in 2024.");
        let answer = json!({
            "entities": [{"name": "Acme", "surface": "Acme"}, {"name": "Globex", "surface": "Globex"}],
            "relations": [
                {"subject": 0, "predicate": "acquired", "object": 1, "label": "Acme acquired Globex."},
                {"subject": 0, "predicate": "other:Partnered With", "object": 1, "label": ""},
                {"subject": 1, "predicate": "located in", "object": 0, "label": "Globex is in Acme."},
                {"subject": 0, "predicate": "OTHER:Rival-of", "object": 1, "label": "Rivals."}
            ],
            "observations": []
        });
        let n = parse_normalization(&answer, &inp).unwrap();
        let preds: Vec<String> = n
            .relations
            .iter()
            .map(|r| r.predicate.as_str().into_owned())
            .collect();
        assert_eq!(
            preds,
            [
                "other:acquired",
                "other:partnered_with",
                "located_in",
                "other:rival_of"
            ]
        );
        assert_eq!(n.relations[1].label, "Acme partnered with Globex.");
    }

    #[test]
    fn the_title_entity_is_dropped_and_indices_remapped() {
        let inp = NormalizeInput {
            document_title: "The Weekly Update".to_string(),
            ..input()
        };
        let answer = json!({
            "entities": [
                {"name": "Weekly Update", "surface": "Weekly Update"},
                {"name": "Alice", "surface": "alice"},
                {"name": "Acme", "surface": "Acme"},
                {"name": "ACME", "surface": "Acme"},
                {"name": "Nobody", "surface": "Nobody"}
            ],
            "relations": [
                {"subject": 0, "predicate": "about", "object": 1, "label": "The update is about Alice."},
                {"subject": 1, "predicate": "works_for", "object": 3, "label": "Alice works for Acme."},
                {"subject": 2, "predicate": "related_to", "object": 3, "label": "Acme is Acme."}
            ],
            "observations": [
                {"entity": 0, "statement": "The Weekly Update is weekly."},
                {"entity": 4, "statement": "Nobody is here."},
                {"entity": 1, "statement": "  "}
            ]
        });
        let n = parse_normalization(&answer, &inp).unwrap();
        let names: Vec<&str> = n.entities.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Alice", "Acme", "Nobody"]);
        // Case-insensitive match: exact offsets, and the surface is the claim's text.
        assert_eq!(n.entities[0].surface, "Alice");
        assert_eq!((n.entities[0].start, n.entities[0].end), (Some(0), Some(5)));
        assert_eq!((n.entities[2].start, n.entities[2].end), (None, None));
        assert_eq!(n.relations.len(), 1);
        assert_eq!((n.relations[0].subject, n.relations[0].object), (0, 1));
        assert_eq!(n.relations[0].predicate.as_str(), "works_for");
        assert_eq!(
            n.observations,
            [ObservationDraft {
                entity: 2,
                statement: "Nobody is here.".to_string()
            }]
        );
    }

    #[test]
    fn surfaces_are_found_exactly() {
        assert_eq!(find_surface("Zoë met ZOË", "zoë"), Some((0, 4)));
        assert_eq!(find_surface("met ZOË", "zoë"), Some((4, 8)));
        assert_eq!(find_surface("abc", ""), None);
        assert_eq!(find_surface("abc", "abcd"), None);
        assert_eq!(find_surface("🎉x", "X"), Some((4, 5)));
    }
}
