//! The store's own connection pools: the writer and the readers.
//!
//! `sqlx`'s pool returns a connection by spawning a task that pings it first: on
//! SQLite each ping is one more round trip to the connection's worker thread, so a
//! one-row read cost about 110 µs through the pool against 40 µs on a held
//! connection (measured on the CI-sized machine), and ingest makes dozens of
//! statements per claim. These pools hand connections back synchronously. A
//! statement interrupted by a dropped future is finished or reset by the
//! connection's worker before it runs the next command, and a transaction dropped
//! without commit is rolled back the same way (sqlx's `start_rollback`), so a
//! returned connection is always usable.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt};
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteConnection, SqliteQueryResult, SqliteRow, SqliteStatement,
    SqliteTransactionManager, SqliteTypeInfo,
};
use sqlx::{ConnectOptions, Connection, Either, Execute, Executor};
use sqlx_core::sql_str::SqlStr;
use sqlx_core::transaction::TransactionManager;
use tokio::sync::{Semaphore, SemaphorePermit};

struct Slot {
    conn: SqliteConnection,
    opened: Instant,
}

/// A bounded set of connections opened on demand with one set of options; clones
/// share it.
#[derive(Clone)]
pub(crate) struct Conns {
    inner: Arc<Inner>,
}

struct Inner {
    options: SqliteConnectOptions,
    /// Connections older than this are replaced when next taken.
    lifetime: Option<Duration>,
    /// Open connections on a thread pinned to the pipeline CPU.
    pinned: bool,
    /// Another pool whose idle connection is taken first, if any (see
    /// [`Conns::preferring`]).
    preferred: Option<Conns>,
    permits: Semaphore,
    idle: Mutex<Vec<Slot>>,
    closed: AtomicBool,
}

impl fmt::Debug for Conns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conns")
            .field("available", &self.inner.permits.available_permits())
            .field("closed", &self.inner.closed.load(Ordering::Relaxed))
            .finish()
    }
}

impl Inner {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle, open connection under `permit`, if there is one (never opens one).
    fn take<'a>(&'a self, permit: SemaphorePermit<'a>) -> Option<ConnGuard<'a>> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let slot = self.idle().pop()?;
        Some(ConnGuard {
            slot: Some(slot),
            pool: self,
            _permit: permit,
        })
    }
}

impl Conns {
    /// At most `max` connections; the first is opened now, so a bad path fails here.
    /// With `pinned`, each connection is opened from a thread pinned to the pipeline
    /// CPU ([`rememberstack_core::affinity`]), so its worker thread, which inherits
    /// the opener's CPU mask, runs there too.
    pub(crate) async fn open(
        options: SqliteConnectOptions,
        max: usize,
        lifetime: Option<Duration>,
        pinned: bool,
    ) -> sqlx::Result<Conns> {
        let conns = Conns {
            inner: Arc::new(Inner {
                options,
                lifetime,
                pinned,
                preferred: None,
                permits: Semaphore::new(max.max(1)),
                idle: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        };
        drop(conns.acquire().await?);
        Ok(conns)
    }

    /// These readers, taking `preferred`'s connection instead whenever it is idle.
    ///
    /// SQLite empties a reader's page cache whenever another connection has written
    /// since its last read, so while ingest runs every read re-fetched and re-copied
    /// its index pages and freed the cache first. The writer's own cache stays valid
    /// across its writes: a read it can serve at once is served there.
    pub(crate) fn preferring(mut self, preferred: Conns) -> Conns {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.preferred = Some(preferred);
        }
        self
    }

    /// A connection of this pool, waiting while all are in use.
    pub(crate) async fn acquire(&self) -> sqlx::Result<ConnGuard<'_>> {
        let inner = &*self.inner;
        if let Some(preferred) = &inner.preferred
            && let Ok(permit) = preferred.inner.permits.try_acquire()
            && let Some(guard) = preferred.inner.take(permit)
        {
            return Ok(guard);
        }
        let permit = inner
            .permits
            .acquire()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        if inner.closed.load(Ordering::Acquire) {
            return Err(sqlx::Error::PoolClosed);
        }
        let reused = inner.idle().pop();
        let slot = match reused {
            Some(slot)
                if inner
                    .lifetime
                    .is_none_or(|life| slot.opened.elapsed() < life) =>
            {
                slot
            }
            stale => {
                if let Some(old) = stale {
                    let _ = old.conn.close().await;
                }
                let conn = if inner.pinned {
                    connect_pinned(inner.options.clone()).await?
                } else {
                    inner.options.connect().await?
                };
                Slot {
                    conn,
                    opened: Instant::now(),
                }
            }
        };
        Ok(ConnGuard {
            slot: Some(slot),
            pool: inner,
            _permit: permit,
        })
    }

    /// Whether this pool's connections run on the pipeline CPU.
    pub(crate) fn is_pinned(&self) -> bool {
        self.inner.pinned
    }

    /// Begin a transaction on one of this pool's connections.
    pub(crate) async fn begin(&self) -> sqlx::Result<Tx<'_>> {
        let mut conn = self.acquire().await?;
        SqliteTransactionManager::begin(&mut conn, None).await?;
        Ok(Tx { conn, open: true })
    }

    /// Refuse further use, then close every connection once it is handed back.
    pub(crate) async fn close(&self) {
        let inner = &*self.inner;
        inner.closed.store(true, Ordering::Release);
        inner.permits.close();
        let idle: Vec<Slot> = std::mem::take(&mut *inner.idle());
        for slot in idle {
            let _ = slot.conn.close().await;
        }
    }
}

/// Open a connection from a short-lived thread pinned to the pipeline CPU; sqlx
/// spawns the connection's worker thread from it, and the worker keeps the mask.
async fn connect_pinned(options: SqliteConnectOptions) -> sqlx::Result<SqliteConnection> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("rememberstack-connect".into())
        .spawn(move || {
            rememberstack_core::affinity::pin_to_pipeline_cpu();
            let opened = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(sqlx::Error::Io)
                .and_then(|rt| rt.block_on(options.connect()));
            let _ = tx.send(opened);
        })
        .map_err(sqlx::Error::Io)?;
    rx.await.map_err(|_| sqlx::Error::WorkerCrashed)?
}

/// A connection taken from [`Conns`], handed back when dropped.
pub(crate) struct ConnGuard<'a> {
    slot: Option<Slot>,
    pool: &'a Inner,
    _permit: SemaphorePermit<'a>,
}

impl Deref for ConnGuard<'_> {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        &self
            .slot
            .as_ref()
            .expect("a guard holds its connection")
            .conn
    }
}

impl DerefMut for ConnGuard<'_> {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self
            .slot
            .as_mut()
            .expect("a guard holds its connection")
            .conn
    }
}

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take()
            && !self.pool.closed.load(Ordering::Acquire)
        {
            self.pool.idle().push(slot);
        }
    }
}

/// A transaction on a pooled connection: committed by [`Tx::commit`], rolled back
/// when dropped uncommitted.
pub(crate) struct Tx<'a> {
    conn: ConnGuard<'a>,
    open: bool,
}

impl Tx<'_> {
    pub(crate) async fn commit(mut self) -> sqlx::Result<()> {
        SqliteTransactionManager::commit(&mut self.conn).await?;
        self.open = false;
        Ok(())
    }
}

impl Deref for Tx<'_> {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        &self.conn
    }
}

impl DerefMut for Tx<'_> {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            SqliteTransactionManager::start_rollback(&mut self.conn);
        }
    }
}

/// A statement run on the pool takes a connection for that one statement.
impl<'c> Executor<'c> for &'c Conns {
    type Database = Sqlite;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, sqlx::Result<Either<SqliteQueryResult, SqliteRow>>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Sqlite>,
    {
        stream::once(async move {
            let items: Vec<_> = match self.acquire().await {
                Ok(mut conn) => conn.fetch_many(query).collect().await,
                Err(e) => vec![Err(e)],
            };
            stream::iter(items)
        })
        .flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, sqlx::Result<Option<SqliteRow>>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Sqlite>,
    {
        Box::pin(async move { self.acquire().await?.fetch_optional(query).await })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [SqliteTypeInfo],
    ) -> BoxFuture<'e, sqlx::Result<SqliteStatement>>
    where
        'c: 'e,
    {
        Box::pin(async move { self.acquire().await?.prepare_with(sql, parameters).await })
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, sqlx::Result<sqlx::Describe<Sqlite>>>
    where
        'c: 'e,
    {
        Box::pin(async move { self.acquire().await?.describe(sql).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Row;

    async fn pool(dir: &tempfile::TempDir, max: usize) -> Conns {
        let opts = SqliteConnectOptions::new()
            .filename(dir.path().join("c.db"))
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
        Conns::open(opts, max, None, false).await.unwrap()
    }

    #[tokio::test]
    async fn a_dropped_transaction_is_rolled_back_and_a_committed_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        let c = pool(&dir, 1).await;
        sqlx::query("CREATE TABLE t (v INTEGER)")
            .execute(&c)
            .await
            .unwrap();
        {
            let mut tx = c.begin().await.unwrap();
            sqlx::query("INSERT INTO t VALUES (1)")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        let mut tx = c.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (2)")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let rows = sqlx::query("SELECT v FROM t").fetch_all(&c).await.unwrap();
        let values: Vec<i64> = rows.iter().map(|r| r.get("v")).collect();
        assert_eq!(values, vec![2]);
    }

    #[tokio::test]
    async fn a_connection_is_used_by_one_holder_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let c = pool(&dir, 1).await;
        let held = c.acquire().await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(50), c.acquire()).await;
        assert!(
            waiting.is_err(),
            "a second holder waited for the only connection"
        );
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(5), c.acquire()).await;
        assert!(again.is_ok(), "the handed-back connection is taken again");
    }

    #[tokio::test]
    async fn readers_take_the_preferred_connection_when_it_is_idle_and_never_wait_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let writer = pool(&dir, 1).await;
        let opts = SqliteConnectOptions::new()
            .filename(dir.path().join("c.db"))
            .read_only(true);
        let readers = Conns::open(opts, 2, None, false)
            .await
            .unwrap()
            .preferring(writer.clone());
        // A temporary table exists on the writer's connection only.
        sqlx::query("CREATE TEMP TABLE marker (x INTEGER)")
            .execute(&writer)
            .await
            .unwrap();
        let on_writer = sqlx::query("SELECT COUNT(*) AS n FROM marker")
            .fetch_one(&readers)
            .await;
        assert!(on_writer.is_ok(), "the idle writer served the read");
        // While the writer is held, a read goes to a reader at once.
        let held = writer.acquire().await.unwrap();
        let on_reader = tokio::time::timeout(
            Duration::from_secs(5),
            sqlx::query("SELECT COUNT(*) AS n FROM marker").fetch_one(&readers),
        )
        .await
        .expect("the read did not wait for the writer");
        let err = on_reader.unwrap_err().to_string();
        assert!(err.contains("no such table"), "{err}");
        drop(held);
    }

    /// The CPU lists of this process's threads named `name*` (Linux `/proc`).
    #[cfg(target_os = "linux")]
    fn cpu_lists(name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if !comm.starts_with(name) {
                continue;
            }
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
                out.push(l["Cpus_allowed_list:".len()..].trim().to_string());
            }
        }
        out
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_pinned_pool_runs_its_connection_on_the_pipeline_cpu() {
        let Some(cpu) = rememberstack_core::affinity::pipeline_cpu() else {
            return; // One CPU: nothing to pin.
        };
        let dir = tempfile::tempdir().unwrap();
        let opts = SqliteConnectOptions::new()
            .filename(dir.path().join("p.db"))
            .create_if_missing(true);
        let pinned = Conns::open(opts, 1, None, true).await.unwrap();
        sqlx::query("SELECT 1").execute(&pinned).await.unwrap();
        // Other tests' stores may come and go; ours is open, so one worker at least
        // runs on the pipeline CPU alone.
        let lists = cpu_lists("sqlx-sqlite-wor");
        assert!(
            lists.iter().any(|l| *l == cpu.to_string()),
            "no connection worker pinned to CPU {cpu}: {lists:?}"
        );
        drop(pinned);
    }

    #[tokio::test]
    async fn a_closed_pool_refuses_work() {
        let dir = tempfile::tempdir().unwrap();
        let c = pool(&dir, 2).await;
        c.close().await;
        let err = sqlx::query("SELECT 1").execute(&c).await.unwrap_err();
        assert!(matches!(err, sqlx::Error::PoolClosed), "{err}");
    }
}
