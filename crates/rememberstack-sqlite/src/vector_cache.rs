//! Decoded vectors kept in memory for the exact semantic scan.
//!
//! Eligibility stays in SQL: a semantic query selects the eligible records and
//! their embedding keys in one statement (joined to `vectors`, so only keys with a
//! stored vector come back), and only the scoring reads decoded vectors from here.
//! A vector of a (namespace, generation, key) never changes once written, so a
//! cached one is never stale; a deleted one is never asked for, because the SQL no
//! longer returns its key. Keys not cached yet are read in batches and kept.

use crate::db_err;
use crate::parse_id;
use crate::rows::decode_vector;
use rememberstack_core::{Error, Result};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Above this many cached vectors the cache starts over (memory stays bounded).
const MAX_ENTRIES: usize = 400_000;

type Key = (String, String);

/// Decoded vectors of one (namespace, generation), by embedding key.
type Vectors = HashMap<String, Arc<[f32]>>;

/// Vectors by (namespace, generation), then embedding key.
#[derive(Debug, Default)]
pub(crate) struct VectorCache {
    map: Mutex<HashMap<Key, Vectors>>,
}

impl VectorCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Vectors>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Score `rows` (columns `id` and `embedding_key`) against `query` and keep the
    /// best `limit`, ties by id.
    pub(crate) async fn top_k<Id: std::str::FromStr<Err = Error> + Ord>(
        &self,
        pool: &sqlx::SqlitePool,
        ns: &str,
        generation: &str,
        rows: &[SqliteRow],
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(Id, f64)>> {
        let key: Key = (ns.to_string(), generation.to_string());
        let pairs: Vec<(String, String)> = rows
            .iter()
            .map(|r| {
                (
                    r.get::<String, _>("id"),
                    r.get::<String, _>("embedding_key"),
                )
            })
            .collect();
        let missing: Vec<String> = {
            let map = self.lock();
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
                "SELECT embedding_key, vector FROM vectors
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
                let v = decode_vector(&r.get::<Vec<u8>, _>("vector"))?;
                loaded.push((r.get::<String, _>("embedding_key"), Arc::from(v)));
            }
        }
        let vectors: Vectors = {
            let mut map = self.lock();
            let total: usize = map.values().map(HashMap::len).sum();
            if total + loaded.len() > MAX_ENTRIES {
                map.clear();
            }
            let entry = map.entry(key).or_default();
            for (k, v) in loaded {
                entry.insert(k, v);
            }
            pairs
                .iter()
                .filter_map(|(_, k)| entry.get(k).map(|v| (k.clone(), v.clone())))
                .collect()
        };
        let mut hits = Vec::with_capacity(pairs.len());
        for (id, k) in &pairs {
            let Some(v) = vectors.get(k) else { continue };
            if v.len() != query.len() {
                continue;
            }
            hits.push((
                parse_id::<Id>(id)?,
                rememberstack_core::embed::cosine(query, v) as f64,
            ));
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        hits.truncate(limit);
        Ok(hits)
    }
}
