//! The retrieval a user would build instead, run on the same turns and questions:
//! BM25 over raw turns (a fixed FTS5 recipe, so it cannot be made weak), dense
//! cosine over raw turns with the same embedder, and their RRF fusion (k = 60 over
//! top-`DEPTH` lists).

use anyhow::{Context, Result};
use rememberstack::internals::embed::{EmbedPurpose, Embedder};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{AssertSqlSafe, Row, SqlitePool};
use std::collections::HashMap;
use std::str::FromStr;

/// Turns each baseline ranks per question: enough to fill the largest context
/// budget of recall@budget (4,000 tokens at about 30 tokens a turn).
pub const DEPTH: usize = 300;
/// The RRF constant.
const RRF_K: f64 = 60.0;

/// NLTK's 179 English stopwords (the forms with apostrophes never match a
/// `[a-z0-9]+` term, but the list is kept whole).
pub const STOPWORDS: [&str; 179] = [
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "you're",
    "you've",
    "you'll",
    "you'd",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "she's",
    "her",
    "hers",
    "herself",
    "it",
    "it's",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "that'll",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "don't",
    "should",
    "should've",
    "now",
    "d",
    "ll",
    "m",
    "o",
    "re",
    "ve",
    "y",
    "ain",
    "aren",
    "aren't",
    "couldn",
    "couldn't",
    "didn",
    "didn't",
    "doesn",
    "doesn't",
    "hadn",
    "hadn't",
    "hasn",
    "hasn't",
    "haven",
    "haven't",
    "isn",
    "isn't",
    "ma",
    "mightn",
    "mightn't",
    "mustn",
    "mustn't",
    "needn",
    "needn't",
    "shan",
    "shan't",
    "shouldn",
    "shouldn't",
    "wasn",
    "wasn't",
    "weren",
    "weren't",
    "won",
    "won't",
    "wouldn",
    "wouldn't",
];

/// The fixed BM25 query: the lowercase `[a-z0-9]+` terms minus the stopwords (all
/// terms if none remain), each double-quoted, OR-joined.
pub fn bm25_query(question: &str) -> Option<String> {
    let lower = question.to_lowercase();
    let terms: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .collect();
    let content: Vec<&str> = terms
        .iter()
        .copied()
        .filter(|t| !STOPWORDS.contains(t))
        .collect();
    let chosen = if content.is_empty() { terms } else { content };
    if chosen.is_empty() {
        return None;
    }
    Some(
        chosen
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

/// One conversation's turns, indexed for the baselines.
pub struct TurnIndex {
    pool: SqlitePool,
    table: String,
    /// (turn id, `Speaker: text`), in order.
    pub turns: Vec<(String, String)>,
    vectors: Vec<Vec<f32>>,
}

impl TurnIndex {
    /// Index `turns` (id, `Speaker: text`) in its own FTS5 table and embed them.
    pub async fn build(
        pool: &SqlitePool,
        n: usize,
        turns: Vec<(String, String)>,
        embedder: &dyn Embedder,
    ) -> Result<Self> {
        let table = format!("turns_{n}");
        sqlx::query(AssertSqlSafe(format!(
            "CREATE VIRTUAL TABLE {table} USING fts5 (turn UNINDEXED, text, tokenize = 'porter unicode61')"
        )))
        .execute(pool)
        .await?;
        for (id, text) in &turns {
            sqlx::query(AssertSqlSafe(format!(
                "INSERT INTO {table} (turn, text) VALUES (?, ?)"
            )))
            .bind(id)
            .bind(text)
            .execute(pool)
            .await?;
        }
        let mut vectors = Vec::with_capacity(turns.len());
        for batch in turns.chunks(64) {
            let texts: Vec<String> = batch.iter().map(|t| t.1.clone()).collect();
            vectors.extend(
                embedder
                    .embed(&texts, EmbedPurpose::Document)
                    .await
                    .context("embedding turns")?,
            );
        }
        Ok(TurnIndex {
            pool: pool.clone(),
            table,
            turns,
            vectors,
        })
    }

    /// BM25 top turns for `question`.
    pub async fn bm25(&self, question: &str) -> Result<Vec<String>> {
        let Some(q) = bm25_query(question) else {
            return Ok(vec![]);
        };
        let t = &self.table;
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT turn FROM {t} WHERE {t} MATCH ? ORDER BY bm25({t}), rowid LIMIT ?"
        )))
        .bind(q)
        .bind(DEPTH as i64)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(|r| r.get::<String, _>("turn")).collect())
    }

    /// Dense (exact cosine) top turns for a query vector.
    pub fn dense(&self, query: &[f32]) -> Vec<String> {
        let mut scored: Vec<(f32, usize)> = self
            .vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (rememberstack::internals::embed::cosine(query, v), i))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(DEPTH)
            .map(|(_, i)| self.turns[i].0.clone())
            .collect()
    }

    /// The text of a turn.
    pub fn text(&self, turn: &str) -> &str {
        self.turns
            .iter()
            .find(|t| t.0 == turn)
            .map_or("", |t| t.1.as_str())
    }
}

/// An in-memory SQLite database for the baselines' FTS5 tables. It lives exactly as
/// long as its one connection, so the pool never retires that connection (by
/// default a pooled connection is closed after ten idle minutes or half an hour,
/// which would drop every table of a long run).
pub async fn memory_pool() -> Result<SqlitePool> {
    Ok(SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(SqliteConnectOptions::from_str("sqlite::memory:")?)
        .await?)
}

/// Reciprocal rank fusion of ranked lists (k = 60), ties by first appearance.
pub fn rrf(lists: &[Vec<String>]) -> Vec<String> {
    let mut score: HashMap<&str, f64> = HashMap::new();
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut order = 0usize;
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            *score.entry(id).or_default() += 1.0 / (RRF_K + rank as f64 + 1.0);
            first.entry(id).or_insert_with(|| {
                order += 1;
                order
            });
        }
    }
    let mut ids: Vec<&str> = score.keys().copied().collect();
    ids.sort_by(|a, b| score[b].total_cmp(&score[a]).then(first[a].cmp(&first[b])));
    ids.into_iter().take(DEPTH).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_recipe_is_fixed() {
        assert_eq!(STOPWORDS.len(), 179);
        assert_eq!(
            bm25_query("When did Caroline go to the LGBTQ support group?").as_deref(),
            Some("\"caroline\" OR \"go\" OR \"lgbtq\" OR \"support\" OR \"group\"")
        );
        // Only stopwords: all terms are kept.
        assert_eq!(
            bm25_query("Who was it?").as_deref(),
            Some("\"who\" OR \"was\" OR \"it\"")
        );
        assert_eq!(bm25_query("?!"), None);
    }

    #[test]
    fn rrf_rewards_agreement() {
        let a = vec!["x".to_string(), "y".to_string()];
        let b = vec!["y".to_string(), "z".to_string()];
        assert_eq!(rrf(&[a, b]), vec!["y", "x", "z"]);
    }

    #[tokio::test]
    async fn bm25_and_dense_rank_the_matching_turn_first() {
        let pool = memory_pool().await.unwrap();
        let embedder = rememberstack::HashingEmbedder::default();
        let idx = TurnIndex::build(
            &pool,
            0,
            vec![
                ("D1:1".into(), "Ann: I adopted a beagle named Pepper".into()),
                ("D1:2".into(), "Bo: I work at the observatory".into()),
            ],
            &embedder,
        )
        .await
        .unwrap();
        assert_eq!(
            idx.bm25("Which dog did Ann adopt?").await.unwrap()[0],
            "D1:1"
        );
        let q = embedder
            .embed(
                &["where does Bo work observatory".into()],
                EmbedPurpose::Query,
            )
            .await
            .unwrap();
        assert_eq!(idx.dense(&q[0])[0], "D1:2");
        assert_eq!(idx.text("D1:2"), "Bo: I work at the observatory");
    }
}
