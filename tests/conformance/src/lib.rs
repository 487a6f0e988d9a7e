//! The cross-store conformance suite's harness. Every behaviour test in
//! `tests/it` runs against each store this crate can build: SQLite always
//! (later PostgreSQL when `DATABASE_URL` is set).

pub mod golden;

use rememberstack::{
    Clock, Config, Embedder, EngineConfig, Memory, MemoryStore, SqliteStore, Timestamp,
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

/// The configuration tests use: defaults with instant retries.
pub fn test_config() -> Config {
    Config {
        engine: EngineConfig {
            backoff_base: Duration::ZERO,
            backoff_max: Duration::ZERO,
            ..EngineConfig::default()
        },
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
