//! Claims (E2): extraction commits, reuse lookups, currency, claim reads, claim search
//! and claim vector coverage.
//!
//! Ported statement by statement from the SQLite store's `claims.rs`. Differences
//! that come with the engine:
//! - full text lives in `claim_lexical` (generated `rs_english` `tsvector` and
//!   length), written with each claim; lexical search ranks with BM25 computed in
//!   SQL from the namespace's stored term statistics (migration 0011) in one
//!   statement with the eligibility filters;
//! - semantic search ranks in SQL with pgvector's cosine distance on a
//!   dimension-cast expression (so a per-generation HNSW partial index can serve
//!   it), then re-sorts the rows by exact similarity, ties by id, as SQLite does;
//! - `apply_currency` serialises per lineage with a transaction-scoped advisory
//!   lock and row locks, where SQLite relies on its single writer.

use crate::ledger::{fence_many, insert_work};
use crate::rows::get;
use crate::search::BM25_SCORE;
use crate::{PgStore, column, db_err, json_text, parse_id};
use rememberstack_core::ids::{ChunkId, ClaimId, DocumentId, NamespaceId, VersionId};
use rememberstack_core::ledger::NewWork;
use rememberstack_core::store::{
    ClaimFilter, ClaimHit, ClaimRecord, DecisionRecord, DecisionRow, ExtractionCommit, Lease,
    NewClaim, Occurrence, PriorExtraction,
};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, Result};
use rememberstack_sql::rows::{claim_row, extraction_decision_row, occurrence_row};
use sqlx::{AssertSqlSafe, PgConnection};
use std::collections::{HashMap, HashSet};

/// The largest dimension pgvector's `vector` type holds.
const MAX_DIM: usize = 16_000;
/// Rows semantic search fetches beyond its limit, so that ties at the cut can be
/// broken by id as SQLite does.
const TIE_MARGIN: usize = 32;

/// The serde name of a unit enum variant, from its `serde_json::to_value`.
fn enum_str(v: serde_json::Result<serde_json::Value>) -> Result<String> {
    match v.map_err(|e| Error::internal(e.to_string()))? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(Error::internal(format!("not a unit variant: {other}"))),
    }
}

/// Entity anchoring and document scoping of claim search (alias `c`), the port of
/// SQLite's `CLAIM_SCOPE`: `$ns` the namespace, then (anchor applies, anchored
/// entity ids, scope applies, scoped lineages) at `$first..$first+3` (an empty
/// scope admits nothing).
fn claim_scope(ns: usize, first: usize) -> String {
    let (a, b, c, d) = (first, first + 1, first + 2, first + 3);
    format!(
        "(NOT ${a}::boolean OR c.id IN (
            SELECT m.claim_id FROM entity_mentions m
            WHERE m.namespace_id = ${ns} AND m.entity_id = ANY(${b}::text[])))
         AND (NOT ${c}::boolean OR c.document_id = ANY(${d}::text[]))"
    )
}

/// Write extraction commits (see `MemoryStore::commit_extractions`) with one
/// statement per kind of row, leaving what writing them one at a time would: a
/// retried extraction of a chunk replaces its occurrences (claims are immutable
/// rows; a re-run writes fresh ones only when it extracted afresh), so a chunk's
/// occurrences are those of its last commit; a claim two commits cite is written
/// once; rows go in in commit order.
async fn write_extractions(
    tx: &mut PgConnection,
    ns_s: &str,
    xs: &[&ExtractionCommit],
    now: Timestamp,
) -> Result<()> {
    if xs.is_empty() {
        return Ok(());
    }
    let chunk_ids: Vec<String> = xs.iter().map(|x| x.chunk_id.to_string()).collect();
    sqlx::query(crate::shared(
        &rememberstack_sql::claims::DELETE_OCCURRENCES_OF_CHUNKS,
    ))
    .bind(ns_s)
    .bind(&chunk_ids)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    let mut written: HashSet<ClaimId> = HashSet::new();
    let claims: Vec<&NewClaim> = xs
        .iter()
        .flat_map(|x| x.claims.iter())
        .filter(|c| written.insert(c.id))
        .collect();
    if !claims.is_empty() {
        let mut contexts = Vec::with_capacity(claims.len());
        let mut precisions = Vec::with_capacity(claims.len());
        let mut kinds = Vec::with_capacity(claims.len());
        for c in &claims {
            contexts.push(json_text(&c.added_context)?);
            precisions.push(enum_str(serde_json::to_value(c.validity.precision))?);
            kinds.push(enum_str(serde_json::to_value(c.validity.kind))?);
        }
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json, valid_from,
                 valid_until, valid_precision, valid_kind, asserted_at, extractor_version,
                 extraction_input_hash, origin_version_id, origin_chunk_id, embedding_key, claim_key,
                 is_current, created_at)
             SELECT $1, c.id, c.document, c.text, c.context::jsonb, c.valid_from, c.valid_until,
                    c.precision, c.kind, c.asserted_at, c.extractor, c.input_hash, c.origin_version,
                    c.origin_chunk, c.embedding_key, c.claim_key, false, $17
               FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
                           $7::timestamptz[], $8::text[], $9::text[], $10::timestamptz[],
                           $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
                           $16::text[])
                    WITH ORDINALITY AS c(id, document, text, context, valid_from, valid_until,
                                         precision, kind, asserted_at, extractor, input_hash,
                                         origin_version, origin_chunk, embedding_key, claim_key, i)
              ORDER BY c.i
             RETURNING seq, text",
        )
        .bind(ns_s)
        .bind(column(&claims, |c| c.id.to_string()))
        .bind(column(&claims, |c| c.document_id.to_string()))
        .bind(column(&claims, |c| c.text.as_str()))
        .bind(&contexts)
        .bind(column(&claims, |c| c.validity.from))
        .bind(column(&claims, |c| c.validity.until))
        .bind(&precisions)
        .bind(&kinds)
        .bind(column(&claims, |c| c.asserted_at))
        .bind(column(&claims, |c| c.extractor_version.as_str()))
        .bind(column(&claims, |c| c.extraction_input_hash.as_str()))
        .bind(column(&claims, |c| c.origin_version_id.to_string()))
        .bind(column(&claims, |c| c.origin_chunk_id.to_string()))
        .bind(column(&claims, |c| c.embedding_key.as_str()))
        .bind(column(&claims, |c| c.claim_key.as_str()))
        .bind(now)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let (seqs, texts): (Vec<i64>, Vec<String>) = rows.into_iter().unzip();
        crate::insert_lexical(
            &mut *tx,
            rememberstack_sql::LexicalIndex::Claims,
            ns_s,
            &seqs,
            &texts,
        )
        .await?;
    }
    // A chunk's occurrences are its last commit's (a later commit of the same
    // chunk replaced the earlier one's).
    let last: HashMap<ChunkId, usize> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| (x.chunk_id, i))
        .collect();
    let occurrences: Vec<&Occurrence> = xs
        .iter()
        .enumerate()
        .filter(|(i, x)| last.get(&x.chunk_id) == Some(i))
        .flat_map(|(_, x)| &x.occurrences)
        .collect();
    insert_occurrences(tx, ns_s, &occurrences, now).await?;
    insert_decisions(tx, ns_s, xs, now).await
}

/// Write the extractions a version's chunk commit carries over from an earlier
/// version ([`MemoryStore::commit_chunks_carrying`]): reuses (occurrences and
/// decisions only) and any fresh extraction among them, one array-bound statement
/// per table however many chunks.
pub(crate) async fn write_carried(
    tx: &mut PgConnection,
    ns_s: &str,
    xs: &[ExtractionCommit],
    now: Timestamp,
) -> Result<()> {
    let xs: Vec<&ExtractionCommit> = xs.iter().collect();
    write_extractions(tx, ns_s, &xs, now).await
}

/// Insert chunk occurrences, in order.
async fn insert_occurrences(
    tx: &mut PgConnection,
    ns_s: &str,
    occurrences: &[&Occurrence],
    now: Timestamp,
) -> Result<()> {
    if occurrences.is_empty() {
        return Ok(());
    }
    let ordinals = occurrences
        .iter()
        .map(|o| i32::try_from(o.ordinal).map_err(|_| Error::internal("ordinal out of range")))
        .collect::<Result<Vec<i32>>>()?;
    let spans = occurrences
        .iter()
        .map(|o| json_text(&o.spans))
        .collect::<Result<Vec<_>>>()?;
    let passages = occurrences
        .iter()
        .map(|o| json_text(&o.passages))
        .collect::<Result<Vec<_>>>()?;
    let events = occurrences
        .iter()
        .map(|o| json_text(&o.event_ids))
        .collect::<Result<Vec<_>>>()?;
    sqlx::query(
        "INSERT INTO chunk_claims (namespace_id, chunk_id, claim_id, version_id, document_id,
             extractor_version, extraction_input_hash, ordinal, spans_json, passages_json,
             event_ids_json, reused, created_at)
         SELECT $1, c, l, v, d, e, h, o, s::jsonb, p::jsonb, ev::jsonb, r, $12
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                     $8::int4[], $9::text[], $10::text[], $11::text[], $13::bool[]) WITH ORDINALITY
              AS t(c, l, v, d, e, h, o, s, p, ev, r, n)
         ORDER BY n",
    )
    .bind(ns_s)
    .bind(column(occurrences, |o| o.chunk_id.to_string()))
    .bind(column(occurrences, |o| o.claim_id.to_string()))
    .bind(column(occurrences, |o| o.version_id.to_string()))
    .bind(column(occurrences, |o| o.document_id.to_string()))
    .bind(column(occurrences, |o| o.extractor_version.as_str()))
    .bind(column(occurrences, |o| o.extraction_input_hash.as_str()))
    .bind(ordinals)
    .bind(spans)
    .bind(passages)
    .bind(events)
    .bind(now)
    .bind(column(occurrences, |o| o.reused))
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Append the commits' extraction decisions, in order.
async fn insert_decisions(
    tx: &mut PgConnection,
    ns_s: &str,
    xs: &[&ExtractionCommit],
    now: Timestamp,
) -> Result<()> {
    let decisions: Vec<(&ExtractionCommit, &DecisionRow)> = xs
        .iter()
        .flat_map(|x| x.decisions.iter().map(move |d| (*x, d)))
        .collect();
    if decisions.is_empty() {
        return Ok(());
    }
    let details = decisions
        .iter()
        .map(|(_, d)| json_text(&d.detail))
        .collect::<Result<Vec<_>>>()?;
    sqlx::query(
        "INSERT INTO claim_extraction_decisions (namespace_id, document_id, version_id, chunk_id,
             extraction_input_hash, extractor_version, kind, passage, reason, claim_id, detail_json,
             created_at)
         SELECT $1, d, v, c, h, e, k, p, r, l, j::jsonb, $12
         FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                     $8::text[], $9::text[], $10::text[], $11::text[]) WITH ORDINALITY
              AS t(d, v, c, h, e, k, p, r, l, j, n)
         ORDER BY n",
    )
    .bind(ns_s)
    .bind(column(&decisions, |(x, _)| x.document_id.to_string()))
    .bind(column(&decisions, |(x, _)| x.version_id.to_string()))
    .bind(column(&decisions, |(x, _)| x.chunk_id.to_string()))
    .bind(column(&decisions, |(x, _)| {
        x.extraction_input_hash.as_str()
    }))
    .bind(column(&decisions, |(x, _)| x.extractor_version.as_str()))
    .bind(column(&decisions, |(_, d)| d.kind.as_str()))
    .bind(column(&decisions, |(_, d)| d.passage.as_deref()))
    .bind(column(&decisions, |(_, d)| d.reason.as_deref()))
    .bind(column(&decisions, |(_, d)| {
        d.claim_id.map(|c| c.to_string())
    }))
    .bind(details)
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

impl PgStore {
    pub(crate) async fn commit_extractions_impl(
        &self,
        ns: NamespaceId,
        items: Vec<(Lease, ExtractionCommit, Vec<NewWork>)>,
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        let ns_s = ns.to_string();
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let leases: Vec<Lease> = items.iter().map(|(l, _, _)| l.clone()).collect();
        let fenced = fence_many(&mut tx, &leases, now).await?;
        let held: Vec<&(Lease, ExtractionCommit, Vec<NewWork>)> = items
            .iter()
            .zip(&fenced)
            .filter(|(_, ns)| ns.is_some())
            .map(|(item, _)| item)
            .collect();
        let xs: Vec<&ExtractionCommit> = held.iter().map(|(_, x, _)| x).collect();
        write_extractions(&mut tx, &ns_s, &xs, now).await?;
        let follow_up: Vec<NewWork> = held
            .iter()
            .flat_map(|(_, _, w)| w.iter().cloned())
            .collect();
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(fenced.iter().map(Option::is_some).collect())
    }

    pub(crate) async fn prior_extractions_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        hashes: &[String],
    ) -> Result<Vec<(String, PriorExtraction)>> {
        let ns_s = ns.to_string();
        // One snapshot for both reads: a conversation compaction committing between
        // them could otherwise take a chunk's occurrences after its decision was read.
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // The newest fresh (non-reuse) extraction of each input in the lineage whose
        // chunk is still there (SQLite: MAX(seq) with its row's chunk_id; here
        // DISTINCT ON, newest first).
        let rows = sqlx::query(
            "SELECT DISTINCT ON (extraction_input_hash) extraction_input_hash, chunk_id
             FROM claim_extraction_decisions d
             WHERE namespace_id = $1 AND document_id = $2 AND kind <> 'reused'
               AND EXISTS (SELECT 1 FROM chunks k WHERE k.namespace_id = d.namespace_id
                             AND k.id = d.chunk_id)
               AND extraction_input_hash = ANY($3::text[])
               AND version_id NOT IN (SELECT id FROM document_versions
                    WHERE namespace_id = d.namespace_id AND document_id = d.document_id
                      AND deleted_at IS NOT NULL)
             ORDER BY extraction_input_hash, seq DESC",
        )
        .bind(&ns_s)
        .bind(doc.to_string())
        .bind(hashes.to_vec())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut found: Vec<(String, String)> = Vec::with_capacity(rows.len());
        for r in &rows {
            found.push((get(r, "extraction_input_hash")?, get(r, "chunk_id")?));
        }
        let mut by_chunk: HashMap<String, Vec<Occurrence>> = HashMap::new();
        if !found.is_empty() {
            let chunks: Vec<String> = found.iter().map(|(_, c)| c.clone()).collect();
            let rows = sqlx::query(crate::shared(
                &rememberstack_sql::claims::OCCURRENCES_OF_CHUNKS,
            ))
            .bind(&ns_s)
            .bind(chunks)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            for r in &rows {
                let o = occurrence_row(r)?;
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
        let rows = sqlx::query(crate::shared(&rememberstack_sql::claims::CLAIMS_BY_KEY))
            .bind(ns.to_string())
            .bind(doc.to_string())
            .bind(keys.to_vec())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| Ok((get(r, "claim_key")?, parse_id(&get::<String>(r, "id")?)?)))
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
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| parse_id(&get::<String>(r, "claim_id")?))
            .collect()
    }

    pub(crate) async fn current_claim_refs_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<(ClaimId, String)>> {
        let rows = sqlx::query(
            "SELECT id, extractor_version FROM claims
             WHERE namespace_id = $1 AND document_id = $2 AND is_current
             ORDER BY seq",
        )
        .bind(ns.to_string())
        .bind(doc.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&get::<String>(r, "id")?)?,
                    get(r, "extractor_version")?,
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
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        // SQLite's single writer serialises currency changes; here one lineage's
        // changes serialise on an advisory lock, then the lineage row (its tombstone)
        // and the lineage's claim rows are locked, in that order (a deletion writes
        // the document before its claims), before the retractions are read.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("claims-currency:{ns_s}:{doc}"))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // A deleted lineage publishes no testimony (D135): work that lands after the
        // tombstone leaves its claims retired.
        let deleted: Option<Timestamp> = sqlx::query_scalar::<_, Option<Timestamp>>(
            "SELECT deleted_at FROM documents WHERE namespace_id = $1 AND id = $2 FOR SHARE",
        )
        .bind(&ns_s)
        .bind(doc.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        .flatten();
        let rows = sqlx::query(
            "SELECT id, is_current FROM claims WHERE namespace_id = $1 AND document_id = $2
             ORDER BY seq FOR UPDATE",
        )
        .bind(&ns_s)
        .bind(doc.to_string())
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
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
        // The claims whose currency changes, in `seq` order: one statement updates
        // them and one records their events, in that order.
        let (mut ids, mut values) = (Vec::new(), Vec::new());
        for r in &rows {
            let id: String = get(r, "id")?;
            let is: bool = get(r, "is_current")?;
            let should = want.contains(&id);
            if is != should {
                ids.push(id);
                values.push(should);
            }
        }
        let changed = ids.len() as u64;
        if !ids.is_empty() {
            sqlx::query(
                "UPDATE claims c SET is_current = u.is_current
                   FROM unnest($2::text[], $3::bool[]) AS u(id, is_current)
                  WHERE c.namespace_id = $1 AND c.id = u.id",
            )
            .bind(&ns_s)
            .bind(&ids)
            .bind(&values)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query(
                "INSERT INTO claim_currency_events (namespace_id, claim_id, is_current, reason,
                     version_id, created_at)
                 SELECT $1, u.id, u.is_current, $4, $5, $6
                   FROM unnest($2::text[], $3::bool[]) WITH ORDINALITY AS u(id, is_current, i)
                  ORDER BY u.i",
            )
            .bind(&ns_s)
            .bind(&ids)
            .bind(&values)
            .bind(reason)
            .bind(version.map(|v| v.to_string()))
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        if let Some(v) = version {
            sqlx::query(crate::shared(&rememberstack_sql::claims::CURRENCY_DONE))
                .bind(&ns_s)
                .bind(v.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(changed)
    }

    async fn attach_occurrences(&self, ns: &str, claims: &mut [ClaimRecord]) -> Result<()> {
        if claims.is_empty() {
            return Ok(());
        }
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::claims::OCCURRENCES_OF_CLAIMS,
        ))
        .bind(ns)
        .bind(
            claims
                .iter()
                .map(|c| c.claim_id.to_string())
                .collect::<Vec<_>>(),
        )
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let mut by_claim: HashMap<ClaimId, Vec<(i32, Occurrence)>> = HashMap::new();
        for r in &rows {
            let o = occurrence_row(r)?;
            by_claim
                .entry(o.claim_id)
                .or_default()
                .push((get::<i32>(r, "version_ordinal")?, o));
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
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut claims = rows.iter().map(claim_row).collect::<Result<Vec<_>>>()?;
        self.attach_occurrences(&ns_s, &mut claims).await?;
        Ok(claims)
    }

    pub(crate) async fn claims_impl(
        &self,
        ns: NamespaceId,
        ids_in: &[ClaimId],
    ) -> Result<Vec<ClaimRecord>> {
        if ids_in.is_empty() {
            return Ok(vec![]);
        }
        let ns_s = ns.to_string();
        let rows = sqlx::query(crate::shared(&rememberstack_sql::claims::CLAIMS_BY_ID))
            .bind(&ns_s)
            .bind(crate::any_list(ids_in))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut by_id: HashMap<ClaimId, ClaimRecord> = HashMap::new();
        for r in &rows {
            let c = claim_row(r)?;
            by_id.insert(c.claim_id, c);
        }
        let mut claims: Vec<ClaimRecord> =
            ids_in.iter().filter_map(|id| by_id.remove(id)).collect();
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
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(DecisionRecord {
                    version_id: parse_id(&get::<String>(r, "version_id")?)?,
                    chunk_id: parse_id(&get::<String>(r, "chunk_id")?)?,
                    extractor_version: get(r, "extractor_version")?,
                    row: extraction_decision_row(r)?,
                    created_at: get(r, "created_at")?,
                })
            })
            .collect()
    }

    /// Lexical ranking over eligible claims: Okapi BM25 over `claim_lexical` from
    /// the namespace's stored statistics (migration 0011), best first, ties in
    /// insertion order (`seq`); the score is the BM25 value (higher is better: the
    /// SQLite store's negated `bm25()`).
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
        // Each term is a phrase of its tokens, the phrases OR-ed (`rs_lexical_query`,
        // as SQLite's FTS5 query); eligibility is part of the statement, so it
        // applies before ORDER BY … LIMIT.
        let sql = format!(
            "SELECT c.id, {BM25_SCORE} AS bm25
             FROM rs_bm25_weights($2, 'claim', $1) AS w
             JOIN claim_lexical l ON l.tsv @@ (SELECT rs_lexical_query($1))
             JOIN claims c ON c.seq = l.seq
             WHERE l.namespace_id = $2 AND c.namespace_id = $2 AND ($3 OR c.is_current)
               AND ($4::text IS NULL OR c.document_id = $4) AND {}
             ORDER BY bm25 DESC, c.seq LIMIT $9",
            claim_scope(2, 5)
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(terms)
            .bind(&ns_s)
            .bind(filter.include_retired)
            .bind(filter.document_id.map(|d| d.to_string()))
            .bind(!filter.entities.is_empty())
            .bind(crate::any_list(&filter.entities))
            .bind(filter.documents.is_some())
            .bind(crate::any_list(
                filter.documents.as_deref().unwrap_or_default(),
            ))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(self.reads())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(ClaimHit {
                    claim_id: parse_id(&get::<String>(r, "id")?)?,
                    score: get(r, "bm25")?,
                })
            })
            .collect()
    }

    /// Cosine ranking over eligible claims' vectors of `generation`, best first,
    /// ties by id, as SQLite's exact scan. The ranking statement orders by pgvector's
    /// distance alone on a dimension-cast expression, so a per-generation HNSW
    /// partial index can serve it (an extra sort key would rule the index out), with
    /// iterative scans so the eligibility filters apply before the top k is final.
    /// It fetches [`TIE_MARGIN`] rows beyond `limit`; the rows are re-sorted by exact
    /// distance, then id. When equal distances at the cut run past the fetched rows
    /// (claims sharing one vector, zero vectors), the ranking is redone exactly with
    /// the id as second key. Vectors of another dimension are skipped, as in SQLite.
    pub(crate) async fn search_claims_semantic_impl(
        &self,
        filter: &ClaimFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        rememberstack_core::store::check_query_vector(query)?;
        let dim = query.len();
        // No stored vector has another dimension than 1..=16000: nothing matches.
        if limit == 0 || dim == 0 || dim > MAX_DIM {
            return Ok(vec![]);
        }
        let fetch = limit.saturating_add(TIE_MARGIN);
        let exact = || self.rank_claim_vectors(filter, generation, query, true, limit);
        // Claims walk the index however few vectors the namespace holds: they are
        // most of a generation's vectors, so the walk meets mostly claims and ends
        // sooner than an exact scan of them would, unlike the chunk and fact
        // channels (`exact_scan_is_cheaper`).
        let pass = self
            .rank_claim_vectors(filter, generation, query, false, fetch)
            .await;
        let ranked = match crate::search::index_pass("claim", pass, fetch)? {
            Some(mut ranked) => {
                ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
                // The tie group at the cut may go on beyond the rows fetched: the
                // exact scan answers then too.
                if ranked[limit - 1].0.total_cmp(&ranked[fetch - 1].0).is_eq() {
                    exact().await?
                } else {
                    ranked
                }
            }
            None => exact().await?,
        };
        let mut scored: Vec<(f64, String)> = ranked
            .into_iter()
            // A zero vector has no direction: pgvector says NaN, SQLite's scan 0.
            .map(|(d, id)| (if d.is_nan() { 0.0 } else { 1.0 - d }, id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        scored.truncate(limit);
        scored
            .into_iter()
            .map(|(score, id)| {
                Ok(ClaimHit {
                    claim_id: parse_id(&id)?,
                    score,
                })
            })
            .collect()
    }

    /// The eligible claims nearest to `query` (cosine distance, id): by an index
    /// pass over the generation's HNSW index, or `exact`ly (an expression no index
    /// serves, sorted, ties by id; a stored zero vector at distance 1).
    async fn rank_claim_vectors(
        &self,
        filter: &ClaimFilter,
        generation: &str,
        query: &[f32],
        exact: bool,
        limit: usize,
    ) -> Result<Vec<(f64, String)>> {
        let dim = query.len();
        let (distance, order) = if exact {
            (
                "COALESCE(NULLIF(v.embedding::vector <=> $1::vector, 'NaN'::float8), 1.0)"
                    .to_string(),
                "distance, c.id",
            )
        } else {
            (
                format!("(v.embedding::vector({dim})) <=> $1::vector({dim})"),
                "distance",
            )
        };
        let sql = format!(
            "SELECT c.id, {distance} AS distance
             FROM vectors v
             JOIN claims c ON c.namespace_id = v.namespace_id AND c.embedding_key = v.embedding_key
             WHERE v.namespace_id = $2 AND v.generation = $3 AND v.dimension = {dim}
               AND ($4 OR c.is_current) AND ($5::text IS NULL OR c.document_id = $5)
               AND {}
             ORDER BY {order} LIMIT $10",
            claim_scope(2, 6)
        );
        let q = sqlx::query(AssertSqlSafe(sql))
            .bind(pgvector::Vector::from(query.to_vec()))
            .bind(filter.namespace_id.to_string())
            .bind(generation)
            .bind(filter.include_retired)
            .bind(filter.document_id.map(|d| d.to_string()))
            .bind(!filter.entities.is_empty())
            .bind(crate::any_list(&filter.entities))
            .bind(filter.documents.is_some())
            .bind(crate::any_list(
                filter.documents.as_deref().unwrap_or_default(),
            ))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        // The index pass walks the index in a transaction of settings; the exact
        // ranking sorts, as every connection does by default.
        let rows = if exact {
            q.fetch_all(self.reads()).await.map_err(db_err)?
        } else {
            let mut tx = self.vector_search_tx().await?;
            let rows = q.fetch_all(&mut *tx).await.map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            rows
        };
        rows.iter()
            .map(|r| {
                let distance: Option<f64> = get(r, "distance")?;
                Ok((distance.unwrap_or(f64::NAN), get(r, "id")?))
            })
            .collect()
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
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&get::<String>(r, "id")?)?,
                    parse_id(&get::<String>(r, "origin_version_id")?)?,
                ))
            })
            .collect()
    }
}
