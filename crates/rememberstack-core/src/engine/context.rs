//! The assured operations (D87, D97, D114): `resolve_entity`,
//! `claims_and_sources_context`, `facts_context` and `combined_context`, their
//! registry (D50) and their inputs. Zero LLM: reads embed the query at most.

use super::*;
use crate::entities::normalize::{daitch_mokotoff, lemma, rank_candidates, trigrams};
use crate::entities::{BlockingQuery, BlockingTier, EntityRecord};
use crate::facts::{FactFilter, FactRecord};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Most anchored entities an operation accepts.
pub const MAX_ANCHORS: usize = 20;
/// Default `k` of the context operations.
pub const DEFAULT_CONTEXT_K: usize = 10;
/// Default `k` of `resolve_entity`.
pub const DEFAULT_RESOLVE_K: usize = 5;

/// The time scope of a facts read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemporalScope {
    /// `current` (default), `at`, `overlap` or `history`.
    pub mode: String,
    /// The instant of `at` (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The start of `overlap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The end of `overlap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// A validated scope.
#[derive(Clone, Debug, PartialEq)]
enum Scope {
    Current,
    At(Timestamp),
    Overlap(Option<Timestamp>, Option<Timestamp>),
    History,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidParameter, message)
}

impl TemporalScope {
    fn validate(&self) -> Result<Scope> {
        let instant = |name: &str, v: &Option<String>| -> Result<Option<Timestamp>> {
            v.as_deref()
                .map(|s| {
                    crate::time::parse_rfc3339(s).ok_or_else(|| {
                        invalid(format!(
                            "temporal_scope.{name} `{s}` is not an RFC 3339 instant"
                        ))
                    })
                })
                .transpose()
        };
        let (at, from, to) = (
            instant("at", &self.at)?,
            instant("from", &self.from)?,
            instant("to", &self.to)?,
        );
        match self.mode.as_str() {
            "current" | "history" if at.is_some() || from.is_some() || to.is_some() => {
                Err(invalid(format!(
                    "temporal_scope mode `{}` takes no instants",
                    self.mode
                )))
            }
            "current" => Ok(Scope::Current),
            "history" => Ok(Scope::History),
            "at" => match (at, from, to) {
                (Some(t), None, None) => Ok(Scope::At(t)),
                _ => Err(invalid(
                    "temporal_scope mode `at` needs `at` (and nothing else)",
                )),
            },
            "overlap" => match (at, from, to) {
                (None, None, None) => Err(invalid(
                    "temporal_scope mode `overlap` needs `from`, `to` or both",
                )),
                (None, Some(f), Some(t)) if f >= t => {
                    Err(invalid("temporal_scope `from` must be before `to`"))
                }
                (None, f, t) => Ok(Scope::Overlap(f, t)),
                _ => Err(invalid(
                    "temporal_scope mode `overlap` takes `from` and `to`, not `at`",
                )),
            },
            other => Err(invalid(format!(
                "temporal_scope mode `{other}` is not one of current, at, overlap, history"
            ))),
        }
    }
}

impl Scope {
    fn echo(&self, evaluated_at: Timestamp) -> ScopeEcho {
        let (mode, at, from, to) = match self {
            Scope::Current => ("current", None, None, None),
            Scope::At(t) => ("at", Some(*t), None, None),
            Scope::Overlap(f, t) => ("overlap", None, *f, *t),
            Scope::History => ("history", None, None, None),
        };
        ScopeEcho {
            mode: mode.into(),
            at,
            from,
            to,
            evaluated_at,
        }
    }
    fn filter(&self, ns: NamespaceId, entities: Vec<EntityId>) -> FactFilter {
        FactFilter {
            namespace_id: ns,
            entities,
            at: match self {
                Scope::At(t) => Some(*t),
                _ => None,
            },
            history: *self == Scope::History,
            overlap: match self {
                Scope::Overlap(f, t) => Some((*f, *t)),
                _ => None,
            },
            documents: None,
            group: None,
            unsupported: false,
        }
    }
}

/// `resolve_entity` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveEntityInput {
    /// The name to resolve.
    pub name: String,
    /// At most this many candidates (1–20, default 5).
    #[serde(default)]
    pub k: Option<usize>,
}

/// `claims_and_sources_context` input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsAndSourcesInput {
    /// The question.
    pub query: String,
    /// Anchor entities (1–20 unique ids): only evidence about them.
    #[serde(default)]
    pub entity_ids: Option<Vec<String>>,
    /// Results (1–100, default 10).
    #[serde(default)]
    pub k: Option<usize>,
    /// A character budget: results are fitted by whole items.
    #[serde(default)]
    pub budget: Option<usize>,
    /// A continuation from a previous page of the same request.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Record a durable recall receipt of the selection (`receipt_id` in the envelope).
    #[serde(default)]
    pub record_receipt: Option<bool>,
    /// The caller's request id: a replay returns the original receipt.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Who the recall is for (kept in the receipt).
    #[serde(default)]
    pub subject: Option<String>,
    /// What the recall is for (kept in the receipt).
    #[serde(default)]
    pub purpose: Option<String>,
}

/// `facts_context` input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactsContextInput {
    /// The question.
    pub query: String,
    /// Anchor entities (1–20 unique ids): their neighbourhood plus fact-text search.
    #[serde(default)]
    pub entity_ids: Option<Vec<String>>,
    /// The time scope (default `current`).
    #[serde(default)]
    pub temporal_scope: Option<TemporalScope>,
    /// Results (1–100, default 10).
    #[serde(default)]
    pub k: Option<usize>,
    /// A character budget: results are fitted by whole items.
    #[serde(default)]
    pub budget: Option<usize>,
    /// A continuation from a previous page of the same request.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Record a durable recall receipt of the selection (`receipt_id` in the envelope).
    #[serde(default)]
    pub record_receipt: Option<bool>,
    /// The caller's request id: a replay returns the original receipt.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Who the recall is for (kept in the receipt).
    #[serde(default)]
    pub subject: Option<String>,
    /// What the recall is for (kept in the receipt).
    #[serde(default)]
    pub purpose: Option<String>,
}

/// `combined_context` input: exactly these parameters (D87).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CombinedContextInput {
    /// The question.
    pub query: String,
    /// Anchor entities.
    #[serde(default)]
    pub entity_ids: Option<Vec<String>>,
    /// The time scope of the facts child.
    #[serde(default)]
    pub temporal_scope: Option<TemporalScope>,
}

/// One operation of the registry.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationDescriptor {
    /// The name.
    pub name: String,
    /// When an agent should use it.
    pub description: String,
    /// JSON schema of the input.
    pub input_schema: Value,
    /// The grain of its results.
    pub grain: String,
    /// Its version.
    pub version: u32,
}

fn entity_ids_schema() -> Value {
    json!({"type": "array", "items": {"type": "string", "format": "uuid"},
           "minItems": 1, "maxItems": MAX_ANCHORS, "uniqueItems": true,
           "description": "Anchor entities (ids from resolve_entity)."})
}

fn scope_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["mode"],
           "properties": {
               "mode": {"type": "string", "enum": ["current", "at", "overlap", "history"]},
               "at": {"type": "string", "format": "date-time"},
               "from": {"type": "string", "format": "date-time"},
               "to": {"type": "string", "format": "date-time"}},
           "description": "current (default): what holds now; at: what held at an instant; overlap: what held at some point in [from, to); history: everything, closed and superseded included."})
}

/// The operation registry: exactly the four assured operations (D50, D87).
pub fn operations() -> Vec<OperationDescriptor> {
    let query =
        json!({"type": "string", "minLength": 1, "description": "The question, in plain words."});
    let k = json!({"type": "integer", "minimum": 1, "maximum": 100});
    let budget = json!({"type": "integer", "minimum": 1, "description": "Fit results to this many characters, whole items only."});
    let cursor = json!({"type": "string", "description": "The continuation of a previous page of the same request."});
    let record_receipt = json!({"type": "boolean", "description": "Record a durable recall receipt of the selection (receipt_id in the envelope)."});
    let request_id = json!({"type": "string", "minLength": 1, "maxLength": 200, "description": "Your request id: a replay returns the original receipt."});
    let subject =
        json!({"type": "string", "description": "Who the recall is for (kept in the receipt)."});
    let purpose =
        json!({"type": "string", "description": "What the recall is for (kept in the receipt)."});
    vec![
        OperationDescriptor {
            name: "resolve_entity".into(),
            description: "Find the entities a name may refer to, ranked, with aliases and profiles. Use it to turn a person, organisation or thing named in a question into entity ids for the other operations. Several candidates mean the name is ambiguous: choose by profile; nothing is guessed.".into(),
            input_schema: json!({"type": "object", "additionalProperties": false, "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1}, "k": {"type": "integer", "minimum": 1, "maximum": 20}}}),
            grain: "entity".into(),
            version: 1,
        },
        OperationDescriptor {
            name: "claims_and_sources_context".into(),
            description: "What sources said: claims with their exact spans and the source passages, ranked for the question (semantic and lexical search, fused). Use it for quotes, details, dates and anything a fact summary may miss; anchor it with entity_ids to keep to one person or thing.".into(),
            input_schema: json!({"type": "object", "additionalProperties": false, "required": ["query"],
                "properties": {"query": query, "entity_ids": entity_ids_schema(), "k": k, "budget": budget, "cursor": cursor,
                    "record_receipt": record_receipt, "request_id": request_id, "subject": subject, "purpose": purpose}}),
            grain: "evidence".into(),
            version: 1,
        },
        OperationDescriptor {
            name: "facts_context".into(),
            description: "What is believed: relations and observations with their world-time windows, evidence counts and contradictions, for the question and the anchored entities' neighbourhood. Use temporal_scope for 'now', 'as of' and 'history' questions.".into(),
            input_schema: json!({"type": "object", "additionalProperties": false, "required": ["query"],
                "properties": {"query": query, "entity_ids": entity_ids_schema(), "temporal_scope": scope_schema(), "k": k, "budget": budget, "cursor": cursor,
                    "record_receipt": record_receipt, "request_id": request_id, "subject": subject, "purpose": purpose}}),
            grain: "fact".into(),
            version: 1,
        },
        OperationDescriptor {
            name: "combined_context".into(),
            description: "Both at once: the claims_and_sources_context and facts_context answers for one question, as a ContextBundle/v2. Use it when unsure which one you need.".into(),
            input_schema: json!({"type": "object", "additionalProperties": false, "required": ["query"],
                "properties": {"query": query, "entity_ids": entity_ids_schema(), "temporal_scope": scope_schema()}}),
            grain: "bundle".into(),
            version: 1,
        },
    ]
}

/// Parse an operation input, refusing anything off-schema with `invalid_parameter`.
fn parse_input<T: serde::de::DeserializeOwned>(name: &str, input: Value) -> Result<T> {
    serde_json::from_value(input).map_err(|e| invalid(format!("{name}: {e}")))
}

fn check_k(k: Option<usize>, default: usize, max: usize) -> Result<usize> {
    match k {
        None => Ok(default),
        Some(k) if (1..=max).contains(&k) => Ok(k),
        Some(k) => Err(invalid(format!("k = {k} is out of range 1..={max}"))),
    }
}

fn check_query(q: &str) -> Result<()> {
    if q.trim().is_empty() {
        return Err(invalid("query is empty"));
    }
    crate::limits::check_query_len("query", q)
}

fn check_budget(b: Option<usize>) -> Result<Option<usize>> {
    match b {
        Some(0) => Err(invalid("budget must be at least 1 character")),
        other => Ok(other),
    }
}

/// Parse anchor ids: 1–20 unique UUIDs.
fn parse_anchors(ids: &Option<Vec<String>>) -> Result<Vec<EntityId>> {
    let Some(ids) = ids else { return Ok(vec![]) };
    if ids.is_empty() || ids.len() > MAX_ANCHORS {
        return Err(invalid(format!(
            "entity_ids takes 1 to {MAX_ANCHORS} ids, got {}",
            ids.len()
        )));
    }
    let mut out = Vec::with_capacity(ids.len());
    for s in ids {
        let id: EntityId = s
            .parse()
            .map_err(|_| invalid(format!("entity_ids: `{s}` is not a UUID")))?;
        if out.contains(&id) {
            return Err(invalid(format!("entity_ids: `{s}` is listed twice")));
        }
        out.push(id);
    }
    Ok(out)
}

/// The page offset of a request: 0, or the cursor's, which must belong to the same
/// request (`digest` over the query, anchors and scope).
fn page_offset(key: &[u8; 32], cursor: &Option<String>, digest: &str) -> Result<usize> {
    let Some(c) = cursor else { return Ok(0) };
    let cur = decode_cursor(key, c)?;
    if cur.q != digest {
        return Err(invalid(
            "the cursor belongs to another request: repeat the request that produced it",
        ));
    }
    Ok(cur.o)
}

/// The continuation after `offset + returned` of `available`, if any remain.
fn continuation(
    key: &[u8; 32],
    offset: usize,
    returned: usize,
    available: usize,
    digest: &str,
) -> Option<String> {
    let next = offset + returned;
    (returned > 0 && available > next).then(|| {
        encode_cursor(
            key,
            &Cursor {
                o: next,
                d: 1,
                q: digest.to_string(),
            },
        )
    })
}

/// Anchors confirmed as current survivors, with every entity merged into them.
enum Anchors {
    None,
    Unknown(Vec<EntityId>),
    Confirmed {
        roots: Vec<EntityId>,
        members: Vec<EntityId>,
    },
}

impl Engine {
    async fn confirm_anchors(&self, ns: Option<NamespaceId>, ids: &[EntityId]) -> Result<Anchors> {
        if ids.is_empty() {
            return Ok(Anchors::None);
        }
        let Some(ns) = ns else {
            return Ok(Anchors::Unknown(ids.to_vec()));
        };
        let found = self.store.entities(ns, ids).await?;
        let unknown: Vec<EntityId> = ids
            .iter()
            .copied()
            .filter(|id| {
                !found
                    .iter()
                    .any(|e| e.entity_id == *id && e.merged_into.is_none())
            })
            .collect();
        if !unknown.is_empty() {
            return Ok(Anchors::Unknown(unknown));
        }
        let mut members = Vec::new();
        for id in ids {
            for m in self.members(ns, *id).await? {
                if !members.contains(&m) {
                    members.push(m);
                }
            }
        }
        Ok(Anchors::Confirmed {
            roots: ids.to_vec(),
            members,
        })
    }

    fn unknown_entity<R>(&self, op: &str, namespace: &str, unknown: &[EntityId]) -> Envelope<R> {
        let mut env = self.empty_envelope(op, namespace);
        env.negative = Some(Negative {
            kind: "unknown_entity".into(),
            message: format!(
                "{} of the entity_ids {} not a current entity of this namespace (unknown, merged away or forgotten); nothing was searched",
                unknown.len(),
                if unknown.len() == 1 { "is" } else { "are" }
            ),
            limitation: None,
            best_relevance: None,
        });
        env
    }

    /// `known_empty` or `boundary` for an envelope without results.
    fn negative_for<R>(&self, env: &mut Envelope<R>) {
        if !env.results.is_empty() {
            return;
        }
        let pending: u64 = env.freshness.pending_work.values().sum();
        env.negative = Some(if !env.freshness.semantic.ready {
            Negative {
                kind: "boundary".into(),
                message: "nothing found, but the semantic channel does not cover every record yet"
                    .into(),
                limitation: Some("semantic_channel_unready".into()),
                best_relevance: None,
            }
        } else if pending > 0 {
            Negative {
                kind: "boundary".into(),
                message: format!(
                    "nothing found, but {pending} work items are still pending: sources may not be processed yet"
                ),
                limitation: Some("pending_work".into()),
                best_relevance: None,
            }
        } else {
            Negative {
                kind: "known_empty".into(),
                message: "everything eligible was searched and nothing matches".into(),
                limitation: None,
                best_relevance: None,
            }
        });
    }

    /// `no_relevant_memory` for a first page whose results all score below the
    /// relevance floor: they stay listed, and the negative says they are weak
    /// guesses. `judge` gives a result's relevance and text; a relevance of `None`
    /// marks a result listed for another reason than the question, and a result
    /// whose text holds every content term of the question is a match in words
    /// (names and rare words a model may not place): either keeps the answer from
    /// being weak.
    fn weak_answer<R>(
        &self,
        env: &mut Envelope<R>,
        first_page: bool,
        query: &str,
        judge: impl Fn(&R) -> (Option<f64>, &str),
    ) {
        if !first_page || env.negative.is_some() || env.results.is_empty() {
            return;
        }
        let terms = crate::text::lexical_terms(query);
        let mut best: f64 = 0.0;
        for r in &env.results {
            let (relevance, text) = judge(r);
            let Some(x) = relevance else { return };
            best = best.max(x);
            if !terms.is_empty() {
                let held = crate::text::lexical_terms(text);
                if terms.iter().all(|t| held.iter().any(|w| same_word(t, w))) {
                    return;
                }
            }
        }
        let floor = self.config.relevance.floor;
        if best < floor {
            env.negative = Some(Negative {
                kind: "no_relevant_memory".into(),
                message: format!(
                    "nothing remembered is about this: the best result's relevance is {best}, \
                     below the floor {floor}; the results are listed as weak guesses"
                ),
                limitation: None,
                best_relevance: Some(best),
            });
        }
    }

    /// Run an operation of the registry by name with its JSON input.
    pub async fn run_operation(&self, namespace: &str, name: &str, input: Value) -> Result<Value> {
        let to_value = |v: std::result::Result<Value, serde_json::Error>| {
            v.map_err(|e| Error::internal(e.to_string()))
        };
        match name {
            "resolve_entity" => {
                let env = self
                    .resolve_entity(namespace, parse_input(name, input)?)
                    .await?;
                to_value(serde_json::to_value(env))
            }
            "claims_and_sources_context" => {
                let env = self
                    .claims_and_sources_context(namespace, parse_input(name, input)?)
                    .await?;
                to_value(serde_json::to_value(env))
            }
            "facts_context" => {
                let env = self
                    .facts_context(namespace, parse_input(name, input)?)
                    .await?;
                to_value(serde_json::to_value(env))
            }
            "combined_context" => {
                let bundle = self
                    .combined_context(namespace, parse_input(name, input)?)
                    .await?;
                to_value(serde_json::to_value(bundle))
            }
            other => Err(Error::new(
                ErrorCode::NotFound,
                format!(
                    "no operation `{other}`: use resolve_entity, claims_and_sources_context, facts_context or combined_context"
                ),
            )),
        }
    }

    /// `resolve_entity`: ranked current entities for a name (T0–T2 blocking, D103
    /// order, the profile similarity as a T3 signal); ambiguity is explicit.
    pub async fn resolve_entity(
        &self,
        namespace: &str,
        input: ResolveEntityInput,
    ) -> Result<Envelope<EntityResult>> {
        const OP: &str = "resolve_entity";
        validate_namespace(namespace)?;
        let k = check_k(input.k, DEFAULT_RESOLVE_K, 20)?;
        let name = input.name.trim();
        crate::limits::check_query_len("name", name)?;
        let name_lemma = lemma(name);
        if name_lemma.is_empty() {
            return Err(invalid("name is empty"));
        }
        let applied = json!({"name": name, "k": k});
        let Some(ns) = self.store.namespace(namespace).await? else {
            let mut env = self.empty_envelope(OP, namespace);
            env.grain = Grain::Entity;
            env.applied = Some(applied);
            self.negative_for(&mut env);
            return Ok(env);
        };
        let mut grams = trigrams(&name_lemma);
        grams.sort();
        grams.dedup();
        let blocking = self
            .store
            .block_entities(&BlockingQuery {
                namespace_id: ns.id,
                lemma: name_lemma.clone(),
                trigrams: grams,
                phonetic: daitch_mokotoff(name),
                limit: self.config.facts.blocking_limit,
            })
            .await?;
        // Group by active root; the redirect is disclosed.
        struct Hit {
            record: EntityRecord,
            score: f32,
            via: Vec<BlockingTier>,
            merged_from: Vec<EntityId>,
        }
        impl crate::entities::normalize::Candidate for Hit {
            fn score(&self) -> f32 {
                self.score
            }
            fn canonical_name(&self) -> &str {
                &self.record.canonical_name
            }
            fn created_at(&self) -> Timestamp {
                self.record.created_at
            }
            fn id(&self) -> uuid::Uuid {
                self.record.entity_id.uuid()
            }
        }
        let mut by_root: BTreeMap<EntityId, Hit> = BTreeMap::new();
        let hit_ids: Vec<EntityId> = blocking.hits.iter().map(|h| h.entity_id).collect();
        let roots = self.roots_of(ns.id, &hit_ids).await?;
        for hit in &blocking.hits {
            let score = match hit.via {
                BlockingTier::T0 => 1.0,
                BlockingTier::T1 => {
                    crate::entities::normalize::trigram_similarity(&name_lemma, &hit.alias_lemma)
                }
                BlockingTier::T2 => 0.5,
            };
            if hit.via == BlockingTier::T1 && score < 0.3 {
                continue;
            }
            let Some(root) = roots.get(&hit.entity_id).cloned() else {
                continue;
            };
            let entry = by_root.entry(root.entity_id).or_insert_with(|| Hit {
                record: root.clone(),
                score: 0.0,
                via: vec![],
                merged_from: vec![],
            });
            entry.score = entry.score.max(score);
            if !entry.via.contains(&hit.via) {
                entry.via.push(hit.via);
                entry.via.sort();
            }
            if hit.entity_id != root.entity_id && !entry.merged_from.contains(&hit.entity_id) {
                entry.merged_from.push(hit.entity_id);
            }
        }
        let mut hits: Vec<Hit> = by_root.into_values().collect();
        rank_candidates(&name_lemma, &mut hits);
        let total = hits.len();
        let more = total > k || blocking.truncated;
        hits.truncate(k);
        // The T3 signal: the name's embedding against each profile's.
        let generation = self.embedder.identity().generation();
        let keys: Vec<String> = hits
            .iter()
            .filter_map(|h| h.record.profile_key.clone())
            .collect();
        let vectors: HashMap<String, Vec<f32>> = self
            .store
            .vectors(ns.id, &generation, &keys)
            .await?
            .into_iter()
            .collect();
        let query = if vectors.is_empty() {
            None
        } else {
            self.query_vector(name).await.ok()
        };
        let exact = hits
            .iter()
            .filter(|h| h.via.contains(&BlockingTier::T0))
            .count();
        let results: Vec<EntityResult> = hits
            .into_iter()
            .map(|h| EntityResult {
                profile_similarity: match (&query, h.record.profile_key.as_ref()) {
                    (Some(q), Some(key)) => vectors.get(key).map(|v| crate::embed::cosine(q, v)),
                    _ => None,
                },
                entity_id: h.record.entity_id,
                canonical_name: h.record.canonical_name,
                aliases: h.record.aliases,
                profile: h.record.profile_summary,
                score: h.score,
                matched_by: h.via,
                merged_from: h.merged_from,
                mention_count: h.record.mention_count,
            })
            .collect();
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned: total.min(k),
                more_available: more,
                continuation: None,
            },
            self.freshness(ns.id, &self.component_version(Stage::Embed))
                .await?,
            BTreeMap::new(),
        );
        env.grain = Grain::Entity;
        env.applied = Some(applied);
        if exact > 1 {
            env.ambiguity = Some(format!(
                "{exact} different entities are named exactly `{name}`: choose by profile and aliases; nothing was guessed"
            ));
        } else if exact == 0 && !env.results.is_empty() {
            env.ambiguity = Some(format!(
                "no entity is named exactly `{name}`: these are similar names"
            ));
        }
        self.negative_for(&mut env);
        Ok(env)
    }

    /// The evidence rows of each fact, in the order given, read concurrently (the
    /// store's read pool answers them side by side instead of one round trip after
    /// another).
    async fn evidence_of(
        &self,
        ns: NamespaceId,
        facts: &[FactId],
    ) -> Result<Vec<Vec<crate::facts::EvidenceRecord>>> {
        let mut reads = tokio::task::JoinSet::new();
        for (i, &fact) in facts.iter().enumerate() {
            let store = self.store.clone();
            reads.spawn(async move { (i, store.fact_evidence(ns, fact).await) });
        }
        let mut out = vec![Vec::new(); facts.len()];
        while let Some(done) = reads.join_next().await {
            let (i, rows) =
                done.map_err(|e| Error::internal(format!("reading fact evidence: {e}")))?;
            out[i] = rows?;
        }
        Ok(out)
    }

    /// `claims_and_sources_context`: claims and source chunks for the question, each
    /// list searched semantically and lexically and fused, then the two fused.
    pub async fn claims_and_sources_context(
        &self,
        namespace: &str,
        input: ClaimsAndSourcesInput,
    ) -> Result<Envelope<EvidenceResult>> {
        const OP: &str = "claims_and_sources_context";
        validate_namespace(namespace)?;
        check_query(&input.query)?;
        let k = check_k(input.k, DEFAULT_CONTEXT_K, self.config.max_k.min(100))?;
        let budget = check_budget(input.budget)?;
        let anchors = parse_anchors(&input.entity_ids)?;
        let applied =
            json!({"query": input.query.trim(), "entity_ids": anchors, "k": k, "budget": budget});
        let ns = self.store.namespace(namespace).await?.map(|n| n.id);
        let members = match self.confirm_anchors(ns, &anchors).await? {
            Anchors::Unknown(unknown) => {
                let mut env = self.unknown_entity(OP, namespace, &unknown);
                env.applied = Some(applied);
                return Ok(env);
            }
            Anchors::Confirmed { members, .. } => members,
            Anchors::None => vec![],
        };
        let digest = sha256_hex(format!("{}|{:?}", input.query.trim(), anchors).as_bytes())[..16]
            .to_string();
        let offset = page_offset(&self.cursor_key, &input.cursor, &digest)?;
        let depth = ((offset + k) * 3).max(30).min(self.config.max_k);
        let mut req = SearchRequest::new(namespace, input.query.trim(), depth);
        req.entities = members;
        // The two channels' searches are independent reads: run them together.
        let (claims, chunks) = tokio::try_join!(self.search_claims(req.clone()), self.search(req))?;
        // Fuse the two fused lists: by rank (RRF, k = 60), or, under score fusion,
        // by their fused scores, which are on one scale; ties by id.
        let by_score = matches!(self.config.fusion, crate::fuse::Fusion::Scores { .. });
        let mut items: BTreeMap<String, (EvidenceResult, [Option<usize>; 2], f64)> =
            BTreeMap::new();
        for (i, c) in claims.results.iter().enumerate() {
            let r = EvidenceResult::Claim(c.clone());
            items.insert(r.id(), (r, [Some(i + 1), None], c.scores.fused));
        }
        for (i, c) in chunks.results.iter().enumerate() {
            let r = EvidenceResult::Chunk(c.clone());
            items.insert(r.id(), (r, [None, Some(i + 1)], c.scores.fused));
        }
        // (fused score, best rank, list: claims before chunks, id) — ties never fall to
        // random ids while content can decide.
        let mut ranked: Vec<(f64, usize, usize, String, EvidenceResult)> = items
            .into_iter()
            .map(|(id, (r, ranks, fused))| {
                let score: f64 = if by_score {
                    fused
                } else {
                    ranks
                        .iter()
                        .flatten()
                        .map(|rank| 1.0 / (crate::fuse::RRF_K + *rank as f64))
                        .sum()
                };
                let best = ranks.iter().flatten().min().copied().unwrap_or(usize::MAX);
                let list = usize::from(ranks[0].is_none());
                (score, best, list, id, r)
            })
            .collect();
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.cmp(&b.1))
                .then_with(|| a.2.cmp(&b.2))
                .then_with(|| a.3.cmp(&b.3))
        });
        let available = ranked.len();
        let saturated = claims.truncation.more_available || chunks.truncation.more_available;
        let ranked_scores: Vec<f64> = ranked.iter().skip(offset).take(k).map(|r| r.0).collect();
        let mut results: Vec<EvidenceResult> = ranked
            .into_iter()
            .skip(offset)
            .take(k)
            .map(|(.., r)| r)
            .collect();
        let mut channels = BTreeMap::new();
        for (prefix, env_channels) in [("claims", &claims.channels), ("chunks", &chunks.channels)] {
            for (name, report) in env_channels {
                channels.insert(format!("{prefix}.{name}"), report.clone());
            }
        }
        let mut drops = claims.hydration_drops.clone();
        for (reason, n) in &chunks.hydration_drops {
            *drops.entry(reason.clone()).or_insert(0) += n;
        }
        let mut freshness = chunks.freshness.clone();
        if !claims.freshness.semantic.ready {
            freshness.semantic = claims.freshness.semantic.clone();
        }
        let budget_report = budget.map(|b| {
            fit_budget(
                &mut results,
                b,
                |r| r.text().chars().count(),
                EvidenceResult::id,
            )
        });
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned: 0,
                more_available: available > offset + k || saturated,
                continuation: None,
            },
            freshness,
            channels,
        );
        env.truncation.returned = env.results.len();
        env.truncation.continuation = continuation(
            &self.cursor_key,
            offset,
            env.results.len(),
            available,
            &digest,
        );
        env.applied = Some(applied.clone());
        env.budget = budget_report;
        env.hydration_drops = drops;
        self.negative_for(&mut env);
        self.weak_answer(&mut env, offset == 0, &input.query, |r| match r {
            EvidenceResult::Claim(c) => (c.scores.relevance, c.text.as_str()),
            EvidenceResult::Chunk(c) => (c.scores.relevance, c.text.as_str()),
        });
        if input.record_receipt.unwrap_or(false) {
            let selections = env
                .results
                .iter()
                .zip(ranked_scores.iter())
                .map(|(r, score)| match r {
                    EvidenceResult::Claim(c) => ReceiptSelection {
                        kind: "claim".into(),
                        id: c.claim_id.to_string(),
                        version_id: Some(c.version_id),
                        content_digest: sha256_hex(c.text.as_bytes()),
                        score: *score,
                    },
                    EvidenceResult::Chunk(c) => ReceiptSelection {
                        kind: "chunk".into(),
                        id: c.chunk_id.to_string(),
                        version_id: Some(c.version_id),
                        content_digest: sha256_hex(c.text.as_bytes()),
                        score: *score,
                    },
                })
                .collect();
            let coverage = json!({"candidates": available, "returned": env.results.len(),
                "omitted": env.budget.as_ref().map_or(0, |b| b.omitted.len())});
            env.receipt_id = Some(
                self.record_receipt(
                    (namespace, ns),
                    OP,
                    &input.query,
                    &applied,
                    ReceiptMeta {
                        request_id: input.request_id.clone(),
                        subject: input.subject.clone(),
                        purpose: input.purpose.clone(),
                    },
                    selections,
                    coverage,
                )
                .await?,
            );
        }
        Ok(env)
    }

    /// `facts_context`: relations and observations for the question within a time
    /// scope: the anchored entities' neighbourhood plus fact-text search; candidates
    /// touching more anchors first; contradictions always shown with their co-members.
    pub async fn facts_context(
        &self,
        namespace: &str,
        input: FactsContextInput,
    ) -> Result<Envelope<FactResult>> {
        const OP: &str = "facts_context";
        validate_namespace(namespace)?;
        check_query(&input.query)?;
        let k = check_k(input.k, DEFAULT_CONTEXT_K, self.config.max_k.min(100))?;
        let budget = check_budget(input.budget)?;
        let anchors = parse_anchors(&input.entity_ids)?;
        let scope = match &input.temporal_scope {
            Some(s) => s.validate()?,
            None => Scope::Current,
        };
        let now = self.clock.now();
        let echo = scope.echo(now);
        let applied = json!({"query": input.query.trim(), "entity_ids": anchors,
            "temporal_scope": input.temporal_scope.clone().unwrap_or(TemporalScope { mode: "current".into(), at: None, from: None, to: None }),
            "k": k, "budget": budget});
        let ns = self.store.namespace(namespace).await?.map(|n| n.id);
        let (roots, members) = match self.confirm_anchors(ns, &anchors).await? {
            Anchors::Unknown(unknown) => {
                let mut env = self.unknown_entity(OP, namespace, &unknown);
                env.grain = Grain::Fact;
                env.applied = Some(applied);
                env.temporal_scope = Some(echo);
                return Ok(env);
            }
            Anchors::Confirmed { roots, members } => (roots, members),
            Anchors::None => (vec![], vec![]),
        };
        let Some(ns) = ns else {
            let mut env = self.empty_envelope(OP, namespace);
            env.grain = Grain::Fact;
            env.applied = Some(applied);
            env.temporal_scope = Some(echo);
            self.negative_for(&mut env);
            return Ok(env);
        };
        let digest =
            sha256_hex(format!("{}|{:?}|{:?}", input.query.trim(), anchors, scope).as_bytes())
                [..16]
                .to_string();
        let offset = page_offset(&self.cursor_key, &input.cursor, &digest)?;
        let depth = ((offset + k) * 3).max(30).min(self.config.max_k);
        let req = SearchRequest::new(namespace, input.query.trim(), depth);
        let filter = scope.filter(ns, members.clone());
        let searched = self.search_facts_in(&req, filter.clone()).await?;
        let mut candidates: Vec<FactResult> = searched.results.clone();
        let shape = QuestionShape::of(input.query.trim());
        // The neighbourhood: every fact touching an anchor in scope, after the
        // text matches (it has no text score). It is ranked by its keys; whole
        // records are read only for the page.
        let mut available = candidates.len();
        if !members.is_empty() {
            let seen: BTreeSet<FactId> = candidates.iter().map(|c| c.fact.fact_id).collect();
            let around: Vec<crate::facts::FactKey> = self
                .store
                .list_fact_keys(&filter, 1_000)
                .await?
                .into_iter()
                .filter(|k| !seen.contains(&k.fact_id))
                .collect();
            // Candidates touching more anchors first; then the text ranking. An end
            // counts for the anchor whose merge membership holds it.
            let mut root_of_member: HashMap<EntityId, Vec<EntityId>> = HashMap::new();
            for r in &roots {
                for m in self.members(ns, *r).await? {
                    root_of_member.entry(m).or_default().push(*r);
                }
            }
            let anchors_of = |subject: EntityId, object: Option<EntityId>| {
                let mut hit: BTreeSet<EntityId> = BTreeSet::new();
                for end in std::iter::once(subject).chain(object) {
                    if let Some(rs) = root_of_member.get(&end) {
                        hit.extend(rs.iter().copied());
                    }
                }
                hit.len()
            };
            // (anchors, answers the question's shape, fused, statement, id, index
            // into `candidates` or None).
            let mut ranked: Vec<(usize, bool, f64, String, FactId, Option<usize>)> = candidates
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    (
                        anchors_of(c.fact.subject, c.fact.object),
                        shape.answered_by(&c.fact),
                        c.scores.fused,
                        c.fact.statement.clone(),
                        c.fact.fact_id,
                        Some(i),
                    )
                })
                .chain(around.into_iter().map(|k| {
                    (
                        anchors_of(k.subject, k.object),
                        false,
                        0.0,
                        k.statement,
                        k.fact_id,
                        None,
                    )
                }))
                .collect();
            ranked.sort_by(|a, b| {
                b.0.cmp(&a.0)
                    .then_with(|| b.1.cmp(&a.1))
                    .then_with(|| b.2.total_cmp(&a.2))
                    .then_with(|| a.3.cmp(&b.3))
                    .then_with(|| a.4.cmp(&b.4))
            });
            available = ranked.len();
            let page: Vec<(usize, FactId, Option<usize>)> = ranked
                .into_iter()
                .skip(offset)
                .take(k)
                .map(|(anchors, _, _, _, id, index)| (anchors, id, index))
                .collect();
            let wanted: Vec<FactId> = page.iter().filter(|p| p.2.is_none()).map(|p| p.1).collect();
            let mut records: HashMap<FactId, FactRecord> = self
                .store
                .facts(ns, &wanted)
                .await?
                .into_iter()
                .map(|f| (f.fact_id, f))
                .collect();
            let mut searched_results: Vec<Option<FactResult>> =
                candidates.into_iter().map(Some).collect();
            candidates = page
                .into_iter()
                .filter_map(|(anchors, id, index)| {
                    let mut r = match index {
                        Some(i) => searched_results[i].take()?,
                        None => FactResult {
                            fact: records.remove(&id)?,
                            scores: Scores {
                                semantic: None,
                                lexical: None,
                                fused: 0.0,
                                relevance: None,
                            },
                            anchors: None,
                            contradiction: None,
                            support_state: None,
                            provenance: vec![],
                        },
                    };
                    r.anchors = Some(anchors);
                    Some(r)
                })
                .collect();
        } else {
            // Stable: within each tier the text ranking stands.
            candidates.sort_by_key(|c| std::cmp::Reverse(shape.answered_by(&c.fact)));
            candidates = candidates.into_iter().skip(offset).take(k).collect();
        }
        let presented = self
            .present_facts(ns, candidates.iter().map(|c| c.fact.clone()).collect())
            .await?;
        for (c, f) in candidates.iter_mut().zip(presented) {
            c.fact = f;
        }
        // Contradictions are never one-sided: co-members come inline.
        for c in &mut candidates {
            let Some(group) = c.fact.contradiction_group else {
                continue;
            };
            let mut members_of_group: Vec<FactRecord> = self
                .store
                .list_facts(
                    &FactFilter {
                        namespace_id: ns,
                        entities: vec![],
                        at: None,
                        history: true,
                        overlap: None,
                        documents: None,
                        group: Some(group),
                        unsupported: false,
                    },
                    10_000,
                )
                .await?
                .into_iter()
                .filter(|f| f.fact_id != c.fact.fact_id)
                .collect();
            let total = members_of_group.len() + 1;
            members_of_group.truncate(CONTRADICTION_CAP);
            let members_of_group = self.present_facts(ns, members_of_group).await?;
            c.contradiction = Some(Contradiction {
                group_id: group,
                returned: members_of_group.len() + 1,
                total,
                members: members_of_group,
            });
        }
        // Provenance: the supporting claims, current testimony first (claims read in
        // one batch for the whole page).
        let mut chosen: Vec<Vec<ClaimId>> = Vec::with_capacity(candidates.len());
        let ids: Vec<FactId> = candidates.iter().map(|c| c.fact.fact_id).collect();
        let evidence = self.evidence_of(ns, &ids).await?;
        for (c, rows) in candidates.iter_mut().zip(evidence) {
            c.support_state = Some(
                if c.fact.evidence_count > 0 {
                    "supported"
                } else {
                    "support_withdrawn"
                }
                .into(),
            );
            let mut support: Vec<_> = rows
                .into_iter()
                .filter(|e| e.stance == crate::facts::Stance::Support)
                .collect();
            support.sort_by_key(|e| (!e.is_current, e.added_at));
            support.truncate(PROVENANCE_CAP);
            chosen.push(support.iter().map(|e| e.claim_id).collect());
        }
        let all: Vec<ClaimId> = chosen.iter().flatten().copied().collect();
        let claims: HashMap<ClaimId, ClaimRecord> = self
            .store
            .claims(ns, &all)
            .await?
            .into_iter()
            .map(|c| (c.claim_id, c))
            .collect();
        for (c, ids) in candidates.iter_mut().zip(chosen) {
            for id in ids {
                let Some(claim) = claims.get(&id) else {
                    continue;
                };
                let Some(occ) = claim.occurrences.last() else {
                    continue;
                };
                c.provenance.push(FactSupport {
                    claim_id: claim.claim_id,
                    document_id: claim.document_id,
                    document_title: claim.document_title.clone(),
                    version_id: occ.version_id,
                    spans: super::search::char_spans(&occ.spans),
                    event_ids: occ.event_ids.clone(),
                    asserted_at: claim.asserted_at,
                    is_current: claim.is_current,
                    text: claim.text.clone(),
                });
            }
        }
        let mut results = candidates;
        let budget_report = budget.map(|b| {
            fit_budget(
                &mut results,
                b,
                |r| {
                    r.fact.statement.chars().count()
                        + r.contradiction.as_ref().map_or(0, |c| {
                            c.members.iter().map(|m| m.statement.chars().count()).sum()
                        })
                },
                |r| r.fact.fact_id.to_string(),
            )
        });
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned: 0,
                more_available: available > offset + k || searched.truncation.more_available,
                continuation: None,
            },
            searched.freshness.clone(),
            searched.channels.clone(),
        );
        env.truncation.returned = env.results.len();
        env.truncation.continuation = continuation(
            &self.cursor_key,
            offset,
            env.results.len(),
            available,
            &digest,
        );
        env.grain = Grain::Fact;
        env.hydration_drops = searched.hydration_drops.clone();
        env.applied = Some(applied.clone());
        env.temporal_scope = Some(echo);
        env.budget = budget_report;
        self.negative_for(&mut env);
        // A fact listed because it touches an anchor is there by the caller's choice.
        self.weak_answer(&mut env, offset == 0, &input.query, |r| {
            let text = r.fact.statement.as_str();
            if r.anchors.is_some_and(|a| a > 0) {
                (None, text)
            } else {
                (r.scores.relevance, text)
            }
        });
        if input.record_receipt.unwrap_or(false) {
            let selections = env
                .results
                .iter()
                .map(|r| ReceiptSelection {
                    kind: "fact".into(),
                    id: r.fact.fact_id.to_string(),
                    version_id: None,
                    content_digest: fact_digest(&r.fact),
                    score: r.scores.fused,
                })
                .collect();
            let coverage = json!({"candidates": available, "returned": env.results.len(),
                "omitted": env.budget.as_ref().map_or(0, |b| b.omitted.len())});
            env.receipt_id = Some(
                self.record_receipt(
                    (namespace, Some(ns)),
                    OP,
                    &input.query,
                    &applied,
                    ReceiptMeta {
                        request_id: input.request_id.clone(),
                        subject: input.subject.clone(),
                        purpose: input.purpose.clone(),
                    },
                    selections,
                    coverage,
                )
                .await?,
            );
        }
        Ok(env)
    }

    /// `combined_context` (D87): both children with the same query, anchors and
    /// scope; a failure of either fails the call.
    pub async fn combined_context(
        &self,
        namespace: &str,
        input: CombinedContextInput,
    ) -> Result<ContextBundle> {
        // Both children run concurrently (reads only); either failing fails the call.
        let evidence = self.claims_and_sources_context(
            namespace,
            ClaimsAndSourcesInput {
                query: input.query.clone(),
                entity_ids: input.entity_ids.clone(),
                k: None,
                budget: None,
                cursor: None,
                record_receipt: None,
                request_id: None,
                subject: None,
                purpose: None,
            },
        );
        let facts = self.facts_context(
            namespace,
            FactsContextInput {
                query: input.query,
                entity_ids: input.entity_ids,
                temporal_scope: input.temporal_scope,
                k: None,
                budget: None,
                cursor: None,
                record_receipt: None,
                request_id: None,
                subject: None,
                purpose: None,
            },
        );
        let (claims_and_sources, facts) = tokio::try_join!(evidence, facts)?;
        Ok(ContextBundle {
            contract: CONTEXT_BUNDLE_CONTRACT.into(),
            claims_and_sources,
            facts,
        })
    }
}

/// What a question asks for, by its words: the core predicates its question words
/// name ("Where does Alice *work*?" asks for `works_for`) and the names it
/// mentions. A fact of an asked predicate whose subject the question names
/// answers its shape and ranks right after the anchors, before the text score:
/// the employer of the named person, not the fact sharing the most words.
struct QuestionShape {
    asked: Vec<&'static str>,
    /// Its words, lowercased.
    words: Vec<String>,
    /// Its runs of capitalised words (the names it writes), lowercased.
    names: Vec<Vec<String>>,
}

impl QuestionShape {
    fn of(question: &str) -> Self {
        let raw: Vec<&str> = question
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let mut names: Vec<Vec<String>> = Vec::new();
        let mut run: Vec<String> = Vec::new();
        for w in &raw {
            if w.starts_with(char::is_uppercase) {
                run.push(w.to_lowercase());
            } else if !run.is_empty() {
                names.push(std::mem::take(&mut run));
            }
        }
        if !run.is_empty() {
            names.push(run);
        }
        QuestionShape {
            asked: crate::facts::predicates::asked_for(question),
            words: raw.iter().map(|w| w.to_lowercase()).collect(),
            names,
        }
    }

    /// Whether `fact` is a relation the question asks for about an entity it
    /// names: the subject's whole name, or its first word (three letters or more)
    /// written as a name on its own (`Alice` stands for `Alice Moreno`; `Alice
    /// Keller` does not).
    fn answered_by(&self, fact: &FactRecord) -> bool {
        let Some(predicate) = fact.predicate.as_deref() else {
            return false;
        };
        if !self.asked.contains(&predicate) {
            return false;
        }
        let name: Vec<String> = fact
            .subject_name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let Some(first) = name.first() else {
            return false;
        };
        self.words.windows(name.len()).any(|w| w == name.as_slice())
            || (first.chars().count() >= 3
                && self
                    .names
                    .iter()
                    .any(|run| run.as_slice() == [first.clone()]))
    }
}

/// Whether two lowercased terms are the same word, up to an ending: equal, or one
/// of at least four characters begins the other (`work` / `worked`).
fn same_word(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.chars().count() >= 4 && long.starts_with(short))
}

/// Keep whole results, in rank order, while their texts fit `budget` characters;
/// list the ids of the rest.
fn fit_budget<R>(
    results: &mut Vec<R>,
    budget: usize,
    size: impl Fn(&R) -> usize,
    id: impl Fn(&R) -> String,
) -> BudgetReport {
    let mut used = 0;
    let mut keep = 0;
    for r in results.iter() {
        let s = size(r);
        if used + s > budget {
            break;
        }
        used += s;
        keep += 1;
    }
    let omitted = results.drain(keep..).map(|r| id(&r)).collect();
    BudgetReport {
        chars: budget,
        used,
        omitted,
    }
}

/// Who and what a receipt is for.
struct ReceiptMeta {
    request_id: Option<String>,
    subject: Option<String>,
    purpose: Option<String>,
}

/// The content digest of a fact as selected: statement and window.
fn fact_digest(f: &FactRecord) -> String {
    let bound = |t: &Option<Timestamp>| t.map(|t| crate::time::to_rfc3339(&t)).unwrap_or_default();
    sha256_hex(
        format!(
            "{}\u{1f}{}\u{1f}{}",
            f.statement,
            bound(&f.window.valid_from),
            bound(&f.window.valid_until)
        )
        .as_bytes(),
    )
}

/// One record of a resolved receipt, with its current text.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResolvedRecord {
    /// `claim`, `chunk` or `fact`.
    pub kind: String,
    /// The record id.
    pub id: String,
    /// Its text (a fact's statement).
    pub text: String,
    /// The document (claims and chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_title: Option<String>,
    /// The score it was selected with.
    pub score: f64,
}

/// The outcome of resolving a receipt: every record, or a refusal naming why.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceiptResolution {
    /// The receipt.
    pub receipt_id: ReceiptId,
    /// `resolved` or `refused`.
    pub status: String,
    /// Why it was refused: `deleted` (its document was deleted, or the fact closed
    /// with it), `revoked`, `archived`, `superseded`, `changed` or `missing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The record that caused the refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The selected records in their original order (empty when refused).
    pub records: Vec<ResolvedRecord>,
}

impl Engine {
    #[allow(clippy::too_many_arguments)]
    async fn record_receipt(
        &self,
        (namespace, ns): (&str, Option<NamespaceId>),
        operation: &str,
        query: &str,
        applied: &Value,
        meta: ReceiptMeta,
        selections: Vec<ReceiptSelection>,
        coverage: Value,
    ) -> Result<ReceiptId> {
        if let Some(r) = &meta.request_id
            && (r.trim().is_empty() || r.len() > 200)
        {
            return Err(invalid("request_id must be 1 to 200 characters"));
        }
        let ns = match ns {
            Some(ns) => ns,
            // A receipt is a write: the namespace exists from it on.
            None => {
                self.store
                    .ensure_namespace(namespace, self.clock.now())
                    .await?
                    .id
            }
        };
        let mut parameters = applied.clone();
        if let Some(o) = parameters.as_object_mut() {
            o.remove("query");
        }
        let receipt = Receipt {
            receipt_id: ReceiptId::new(),
            namespace_id: ns,
            request_id: meta.request_id,
            operation: operation.to_string(),
            subject: meta.subject,
            purpose: meta.purpose,
            query_digest: sha256_hex(query.trim().as_bytes()),
            parameters,
            selections,
            coverage,
            created_at: self.clock.now(),
        };
        let stored = self.store.put_receipt(receipt.clone()).await?;
        if stored.receipt_id != receipt.receipt_id
            && (stored.operation != receipt.operation
                || stored.query_digest != receipt.query_digest
                || stored.parameters != receipt.parameters)
        {
            return Err(Error::new(
                ErrorCode::Conflict,
                "request_conflict: this request_id already recorded a different request",
            ));
        }
        Ok(stored.receipt_id)
    }

    /// The fact filter of a time scope (namespace and entities left for the caller).
    pub(super) fn scope_filter(&self, scope: &TemporalScope) -> Result<FactFilter> {
        Ok(scope
            .validate()?
            .filter(NamespaceId(uuid::Uuid::nil()), vec![]))
    }

    /// The stored receipt: ids, versions, digests, scores and counts — never text.
    pub async fn inspect_receipt(&self, namespace: &str, id: ReceiptId) -> Result<Receipt> {
        let ns = self.namespace_or_not_found(namespace).await?;
        self.store
            .receipt(ns, id)
            .await?
            .ok_or_else(|| Error::not_found(format!("no receipt {id} in `{namespace}`")))
    }

    /// Whether a document lineage is deleted (a missing lineage is not "deleted").
    pub(super) async fn is_deleted(&self, ns: NamespaceId, doc: DocumentId) -> Result<bool> {
        Ok(self
            .store
            .document(ns, doc)
            .await?
            .is_some_and(|d| d.deleted_at.is_some()))
    }

    /// Re-check every selected record against current authority and return the
    /// current texts, or refuse the whole resolution with a typed reason; never
    /// reranks or substitutes.
    pub async fn resolve_receipt(
        &self,
        namespace: &str,
        id: ReceiptId,
    ) -> Result<ReceiptResolution> {
        let receipt = self.inspect_receipt(namespace, id).await?;
        let ns = receipt.namespace_id;
        let refuse = |reason: &str, record: &str| ReceiptResolution {
            receipt_id: id,
            status: "refused".into(),
            reason: Some(reason.into()),
            record: Some(record.into()),
            records: vec![],
        };
        let mut records = Vec::with_capacity(receipt.selections.len());
        for s in &receipt.selections {
            let parsed =
                uuid::Uuid::parse_str(&s.id).map_err(|_| Error::store("corrupt receipt id"))?;
            let (text, title, current) = match s.kind.as_str() {
                "claim" => match self.store.claims(ns, &[ClaimId(parsed)]).await?.pop() {
                    None => return Ok(refuse("missing", &s.id)),
                    Some(c) if self.is_deleted(ns, c.document_id).await? => {
                        return Ok(refuse("deleted", &s.id));
                    }
                    Some(c) => (c.text, Some(c.document_title), c.is_current),
                },
                "chunk" => match self.store.chunks(ns, &[ChunkId(parsed)]).await?.pop() {
                    None => return Ok(refuse("missing", &s.id)),
                    Some(c) if self.is_deleted(ns, c.document_id).await? => {
                        return Ok(refuse("deleted", &s.id));
                    }
                    Some(c) => (c.text, Some(c.document_title), c.is_current),
                },
                "fact" => match self.store.facts(ns, &[FactId(parsed)]).await?.pop() {
                    None => return Ok(refuse("missing", &s.id)),
                    Some(f)
                        if f.closed_reason.as_deref()
                            == Some(crate::facts::closed_reason::SOURCE_REMOVAL) =>
                    {
                        return Ok(refuse("deleted", &s.id));
                    }
                    Some(f) if f.invalidated_at.is_some() => return Ok(refuse("revoked", &s.id)),
                    Some(f) => {
                        if f.superseded_by.is_some() {
                            return Ok(refuse("superseded", &s.id));
                        }
                        if fact_digest(&f) != s.content_digest {
                            return Ok(refuse("changed", &s.id));
                        }
                        records.push(ResolvedRecord {
                            kind: s.kind.clone(),
                            id: s.id.clone(),
                            text: f.statement,
                            document_title: None,
                            score: s.score,
                        });
                        continue;
                    }
                },
                other => return Err(Error::store(format!("corrupt receipt kind `{other}`"))),
            };
            if !current {
                return Ok(refuse("superseded", &s.id));
            }
            if sha256_hex(text.as_bytes()) != s.content_digest {
                return Ok(refuse("changed", &s.id));
            }
            records.push(ResolvedRecord {
                kind: s.kind.clone(),
                id: s.id.clone(),
                text,
                document_title: title,
                score: s.score,
            });
        }
        Ok(ReceiptResolution {
            receipt_id: id,
            status: "resolved".into(),
            reason: None,
            record: None,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{QuestionShape, same_word};
    use crate::claims::{Precision, ValidityKind};
    use crate::facts::{FactKind, FactRecord, Window};
    use crate::ids::{EntityId, FactId, NamespaceId};

    fn relation(subject: &str, predicate: &str, object: &str) -> FactRecord {
        let t = chrono::DateTime::UNIX_EPOCH;
        FactRecord {
            fact_id: FactId(uuid::Uuid::from_u128(1)),
            namespace_id: NamespaceId(uuid::Uuid::from_u128(2)),
            kind: FactKind::Relation,
            subject: EntityId(uuid::Uuid::from_u128(3)),
            subject_name: subject.into(),
            predicate: Some(predicate.into()),
            object: Some(EntityId(uuid::Uuid::from_u128(4))),
            object_name: Some(object.into()),
            statement: format!("{subject} {predicate} {object}"),
            window: Window {
                valid_from: None,
                valid_until: None,
                precision: Precision::Day,
            },
            validity_kind: ValidityKind::State,
            recorded_at: t,
            invalidated_at: None,
            closed_reason: None,
            contradiction_group: None,
            superseded_by: None,
            evidence_count: 1,
            contradict_count: 0,
            embedding_key: String::new(),
            updated_at: t,
        }
    }

    #[test]
    fn a_question_is_answered_by_the_asked_relation_of_the_named_subject() {
        let q = QuestionShape::of("Where does Alice Moreno work now?");
        assert!(q.answered_by(&relation("Alice Moreno", "works_for", "Globex")));
        // Not the other relation of the same person, nor another person's employer.
        assert!(!q.answered_by(&relation("Alice Moreno", "located_in", "Madrid")));
        assert!(!q.answered_by(&relation("Bruno Keller", "works_for", "Globex")));
        // A first name written as a name stands for the whole name.
        let q = QuestionShape::of("Where does Alice live?");
        assert!(q.answered_by(&relation("Alice Moreno", "located_in", "Madrid")));
        // ... but not within another full name ...
        let q = QuestionShape::of("Where does Alice Keller live?");
        assert!(!q.answered_by(&relation("Alice Moreno", "located_in", "Madrid")));
        // ... nor a lowercase word that happens to be one.
        let q = QuestionShape::of("where do the rose growers live?");
        assert!(!q.answered_by(&relation("Rose Tyler", "located_in", "London")));
        // A question asking for no relation ranks nothing first.
        let q = QuestionShape::of("What did Alice Moreno say about Globex?");
        assert!(!q.answered_by(&relation("Alice Moreno", "works_for", "Globex")));
    }

    #[test]
    fn words_match_up_to_an_ending_but_short_ones_only_whole() {
        assert!(same_word("work", "worked"));
        assert!(same_word("worked", "work"));
        assert!(same_word("alice", "alice"));
        assert!(!same_word("art", "artist"));
        assert!(!same_word("work", "network"));
    }
}
