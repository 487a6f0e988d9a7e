//! The store a benchmark runs against: the embedded SQLite file, or one schema of a
//! PostgreSQL database.
//!
//! PostgreSQL runs use the schema `--schema` names, which is kept (so a later run can
//! resume or re-read it), or else a fresh schema of their own, dropped when the run
//! ends. The URL comes from `--db` or `DATABASE_URL` and is never printed (it may
//! carry a password).

use crate::StoreArg;
use anyhow::{Context, Result, bail};
use rememberstack::{MemoryStore, PgStore, PgStoreConfig, SqliteStore};
use serde::Serialize;
use serde_json::{Value, json};
use sqlx::AssertSqlSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a run's store lives.
pub enum BenchStore {
    /// The embedded store's file.
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The open store.
        store: Arc<SqliteStore>,
    },
    /// A schema of a PostgreSQL database.
    Postgres {
        /// The open store.
        store: Arc<PgStore>,
        /// The schema holding it.
        schema: String,
        /// Whether the run made the schema and drops it at the end.
        temporary: bool,
        /// The database URL (never printed: it may carry a password).
        url: String,
    },
}

/// How to open a run's store.
pub struct StoreChoice<'a> {
    /// `--store`.
    pub kind: StoreArg,
    /// `--db`: the embedded store's file, or the PostgreSQL URL.
    pub db: Option<&'a str>,
    /// `--schema`: PostgreSQL's kept schema.
    pub schema: Option<&'a str>,
    /// The file used when no `--db` is given (embedded store); its directory also
    /// holds a temporary schema's forget manifests.
    pub default_path: PathBuf,
    /// Names a temporary schema: `rs_bench_<purpose>_<time>`.
    pub purpose: &'a str,
    /// PostgreSQL pool size.
    pub max_connections: u32,
}

/// Whether `s` is a PostgreSQL URL (what the facade's `--db` reads as one).
fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The PostgreSQL URL of a run: `--db` when it is one, else `DATABASE_URL`.
pub fn postgres_url(db: Option<&str>, env: Option<String>) -> Result<String> {
    match db {
        Some(url) if is_postgres_url(url) => Ok(url.to_string()),
        Some(other) => bail!(
            "--store postgres: --db must be a postgres:// URL, not `{other}` (or leave it out \
             and set DATABASE_URL)"
        ),
        None => env.filter(|u| is_postgres_url(u)).context(
            "--store postgres needs --db postgres://… or DATABASE_URL set to a postgres:// URL",
        ),
    }
}

fn fresh_schema(purpose: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("rs_bench_{purpose}_{nanos:x}")
}

impl BenchStore {
    /// Open (creating if needed) the store `choice` names.
    pub async fn open(choice: StoreChoice<'_>) -> Result<Self> {
        match choice.kind {
            StoreArg::Sqlite => {
                if let Some(schema) = choice.schema {
                    bail!("--schema `{schema}` applies to --store postgres only");
                }
                if let Some(url) = choice.db.filter(|d| is_postgres_url(d)) {
                    bail!("--db `{url}` is a PostgreSQL URL: add --store postgres");
                }
                let path = choice.db.map_or(choice.default_path, PathBuf::from);
                let store = Arc::new(SqliteStore::open(&path).await?);
                Ok(BenchStore::Sqlite { path, store })
            }
            StoreArg::Postgres => {
                let url = postgres_url(choice.db, std::env::var("DATABASE_URL").ok())?;
                let (schema, temporary) = match choice.schema {
                    Some(s) => (s.to_string(), false),
                    None => (fresh_schema(choice.purpose), true),
                };
                let manifests = choice
                    .default_path
                    .parent()
                    .map(|d| d.join("manifests"))
                    .filter(|_| temporary);
                let store = PgStore::connect_with(
                    &url,
                    PgStoreConfig {
                        max_connections: choice.max_connections,
                        schema: Some(schema.clone()),
                        manifest_root: manifests,
                        ..PgStoreConfig::default()
                    },
                )
                .await
                .with_context(|| format!("opening PostgreSQL schema `{schema}`"))?;
                Ok(BenchStore::Postgres {
                    store: Arc::new(store),
                    schema,
                    temporary,
                    url,
                })
            }
        }
    }

    /// The store, for `Memory::builder().store(…)`.
    pub fn store(&self) -> Arc<dyn MemoryStore> {
        match self {
            BenchStore::Sqlite { store, .. } => store.clone(),
            BenchStore::Postgres { store, .. } => store.clone(),
        }
    }

    /// How another process of this benchmark opens the same store: its arguments
    /// and environment (the URL goes in `DATABASE_URL`, out of the process list).
    pub fn reopen_args(&self) -> (Vec<String>, Vec<(String, String)>) {
        match self {
            BenchStore::Sqlite { path, .. } => (
                vec![
                    "--store".into(),
                    "sqlite".into(),
                    "--db".into(),
                    path.display().to_string(),
                ],
                vec![],
            ),
            BenchStore::Postgres { schema, url, .. } => (
                vec![
                    "--store".into(),
                    "postgres".into(),
                    "--schema".into(),
                    schema.clone(),
                ],
                vec![("DATABASE_URL".into(), url.clone())],
            ),
        }
    }

    /// Where the store is, for the printed configuration (no URL: it may hold a
    /// password).
    pub fn describe(&self) -> String {
        match self {
            BenchStore::Sqlite { path, .. } => format!("sqlite:{}", path.display()),
            BenchStore::Postgres {
                schema, temporary, ..
            } => format!(
                "postgres (schema {schema}{})",
                if *temporary {
                    ", dropped after the run"
                } else {
                    ", kept"
                }
            ),
        }
    }

    /// Bytes the PostgreSQL schema's tables take, with their indexes and TOAST.
    async fn schema_bytes(store: &PgStore, schema: &str) -> Result<u64> {
        let bytes: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::BIGINT \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'm', 'p')",
        )
        .bind(schema)
        .fetch_one(store.pool())
        .await?;
        Ok(bytes.max(0) as u64)
    }

    /// Close the store and measure what it takes on disk, per claim: the SQLite
    /// file (checkpointed) and its blob directory, or the PostgreSQL schema's
    /// relations (originals included: PostgreSQL keeps them in a table), measured
    /// before [`BenchStore::close`] drops a temporary schema.
    pub async fn close_and_measure(self, claims: u64) -> Result<Value> {
        let per_claim = |n: u64| {
            if claims > 0 {
                n as f64 / claims as f64
            } else {
                0.0
            }
        };
        match &self {
            BenchStore::Sqlite { path, .. } => {
                let path = path.clone();
                let open_sizes = DiskSizes::of(&path);
                self.close().await?;
                checkpoint(&path).await?;
                let closed = DiskSizes::of(&path);
                let tables = sqlite_tables(&path).await?;
                Ok(json!({
                    "tables": tables,
                    "claims": claims,
                    "open": open_sizes,
                    "checkpointed": closed,
                    "bytes_per_claim": per_claim(closed.database()),
                    "bytes_per_claim_with_blobs": per_claim(closed.database() + closed.blob_bytes),
                    "bytes_per_claim_before_checkpoint": per_claim(open_sizes.database()),
                    "note": "database = file + -wal + -shm; checkpointed = after the store closed \
                             and PRAGMA wal_checkpoint(TRUNCATE) on a connection of the bench's own",
                }))
            }
            BenchStore::Postgres { store, schema, .. } => {
                let bytes = Self::schema_bytes(store, schema).await?;
                let tables = pg_tables(store, schema).await?;
                self.close().await?;
                Ok(json!({
                    "tables": tables,
                    "claims": claims,
                    "schema_bytes": bytes,
                    "bytes_per_claim": per_claim(bytes),
                    "bytes_per_claim_with_blobs": per_claim(bytes),
                    "note": "pg_total_relation_size (tables, indexes, TOAST) summed over the \
                             schema's tables; originals are in the content_objects table",
                }))
            }
        }
    }

    /// Close the store, dropping a temporary schema.
    pub async fn close(self) -> Result<()> {
        match self {
            BenchStore::Sqlite { store, .. } => store.close().await,
            BenchStore::Postgres {
                store,
                schema,
                temporary,
                ..
            } => {
                if temporary {
                    drop_schema(&store, &schema).await?;
                }
                store.close().await;
            }
        }
        Ok(())
    }

    /// Close the store after a run that used it and return the run's result: a
    /// temporary schema goes whether the run succeeded or not, and a failed run's
    /// error is the one returned (a failure to close is then only printed).
    pub async fn finish<T>(self, run: Result<T>) -> Result<T> {
        match run {
            Ok(v) => {
                self.close().await?;
                Ok(v)
            }
            Err(e) => {
                if let Err(close) = self.close().await {
                    eprintln!("{close:#}");
                }
                Err(e)
            }
        }
    }

    /// What the bench process's peak memory covers with this store.
    pub fn memory_scope(&self) -> &'static str {
        match self {
            BenchStore::Sqlite { .. } => "this process, which holds the embedded store",
            BenchStore::Postgres { .. } => {
                "this process only: the PostgreSQL server's own memory is not included"
            }
        }
    }

    /// The build record of a kept store (see `scale`): the sidecar file beside the
    /// SQLite database, or a one-row table in the PostgreSQL schema.
    pub async fn read_record(&self) -> Result<Option<String>> {
        match self {
            BenchStore::Sqlite { path, .. } => {
                let p = with_suffix(path, ".scale.json");
                match std::fs::read_to_string(&p) {
                    Ok(s) => Ok(Some(s)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
                }
            }
            BenchStore::Postgres { store, schema, .. } => {
                let table = record_table(store, schema).await?;
                Ok(sqlx::query_scalar(AssertSqlSafe(format!(
                    "SELECT body FROM {table} WHERE id = 1"
                )))
                .fetch_optional(store.pool())
                .await?)
            }
        }
    }

    /// Replace the build record.
    pub async fn write_record(&self, body: &str) -> Result<()> {
        match self {
            BenchStore::Sqlite { path, .. } => {
                let p = with_suffix(path, ".scale.json");
                std::fs::write(&p, body).with_context(|| format!("writing {}", p.display()))
            }
            BenchStore::Postgres { store, schema, .. } => {
                let table = record_table(store, schema).await?;
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO {table} (id, body) VALUES (1, $1) \
                     ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body"
                )))
                .bind(body)
                .execute(store.pool())
                .await?;
                Ok(())
            }
        }
    }

    /// Where the build record is, for messages.
    pub fn record_location(&self) -> String {
        match self {
            BenchStore::Sqlite { path, .. } => {
                with_suffix(path, ".scale.json").display().to_string()
            }
            BenchStore::Postgres { schema, .. } => format!("table {schema}.bench_scale_record"),
        }
    }
}

/// `"schema".bench_scale_record`, created if missing. (Every schema name put into
/// SQL here was checked when the store opened: a lowercase identifier.)
async fn record_table(store: &PgStore, schema: &str) -> Result<String> {
    let table = format!("\"{schema}\".bench_scale_record");
    sqlx::query(AssertSqlSafe(format!(
        "CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, body TEXT NOT NULL)"
    )))
    .execute(store.pool())
    .await?;
    Ok(table)
}

async fn drop_schema(store: &PgStore, schema: &str) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
    )))
    .execute(store.pool())
    .await
    .with_context(|| format!("dropping the run's schema `{schema}`"))?;
    Ok(())
}

fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn dir_size(p: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(p) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Sizes of the embedded store's files.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct DiskSizes {
    /// The database file.
    pub db_bytes: u64,
    /// Its write-ahead log.
    pub wal_bytes: u64,
    /// Its shared-memory index.
    pub shm_bytes: u64,
    /// The blob directory (originals) beside it.
    pub blob_bytes: u64,
}

impl DiskSizes {
    fn of(db: &Path) -> Self {
        DiskSizes {
            db_bytes: file_size(db),
            wal_bytes: file_size(&with_suffix(db, "-wal")),
            shm_bytes: file_size(&with_suffix(db, "-shm")),
            blob_bytes: dir_size(&with_suffix(db, ".blobs")),
        }
    }

    fn database(&self) -> u64 {
        self.db_bytes + self.wal_bytes + self.shm_bytes
    }
}

/// Checkpoint and truncate the write-ahead log on a connection of our own, after
/// the store has closed (the facade exposes no checkpoint; the store's last
/// connection is a read-only one, which cannot checkpoint).
/// One table's share of the store on disk: its rows (`table_bytes`, with
/// PostgreSQL's TOAST) and its indexes (`index_bytes`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TableSize {
    pub table: String,
    pub table_bytes: u64,
    pub index_bytes: u64,
}

/// Every table of the embedded store's (checkpointed) file with its bytes, largest
/// first, from SQLite's `dbstat` (page sizes, so free space inside pages counts):
/// an index counts to its table; FTS5's shadow tables are their own rows.
async fn sqlite_tables(db: &Path) -> Result<Vec<TableSize>> {
    use sqlx::ConnectOptions;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .connect()
        .await?;
    let rows = sqlx::query_as(
        "SELECT COALESCE(m.tbl_name, d.name) AS tbl,
                SUM(CASE WHEN m.type = 'index' THEN 0 ELSE d.pgsize END) AS table_bytes,
                SUM(CASE WHEN m.type = 'index' THEN d.pgsize ELSE 0 END) AS index_bytes
           FROM dbstat d LEFT JOIN sqlite_master m ON m.name = d.name
          GROUP BY 1 ORDER BY SUM(d.pgsize) DESC, 1",
    )
    .fetch_all(&mut conn)
    .await?;
    sqlx::Connection::close(conn).await?;
    Ok(table_sizes(rows))
}

/// (table, row bytes, index bytes) rows as the report's entries.
fn table_sizes(rows: Vec<(String, i64, i64)>) -> Vec<TableSize> {
    rows.into_iter()
        .map(|(table, rows, indexes)| TableSize {
            table,
            table_bytes: rows.max(0) as u64,
            index_bytes: indexes.max(0) as u64,
        })
        .collect()
}

/// Every table of the PostgreSQL schema with its bytes, largest first.
async fn pg_tables(store: &PgStore, schema: &str) -> Result<Vec<TableSize>> {
    let rows = sqlx::query_as(
        "SELECT c.relname AS tbl,
                (pg_total_relation_size(c.oid) - pg_indexes_size(c.oid))::BIGINT AS table_bytes,
                pg_indexes_size(c.oid)::BIGINT AS index_bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'm', 'p')
          ORDER BY pg_total_relation_size(c.oid) DESC, 1",
    )
    .bind(schema)
    .fetch_all(store.pool())
    .await?;
    Ok(table_sizes(rows))
}

async fn checkpoint(db: &Path) -> Result<()> {
    use sqlx::ConnectOptions;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .connect()
        .await?;
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await?;
    sqlx::Connection::close(conn).await?;
    Ok(())
}

/// Helpers for the commands' PostgreSQL tests.
#[cfg(test)]
pub(crate) mod testing {
    /// The schema a run's configuration names (its `db`: `postgres (schema NAME, …)`).
    pub fn schema_of(described: &str) -> &str {
        described
            .strip_prefix("postgres (schema ")
            .and_then(|s| s.split(',').next())
            .unwrap_or_else(|| panic!("not a PostgreSQL store: {described}"))
    }

    /// Whether the database at `url` has schema `schema`.
    pub async fn schema_exists(url: &str, schema: &str) -> bool {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_namespace WHERE nspname = $1")
            .bind(schema)
            .fetch_one(&pool)
            .await
            .unwrap();
        pool.close().await;
        n > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_postgres_url_comes_from_db_or_the_environment() {
        let env = Some("postgres://u@h/d".to_string());
        assert_eq!(
            postgres_url(Some("postgresql://a@b/c"), env.clone()).unwrap(),
            "postgresql://a@b/c"
        );
        assert_eq!(postgres_url(None, env).unwrap(), "postgres://u@h/d");
        let err = postgres_url(Some("/tmp/x.db"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("must be a postgres:// URL"), "{err}");
        let err = postgres_url(None, None).unwrap_err().to_string();
        assert!(err.contains("needs --db postgres://"), "{err}");
        let err = postgres_url(None, Some("mysql://x".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs --db postgres://"), "{err}");
    }

    #[tokio::test]
    async fn a_schema_is_refused_for_the_embedded_store() {
        let dir = tempfile::tempdir().unwrap();
        let err = BenchStore::open(StoreChoice {
            kind: StoreArg::Sqlite,
            db: None,
            schema: Some("kept"),
            default_path: dir.path().join("m.db"),
            purpose: "t",
            max_connections: 2,
        })
        .await
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("applies to --store postgres only"), "{err}");
        assert!(!dir.path().join("m.db").exists());
    }
}
