//! In-memory support for the exact semantic scan.
//!
//! Eligibility stays in SQL: a semantic query selects the eligible records and
//! their embedding keys in one statement (joined to `vectors`, so only keys with a
//! stored vector come back). Two things are kept in memory:
//!
//! - decoded vectors (scaled to unit length), by (namespace, generation, embedding key). A stored vector
//!   never changes, so a cached one is never stale; a deleted one is never asked
//!   for, because the SQL no longer returns its key;
//! - the candidate list of each eligibility statement, under the namespace's change
//!   stamp (see `MemoryStore::change_stamp`): every write that could change a
//!   statement's answer bumps the stamp in the same transaction, so a list is
//!   reused only while it is exactly what the statement would return.
//!
//! Both are bounded: past their limits they start over.
//!
//! A list is exact only while no write happened, and on a store being written every
//! read would rebuild its lists. An unscoped semantic query therefore walks the
//! *record set* of its table instead (every chunk, claim or fact of the namespace
//! with a vector in the generation, eligible or not): it ranks the whole set, then
//! asks SQL which of the best are eligible, a few at a time, in rank order, until it
//! has its results. A record set is brought up to date by reading only the rows
//! inserted since (`seq` above the highest read), so a write costs the readers its
//! own rows; a removal (counted per table in `record_removals`) makes the set be
//! read again in full, as SQLite may then hand out a `seq` already passed.

use crate::db_err;
use crate::parse_id;
use crate::rows::decode_vector;
use rememberstack_core::embed::{dot, unit};
use rememberstack_core::{Error, Result};
use sqlx::AssertSqlSafe;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Cached vectors at most (then the vector map starts over).
const MAX_VECTORS: usize = 400_000;
/// Cached candidate lists at most (then the list map starts over).
const MAX_LISTS: usize = 128;

/// A statement asked this many times at one change stamp builds its list: a list
/// costs a scan of the eligible records, a walk one short statement, so the list pays
/// off only once a few searches reuse it.
const LIST_AFTER_ASKS: u32 = 4;
/// Segments a record set keeps at most before they are merged into one.
const MAX_SEGMENTS: usize = 16;
/// Candidates a walk checks first, per result asked for (see [`VectorCache::walk`]).
const WALK_FIRST_PER_RESULT: usize = 2;
/// A walk that has checked more than one in this many of its set's records gives way
/// to the eligibility statement over the whole set (a selective filter).
const WALK_MAX_SHARE: usize = 4;

/// Decoded vectors of one (namespace, generation), by embedding key.
type Vectors = HashMap<String, Arc<[f32]>>;

/// The eligible records of one statement: ids with their (unit) vectors, copied
/// into one contiguous block so that a scan reads memory in order.
#[derive(Debug, Default)]
pub(crate) struct CandidateList {
    ids: Vec<String>,
    /// (start, length) of each id's vector in `data`.
    spans: Vec<(usize, usize)>,
    data: Vec<f32>,
}

impl CandidateList {
    /// A list of `(id, vector)` pairs, in order.
    pub(crate) fn new<'a>(pairs: impl IntoIterator<Item = (String, &'a [f32])>) -> Self {
        let mut list = CandidateList::default();
        for (id, v) in pairs {
            list.spans.push((list.data.len(), v.len()));
            list.data.extend_from_slice(v);
            list.ids.push(id);
        }
        list
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &[f32])> {
        self.range(0..self.ids.len())
    }

    /// The pairs at positions `range`, in order.
    fn range(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = (&str, &[f32])> {
        self.ids[range.clone()]
            .iter()
            .zip(&self.spans[range])
            .map(|(id, (start, len))| (id.as_str(), &self.data[*start..*start + *len]))
    }

    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// The eligible records of one statement.
pub(crate) type Candidates = Arc<CandidateList>;

/// Every record of one table (chunks, claims or facts) of a (namespace, generation)
/// that has a vector, in segments appended as the table grows.
#[derive(Debug, Default)]
struct RecordSet {
    /// Whether the set was ever read.
    loaded: bool,
    segments: Vec<Candidates>,
    /// The highest `seq` read.
    cursor: i64,
    /// The table's removal count (`record_removals`) when the set was read in full.
    removals: i64,
    /// The change stamp, read before the last sync, that the set is up to date with.
    stamp: u64,
    /// (id, embedding key) of records read before their vector was stored.
    pending: Vec<(String, String)>,
}

/// A semantic search's eligibility statement (see [`VectorCache::search`]).
pub(crate) struct Eligibility<B> {
    /// The table whose records it selects (`chunks`, `claims` or `facts`).
    pub(crate) table: &'static str,
    /// The selected records' id column, with its alias (`c.id`).
    pub(crate) id_column: &'static str,
    /// The statement's key among the cached lists: its shape and arguments.
    pub(crate) key: String,
    /// Whether it narrows by entity or document: it then ranks its list, as a walk
    /// of the whole table would check most of it.
    pub(crate) scoped: bool,
    /// The statement: `id` and `embedding_key` of the eligible records.
    pub(crate) sql: String,
    /// Binds its arguments, in order.
    pub(crate) bind: B,
}

/// `bind` as an [`Eligibility`]'s binder: its argument and result share one lifetime.
pub(crate) fn binder<'a, B>(bind: B) -> B
where
    B: Fn(crate::SqlQuery<'a>) -> crate::SqlQuery<'a>,
{
    bind
}

/// A cached list's key.
fn list_key(ns: &str, generation: &str, statement: &str) -> String {
    format!("{ns}|{generation}|{statement}")
}

/// The record sets, by (namespace, generation, table).
type RecordSets = HashMap<(String, String, &'static str), Arc<tokio::sync::Mutex<RecordSet>>>;

#[derive(Debug, Default)]
pub(crate) struct VectorCache {
    vectors: Mutex<HashMap<(String, String), Vectors>>,
    lists: Mutex<HashMap<String, (u64, Candidates)>>,
    sets: Mutex<RecordSets>,
    /// The stamp at which each statement (keyed as `lists`) was last asked, and how
    /// many times at that stamp.
    asked: Mutex<HashMap<String, (u64, u32)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl VectorCache {
    /// The candidates of the eligibility statement identified by `statement`,
    /// reused while `stamp` (read before the statement runs) is unchanged, else
    /// fetched with `fetch` (rows with columns `id` and `embedding_key`).
    pub(crate) async fn candidates<Fut>(
        &self,
        pool: &crate::conns::Conns,
        ns: &str,
        generation: &str,
        stamp: u64,
        statement: String,
        fetch: Fut,
    ) -> Result<Candidates>
    where
        Fut: std::future::Future<Output = Result<Vec<SqliteRow>>>,
    {
        let list_key = list_key(ns, generation, &statement);
        if let Some((s, list)) = lock(&self.lists).get(&list_key)
            && *s == stamp
        {
            return Ok(list.clone());
        }
        let rows = fetch.await?;
        let pairs: Vec<(String, String)> = rows
            .iter()
            .map(|r| {
                (
                    r.get::<String, _>("id"),
                    r.get::<String, _>("embedding_key"),
                )
            })
            .collect();
        let vectors = self.vectors_for(pool, ns, generation, &pairs).await?;
        let list: Candidates = Arc::new(CandidateList::new(
            pairs
                .into_iter()
                .filter_map(|(id, k)| vectors.get(&k).map(|v| (id, &v[..]))),
        ));
        let mut lists = lock(&self.lists);
        if lists.len() >= MAX_LISTS {
            lists.clear();
        }
        lists.insert(list_key, (stamp, list.clone()));
        Ok(list)
    }

    /// The `limit` best records that `statement` admits, against `query`, best first,
    /// ties by id. An unscoped statement on a store being written walks its table's
    /// record set, checking eligibility with the statement restricted to the
    /// candidates' ids ([`VectorCache::walk`]); otherwise, or when the walk gives way,
    /// the statement's list is ranked ([`VectorCache::candidates`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn search<'a, Id, B>(
        &self,
        pool: &crate::conns::Conns,
        ns: &str,
        generation: &str,
        stamp: u64,
        statement: Eligibility<B>,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(Id, f64)>>
    where
        Id: std::str::FromStr<Err = Error>,
        B: Fn(crate::SqlQuery<'a>) -> crate::SqlQuery<'a>,
    {
        let Eligibility {
            table,
            id_column,
            key,
            scoped,
            sql,
            bind,
        } = statement;
        if !scoped && !self.prefers_list(ns, generation, &key, stamp) {
            let check = format!("{sql} AND {id_column} IN (SELECT value FROM json_each(?))");
            let eligible = |ids: Vec<String>| {
                let check = bind(sqlx::query(AssertSqlSafe(check.clone())));
                async move { admitted(pool, check, &ids).await }
            };
            if let Some(hits) = self
                .walk(pool, ns, generation, table, stamp, query, limit, eligible)
                .await?
            {
                return Ok(hits);
            }
        }
        let fetch = async {
            bind(sqlx::query(AssertSqlSafe(sql.clone())))
                .fetch_all(pool)
                .await
                .map_err(db_err)
        };
        let candidates = self
            .candidates(pool, ns, generation, stamp, key, fetch)
            .await?;
        rank(candidates, query, limit).await
    }

    /// The segments of the record set of `table` (`chunks`, `claims` or `facts`),
    /// brought up to date with `stamp` (read before this call): the rows inserted
    /// since the last sync are appended, and the whole set is read again only after
    /// a removal from the table.
    async fn record_set(
        &self,
        pool: &crate::conns::Conns,
        ns: &str,
        generation: &str,
        table: &'static str,
        stamp: u64,
    ) -> Result<Vec<Candidates>> {
        let set = lock(&self.sets)
            .entry((ns.to_string(), generation.to_string(), table))
            .or_default()
            .clone();
        let mut set = set.lock().await;
        if set.loaded && set.stamp == stamp {
            return Ok(set.segments.clone());
        }
        let removals: i64 =
            sqlx::query_scalar("SELECT n FROM record_removals WHERE namespace_id = ? AND kind = ?")
                .bind(ns)
                .bind(table)
                .fetch_optional(pool)
                .await
                .map_err(db_err)?
                .unwrap_or(0);
        if !set.loaded || removals != set.removals {
            *set = RecordSet {
                loaded: true,
                removals,
                ..RecordSet::default()
            };
        }
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT seq, id, embedding_key FROM {table} WHERE namespace_id = ? AND seq > ? ORDER BY seq"
        )))
        .bind(ns)
        .bind(set.cursor)
        .fetch_all(pool)
        .await
        .map_err(db_err)?;
        let mut pairs = std::mem::take(&mut set.pending);
        for r in &rows {
            set.cursor = set.cursor.max(r.get::<i64, _>("seq"));
            pairs.push((
                r.get::<String, _>("id"),
                r.get::<String, _>("embedding_key"),
            ));
        }
        if !pairs.is_empty() {
            let vectors = self.vectors_for(pool, ns, generation, &pairs).await?;
            let (found, pending): (Vec<_>, Vec<_>) = pairs
                .into_iter()
                .partition(|(_, k)| vectors.contains_key(k));
            set.pending = pending;
            if !found.is_empty() {
                set.segments.push(Arc::new(CandidateList::new(
                    found
                        .into_iter()
                        .filter_map(|(id, k)| vectors.get(&k).map(|v| (id, &v[..]))),
                )));
            }
            if set.segments.len() > MAX_SEGMENTS {
                let merged = CandidateList::new(
                    set.segments
                        .iter()
                        .flat_map(|s| s.iter().map(|(id, v)| (id.to_string(), v))),
                );
                set.segments = vec![Arc::new(merged)];
            }
        }
        set.stamp = stamp;
        Ok(set.segments.clone())
    }

    /// The `limit` best records of `table` against `query` that `eligible` admits,
    /// best first, ties by id: the table's record set is ranked whole, and
    /// `eligible` (given ids, it returns those its statement admits) is asked about
    /// the best not yet checked, in rank order, twice as many as asked for first and
    /// four times more each round, until `limit` are admitted or the set is done. The
    /// result is what ranking the eligible records alone gives. `None` when the walk
    /// has checked more than a quarter of the set without enough (a selective
    /// filter): the caller then ranks the eligibility statement's list instead.
    #[allow(clippy::too_many_arguments)]
    async fn walk<Id, F, Fut>(
        &self,
        pool: &crate::conns::Conns,
        ns: &str,
        generation: &str,
        table: &'static str,
        stamp: u64,
        query: &[f32],
        limit: usize,
        eligible: F,
    ) -> Result<Option<Vec<(Id, f64)>>>
    where
        Id: std::str::FromStr<Err = Error>,
        F: Fn(Vec<String>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<String>>>,
    {
        rememberstack_core::store::check_query_vector(query)?;
        let segments = self.record_set(pool, ns, generation, table, stamp).await?;
        let query: Arc<[f32]> = Arc::from(unit(query));
        let total: usize = segments.iter().map(|s| s.len()).sum();
        // A long set is scored off the async worker.
        let scores: Vec<f32> = if total < PARALLEL_SCAN_MIN {
            score(&segments, &query)
        } else {
            let (segments, query) = (segments.clone(), query.clone());
            tokio::task::spawn_blocking(move || score(&segments, &query))
                .await
                .map_err(|e| Error::internal(format!("a vector scan failed: {e}")))?
        };
        let mut scored: Vec<(f64, &str)> = segments
            .iter()
            .flat_map(|s| s.iter())
            .filter(|(_, v)| v.len() == query.len())
            .zip(scores)
            .map(|((id, _), score)| (score as f64, id))
            .collect();
        let by_rank =
            |a: &(f64, &str), b: &(f64, &str)| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1));
        let mut kept: Vec<(f64, &str)> = Vec::with_capacity(limit);
        let (mut done, mut want) = (0, (limit * WALK_FIRST_PER_RESULT).max(64));
        while kept.len() < limit && done < scored.len() {
            if done * WALK_MAX_SHARE > scored.len() {
                return Ok(None);
            }
            let end = want.min(scored.len());
            let rest = &mut scored[done..];
            let n = end - done;
            if rest.len() > n {
                rest.select_nth_unstable_by(n - 1, by_rank);
            }
            rest[..n].sort_by(by_rank);
            let ids: Vec<String> = scored[done..end]
                .iter()
                .map(|(_, id)| id.to_string())
                .collect();
            let admitted: HashSet<String> = eligible(ids).await?.into_iter().collect();
            kept.extend(
                scored[done..end]
                    .iter()
                    .filter(|(_, id)| admitted.contains(*id))
                    .take(limit - kept.len()),
            );
            done = end;
            want = end * 4;
        }
        parse_ranked(kept).map(Some)
    }

    /// Whether a search of `statement` at `stamp` should rank the statement's list
    /// ([`VectorCache::candidates`]) rather than walk its record set: when the list
    /// is current, or when the statement has been asked [`LIST_AFTER_ASKS`] times at
    /// this stamp (the store is quiet, so the list is built once and then reused). A
    /// store being written walks; one that is only read ranks lists, with no
    /// statement per search.
    fn prefers_list(&self, ns: &str, generation: &str, statement: &str, stamp: u64) -> bool {
        let key = list_key(ns, generation, statement);
        if lock(&self.lists)
            .get(&key)
            .is_some_and(|(s, _)| *s == stamp)
        {
            return true;
        }
        let mut asked = lock(&self.asked);
        if asked.len() >= MAX_LISTS && !asked.contains_key(&key) {
            asked.clear();
        }
        let entry = asked.entry(key).or_insert((stamp, 0));
        if entry.0 != stamp {
            *entry = (stamp, 0);
        }
        entry.1 += 1;
        entry.1 >= LIST_AFTER_ASKS
    }

    /// The vectors of `pairs`' keys: cached ones, and the rest read in batches.
    async fn vectors_for(
        &self,
        pool: &crate::conns::Conns,
        ns: &str,
        generation: &str,
        pairs: &[(String, String)],
    ) -> Result<Vectors> {
        let key = (ns.to_string(), generation.to_string());
        let missing: Vec<String> = {
            let map = lock(&self.vectors);
            let known = map.get(&key);
            let mut m: Vec<String> = pairs
                .iter()
                .filter(|(_, k)| known.is_none_or(|known| !known.contains_key(k)))
                .map(|(_, k)| k.clone())
                .collect();
            m.sort();
            m.dedup();
            m
        };
        let mut loaded: Vec<(String, Arc<[f32]>)> = Vec::with_capacity(missing.len());
        for batch in missing.chunks(2_000) {
            let list = serde_json::to_string(batch).map_err(|e| Error::internal(e.to_string()))?;
            let fetched = sqlx::query(
                "SELECT embedding_key, dimension, vector FROM vectors
                 WHERE namespace_id = ? AND generation = ?
                   AND embedding_key IN (SELECT value FROM json_each(?))",
            )
            .bind(ns)
            .bind(generation)
            .bind(list)
            .fetch_all(pool)
            .await
            .map_err(db_err)?;
            for r in &fetched {
                // Kept at unit length: a scan's cosine is then one dot product.
                let v = unit(&decode_vector(
                    &r.get::<Vec<u8>, _>("vector"),
                    r.get("dimension"),
                )?);
                loaded.push((r.get::<String, _>("embedding_key"), Arc::from(v)));
            }
        }
        let mut map = lock(&self.vectors);
        let total: usize = map.values().map(HashMap::len).sum();
        if total + loaded.len() > MAX_VECTORS {
            map.clear();
        }
        let entry = map.entry(key).or_default();
        for (k, v) in loaded {
            entry.insert(k, v);
        }
        Ok(pairs
            .iter()
            .filter_map(|(_, k)| entry.get(k).map(|v| (k.clone(), v.clone())))
            .collect())
    }
}

/// A list at least this long is scanned off the async worker, in parts.
const PARALLEL_SCAN_MIN: usize = 4_096;

/// Exact cosine ranking of `candidates` (unit vectors) against `query`: best first, ties by id, at
/// most `limit`. Vectors of another dimension are skipped. Only the kept ids are
/// parsed (a hyphenated lowercase UUID orders as its bytes do).
pub(crate) fn top_k<Id: std::str::FromStr<Err = Error>>(
    candidates: &Candidates,
    query: &[f32],
    limit: usize,
) -> Result<Vec<(Id, f64)>> {
    let query = unit(query);
    let scored = best(candidates.iter(), &query, limit);
    parse_ranked(scored)
}

/// [`top_k`] for the async store: a long list is cut into one part per core and the
/// parts are scanned on the blocking pool at once, then merged by the same order.
/// The scans of one request (claims, chunks and facts of `combined_context`) then
/// run side by side instead of one after another on the request's worker.
pub(crate) async fn rank<Id>(
    candidates: Candidates,
    query: &[f32],
    limit: usize,
) -> Result<Vec<(Id, f64)>>
where
    Id: std::str::FromStr<Err = Error>,
{
    rememberstack_core::store::check_query_vector(query)?;
    let n = candidates.len();
    if n < PARALLEL_SCAN_MIN || limit == 0 {
        return top_k(&candidates, query, limit);
    }
    let parts = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 8)
        .min(n / (PARALLEL_SCAN_MIN / 2));
    let query: Arc<[f32]> = Arc::from(unit(query));
    let size = n.div_ceil(parts);
    let mut scans = Vec::with_capacity(parts);
    for start in (0..n).step_by(size) {
        let (candidates, query) = (candidates.clone(), query.clone());
        let end = (start + size).min(n);
        scans.push(tokio::task::spawn_blocking(move || {
            best(candidates.range(start..end), &query, limit)
                .into_iter()
                .map(|(score, id)| (score, id.to_string()))
                .collect::<Vec<_>>()
        }));
    }
    let mut merged: Vec<(f64, String)> = Vec::with_capacity(parts * limit);
    for scan in scans {
        merged.extend(
            scan.await
                .map_err(|e| Error::internal(format!("a vector scan failed: {e}")))?,
        );
    }
    merged.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    merged.truncate(limit);
    merged
        .into_iter()
        .map(|(score, id)| Ok((parse_id::<Id>(&id)?, score)))
        .collect()
}

/// The ids a walk's eligibility check admits: `check` is the
/// statement with every argument bound but the last, the candidate ids as a JSON
/// list, and it selects a column `id`.
async fn admitted(
    pool: &crate::conns::Conns,
    check: crate::SqlQuery<'_>,
    ids: &[String],
) -> Result<Vec<String>> {
    let list = serde_json::to_string(ids).map_err(|e| Error::internal(e.to_string()))?;
    let rows = check.bind(list).fetch_all(pool).await.map_err(db_err)?;
    Ok(rows.iter().map(|r| r.get::<String, _>("id")).collect())
}

/// The cosine of each vector of `segments` of the query's dimension (unit vectors),
/// in order.
fn score(segments: &[Candidates], query: &[f32]) -> Vec<f32> {
    segments
        .iter()
        .flat_map(|s| s.iter())
        .filter(|(_, v)| v.len() == query.len())
        .map(|(_, v)| dot(query, v))
        .collect()
}

/// The `limit` best of `pairs` against the unit `query`, best first, ties by id.
fn best<'a>(
    pairs: impl Iterator<Item = (&'a str, &'a [f32])>,
    query: &[f32],
    limit: usize,
) -> Vec<(f64, &'a str)> {
    let mut scored: Vec<(f64, &str)> = pairs
        .filter(|(_, v)| v.len() == query.len())
        .map(|(id, v)| (dot(query, v) as f64, id))
        .collect();
    let by_rank = |a: &(f64, &str), b: &(f64, &str)| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1));
    if scored.len() > limit && limit > 0 {
        scored.select_nth_unstable_by(limit - 1, by_rank);
        scored.truncate(limit);
    }
    scored.sort_by(by_rank);
    scored.truncate(limit);
    scored
}

fn parse_ranked<Id: std::str::FromStr<Err = Error>>(
    scored: Vec<(f64, &str)>,
) -> Result<Vec<(Id, f64)>> {
    scored
        .into_iter()
        .map(|(score, id)| Ok((parse_id::<Id>(id)?, score)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rememberstack_core::ids::ChunkId;

    #[test]
    fn a_statement_ranks_its_list_once_asked_enough_at_one_stamp_or_while_the_list_is_current() {
        let cache = VectorCache::default();
        let asks = |stamp| {
            (0..LIST_AFTER_ASKS)
                .map(|_| cache.prefers_list("ns", "g", "claims|all", stamp))
                .collect::<Vec<_>>()
        };
        let mut want = vec![false; LIST_AFTER_ASKS as usize - 1];
        want.push(true);
        assert_eq!(asks(7), want, "walks until asked enough at stamp 7");
        assert_eq!(asks(8), want, "a write starts the count again");
        assert!(
            !cache.prefers_list("ns", "g", "claims|other", 8),
            "counted per statement"
        );
        // A list built at stamp 9 is ranked from the first ask at 9, not at 10.
        lock(&cache.lists).insert("ns|g|claims|all".into(), (9, Arc::default()));
        assert!(cache.prefers_list("ns", "g", "claims|all", 9));
        assert!(!cache.prefers_list("ns", "g", "claims|all", 10));
    }

    #[test]
    fn top_k_ranks_by_score_then_id_and_skips_other_dimensions() {
        let id = |n: u8| format!("00000000-0000-0000-0000-0000000000{n:02x}");
        let vectors: Vec<(String, Vec<f32>)> = vec![
            (id(3), vec![1.0, 0.0]),
            (id(1), vec![1.0, 0.0]),
            (id(2), vec![0.0, 1.0]),
            (id(4), vec![1.0, 0.0, 0.0]),
            (id(5), vec![0.6, 0.8]),
        ];
        let candidates: Candidates = Arc::new(CandidateList::new(
            vectors.iter().map(|(i, v)| (i.clone(), &v[..])),
        ));
        let hits: Vec<(ChunkId, f64)> = top_k(&candidates, &[1.0, 0.0], 3).unwrap();
        let order: Vec<String> = hits.iter().map(|h| h.0.to_string()).collect();
        assert_eq!(order, vec![id(1), id(3), id(5)]);
        assert!((hits[2].1 - 0.6).abs() < 1e-6);
        let all: Vec<(ChunkId, f64)> = top_k(&candidates, &[1.0, 0.0], 10).unwrap();
        assert_eq!(all.len(), 4, "the 3-dimensional vector is skipped");
        assert!(
            top_k::<ChunkId>(&candidates, &[1.0, 0.0], 0)
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_scan_in_parts_ranks_as_one_scan_does() {
        // Long enough to be cut into parts; a few exact ties across parts.
        let n = PARALLEL_SCAN_MIN * 3 + 17;
        let vectors: Vec<(String, Vec<f32>)> = (0..n)
            .map(|i| {
                let x = ((i * 7919) % 1000) as f32 / 1000.0;
                let v = if i % 1000 == 3 {
                    vec![1.0, 0.0, 0.0]
                } else {
                    vec![x, 1.0 - x, 0.5]
                };
                (format!("00000000-0000-0000-0000-{i:012x}"), unit(&v))
            })
            .collect();
        let candidates: Candidates = Arc::new(CandidateList::new(
            vectors.iter().map(|(i, v)| (i.clone(), &v[..])),
        ));
        for (query, limit) in [
            (vec![1.0, 0.0, 0.0], 5),
            (vec![0.2, 0.7, 0.1], 50),
            (vec![0.0, 1.0, 0.0], 1),
        ] {
            let one: Vec<(ChunkId, f64)> = top_k(&candidates, &query, limit).unwrap();
            let parts: Vec<(ChunkId, f64)> = rank(candidates.clone(), &query, limit).await.unwrap();
            assert_eq!(one, parts);
            assert_eq!(parts.len(), limit);
        }
        // The tied best of the first query come in id order, from several parts.
        let tied: Vec<(ChunkId, f64)> =
            rank(candidates.clone(), &[1.0, 0.0, 0.0], 5).await.unwrap();
        let ids: Vec<String> = tied.iter().map(|h| h.0.to_string()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert!(tied.iter().all(|h| (h.1 - 1.0).abs() < 1e-6));
    }
}
