//! Both stores' semantic readiness comes from counters their triggers keep
//! (`vector_coverage`); they must always equal a count over the tables, through
//! every way records, current versions and vectors change. The PostgreSQL half
//! needs `DATABASE_URL` (`scripts/pg-local.sh start`) and is skipped without it.

use rememberstack::{Config, FactQuery, IngestOptions, Memory};
use rememberstack_core::ids::NamespaceId;
use rememberstack_core::store::{MemoryStore, VectorCoverage};
use rememberstack_pg::{PgStore, PgStoreConfig};
use rememberstack_sql::coverage::Target;
use rememberstack_sqlite::SqliteStore;
use std::sync::Arc;

/// The store under test, with its recount.
#[derive(Clone)]
enum Store {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PgStore>),
}

impl Store {
    fn memory_store(&self) -> Arc<dyn MemoryStore> {
        match self {
            Store::Sqlite(s) => s.clone(),
            Store::Postgres(s) => s.clone(),
        }
    }

    async fn recount(&self, ns: NamespaceId, target: Target, g: &str) -> VectorCoverage {
        match self {
            Store::Sqlite(s) => s.recount_vector_coverage(ns, target, g).await,
            Store::Postgres(s) => s.recount_vector_coverage(ns, target, g).await,
        }
        .unwrap()
    }
}

async fn memory_over(store: &Store, embedder: rememberstack::EmbedderConfig) -> Memory {
    Memory::builder()
        .store(store.memory_store())
        .namespace("cov")
        .config(Config {
            embedder,
            ..Config::default()
        })
        .open()
        .await
        .unwrap()
}

/// Every target's counted coverage equals its recount, for each generation named
/// (and one no vector has: everything is missing there).
async fn assert_counted(store: &Store, generations: &[String], step: &str) {
    let s = store.memory_store();
    let ns = s.namespace("cov").await.unwrap().unwrap().id;
    let mut all = generations.to_vec();
    all.push("no-such-generation".into());
    for target in [Target::Chunks, Target::Claims, Target::Facts] {
        for g in &all {
            let counted = match target {
                Target::Chunks => s.vector_coverage(ns, g).await.unwrap(),
                Target::Claims => s.claim_vector_coverage(ns, g).await.unwrap(),
                Target::Facts => s.fact_vector_coverage(ns, g).await.unwrap(),
            };
            let recounted = store.recount(ns, target, g).await;
            assert_eq!(counted, recounted, "{step}: {target:?} under {g}");
        }
    }
}

/// Records written, processed, revised, retracted, invalidated, embedded in a
/// second generation, deleted and forgotten, the counters checked after each step.
/// Returns the generations.
async fn every_change(store: &Store) -> Vec<String> {
    let memory = memory_over(store, rememberstack::EmbedderConfig::hashing()).await;
    let g1 = memory.embedder_generation();
    let gens = vec![g1.clone()];

    // Written, not yet processed.
    let mut receipts = Vec::new();
    for (i, text) in [
        "# Harbour\n\nAda Lovelace lives in Lisbon. Ada works at the harbour office.",
        "# Trip\n\nGrace Hopper moved to Porto in 2021. Grace teaches sailing.",
        "# Garden\n\nAlan Turing grows tomatoes. Alan lives in Leeds.",
    ]
    .iter()
    .enumerate()
    {
        receipts.push(
            memory
                .ingest_text(*text, IngestOptions::new(format!("doc{i}")))
                .await
                .unwrap(),
        );
    }
    assert_counted(store, &gens, "ingested").await;
    let s = store.memory_store();
    let ns = s.namespace("cov").await.unwrap().unwrap().id;
    memory.process_until_idle().await.unwrap();
    assert_counted(store, &gens, "processed").await;
    let processed = s.claim_vector_coverage(ns, &g1).await.unwrap();
    assert!(processed.chunks > 0, "claims were extracted");
    assert_eq!(processed.missing, 0, "every claim has its vector");

    // A new version moves the document's current version: the old version's chunks
    // and claims stop counting, the new ones count once embedded.
    memory
        .ingest_text(
            "# Harbour\n\nAda Lovelace lives in Madrid now. Ada sails on Sundays.",
            IngestOptions::new("doc0"),
        )
        .await
        .unwrap();
    assert_counted(store, &gens, "revised").await;
    memory.process_until_idle().await.unwrap();
    assert_counted(store, &gens, "revised and processed").await;

    // A claim retracted, a fact invalidated.
    let claims = memory.claims(None, false).await.unwrap();
    memory
        .retract_claim(claims[0].claim_id, "wrong", None)
        .await
        .unwrap();
    let facts = memory.facts(&FactQuery::default()).await.unwrap();
    assert!(!facts.is_empty(), "facts were adjudicated");
    memory
        .invalidate_fact(facts[0].fact_id, "no longer true", None)
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    assert_counted(store, &gens, "retracted and invalidated").await;

    // A second generation: another embedder over the same store embeds everything
    // again, and both generations are counted apart.
    let other = memory_over(
        store,
        rememberstack::EmbedderConfig::Hashing { dimension: 64 },
    )
    .await;
    let g2 = other.embedder_generation();
    assert_ne!(g1, g2);
    let gens = vec![g1.clone(), g2.clone()];
    assert_counted(store, &gens, "second generation, before embedding").await;
    let before = s.claim_vector_coverage(ns, &g2).await.unwrap();
    assert_eq!(
        before.missing, before.chunks,
        "no claim has a vector of g2 yet"
    );
    other.process_until_idle().await.unwrap();
    assert_counted(store, &gens, "second generation embedded").await;
    assert_eq!(s.claim_vector_coverage(ns, &g2).await.unwrap().missing, 0);

    // A deletion and a hard forget take records (and a forget, vectors) away.
    memory
        .delete_document(receipts[1].document_id)
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    assert_counted(store, &gens, "deleted").await;
    memory
        .forget_document(receipts[2].document_id)
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    assert_counted(store, &gens, "forgotten").await;
    let chunks = s.vector_coverage(ns, &g1).await.unwrap();
    assert!(chunks.chunks > 0, "the revised document's chunks remain");
    gens
}

#[tokio::test]
async fn coverage_counters_follow_every_change_of_records_versions_and_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open(dir.path().join("m.db")).await.unwrap());
    let store = Store::Sqlite(sqlite);
    let gens = every_change(&store).await;

    // A store written before the counters: migration 0035 run again over these
    // tables (its table and triggers gone first) counts what they hold.
    use sqlx::{Connection, Row};
    let mut raw =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", dir.path().join("m.db").display()))
            .await
            .unwrap();
    let triggers: Vec<String> = sqlx::query(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%\\_coverage\\_%' ESCAPE '\\'",
    )
    .fetch_all(&mut raw)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get("name"))
    .collect();
    assert_eq!(triggers.len(), 15, "{triggers:?}");
    for t in &triggers {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TRIGGER {t}")))
            .execute(&mut raw)
            .await
            .unwrap();
    }
    sqlx::raw_sql("DROP TABLE vector_coverage")
        .execute(&mut raw)
        .await
        .unwrap();
    sqlx::raw_sql(include_str!(
        "../../rememberstack-sqlite/migrations/0035_vector_coverage_counts.sql"
    ))
    .execute(&mut raw)
    .await
    .unwrap();
    raw.close().await.unwrap();
    assert_counted(&store, &gens, "counted by the migration").await;
}

#[tokio::test]
async fn coverage_counters_follow_every_change_on_postgres() {
    let url = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => {
            eprintln!("skipped: DATABASE_URL is not set (scripts/pg-local.sh start)");
            return;
        }
    };
    let schema = format!("rs_cov_{}", uuid::Uuid::new_v4().simple());
    let pg = Arc::new(
        PgStore::connect_with(
            &url,
            PgStoreConfig {
                max_connections: 4,
                schema: Some(schema.clone()),
                ..PgStoreConfig::default()
            },
        )
        .await
        .unwrap(),
    );
    let store = Store::Postgres(pg.clone());
    let gens = every_change(&store).await;

    // A store written before the counters: migration 0036 run again over these
    // tables (its table, triggers and functions gone first) counts what they hold.
    let triggers: Vec<(String, String)> = sqlx::query_as(
        "SELECT tgname::text, tgrelid::regclass::text FROM pg_trigger
          WHERE tgname LIKE '%\\_vector\\_coverage\\_%' AND tgrelid::regclass::text NOT LIKE '%.%'",
    )
    .fetch_all(pg.pool())
    .await
    .unwrap();
    assert_eq!(triggers.len(), 15, "{triggers:?}");
    for (trigger, table) in &triggers {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP TRIGGER {trigger} ON {table}"
        )))
        .execute(pg.pool())
        .await
        .unwrap();
    }
    sqlx::raw_sql(
        "DROP TABLE vector_coverage; DROP FUNCTION rs_vector_coverage();
         DROP FUNCTION rs_vector_coverage_update(); DROP FUNCTION rs_coverage_upsert(text[]);
         DROP FUNCTION rs_coverage_counted(text, text, integer);",
    )
    .execute(pg.pool())
    .await
    .unwrap();
    sqlx::raw_sql(include_str!(
        "../../rememberstack-pg/migrations/0036_vector_coverage_counts.sql"
    ))
    .execute(pg.pool())
    .await
    .unwrap();
    assert_counted(&store, &gens, "counted by the migration").await;

    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(pg.pool())
    .await
    .unwrap();
    pg.close().await;
}
