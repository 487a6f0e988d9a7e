//! The cross-store conformance suite's harness. Every behaviour test in
//! `tests/it` runs against each store this crate can build: SQLite always
//! (later PostgreSQL when `DATABASE_URL` is set).

use rememberstack::{
    Clock, Config, Embedder, EngineConfig, Memory, MemoryStore, SqliteStore, Timestamp,
};
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
}

impl Harness {
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

/// Every store available here, fresh.
pub async fn stores() -> Vec<Harness> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("store").join("memory.db"))
        .await
        .expect("open sqlite store");
    vec![Harness {
        kind: "sqlite",
        dir,
        store: Arc::new(store),
    }]
}
