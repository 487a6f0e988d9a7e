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
//!
//! **Write groups.** Every commit of a small transaction writes each page it
//! dirtied to the write-ahead log: processing wrote about 800 KB of log per claim,
//! one page image per index page touched by each of the dozen transactions a claim
//! costs. A task running inside [`Conns::grouped`] (one batch of pipeline work)
//! writes inside one outer transaction on the writer connection instead: each
//! store transaction of the task is a savepoint in it, atomic as before, and the
//! outer transaction commits when the last group ends, when it has been open for
//! [`MAX_GROUP_AGE`], or at once when any task outside a group takes the writer,
//! so a write made outside a group (an ingest, a note) is durable when it returns
//! exactly as before. While the outer transaction is open, reads of a group task
//! run on the writer (they see the group's writes) and reads of other tasks run on
//! the readers (they see what is committed, never a group's uncommitted work). A
//! crash loses only uncommitted pipeline work, whose ledger rows roll back with
//! it: the work runs again.

use std::fmt;
use std::future::Future;
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

/// The longest an outer transaction of write groups stays open before the next
/// group use of the writer commits it (readers and other processes then see it).
pub(crate) const MAX_GROUP_AGE: Duration = Duration::from_millis(250);

tokio::task_local! {
    /// Set while a task runs inside [`Conns::grouped`]: the writer pool's address.
    static IN_GROUP: usize;
}

/// Whether the running task is inside a write group of the pool `inner`.
fn in_group(inner: &Inner) -> bool {
    IN_GROUP
        .try_with(|id| *id == inner as *const Inner as usize)
        .unwrap_or(false)
}

/// The write-group state of a writer pool (one connection).
#[derive(Default)]
struct Group {
    /// Group scopes running now.
    scopes: usize,
    /// When the open outer transaction began, if one is open.
    since: Option<Instant>,
}

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
    /// Write groups (used on a pool of one connection, the writer).
    group: Mutex<Group>,
    /// Mirrors `group.since.is_some()` for a lock-free look by readers.
    outer_open: AtomicBool,
    /// Group commits that failed (their writes rolled back).
    failed: std::sync::atomic::AtomicU64,
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

    fn group(&self) -> std::sync::MutexGuard<'_, Group> {
        self.group.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bring the outer transaction of write groups to what the holder of `conn`
    /// (this pool's connection) needs: open for a group task (committed first when
    /// older than [`MAX_GROUP_AGE`]), committed for any other.
    async fn settle_group(&self, conn: &mut SqliteConnection) -> sqlx::Result<()> {
        let (open, stale, scopes) = {
            let g = self.group();
            (
                g.since.is_some(),
                g.since.is_some_and(|t| t.elapsed() >= MAX_GROUP_AGE),
                g.scopes,
            )
        };
        let grouped = scopes > 0 && in_group(self);
        if open && (!grouped || stale) {
            self.commit_outer(conn).await?;
        }
        if grouped && (!open || stale) {
            SqliteTransactionManager::begin(conn, Some(SqlStr::from_static("BEGIN IMMEDIATE")))
                .await?;
            self.group().since = Some(Instant::now());
            self.outer_open.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Commit the outer transaction on `conn` (rolled back if the commit fails).
    async fn commit_outer(&self, conn: &mut SqliteConnection) -> sqlx::Result<()> {
        self.group().since = None;
        self.outer_open.store(false, Ordering::Release);
        if SqliteTransactionManager::get_transaction_depth(conn) == 0 {
            return Ok(());
        }
        let committed = SqliteTransactionManager::commit(conn).await;
        if committed.is_err() {
            self.failed.fetch_add(1, Ordering::AcqRel);
            if SqliteTransactionManager::get_transaction_depth(conn) > 0 {
                let _ = SqliteTransactionManager::rollback(conn).await;
            }
        }
        committed
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
                group: Mutex::default(),
                outer_open: AtomicBool::new(false),
                failed: std::sync::atomic::AtomicU64::new(0),
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
    ///
    /// On readers that prefer the writer: a group task always reads on the writer
    /// (inside its group's transaction); another task takes the writer only when it
    /// is idle and no group transaction is open on it, except to commit one that no
    /// running group owns any more.
    pub(crate) async fn acquire(&self) -> sqlx::Result<ConnGuard<'_>> {
        let inner = &*self.inner;
        if let Some(preferred) = &inner.preferred {
            if in_group(&preferred.inner) {
                return preferred.acquire_settled().await;
            }
            let orphaned = preferred.inner.outer_open.load(Ordering::Acquire)
                && preferred.inner.group().scopes == 0;
            if (!preferred.inner.outer_open.load(Ordering::Acquire) || orphaned)
                && let Ok(permit) = preferred.inner.permits.try_acquire()
                && let Some(mut guard) = preferred.inner.take(permit)
            {
                preferred.inner.settle_group(&mut guard).await?;
                return Ok(guard);
            }
        }
        if inner.preferred.is_none() {
            return self.acquire_settled().await;
        }
        self.acquire_own().await
    }

    /// A connection of this pool with its write-group transaction settled.
    async fn acquire_settled(&self) -> sqlx::Result<ConnGuard<'_>> {
        let mut guard = self.acquire_own().await?;
        self.inner.settle_group(&mut guard).await?;
        Ok(guard)
    }

    /// A connection of this pool itself, waiting while all are in use.
    async fn acquire_own(&self) -> sqlx::Result<ConnGuard<'_>> {
        let inner = &*self.inner;
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

    /// Run `work` as one write group on this pool (the writer): the writes of
    /// every group task share one outer transaction, committed when the last
    /// running group ends (see the module documentation). A group inside a group is
    /// the outer one. Fails, after `work` ran, if the final commit fails: the
    /// group's writes are then rolled back.
    pub(crate) async fn grouped<T>(&self, work: impl Future<Output = T>) -> sqlx::Result<T> {
        let inner = &*self.inner;
        if in_group(inner) {
            return Ok(work.await);
        }
        inner.group().scopes += 1;
        let scope = ScopeGuard(inner);
        let out = IN_GROUP.scope(inner as *const Inner as usize, work).await;
        drop(scope);
        if inner.group().scopes == 0 && inner.outer_open.load(Ordering::Acquire) {
            // Taken outside the group: committing is what a foreign use does.
            drop(self.acquire().await?);
        }
        Ok(out)
    }

    /// How many group commits failed so far (what was read inside them may have
    /// been rolled back).
    pub(crate) fn epoch(&self) -> u64 {
        self.inner.failed.load(Ordering::Acquire)
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

/// Ends a group scope, also when the group's future is dropped mid-way: work its
/// store calls finished stays in the outer transaction, which the next use of the
/// store commits.
struct ScopeGuard<'a>(&'a Inner);

impl Drop for ScopeGuard<'_> {
    fn drop(&mut self) {
        let mut g = self.0.group();
        g.scopes = g.scopes.saturating_sub(1);
    }
}

/// Open a connection from a short-lived thread pinned to the pipeline CPU; sqlx
/// spawns the connection's worker thread from it, and the worker keeps the mask.
async fn connect_pinned(options: SqliteConnectOptions) -> sqlx::Result<SqliteConnection> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("rememberstack-connect".into())
        .spawn(move || {
            crate::affinity::pin_to_pipeline_cpu();
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
        let Some(cpu) = crate::affinity::pipeline_cpu() else {
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

    /// A writer pool and readers preferring it, over one file with a table `t`.
    async fn writer_and_readers(dir: &tempfile::TempDir) -> (Conns, Conns) {
        let writer = pool(dir, 1).await;
        sqlx::query("CREATE TABLE t (v INTEGER)")
            .execute(&writer)
            .await
            .unwrap();
        let opts = SqliteConnectOptions::new()
            .filename(dir.path().join("c.db"))
            .read_only(true);
        let readers = Conns::open(opts, 2, None, false)
            .await
            .unwrap()
            .preferring(writer.clone());
        (writer, readers)
    }

    async fn values(readers: &Conns) -> Vec<i64> {
        sqlx::query("SELECT v FROM t ORDER BY v")
            .fetch_all(readers)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get("v"))
            .collect()
    }

    async fn insert(c: &Conns, v: i64) {
        let mut tx = c.begin().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (?)")
            .bind(v)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    #[tokio::test]
    async fn a_group_commits_once_at_its_end_and_reads_its_own_writes_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_and_readers(&dir).await;
        let (seen_inside, seen_outside) = writer
            .grouped(async {
                insert(&writer, 1).await;
                insert(&writer, 2).await;
                // The group reads on the writer, inside its transaction; a task
                // outside the group reads what is committed: nothing yet.
                let outside = tokio::spawn({
                    let readers = readers.clone();
                    async move { values(&readers).await }
                })
                .await
                .unwrap();
                (values(&readers).await, outside)
            })
            .await
            .unwrap();
        assert_eq!(seen_inside, vec![1, 2]);
        assert_eq!(seen_outside, Vec::<i64>::new());
        assert!(!writer.inner.outer_open.load(Ordering::Acquire));
        assert_eq!(values(&readers).await, vec![1, 2], "committed at the end");
    }

    #[tokio::test]
    async fn a_write_outside_the_group_commits_the_group_first() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_and_readers(&dir).await;
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let (done, written) = tokio::sync::oneshot::channel::<()>();
        let group = {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .grouped(async {
                        insert(&writer, 1).await;
                        let _ = go.send(());
                        let _ = written.await;
                        insert(&writer, 3).await;
                    })
                    .await
                    .unwrap();
            })
        };
        wait.await.unwrap();
        // A write of another task is durable when it returns, and the group's
        // earlier write was committed before it.
        insert(&writer, 2).await;
        assert_eq!(values(&readers).await, vec![1, 2]);
        let _ = done.send(());
        group.await.unwrap();
        assert_eq!(values(&readers).await, vec![1, 2, 3]);
    }

    #[tokio::test]
    async fn a_failed_transaction_inside_a_group_rolls_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_and_readers(&dir).await;
        writer
            .grouped(async {
                insert(&writer, 1).await;
                {
                    let mut tx = writer.begin().await.unwrap();
                    sqlx::query("INSERT INTO t VALUES (2)")
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                    // Dropped uncommitted: only this savepoint goes.
                }
                insert(&writer, 3).await;
            })
            .await
            .unwrap();
        assert_eq!(values(&readers).await, vec![1, 3]);
    }

    #[tokio::test]
    async fn a_group_dropped_midway_keeps_its_finished_writes_for_the_next_use() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_and_readers(&dir).await;
        let stopped = tokio::time::timeout(
            Duration::from_millis(200),
            writer.grouped(async {
                insert(&writer, 1).await;
                std::future::pending::<()>().await;
            }),
        )
        .await;
        assert!(stopped.is_err(), "the group was dropped mid-way");
        // The next read commits the orphaned transaction and sees the write.
        assert_eq!(values(&readers).await, vec![1]);
        assert!(!writer.inner.outer_open.load(Ordering::Acquire));
    }

    #[tokio::test]
    async fn a_long_group_commits_what_it_wrote_after_the_maximum_age() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_and_readers(&dir).await;
        let seen = writer
            .grouped(async {
                insert(&writer, 1).await;
                tokio::time::sleep(MAX_GROUP_AGE + Duration::from_millis(20)).await;
                insert(&writer, 2).await;
                let readers = readers.clone();
                tokio::spawn(async move { values(&readers).await })
                    .await
                    .unwrap()
            })
            .await
            .unwrap();
        assert_eq!(
            seen,
            vec![1],
            "the first write committed once the group grew old"
        );
        assert_eq!(values(&readers).await, vec![1, 2]);
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
