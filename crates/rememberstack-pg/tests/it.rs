//! The PostgreSQL store against a real server. Every test needs `DATABASE_URL`
//! (`scripts/pg-local.sh start` prints one) and is skipped, saying so, without it.
//! Each test works in a schema of its own, dropped at the end, so tests run in
//! parallel and leave nothing behind.

use pgvector::Vector;
use rememberstack_core::ErrorCode;
use rememberstack_core::store::traits::*;
use rememberstack_pg::{PgStore, PgStoreConfig};
use sqlx::{Executor, Row};

fn database_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            eprintln!("{test}: skipped, DATABASE_URL is not set (scripts/pg-local.sh start)");
            None
        }
    }
}

/// A schema name no other test (or run) uses.
fn fresh_schema(tag: &str) -> String {
    format!("rs_it_{tag}_{}", uuid::Uuid::new_v4().simple())
}

fn config(schema: &str) -> PgStoreConfig {
    PgStoreConfig {
        max_connections: 2,
        schema: Some(schema.to_string()),
        ..PgStoreConfig::default()
    }
}

async fn drop_schema(store: &PgStore) {
    let schema = store.schema().expect("tests use a schema");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(store.pool())
    .await
    .expect("drop the test schema");
    store.close().await;
}

#[tokio::test]
async fn pg_migrations_apply_twice() {
    let Some(url) = database_url("pg_migrations_apply_twice") else {
        return;
    };
    let schema = fresh_schema("migrate");
    let first = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    assert_eq!(first.kind(), "postgres");
    first.close().await;
    // A second connect finds the migrations applied and changes nothing.
    let store = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(store.pool())
        .await
        .unwrap();
    // Every migration shipped in the crate, each recorded once.
    let shipped = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
        })
        .count() as i64;
    assert_eq!(applied, shipped);
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
          WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .bind(&schema)
    .fetch_all(store.pool())
    .await
    .unwrap();
    for t in [
        "namespaces",
        "documents",
        "document_versions",
        "chunks",
        "chunk_lexical",
        "vectors",
        "vector_coverage",
        "processing_state",
        "claims",
        "claim_lexical",
        "entities",
        "entity_keys",
        "entity_key_counts",
        "facts",
        "fact_lexical",
        "notes",
        "forget_episodes",
        "forgotten_content",
        "change_stamps",
        "api_keys",
        "ingest_principals",
    ] {
        assert!(
            tables.iter().any(|x| x == t),
            "table {t} missing: {tables:?}"
        );
    }
    // 49 tables mirror the SQLite store, 3 hold full text, 2 their BM25 statistics
    // (migration 0011), 1 is sqlx's ledger.
    assert_eq!(tables.len(), 55, "{tables:?}");
    drop_schema(&store).await;
}

/// Every column that holds an id is in the collation of the ids it names (`C`,
/// migration 0005), so the joins between them can use their indexes: counting a
/// fact's evidence or an entity's mentions looks the id up in an index instead of
/// scanning the table (or the whole namespace's part of an index).
#[tokio::test]
async fn pg_ids_compare_in_one_collation() {
    let Some(url) = database_url("pg_ids_compare_in_one_collation") else {
        return;
    };
    let schema = fresh_schema("collation");
    let store = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let stray: Vec<String> = sqlx::query_scalar(
        "SELECT c.table_name || '.' || c.column_name FROM information_schema.columns c
           JOIN information_schema.tables t USING (table_schema, table_name)
          WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE' AND c.data_type = 'text'
            AND (c.column_name = 'id' OR c.column_name LIKE '%\\_id'
                 OR c.column_name IN ('merged_into', 'superseded_by', 'target_fact', 'result_fact'))
            AND c.column_name <> 'namespace_id' AND c.table_name NOT IN ('namespaces', '_sqlx_migrations')
            AND c.collation_name IS DISTINCT FROM 'C'
          ORDER BY 1",
    )
    .bind(&schema)
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(
        stray.is_empty(),
        "id columns outside collation C: {stray:?}"
    );

    let mut conn = store.pool().acquire().await.unwrap();
    conn.execute("SET enable_seqscan = off").await.unwrap();
    for (column, sql) in [
        (
            "fact_id",
            "EXPLAIN SELECT (SELECT COUNT(*) FROM fact_evidence e
                              WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id)
               FROM facts f WHERE f.namespace_id = 'n' AND f.id = 'x'",
        ),
        (
            "entity_id",
            "EXPLAIN SELECT (SELECT COUNT(*) FROM entity_mentions m
                              WHERE m.namespace_id = e.namespace_id AND m.entity_id = e.id)
               FROM entities e WHERE e.namespace_id = 'n' AND e.id = 'x'",
        ),
    ] {
        let plan: Vec<String> = sqlx::query_scalar(sql).fetch_all(&mut *conn).await.unwrap();
        // The id is looked up in the index, not filtered from the rows of a scan.
        assert!(
            plan.iter()
                .any(|l| l.contains("Index Cond") && l.contains(&format!("{column} = "))),
            "{column} is not an index condition:\n{}",
            plan.join("\n")
        );
    }
    conn.execute("RESET enable_seqscan").await.unwrap();

    // The evidence trigger's recount (a function taking the ids as arguments) reads
    // the fact, its evidence and their claims by index: a comparison that lost its
    // column's collation reads every fact of the store instead, and shows in this
    // transaction's statistics.
    conn.execute(
        "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json,
             valid_precision, valid_kind, asserted_at, extractor_version,
             extraction_input_hash, origin_version_id, origin_chunk_id, embedding_key,
             claim_key, created_at, is_current)
         VALUES ('n', 'c1', 'd1', 'Ada lives in Paris', '{}'::jsonb, 'unknown', 'unknown',
             now(), 'x', 'h', 'v1', 'k1', 'e1', 'ck1', now(), true);
         INSERT INTO facts (namespace_id, id, kind, subject_id, statement, valid_precision,
             validity_kind, recorded_at, embedding_key, updated_at)
         SELECT CASE WHEN i = 0 THEN 'n' ELSE 'other' END, 'f' || i, 'observation', 'ada',
             'Ada lives in Paris', 'unknown', 'unknown', now(), 'e' || i, now()
           FROM generate_series(0, 499) AS i;
         ANALYZE facts",
    )
    .await
    .unwrap();
    conn.execute("BEGIN").await.unwrap();
    conn.execute(
        "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
         VALUES ('n', 'f0', 'c1', 'support', now())",
    )
    .await
    .unwrap();
    let scans: Vec<(String, i64)> = sqlx::query_as(
        "SELECT relname::text, seq_tup_read + idx_tup_fetch FROM pg_stat_xact_user_tables
          WHERE schemaname = current_schema()
            AND relname IN ('facts', 'fact_evidence', 'claims')
            AND seq_tup_read + idx_tup_fetch > 10",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let counted: i64 = sqlx::query_scalar("SELECT evidence_count FROM facts WHERE id = 'f0'")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    conn.execute("COMMIT").await.unwrap();
    assert_eq!(counted, 1);
    assert!(
        scans.is_empty(),
        "the recount read rows it did not need: {scans:?}"
    );
    drop(conn);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_schema_triggers_stamp_and_count() {
    let Some(url) = database_url("pg_schema_triggers_stamp_and_count") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("triggers")))
        .await
        .unwrap();
    let pool = store.pool();
    // Key counts follow entity_keys inserts and deletes.
    sqlx::query(
        "INSERT INTO entity_keys (namespace_id, kind, key, entity_id, alias_lemma) VALUES
         ('n1', 'tri', 'abc', 'e1', 'l'), ('n1', 'tri', 'abc', 'e2', 'l'), ('n1', 'dm', '123', 'e1', 'l')",
    )
    .execute(pool)
    .await
    .unwrap();
    let count = |kind: &'static str, key: &'static str| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT n FROM entity_key_counts WHERE namespace_id = 'n1' AND kind = $1 AND key = $2",
        )
        .bind(kind)
        .bind(key)
        .fetch_one(pool)
        .await
        .unwrap()
    };
    assert_eq!(count("tri", "abc").await, 2);
    assert_eq!(count("dm", "123").await, 1);
    sqlx::query("DELETE FROM entity_keys WHERE entity_id = 'e2'")
        .execute(pool)
        .await
        .unwrap();
    assert_eq!(count("tri", "abc").await, 1);

    // Every write to a stamped table moves its namespace's change stamp.
    let stamp = || async move {
        sqlx::query_scalar::<_, i64>("SELECT n FROM change_stamps WHERE namespace_id = 'n1'")
            .fetch_optional(pool)
            .await
            .unwrap()
    };
    assert_eq!(stamp().await, None);
    sqlx::query(
        "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
             block_start, block_end, start_byte, end_byte, char_start, char_end, text,
             content_hash, token_estimate, embedding_key, event_ids_json)
         VALUES ('n1', 'c1', 'v1', 'd1', 0, 0, 0, 0, 0, 10, 0, 10, 'the runners were running',
             'h', 4, 'k1', '[]'::jsonb)",
    )
    .execute(pool)
    .await
    .unwrap();
    let after_insert = stamp().await.unwrap();
    sqlx::query("UPDATE chunks SET token_estimate = 5 WHERE id = 'c1'")
        .execute(pool)
        .await
        .unwrap();
    let after_update = stamp().await.unwrap();
    assert!(after_update > after_insert);

    // Full text: stemmed with the `english` configuration, keyed by namespace.
    sqlx::query(
        "INSERT INTO chunk_lexical (namespace_id, seq, text)
         SELECT namespace_id, seq, text FROM chunks WHERE id = 'c1'",
    )
    .execute(pool)
    .await
    .unwrap();
    let hits: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM chunk_lexical
          WHERE namespace_id = 'n1' AND tsv @@ to_tsquery('english', 'run')",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(hits, 1);
    // Deleting the chunk removes its lexical row and moves the stamp again.
    sqlx::query("DELETE FROM chunks WHERE id = 'c1'")
        .execute(pool)
        .await
        .unwrap();
    assert!(stamp().await.unwrap() > after_update);
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM chunk_lexical")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_hnsw_cosine_index_works() {
    let Some(url) = database_url("pg_hnsw_cosine_index_works") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("hnsw")))
        .await
        .unwrap();
    // One connection: the temporary table and the planner setting are per session.
    let mut conn = store.pool().acquire().await.unwrap();
    conn.execute("CREATE TEMP TABLE items (id bigint PRIMARY KEY, embedding vector(3) NOT NULL)")
        .await
        .unwrap();
    conn.execute("CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops)")
        .await
        .unwrap();
    let rows: [(i64, [f32; 3]); 5] = [
        (1, [1.0, 0.0, 0.0]),
        (2, [0.9, 0.1, 0.0]),
        (3, [0.0, 1.0, 0.0]),
        (4, [0.0, 0.0, 1.0]),
        (5, [-1.0, 0.0, 0.0]),
    ];
    for (id, v) in rows {
        sqlx::query("INSERT INTO items (id, embedding) VALUES ($1, $2)")
            .bind(id)
            .bind(Vector::from(v.to_vec()))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    conn.execute("SET enable_seqscan = off").await.unwrap();
    let query = Vector::from(vec![1.0_f32, 0.05, 0.0]);
    let plan: Vec<String> =
        sqlx::query_scalar("EXPLAIN SELECT id FROM items ORDER BY embedding <=> $1 LIMIT 3")
            .bind(query.clone())
            .fetch_all(&mut *conn)
            .await
            .unwrap();
    assert!(
        plan.iter().any(|l| l.contains("items_hnsw")),
        "the HNSW index is not used: {plan:?}"
    );
    let nearest = sqlx::query(
        "SELECT id, embedding, embedding <=> $1 AS distance FROM items ORDER BY embedding <=> $1 LIMIT 3",
    )
    .bind(query)
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let ids: Vec<i64> = nearest.iter().map(|r| r.get("id")).collect();
    assert_eq!(ids[..2], [1, 2]);
    assert!(ids[2] == 3 || ids[2] == 4, "{ids:?}");
    let first: Vector = nearest[0].get("embedding");
    assert_eq!(first.to_vec(), vec![1.0, 0.0, 0.0]);
    let distance: f64 = nearest[0].get("distance");
    assert!(distance < 0.01, "{distance}");
    drop(conn);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_vectors_partial_hnsw_index_per_generation() {
    let Some(url) = database_url("pg_vectors_partial_hnsw_index_per_generation") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("gen")))
        .await
        .unwrap();
    let mut conn = store.pool().acquire().await.unwrap();
    // Two generations of different dimensions share the table; each gets its own
    // partial expression index, as the migration describes.
    let rows: [(&str, &str, Vec<f32>); 5] = [
        ("g3", "a", vec![1.0, 0.0, 0.0]),
        ("g3", "b", vec![0.0, 1.0, 0.0]),
        ("g3", "c", vec![0.7, 0.7, 0.0]),
        ("g2", "a", vec![1.0, 0.0]),
        ("g2", "b", vec![0.0, 1.0]),
    ];
    for (generation, key, v) in rows {
        sqlx::query(
            "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, embedding, created_at)
             VALUES ('n1', $1, $2, $3, $4, now())",
        )
        .bind(generation)
        .bind(key)
        .bind(v.len() as i32)
        .bind(Vector::from(v))
        .execute(&mut *conn)
        .await
        .unwrap();
    }
    conn.execute(
        "CREATE INDEX vectors_hnsw_g3 ON vectors
             USING hnsw ((embedding::vector(3)) vector_cosine_ops) WHERE generation = 'g3'",
    )
    .await
    .unwrap();
    conn.execute("SET enable_seqscan = off").await.unwrap();
    let sql = "SELECT embedding_key FROM vectors
                WHERE generation = 'g3' AND namespace_id = 'n1'
                ORDER BY embedding::vector(3) <=> $1::vector(3) LIMIT 2";
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN {sql}")))
        .bind(Vector::from(vec![0.0_f32, 1.0, 0.0]))
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    assert!(
        plan.iter().any(|l| l.contains("vectors_hnsw_g3")),
        "the generation's HNSW index is not used: {plan:?}"
    );
    let keys: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(Vector::from(vec![0.0_f32, 1.0, 0.0]))
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    assert_eq!(keys, ["b", "c"]);
    // The dimension column must agree with the vector.
    let err = sqlx::query(
        "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, embedding, created_at)
         VALUES ('n1', 'g3', 'bad', 3, '[1,2]', now())",
    )
    .execute(&mut *conn)
    .await;
    assert!(err.is_err());
    drop(conn);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_connect_refuses_a_bad_schema_name_before_connecting() {
    // No server needed: the name is checked first.
    let err = PgStore::connect_with(
        "postgres://nobody@127.0.0.1:1/none",
        PgStoreConfig {
            schema: Some("Robert'); DROP TABLE students;--".into()),
            ..PgStoreConfig::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Config);
}

#[tokio::test]
async fn pg_lock_key_excludes_other_processes_until_dropped() {
    let Some(url) = database_url("pg_lock_key_excludes_other_processes_until_dropped") else {
        return;
    };
    let schema = fresh_schema("locks");
    // Two stores stand for two processes: each has its own pools and sessions.
    let a = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let b = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let key = format!("entity:{}:e1", uuid::Uuid::new_v4());
    let held = a
        .lock_key(&key)
        .await
        .unwrap()
        .expect("a cross-process lock");
    let waiting = {
        let b = b.clone();
        let key = key.clone();
        tokio::spawn(async move { b.lock_key(&key).await.unwrap() })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the second process got a held lock");
    // Another key is free meanwhile.
    let other = b.lock_key(&format!("{key}-other")).await.unwrap();
    drop(other);
    drop(held);
    let got = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
        .await
        .expect("the lock is released when its guard drops")
        .unwrap();
    drop(got);
    b.close().await;
    drop_schema(&a).await;
}

#[tokio::test]
async fn pg_lock_keys_takes_a_set_all_or_none_and_never_waits_holding_part_of_it() {
    let Some(url) =
        database_url("pg_lock_keys_takes_a_set_all_or_none_and_never_waits_holding_part_of_it")
    else {
        return;
    };
    let schema = fresh_schema("lockset");
    // Three stores stand for three processes.
    let a = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let b = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let c = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let run = uuid::Uuid::new_v4();
    let (w, x, y) = (
        format!("lemma:{run}:w"),
        format!("lemma:{run}:x"),
        format!("lemma:{run}:y"),
    );
    let held_x = a.lock_key(&x).await.unwrap().expect("a cross-process lock");
    let waiting = {
        let b = b.clone();
        let keys = vec![w.clone(), x.clone(), y.clone()];
        tokio::spawn(async move { b.lock_keys(&keys).await.unwrap() })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the set was taken while one key was held"
    );
    // While it waits for `x`, the set's other keys are free: a holder of `y`
    // that then wants `w` would otherwise wait on it crosswise.
    for free in [&w, &y] {
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), c.lock_key(free))
            .await
            .expect("a key of a waiting set is not held while it waits")
            .unwrap();
        drop(got);
    }
    drop(held_x);
    let set = tokio::time::timeout(std::time::Duration::from_secs(10), waiting)
        .await
        .expect("the set is taken once its last key is free")
        .unwrap()
        .expect("a cross-process lock");
    // Now every key of the set is held.
    for key in [&w, &x, &y] {
        let other = {
            let c = c.clone();
            let key = key.clone();
            tokio::spawn(async move { c.lock_key(&key).await.unwrap() })
        };
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!other.is_finished(), "{key} of a held set was taken");
        other.abort();
    }
    drop(set);
    // And all are released together when the set drops.
    let again = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        a.lock_keys(&[w.clone(), x.clone(), y.clone()]),
    )
    .await
    .expect("a dropped set is released")
    .unwrap();
    drop(again);
    b.close().await;
    c.close().await;
    drop_schema(&a).await;
}

/// A session of its own that holds the store's `namespaces` table exclusively
/// until it is rolled back, so that the store's statements on it wait.
async fn hold_namespaces(url: &str, schema: &str) -> sqlx::PgConnection {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    conn.execute(sqlx::AssertSqlSafe(format!(
        "SET search_path TO \"{schema}\", public"
    )))
    .await
    .unwrap();
    conn.execute("BEGIN").await.unwrap();
    conn.execute("LOCK TABLE namespaces IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    conn
}

#[tokio::test]
async fn pg_statements_are_bounded_in_time_and_fail_typed_and_retryable() {
    let Some(url) = database_url("pg_statements_are_bounded_in_time_and_fail_typed_and_retryable")
    else {
        return;
    };
    let schema = fresh_schema("bounds");
    let now = chrono::Utc::now();
    let bounded = |statement_ms: Option<u64>, lock_ms: Option<u64>| PgStoreConfig {
        statement_timeout: statement_ms.map(std::time::Duration::from_millis),
        lock_timeout: lock_ms.map(std::time::Duration::from_millis),
        ..config(&schema)
    };
    let store = PgStore::connect_with(&url, bounded(Some(5_000), Some(200)))
        .await
        .unwrap();
    store.ensure_namespace("first", now).await.unwrap();
    // Opened before the lock is taken: opening reads the store's tables.
    let by_statement = PgStore::connect_with(&url, bounded(Some(300), None))
        .await
        .unwrap();
    let unbounded = PgStore::connect_with(&url, bounded(None, None))
        .await
        .unwrap();
    let limit = std::time::Duration::from_secs(30);

    // A lock held elsewhere: the wait ends at the lock bound, typed `timeout`.
    let blocker = hold_namespaces(&url, &schema).await;
    let err = tokio::time::timeout(limit, store.ensure_namespace("second", now))
        .await
        .expect("the lock bound ends the wait")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout, "{err}");

    // Without a lock bound, the statement bound ends the same wait.
    let err = tokio::time::timeout(limit, by_statement.ensure_namespace("second", now))
        .await
        .expect("the statement bound ends the wait")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Timeout, "{err}");

    // Unbounded, the same call waits until the lock is released.
    let waiting = {
        let unbounded = unbounded.clone();
        tokio::spawn(async move { unbounded.ensure_namespace("third", now).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    assert!(!waiting.is_finished(), "an unbounded statement gave up");
    sqlx::Connection::close(blocker).await.unwrap();
    tokio::time::timeout(limit, waiting)
        .await
        .expect("the wait ends when the lock is released")
        .unwrap()
        .unwrap();

    // The cancelled calls kept nothing, and the same call succeeds when retried.
    let slugs = |v: Vec<rememberstack_core::store::Namespace>| {
        v.into_iter().map(|n| n.slug).collect::<Vec<_>>()
    };
    let before = slugs(store.namespaces().await.unwrap());
    assert!(!before.contains(&"second".to_string()), "{before:?}");
    store.ensure_namespace("second", now).await.unwrap();
    let after = slugs(store.namespaces().await.unwrap());
    assert!(after.contains(&"second".to_string()), "{after:?}");

    by_statement.close().await;
    unbounded.close().await;
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_searches_read_from_the_read_replica_and_writes_stay_on_the_primary() {
    let Some(url) =
        database_url("pg_searches_read_from_the_read_replica_and_writes_stay_on_the_primary")
    else {
        return;
    };
    use rememberstack_core::store::{ChunkFilter, ClaimFilter};
    let schema = fresh_schema("replica");
    let now = chrono::Utc::now();
    // A replica nobody listens on: every search fails to connect, every write works.
    let store = PgStore::connect_with(
        &url,
        PgStoreConfig {
            read_url: Some("postgres://rememberstack@127.0.0.1:1/nowhere".to_string()),
            acquire_timeout: std::time::Duration::from_secs(2),
            ..config(&schema)
        },
    )
    .await
    .unwrap();
    let ns = store.ensure_namespace("replica", now).await.unwrap().id;
    let terms = vec!["anything".to_string()];
    let chunks = ChunkFilter {
        namespace_id: ns,
        roles: vec![],
        entities: vec![],
        documents: None,
        exact: false,
    };
    let claims = ClaimFilter {
        namespace_id: ns,
        include_retired: false,
        document_id: None,
        entities: vec![],
        documents: None,
    };
    let err = store
        .search_chunks_lexical(&chunks, &terms, 5)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Store, "{err}");
    let err = store
        .search_claims_semantic(&claims, "gen", &[1.0, 0.0, 0.0], 5)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Store, "{err}");
    store.close().await;

    // The same store with the primary as its replica searches as usual.
    let served = PgStore::connect_with(
        &url,
        PgStoreConfig {
            read_url: Some(url.clone()),
            ..config(&schema)
        },
    )
    .await
    .unwrap();
    assert!(
        served
            .search_chunks_lexical(&chunks, &terms, 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        served
            .search_claims_semantic(&claims, "gen", &[1.0, 0.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty()
    );
    drop_schema(&served).await;
}
