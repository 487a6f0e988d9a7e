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

use crate::db_err;
use crate::parse_id;
use crate::rows::decode_vector;
use rememberstack_core::embed::{dot, unit};
use rememberstack_core::{Error, Result};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Cached vectors at most (then the vector map starts over).
const MAX_VECTORS: usize = 400_000;
/// Cached candidate lists at most (then the list map starts over).
const MAX_LISTS: usize = 128;

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

#[derive(Debug, Default)]
pub(crate) struct VectorCache {
    vectors: Mutex<HashMap<(String, String), Vectors>>,
    lists: Mutex<HashMap<String, (u64, Candidates)>>,
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
        let list_key = format!("{ns}|{generation}|{statement}");
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
