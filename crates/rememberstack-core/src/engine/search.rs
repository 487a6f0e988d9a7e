//! Hybrid search over chunks and claims: independent semantic and lexical lists
//! over eligible records, fused by reciprocal rank fusion (k = 60), paged with a
//! continuation cursor bound to the query.

use super::*;
use crate::facts::{FactFilter, FactRecord};
use crate::limits;
use std::hash::Hash;

/// Validated paging of one request.
struct Paging {
    key: Arc<[u8; 32]>,
    query: String,
    digest: String,
    offset: usize,
    depth: usize,
    k: usize,
}

/// One fused result before hydration.
struct FusedHit<Id> {
    id: Id,
    scores: Scores,
}

/// The channel lists one search produced.
struct Channels<Id> {
    semantic: Vec<(Id, f64)>,
    lexical: Vec<(Id, f64)>,
    reports: BTreeMap<String, ChannelReport>,
}

impl Engine {
    fn paging(&self, req: &SearchRequest) -> Result<Paging> {
        validate_namespace(&req.namespace)?;
        let query = req.query.trim();
        if query.is_empty() {
            return Err(Error::new(ErrorCode::EmptyInput, "the query is empty"));
        }
        limits::check_query_len("the query", query)?;
        if req.k == 0 || req.k > self.config.max_k {
            return Err(limits::invalid_parameter(format!(
                "k must be between 1 and {}",
                self.config.max_k
            )));
        }
        if let Some(roles) = &req.roles {
            limits::check_list_len("roles", roles.len())?;
        }
        limits::check_list_len("entities", req.entities.len())?;
        if let Some(f) = &req.documents {
            f.validate()?;
        }
        // The cursor binds to the query and any document scope.
        let digest = match &req.documents {
            None => sha256_hex(query.as_bytes())[..16].to_string(),
            Some(f) => sha256_hex(format!("{query}|{f:?}").as_bytes())[..16].to_string(),
        };
        let (offset, depth) = match &req.cursor {
            Some(c) => {
                let cur = decode_cursor(&self.cursor_key, c)?;
                if cur.q != digest {
                    return Err(Error::invalid_input(
                        "the cursor belongs to another query: repeat the query that produced it",
                    ));
                }
                (cur.o, cur.d)
            }
            None => (0, (req.k * 4).max(50)),
        };
        Ok(Paging {
            key: Arc::clone(&self.cursor_key),
            query: query.to_string(),
            digest,
            offset,
            depth,
            k: req.k,
        })
    }

    /// Embed the query, or say why the semantic channel cannot run.
    /// The query's vector, embedded once for all the searches that ask for it
    /// (see [`super::query_vectors`]).
    pub(super) async fn query_vector(&self, query: &str) -> std::result::Result<Vec<f32>, String> {
        let embed = || async {
            match self
                .embedder
                .embed(&[query.to_string()], EmbedPurpose::Query)
                .await
            {
                Ok(mut v) if v.len() == 1 && v[0].len() == self.embedder.identity().dimension => {
                    Ok(v.remove(0))
                }
                Ok(_) => Err("the embedder returned a malformed query vector".into()),
                Err(e) => Err(e.to_string()),
            }
        };
        let v = self.query_vectors.get_or_embed(query, embed).await?;
        Ok(v.as_ref().clone())
    }

    /// Run both channels. `lexical` and `semantic` are the store calls for the target.
    async fn channels<Id, LF, SF>(
        &self,
        paging: &Paging,
        coverage: VectorCoverage,
        what: &str,
        lexical: impl FnOnce(Vec<String>, usize) -> LF,
        semantic: impl FnOnce(Vec<f32>, usize) -> SF,
    ) -> Result<Channels<Id>>
    where
        LF: std::future::Future<Output = Result<Vec<(Id, f64)>>>,
        SF: std::future::Future<Output = Result<Vec<(Id, f64)>>>,
    {
        let mut reports = BTreeMap::new();
        let terms = text::lexical_terms(&paging.query);
        // The two channels run concurrently: the lexical statement on the store
        // while the query is embedded and scanned.
        let lexical = async {
            if terms.is_empty() {
                return Ok((
                    channel("skipped", 0, Some("the query has no words to match".into())),
                    vec![],
                ));
            }
            let hits = lexical(terms, paging.depth).await?;
            Ok::<_, Error>((channel("ok", hits.len(), None), hits))
        };
        let semantic = async {
            match self.query_vector(&paging.query).await {
                Ok(qv) => {
                    let hits = semantic(qv, paging.depth).await?;
                    let (status, msg) = if coverage.missing == 0 {
                        ("ok", None)
                    } else {
                        (
                            "partial",
                            Some(format!(
                                "{} current {what} have no vector of {} yet",
                                coverage.missing,
                                self.embedder.identity().generation()
                            )),
                        )
                    };
                    Ok::<_, Error>((channel(status, hits.len(), msg), hits))
                }
                Err(message) => Ok((channel("error", 0, Some(message)), vec![])),
            }
        };
        let ((lexical_report, lexical), (semantic_report, semantic)) =
            tokio::try_join!(lexical, semantic)?;
        reports.insert("lexical".into(), lexical_report);
        reports.insert("semantic".into(), semantic_report);
        Ok(Channels {
            semantic,
            lexical,
            reports,
        })
    }

    pub(super) fn make_envelope<R>(
        &self,
        operation: &str,
        namespace: &str,
        results: Vec<R>,
        truncation: Truncation,
        freshness: Freshness,
        channels: BTreeMap<String, ChannelReport>,
    ) -> Envelope<R> {
        Envelope {
            contract: ENVELOPE_CONTRACT.to_string(),
            operation: OperationInfo {
                name: operation.into(),
                version: 1,
            },
            grain: Grain::Evidence,
            namespace: namespace.to_string(),
            results,
            truncation,
            freshness,
            channels,
            negative: None,
            temporal_scope: None,
            applied: None,
            budget: None,
            hydration_drops: BTreeMap::new(),
            ambiguity: None,
            receipt_id: None,
        }
    }

    pub(super) fn empty_envelope<R>(&self, operation: &str, namespace: &str) -> Envelope<R> {
        let mut channels = BTreeMap::new();
        channels.insert("lexical".into(), channel("ok", 0, None));
        channels.insert("semantic".into(), channel("ok", 0, None));
        self.make_envelope(
            operation,
            namespace,
            vec![],
            Truncation {
                returned: 0,
                more_available: false,
                continuation: None,
            },
            empty_freshness(
                self.component_version(Stage::Embed),
                self.semantic_degraded(),
            ),
            channels,
        )
    }

    /// Hybrid chunk search: semantic and lexical lists computed independently over
    /// eligible chunks, fused by RRF (k = 60).
    pub async fn search(&self, req: SearchRequest) -> Result<Envelope<ChunkResult>> {
        const OP: &str = "search_chunks";
        let paging = self.paging(&req)?;
        let Some(namespace) = self.store.namespace(&req.namespace).await? else {
            return Ok(self.empty_envelope(OP, &req.namespace));
        };
        let generation = self.component_version(Stage::Embed);
        let filter = ChunkFilter {
            namespace_id: namespace.id,
            roles: distinct_roles(req.roles.as_deref()),
            entities: req.entities.clone(),
            documents: self
                .document_scope(namespace.id, req.documents.as_ref())
                .await?,
            exact: req.exact,
        };
        let freshness = self.freshness(namespace.id, &generation).await?;
        let coverage = VectorCoverage {
            chunks: freshness.semantic.chunks,
            missing: freshness.semantic.missing_vectors,
        };
        let store = &self.store;
        let ch = self
            .channels(
                &paging,
                coverage,
                "chunks",
                |terms, depth| {
                    let filter = &filter;
                    async move {
                        let hits = store.search_chunks_lexical(filter, &terms, depth).await?;
                        Ok(hits.into_iter().map(|h| (h.chunk_id, h.score)).collect())
                    }
                },
                |qv, depth| {
                    let (filter, generation) = (&filter, &generation);
                    async move {
                        let hits = store
                            .search_chunks_semantic(filter, generation, &qv, depth)
                            .await?;
                        Ok(hits.into_iter().map(|h| (h.chunk_id, h.score)).collect())
                    }
                },
            )
            .await?;
        let (page, truncation) =
            fuse_page(&ch, &paging, &self.config.fusion, &self.relevance_curve().0);
        let ids: Vec<ChunkId> = page.iter().map(|f| f.id).collect();
        let mut records: HashMap<ChunkId, ChunkRecord> = self
            .store
            .chunks(namespace.id, &ids)
            .await?
            .into_iter()
            .map(|r| (r.chunk_id, r))
            .collect();
        let results: Vec<ChunkResult> = page
            .into_iter()
            .filter_map(|f| {
                let r = records.remove(&f.id)?;
                Some(chunk_result(r, f.scores))
            })
            .collect();
        Ok(self.hydrated_envelope(
            OP,
            &req.namespace,
            results,
            truncation,
            freshness,
            ch.reports,
        ))
    }

    /// Hybrid claim search: current testimony only unless `include_retired` (audit).
    pub async fn search_claims(&self, req: SearchRequest) -> Result<Envelope<ClaimResult>> {
        const OP: &str = "search_claims";
        let paging = self.paging(&req)?;
        let Some(namespace) = self.store.namespace(&req.namespace).await? else {
            return Ok(self.empty_envelope(OP, &req.namespace));
        };
        let generation = self.component_version(Stage::EmbedClaims);
        let filter = ClaimFilter {
            namespace_id: namespace.id,
            include_retired: req.include_retired,
            document_id: None,
            entities: req.entities.clone(),
            documents: self
                .document_scope(namespace.id, req.documents.as_ref())
                .await?,
        };
        let mut freshness = self.freshness(namespace.id, &generation).await?;
        let coverage = self
            .coverage(
                namespace.id,
                "claims",
                &generation,
                self.store.claim_vector_coverage(namespace.id, &generation),
            )
            .await?;
        freshness.semantic = SemanticReadiness {
            generation: generation.clone(),
            ready: coverage.missing == 0,
            chunks: coverage.chunks,
            missing_vectors: coverage.missing,
            degraded: self.semantic_degraded(),
        };
        let store = &self.store;
        let ch = self
            .channels(
                &paging,
                coverage,
                "claims",
                |terms, depth| {
                    let filter = &filter;
                    async move {
                        let hits = store.search_claims_lexical(filter, &terms, depth).await?;
                        Ok(hits.into_iter().map(|h| (h.claim_id, h.score)).collect())
                    }
                },
                |qv, depth| {
                    let (filter, generation) = (&filter, &generation);
                    async move {
                        let hits = store
                            .search_claims_semantic(filter, generation, &qv, depth)
                            .await?;
                        Ok(hits.into_iter().map(|h| (h.claim_id, h.score)).collect())
                    }
                },
            )
            .await?;
        let (page, truncation) =
            fuse_page(&ch, &paging, &self.config.fusion, &self.relevance_curve().0);
        let ids: Vec<ClaimId> = page.iter().map(|f| f.id).collect();
        let mut records: HashMap<ClaimId, ClaimRecord> = self
            .store
            .claims(namespace.id, &ids)
            .await?
            .into_iter()
            .map(|r| (r.claim_id, r))
            .collect();
        let results: Vec<ClaimResult> = page
            .into_iter()
            .filter_map(|f| {
                let r = records.remove(&f.id)?;
                let occ = r.occurrences.last()?;
                Some(ClaimResult {
                    claim_id: r.claim_id,
                    document_id: r.document_id,
                    document_title: r.document_title,
                    source_kind: r.source_kind,
                    source_ref: r.source_ref,
                    version_id: occ.version_id,
                    chunk_id: occ.chunk_id,
                    spans: char_spans(&occ.spans),
                    event_ids: occ.event_ids.clone(),
                    needs_context: crate::claims::offline::needs_context(&r.text),
                    text: r.text,
                    asserted_at: r.asserted_at,
                    validity: r.validity,
                    added_context: r.added_context,
                    extractor_version: r.extractor_version,
                    is_current: r.is_current,
                    scores: f.scores,
                })
            })
            .collect();
        Ok(self.hydrated_envelope(
            OP,
            &req.namespace,
            results,
            truncation,
            freshness,
            ch.reports,
        ))
    }
}

impl Engine {
    /// Hybrid fact search: the fact labels and statements of live facts (all facts
    /// with `include_retired`), semantic and lexical channels fused.
    pub async fn search_facts(&self, req: SearchRequest) -> Result<Envelope<FactResult>> {
        let Some(namespace) = self.store.namespace(&req.namespace).await? else {
            self.paging(&req)?;
            return Ok(self.empty_envelope("search_facts", &req.namespace));
        };
        let filter = FactFilter {
            namespace_id: namespace.id,
            entities: req.entities.clone(),
            at: None,
            history: req.include_retired,
            overlap: None,
            documents: None,
            group: None,
            unsupported: false,
        };
        self.search_facts_in(&req, filter).await
    }

    /// Hybrid fact search over the facts `filter` admits (eligibility applies before
    /// the top-k cut).
    pub(super) async fn search_facts_in(
        &self,
        req: &SearchRequest,
        filter: FactFilter,
    ) -> Result<Envelope<FactResult>> {
        const OP: &str = "search_facts";
        let paging = self.paging(req)?;
        let ns = filter.namespace_id;
        let mut filter = filter;
        if filter.documents.is_none() {
            filter.documents = self.document_scope(ns, req.documents.as_ref()).await?;
        }
        let generation = self.component_version(Stage::EmbedFacts);
        let mut freshness = self.freshness(ns, &generation).await?;
        let coverage = self
            .coverage(
                ns,
                "facts",
                &generation,
                self.store.fact_vector_coverage(ns, &generation),
            )
            .await?;
        freshness.semantic = SemanticReadiness {
            generation: generation.clone(),
            ready: coverage.missing == 0,
            chunks: coverage.chunks,
            missing_vectors: coverage.missing,
            degraded: self.semantic_degraded(),
        };
        let store = &self.store;
        let ch = self
            .channels(
                &paging,
                coverage,
                "facts",
                |terms, depth| {
                    let filter = &filter;
                    async move { store.search_facts_lexical(filter, &terms, depth).await }
                },
                |qv, depth| {
                    let (filter, generation) = (&filter, &generation);
                    async move {
                        store
                            .search_facts_semantic(filter, generation, &qv, depth)
                            .await
                    }
                },
            )
            .await?;
        let (page, truncation) =
            fuse_page(&ch, &paging, &self.config.fusion, &self.relevance_curve().0);
        let ids: Vec<FactId> = page.iter().map(|f| f.id).collect();
        let records = self.store.facts(ns, &ids).await?;
        let mut records: HashMap<FactId, FactRecord> = self
            .present_facts(ns, records)
            .await?
            .into_iter()
            .map(|r| (r.fact_id, r))
            .collect();
        let results: Vec<FactResult> = page
            .into_iter()
            .filter_map(|f| {
                Some(FactResult {
                    fact: records.remove(&f.id)?,
                    scores: f.scores,
                    anchors: None,
                    contradiction: None,
                    support_state: None,
                    provenance: vec![],
                })
            })
            .collect();
        Ok(self.hydrated_envelope(
            OP,
            &req.namespace,
            results,
            truncation,
            freshness,
            ch.reports,
        ))
    }
}

impl Engine {
    /// The envelope of a search page after hydration. Candidates that vanished
    /// between ranking and hydration (a concurrent delete or re-chunk) are counted
    /// in `hydration_drops`, never silently.
    fn hydrated_envelope<R>(
        &self,
        operation: &str,
        namespace: &str,
        results: Vec<R>,
        ranked: Truncation,
        freshness: Freshness,
        channels: BTreeMap<String, ChannelReport>,
    ) -> Envelope<R> {
        let dropped = ranked.returned - results.len();
        let truncation = Truncation {
            returned: results.len(),
            ..ranked
        };
        let mut env = self.make_envelope(
            operation, namespace, results, truncation, freshness, channels,
        );
        if dropped > 0 {
            env.hydration_drops
                .insert("record_gone".into(), dropped as u64);
        }
        env
    }
}

/// Evidence spans as the envelope's character spans.
pub(super) fn char_spans(spans: &[crate::claims::EvidenceSpan]) -> Vec<CharSpan> {
    spans
        .iter()
        .map(|s| CharSpan {
            start: s.char_start as u64,
            end: s.char_end as u64,
        })
        .collect()
}

/// A chunk as a result, with its provenance.
pub(super) fn chunk_result(r: ChunkRecord, scores: Scores) -> ChunkResult {
    ChunkResult {
        chunk_id: r.chunk_id,
        document_id: r.document_id,
        document_title: r.document_title,
        version_id: r.version_id,
        source_kind: r.source_kind,
        source_ref: r.source_ref,
        text: r.text,
        section_path: r.section_path,
        section_role: r.section_role,
        char_span: CharSpan {
            start: r.char_start,
            end: r.char_end,
        },
        event_ids: r.event_ids,
        asserted_at: r.source_modified_at,
        scores,
    }
}

/// Fuse both channels, cut the page and build the continuation.
fn fuse_page<Id: Copy + Eq + Hash + Ord>(
    ch: &Channels<Id>,
    paging: &Paging,
    fusion: &crate::fuse::Fusion,
    curve: &crate::relevance::Calibration,
) -> (Vec<FusedHit<Id>>, Truncation) {
    let sem: HashMap<Id, f64> = ch.semantic.iter().copied().collect();
    let lex: HashMap<Id, f64> = ch.lexical.iter().copied().collect();
    // A hit the semantic list does not hold ranked below all it holds: its cosine is
    // at most the list's lowest (no list: nothing is known, 0).
    let unseen_cosine = ch
        .semantic
        .iter()
        .map(|h| h.1)
        .reduce(f64::min)
        .unwrap_or(0.0);
    let fused = fusion.fuse(&ch.semantic, &ch.lexical);
    let saturated = ch.lexical.len() >= paging.depth || ch.semantic.len() >= paging.depth;
    let page: Vec<FusedHit<Id>> = fused
        .iter()
        .skip(paging.offset)
        .take(paging.k)
        .map(|f| FusedHit {
            id: f.id,
            scores: Scores {
                semantic: f.ranks[0].map(|rank| ChannelScore {
                    rank,
                    score: sem.get(&f.id).copied().unwrap_or_default(),
                }),
                lexical: f.ranks[1].map(|rank| ChannelScore {
                    rank,
                    score: lex.get(&f.id).copied().unwrap_or_default(),
                }),
                fused: f.score,
                relevance: Some(curve.relevance(sem.get(&f.id).copied().unwrap_or(unseen_cosine))),
            },
        })
        .collect();
    let end = paging.offset + page.len();
    let continuation = if fused.len() > end {
        Some(encode_cursor(
            &paging.key,
            &Cursor {
                o: end,
                d: paging.depth,
                q: paging.digest.clone(),
            },
        ))
    } else if saturated && !page.is_empty() && paging.depth < limits::MAX_SEARCH_DEPTH {
        // The channels may hold more past this depth: ask for twice as many, up to
        // the deepest list one search may walk.
        Some(encode_cursor(
            &paging.key,
            &Cursor {
                o: end,
                d: (paging.depth * 2).min(limits::MAX_SEARCH_DEPTH),
                q: paging.digest.clone(),
            },
        ))
    } else {
        None
    };
    let truncation = Truncation {
        returned: page.len(),
        more_available: continuation.is_some(),
        continuation,
    };
    (page, truncation)
}

/// The section roles a chunk search admits, each once in a fixed order (body
/// alone by default): there are five roles, so whatever list a client sends, the
/// store sees one of 31 sets, never request-sized SQL text or cache keys.
fn distinct_roles(requested: Option<&[SectionRole]>) -> Vec<SectionRole> {
    const ALL: [SectionRole; 5] = [
        SectionRole::Body,
        SectionRole::References,
        SectionRole::Nav,
        SectionRole::Boilerplate,
        SectionRole::Legal,
    ];
    match requested {
        None => vec![SectionRole::Body],
        Some(roles) => ALL.into_iter().filter(|r| roles.contains(r)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_reach_the_store_deduplicated_in_one_order() {
        use SectionRole::*;
        assert_eq!(distinct_roles(None), vec![Body]);
        assert_eq!(
            distinct_roles(Some(&[Legal, Body, Legal, Body, Nav, Body])),
            vec![Body, Nav, Legal]
        );
        assert_eq!(distinct_roles(Some(&[])), Vec::<SectionRole>::new());
    }
}
