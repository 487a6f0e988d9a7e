//! Two-phase lexical ranking for broad searches.
//!
//! Ranking every match of a common word through the eligibility joins (current
//! version, section role, currency) costs a join per match: at 100k claims most of
//! a search's time. A broad search (no entity anchor, no document scope) ranks
//! the FTS5 table alone first, then checks eligibility for the best `m` rows in one
//! indexed lookup; `m` grows until `limit` eligible rows are found or every match
//! was ranked. The answer is the one the single joined statement gives: any
//! eligible row outside the best `m` ranks below every row inside it.
//!
//! The first pass is bounded too: bm25 costs a step per posting of every query
//! term, and a word found in a large share of the rows (`work`, `live`) says
//! little about which rows answer. Terms are taken rarest first while their
//! postings fit [`POSTING_BUDGET`] (the rarest always counts); the others are left
//! out of the match and the score. A query whose terms all fit, and any query over
//! a table of at most [`BOUNDED_FROM_ROWS`] rows, is ranked exactly.

use crate::{SqlQuery, SqliteStore, db_err, fts_query};
use rememberstack_core::Result;
use rememberstack_core::ids::NamespaceId;
use rememberstack_core::store::traits::*;
use sqlx::Row;
use std::collections::HashMap;
use std::sync::Mutex;

/// The first pass ranks this many rows per result asked for (at least [`MIN_POOL`]).
const POOL_PER_RESULT: usize = 2;
/// The smallest first pass.
const MIN_POOL: usize = 32;
/// Postings the first pass may rank: terms beyond it (the commonest) are left out
/// unless they are the only ones.
pub(crate) const POSTING_BUDGET: u64 = 4_000;
/// Tables with at most this many rows are always ranked over every query term.
pub(crate) const BOUNDED_FROM_ROWS: u64 = 4 * POSTING_BUDGET;
/// Document-frequency entries cached at most (then the cache starts over).
const MAX_DF_ENTRIES: usize = 20_000;

/// Rows matching each (FTS table, term), valid while the namespace's change stamp
/// is unchanged.
#[derive(Debug, Default)]
pub(crate) struct DfCache(Mutex<HashMap<(String, String), (u64, u64)>>);

impl DfCache {
    fn get(&self, table: &str, term: &str, stamp: u64) -> Option<u64> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(table.to_string(), term.to_string()))
            .filter(|(s, _)| *s == stamp)
            .map(|(_, n)| *n)
    }
    fn put(&self, table: &str, term: &str, stamp: u64, n: u64) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_DF_ENTRIES {
            map.clear();
        }
        map.insert((table.to_string(), term.to_string()), (stamp, n));
    }
}

/// The terms to rank by: rarest first while their postings fit `budget`, at least
/// one; in the caller's order.
fn selective(terms: &[(String, u64)], budget: u64) -> Vec<String> {
    let mut by_df: Vec<&(String, u64)> = terms.iter().filter(|(_, n)| *n > 0).collect();
    by_df.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut total = 0;
    let mut keep: Vec<&str> = Vec::new();
    for (t, n) in by_df {
        if !keep.is_empty() && total + n > budget {
            break;
        }
        total += n;
        keep.push(t);
    }
    terms
        .iter()
        .filter(|(t, _)| keep.contains(&t.as_str()))
        .map(|(t, _)| t.clone())
        .collect()
}

impl SqliteStore {
    /// The best `limit` eligible rows of `fts` for `terms`, as (record id, score =
    /// −bm25), best first (ties in insertion order, `seq`, so that equal inputs
    /// rank equally however their random ids fall). `eligible(list)` builds the statement that
    /// returns `seq` and `id` of the eligible rows among the FTS rowids in `list`
    /// (a JSON array, its first parameter).
    pub(crate) async fn two_phase_lexical<F>(
        &self,
        ns: NamespaceId,
        fts: &str,
        terms: &[String],
        limit: usize,
        eligible: F,
    ) -> Result<Vec<(String, f64)>>
    where
        F: Fn(String) -> SqlQuery<'static>,
    {
        let terms = self.bounded_terms(ns, fts, terms).await?;
        if terms.is_empty() {
            return Ok(vec![]);
        }
        let matching = fts_query(&terms);
        let mut pool = (limit * POOL_PER_RESULT).max(MIN_POOL);
        loop {
            let ranked: Vec<(i64, f64)> = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT rowid, bm25({fts}) AS rank FROM {fts} WHERE {fts} MATCH ?
                 ORDER BY rank, rowid LIMIT ?"
            )))
            .bind(&matching)
            .bind(pool as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?
            .iter()
            .map(|r| (r.get::<i64, _>("rowid"), r.get::<f64, _>("rank")))
            .collect();
            let exhausted = ranked.len() < pool;
            let list = serde_json::to_string(&ranked.iter().map(|(s, _)| *s).collect::<Vec<_>>())
                .map_err(|e| rememberstack_core::Error::internal(e.to_string()))?;
            let ids: HashMap<i64, String> = eligible(list)
                .fetch_all(&self.read)
                .await
                .map_err(db_err)?
                .iter()
                .map(|r| (r.get::<i64, _>("seq"), r.get::<String, _>("id")))
                .collect();
            let mut hits: Vec<(i64, String, f64)> = ranked
                .iter()
                .filter_map(|(seq, rank)| ids.get(seq).map(|id| (*seq, id.clone(), *rank)))
                .collect();
            if hits.len() >= limit || exhausted {
                hits.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
                hits.truncate(limit);
                return Ok(hits.into_iter().map(|(_, id, rank)| (id, -rank)).collect());
            }
            pool *= POOL_PER_RESULT;
        }
    }

    /// The query's terms that the first pass ranks by (see [`POSTING_BUDGET`]).
    async fn bounded_terms(
        &self,
        ns: NamespaceId,
        fts: &str,
        terms: &[String],
    ) -> Result<Vec<String>> {
        let stamp = self.change_stamp(ns).await?;
        // The row count is cached under a key no term can take.
        let rows = self
            .counted(
                fts,
                "\0rows",
                stamp,
                format!("SELECT COUNT(*) FROM {fts}_docsize"),
                None,
            )
            .await?;
        if rows <= BOUNDED_FROM_ROWS {
            return Ok(terms.to_vec());
        }
        let mut counted = Vec::with_capacity(terms.len());
        for t in terms {
            let n = self
                .counted(
                    fts,
                    t,
                    stamp,
                    format!("SELECT COUNT(*) FROM {fts} WHERE {fts} MATCH ?"),
                    Some(fts_query(std::slice::from_ref(t))),
                )
                .await?;
            counted.push((t.clone(), n));
        }
        Ok(selective(&counted, POSTING_BUDGET))
    }

    /// A count, cached under (table, key) while the change stamp holds.
    async fn counted(
        &self,
        fts: &str,
        key: &str,
        stamp: u64,
        sql: String,
        bind: Option<String>,
    ) -> Result<u64> {
        if let Some(n) = self.df_cache.get(fts, key, stamp) {
            return Ok(n);
        }
        let mut q = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql));
        if let Some(b) = bind {
            q = q.bind(b);
        }
        let n = q.fetch_one(&self.read).await.map_err(db_err)? as u64;
        self.df_cache.put(fts, key, stamp, n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::selective;

    fn terms(t: &[(&str, u64)]) -> Vec<(String, u64)> {
        t.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    }

    #[test]
    fn the_rarest_terms_that_fit_the_budget_are_kept_in_query_order() {
        let t = terms(&[
            ("work", 16_000),
            ("kigali", 900),
            ("nkosi", 40),
            ("absent", 0),
        ]);
        assert_eq!(selective(&t, 4_000), vec!["kigali", "nkosi"]);
        assert_eq!(selective(&t, 100_000), vec!["work", "kigali", "nkosi"]);
        // The rarest always counts, even past the budget.
        let t = terms(&[("live", 15_000), ("work", 16_000)]);
        assert_eq!(selective(&t, 4_000), vec!["live"]);
        assert!(selective(&terms(&[("absent", 0)]), 4_000).is_empty());
    }
}
