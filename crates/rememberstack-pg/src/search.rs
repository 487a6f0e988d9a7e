//! Chunk vectors and chunk search (lexical over `chunk_lexical`, semantic over
//! `vectors`), the change stamp, recall receipts.
//!
//! Ported from the SQLite store (`rememberstack-sqlite/src/lib.rs`): every method
//! keeps its statement's filters, ordering and tie-breaks. Differences:
//!
//! - Lexical ranking is Okapi BM25 computed in SQL (`BM25_SCORE`, migration 0011)
//!   from the namespace's stored statistics (row lengths, row and token totals,
//!   document frequencies) over the `rs_english` `tsvector`, in one joined
//!   statement; SQLite's two-phase ranking and its posting budget (which leaves
//!   the commonest terms out on tables of more than 16 000 rows) are not ported:
//!   every term ranks.
//! - Semantic search reads the generation's HNSW partial index with an iterative
//!   scan (eligibility in the same statement), then re-sorts by exact similarity;
//!   when the index pass returns fewer rows than it asked for, an exact scan
//!   (which no index can serve) gives the answer instead.

use crate::ledger::fence_many;
use crate::{PgStore, db_err, parse_id};
use rememberstack_core::embed::EmbedderIdentity;
use rememberstack_core::ids::{NamespaceId, ReceiptId};
use rememberstack_core::store::{
    ChunkFilter, ChunkHit, ChunkRef, Lease, Receipt, VectorCoverage, check_query_vector,
    check_vectors,
};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::coverage::Target;
use rememberstack_sql::rows::{coverage_row, receipt_row};
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, Row};

/// The largest dimension of pgvector's `vector` type.
const MAX_VECTOR_DIM: usize = 16_000;
/// The largest dimension an HNSW index over `vector` accepts; larger generations
/// are searched by exact scan.
const MAX_HNSW_DIM: usize = 2_000;
/// The index pass asks for at least this many rows beyond `limit`, so that ties at
/// the cut are broken by id as in SQLite.
const MIN_OVERFETCH: usize = 16;

/// How long a namespace's count against `exact_scan_below` is reused: the choice
/// of plan only, so a count a few seconds old does no harm.
const SMALL_FOR: std::time::Duration = std::time::Duration::from_secs(10);
/// (Namespace, generation) pairs whose count is kept at most (then the map starts
/// over).
const MAX_SMALL_GENERATIONS: usize = 10_000;

/// Per (namespace, generation): when its vectors were counted, and whether there
/// were fewer than `exact_scan_below`.
pub(crate) type SmallGenerations =
    std::collections::HashMap<(String, String), (std::time::Instant, bool)>;

/// A string as an SQL literal (`E'…'`, whatever `standard_conforming_strings`
/// says): quotes and backslashes doubled. For the few places where a value must be
/// inline (a partial index's predicate, and the query that must match it).
fn sql_literal(s: &str) -> String {
    format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The stored receipt of a request id, read inside the writing transaction.
async fn stored_by_request(
    tx: &mut sqlx::PgConnection,
    ns: NamespaceId,
    request: &str,
) -> Result<Option<PgRow>> {
    sqlx::query(crate::shared(&rememberstack_sql::receipts::BY_REQUEST))
        .bind(ns.to_string())
        .bind(request)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)
}

/// The eligibility joins and conditions of chunk search (aliases `c`, `d`, `s`),
/// as in SQLite: the chunk's version is its lineage's current one, its section's
/// role is allowed, and the entity anchor and document scope (SQLite's
/// `CHUNK_SCOPE`; an empty scope admits nothing) hold. Parameters from `$first`:
/// the namespace, the roles, then the anchored entities and the scoped lineages
/// when they apply (bound by [`bind_eligibility`]). Returns the SQL and the next
/// free parameter number.
fn chunk_eligibility(filter: &ChunkFilter, first: usize) -> (String, usize) {
    let (ns, roles) = (first, first + 1);
    let mut next = first + 2;
    let mut sql = format!(
        " JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
          JOIN sections s ON s.namespace_id = c.namespace_id AND s.version_id = c.version_id
                         AND s.ordinal = c.section_ordinal
         WHERE c.namespace_id = ${ns} AND s.role = ANY(${roles})"
    );
    if !filter.entities.is_empty() {
        sql.push_str(&format!(
            " AND c.id IN (SELECT cc.chunk_id FROM entity_mentions m
                 JOIN chunk_claims cc ON cc.namespace_id = m.namespace_id AND cc.claim_id = m.claim_id
                 WHERE m.namespace_id = ${ns} AND m.entity_id = ANY(${next}))"
        ));
        next += 1;
    }
    if filter.documents.is_some() {
        sql.push_str(&format!(" AND c.document_id = ANY(${next})"));
        next += 1;
    }
    (sql, next)
}

/// The BM25 score of lexical row `l` (its `tsv` and `len`) under the weights `w`
/// of `rs_bm25_weights` (migration 0011), as FTS5's `bm25()` computes it negated:
/// the sum over the query's lexemes (a lexeme two terms share counts twice, as
/// two FTS5 phrases do) of `idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len /
/// avgdl))` with k1 = 1.2 and b = 0.75; 0 for a row holding none of them. An
/// expression for the select list, so that only the rows that pass every filter
/// are scored (a correlated subquery costs a third of an SQL function call).
/// Only the query's lexemes of the row are unnested: `setweight` marks their
/// positions with weight A and `ts_filter` keeps those, so each keeps all its
/// positions (its term frequency) and a row of 30 lexemes is not joined whole
/// (about half the statement's time on short chat turns).
///
/// The statements match rows with `l.tsv @@ (SELECT rs_lexical_query(…))`: as a
/// sub-select the query is built once per statement (an init plan), where the
/// bare function call was evaluated again for every row the scan filtered.
pub(crate) const BM25_SCORE: &str = "(SELECT COALESCE(SUM(q.idf * (d.tf * 2.2)
         / (d.tf + 1.2 * (0.25 + 0.75 * l.len / w.avgdl))), 0)
     FROM unnest(w.lexemes, w.idfs) AS q(lexeme, idf)
     JOIN (SELECT u.lexeme COLLATE \"C\" AS lexeme,
                  COALESCE(array_length(u.positions, 1), 1)::float8 AS tf
             FROM unnest(ts_filter(setweight(l.tsv, 'A', w.lexemes), '{a}')) AS u) d
       ON d.lexeme = q.lexeme)";

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// Bind the parameters of [`chunk_eligibility`], in its order.
fn bind_eligibility<'q>(q: PgQuery<'q>, filter: &ChunkFilter) -> PgQuery<'q> {
    let roles: Vec<String> = filter
        .roles
        .iter()
        .map(|r| r.as_str().to_string())
        .collect();
    let mut q = q.bind(filter.namespace_id.to_string()).bind(roles);
    if !filter.entities.is_empty() {
        q = q.bind(
            filter
                .entities
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>(),
        );
    }
    if let Some(docs) = &filter.documents {
        q = q.bind(docs.iter().map(|d| d.to_string()).collect::<Vec<_>>());
    }
    q
}

impl PgStore {
    pub(crate) async fn existing_vectors_impl(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<String>> {
        if keys.is_empty() {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        // Batched as in SQLite (there for its parameter limit; here to bound one array).
        for batch in keys.chunks(4_000) {
            let rows = sqlx::query(crate::shared(
                &rememberstack_sql::documents::EXISTING_VECTORS,
            ))
            .bind(ns.to_string())
            .bind(generation)
            .bind(batch.to_vec())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            for r in &rows {
                out.push(r.try_get("embedding_key").map_err(db_err)?);
            }
        }
        Ok(out)
    }

    pub(crate) async fn commit_vectors_impl(
        &self,
        leases: &[Lease],
        ns: NamespaceId,
        generation: &EmbedderIdentity,
        vectors: Vec<(String, Vec<f32>)>,
        now: Timestamp,
    ) -> Result<()> {
        check_vectors(generation, &vectors)?;
        // pgvector's own bound on a `vector`'s dimension.
        if generation.dimension == 0 || generation.dimension > MAX_VECTOR_DIM {
            return Err(Error::new(
                ErrorCode::InvalidInput,
                format!(
                    "generation `{}` has dimension {}: PostgreSQL stores 1 to {MAX_VECTOR_DIM}",
                    generation.generation(),
                    generation.dimension
                ),
            ));
        }
        let gen_key = generation.generation();
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        // Every lease must hold: the first one gone refuses the whole commit.
        let fenced = fence_many(&mut tx, leases, now).await?;
        if let Some((lease, _)) = leases.iter().zip(&fenced).find(|(_, ns)| ns.is_none()) {
            return Err(lease.lost());
        }
        sqlx::query(crate::shared(
            &rememberstack_sql::namespaces::INSERT_EMBEDDER_GENERATION,
        ))
        .bind(&gen_key)
        .bind(&generation.provider)
        .bind(&generation.model)
        .bind(generation.dimension as i32)
        .bind(&generation.version)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if !vectors.is_empty() {
            // One statement for the batch (a key repeated in it is stored once).
            let (keys, embeddings): (Vec<String>, Vec<pgvector::Vector>) = vectors
                .iter()
                .map(|(k, v)| {
                    // Kept at half precision (`halfvec`) by core's rule, as the
                    // embedded store keeps them.
                    let v = rememberstack_core::store::vector_for_half_precision(v);
                    (k.clone(), pgvector::Vector::from(v.into_owned()))
                })
                .unzip();
            sqlx::query(
                "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, embedding, created_at)
                 SELECT $1, $2, t.key, $3, t.embedding::halfvec, $4
                   FROM UNNEST($5::text[], $6::vector[]) AS t(key, embedding)
                 ON CONFLICT DO NOTHING",
            )
            .bind(ns.to_string())
            .bind(&gen_key)
            .bind(generation.dimension as i32)
            .bind(now)
            .bind(keys)
            .bind(embeddings)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        if !vectors.is_empty() {
            // Outside the data transaction: the vectors are stored whatever happens
            // here; a failed build is retried by the next commit of the generation,
            // and search stays correct (by exact scan) without the index.
            if let Err(e) = self
                .ensure_vector_index(&gen_key, generation.dimension)
                .await
            {
                tracing::warn!(generation = %gen_key, error = %e, "cannot create the generation's HNSW index");
            }
        }
        Ok(())
    }
}

/// Say that an index pass ran past its bound and the exact scan answers.
/// The rows of an index pass that can stand, or `None` when the caller's exact scan
/// must answer: the pass ran past its bound (`timeout`, logged), or it returned
/// fewer than the `wanted` rows asked, so either every eligible row came back or
/// the iterative scan gave up (`hnsw.max_scan_tuples`). Other failures stand.
pub(crate) fn index_pass<T>(
    channel: &str,
    pass: Result<Vec<T>>,
    wanted: usize,
) -> Result<Option<Vec<T>>> {
    match pass {
        Ok(rows) => Ok((rows.len() >= wanted).then_some(rows)),
        Err(error) if error.code() == ErrorCode::Timeout => {
            tracing::warn!(
                channel,
                %error,
                "an HNSW index pass ran past its bound; the exact scan answers instead"
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

impl PgStore {
    /// A transaction for one index pass of a vector ranking. Filters apply while
    /// the HNSW index is walked, before the top k is final (`hnsw.iterative_scan`,
    /// pgvector 0.8). Sorting is off, so the planner walks the generation's index
    /// instead of computing every distance and sorting them, which it prefers
    /// whenever it misjudges how few rows a filter joined to the vectors keeps (a
    /// fact vector channel at 10k claims: 44 ms sorted against 12 through the
    /// index), and the statement is bounded by `index_pass_timeout` (see
    /// [`crate::PgStoreConfig`]): past it the call fails `timeout` and the caller
    /// ranks by exact scan (a walk planned with stale statistics was seen to run
    /// for minutes; see [`PgStore::grew`]). An exact ranking sorts, as every
    /// connection does by default, and needs no such transaction.
    pub(crate) async fn vector_search_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        let mut tx = self.reads().begin().await.map_err(db_err)?;
        let bound = self.index_pass_timeout;
        sqlx::query(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
                    set_config('enable_sort', 'off', true),
                    set_config('statement_timeout', $1, true)",
        )
        .bind(bound.as_millis().max(1).to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        Ok(tx)
    }
}

impl PgStore {
    /// Whether `ns` holds fewer vectors of `generation` than
    /// [`crate::PgStoreConfig::exact_scan_below`], so that its chunk and fact searches rank
    /// by exact scan without an index pass. Counted up to the bound only (an index
    /// scan of at most that many rows), and reused for [`SMALL_FOR`].
    pub(crate) async fn exact_scan_is_cheaper(&self, ns: &str, generation: &str) -> Result<bool> {
        if self.exact_scan_below == 0 {
            return Ok(false);
        }
        let key = (ns.to_string(), generation.to_string());
        let lock = || {
            self.small_generations
                .lock()
                .unwrap_or_else(|p| p.into_inner())
        };
        if let Some((at, small)) = lock().get(&key)
            && at.elapsed() < SMALL_FOR
        {
            return Ok(*small);
        }
        let bound = i64::try_from(self.exact_scan_below).unwrap_or(i64::MAX);
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM (SELECT 1 FROM vectors
                                    WHERE namespace_id = $1 AND generation = $2 LIMIT $3) AS v",
        )
        .bind(ns)
        .bind(generation)
        .bind(bound)
        .fetch_one(self.reads())
        .await
        .map_err(db_err)?;
        let small = n < bound;
        let mut kept = lock();
        if kept.len() >= MAX_SMALL_GENERATIONS {
            kept.clear();
        }
        kept.insert(key, (std::time::Instant::now(), small));
        Ok(small)
    }

    /// Create the HNSW partial index of `generation`'s vectors (dimension `dim`)
    /// unless it exists: `vectors_hnsw_<md5 of the generation>`, over the
    /// dimension-cast expression the searches order by. Every writer of a new
    /// generation's vectors should call it after committing them. Generations
    /// beyond pgvector's HNSW limit (2 000 dimensions) get no index.
    pub(crate) async fn ensure_vector_index(&self, generation: &str, dim: usize) -> Result<()> {
        if dim == 0 || dim > MAX_HNSW_DIM {
            return Ok(());
        }
        // Looked up in the store's own schema (the first of its `search_path`): by
        // bare name, `public`'s index of the same generation would count as this
        // schema's, and the schema would never get one.
        let row = sqlx::query(
            "SELECT 'vectors_hnsw_' || md5($1) AS name,
                    EXISTS (SELECT 1 FROM pg_class c
                              JOIN pg_namespace n ON n.oid = c.relnamespace
                             WHERE n.nspname = current_schema()
                               AND c.relname = 'vectors_hnsw_' || md5($1)) AS present",
        )
        .bind(generation)
        .fetch_one(self.pool())
        .await
        .map_err(db_err)?;
        if row.try_get::<bool, _>("present").map_err(db_err)? {
            return Ok(());
        }
        let name: String = row.try_get("name").map_err(db_err)?;
        // Concurrent creators of one index would collide on its name: serialize
        // them (per schema and generation); the loser finds it and does nothing.
        // A build over many vectors runs long: on a connection without the pool's
        // statement bounds.
        let mut tx = self.maintenance.begin().await.map_err(db_err)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('hnsw:' || current_schema() || ':' || $1, 0))")
            .bind(generation)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // `name` is `vectors_hnsw_` and 32 hex digits; the generation is a quoted literal.
        let sql = format!(
            "CREATE INDEX IF NOT EXISTS {name} ON vectors
                 USING hnsw ((embedding::vector({dim})) vector_cosine_ops)
                 WHERE generation = {}",
            sql_literal(generation)
        );
        sqlx::query(AssertSqlSafe(sql))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    /// The coverage of `target` by vectors of `generation`, from the counters
    /// migration 0036's triggers keep (`rememberstack_sql::coverage`).
    pub(crate) async fn counted_coverage(
        &self,
        ns: NamespaceId,
        target: Target,
        generation: &str,
    ) -> Result<VectorCoverage> {
        let ns = ns.to_string();
        let row = sqlx::query(crate::shared(&rememberstack_sql::coverage::COUNTED))
            .bind(&ns)
            .bind(target.as_str())
            .bind(&ns)
            .bind(target.as_str())
            .bind(generation)
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
        rememberstack_sql::coverage::counted_row(&row)
    }

    /// The coverage of `target` counted over its table, as the counters must
    /// give it (for tests and checks; reads use the counters).
    #[doc(hidden)]
    pub async fn recount_vector_coverage(
        &self,
        ns: NamespaceId,
        target: Target,
        generation: &str,
    ) -> Result<VectorCoverage> {
        let row = sqlx::query(crate::shared(target.recount()))
            .bind(generation)
            .bind(ns.to_string())
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
        coverage_row(&row)
    }

    pub(crate) async fn change_stamp_impl(&self, ns: NamespaceId) -> Result<u64> {
        let n: Option<i64> =
            sqlx::query_scalar(crate::shared(&rememberstack_sql::namespaces::CHANGE_STAMP))
                .bind(ns.to_string())
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)?;
        Ok(n.unwrap_or(0) as u64)
    }

    pub(crate) async fn chunks_missing_vectors_impl(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<ChunkRef>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::CHUNKS_MISSING_VECTORS,
        ))
        .bind(generation)
        .bind(ns.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(ChunkRef {
                    chunk_id: parse_id(&r.try_get::<String, _>("id").map_err(db_err)?)?,
                    version_id: parse_id(&r.try_get::<String, _>("version_id").map_err(db_err)?)?,
                })
            })
            .collect()
    }

    pub(crate) async fn search_chunks_lexical_impl(
        &self,
        filter: &ChunkFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        if terms.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        // As SQLite quotes each term as an FTS5 string (a phrase of its tokens) and
        // OR-joins them, `rs_lexical_query` ORs `phraseto_tsquery('rs_english', term)`
        // over the bound terms: the caller's text is never tsquery syntax.
        let (eligibility, limit_param) = chunk_eligibility(filter, 2);
        // Eligibility is part of the statement, so it applies before ORDER BY … LIMIT.
        // The score is BM25 from the namespace's stored statistics (higher is
        // better, as SQLite's negated `bm25()`); ties in insertion order (`seq`).
        let sql = format!(
            "SELECT c.id, {BM25_SCORE} AS bm25
             FROM rs_bm25_weights($2, 'chunk', $1) AS w
             JOIN chunk_lexical l ON l.tsv @@ (SELECT rs_lexical_query($1))
             JOIN chunks c ON c.seq = l.seq{eligibility}
               AND l.namespace_id = $2
             ORDER BY bm25 DESC, c.seq LIMIT ${limit_param}"
        );
        let q = sqlx::query(AssertSqlSafe(sql)).bind(terms);
        let q = bind_eligibility(q, filter).bind(i64::try_from(limit).unwrap_or(i64::MAX));
        let rows = q.fetch_all(self.reads()).await.map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(ChunkHit {
                    chunk_id: parse_id(&r.try_get::<String, _>("id").map_err(db_err)?)?,
                    score: r.try_get::<f64, _>("bm25").map_err(db_err)?,
                })
            })
            .collect()
    }

    pub(crate) async fn search_chunks_semantic_impl(
        &self,
        filter: &ChunkFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        // SQLite skips stored vectors of another dimension than the query's; no
        // stored vector has 0 or more than 16 000 dimensions, so nothing matches.
        let dim = query.len();
        if dim == 0 || dim > MAX_VECTOR_DIM {
            return Ok(vec![]);
        }
        check_query_vector(query)?;
        let (eligibility, next) = chunk_eligibility(filter, 2);
        // The generation is inline (quoted) so that the planner can match the
        // generation's partial index whatever plan a prepared statement gets.
        let generation_sql = sql_literal(generation);
        let statement = |distance: &str, order: &str| {
            format!(
                "SELECT c.id, {distance} AS distance
                 FROM vectors v
                 JOIN chunks c ON c.namespace_id = v.namespace_id AND c.embedding_key = v.embedding_key{eligibility}
                   AND v.generation = {generation_sql} AND v.namespace_id = $2 AND v.dimension = {dim}
                 ORDER BY {order} LIMIT ${next}"
            )
        };
        let vector = pgvector::Vector::from(query.to_vec());
        let run = |sql: String, take: usize, index: bool| {
            let vector = vector.clone();
            async move {
                let q = sqlx::query(AssertSqlSafe(sql)).bind(vector);
                let q = bind_eligibility(q, filter).bind(i64::try_from(take).unwrap_or(i64::MAX));
                let rows = if index {
                    let mut tx = self.vector_search_tx().await?;
                    let ef = take.clamp(40, 1_000);
                    sqlx::query(AssertSqlSafe(format!("SET LOCAL hnsw.ef_search = {ef}")))
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    let rows = q.fetch_all(&mut *tx).await.map_err(db_err)?;
                    tx.commit().await.map_err(db_err)?;
                    rows
                } else {
                    // The exact scan sorts, as every connection does by default:
                    // one statement, no transaction of settings.
                    q.fetch_all(self.reads()).await.map_err(db_err)?
                };
                rows.iter()
                    .map(|r| {
                        let distance: Option<f64> = r.try_get("distance").map_err(db_err)?;
                        // A zero vector has no direction: pgvector's distance is NaN,
                        // SQLite's similarity 0.
                        let score = match distance {
                            Some(d) if !d.is_nan() => 1.0 - d,
                            _ => 0.0,
                        };
                        Ok((r.try_get::<String, _>("id").map_err(db_err)?, score))
                    })
                    .collect::<Result<Vec<(String, f64)>>>()
            }
        };
        // The index pass: the expression and predicate of the generation's HNSW
        // index, a few rows beyond `limit` for the ties at the cut.
        let take = limit.saturating_add(limit.max(MIN_OVERFETCH));
        let cast = format!("(v.embedding::vector({dim})) <=> $1::vector({dim})");
        // A caller that asks for an exact ranking skips the index pass, as does a
        // namespace with few vectors.
        let mut hits = if filter.exact
            || self
                .exact_scan_is_cheaper(&filter.namespace_id.to_string(), generation)
                .await?
        {
            Vec::new()
        } else {
            // Without the pass's rows, the exact scan below answers.
            index_pass(
                "chunk",
                run(statement(&cast, &cast), take, true).await,
                take,
            )?
            .unwrap_or_default()
        };
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        // Rows tied with the last one kept may lie beyond the rows fetched, and
        // only the exact scan breaks such ties by id as SQLite does (a zero query
        // ties everything).
        let tie_at_cut = hits.len() == take && hits[limit - 1].1 == hits[take - 1].1;
        if hits.len() < take || tie_at_cut {
            // Fewer than asked: every eligible row was returned, or the iterative
            // scan gave up (hnsw.max_scan_tuples). The exact scan (an expression no
            // index serves) is then the answer, ordered as SQLite orders.
            let exact = "COALESCE(NULLIF(v.embedding::vector <=> $1, 'NaN'::float8), 1.0)";
            hits = run(statement(exact, &format!("{exact}, c.id")), limit, false).await?;
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        hits.truncate(limit);
        hits.into_iter()
            .map(|(id, score)| {
                Ok(ChunkHit {
                    chunk_id: parse_id(&id)?,
                    score,
                })
            })
            .collect()
    }

    pub(crate) async fn put_receipt_impl(&self, receipt: Receipt) -> Result<Receipt> {
        let body = serde_json::to_value(&receipt).map_err(|e| Error::internal(e.to_string()))?;
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        if let Some(request) = &receipt.request_id
            && let Some(row) = stored_by_request(&mut tx, receipt.namespace_id, request).await?
        {
            return receipt_row(&row);
        }
        // A concurrent writer of the same request id may commit between the check
        // and the insert: the insert then waits for it, does nothing, and its
        // receipt is returned, as the single SQLite writer would have.
        let inserted = sqlx::query(
            "INSERT INTO recall_receipts (namespace_id, id, request_id, operation, body_json, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (namespace_id, request_id) WHERE request_id IS NOT NULL DO NOTHING",
        )
        .bind(receipt.namespace_id.to_string())
        .bind(receipt.receipt_id.to_string())
        .bind(&receipt.request_id)
        .bind(&receipt.operation)
        .bind(sqlx::types::Json(&body))
        .bind(receipt.created_at)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if inserted.rows_affected() == 0
            && let Some(request) = &receipt.request_id
        {
            let row = stored_by_request(&mut tx, receipt.namespace_id, request)
                .await?
                .ok_or_else(|| {
                    Error::store("a recall receipt's request id conflicted but no receipt holds it")
                })?;
            return receipt_row(&row);
        }
        tx.commit().await.map_err(db_err)?;
        Ok(receipt)
    }

    pub(crate) async fn receipt_impl(
        &self,
        ns: NamespaceId,
        id: ReceiptId,
    ) -> Result<Option<Receipt>> {
        sqlx::query(crate::shared(&rememberstack_sql::receipts::BY_ID))
            .bind(ns.to_string())
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?
            .map(|r| receipt_row(&r))
            .transpose()
    }

    pub(crate) async fn receipt_by_request_impl(
        &self,
        ns: NamespaceId,
        request_id: &str,
    ) -> Result<Option<Receipt>> {
        sqlx::query(crate::shared(&rememberstack_sql::receipts::BY_REQUEST))
            .bind(ns.to_string())
            .bind(request_id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?
            .map(|r| receipt_row(&r))
            .transpose()
    }
}
