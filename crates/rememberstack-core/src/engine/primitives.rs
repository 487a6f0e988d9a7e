//! Zero-LLM retrieval primitives beside the assured operations: `adjacent_chunks`
//! (D130), `neighborhood` (bounded multi-hop traversal over relations) and
//! `search_documents` (names and content, with metadata filters, D134) and `hydrate`
//! (record → evidence → sources).

use super::search::chunk_result;
use super::*;
use crate::facts::{FactFilter, FactKind, FactRecord};
use crate::text::lexical_terms;
use std::collections::BTreeSet;

/// Hard caps of a neighbourhood traversal.
pub const NEIGHBORHOOD_MAX_DEPTH: usize = 3;
/// Entities expanded at most (over all hops).
pub const NEIGHBORHOOD_MAX_EXPANSIONS: usize = 64;
/// Entities in one hop's frontier at most.
pub const NEIGHBORHOOD_MAX_FRONTIER: usize = 128;
/// Edges returned at most.
pub const NEIGHBORHOOD_MAX_RESULTS: usize = 256;

/// A neighbourhood request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborhoodRequest {
    /// Start entities (resolved ids).
    pub entity_ids: Vec<EntityId>,
    /// Hops, 1–3 (default 1).
    #[serde(default)]
    pub depth: Option<usize>,
    /// Only relations with these predicates, at every hop (default: all).
    #[serde(default)]
    pub predicates: Vec<String>,
    /// The time scope, applied at every hop (default `current`).
    #[serde(default)]
    pub temporal_scope: Option<TemporalScope>,
}

/// One edge reached by a traversal.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathResult {
    /// The relation.
    pub fact: FactRecord,
    /// The hop it was reached at (1-based).
    pub depth: usize,
    /// The relations from a start entity to this one, this one last.
    pub path: Vec<FactId>,
}

/// Records one `hydrate` call accepts at most.
pub const HYDRATE_MAX_RECORDS: usize = 50;

/// A record to hydrate, written `kind:uuid` (`fact:…`, `claim:…`, `chunk:…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordRef {
    /// A fact.
    Fact(FactId),
    /// A claim.
    Claim(ClaimId),
    /// A chunk.
    Chunk(ChunkId),
}

impl std::str::FromStr for RecordRef {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            param(format!(
                "`{s}` is not a record reference: write fact:<id>, claim:<id> or chunk:<id>"
            ))
        };
        let (kind, id) = s.trim().split_once(':').ok_or_else(bad)?;
        let id = uuid::Uuid::parse_str(id.trim()).map_err(|_| bad())?;
        match kind.trim() {
            "fact" => Ok(RecordRef::Fact(FactId(id))),
            "claim" => Ok(RecordRef::Claim(ClaimId(id))),
            "chunk" => Ok(RecordRef::Chunk(ChunkId(id))),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for RecordRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordRef::Fact(id) => write!(f, "fact:{id}"),
            RecordRef::Claim(id) => write!(f, "claim:{id}"),
            RecordRef::Chunk(id) => write!(f, "chunk:{id}"),
        }
    }
}

/// One claim behind a hydrated record.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HydratedEvidence {
    /// For a fact: whether the claim supports or contradicts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stance: Option<crate::facts::Stance>,
    /// The claim with its occurrences (version, chunk, spans, event ids).
    pub claim: ClaimRecord,
}

/// A record with its evidence and sources.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HydratedRecord {
    /// The reference as given (`kind:id`).
    pub record: String,
    /// The record's text: a fact's statement, a claim's text or a chunk's text.
    pub text: String,
    /// The fact itself (facts only; entity names follow merges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<FactRecord>,
    /// The claims behind it: a fact's evidence (current testimony first), or the
    /// claim itself.
    pub evidence: Vec<HydratedEvidence>,
    /// The source chunks: where each evidence claim last occurs, or the chunk
    /// itself; in order, without repeats.
    pub sources: Vec<ChunkResult>,
}

/// A document search request (D134).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentQuery {
    /// Words matched on names (file name, title, source reference, observed names)
    /// and content (the document's best chunk hit). Empty: filters only.
    #[serde(default)]
    pub query: String,
    /// The file name contains this (case-insensitive).
    #[serde(default)]
    pub file_name: Option<String>,
    /// The title contains this (case-insensitive).
    #[serde(default)]
    pub title: Option<String>,
    /// An author contains this (case-insensitive).
    #[serde(default)]
    pub author: Option<String>,
    /// The source time is at or after this instant (RFC 3339).
    #[serde(default)]
    pub from: Option<String>,
    /// The source time is before this instant (RFC 3339).
    #[serde(default)]
    pub to: Option<String>,
    /// Results (1–100, default 10).
    #[serde(default)]
    pub k: Option<usize>,
}

impl DocumentQuery {
    /// The query's filters, as a document scope.
    pub fn filter(&self) -> DocumentFilter {
        DocumentFilter {
            document_ids: None,
            file_name: self.file_name.clone(),
            title: self.title.clone(),
            author: self.author.clone(),
            from: self.from.clone(),
            to: self.to.clone(),
        }
    }
}

/// Which documents a search may draw from (D134): every given field must hold.
/// Only documents with a current version qualify.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentFilter {
    /// Only these lineages.
    #[serde(default)]
    pub document_ids: Option<Vec<DocumentId>>,
    /// The file name contains this (case-insensitive).
    #[serde(default)]
    pub file_name: Option<String>,
    /// The title contains this (case-insensitive).
    #[serde(default)]
    pub title: Option<String>,
    /// An author contains this (case-insensitive).
    #[serde(default)]
    pub author: Option<String>,
    /// The source time is at or after this instant (RFC 3339).
    #[serde(default)]
    pub from: Option<String>,
    /// The source time is before this instant (RFC 3339).
    #[serde(default)]
    pub to: Option<String>,
}

/// A document that passed a [`DocumentFilter`]: its row, observed names and title.
pub(super) struct EligibleDocument {
    pub(super) row: DocumentRow,
    pub(super) names: Vec<String>,
    pub(super) title: String,
}

/// One document result.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentResult {
    /// The lineage.
    pub document_id: DocumentId,
    /// The version judged (the current one).
    pub version_id: VersionId,
    /// Display title.
    pub title: String,
    /// Lineage key: source kind.
    pub source_kind: String,
    /// Lineage key: source reference.
    pub source_ref: String,
    /// The judged version's metadata, with provenance.
    pub metadata: DocumentMetadata,
    /// Every name the lineage was observed under.
    pub names: Vec<String>,
    /// The document's best content hit, if the query matched its content.
    pub best_chunk: Option<ChunkResult>,
    /// Names rank, content rank and the fused score.
    pub scores: Scores,
}

fn param(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidParameter, message)
}

impl Engine {
    /// The chunks around `chunk` in its version, `window` (1–2) on each side, in
    /// document order; the chunk itself included.
    pub async fn adjacent_chunks(
        &self,
        namespace: &str,
        chunk: ChunkId,
        window: usize,
    ) -> Result<Envelope<ChunkResult>> {
        const OP: &str = "adjacent_chunks";
        if !(1..=2).contains(&window) {
            return Err(param(format!("window = {window} is out of range 1..=2")));
        }
        let ns = self.namespace_or_not_found(namespace).await?;
        let Some(target) = self.store.chunks(ns, &[chunk]).await?.pop() else {
            return Err(Error::not_found(format!(
                "no chunk {chunk} in `{namespace}`"
            )));
        };
        // A deleted document serves nothing, not even around a remembered chunk id.
        let deleted = self.is_deleted(ns, target.document_id).await?;
        let lo = target.ordinal.saturating_sub(window as u32);
        let hi = target.ordinal + window as u32;
        let ids: Vec<ChunkId> = self
            .store
            .version_chunks(ns, target.version_id)
            .await?
            .into_iter()
            .filter(|c| !deleted && (lo..=hi).contains(&c.ordinal))
            .map(|c| c.chunk_id)
            .collect();
        let none = Scores {
            semantic: None,
            lexical: None,
            fused: 0.0,
            relevance: None,
        };
        let mut records = self.store.chunks(ns, &ids).await?;
        records.sort_by_key(|c| c.ordinal);
        let results: Vec<ChunkResult> = records
            .into_iter()
            .map(|r| chunk_result(r, none.clone()))
            .collect();
        let freshness = self
            .freshness(ns, &self.component_version(Stage::Embed))
            .await?;
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned: 0,
                more_available: false,
                continuation: None,
            },
            freshness,
            BTreeMap::new(),
        );
        env.truncation.returned = env.results.len();
        env.applied = Some(serde_json::json!({"chunk_id": chunk, "window": window}));
        if deleted {
            env.negative = Some(Negative {
                kind: "boundary".into(),
                message: "the chunk belongs to a deleted document".into(),
                limitation: Some("deleted_document".into()),
                best_relevance: None,
            });
        } else if !target.is_current {
            env.negative = Some(Negative {
                kind: "boundary".into(),
                message: "the chunk belongs to a version that is no longer current".into(),
                limitation: Some("superseded_version".into()),
                best_relevance: None,
            });
        }
        Ok(env)
    }

    /// Level-at-a-time traversal over relations from the start entities, at most 3
    /// hops, with hard caps on expansions, frontier and results; the predicate and
    /// time filters apply at every hop, so a path never crosses an ineligible edge.
    pub async fn neighborhood(
        &self,
        namespace: &str,
        req: NeighborhoodRequest,
    ) -> Result<Envelope<PathResult>> {
        const OP: &str = "neighborhood";
        let depth = req.depth.unwrap_or(1);
        if !(1..=NEIGHBORHOOD_MAX_DEPTH).contains(&depth) {
            return Err(param(format!(
                "depth = {depth} is out of range 1..={NEIGHBORHOOD_MAX_DEPTH}"
            )));
        }
        if req.entity_ids.is_empty() || req.entity_ids.len() > context::MAX_ANCHORS {
            return Err(param(format!(
                "entity_ids takes 1 to {} ids",
                context::MAX_ANCHORS
            )));
        }
        crate::limits::check_list_len("predicates", req.predicates.len())?;
        let scope = match &req.temporal_scope {
            Some(s) => s.clone(),
            None => TemporalScope {
                mode: "current".into(),
                at: None,
                from: None,
                to: None,
            },
        };
        // Validate the scope through facts_context's rules (no search runs).
        let probe = self.scope_filter(&scope)?;
        let ns = self.namespace_or_not_found(namespace).await?;
        let mut frontier: Vec<EntityId> = Vec::new();
        for id in &req.entity_ids {
            let root = self.root_of(ns, *id).await.map_err(|_| {
                Error::new(
                    ErrorCode::NotFound,
                    format!("no entity {id} in `{namespace}`"),
                )
            })?;
            if root.entity_id != *id {
                return Err(Error::new(
                    ErrorCode::InvalidParameter,
                    format!(
                        "entity {id} is merged into {}: start from it",
                        root.entity_id
                    ),
                ));
            }
            frontier.push(root.entity_id);
        }
        let mut visited: BTreeSet<EntityId> = frontier.iter().copied().collect();
        let mut paths: HashMap<EntityId, Vec<FactId>> =
            frontier.iter().map(|e| (*e, vec![])).collect();
        let mut seen_facts: BTreeSet<FactId> = BTreeSet::new();
        let mut results: Vec<PathResult> = Vec::new();
        let mut expansions = 0usize;
        let mut capped: Vec<&'static str> = Vec::new();
        'hops: for hop in 1..=depth {
            let mut next: Vec<EntityId> = Vec::new();
            for entity in frontier.clone() {
                if expansions >= NEIGHBORHOOD_MAX_EXPANSIONS {
                    capped.push("expansions");
                    break 'hops;
                }
                expansions += 1;
                let members = self.members(ns, entity).await?;
                let mut filter: FactFilter = probe.clone();
                filter.namespace_id = ns;
                filter.entities = members.clone();
                let facts = self.store.list_facts(&filter, 10_000).await?;
                let facts = self.present_facts(ns, facts).await?;
                for f in facts {
                    if f.kind != FactKind::Relation
                        || (!req.predicates.is_empty()
                            && !f
                                .predicate
                                .as_ref()
                                .is_some_and(|p| req.predicates.contains(p)))
                        || !seen_facts.insert(f.fact_id)
                    {
                        continue;
                    }
                    let other = if f.subject == entity {
                        f.object
                    } else {
                        Some(f.subject)
                    };
                    let mut path = paths.get(&entity).cloned().unwrap_or_default();
                    path.push(f.fact_id);
                    if let Some(o) = other
                        && visited.insert(o)
                    {
                        paths.insert(o, path.clone());
                        if next.len() < NEIGHBORHOOD_MAX_FRONTIER {
                            next.push(o);
                        } else if !capped.contains(&"frontier") {
                            capped.push("frontier");
                        }
                    }
                    if results.len() >= NEIGHBORHOOD_MAX_RESULTS {
                        capped.push("results");
                        break 'hops;
                    }
                    results.push(PathResult {
                        fact: f,
                        depth: hop,
                        path,
                    });
                }
            }
            frontier = next;
            if frontier.is_empty() {
                break;
            }
        }
        let freshness = self
            .freshness(ns, &self.component_version(Stage::Embed))
            .await?;
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned: 0,
                more_available: !capped.is_empty(),
                continuation: None,
            },
            freshness,
            BTreeMap::new(),
        );
        env.truncation.returned = env.results.len();
        env.grain = Grain::Fact;
        env.applied = Some(serde_json::json!({
            "entity_ids": req.entity_ids, "depth": depth, "predicates": req.predicates,
            "temporal_scope": scope, "caps": {"expansions": NEIGHBORHOOD_MAX_EXPANSIONS,
            "frontier": NEIGHBORHOOD_MAX_FRONTIER, "results": NEIGHBORHOOD_MAX_RESULTS},
            "capped": capped,
        }));
        if env.results.is_empty() {
            env.negative = Some(Negative {
                kind: "known_empty".into(),
                message: "no eligible relation touches the start entities".into(),
                limitation: None,
                best_relevance: None,
            });
        }
        Ok(env)
    }

    /// Documents judged by their current version: the query matched on names and on
    /// content (the best chunk hit), fused; filters on file name, title, authors and
    /// source time apply before ranking.
    pub async fn search_documents(
        &self,
        namespace: &str,
        q: DocumentQuery,
    ) -> Result<Envelope<DocumentResult>> {
        const OP: &str = "search_documents";
        validate_namespace(namespace)?;
        let k = match q.k {
            None => 10,
            Some(k) if (1..=100).contains(&k) => k,
            Some(k) => return Err(param(format!("k = {k} is out of range 1..=100"))),
        };
        crate::limits::check_query_len("query", &q.query)?;
        let filter = q.filter();
        filter.validate()?;
        let applied = serde_json::to_value(&q).map_err(|e| Error::internal(e.to_string()))?;
        let Some(ns) = self.store.namespace(namespace).await? else {
            let mut env = self.empty_envelope(OP, namespace);
            env.applied = Some(applied);
            env.negative = Some(Negative {
                kind: "known_empty".into(),
                message: "nothing was ever written to this namespace".into(),
                limitation: None,
                best_relevance: None,
            });
            return Ok(env);
        };
        let eligible: Vec<(DocumentRow, Vec<String>, String)> = self
            .eligible_documents(ns.id, &filter, true)
            .await?
            .into_iter()
            .map(|e| (e.row, e.names, e.title))
            .collect();
        let terms = lexical_terms(&q.query);
        // Names channel: share of query terms found in the names.
        let mut by_names: Vec<(DocumentId, f64)> = Vec::new();
        if !terms.is_empty() {
            for (row, names, title) in &eligible {
                let hay = format!(
                    "{} {} {} {}",
                    title,
                    row.source_ref,
                    row.metadata
                        .file_name
                        .as_ref()
                        .map(|f| f.value.as_str())
                        .unwrap_or(""),
                    names.join(" ")
                );
                let hay_terms: BTreeSet<String> = lexical_terms(&hay).into_iter().collect();
                let hit = terms.iter().filter(|t| hay_terms.contains(*t)).count();
                if hit > 0 {
                    by_names.push((row.document_id, hit as f64 / terms.len() as f64));
                }
            }
            by_names.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        }
        // Content channel: each document's best chunk hit.
        let mut best: HashMap<DocumentId, ChunkResult> = HashMap::new();
        let mut by_content: Vec<(DocumentId, f64)> = Vec::new();
        if !q.query.trim().is_empty() {
            // The eligible documents scope the chunk search before its top-k cut.
            let mut req = SearchRequest::new(namespace, q.query.trim(), self.config.max_k);
            req.documents = Some(DocumentFilter {
                document_ids: Some(eligible.iter().map(|e| e.0.document_id).collect()),
                ..Default::default()
            });
            let hits = self.search(req).await?;
            for r in hits.results {
                if let std::collections::hash_map::Entry::Vacant(slot) = best.entry(r.document_id) {
                    by_content.push((r.document_id, r.scores.fused));
                    slot.insert(r);
                }
            }
        }
        let fused: Vec<(DocumentId, Scores)> = if q.query.trim().is_empty() {
            // Filters only: newest lineage first.
            eligible
                .iter()
                .map(|e| {
                    (
                        e.0.document_id,
                        Scores {
                            semantic: None,
                            lexical: None,
                            fused: 0.0,
                            relevance: None,
                        },
                    )
                })
                .collect()
        } else {
            let lists = [
                by_names.iter().map(|x| x.0).collect::<Vec<_>>(),
                by_content.iter().map(|x| x.0).collect::<Vec<_>>(),
            ];
            rrf(&lists)
                .into_iter()
                .map(|f| {
                    let name_score = by_names.iter().find(|x| x.0 == f.id).map(|x| x.1);
                    let content_score = by_content.iter().find(|x| x.0 == f.id).map(|x| x.1);
                    (
                        f.id,
                        Scores {
                            // The names channel reports as lexical, content as semantic
                            // (it is itself a fused chunk search).
                            lexical: f.ranks[0].map(|rank| ChannelScore {
                                rank,
                                score: name_score.unwrap_or_default(),
                            }),
                            semantic: f.ranks[1].map(|rank| ChannelScore {
                                rank,
                                score: content_score.unwrap_or_default(),
                            }),
                            fused: f.score,
                            // A lineage is as relevant as its best chunk; one found
                            // by name only has no semantic evidence to calibrate.
                            relevance: best.get(&f.id).and_then(|r| r.scores.relevance),
                        },
                    )
                })
                .collect()
        };
        let available = fused.len();
        let mut rows: HashMap<DocumentId, (DocumentRow, Vec<String>, String)> =
            eligible.into_iter().map(|e| (e.0.document_id, e)).collect();
        let results: Vec<DocumentResult> = fused
            .into_iter()
            .take(k)
            .filter_map(|(id, scores)| {
                let (row, names, title) = rows.remove(&id)?;
                Some(DocumentResult {
                    document_id: id,
                    version_id: row.current_version_id?,
                    title,
                    source_kind: row.source_kind,
                    source_ref: row.source_ref,
                    metadata: row.metadata,
                    names,
                    best_chunk: best.remove(&id),
                    scores,
                })
            })
            .collect();
        let freshness = self
            .freshness(ns.id, &self.component_version(Stage::Embed))
            .await?;
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned: 0,
                more_available: available > k,
                continuation: None,
            },
            freshness,
            BTreeMap::new(),
        );
        env.truncation.returned = env.results.len();
        env.applied = Some(applied);
        if env.results.is_empty() {
            env.negative = Some(Negative {
                kind: "known_empty".into(),
                message: "no current document matches the query and filters".into(),
                limitation: None,
                best_relevance: None,
            });
        }
        Ok(env)
    }

    /// The documents of namespace `ns` that `filter` admits (a current version and
    /// every given field). `names` also reads each document's observed names.
    pub(super) async fn eligible_documents(
        &self,
        ns: NamespaceId,
        filter: &DocumentFilter,
        names: bool,
    ) -> Result<Vec<EligibleDocument>> {
        let (from, to) = filter.instants()?;
        let contains = |hay: &str, needle: &Option<String>| {
            needle
                .as_ref()
                .is_none_or(|n| hay.to_lowercase().contains(&n.to_lowercase()))
        };
        let ids: Option<BTreeSet<DocumentId>> = filter
            .document_ids
            .as_ref()
            .map(|ids| ids.iter().copied().collect());
        let mut eligible = Vec::new();
        for row in self.store.documents(ns).await? {
            if row.current_version_id.is_none()
                || ids
                    .as_ref()
                    .is_some_and(|ids| !ids.contains(&row.document_id))
            {
                continue;
            }
            let m = &row.metadata;
            let file_name = m
                .file_name
                .as_ref()
                .map(|f| f.value.clone())
                .unwrap_or_default();
            let title = m.display_title(&row.source_ref);
            let authors: Vec<String> = m
                .authors
                .as_ref()
                .map(|f| f.value.clone())
                .unwrap_or_default();
            let when = m
                .modified_at
                .as_ref()
                .or(m.created_at.as_ref())
                .map(|f| f.value);
            if !contains(&file_name, &filter.file_name)
                || !contains(&title, &filter.title)
                || (filter.author.is_some() && !authors.iter().any(|a| contains(a, &filter.author)))
                || from.is_some_and(|f| when.is_none_or(|w| w < f))
                || to.is_some_and(|t| when.is_none_or(|w| w >= t))
            {
                continue;
            }
            let names = if names {
                self.store.document_names(ns, row.document_id).await?
            } else {
                vec![]
            };
            eligible.push(EligibleDocument { row, names, title });
        }
        Ok(eligible)
    }

    /// The lineage ids a search's document filter admits (`None`: no filter).
    pub(super) async fn document_scope(
        &self,
        ns: NamespaceId,
        filter: Option<&DocumentFilter>,
    ) -> Result<Option<Vec<DocumentId>>> {
        let Some(filter) = filter else {
            return Ok(None);
        };
        filter.validate()?;
        let only_ids = DocumentFilter {
            document_ids: filter.document_ids.clone(),
            ..Default::default()
        };
        if *filter == only_ids {
            // Ids alone: the store checks liveness itself; no listing needed.
            return Ok(filter.document_ids.clone());
        }
        Ok(Some(
            self.eligible_documents(ns, filter, false)
                .await?
                .into_iter()
                .map(|e| e.row.document_id)
                .collect(),
        ))
    }
}

impl DocumentFilter {
    /// Whether the filter restricts anything.
    pub fn is_empty(&self) -> bool {
        *self == DocumentFilter::default()
    }

    fn instants(&self) -> Result<(Option<Timestamp>, Option<Timestamp>)> {
        let instant = |name: &str, v: &Option<String>| -> Result<Option<Timestamp>> {
            v.as_deref()
                .map(|s| {
                    crate::time::parse_rfc3339(s)
                        .ok_or_else(|| param(format!("{name} `{s}` is not an RFC 3339 instant")))
                })
                .transpose()
        };
        Ok((instant("from", &self.from)?, instant("to", &self.to)?))
    }

    /// Check that the instants parse.
    pub fn validate(&self) -> Result<()> {
        if let Some(ids) = &self.document_ids {
            crate::limits::check_list_len("document_ids", ids.len())?;
        }
        for (what, text) in [
            ("file_name", &self.file_name),
            ("title", &self.title),
            ("author", &self.author),
        ] {
            if let Some(text) = text {
                crate::limits::check_query_len(what, text)?;
            }
        }
        self.instants().map(|_| ())
    }
}

impl Engine {
    /// Hydrate records: each fact, claim or chunk with the claims behind it and the
    /// source chunks they come from (zero LLM). Results keep the input order; a
    /// record that does not exist is dropped and counted (`record_gone`).
    pub async fn hydrate(
        &self,
        namespace: &str,
        records: &[RecordRef],
    ) -> Result<Envelope<HydratedRecord>> {
        const OP: &str = "hydrate";
        validate_namespace(namespace)?;
        if records.is_empty() || records.len() > HYDRATE_MAX_RECORDS {
            return Err(param(format!(
                "hydrate takes 1 to {HYDRATE_MAX_RECORDS} records, not {}",
                records.len()
            )));
        }
        let Some(ns) = self.store.namespace(namespace).await?.map(|n| n.id) else {
            let mut env = self.empty_envelope(OP, namespace);
            env.hydration_drops
                .insert("record_gone".into(), records.len() as u64);
            return Ok(env);
        };
        let no_scores = || Scores {
            semantic: None,
            lexical: None,
            fused: 0.0,
            relevance: None,
        };
        let mut results = Vec::new();
        let mut gone = 0u64;
        for r in records {
            let (text, fact, evidence) = match r {
                RecordRef::Fact(id) => {
                    let Some(fact) = self.store.facts(ns, &[*id]).await?.pop() else {
                        gone += 1;
                        continue;
                    };
                    let fact = self.present_facts(ns, vec![fact]).await?.remove(0);
                    let mut rows = self.store.fact_evidence(ns, *id).await?;
                    rows.sort_by_key(|e| (!e.is_current, e.added_at, e.claim_id));
                    let ids: Vec<ClaimId> = rows.iter().map(|e| e.claim_id).collect();
                    let claims: HashMap<ClaimId, ClaimRecord> = self
                        .store
                        .claims(ns, &ids)
                        .await?
                        .into_iter()
                        .map(|c| (c.claim_id, c))
                        .collect();
                    let evidence = rows
                        .iter()
                        .filter_map(|e| {
                            Some(HydratedEvidence {
                                stance: Some(e.stance),
                                claim: claims.get(&e.claim_id)?.clone(),
                            })
                        })
                        .collect();
                    (fact.statement.clone(), Some(fact), evidence)
                }
                RecordRef::Claim(id) => {
                    let Some(claim) = self.store.claims(ns, &[*id]).await?.pop() else {
                        gone += 1;
                        continue;
                    };
                    let text = claim.text.clone();
                    (
                        text,
                        None,
                        vec![HydratedEvidence {
                            stance: None,
                            claim,
                        }],
                    )
                }
                RecordRef::Chunk(id) => {
                    let Some(chunk) = self.store.chunks(ns, &[*id]).await?.pop() else {
                        gone += 1;
                        continue;
                    };
                    results.push(HydratedRecord {
                        record: r.to_string(),
                        text: chunk.text.clone(),
                        fact: None,
                        evidence: vec![],
                        sources: vec![chunk_result(chunk, no_scores())],
                    });
                    continue;
                }
            };
            let mut chunk_ids: Vec<ChunkId> = Vec::new();
            for e in &evidence {
                if let Some(occ) = e.claim.occurrences.last()
                    && !chunk_ids.contains(&occ.chunk_id)
                {
                    chunk_ids.push(occ.chunk_id);
                }
            }
            let sources = self
                .store
                .chunks(ns, &chunk_ids)
                .await?
                .into_iter()
                .map(|c| chunk_result(c, no_scores()))
                .collect();
            results.push(HydratedRecord {
                record: r.to_string(),
                text,
                fact,
                evidence,
                sources,
            });
        }
        let freshness = self
            .freshness(ns, &self.component_version(Stage::Embed))
            .await?;
        let returned = results.len();
        let mut env = self.make_envelope(
            OP,
            namespace,
            results,
            Truncation {
                returned,
                more_available: false,
                continuation: None,
            },
            freshness,
            BTreeMap::new(),
        );
        if gone > 0 {
            env.hydration_drops.insert("record_gone".into(), gone);
        }
        env.applied = Some(serde_json::json!({
            "records": records.iter().map(|r| r.to_string()).collect::<Vec<_>>()
        }));
        Ok(env)
    }
}
