//! The embedded store's semantic readiness comes from counters its triggers keep
//! (`vector_coverage`); they must always equal a count over the tables, through
//! every way records, current versions and vectors change.

use rememberstack::{Config, FactQuery, IngestOptions, Memory};
use rememberstack_core::store::{MemoryStore, SearchStore, StoreRuntime};
use rememberstack_sqlite::SqliteStore;
use rememberstack_sqlite::coverage::Target;
use std::sync::Arc;

async fn memory_over(store: Arc<SqliteStore>, embedder: rememberstack::EmbedderConfig) -> Memory {
    Memory::builder()
        .store(store as Arc<dyn MemoryStore>)
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
async fn assert_counted(store: &SqliteStore, generations: &[String], step: &str) {
    let ns = store.namespace("cov").await.unwrap().unwrap().id;
    let mut all = generations.to_vec();
    all.push("no-such-generation".into());
    for target in [Target::Chunks, Target::Claims, Target::Facts] {
        for g in &all {
            let counted = match target {
                Target::Chunks => store.vector_coverage(ns, g).await.unwrap(),
                Target::Claims => store.claim_vector_coverage(ns, g).await.unwrap(),
                Target::Facts => store.fact_vector_coverage(ns, g).await.unwrap(),
            };
            let recounted = store.recount_vector_coverage(ns, target, g).await.unwrap();
            assert_eq!(counted, recounted, "{step}: {target:?} under {g}");
        }
    }
}

#[tokio::test]
async fn coverage_counters_follow_every_change_of_records_versions_and_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("m.db")).await.unwrap());
    let memory = memory_over(store.clone(), rememberstack::EmbedderConfig::hashing()).await;
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
    assert_counted(&store, &gens, "ingested").await;
    let ns = store.namespace("cov").await.unwrap().unwrap().id;
    memory.process_until_idle().await.unwrap();
    assert_counted(&store, &gens, "processed").await;
    let processed = store.claim_vector_coverage(ns, &g1).await.unwrap();
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
    assert_counted(&store, &gens, "revised").await;
    memory.process_until_idle().await.unwrap();
    assert_counted(&store, &gens, "revised and processed").await;

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
    assert_counted(&store, &gens, "retracted and invalidated").await;

    // A second generation: another embedder over the same store embeds everything
    // again, and both generations are counted apart.
    let other = memory_over(
        store.clone(),
        rememberstack::EmbedderConfig::Hashing { dimension: 64 },
    )
    .await;
    let g2 = other.embedder_generation();
    assert_ne!(g1, g2);
    let gens = vec![g1.clone(), g2.clone()];
    assert_counted(&store, &gens, "second generation, before embedding").await;
    let before = store.claim_vector_coverage(ns, &g2).await.unwrap();
    assert_eq!(
        before.missing, before.chunks,
        "no claim has a vector of g2 yet"
    );
    other.process_until_idle().await.unwrap();
    assert_counted(&store, &gens, "second generation embedded").await;
    assert_eq!(
        store.claim_vector_coverage(ns, &g2).await.unwrap().missing,
        0
    );

    // A deletion and a hard forget take records (and a forget, vectors) away.
    memory
        .delete_document(receipts[1].document_id)
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    assert_counted(&store, &gens, "deleted").await;
    memory
        .forget_document(receipts[2].document_id)
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    assert_counted(&store, &gens, "forgotten").await;
    let chunks = store.vector_coverage(ns, &g1).await.unwrap();
    assert!(chunks.chunks > 0, "the revised document's chunks remain");

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
