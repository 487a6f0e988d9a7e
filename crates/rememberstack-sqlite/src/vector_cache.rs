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

use crate::ann::{Graph, Positions};
use crate::db_err;
use crate::parse_id;
use crate::rows::decode_vector;
use rememberstack_core::embed::{dot, unit};
use rememberstack_core::{Error, Result};
use sqlx::AssertSqlSafe;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
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

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &[f32])> {
        self.range(0..self.ids.len())
    }

    /// The pairs at positions `range`, in order.
    fn range(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = (&str, &[f32])> {
        self.ids[range.clone()]
            .iter()
            .zip(&self.spans[range])
            .map(|(id, (start, len))| (id.as_str(), &self.data[*start..*start + *len]))
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The pair at `position`.
    pub(crate) fn get(&self, position: usize) -> Option<(&str, &[f32])> {
        let id = self.ids.get(position)?;
        let (start, len) = self.spans[position];
        Some((id.as_str(), &self.data[start..start + len]))
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
    /// Counts the times the set was read in full: a record's position (see
    /// [`crate::ann`]) means the same record only within one epoch.
    epoch: u64,
    /// The approximate index over the set's first positions, once built.
    graph: Option<Arc<Graph>>,
    /// The epoch whose graph is being built.
    building: Option<u64>,
    /// The epoch whose graph could not be built (it is not tried again).
    failed: Option<u64>,
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
    /// Whether the ranking must be exact: no approximate index is walked.
    pub(crate) exact: bool,
    /// The statement: `id` and `embedding_key` of the eligible records, joined to
    /// their vectors of the generation ([`vectors_join`]).
    pub(crate) sql: String,
    /// The same statement with [`VECTOR_IMPLIED`] in place of the join, for a
    /// walk's checks: a record set holds records with a vector of its generation
    /// only, and a vector is deleted only once no record uses it (the forget
    /// scrub), so looking each candidate's vector up again would find it.
    pub(crate) check: String,
    /// Binds its arguments, in order.
    pub(crate) bind: B,
}

/// The join of an eligibility statement's records (alias `alias`) to their
/// vectors of the generation, its first parameter.
pub(crate) fn vectors_join(alias: &str) -> String {
    format!(
        "JOIN vectors vv ON vv.namespace_id = {alias}.namespace_id AND vv.generation = ?
                        AND vv.embedding_key = {alias}.embedding_key"
    )
}

/// What stands for [`vectors_join`] in an [`Eligibility`]'s `check`: the
/// generation parameter, bound but not looked up.
pub(crate) const VECTOR_IMPLIED: &str = "JOIN (SELECT ? AS generation) AS vv";

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
    /// Record sets of at least this many records keep an approximate index
    /// ([`crate::ann`]); 0: never.
    approximate_from: AtomicUsize,
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
    /// A cache whose record sets of at least `n` records keep an approximate index
    /// (0: none does).
    pub(crate) fn approximate_from(n: usize) -> VectorCache {
        let cache = VectorCache::default();
        cache.set_approximate_from(n);
        cache
    }

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
            exact,
            sql,
            check,
            bind,
        } = statement;
        // A set with an approximate index walks it even on a quiet store: a list
        // would be scanned whole, the index is not.
        if !scoped
            && ((!exact && self.has_graph(ns, generation, table, query.len()).await)
                || !self.prefers_list(ns, generation, &key, stamp))
        {
            let check = format!("{check} AND {id_column} IN (SELECT value FROM json_each(?))");
            let eligible = |ids: Vec<String>| {
                let check = bind(sqlx::query(AssertSqlSafe(check.clone())));
                async move { admitted(pool, check, &ids).await }
            };
            if let Some(hits) = self
                .walk(
                    pool, ns, generation, table, stamp, query, limit, exact, eligible,
                )
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
    ) -> Result<(Vec<Candidates>, Option<Arc<Graph>>)> {
        let handle = lock(&self.sets)
            .entry((ns.to_string(), generation.to_string(), table))
            .or_default()
            .clone();
        let mut set = handle.lock().await;
        if set.loaded && set.stamp == stamp {
            let graph = self.maintain_graph(&handle, &mut set);
            return Ok((set.segments.clone(), graph));
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
                epoch: set.epoch + 1,
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
        let graph = self.maintain_graph(&handle, &mut set);
        Ok((set.segments.clone(), graph))
    }

    /// Record sets of at least `n` records keep an approximate index; 0: none does,
    /// and every search scans exactly.
    pub(crate) fn set_approximate_from(&self, n: usize) {
        self.approximate_from.store(n, Ordering::Relaxed);
    }

    /// The approximate index a walk of `set` may use, if any: a set past the size
    /// starts building one (off the request path, but for a small set), and a graph
    /// behind its set starts taking in the new records.
    fn maintain_graph(
        &self,
        handle: &Arc<tokio::sync::Mutex<RecordSet>>,
        set: &mut RecordSet,
    ) -> Option<Arc<Graph>> {
        let from = self.approximate_from.load(Ordering::Relaxed);
        let total: usize = set.segments.iter().map(|s| s.len()).sum();
        if from == 0 || total < from {
            return None;
        }
        if let Some(graph) = &set.graph {
            if graph.indexed() < total && graph.start_growing() {
                let (grower, segments) = (graph.clone(), set.segments.clone());
                if !crate::ann::detached(move || grower.grow(&segments)) {
                    graph.stop_growing();
                }
            }
            return Some(graph.clone());
        }
        if set.building == Some(set.epoch) || set.failed == Some(set.epoch) {
            return None;
        }
        if total <= crate::ann::BUILD_INLINE_MAX {
            set.graph = crate::ann::guarded(|| Graph::build(&set.segments)).map(Arc::new);
            if set.graph.is_none() {
                set.failed = Some(set.epoch);
            }
            return set.graph.clone();
        }
        set.building = Some(set.epoch);
        let (handle, segments, epoch) = (handle.clone(), set.segments.clone(), set.epoch);
        let started = crate::ann::detached(move || {
            let graph = crate::ann::guarded(|| Graph::build(&segments)).map(Arc::new);
            let mut set = handle.blocking_lock();
            // A set read again in full meanwhile builds for its new epoch.
            if set.epoch == epoch {
                set.building = None;
                if graph.is_none() {
                    set.failed = Some(epoch);
                }
                set.graph = graph;
            }
        });
        if !started {
            set.building = None;
            set.failed = Some(set.epoch);
        }
        None
    }

    /// Whether the record set of `table` walks an approximate index for queries of
    /// `dimension`.
    async fn has_graph(
        &self,
        ns: &str,
        generation: &str,
        table: &'static str,
        dimension: usize,
    ) -> bool {
        if self.approximate_from.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let set = lock(&self.sets)
            .get(&(ns.to_string(), generation.to_string(), table))
            .cloned();
        match set {
            Some(set) => set
                .lock()
                .await
                .graph
                .as_ref()
                .is_some_and(|g| g.dimension() == dimension),
            None => false,
        }
    }

    /// The approximate indexes: (table, records in the graph), by namespace.
    pub(crate) async fn indexes(&self) -> Vec<(String, &'static str, usize)> {
        let sets: Vec<_> = lock(&self.sets)
            .iter()
            .map(|((ns, _, table), set)| (ns.clone(), *table, set.clone()))
            .collect();
        let mut out = Vec::new();
        for (ns, table, set) in sets {
            if let Some(graph) = &set.lock().await.graph {
                out.push((ns, table, graph.indexed()));
            }
        }
        out.sort();
        out
    }

    /// Whether no record set is building or growing its approximate index.
    pub(crate) async fn indexes_settled(&self) -> bool {
        let sets: Vec<_> = lock(&self.sets).values().cloned().collect();
        for set in sets {
            let set = set.lock().await;
            if set.building == Some(set.epoch) {
                return false;
            }
            if set.graph.as_ref().is_some_and(|g| g.is_growing()) {
                return false;
            }
        }
        true
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
        exact: bool,
        eligible: F,
    ) -> Result<Option<Vec<(Id, f64)>>>
    where
        Id: std::str::FromStr<Err = Error>,
        F: Fn(Vec<String>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<String>>>,
    {
        rememberstack_core::store::check_query_vector(query)?;
        let (segments, graph) = self.record_set(pool, ns, generation, table, stamp).await?;
        let query: Arc<[f32]> = Arc::from(unit(query));
        if let Some(graph) = graph.filter(|g| !exact && g.dimension() == query.len()) {
            return walk_graph(&segments, graph, query, limit, eligible).await;
        }
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

/// [`VectorCache::walk`] over an approximate index: its candidates are the records
/// the graph finds nearest to `query` (a unit vector) and the records appended since
/// the graph last grew (scored exactly), the best `want` of each; eligibility is
/// checked for those not checked yet, and each round asks four times more, until
/// `limit` are admitted. Every score is the exact cosine and the result is ranked by
/// it; only which records are looked at is approximate. `None` when more than a
/// quarter of the set was checked without enough (a selective filter).
async fn walk_graph<Id, F, Fut>(
    segments: &[Candidates],
    graph: Arc<Graph>,
    query: Arc<[f32]>,
    limit: usize,
    eligible: F,
) -> Result<Option<Vec<(Id, f64)>>>
where
    Id: std::str::FromStr<Err = Error>,
    F: Fn(Vec<String>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<String>>>,
{
    let positions = Positions::of(segments);
    let total = positions.total();
    let indexed = graph.indexed().min(total);
    let mut tail: Vec<(f64, usize)> = (indexed..total)
        .filter_map(|p| {
            let (_, v) = positions.at(segments, p)?;
            (v.len() == query.len()).then(|| (dot(&query, v) as f64, p))
        })
        .collect();
    tail.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut checked: HashSet<usize> = HashSet::new();
    let mut kept: Vec<(f64, &str)> = Vec::with_capacity(limit);
    let mut want = (limit * WALK_FIRST_PER_RESULT).max(64);
    loop {
        let nearest = {
            let (graph, query) = (graph.clone(), query.clone());
            let n = want.min(indexed);
            tokio::task::spawn_blocking(move || graph.nearest(&query, n))
                .await
                .map_err(|e| Error::internal(format!("a vector search failed: {e}")))?
        };
        let mut fresh: Vec<(f64, &str)> = nearest
            .into_iter()
            .map(|(p, score)| (score as f64, p))
            .chain(tail.iter().take(want).copied())
            .filter(|(_, p)| checked.insert(*p))
            .filter_map(|(score, p)| positions.at(segments, p).map(|(id, _)| (score, id)))
            .collect();
        fresh.sort_by(by_rank);
        if !fresh.is_empty() {
            let ids: Vec<String> = fresh.iter().map(|(_, id)| id.to_string()).collect();
            let admitted: HashSet<String> = eligible(ids).await?.into_iter().collect();
            kept.extend(fresh.into_iter().filter(|(_, id)| admitted.contains(*id)));
        }
        if kept.len() >= limit || want >= total {
            break;
        }
        if checked.len() * WALK_MAX_SHARE > total {
            return Ok(None);
        }
        want = want.saturating_mul(4);
    }
    kept.sort_by(by_rank);
    kept.truncate(limit);
    parse_ranked(kept).map(Some)
}

/// Best score first; equal scores by id, so a ranking does not depend on the order
/// records were read in.
fn by_rank(a: &(f64, &str), b: &(f64, &str)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1))
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

    /// A deterministic unit vector of `dim` dimensions.
    fn vector(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v: Vec<f32> = (0..dim)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        unit(&v)
    }

    fn id(i: usize) -> String {
        format!("00000000-0000-0000-0000-{i:012x}")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_walk_of_the_approximate_index_finds_the_exact_best_of_the_eligible() {
        const DIM: usize = 24;
        let records: Vec<(String, Vec<f32>)> =
            (0..3_000).map(|i| (id(i), vector(i as u64, DIM))).collect();
        let list = |range: std::ops::Range<usize>| -> Candidates {
            Arc::new(CandidateList::new(
                records[range].iter().map(|(i, v)| (i.clone(), &v[..])),
            ))
        };
        // The graph holds the first two segments; the third came after it.
        let mut segments = vec![list(0..1_500), list(1_500..2_800)];
        let graph = Arc::new(Graph::build(&segments).unwrap());
        assert_eq!(graph.indexed(), 2_800);
        segments.push(list(2_800..3_000));
        // Records with an even number are eligible.
        let even = |i: &str| {
            usize::from_str_radix(&i[24..], 16)
                .unwrap()
                .is_multiple_of(2)
        };
        let eligible = |ids: Vec<String>| async move {
            Ok::<_, Error>(ids.into_iter().filter(|i| even(i)).collect::<Vec<_>>())
        };
        let exact = |q: &[f32], limit: usize| -> Vec<String> {
            let mut all: Vec<(f32, &String)> = records
                .iter()
                .filter(|(i, _)| even(i))
                .map(|(i, v)| (dot(q, v), i))
                .collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
            all.into_iter()
                .take(limit)
                .map(|(_, i)| i.clone())
                .collect()
        };
        let (mut found, mut asked) = (0, 0);
        for q in 0..40u64 {
            let query: Arc<[f32]> = Arc::from(vector(10_000 + q, DIM));
            let hits: Vec<(ChunkId, f64)> =
                walk_graph(&segments, graph.clone(), query.clone(), 10, eligible)
                    .await
                    .unwrap()
                    .expect("an unselective filter never gives way");
            assert_eq!(hits.len(), 10);
            let want = exact(&query, 10);
            for (k, (hit, score)) in hits.iter().enumerate() {
                let hit = hit.to_string();
                assert!(even(&hit), "only eligible records");
                let v = &records.iter().find(|(i, _)| *i == hit).unwrap().1;
                assert!(
                    (dot(&query, v) as f64 - score).abs() < 1e-6,
                    "exact cosines"
                );
                if k > 0 {
                    assert!(hits[k - 1].1 >= *score, "ranked by score");
                }
                found += usize::from(want.contains(&hit));
            }
            asked += 10;
        }
        let recall = found as f64 / asked as f64;
        assert!(recall >= 0.95, "recall@10 against the exact scan: {recall}");
        // A record after the graph is found: scored exactly beside it.
        let newest: Arc<[f32]> = Arc::from(records[2_998].1.clone());
        let hits: Vec<(ChunkId, f64)> = walk_graph(&segments, graph.clone(), newest, 1, eligible)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(hits[0].0.to_string(), id(2_998));
        // A selective filter gives way to the eligibility statement's list.
        let rare = |ids: Vec<String>| async move {
            Ok::<_, Error>(ids.into_iter().filter(|i| i == &id(7)).collect::<Vec<_>>())
        };
        let query: Arc<[f32]> = Arc::from(vector(99, DIM));
        let gave_way: Option<Vec<(ChunkId, f64)>> =
            walk_graph(&segments, graph.clone(), query, 5, rare)
                .await
                .unwrap();
        assert!(gave_way.is_none());
        // The graph grows by the records after it.
        assert!(graph.start_growing());
        graph.grow(&segments);
        assert_eq!(graph.indexed(), 3_000);
        assert!(!graph.is_growing());
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
