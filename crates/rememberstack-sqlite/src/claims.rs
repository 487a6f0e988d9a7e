//! Claims: storage of extractions, occurrences, the ledgers, currency and claim search.

use crate::CLAIM_SCOPE;
use crate::facts::fence_many;
use crate::rows::*;
use crate::{FTS_TOKENIZER, SqliteStore, db_err, insert_work, ns_table, parse_id, ts};
use rememberstack_core::Result;
use rememberstack_core::ids::*;
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::*;
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_sql::rows::{claim_row, extraction_decision_row, occurrence_row};
use sqlx::{AssertSqlSafe, Row};
use std::collections::{HashMap, HashSet};

/// The namespace's claim FTS5 table (`claim_fts_<uuid>`), rowid = claims.seq.
pub(crate) fn claim_fts_table(ns: &str) -> Result<String> {
    ns_table("claim_fts_", ns)
}

impl SqliteStore {
    pub(crate) async fn commit_extractions_impl(
        &self,
        ns: NamespaceId,
        items: Vec<(Lease, ExtractionCommit, Vec<NewWork>)>,
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        let ns_s = ns.to_string();
        let fts = claim_fts_table(&ns_s)?;
        let mut tx = self.write.begin().await.map_err(db_err)?;
        sqlx::query(AssertSqlSafe(format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5 (text, tokenize = {FTS_TOKENIZER})"
        )))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        // Every lease is fenced in one statement per owner; the extractions of the
        // leases still held are written together, a few multi-row statements per table.
        let held = fence_many(
            &mut tx,
            &items.iter().map(|(l, _, _)| l).collect::<Vec<_>>(),
            now,
        )
        .await?;
        let mut flags = Vec::with_capacity(items.len());
        let mut written = Vec::with_capacity(items.len());
        let mut follow_up = Vec::new();
        for (lease, x, work) in items {
            let ok = held.contains_key(&lease.work_id.to_string());
            flags.push(ok);
            if ok {
                written.push(x);
                follow_up.extend(work);
            }
        }
        write_extractions(&mut tx, &ns_s, &fts, &written, now).await?;
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(flags)
    }
}

/// Write the extractions a version's chunk commit carries over from an earlier
/// version ([`MemoryStore::commit_chunks_carrying`]), inside that commit.
pub(crate) async fn write_carried(
    tx: &mut sqlx::SqliteConnection,
    ns_s: &str,
    xs: &[ExtractionCommit],
    now: Timestamp,
) -> Result<()> {
    let fts = claim_fts_table(ns_s)?;
    sqlx::query(AssertSqlSafe(format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5 (text, tokenize = {FTS_TOKENIZER})"
    )))
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    write_extractions(tx, ns_s, &fts, xs, now).await
}

/// Write a batch of extractions: a retried extraction of a chunk replaces that chunk's
/// occurrences (claims are immutable rows; a re-run writes fresh ones only when it
/// extracted afresh), then the new claims, their FTS rows, the occurrences and the
/// decisions, in document order.
async fn write_extractions(
    tx: &mut sqlx::SqliteConnection,
    ns_s: &str,
    fts: &str,
    xs: &[ExtractionCommit],
    now: Timestamp,
) -> Result<()> {
    if xs.is_empty() {
        return Ok(());
    }
    let at = to_rfc3339(&now);
    let chunks: Vec<String> = xs.iter().map(|x| x.chunk_id.to_string()).collect();
    sqlx::query(crate::shared(
        &rememberstack_sql::claims::DELETE_OCCURRENCES_OF_CHUNKS,
    ))
    .bind(ns_s)
    .bind(crate::any_list(&chunks))
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    // Every value is encoded first; the rows then bind them by reference.
    // A claim two extractions of the batch cite is carried by both: written once.
    let mut seen = HashSet::new();
    let claims = xs
        .iter()
        .flat_map(|x| &x.claims)
        .filter(|c| seen.insert(c.id))
        .map(|c| {
            Ok((
                c,
                [
                    c.id.to_string(),
                    c.document_id.to_string(),
                    json(&c.added_context)?,
                    enum_str(&c.validity.precision)?,
                    enum_str(&c.validity.kind)?,
                    to_rfc3339(&c.asserted_at),
                    c.origin_version_id.to_string(),
                    c.origin_chunk_id.to_string(),
                ],
                c.validity.from.as_ref().map(to_rfc3339),
                c.validity.until.as_ref().map(to_rfc3339),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    insert_rows(
        tx,
        "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json, valid_from,
             valid_until, valid_precision, valid_kind, asserted_at, extractor_version,
             extraction_input_hash, origin_version_id, origin_chunk_id, embedding_key, claim_key,
             is_current, created_at) ",
        "",
        &claims,
        |mut row,
         (c, [id, doc, context, precision, kind, asserted, origin, chunk], from, until)| {
            row.push_bind(ns_s)
                .push_bind(id)
                .push_bind(doc)
                .push_bind(&c.text)
                .push_bind(context)
                .push_bind(from)
                .push_bind(until)
                .push_bind(precision)
                .push_bind(kind)
                .push_bind(asserted)
                .push_bind(&c.extractor_version)
                .push_bind(&c.extraction_input_hash)
                .push_bind(origin)
                .push_bind(chunk)
                .push_bind(&c.embedding_key)
                .push_bind(&c.claim_key)
                .push("0")
                .push_bind(&at);
        },
    )
    .await?;
    // The FTS rows take the claims' rowids as they were just assigned.
    let ids: Vec<String> = claims
        .iter()
        .map(|(_, [id, ..], _, _)| id.clone())
        .collect();
    execute_in_batches(
        tx,
        &format!(
            "INSERT INTO {fts} (rowid, text)
             SELECT seq, text FROM claims WHERE namespace_id = ? AND id IN ({{list}}) ORDER BY seq"
        ),
        &[ns_s],
        &ids,
    )
    .await?;
    let occurrences = xs
        .iter()
        .flat_map(|x| &x.occurrences)
        .map(|o| {
            Ok((
                o,
                [
                    o.chunk_id.to_string(),
                    o.claim_id.to_string(),
                    o.version_id.to_string(),
                    o.document_id.to_string(),
                    json(&o.spans)?,
                    json(&o.passages)?,
                    json(&o.event_ids)?,
                ],
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    insert_rows(
        tx,
        "INSERT INTO chunk_claims (namespace_id, chunk_id, claim_id, version_id, document_id,
             extractor_version, extraction_input_hash, ordinal, spans_json, passages_json,
             event_ids_json, reused, created_at) ",
        "",
        &occurrences,
        |mut row, (o, [chunk, claim, version, doc, spans, passages, events])| {
            row.push_bind(ns_s)
                .push_bind(chunk)
                .push_bind(claim)
                .push_bind(version)
                .push_bind(doc)
                .push_bind(&o.extractor_version)
                .push_bind(&o.extraction_input_hash)
                .push_bind(o.ordinal as i64)
                .push_bind(spans)
                .push_bind(passages)
                .push_bind(events)
                .push_bind(o.reused as i64)
                .push_bind(&at);
        },
    )
    .await?;
    let decisions = xs
        .iter()
        .flat_map(|x| x.decisions.iter().map(move |d| (x, d)))
        .map(|(x, d)| {
            Ok((
                x,
                d,
                [
                    x.document_id.to_string(),
                    x.version_id.to_string(),
                    x.chunk_id.to_string(),
                    json(&d.detail)?,
                ],
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    insert_rows(
        tx,
        "INSERT INTO claim_extraction_decisions (namespace_id, document_id, version_id, chunk_id,
             extraction_input_hash, extractor_version, kind, passage, reason, claim_id, detail_json, created_at) ",
        "",
        &decisions,
        |mut row, (x, d, [doc, version, chunk, detail])| {
            row.push_bind(ns_s)
                .push_bind(doc)
                .push_bind(version)
                .push_bind(chunk)
                .push_bind(&x.extraction_input_hash)
                .push_bind(&x.extractor_version)
                .push_bind(&d.kind)
                .push_bind(&d.passage)
                .push_bind(&d.reason)
                .push_bind(d.claim_id.map(|c| c.to_string()))
                .push_bind(detail)
                .push_bind(&at);
        },
    )
    .await?;
    Ok(())
}

impl SqliteStore {
    pub(crate) async fn prior_extractions_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        hashes: &[String],
    ) -> Result<Vec<(String, PriorExtraction)>> {
        let ns_s = ns.to_string();
        let mut found: Vec<(String, String)> = Vec::new();
        // One snapshot for both reads: a conversation compaction committing between
        // them could otherwise take a chunk's occurrences after its decision was read.
        let mut tx = self.read.begin().await.map_err(db_err)?;
        for batch in hashes.chunks(400) {
            // The newest fresh (non-reuse) extraction of each input in the lineage
            // whose chunk is still there (compaction drops the chunks of inputs no
            // retained version uses). Deleted versions are excluded by a key look-up
            // per row: a correlated `NOT IN` list scans every version of the lineage
            // per row, quadratic in a conversation's appends.
            let sql = format!(
                "SELECT extraction_input_hash, chunk_id, MAX(seq) AS seq FROM claim_extraction_decisions
                 WHERE namespace_id = ? AND document_id = ? AND kind <> 'reused'
                   AND EXISTS (SELECT 1 FROM chunks k WHERE k.namespace_id = claim_extraction_decisions.namespace_id
                                 AND k.id = claim_extraction_decisions.chunk_id)
                   AND extraction_input_hash IN ({})
                   AND NOT EXISTS (SELECT 1 FROM document_versions v
                        WHERE v.namespace_id = claim_extraction_decisions.namespace_id
                          AND v.id = claim_extraction_decisions.version_id
                          AND v.deleted_at IS NOT NULL)
                 GROUP BY extraction_input_hash",
                in_list(batch.len())
            );
            let mut q = sqlx::query(AssertSqlSafe(sql))
                .bind(&ns_s)
                .bind(doc.to_string());
            for h in batch {
                q = q.bind(h);
            }
            for r in q.fetch_all(&mut *tx).await.map_err(db_err)? {
                found.push((r.get("extraction_input_hash"), r.get("chunk_id")));
            }
        }
        let mut by_chunk: HashMap<String, Vec<Occurrence>> = HashMap::new();
        if !found.is_empty() {
            let chunks: Vec<&str> = found.iter().map(|(_, c)| c.as_str()).collect();
            let rows = sqlx::query(crate::shared(
                &rememberstack_sql::claims::OCCURRENCES_OF_CHUNKS,
            ))
            .bind(&ns_s)
            .bind(crate::any_list(&chunks))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            for r in rows {
                let o = occurrence_row(&r)?;
                by_chunk.entry(o.chunk_id.to_string()).or_default().push(o);
            }
        }
        found
            .into_iter()
            .map(|(hash, chunk)| {
                Ok((
                    hash,
                    PriorExtraction {
                        chunk_id: parse_id(&chunk)?,
                        occurrences: by_chunk.remove(&chunk).unwrap_or_default(),
                    },
                ))
            })
            .collect()
    }

    pub(crate) async fn claims_by_key_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        keys: &[String],
    ) -> Result<Vec<(String, ClaimId)>> {
        if keys.is_empty() {
            return Ok(vec![]);
        }
        sqlx::query(crate::shared(&rememberstack_sql::claims::CLAIMS_BY_KEY))
            .bind(ns.to_string())
            .bind(doc.to_string())
            .bind(crate::any_list(keys))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?
            .iter()
            .map(|r| Ok((r.get("claim_key"), parse_id(&r.get::<String, _>("id"))?)))
            .collect()
    }

    pub(crate) async fn version_claims_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
        extractor_version: &str,
    ) -> Result<Vec<ClaimId>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::claims::CLAIMS_OF_VERSION))
            .bind(ns.to_string())
            .bind(version.to_string())
            .bind(extractor_version)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| parse_id(&r.get::<String, _>("claim_id")))
            .collect()
    }

    pub(crate) async fn current_claim_refs_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<(ClaimId, String)>> {
        let rows = sqlx::query(
            "SELECT id, extractor_version FROM claims
             WHERE namespace_id = ? AND document_id = ? AND is_current = 1",
        )
        .bind(ns.to_string())
        .bind(doc.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&r.get::<String, _>("id"))?,
                    r.get("extractor_version"),
                ))
            })
            .collect()
    }

    pub(crate) async fn apply_currency_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        current: &[ClaimId],
        reason: &str,
        version: Option<VersionId>,
        now: Timestamp,
    ) -> Result<u64> {
        let ns_s = ns.to_string();
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        // A deleted lineage publishes no testimony (D135): work that lands after the
        // tombstone leaves its claims retired.
        let deleted: Option<String> = sqlx::query_scalar(crate::shared(
            &rememberstack_sql::lifecycle::DOCUMENT_DELETED_AT,
        ))
        .bind(&ns_s)
        .bind(doc.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .flatten();
        let mut want: HashSet<String> = if deleted.is_some() {
            HashSet::new()
        } else {
            current.iter().map(|c| c.to_string()).collect()
        };
        // A retracted claim is never current testimony again.
        let retracted: Vec<String> = sqlx::query_scalar(crate::shared(
            &rememberstack_sql::claims::RETRACTED_CLAIMS_OF_DOCUMENT,
        ))
        .bind(&ns_s)
        .bind(doc.to_string())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        for id in retracted {
            want.remove(&id);
        }
        let rows = sqlx::query(
            "SELECT id, is_current FROM claims WHERE namespace_id = ? AND document_id = ?",
        )
        .bind(&ns_s)
        .bind(doc.to_string())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let changes: Vec<(String, bool)> = rows
            .iter()
            .filter_map(|r| {
                let id: String = r.get("id");
                let should = want.contains(&id);
                (should != (r.get::<i64, _>("is_current") != 0)).then_some((id, should))
            })
            .collect();
        for should in [true, false] {
            let ids: Vec<String> = changes
                .iter()
                .filter(|(_, s)| *s == should)
                .map(|(id, _)| id.clone())
                .collect();
            execute_in_batches(
                &mut tx,
                &format!(
                    "UPDATE claims SET is_current = {} WHERE namespace_id = ? AND id IN ({{list}})",
                    should as i64
                ),
                &[&ns_s],
                &ids,
            )
            .await?;
        }
        let version = version.map(|v| v.to_string());
        insert_rows(
            &mut tx,
            "INSERT INTO claim_currency_events (namespace_id, claim_id, is_current, reason, version_id, created_at) ",
            "",
            &changes,
            |mut row, (id, should)| {
                row.push_bind(&ns_s)
                    .push_bind(id)
                    .push_bind(*should as i64)
                    .push_bind(reason)
                    .push_bind(&version)
                    .push_bind(&at);
            },
        )
        .await?;
        if let Some(v) = &version {
            sqlx::query(crate::shared(&rememberstack_sql::claims::CURRENCY_DONE))
                .bind(&ns_s)
                .bind(v)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let changed = changes.len() as u64;
        tx.commit().await.map_err(db_err)?;
        Ok(changed)
    }

    async fn attach_occurrences(&self, ns: &str, claims: &mut [ClaimRecord]) -> Result<()> {
        if claims.is_empty() {
            return Ok(());
        }
        let mut by_claim: HashMap<ClaimId, Vec<(i64, Occurrence)>> = HashMap::new();
        let ids: Vec<ClaimId> = claims.iter().map(|c| c.claim_id).collect();
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::claims::OCCURRENCES_OF_CLAIMS,
        ))
        .bind(ns)
        .bind(crate::any_list(&ids))
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        for r in rows {
            let o = occurrence_row(&r)?;
            by_claim
                .entry(o.claim_id)
                .or_default()
                .push((r.get::<i64, _>("version_ordinal"), o));
        }
        for c in claims.iter_mut() {
            let mut occ = by_claim.remove(&c.claim_id).unwrap_or_default();
            occ.sort_by_key(|(ord, o)| (*ord, o.chunk_id));
            c.occurrences = occ.into_iter().map(|(_, o)| o).collect();
        }
        Ok(())
    }

    pub(crate) async fn list_claims_impl(
        &self,
        filter: &ClaimFilter,
        limit: u32,
    ) -> Result<Vec<ClaimRecord>> {
        let ns_s = filter.namespace_id.to_string();
        let rows = sqlx::query(crate::shared(&rememberstack_sql::claims::LIST_CLAIMS))
            .bind(&ns_s)
            .bind(filter.document_id.map(|d| d.to_string()))
            .bind(filter.document_id.map(|d| d.to_string()))
            .bind(filter.include_retired)
            .bind(limit as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        let mut claims = rows.iter().map(claim_row).collect::<Result<Vec<_>>>()?;
        self.attach_occurrences(&ns_s, &mut claims).await?;
        Ok(claims)
    }

    pub(crate) async fn claims_impl(
        &self,
        ns: NamespaceId,
        ids: &[ClaimId],
    ) -> Result<Vec<ClaimRecord>> {
        let ns_s = ns.to_string();
        let mut by_id: HashMap<ClaimId, ClaimRecord> = HashMap::new();
        let rows = sqlx::query(crate::shared(&rememberstack_sql::claims::CLAIMS_BY_ID))
            .bind(&ns_s)
            .bind(crate::any_list(ids))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        for r in rows {
            let c = claim_row(&r)?;
            by_id.insert(c.claim_id, c);
        }
        let mut claims: Vec<ClaimRecord> = ids.iter().filter_map(|id| by_id.remove(id)).collect();
        self.attach_occurrences(&ns_s, &mut claims).await?;
        Ok(claims)
    }

    pub(crate) async fn decisions_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<DecisionRecord>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::claims::EXTRACTION_DECISIONS,
        ))
        .bind(ns.to_string())
        .bind(doc.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(DecisionRecord {
                    version_id: parse_id(&r.get::<String, _>("version_id"))?,
                    chunk_id: parse_id(&r.get::<String, _>("chunk_id"))?,
                    extractor_version: r.get("extractor_version"),
                    row: extraction_decision_row(r)?,
                    created_at: ts(&r.get::<String, _>("created_at"))?,
                })
            })
            .collect()
    }

    pub(crate) async fn search_claims_lexical_impl(
        &self,
        filter: &ClaimFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        if terms.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        let ns_s = filter.namespace_id.to_string();
        let fts = claim_fts_table(&ns_s)?;
        if !self.table_exists(&fts).await? {
            return Ok(vec![]);
        }
        if filter.entities.is_empty() && filter.documents.is_none() && filter.document_id.is_none()
        {
            let (ns_c, retired) = (ns_s.clone(), filter.include_retired);
            let sql = "SELECT c.seq AS seq, c.id AS id FROM claims c
                 WHERE c.seq IN (SELECT value FROM json_each(?)) AND c.namespace_id = ?
                   AND (? OR c.is_current = 1)";
            return self
                .two_phase_lexical(filter.namespace_id, &fts, terms, limit, |list| {
                    sqlx::query(sql).bind(list).bind(ns_c.clone()).bind(retired)
                })
                .await?
                .into_iter()
                .map(|(id, score)| {
                    Ok(ClaimHit {
                        claim_id: parse_id(&id)?,
                        score,
                    })
                })
                .collect();
        }
        let sql = format!(
            "SELECT c.id, bm25({fts}) AS rank FROM {fts}
             JOIN claims c ON c.seq = {fts}.rowid
             WHERE {fts} MATCH ? AND c.namespace_id = ? AND (? OR c.is_current = 1)
               AND (? IS NULL OR c.document_id = ?) AND {CLAIM_SCOPE}
             ORDER BY rank, c.id LIMIT ?"
        );
        let q = sqlx::query(AssertSqlSafe(sql))
            .bind(crate::fts_query(terms))
            .bind(&ns_s)
            .bind(filter.include_retired)
            .bind(filter.document_id.map(|d| d.to_string()))
            .bind(filter.document_id.map(|d| d.to_string()));
        let rows = crate::bind_scope(
            q,
            filter.namespace_id,
            &filter.entities,
            filter.documents.as_deref(),
        )
        .bind(limit as i64)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        Ok(bm25_hits(&rows)?
            .into_iter()
            .map(|(claim_id, score)| ClaimHit { claim_id, score })
            .collect())
    }

    pub(crate) async fn search_claims_semantic_impl(
        &self,
        filter: &ClaimFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let ns_s = filter.namespace_id.to_string();
        let stamp = self.change_stamp(filter.namespace_id).await?;
        let sql = |vectors: &str| {
            format!(
                "SELECT c.id, c.embedding_key FROM claims c {vectors}
                 WHERE c.namespace_id = ? AND (? OR c.is_current = 1) AND (? IS NULL OR c.document_id = ?)
                   AND {CLAIM_SCOPE}"
            )
        };
        let statement = crate::vector_cache::Eligibility {
            table: "claims",
            id_column: "c.id",
            key: format!(
                "claims|{}|{:?}|{:?}|{:?}",
                filter.include_retired, filter.document_id, filter.entities, filter.documents
            ),
            scoped: !filter.entities.is_empty()
                || filter.documents.is_some()
                || filter.document_id.is_some(),
            exact: false,
            sql: sql(&crate::vector_cache::vectors_join("c")),
            check: sql(crate::vector_cache::VECTOR_IMPLIED),
            bind: crate::vector_cache::binder(|q| {
                let q = q
                    .bind(generation)
                    .bind(ns_s.as_str())
                    .bind(filter.include_retired)
                    .bind(filter.document_id.map(|d| d.to_string()))
                    .bind(filter.document_id.map(|d| d.to_string()));
                crate::bind_scope(
                    q,
                    filter.namespace_id,
                    &filter.entities,
                    filter.documents.as_deref(),
                )
            }),
        };
        Ok(self
            .vector_cache
            .search(
                &self.read, &ns_s, generation, stamp, statement, query, limit,
            )
            .await?
            .into_iter()
            .map(|(claim_id, score)| ClaimHit { claim_id, score })
            .collect())
    }

    pub(crate) async fn claims_missing_vectors_impl(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<(ClaimId, VersionId)>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::claims::CLAIMS_MISSING_VECTORS,
        ))
        .bind(generation)
        .bind(ns.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&r.get::<String, _>("id"))?,
                    parse_id(&r.get::<String, _>("origin_version_id"))?,
                ))
            })
            .collect()
    }

    pub(crate) async fn record_call_impl(&self, call: CallRecord, now: Timestamp) -> Result<()> {
        let at = to_rfc3339(&now);
        let ns = call.namespace_id.to_string();
        let mut tx = self.write.begin().await.map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::ledger::INSERT_COST))
            .bind(&ns)
            .bind(call.processing_id.to_string())
            .bind(call.attempt as i64)
            .bind(&call.call_key)
            .bind(call.stage.as_str())
            .bind(&call.model)
            .bind(call.prompt_tokens as i64)
            .bind(call.completion_tokens as i64)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::ledger::INSERT_TRANSCRIPT))
            .bind(&ns)
            .bind(call.processing_id.to_string())
            .bind(call.attempt as i64)
            .bind(&call.call_key)
            .bind(&call.request_hash)
            .bind(&call.model)
            .bind(&call.prompt_version)
            .bind(&call.raw_output)
            .bind(&call.verdict)
            .bind(&call.reason)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn call_costs_impl(
        &self,
        ns: NamespaceId,
    ) -> Result<Vec<(String, String, u64, u64)>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::ledger::COSTS))
            .bind(ns.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        Ok(rows
            .iter()
            .map(|r| {
                (
                    r.get("call_key"),
                    r.get("model"),
                    r.get::<i64, _>("prompt_tokens") as u64,
                    r.get::<i64, _>("completion_tokens") as u64,
                )
            })
            .collect())
    }

    pub(crate) async fn table_exists(&self, name: &str) -> Result<bool> {
        Ok(
            sqlx::query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
                .bind(name)
                .fetch_optional(&self.read)
                .await
                .map_err(db_err)?
                .is_some(),
        )
    }
}

#[cfg(test)]
mod list_plan_tests {
    use rememberstack_sql::{Dialect, Statement};
    use sqlx::AssertSqlSafe;

    /// Every shared read or write by a list of ids (`{ANY}`, one JSON array here)
    /// reaches its rows through an index on the listed column, as the batched
    /// `IN (?, …)` lists it replaced did: a plan that scans the table, or only
    /// narrows to the namespace, would read every row per call. The two that match
    /// either of two columns (`a`/`b`, `from_id`/`into_id`) read the namespace's
    /// rows as they always did and are not listed.
    #[tokio::test]
    async fn every_list_statement_reaches_its_rows_through_an_index() {
        let (_dir, store, _ns) = crate::entities::tests::open().await;
        // Statistics of a store of ten namespaces, as `ANALYZE` leaves them (an
        // empty store's planner has none and picks other plans): 10,000 rows an
        // index, 1,000 a namespace, 40 per value of its second column.
        sqlx::query("ANALYZE").execute(&store.write).await.unwrap();
        let indexes: Vec<(String, String)> = sqlx::query_as(
            "SELECT tbl_name, name FROM sqlite_schema WHERE type = 'index' AND tbl_name NOT LIKE '%fts%'",
        )
        .fetch_all(&store.write)
        .await
        .unwrap();
        for (table, index) in indexes {
            let columns: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM pragma_index_info('{index}')"
            )))
            .fetch_one(&store.write)
            .await
            .unwrap();
            let mut stat = vec!["10000", "1000", "40"];
            stat.resize(columns as usize + 1, "1");
            stat.truncate(columns as usize + 1);
            sqlx::query("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)")
                .bind(table)
                .bind(index)
                .bind(stat.join(" "))
                .execute(&store.write)
                .await
                .unwrap();
        }
        sqlx::query("ANALYZE sqlite_schema")
            .execute(&store.write)
            .await
            .unwrap();
        let shared: [&'static Statement; 10] = [
            &rememberstack_sql::claims::CLAIMS_BY_ID,
            &rememberstack_sql::claims::OCCURRENCES_OF_CLAIMS,
            &rememberstack_sql::claims::OCCURRENCES_OF_CHUNKS,
            &rememberstack_sql::claims::DELETE_OCCURRENCES_OF_CHUNKS,
            &rememberstack_sql::claims::CLAIMS_BY_KEY,
            &rememberstack_sql::documents::CHUNKS_BY_ID,
            &rememberstack_sql::documents::EXISTING_VECTORS,
            &rememberstack_sql::entities::ALIASES_OF_ENTITIES,
            &rememberstack_sql::entities::DECISIONS_OF_ENTITIES,
            &rememberstack_sql::facts::CONTRADICTIONS_NOT_KEPT,
        ];
        let mut statements: Vec<String> = shared
            .iter()
            .map(|s| s.sql(Dialect::Sqlite).to_string())
            .collect();
        statements.push(Dialect::Sqlite.render(&rememberstack_sql::facts::facts_by_id()));
        for statement in &statements {
            assert!(statement.contains("json_each"), "{statement}");
        }
        let bad = crate::entities::tests::plans_without_an_index(&store, &statements).await;
        assert!(
            bad.is_empty(),
            "plans without an index on the listed column:\n{}",
            bad.join("\n")
        );
    }
}
