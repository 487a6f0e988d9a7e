//! The cross-store conformance suite's harness. Every behaviour test in
//! `tests/it` runs against each store this crate can build: SQLite always
//! (later PostgreSQL when `DATABASE_URL` is set).

pub mod golden;

use rememberstack::{
    Clock, Config, Embedder, EmbedderConfig, EngineConfig, Memory, MemoryStore, SqliteStore,
    Timestamp,
};
use rememberstack_pg::{PgStore, PgStoreConfig};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A clock tests can move.
#[derive(Debug)]
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// A clock at the current instant.
    pub fn new() -> Arc<Self> {
        Arc::new(ManualClock(Mutex::new(chrono::Utc::now())))
    }
    /// A clock frozen at `t` until moved.
    pub fn at(t: Timestamp) -> Arc<Self> {
        Arc::new(ManualClock(Mutex::new(t)))
    }
    /// Move time forward.
    pub fn advance(&self, d: Duration) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *t += chrono::Duration::from_std(d).unwrap_or_default();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One store under test, with the directory that holds it.
pub struct Harness {
    /// The store's kind.
    pub kind: &'static str,
    /// The directory holding the store (and files tests write).
    pub dir: tempfile::TempDir,
    /// The store.
    pub store: Arc<dyn MemoryStore>,
    /// Where the store's database is, to reach it again.
    pub location: Location,
}

/// Where a harness's database is.
#[derive(Clone, Debug)]
pub enum Location {
    /// The SQLite file.
    Sqlite(std::path::PathBuf),
    /// The PostgreSQL URL and the configuration (schema, manifest root) used.
    Postgres {
        /// `DATABASE_URL`.
        url: String,
        /// The harness's configuration.
        config: PgStoreConfig,
    },
}

impl Harness {
    /// A second, independent store over the same database (as another process
    /// would open it).
    pub async fn open_again(&self) -> Arc<dyn MemoryStore> {
        match &self.location {
            Location::Sqlite(path) => {
                Arc::new(SqliteStore::open(path).await.expect("reopen sqlite"))
            }
            Location::Postgres { url, config } => Arc::new(
                PgStore::connect_with(url, config.clone())
                    .await
                    .expect("reconnect to PostgreSQL"),
            ),
        }
    }

    /// A memory over this store with the default (hashing) embedder and a test configuration.
    pub async fn memory(&self) -> Memory {
        self.memory_with(test_config(), None, None).await
    }

    /// A memory with a custom configuration, embedder or clock.
    pub async fn memory_with(
        &self,
        config: Config,
        embedder: Option<Arc<dyn Embedder>>,
        clock: Option<Arc<dyn Clock>>,
    ) -> Memory {
        let mut b = Memory::builder().store(self.store.clone()).config(config);
        if let Some(e) = embedder {
            b = b.embedder(e);
        }
        if let Some(c) = clock {
            b = b.clock(c);
        }
        b.open().await.expect("open memory")
    }

    /// The first column of every row `sql` returns, as text (cast it in the SQL:
    /// `CAST(x AS TEXT)` reads the same on both stores).
    pub async fn query_texts(&self, sql: &str) -> Vec<String> {
        use sqlx::{Connection, Row};
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match &self.location {
            Location::Sqlite(path) => {
                let mut conn =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                        .await
                        .expect("connect to the SQLite file");
                let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect("query");
                conn.close().await.expect("close");
                rows.iter().map(|r| r.get::<String, _>(0)).collect()
            }
            Location::Postgres { url, config } => {
                let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
                if let Some(schema) = &config.schema {
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "SET search_path = \"{schema}\""
                    )))
                    .execute(&mut conn)
                    .await
                    .expect("search path");
                }
                let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect("query");
                conn.close().await.expect("close");
                rows.iter().map(|r| r.get::<String, _>(0)).collect()
            }
        }
    }

    /// Run `sql` directly against the store's database (tests that damage a row
    /// on purpose). For PostgreSQL it runs in the harness's schema.
    pub async fn execute_sql(&self, sql: &str) {
        use sqlx::Connection;
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match &self.location {
            Location::Sqlite(path) => {
                let mut conn =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                        .await
                        .expect("connect to the SQLite file");
                sqlx::raw_sql(sql)
                    .execute(&mut conn)
                    .await
                    .expect("run SQL");
                conn.close().await.expect("close");
            }
            Location::Postgres { url, config } => {
                let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
                if let Some(schema) = &config.schema {
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "SET search_path = \"{schema}\""
                    )))
                    .execute(&mut conn)
                    .await
                    .expect("search path");
                }
                sqlx::raw_sql(sql)
                    .execute(&mut conn)
                    .await
                    .expect("run SQL");
                conn.close().await.expect("close");
            }
        }
    }

    /// Write a file into the harness directory and return its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> std::path::PathBuf {
        let p = self.dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, contents).expect("write file");
        p
    }
}

impl Drop for Harness {
    /// A PostgreSQL harness drops its schema, so test runs leave nothing behind.
    fn drop(&mut self) {
        let Location::Postgres { url, config } = &self.location else {
            return;
        };
        let Some(schema) = config.schema.clone() else {
            return;
        };
        let url = url.clone();
        // Drop runs on the test's runtime, which cannot block on its own futures:
        // the schema is dropped from a thread (and a connection) of its own.
        let dropped = std::thread::spawn(move || -> Result<(), String> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&url).await?;
                // A session of the test may still hold a lock on the schema's tables
                // (a transaction dropped mid-way is rolled back only when its
                // connection is next used): end those sessions, and give up rather
                // than hang if one comes back.
                sqlx::query(
                    "SELECT pg_terminate_backend(l.pid) FROM pg_locks l
                       JOIN pg_class c ON c.oid = l.relation
                       JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE n.nspname = $1 AND l.pid <> pg_backend_pid()
                      GROUP BY l.pid",
                )
                .bind(&schema)
                .execute(&mut conn)
                .await?;
                sqlx::query("SET lock_timeout = '10s'")
                    .execute(&mut conn)
                    .await?;
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
                )))
                .execute(&mut conn)
                .await?;
                conn.close().await
            })
            .map_err(|e: sqlx::Error| format!("{schema}: {e}"))
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("conformance: a test schema was left behind ({e})"),
            Err(_) => eprintln!("conformance: dropping a test schema panicked"),
        }
    }
}

/// The configuration tests use: defaults with instant retries and the hashing
/// embedder (deterministic vectors, no model to load or download).
pub fn test_config() -> Config {
    Config {
        engine: EngineConfig {
            backoff_base: Duration::ZERO,
            backoff_max: Duration::ZERO,
            ..EngineConfig::default()
        },
        embedder: EmbedderConfig::hashing(),
        ..Config::default()
    }
}

/// Every store available here, fresh: the embedded store always; PostgreSQL when
/// `DATABASE_URL` is set (`scripts/pg-local.sh start` prints one), each harness in
/// a schema of its own with its own forget manifest root.
pub async fn stores() -> Vec<Harness> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store").join("memory.db");
    let store = SqliteStore::open(&path).await.expect("open sqlite store");
    let mut out = vec![Harness {
        kind: "sqlite",
        dir,
        store: Arc::new(store),
        location: Location::Sqlite(path),
    }];
    if let Some(h) = postgres().await {
        out.push(h);
    }
    out
}

/// A fresh PostgreSQL harness when `DATABASE_URL` is set.
pub async fn postgres() -> Option<Harness> {
    let url = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())?;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = PgStoreConfig {
        max_connections: 4,
        schema: Some(format!("rs_conf_{}", uuid::Uuid::new_v4().simple())),
        manifest_root: Some(dir.path().join("manifests")),
        ..PgStoreConfig::default()
    };
    let store = PgStore::connect_with(&url, config.clone())
        .await
        .expect("connect to the PostgreSQL store at DATABASE_URL");
    Some(Harness {
        kind: "postgres",
        dir,
        store: Arc::new(store),
        location: Location::Postgres { url, config },
    })
}

/// A committed generated page (`page`, relative to the repository root) must be
/// `rendered`; with `UPDATE_DOCS` set it is rewritten instead. `regenerate` is the
/// command the failure names.
pub fn check_generated_page(page: &str, rendered: &str, regenerate: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(page);
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, rendered).expect("write the page");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "{page} is not the rendering of what it documents: run `UPDATE_DOCS=1 {regenerate}`"
    );
}
