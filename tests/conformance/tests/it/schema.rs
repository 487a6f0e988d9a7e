//! One schema for both stores: the tables and columns of a fresh SQLite store and a
//! fresh PostgreSQL store are the same but for the differences listed here, each
//! with its reason. A migration that adds a table or column to one store only
//! fails this test until the other store has it too (or the difference is listed).

use rememberstack_conformance::{Location, postgres, stores};
use sqlx::Row;
use std::collections::BTreeSet;

/// Only PostgreSQL has these: how each dialect keeps the same thing.
const POSTGRES_DIALECT: &[(&str, &str)] = &[
    // The lexical index: tables of `tsvector` rows and BM25 statistics kept by
    // triggers; SQLite keeps one FTS5 virtual table per namespace and channel.
    ("chunk_lexical", "*"),
    ("claim_lexical", "*"),
    ("fact_lexical", "*"),
    ("lexical_terms", "*"),
    ("lexical_totals", "*"),
    // Originals are rows; SQLite keeps them in its blob directory.
    ("content_objects", "bytes"),
    // Insertion order as an identity column; SQLite's is the rowid.
    ("api_keys", "seq"),
    ("cost_ledger", "seq"),
    ("document_entity_bindings", "seq"),
    ("entity_aliases", "seq"),
    ("fact_evidence", "seq"),
    // A pgvector `vector`; SQLite's `vector` is a little-endian f32 blob.
    ("vectors", "embedding"),
];

/// Only SQLite has these.
const SQLITE_ONLY: &[(&str, &str)] = &[
    ("vectors", "vector"),
    // Caches that only the SQLite store keeps on rows, kept by triggers; the
    // PostgreSQL store computes the same values when it reads (its mention counts
    // through an index, and it keeps no blocking keys in process, so it needs no
    // key stamp).
    ("entity_key_stamps", "*"),
    ("entity_mention_counts", "*"),
    // SQLite's recount runs as a trigger on inserts into this table; PostgreSQL's
    // is a function (`rs_fact_recount`).
    ("fact_recounts", "*"),
    // Removals that make the SQLite store's in-process vector sets read a table
    // again; PostgreSQL ranks in the database and keeps no such sets.
    ("record_removals", "*"),
];

fn listed(list: &[(&str, &str)], column: &str) -> bool {
    let (table, name) = column.split_once('.').expect("table.column");
    list.iter()
        .any(|&(t, c)| t == table && (c == "*" || c == name))
}

/// SQLite's own tables (`m` in `sqlite_master`), without SQLite's, sqlx's, and the
/// FTS5 virtual tables with their shadow tables.
const SQLITE_PLAIN_TABLES: &str =
    "m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_sqlx%'
     AND m.sql NOT LIKE 'CREATE VIRTUAL TABLE%'
     AND NOT EXISTS (SELECT 1 FROM sqlite_master v WHERE v.type = 'table'
         AND v.sql LIKE 'CREATE VIRTUAL TABLE%' AND m.name LIKE v.name || '_%')";

async fn sqlite_columns(path: &std::path::Path) -> BTreeSet<String> {
    let url = format!("sqlite://{}?mode=ro", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.expect("open sqlite");
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT m.name AS t, p.name AS c FROM sqlite_master m JOIN pragma_table_info(m.name) p
         WHERE {SQLITE_PLAIN_TABLES}"
    )))
    .fetch_all(&pool)
    .await
    .expect("sqlite catalog");
    pool.close().await;
    rows.iter()
        .map(|r| format!("{}.{}", r.get::<String, _>("t"), r.get::<String, _>("c")))
        .collect()
}

async fn postgres_columns(url: &str, schema: &str) -> BTreeSet<String> {
    let pool = sqlx::PgPool::connect(url).await.expect("connect");
    let rows = sqlx::query(
        "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns
         WHERE table_schema = $1 AND table_name NOT LIKE '\\_sqlx%'",
    )
    .bind(schema)
    .fetch_all(&pool)
    .await
    .expect("postgres catalog");
    pool.close().await;
    rows.iter()
        .map(|r| format!("{}.{}", r.get::<String, _>("t"), r.get::<String, _>("c")))
        .collect()
}

#[tokio::test]
async fn both_stores_have_the_same_tables_and_columns_but_for_the_listed_differences() {
    let Some(pg) = postgres().await else {
        eprintln!("DATABASE_URL is not set: nothing to compare the SQLite schema with");
        return;
    };
    let sqlite = stores().await.remove(0);
    let Location::Sqlite(path) = &sqlite.location else {
        panic!("the first harness is SQLite")
    };
    let Location::Postgres { url, config } = &pg.location else {
        panic!("a PostgreSQL harness")
    };
    let lite = sqlite_columns(path).await;
    let post = postgres_columns(url, config.schema.as_deref().expect("a schema")).await;
    assert!(lite.len() > 300 && post.len() > 300, "{lite:?} {post:?}");

    let only_lite: Vec<&String> = lite
        .difference(&post)
        .filter(|c| !listed(SQLITE_ONLY, c))
        .collect();
    let only_post: Vec<&String> = post
        .difference(&lite)
        .filter(|c| !listed(POSTGRES_DIALECT, c))
        .collect();
    assert!(
        only_lite.is_empty() && only_post.is_empty(),
        "columns in one store only — add them to the other store's migrations:\n\
         SQLite only: {only_lite:?}\nPostgreSQL only: {only_post:?}"
    );
    // Every listed difference is real, so the lists cannot outlive a migration
    // that closes one.
    for (list, here, there) in [
        (SQLITE_ONLY, &lite, &post),
        (POSTGRES_DIALECT, &post, &lite),
    ] {
        for &(table, column) in list {
            let present = |set: &BTreeSet<String>| {
                set.iter().any(|c| {
                    c.split_once('.')
                        .is_some_and(|(t, n)| t == table && (column == "*" || n == column))
                })
            };
            assert!(
                present(here) && !present(there),
                "{table}.{column} is listed as a difference but is not one any more"
            );
        }
    }
}

/// The migrations of one store: number → name (`0023_one_schema_history.sql` →
/// `one_schema_history`).
fn migrations(store: &str) -> std::collections::BTreeMap<i64, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates")
        .join(store)
        .join("migrations");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let name = entry
                .expect("entry")
                .file_name()
                .into_string()
                .expect("utf-8");
            let stem = name.strip_suffix(".sql").expect("a .sql migration");
            let (number, rest) = stem.split_once('_').expect("NNNN_name.sql");
            (
                number.parse().expect("a numbered migration"),
                rest.to_string(),
            )
        })
        .collect()
}

#[test]
fn both_stores_are_at_the_shared_schema_version_and_share_its_history_from_there() {
    let lite = migrations("rememberstack-sqlite");
    let post = migrations("rememberstack-pg");
    let version = rememberstack_sql::SCHEMA_VERSION;
    assert_eq!(
        lite.keys().last(),
        Some(&version),
        "SQLite's latest migration"
    );
    assert_eq!(
        post.keys().last(),
        Some(&version),
        "PostgreSQL's latest migration"
    );
    // From the shared version on, one schema change is one migration in each store,
    // under the same number and name.
    let shared = |m: &std::collections::BTreeMap<i64, String>| -> Vec<(i64, String)> {
        m.range(23..).map(|(n, s)| (*n, s.clone())).collect()
    };
    assert_eq!(shared(&lite), shared(&post));
}

/// Deployment-wide tables: one row set for every namespace (reference tables in a
/// distributed deployment), keyed by their own ids.
const DEPLOYMENT_WIDE: &[&str] = &[
    "namespaces",
    "settings",
    "api_keys",
    "ingest_principals",
    "embedder_generations",
];

/// Every key of every table but the deployment-wide ones begins with
/// `namespace_id`: its primary key, its unique constraints and unique indexes. A
/// distributed PostgreSQL (Citus) can then place each namespace's rows on one node
/// (`create_distributed_table(…, 'namespace_id')`, colocated): a distributed
/// table's keys must contain the distribution column. SQLite's `seq INTEGER
/// PRIMARY KEY` is the rowid, the table's storage order, and is not a key of this
/// kind.
#[tokio::test]
async fn every_key_of_a_namespaced_table_begins_with_the_namespace() {
    let sqlite = stores().await.remove(0);
    let Location::Sqlite(path) = &sqlite.location else {
        panic!("the first harness is SQLite")
    };
    let url = format!("sqlite://{}?mode=ro", path.display());
    let pool = sqlx::SqlitePool::connect(&url).await.expect("open sqlite");
    // (table, key name, its columns in order) for every unique index, and every
    // table's columns.
    let keys: Vec<(String, String, String)> = sqlx::query(
        "SELECT m.name AS t, l.name AS k,
                (SELECT group_concat(name, ',') FROM
                    (SELECT i.name FROM pragma_index_info(l.name) i ORDER BY i.seqno)) AS cols
           FROM sqlite_master m JOIN pragma_index_list(m.name) l
          WHERE m.type = 'table' AND l.\"unique\" = 1
            AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_sqlx%'",
    )
    .fetch_all(&pool)
    .await
    .expect("sqlite keys")
    .iter()
    .map(|r| (r.get("t"), r.get("k"), r.get("cols")))
    .collect();
    let tables: Vec<(String, String)> = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT m.name AS t, (SELECT group_concat(p.name, ',') FROM pragma_table_info(m.name) p
                              WHERE p.pk > 0) AS pk
           FROM sqlite_master m WHERE {SQLITE_PLAIN_TABLES}"
    )))
    .fetch_all(&pool)
    .await
    .expect("sqlite tables")
    .iter()
    .map(|r| {
        (
            r.get("t"),
            r.get::<Option<String>, _>("pk").unwrap_or_default(),
        )
    })
    .collect();
    pool.close().await;
    assert!(tables.len() > 40, "{tables:?}");
    let mut wrong: Vec<String> = Vec::new();
    for (table, pk) in &tables {
        if !DEPLOYMENT_WIDE.contains(&table.as_str())
            && pk != "seq"
            && !pk.is_empty()
            && !pk.starts_with("namespace_id")
        {
            wrong.push(format!("sqlite {table}: primary key ({pk})"));
        }
    }
    for (table, key, cols) in &keys {
        if !DEPLOYMENT_WIDE.contains(&table.as_str()) && !cols.starts_with("namespace_id") {
            wrong.push(format!("sqlite {table}: {key} ({cols})"));
        }
    }

    if let Some(pg) = postgres().await {
        let Location::Postgres { url, config } = &pg.location else {
            panic!("a PostgreSQL harness")
        };
        let pool = sqlx::PgPool::connect(url).await.expect("connect");
        let schema = config.schema.clone().expect("a schema");
        // Primary keys, unique constraints and unique indexes, with their columns.
        let pg_keys: Vec<(String, String, String)> = sqlx::query(
            "SELECT c.relname::text AS t, i.relname::text AS k,
                    (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
                       FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(att, ord)
                       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.att) AS cols
               FROM pg_index x
               JOIN pg_class c ON c.oid = x.indrelid
               JOIN pg_class i ON i.oid = x.indexrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = $1 AND x.indisunique AND c.relname <> '_sqlx_migrations'",
        )
        .bind(&schema)
        .fetch_all(&pool)
        .await
        .expect("postgres keys")
        .iter()
        .map(|r| {
            (
                r.get("t"),
                r.get("k"),
                r.get::<Option<String>, _>("cols").unwrap_or_default(),
            )
        })
        .collect();
        let unkeyed: Vec<String> = sqlx::query_scalar(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> '_sqlx_migrations'
                AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                                   AND a.attname = 'namespace_id' AND NOT a.attisdropped)",
        )
        .bind(&schema)
        .fetch_all(&pool)
        .await
        .expect("postgres tables");
        pool.close().await;
        assert!(pg_keys.len() > 40, "{pg_keys:?}");
        for (table, key, cols) in &pg_keys {
            if !DEPLOYMENT_WIDE.contains(&table.as_str()) && !cols.starts_with("namespace_id") {
                wrong.push(format!("postgres {table}: {key} ({cols})"));
            }
        }
        for table in unkeyed {
            if !DEPLOYMENT_WIDE.contains(&table.as_str()) {
                wrong.push(format!("postgres {table}: no namespace_id column"));
            }
        }
    } else {
        eprintln!("DATABASE_URL is not set: PostgreSQL's keys are not checked");
    }
    assert!(
        wrong.is_empty(),
        "keys that do not begin with the namespace:\n{}",
        wrong.join("\n")
    );
}
