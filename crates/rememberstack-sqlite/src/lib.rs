//! RememberStack's embedded [`MemoryStore`]: one SQLite file (WAL, FTS5 for BM25,
//! an exact cosine scan in Rust) and, beside it, a content-addressed blob
//! directory. Copying the directory that holds both copies the memory.
//!
//! Not for direct use: depend on `rememberstack`, whose `Memory::open` builds this store.
#![forbid(unsafe_code)]
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod affinity;
mod ann;
pub use ann::DEFAULT_APPROXIMATE_FROM;
mod blobs;
mod claims;
mod compact;
mod conns;
mod coverage;
mod disk;
mod entities;
mod facts;
mod forget;
mod keys;
mod lexical;
mod lifecycle;
mod owners;
mod rows;
mod vector_cache;

use async_trait::async_trait;
use blobs::BlobDir;
use conns::Conns;
use rememberstack_core::embed::EmbedderIdentity;
use rememberstack_core::entities::{
    BlockingKey, BlockingQuery, BlockingResult, DocumentBinding, EntityFilter, EntityRecord,
    KeyData, Mention, MergeEvent, ResolutionCommit, ResolutionDecision,
};
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, EvidenceRecord, FactFilter, FactKey, FactRecord,
    PredicateRow,
};
use rememberstack_core::forget::{ForgetManifest, ForgetReport};
use rememberstack_core::ids::*;
use rememberstack_core::keys::ApiKey;
use rememberstack_core::ledger::*;
use rememberstack_core::source::{Admission, VersioningMode};
use rememberstack_core::store::*;
use rememberstack_core::text::{SectionRole, SourceFormat};
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::coverage::Target;
use rememberstack_sql::ledger;
use rememberstack_sql::manifests::ManifestRoot;

/// A statement of `rememberstack_sql` (written once for both stores) as SQLite runs it.
pub(crate) fn shared(statement: &'static rememberstack_sql::Statement) -> &'static str {
    statement.sql(rememberstack_sql::Dialect::Sqlite)
}

/// A list for a shared statement's `{ANY}`: SQLite binds it as one JSON array, so
/// the statement's text never grows with the list and no batching is needed.
pub(crate) fn any_list<T: ToString>(items: &[T]) -> String {
    rememberstack_sql::json_list(items.iter().map(ToString::to_string))
}
use rows::*;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AssertSqlSafe, Row};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The embedded store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Readers.
    read: Conns,
    /// The single writer: SQLite admits one writer at a time, so writes queue here.
    write: Conns,
    blobs: BlobDir,
    /// The forget manifest root, apart from the database (D74).
    manifests: ManifestRoot,
    path: PathBuf,
    /// Work claims since the planner statistics were last refreshed.
    claims_since_optimize: Arc<AtomicU64>,
    /// Decoded vectors, candidate lists and record sets (with their approximate
    /// indexes) of the semantic search.
    vector_cache: Arc<vector_cache::VectorCache>,
    /// Rows matching each lexical term, for the bounded first pass.
    df_cache: Arc<lexical::DfCache>,
    /// Blocking keys read, per namespace, valid while its key stamp stands.
    key_cache: Arc<entities::KeyCache>,
    /// Free disk (bytes) a file rewrite must leave untouched on every disk it uses.
    disk_reserve: Arc<AtomicU64>,
    /// This process's owner lock file: its leases name it, and its end releases
    /// them (see `owners`). `None` where no lock file can be made.
    owner: Option<Arc<owners::OwnerLock>>,
}

/// Lease a stage's due work, oldest first: pending or failed rows whose time has
/// come (not parked for want of a route) and running rows whose lease expired,
/// never in a namespace whose forget is incomplete. Both branches name the
/// `processing_state_due` index's condition (`status <> 'done'`), so they read it
/// rather than every row of the stage. Binds: owner, lease end, owner process,
/// now, stage, now, stage, now, limit.
const CLAIM_DUE: &str = "UPDATE processing_state
     SET status = 'running', attempts = attempts + 1, lease_owner = ?, lease_expires_at = ?,
         lease_process = ?, defer_reason = NULL, updated_at = ?
     WHERE id IN (
         SELECT id FROM (
             SELECT id, not_before, created_at FROM processing_state
             WHERE stage = ? AND status IN ('pending', 'failed') AND status <> 'done'
               AND not_before <= ?
               AND (defer_reason IS NULL OR defer_reason <> 'no_route')
             UNION ALL
             SELECT id, not_before, created_at FROM processing_state
             WHERE stage = ? AND status = 'running' AND status <> 'done'
               AND lease_expires_at <= ?)
         WHERE id NOT IN (SELECT p.id FROM processing_state p
             JOIN forget_episodes e ON e.namespace_id = p.namespace_id
             WHERE e.completed_at IS NULL)
         ORDER BY not_before, created_at, id
         LIMIT ?)
     RETURNING *";

/// Refresh the planner statistics (`PRAGMA optimize`) after this many work claims,
/// or as soon as the ledger runs dry after any. Without statistics, SQLite plans
/// joins over tables that were empty when first seen, and an anchored search can
/// walk every chunk–claim row per mention.
const OPTIMIZE_EVERY_CLAIMS: u64 = 256;

/// The FTS5 tokenizer of every lexical channel (chunks, claims, facts): Porter
/// stemming over `unicode61` with diacritics folded, so `running` finds `run`.
pub(crate) const FTS_TOKENIZER: &str = "'porter unicode61 remove_diacritics 2'";

/// Rebuild, in one transaction, every full-text table created with another
/// tokenizer than [`FTS_TOKENIZER`] (stores made before stemming): its rows are
/// copied into a table with the current tokenizer under the same name.
async fn upgrade_fts_tokenizers(write: &Conns) -> Result<()> {
    let tables: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table'
           AND (name GLOB 'chunk_fts_*' OR name GLOB 'claim_fts_*' OR name GLOB 'fact_fts_*')
           AND sql LIKE '%USING fts5%'",
    )
    .fetch_all(write)
    .await
    .map_err(db_err)?;
    let stale: Vec<String> = tables
        .into_iter()
        .filter(|(_, sql)| !sql.contains(FTS_TOKENIZER))
        .map(|(name, _)| name)
        .collect();
    if stale.is_empty() {
        return Ok(());
    }
    let mut tx = write.begin().await.map_err(db_err)?;
    for name in &stale {
        // Names come from sqlite_master and were built by `ns_table` (hex suffix).
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Error::store(format!(
                "unexpected full-text table name `{name}`"
            )));
        }
        let tmp = format!("{name}_upgrade");
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS {tmp};
             CREATE VIRTUAL TABLE {tmp} USING fts5 (text, tokenize = {FTS_TOKENIZER});
             INSERT INTO {tmp} (rowid, text) SELECT rowid, text FROM {name};
             DROP TABLE {name};
             ALTER TABLE {tmp} RENAME TO {name};"
        )))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    }
    tx.commit().await.map_err(db_err)?;
    tracing::info!(
        tables = stale.len(),
        "full-text tables rebuilt with the stemming tokenizer"
    );
    Ok(())
}

/// How long a reader connection lives before the pool replaces it.
const READER_LIFETIME: Duration = Duration::from_secs(60);

/// A database failure as the core's store error. A lock held past the busy
/// timeout (another process writing: `SQLITE_BUSY`, `SQLITE_LOCKED` and their
/// extended codes) is `timeout`: the statement did nothing, and callers may retry.
fn db_err(e: sqlx::Error) -> Error {
    if let sqlx::Error::Database(db) = &e
        && let Some(code) = db.code().and_then(|c| c.parse::<i32>().ok())
        && matches!(code & 0xff, 5 | 6)
    {
        return Error::timeout(format!(
            "the embedded store stayed locked by another writer past its busy timeout; \
             nothing was done, retry ({})",
            db.message()
        ));
    }
    Error::store(e)
}

impl SqliteStore {
    /// Open (creating if missing) the store at `path`: the SQLite file, and the blob
    /// directory beside it (`<path>.blobs`). Applies migrations, then re-honours
    /// every forget manifest in the manifest root beside it (`<path>.manifests`)
    /// before anything is served.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, None).await
    }

    /// The default manifest root of the store at `path`: `<path>.manifests`.
    pub fn default_manifest_root(path: &Path) -> PathBuf {
        let mut dir = path.to_path_buf().into_os_string();
        dir.push(".manifests");
        PathBuf::from(dir)
    }

    /// [`SqliteStore::open`] with the forget manifest root at `manifest_root`
    /// (default `<path>.manifests`). A root that exists but cannot be read fails
    /// the open: the store must not serve before it has honoured every manifest.
    pub async fn open_with(path: impl AsRef<Path>, manifest_root: Option<PathBuf>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let manifests =
            ManifestRoot::new(manifest_root.unwrap_or_else(|| Self::default_manifest_root(&path)));
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::store(format!("cannot create directory {}: {e}", parent.display()))
            })?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30))
            .foreign_keys(true)
            // Each connection keeps a larger page cache (16 MiB) for the hot indexes.
            .pragma("cache_size", "-16384")
            // Statement and savepoint journals (every store transaction inside a
            // write group is a savepoint) in memory, not a temporary file: each page
            // a savepoint first touches would otherwise be written out once more.
            .pragma("temp_store", "memory")
            // Multi-row statements and IN lists come in many shapes (one per row
            // count): sqlx's default of 100 cached statements made the writer
            // re-prepare them all the time.
            .statement_cache_capacity(1024);
        // Migrations run on a connection of their own: sqlx's migrator takes a
        // pool (on a borrowed connection its future is not provably `Send`).
        let migrating = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts.clone())
            .await
            .map_err(|e| Error::store(format!("cannot open {}: {e}", path.display())))?;
        let migrated = MIGRATOR.run(&migrating).await;
        migrating.close().await;
        migrated.map_err(|e| Error::store(format!("migrating {}: {e}", path.display())))?;
        // One writer; the store's own pools (see `conns`) hand connections back
        // without sqlx's ping, a round trip to SQLite's worker thread per statement.
        // The writer's page cache is larger (64 MiB): every pipeline write walks
        // the indexes of the claims, entities, facts and ledger tables, and a page
        // it misses is a read system call (at 20k claims, 16 MiB made processing
        // about a tenth slower).
        let write = Conns::open(
            opts.clone().pragma("cache_size", "-65536"),
            1,
            None,
            crate::affinity::pipeline_cpu().is_some(),
        )
        .await
        .map_err(|e| Error::store(format!("cannot open {}: {e}", path.display())))?;
        upgrade_fts_tokenizers(&write).await?;
        // Bounded analysis of tables whose statistics are missing or stale.
        sqlx::raw_sql("PRAGMA analysis_limit = 1000; PRAGMA optimize = 0x10002;")
            .execute(&write)
            .await
            .map_err(db_err)?;
        // A connection plans with the statistics it loaded when it opened: readers
        // are replaced every minute, so plans follow the refreshed statistics of a
        // growing store instead of those of its first, tiny tables.
        // Readers read pages through their page cache, not a memory map: every
        // checkpoint that grows the file made each reader unmap and fault its
        // whole map in again (a third of ingest time went to the kernel), and the
        // mapped pages counted twice in resident memory. Measured at 100k claims,
        // reads were no slower without the map.
        let read = Conns::open(opts.read_only(true), 4, Some(READER_LIFETIME), false)
            .await
            .map_err(db_err)?
            .preferring(write.clone());
        let mut blob_dir = path.clone().into_os_string();
        blob_dir.push(".blobs");
        let owner = owners::OwnerLock::acquire(&path).map(Arc::new);
        let store = SqliteStore {
            read,
            write,
            blobs: BlobDir::new(PathBuf::from(blob_dir)),
            manifests,
            path,
            claims_since_optimize: Arc::new(AtomicU64::new(0)),
            vector_cache: Arc::new(vector_cache::VectorCache::approximate_from(
                ann::DEFAULT_APPROXIMATE_FROM,
            )),
            df_cache: Arc::default(),
            key_cache: Arc::default(),
            disk_reserve: Arc::new(AtomicU64::new(disk::DEFAULT_RESERVE)),
            owner,
        };
        store.rehonour_manifests().await?;
        Ok(store)
    }

    /// Count a work claim; refresh the planner statistics when enough work has
    /// landed since the last refresh, or when the ledger ran dry after some.
    async fn maybe_optimize(&self, claimed: usize) -> Result<()> {
        let n = self
            .claims_since_optimize
            .fetch_add(claimed as u64, Ordering::Relaxed)
            + claimed as u64;
        if n >= OPTIMIZE_EVERY_CLAIMS || (claimed == 0 && n > 0) {
            self.claims_since_optimize.store(0, Ordering::Relaxed);
            // While work lands, `optimize` re-analyzes only tables that grew tenfold;
            // when the ledger runs dry, every index is sampled again (bounded by
            // `analysis_limit`), so the statistics describe the store as it is.
            let sql = if claimed == 0 {
                "PRAGMA analysis_limit = 1000; ANALYZE;"
            } else {
                "PRAGMA analysis_limit = 1000; PRAGMA optimize;"
            };
            sqlx::raw_sql(sql)
                .execute(&self.write)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Release the leases of processes that no longer run (their owner lock file
    /// is free or gone): they fall due now, as if their lease had expired, so this
    /// claim takes them (counting the attempt, as an expired lease does) instead
    /// of waiting out the lease time.
    async fn release_ended_owners(&self, tx: &mut sqlx::SqliteConnection, now: i64) -> Result<()> {
        let Some(me) = &self.owner else {
            return Ok(());
        };
        let holders: Vec<(String, i64)> = sqlx::query_as(
            "SELECT lease_process, COUNT(*) FROM processing_state
             WHERE status = 'running' AND lease_process IS NOT NULL AND lease_process <> ?
               AND lease_expires_at > ?
             GROUP BY lease_process",
        )
        .bind(me.token())
        .bind(now)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        for (token, items) in holders {
            if me.liveness(&token) != owners::Liveness::Ended {
                continue;
            }
            sqlx::query(
                "UPDATE processing_state SET lease_expires_at = ?
                 WHERE status = 'running' AND lease_process = ? AND lease_expires_at > ?",
            )
            .bind(now)
            .bind(&token)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tracing::warn!(
                target: "rememberstack::work",
                process = %token,
                items,
                "released the leases of a process that is no longer running"
            );
        }
        Ok(())
    }

    /// Free disk, in bytes, that the rewrite of the database file after a forget
    /// must leave on each disk it writes to (default 64 MiB). When a rewrite would
    /// not leave it, the forget still erases every row and reports the rewrite as
    /// pending (`file_rewrite_pending`).
    pub fn set_disk_reserve(&self, bytes: u64) {
        self.disk_reserve.store(bytes, Ordering::Relaxed);
    }

    /// Semantic search over a namespace's chunks, claims or facts walks an
    /// approximate (HNSW) index once the table has at least `records` records with a
    /// vector; `0` (the default) scans exactly always. Scores stay exact cosines;
    /// the index decides only which records are scored (its recall@10 against the
    /// exact scan is measured by `rememberstack-bench scale`).
    pub fn set_approximate_from(&self, records: usize) {
        self.vector_cache.set_approximate_from(records);
    }

    /// The approximate indexes this process keeps: (namespace id, table, records
    /// in the graph).
    pub async fn vector_indexes(&self) -> Vec<(String, &'static str, usize)> {
        self.vector_cache.indexes().await
    }

    /// Waits until no approximate index is being built or growing (they are built
    /// off the request path; searches scan exactly meanwhile).
    pub async fn wait_for_vector_indexes(&self) {
        while !self.vector_cache.indexes_settled().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) fn disk_reserve(&self) -> u64 {
        self.disk_reserve.load(Ordering::Relaxed)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Close both pools: the readers first, then the writer, which checkpoints the
    /// write-ahead log into the database file, so that the file alone holds the
    /// store once closed.
    pub async fn close(&self) {
        self.read.close().await;
        let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.write)
            .await;
        self.write.close().await;
    }
}

fn ms(t: Timestamp) -> i64 {
    t.timestamp_millis()
}

fn ts(s: &str) -> Result<Timestamp> {
    rememberstack_core::time::parse_rfc3339(s)
        .ok_or_else(|| Error::store(format!("corrupt timestamp `{s}`")))
}

/// Entity anchoring and document scoping of chunk search (alias `c`; binds in the
/// order of [`bind_scope`]). A chunk qualifies when one of its claims mentions an
/// anchored entity and its lineage is one of the scoped documents. Both subqueries
/// are uncorrelated, so SQLite evaluates each once per statement.
const CHUNK_SCOPE: &str = "(? = 0 OR c.id IN (
    SELECT cc.chunk_id FROM entity_mentions m
    JOIN chunk_claims cc ON cc.namespace_id = m.namespace_id AND cc.claim_id = m.claim_id
    WHERE m.namespace_id = ? AND m.entity_id IN (SELECT value FROM json_each(?))))
    AND (? = 0 OR c.document_id IN (SELECT value FROM json_each(?)))";

/// Entity anchoring and document scoping of claim search (alias `c`; binds in the
/// order of [`bind_scope`]).
pub(crate) const CLAIM_SCOPE: &str = "(? = 0 OR c.id IN (
    SELECT m.claim_id FROM entity_mentions m
    WHERE m.namespace_id = ? AND m.entity_id IN (SELECT value FROM json_each(?))))
    AND (? = 0 OR c.document_id IN (SELECT value FROM json_each(?)))";

/// A runtime-checked SQLite query.
pub(crate) type SqlQuery<'q> =
    sqlx::query::Query<'q, sqlx::Sqlite, <sqlx::Sqlite as sqlx::Database>::Arguments>;

/// Bind a [`CHUNK_SCOPE`] or [`CLAIM_SCOPE`] condition: whether the entity anchor
/// applies, the namespace, the anchored ids, whether the document scope applies, and
/// the scoped lineages (an empty scope admits nothing).
pub(crate) fn bind_scope<'q>(
    q: SqlQuery<'q>,
    ns: NamespaceId,
    entities: &[EntityId],
    documents: Option<&[DocumentId]>,
) -> SqlQuery<'q> {
    let json = |ids: Vec<String>| serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    q.bind(i64::from(!entities.is_empty()))
        .bind(ns.to_string())
        .bind(json(entities.iter().map(|e| e.to_string()).collect()))
        .bind(i64::from(documents.is_some()))
        .bind(json(
            documents
                .unwrap_or_default()
                .iter()
                .map(|d| d.to_string())
                .collect(),
        ))
}

fn role_list(roles: &[SectionRole]) -> String {
    // Roles come from a closed enum: their names are safe to inline.
    if roles.is_empty() {
        return "''".to_string();
    }
    roles
        .iter()
        .map(|r| format!("'{}'", r.as_str()))
        .collect::<Vec<_>>()
        .join(",")
}

/// A per-namespace table name: `prefix` followed by the namespace UUID's 32 hex
/// digits. Built from a parsed UUID, so it is always safe to inline in SQL.
fn ns_table(prefix: &str, ns: &str) -> Result<String> {
    let id = uuid::Uuid::parse_str(ns)
        .map_err(|_| Error::store(format!("corrupt namespace id `{ns}`")))?;
    Ok(format!("{prefix}{}", id.simple()))
}

/// The namespace's chunk FTS5 table (`chunk_fts_<uuid>`), rowid = chunks.seq.
pub(crate) fn fts_table(ns: &str) -> Result<String> {
    ns_table("chunk_fts_", ns)
}

/// Quote a plain word as an FTS5 string: the caller's text is never query syntax.
pub(crate) fn fts_query(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

async fn fence(tx: &mut sqlx::SqliteConnection, lease: &Lease, now: Timestamp) -> Result<()> {
    let done = sqlx::query(crate::shared(&rememberstack_sql::ledger::COMPLETE))
        .bind(ms(now))
        .bind(lease.work_id.to_string())
        .bind(&lease.owner)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    if done.rows_affected() == 0 {
        return Err(lease.lost());
    }
    Ok(())
}

async fn insert_work(
    conn: &mut sqlx::SqliteConnection,
    items: &[NewWork],
    now: Timestamp,
) -> Result<u64> {
    insert_rows(
        conn,
        "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id, stage,
             component_version, status, attempts, max_attempts, not_before, defer_reason,
             created_at, updated_at) ",
        crate::shared(&rememberstack_sql::ledger::ENQUEUE_CONFLICT),
        items,
        |mut row, w| {
            row.push_bind(w.namespace_id.to_string())
                .push_bind(WorkId::ordered().to_string())
                .push_bind(w.target_kind.as_str())
                .push_bind(w.target_id.to_string())
                .push_bind(w.version_id.to_string())
                .push_bind(w.stage.as_str())
                .push_bind(&w.component_version)
                .push("'pending'")
                .push("0")
                .push_bind(w.max_attempts as i64)
                .push_bind(ms(w.not_before))
                .push_bind(w.defer_reason.map(|d| d.as_str()))
                .push_bind(ms(now))
                .push_bind(ms(now));
        },
    )
    .await
}

#[async_trait]
impl StoreRuntime for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn tuning(&self) -> StoreTuning {
        fn pin() {
            affinity::pin_to_pipeline_cpu();
        }
        StoreTuning {
            pipeline_thread: self.write.is_pinned().then_some(pin as fn()),
            one_writer_process: true,
            decides_batches: true,
        }
    }

    async fn grouped<'a>(&'a self, work: GroupWork<'a>) -> Result<()> {
        self.write.grouped(work).await.map_err(db_err)
    }

    async fn namespace(&self, slug: &str) -> Result<Option<Namespace>> {
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::namespaces::WITH_OPEN_FORGET,
        ))
        .bind(slug)
        .fetch_optional(&self.read)
        .await
        .map_err(db_err)?;
        if let Some(r) = &row
            && let Some(doc) = r.get::<Option<String>, _>("gated")
        {
            return Err(rememberstack_core::forget::forget_in_progress(slug, &doc));
        }
        row.map(|r| namespace_row(&r)).transpose()
    }

    async fn ensure_namespace(&self, slug: &str, now: Timestamp) -> Result<Namespace> {
        if let Some(ns) = self.namespace(slug).await? {
            return Ok(ns);
        }
        sqlx::query(crate::shared(&rememberstack_sql::namespaces::INSERT))
            .bind(NamespaceId::new().to_string())
            .bind(slug)
            .bind(to_rfc3339(&now))
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        let row = sqlx::query(crate::shared(&rememberstack_sql::namespaces::BY_SLUG))
            .bind(slug)
            .fetch_one(&self.write)
            .await
            .map_err(db_err)?;
        namespace_row(&row)
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::namespaces::LIST))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(namespace_row).collect()
    }

    async fn change_stamp(&self, ns: NamespaceId) -> Result<u64> {
        let n: Option<i64> =
            sqlx::query_scalar(crate::shared(&rememberstack_sql::namespaces::CHANGE_STAMP))
                .bind(ns.to_string())
                .fetch_optional(&self.read)
                .await
                .map_err(db_err)?;
        Ok(n.unwrap_or(0) as u64)
    }

    async fn setting(&self, key: &str) -> Result<Option<String>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::namespaces::SETTING))
            .bind(key)
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?;
        Ok(row.map(|r| r.get("value")))
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query(crate::shared(&rememberstack_sql::namespaces::SET_SETTING))
            .bind(key)
            .bind(value)
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[async_trait]
impl SourceStore for SqliteStore {
    async fn create_version(&self, nv: NewVersion) -> Result<VersionOutcome> {
        let ns = nv.namespace_id.to_string();
        let now = to_rfc3339(&nv.now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let forgotten =
            sqlx::query("SELECT 1 FROM forgotten_content WHERE namespace_id = ? AND sha256 = ?")
                .bind(&ns)
                .bind(&nv.content.sha256)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
        if forgotten.is_some() {
            return Err(Error::new(
                ErrorCode::ForgottenContent,
                format!(
                    "these bytes (sha256 {}) were forgotten in this namespace and can never be ingested again",
                    nv.content.sha256
                ),
            ));
        }
        let existing = sqlx::query(crate::shared(
            &rememberstack_sql::documents::DOCUMENT_WITH_LATEST_DIGEST,
        ))
        .bind(&ns)
        .bind(&nv.source_kind)
        .bind(&nv.source_ref)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let (document_id, ordinal, new_lineage) = match existing {
            Some(row) => {
                let doc_id: DocumentId = parse_id(&row.get::<String, _>("id"))?;
                let mode = VersioningMode::parse(&row.get::<String, _>("mode"))?;
                if let Some(expected) = nv.expected_latest
                    && row.get::<String, _>("latest_version_id") != expected.to_string()
                {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!(
                            "lineage ({}, {}) moved past version {expected} during the request; retry",
                            nv.source_kind, nv.source_ref
                        ),
                    ));
                }
                if let Some(requested) = nv.mode
                    && requested != mode
                {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!(
                            "lineage ({}, {}) is {}; a lineage's versioning mode cannot change to {}",
                            nv.source_kind,
                            nv.source_ref,
                            mode.as_str(),
                            requested.as_str()
                        ),
                    ));
                }
                // Bytes that come back after a deletion are a new version processed
                // afresh (D135): the identical-byte no-op never matches a deleted one.
                let deleted = row.get::<Option<String>, _>("deleted_at").is_some();
                if !deleted
                    && !nv.distinct
                    && row.get::<String, _>("content_sha256") == nv.content.sha256
                {
                    let version_id = parse_id(&row.get::<String, _>("latest_version_id"))?;
                    return Ok(VersionOutcome::Unchanged {
                        document_id: doc_id,
                        version_id,
                    });
                }
                let count: i64 = row.get("version_count");
                sqlx::query(crate::shared(
                    &rememberstack_sql::documents::SET_LATEST_VERSION,
                ))
                .bind(nv.version_id.to_string())
                .bind(&now)
                .bind(&ns)
                .bind(doc_id.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                (doc_id, count + 1, false)
            }
            None => {
                sqlx::query(
                    "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode,
                         current_version_id, latest_version_id, version_count, created_at, updated_at)
                     VALUES (?, ?, ?, ?, ?, NULL, ?, 1, ?, ?)",
                )
                .bind(&ns)
                .bind(nv.document_id.to_string())
                .bind(&nv.source_kind)
                .bind(&nv.source_ref)
                .bind(nv.mode.unwrap_or_default().as_str())
                .bind(nv.version_id.to_string())
                .bind(&now)
                .bind(&now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                (nv.document_id, 1, true)
            }
        };
        sqlx::query(
            "INSERT INTO content_objects (namespace_id, sha256, size, mime, created_at)
             VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace_id, sha256) DO NOTHING",
        )
        .bind(&ns)
        .bind(&nv.content.sha256)
        .bind(nv.content.bytes.len() as i64)
        .bind(&nv.content.mime)
        .bind(&now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let metadata_json =
            serde_json::to_string(&nv.metadata).map_err(|e| Error::internal(e.to_string()))?;
        let principal_id = match &nv.principal {
            None => None,
            Some(p) => {
                sqlx::query(
                    "INSERT INTO ingest_principals (id, namespace_id, kind, external_ref, created_at)
                     VALUES (?, ?, ?, ?, ?)
                     ON CONFLICT (namespace_id, kind, external_ref) DO NOTHING",
                )
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(&ns)
                .bind(p.kind.as_str())
                .bind(&p.external_ref)
                .bind(&now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                let id: String = sqlx::query_scalar(
                    "SELECT id FROM ingest_principals
                      WHERE namespace_id = ? AND kind = ? AND external_ref = ?",
                )
                .bind(&ns)
                .bind(p.kind.as_str())
                .bind(&p.external_ref)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
                Some(id)
            }
        };
        sqlx::query(crate::shared(&rememberstack_sql::documents::INSERT_VERSION))
            .bind(&ns)
            .bind(nv.version_id.to_string())
            .bind(document_id.to_string())
            .bind(ordinal)
            .bind(&nv.content.sha256)
            .bind(nv.content.bytes.len() as i64)
            .bind(&nv.content.mime)
            .bind(nv.format.map(|f| f.as_str()))
            .bind(to_rfc3339(&nv.source_modified_at))
            .bind(nv.origin.as_str())
            .bind(metadata_json)
            .bind(&now)
            .bind(nv.admission.as_str())
            .bind(principal_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if let Some(note) = &nv.note {
            lifecycle::insert_note(
                &mut tx,
                &ns,
                (document_id, nv.version_id),
                note,
                nv.admission,
                &now,
            )
            .await?;
        }
        let mut names: Vec<&str> = Vec::new();
        if let Some(f) = &nv.metadata.file_name {
            names.push(&f.value);
        }
        if let Some(t) = &nv.metadata.title {
            names.push(&t.value);
        }
        for name in names {
            sqlx::query(crate::shared(&rememberstack_sql::documents::INSERT_NAME))
                .bind(&ns)
                .bind(document_id.to_string())
                .bind(name)
                .bind(nv.version_id.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let mut work = nv.work.clone();
        work.target_id = nv.version_id.uuid();
        work.version_id = nv.version_id;
        insert_work(&mut tx, &[work], nv.now).await?;
        // The original goes to the blob directory before the commit: a crash after the
        // write leaves an unreferenced blob, never a version without its bytes.
        self.blobs
            .put(&ns, &nv.content.sha256, &nv.content.bytes)
            .await?;
        tx.commit().await.map_err(db_err)?;
        Ok(VersionOutcome::Created {
            document_id,
            version_id: nv.version_id,
            new_lineage,
        })
    }

    async fn version(&self, ns: NamespaceId, id: VersionId) -> Result<Option<VersionRecord>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::documents::VERSION_BY_ID))
            .bind(ns.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?;
        row.map(|r| version_row(&r)).transpose()
    }

    async fn versions(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<VersionRecord>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::VERSIONS_OF_DOCUMENT,
        ))
        .bind(ns.to_string())
        .bind(doc.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter().map(version_row).collect()
    }

    async fn content(&self, ns: NamespaceId, sha256: &str) -> Result<Vec<u8>> {
        let exists =
            sqlx::query("SELECT 1 FROM content_objects WHERE namespace_id = ? AND sha256 = ?")
                .bind(ns.to_string())
                .bind(sha256)
                .fetch_optional(&self.read)
                .await
                .map_err(db_err)?;
        if exists.is_none() {
            return Err(Error::not_found(format!(
                "content object {sha256} not found"
            )));
        }
        self.blobs.get(&ns.to_string(), sha256).await
    }

    async fn commit_prepared(
        &self,
        lease: &Lease,
        prepared: PreparedVersion,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.write.begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        let (ns,): (String,) =
            sqlx::query_as(crate::shared(&rememberstack_sql::ledger::NAMESPACE_OF_ITEM))
                .bind(lease.work_id.to_string())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
        let vid = prepared.version_id.to_string();
        for table in ["representations", "blocks", "sections"] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE namespace_id = ? AND version_id = ?"
            )))
            .bind(&ns)
            .bind(&vid)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        sqlx::query(crate::shared(
            &rememberstack_sql::documents::INSERT_REPRESENTATION,
        ))
        .bind(&ns)
        .bind(&vid)
        .bind(&prepared.representation.markdown)
        .bind(json(&prepared.representation.turns)?)
        .bind(&prepared.title)
        .bind(&prepared.component_version)
        .bind(to_rfc3339(&now))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        // Each block's kind and turn are encoded first, then inserted in batches.
        let blocks = prepared
            .blocks
            .iter()
            .map(|b| {
                Ok((
                    b,
                    enum_str(&b.kind)?,
                    b.turn.as_ref().map(json).transpose()?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        insert_rows(
            &mut tx,
            "INSERT INTO blocks (namespace_id, version_id, ordinal, kind, level, start_byte, end_byte, hash, turn_json) ",
            "",
            &blocks,
            |mut row, (b, kind, turn)| {
                row.push_bind(&ns)
                    .push_bind(&vid)
                    .push_bind(b.ordinal as i64)
                    .push_bind(kind)
                    .push_bind(b.level.map(|l| l as i64))
                    .push_bind(b.start as i64)
                    .push_bind(b.end as i64)
                    .push_bind(&b.hash)
                    .push_bind(turn);
            },
        )
        .await?;
        for s in &prepared.sections {
            sqlx::query(crate::shared(&rememberstack_sql::documents::INSERT_SECTION))
                .bind(&ns)
                .bind(&vid)
                .bind(s.ordinal as i64)
                .bind(s.block_start as i64)
                .bind(s.block_end as i64)
                .bind(s.level as i64)
                .bind(&s.title)
                .bind(json(&s.path)?)
                .bind(s.role.as_str())
                .bind(s.parent.map(|p| p as i64))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn prepared(&self, ns: NamespaceId, id: VersionId) -> Result<Option<PreparedVersion>> {
        let ns_s = ns.to_string();
        let vid = id.to_string();
        let Some(rep) = sqlx::query(
            // A compacted version keeps only its representation's title.
            "SELECT r.markdown, r.turns_json, r.title, r.component_version FROM representations r
             JOIN document_versions v ON v.namespace_id = r.namespace_id AND v.id = r.version_id
             WHERE r.namespace_id = ? AND r.version_id = ? AND v.compacted_at IS NULL",
        )
        .bind(&ns_s)
        .bind(&vid)
        .fetch_optional(&self.read)
        .await
        .map_err(db_err)?
        else {
            return Ok(None);
        };
        let blocks = sqlx::query(crate::shared(&rememberstack_sql::documents::BLOCKS))
            .bind(&ns_s)
            .bind(&vid)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?
            .iter()
            .map(block_row)
            .collect::<Result<Vec<_>>>()?;
        let sections = sqlx::query(crate::shared(&rememberstack_sql::documents::SECTIONS))
            .bind(&ns_s)
            .bind(&vid)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?
            .iter()
            .map(section_row)
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(PreparedVersion {
            version_id: id,
            representation: rememberstack_core::text::Representation {
                markdown: rep.get("markdown"),
                turns: from_json(&rep.get::<String, _>("turns_json"))?,
            },
            blocks,
            sections,
            title: rep.get("title"),
            component_version: rep.get("component_version"),
        }))
    }

    async fn commit_chunks_carrying(
        &self,
        lease: &Lease,
        version_id: VersionId,
        chunks: Vec<NewChunk>,
        carried: Vec<ExtractionCommit>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.write.begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        let (ns,): (String,) =
            sqlx::query_as(crate::shared(&rememberstack_sql::ledger::NAMESPACE_OF_ITEM))
                .bind(lease.work_id.to_string())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
        let vid = version_id.to_string();
        let row = sqlx::query(crate::shared(&rememberstack_sql::documents::VERSION_PLACE))
            .bind(&ns)
            .bind(&vid)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        let document_id: String = row.get("document_id");
        let ordinal: i64 = row.get("ordinal");
        let fts = fts_table(&ns)?;
        sqlx::query(AssertSqlSafe(format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5 (text, tokenize = {FTS_TOKENIZER})"
        )))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(AssertSqlSafe(format!(
            "DELETE FROM {fts} WHERE rowid IN (SELECT seq FROM chunks WHERE namespace_id = ? AND version_id = ?)"
        )))
        .bind(&ns)
        .bind(&vid)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::documents::DELETE_CHUNKS))
            .bind(&ns)
            .bind(&vid)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        for c in &chunks {
            let p = &c.plan;
            let r = sqlx::query(
                "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
                     block_start, block_end, start_byte, end_byte, char_start, char_end, text, content_hash,
                     token_estimate, embedding_key, event_ids_json)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&ns)
            .bind(c.id.to_string())
            .bind(&vid)
            .bind(&document_id)
            .bind(p.ordinal as i64)
            .bind(p.section_ordinal as i64)
            .bind(p.block_start as i64)
            .bind(p.block_end as i64)
            .bind(p.start as i64)
            .bind(p.end as i64)
            .bind(p.char_start as i64)
            .bind(p.char_end as i64)
            .bind(&p.text)
            .bind(&p.content_hash)
            .bind(p.token_estimate as i64)
            .bind(&c.embedding_key)
            .bind(json(&c.event_ids)?)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query(AssertSqlSafe(format!(
                "INSERT INTO {fts} (rowid, text) VALUES (?, ?)"
            )))
            .bind(r.last_insert_rowid())
            .bind(&p.text)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        // The version becomes current unless a newer version already is.
        sqlx::query(crate::shared(
            &rememberstack_sql::documents::ADVANCE_CURRENT_VERSION,
        ))
        .bind(&vid)
        .bind(to_rfc3339(&now))
        .bind(&ns)
        .bind(&document_id)
        .bind(ordinal)
        .bind(&vid)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if !carried.is_empty() {
            claims::write_carried(&mut tx, &ns, &carried, now).await?;
            sqlx::query(
                "INSERT OR IGNORE INTO currency_due (namespace_id, version_id) VALUES (?, ?)",
            )
            .bind(&ns)
            .bind(&vid)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn document_by_ref(
        &self,
        ns: NamespaceId,
        source_kind: &str,
        source_ref: &str,
    ) -> Result<Option<DocumentRow>> {
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::documents::DOCUMENT_BY_NAME,
        ))
        .bind(ns.to_string())
        .bind(source_kind)
        .bind(source_ref)
        .fetch_optional(&self.read)
        .await
        .map_err(db_err)?;
        row.as_ref().map(document_row).transpose()
    }

    async fn documents(&self, ns: NamespaceId) -> Result<Vec<DocumentRow>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::documents::LIVE_DOCUMENTS))
            .bind(ns.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(document_row).collect()
    }

    async fn document(&self, ns: NamespaceId, doc: DocumentId) -> Result<Option<DocumentRow>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::documents::DOCUMENT_BY_ID))
            .bind(ns.to_string())
            .bind(doc.to_string())
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?;
        row.map(|r| document_row(&r)).transpose()
    }

    async fn document_names(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<String>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::documents::NAMES))
            .bind(ns.to_string())
            .bind(doc.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        Ok(rows.iter().map(|r| r.get("name")).collect())
    }

    async fn compact_conversation(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<u64> {
        self.compact_conversation_impl(ns, doc, now).await
    }

    async fn delete_document(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<DeletionOutcome> {
        self.delete_document_impl(ns, doc, now).await
    }

    async fn note_lookup(
        &self,
        ns: NamespaceId,
        request_id: &str,
        source_key: &str,
        source_revision: &str,
    ) -> Result<NoteLookup> {
        self.note_lookup_impl(ns, request_id, source_key, source_revision)
            .await
    }

    async fn add_note_request(
        &self,
        ns: NamespaceId,
        request_id: &str,
        request_digest: &str,
        version: VersionId,
        now: Timestamp,
    ) -> Result<()> {
        self.add_note_request_impl(ns, request_id, request_digest, version, now)
            .await
    }

    async fn note(&self, ns: NamespaceId, version: VersionId) -> Result<Option<NoteRecord>> {
        self.note_impl(ns, version).await
    }

    async fn transition_note(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        to: Admission,
        now: Timestamp,
    ) -> Result<NoteRecord> {
        self.transition_note_impl(ns, version, expected, to, now)
            .await
    }

    async fn list_notes(&self, ns: NamespaceId, after: i64, limit: u32) -> Result<Vec<NoteRecord>> {
        self.list_notes_impl(ns, after, limit).await
    }

    async fn sections(&self, ns: NamespaceId, version: VersionId) -> Result<Vec<SectionRow>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::SECTIONS_WITH_CHUNK_COUNTS,
        ))
        .bind(ns.to_string())
        .bind(version.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(SectionRow {
                    section: section_row(r)?,
                    chunk_count: r.get::<i64, _>("chunk_count") as u32,
                })
            })
            .collect()
    }

    async fn chunks(&self, ns: NamespaceId, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>> {
        let mut by_id: HashMap<ChunkId, ChunkRecord> = HashMap::new();
        let rows = sqlx::query(shared(&rememberstack_sql::documents::CHUNKS_BY_ID))
            .bind(ns.to_string())
            .bind(any_list(ids))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        for r in rows {
            let rec = chunk_row(&r)?;
            by_id.insert(rec.chunk_id, rec);
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    async fn latest_versions(&self) -> Result<Vec<(NamespaceId, VersionId, Option<SourceFormat>)>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::LATEST_VERSIONS,
        ))
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok((
                    parse_id(&r.get::<String, _>("namespace_id"))?,
                    parse_id(&r.get::<String, _>("latest_version_id"))?,
                    r.get::<Option<String>, _>("format")
                        .and_then(|f| SourceFormat::parse(&f)),
                ))
            })
            .collect()
    }

    async fn version_chunks(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Vec<ChunkRecord>> {
        let rows = sqlx::query(shared(&rememberstack_sql::documents::CHUNKS_OF_VERSION))
            .bind(ns.to_string())
            .bind(version.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(chunk_row).collect()
    }
}

#[async_trait]
impl LedgerStore for SqliteStore {
    async fn enqueue(&self, items: Vec<NewWork>, now: Timestamp) -> Result<u64> {
        if items.is_empty() {
            return Ok(0);
        }
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let n = insert_work(&mut tx, &items, now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(n)
    }

    async fn claim(&self, req: &ClaimRequest) -> Result<Vec<WorkItem>> {
        let now = ms(req.now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        self.release_ended_owners(&mut tx, now).await?;
        // A lease that expired on the final attempt ends in the dead-letter queue.
        sqlx::query(
            "UPDATE processing_state SET status = 'dead_letter', lease_owner = NULL, lease_expires_at = NULL,
                 last_error = 'lease expired during the final attempt (worker crashed or timed out)', updated_at = ?
             WHERE status = 'running' AND lease_expires_at <= ? AND attempts >= max_attempts",
        )
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let stages: Vec<Stage> = if req.stages.is_empty() {
            Stage::ALL.to_vec()
        } else {
            req.stages.clone()
        };
        let mut claimed = Vec::new();
        for stage in stages {
            let rows = sqlx::query(CLAIM_DUE)
                .bind(&req.owner)
                .bind(ms(req.lease_until))
                .bind(self.owner.as_ref().map(|o| o.token()))
                .bind(now)
                .bind(stage.as_str())
                .bind(now)
                .bind(stage.as_str())
                .bind(now)
                .bind(i64::from(req.limit_for(stage)))
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
            if !rows.is_empty() {
                claimed = rows.iter().map(work_row).collect::<Result<Vec<_>>>()?;
                break;
            }
        }
        tx.commit().await.map_err(db_err)?;
        self.maybe_optimize(claimed.len()).await?;
        claimed.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(claimed)
    }

    async fn complete(&self, lease: &Lease, follow_up: Vec<NewWork>, now: Timestamp) -> Result<()> {
        let mut tx = self.write.begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    async fn fail(
        &self,
        lease: &Lease,
        error: &str,
        outcome: FailureOutcome,
        now: Timestamp,
    ) -> Result<()> {
        let (status, not_before, defer) = match outcome {
            FailureOutcome::Retry { retry_at } => {
                ("failed", Some(ms(retry_at)), Some("retry_backoff"))
            }
            FailureOutcome::DeadLetter => ("dead_letter", None, None),
        };
        let error: String = error.chars().take(2000).collect();
        let r = sqlx::query(crate::shared(&ledger::FAIL))
            .bind(status)
            .bind(not_before)
            .bind(defer)
            .bind(error)
            .bind(ms(now))
            .bind(lease.work_id.to_string())
            .bind(&lease.owner)
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        if r.rows_affected() == 0 {
            return Err(Error::new(
                ErrorCode::LeaseLost,
                "work item is no longer leased to this worker",
            ));
        }
        Ok(())
    }

    async fn park(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        let r = sqlx::query(crate::shared(&ledger::PARK))
            .bind(reason.as_str())
            .bind(ms(not_before))
            .bind(ms(now))
            .bind(lease.work_id.to_string())
            .bind(&lease.owner)
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        if r.rows_affected() == 0 {
            return Err(Error::new(
                ErrorCode::LeaseLost,
                "work item is no longer leased to this worker",
            ));
        }
        Ok(())
    }

    async fn work_item(&self, id: WorkId) -> Result<Option<WorkItem>> {
        let row = sqlx::query("SELECT * FROM processing_state WHERE id = ?")
            .bind(id.to_string())
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?;
        row.map(|r| work_row(&r)).transpose()
    }

    async fn barrier(
        &self,
        ns: NamespaceId,
        version: VersionId,
        stage: Stage,
    ) -> Result<BarrierStatus> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS total,
                    COALESCE(SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END), 0) AS done,
                    COALESCE(SUM(CASE WHEN status = 'dead_letter' THEN 1 ELSE 0 END), 0) AS dead
             FROM processing_state WHERE namespace_id = ? AND version_id = ? AND stage = ?",
        )
        .bind(ns.to_string())
        .bind(version.to_string())
        .bind(stage.as_str())
        .fetch_one(&self.read)
        .await
        .map_err(db_err)?;
        Ok(BarrierStatus {
            total: row.get::<i64, _>("total") as u64,
            done: row.get::<i64, _>("done") as u64,
            dead_letter: row.get::<i64, _>("dead") as u64,
        })
    }

    async fn work_counts(&self, ns: Option<NamespaceId>) -> Result<Vec<WorkCount>> {
        let rows = sqlx::query(shared(&ledger::WORK_COUNTS))
            .bind(ns.map(|n| n.to_string()))
            .bind(ns.map(|n| n.to_string()))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(work_count_row).collect()
    }

    async fn unfinished_work_counts(&self, ns: NamespaceId) -> Result<Vec<WorkCount>> {
        let rows = sqlx::query(shared(&ledger::UNFINISHED_WORK_COUNTS))
            .bind(ns.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(work_count_row).collect()
    }

    async fn work_items(
        &self,
        ns: Option<NamespaceId>,
        status: WorkStatus,
        limit: u32,
    ) -> Result<Vec<WorkItem>> {
        let sql = if status == WorkStatus::Done {
            &ledger::FINISHED_WORK
        } else {
            &ledger::UNFINISHED_WORK
        };
        let rows = sqlx::query(shared(sql))
            .bind(ns.map(|n| n.to_string()))
            .bind(ns.map(|n| n.to_string()))
            .bind(status.as_str())
            .bind(limit as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(work_row).collect()
    }

    async fn replay_dead_letters(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        allowance: u32,
        now: Timestamp,
    ) -> Result<u64> {
        let r = sqlx::query(crate::shared(&ledger::REPLAY_DEAD_LETTERS))
            .bind(allowance.max(1) as i64)
            .bind(ms(now))
            .bind(ms(now))
            .bind(ns.map(|n| n.to_string()))
            .bind(ns.map(|n| n.to_string()))
            .bind(stage.map(|s| s.as_str()))
            .bind(stage.map(|s| s.as_str()))
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected())
    }

    async fn expedite_failed(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        now: Timestamp,
    ) -> Result<u64> {
        let r = sqlx::query(crate::shared(&ledger::EXPEDITE_FAILED))
            .bind(ms(now))
            .bind(ms(now))
            .bind(ms(now))
            .bind(ns.map(|n| n.to_string()))
            .bind(ns.map(|n| n.to_string()))
            .bind(stage.map(|s| s.as_str()))
            .bind(stage.map(|s| s.as_str()))
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected())
    }

    async fn rearm_stranded_units(&self, now: Timestamp) -> Result<u64> {
        let r = sqlx::query(crate::shared(&ledger::REARM_STRANDED_UNITS))
            .bind(ms(now))
            .bind(ms(now))
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected())
    }

    async fn next_wakeup(&self) -> Result<Option<Timestamp>> {
        let row = sqlx::query(crate::shared(&ledger::NEXT_WAKEUP))
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
        Ok(row
            .get::<Option<i64>, _>("t")
            .and_then(chrono::DateTime::from_timestamp_millis))
    }

    async fn lease_holders(&self, now: Timestamp) -> Result<Vec<LeaseHolder>> {
        let rows: Vec<(Option<String>, Option<String>, i64, i64)> = sqlx::query_as(
            "SELECT lease_process, MIN(lease_owner), COUNT(*), MAX(lease_expires_at)
             FROM processing_state WHERE status = 'running' AND lease_expires_at > ?
             GROUP BY COALESCE(lease_process, lease_owner) ORDER BY 1, 2",
        )
        .bind(ms(now))
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(process, owner, items, until)| LeaseHolder {
                // A token starts with the process id (see `owners`).
                holder: match process.as_deref().and_then(|t| t.split('-').next()) {
                    Some(pid) => format!("process {pid}"),
                    None => owner.unwrap_or_default(),
                },
                items: items.max(0) as u64,
                until: chrono::DateTime::from_timestamp_millis(until).unwrap_or(now),
            })
            .collect())
    }

    async fn currency_due(&self) -> Result<Vec<(NamespaceId, VersionId)>> {
        let rows: Vec<(String, String)> =
            sqlx::query_as(crate::shared(&rememberstack_sql::claims::CURRENCY_DUE))
                .fetch_all(&self.read)
                .await
                .map_err(db_err)?;
        rows.iter()
            .map(|(ns, v)| Ok((parse_id(ns)?, parse_id(v)?)))
            .collect()
    }

    async fn clear_currency_due(&self, ns: NamespaceId, version: VersionId) -> Result<()> {
        sqlx::query(crate::shared(&rememberstack_sql::claims::CURRENCY_DONE))
            .bind(ns.to_string())
            .bind(version.to_string())
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn record_call(&self, call: CallRecord, now: Timestamp) -> Result<()> {
        self.record_call_impl(call, now).await
    }

    async fn call_costs(&self, ns: NamespaceId) -> Result<Vec<(String, String, u64, u64)>> {
        self.call_costs_impl(ns).await
    }

    async fn complete_many(&self, leases: &[Lease], now: Timestamp) -> Result<Vec<Result<()>>> {
        self.complete_many_impl(leases, now).await
    }

    async fn defer(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        // Fenced like a completion, then back to pending: the attempt the claim
        // counted is given back (never below zero), and the row waits like any other
        // pending row with a future `not_before` (`claim` and `next_wakeup` see it).
        let mut tx = self.write.begin().await.map_err(db_err)?;
        fence(&mut tx, lease, now).await?;
        sqlx::query(crate::shared(&ledger::DEFER))
            .bind(ms(not_before))
            .bind(reason.as_str())
            .bind(ms(now))
            .bind(lease.work_id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl SearchStore for SqliteStore {
    async fn existing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<String>> {
        sqlx::query_scalar(shared(&rememberstack_sql::documents::EXISTING_VECTORS))
            .bind(ns.to_string())
            .bind(generation)
            .bind(any_list(keys))
            .fetch_all(&self.read)
            .await
            .map_err(db_err)
    }

    async fn commit_vectors(
        &self,
        leases: &[Lease],
        ns: NamespaceId,
        generation: &EmbedderIdentity,
        vectors: Vec<(String, Vec<f32>)>,
        now: Timestamp,
    ) -> Result<()> {
        check_vectors(generation, &vectors)?;
        let mut tx = self.write.begin().await.map_err(db_err)?;
        // Every lease fenced in one statement per owner; one lost lease loses the
        // batch (the transaction rolls back, as the first failed fence did).
        let held =
            crate::facts::fence_many(&mut tx, &leases.iter().collect::<Vec<_>>(), now).await?;
        if let Some(lost) = leases
            .iter()
            .find(|l| !held.contains_key(&l.work_id.to_string()))
        {
            return Err(lost.lost());
        }
        let gen_key = generation.generation();
        sqlx::query(crate::shared(
            &rememberstack_sql::namespaces::INSERT_EMBEDDER_GENERATION,
        ))
        .bind(&gen_key)
        .bind(&generation.provider)
        .bind(&generation.model)
        .bind(generation.dimension as i64)
        .bind(&generation.version)
        .bind(to_rfc3339(&now))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let (ns_s, at) = (ns.to_string(), to_rfc3339(&now));
        insert_rows(
            &mut tx,
            "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, vector, created_at) ",
            " ON CONFLICT DO NOTHING",
            &vectors,
            |mut row, (key, v)| {
                row.push_bind(&ns_s)
                    .push_bind(&gen_key)
                    .push_bind(key)
                    .push_bind(v.len() as i64)
                    .push_bind(encode_vector(v))
                    .push_bind(&at);
            },
        )
        .await?;
        tx.commit().await.map_err(db_err)
    }

    async fn vector_coverage(&self, ns: NamespaceId, generation: &str) -> Result<VectorCoverage> {
        self.counted_coverage(ns, Target::Chunks, generation).await
    }

    async fn chunks_missing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<ChunkRef>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::CHUNKS_MISSING_VECTORS,
        ))
        .bind(generation)
        .bind(ns.to_string())
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(ChunkRef {
                    chunk_id: parse_id(&r.get::<String, _>("id"))?,
                    version_id: parse_id(&r.get::<String, _>("version_id"))?,
                })
            })
            .collect()
    }

    async fn search_chunks_lexical(
        &self,
        filter: &ChunkFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        if terms.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        // Eligibility (namespace, current version, role) is part of the statement, so
        // it applies before ORDER BY … LIMIT.
        let fts = fts_table(&filter.namespace_id.to_string())?;
        if !self.table_exists(&fts).await? {
            return Ok(vec![]);
        }
        if filter.entities.is_empty() && filter.documents.is_none() {
            let ns_s = filter.namespace_id.to_string();
            let sql = format!(
                "SELECT c.seq AS seq, c.id AS id FROM chunks c
                 JOIN documents d ON d.namespace_id = c.namespace_id
                                 AND d.current_version_id = c.version_id
                 JOIN sections s ON s.namespace_id = c.namespace_id AND s.version_id = c.version_id
                                AND s.ordinal = c.section_ordinal
                 WHERE c.seq IN (SELECT value FROM json_each(?)) AND c.namespace_id = ?
                   AND s.role IN ({roles})",
                roles = role_list(&filter.roles)
            );
            return self
                .two_phase_lexical(filter.namespace_id, &fts, terms, limit, |list| {
                    sqlx::query(AssertSqlSafe(sql.clone()))
                        .bind(list)
                        .bind(ns_s.clone())
                })
                .await?
                .into_iter()
                .map(|(id, score)| {
                    Ok(ChunkHit {
                        chunk_id: parse_id(&id)?,
                        score,
                    })
                })
                .collect();
        }
        let sql = format!(
            "SELECT c.id, bm25({fts}) AS rank FROM {fts}
             JOIN chunks c ON c.seq = {fts}.rowid
             JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
             JOIN sections s ON s.namespace_id = c.namespace_id AND s.version_id = c.version_id
                            AND s.ordinal = c.section_ordinal
             WHERE {fts} MATCH ? AND c.namespace_id = ? AND s.role IN ({roles}) AND {CHUNK_SCOPE}
             ORDER BY rank, c.id LIMIT ?",
            roles = role_list(&filter.roles)
        );
        let q = sqlx::query(AssertSqlSafe(sql))
            .bind(fts_query(terms))
            .bind(filter.namespace_id.to_string());
        let rows = bind_scope(
            q,
            filter.namespace_id,
            &filter.entities,
            filter.documents.as_deref(),
        )
        .bind(limit as i64)
        .fetch_all(&self.read)
        .await
        .map_err(db_err)?;
        Ok(bm25_hits(&rows)?
            .into_iter()
            .map(|(chunk_id, score)| ChunkHit { chunk_id, score })
            .collect())
    }

    async fn search_chunks_semantic(
        &self,
        filter: &ChunkFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let sql = |vectors: &str| {
            format!(
                "SELECT c.id, c.embedding_key FROM chunks c
                 JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
                 JOIN sections s ON s.namespace_id = c.namespace_id AND s.version_id = c.version_id
                                AND s.ordinal = c.section_ordinal
                 {vectors}
                 WHERE c.namespace_id = ? AND s.role IN ({}) AND {CHUNK_SCOPE}",
                role_list(&filter.roles)
            )
        };
        let ns_s = filter.namespace_id.to_string();
        let stamp = self.change_stamp(filter.namespace_id).await?;
        let statement = vector_cache::Eligibility {
            table: "chunks",
            id_column: "c.id",
            key: format!(
                "chunks|{:?}|{:?}|{:?}",
                filter.roles, filter.entities, filter.documents
            ),
            scoped: !filter.entities.is_empty() || filter.documents.is_some(),
            exact: filter.exact,
            sql: sql(&vector_cache::vectors_join("c")),
            check: sql(vector_cache::VECTOR_IMPLIED),
            bind: vector_cache::binder(|q| {
                bind_scope(
                    q.bind(generation).bind(ns_s.as_str()),
                    filter.namespace_id,
                    &filter.entities,
                    filter.documents.as_deref(),
                )
            }),
        };
        Ok(self
            .vector_cache
            .search(
                &self.read, &ns_s, generation, stamp, statement, query, limit,
            )
            .await?
            .into_iter()
            .map(|(chunk_id, score)| ChunkHit { chunk_id, score })
            .collect())
    }

    async fn search_claims_lexical(
        &self,
        filter: &ClaimFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        self.search_claims_lexical_impl(filter, terms, limit).await
    }

    async fn search_claims_semantic(
        &self,
        filter: &ClaimFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ClaimHit>> {
        self.search_claims_semantic_impl(filter, generation, query, limit)
            .await
    }

    async fn claim_vector_coverage(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<VectorCoverage> {
        self.counted_coverage(ns, Target::Claims, generation).await
    }

    async fn claims_missing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<(ClaimId, VersionId)>> {
        self.claims_missing_vectors_impl(ns, generation).await
    }

    async fn search_facts_lexical(
        &self,
        filter: &FactFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        self.search_facts_lexical_impl(filter, terms, limit).await
    }

    async fn search_facts_semantic(
        &self,
        filter: &FactFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<(FactId, f64)>> {
        self.search_facts_semantic_impl(filter, generation, query, limit)
            .await
    }

    async fn vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<(String, Vec<f32>)>> {
        self.vectors_impl(ns, generation, keys).await
    }

    async fn fact_vector_coverage(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<VectorCoverage> {
        self.counted_coverage(ns, Target::Facts, generation).await
    }
}

#[async_trait]
impl ClaimStore for SqliteStore {
    async fn retract_claim(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        reason: &str,
        request: Option<&RequestKey>,
        now: Timestamp,
    ) -> Result<ClaimRetraction> {
        self.retract_claim_impl(ns, claim, reason, request, now)
            .await
    }

    async fn commit_extractions(
        &self,
        ns: NamespaceId,
        extractions: Vec<(Lease, ExtractionCommit, Vec<NewWork>)>,
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        self.commit_extractions_impl(ns, extractions, now).await
    }

    async fn prior_extractions(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        input_hashes: &[String],
    ) -> Result<Vec<(String, PriorExtraction)>> {
        self.prior_extractions_impl(ns, doc, input_hashes).await
    }

    async fn claims_by_key(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        keys: &[String],
    ) -> Result<Vec<(String, ClaimId)>> {
        self.claims_by_key_impl(ns, doc, keys).await
    }

    async fn version_claims(
        &self,
        ns: NamespaceId,
        version: VersionId,
        extractor_version: &str,
    ) -> Result<Vec<ClaimId>> {
        self.version_claims_impl(ns, version, extractor_version)
            .await
    }

    async fn current_claim_refs(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<(ClaimId, String)>> {
        self.current_claim_refs_impl(ns, doc).await
    }

    async fn apply_currency(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        current: &[ClaimId],
        reason: &str,
        version: Option<VersionId>,
        now: Timestamp,
    ) -> Result<u64> {
        self.apply_currency_impl(ns, doc, current, reason, version, now)
            .await
    }

    async fn list_claims(&self, filter: &ClaimFilter, limit: u32) -> Result<Vec<ClaimRecord>> {
        self.list_claims_impl(filter, limit).await
    }

    async fn claims(&self, ns: NamespaceId, ids: &[ClaimId]) -> Result<Vec<ClaimRecord>> {
        self.claims_impl(ns, ids).await
    }

    async fn decisions(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<DecisionRecord>> {
        self.decisions_impl(ns, doc).await
    }
}

#[async_trait]
impl IdentityStore for SqliteStore {
    async fn block_entities(&self, query: &BlockingQuery) -> Result<BlockingResult> {
        self.block_entities_impl(query).await
    }

    async fn block_entities_many(&self, queries: &[BlockingQuery]) -> Result<Vec<BlockingResult>> {
        self.block_entities_many_impl(queries).await
    }

    async fn document_bindings_many(
        &self,
        ns: NamespaceId,
        pairs: &[(DocumentId, String)],
    ) -> Result<Vec<DocumentBinding>> {
        self.document_bindings_many_impl(ns, pairs).await
    }

    async fn resolutions_for_many(
        &self,
        ns: NamespaceId,
        references: &[(ClaimId, u32)],
        resolver_version: &str,
    ) -> Result<Vec<ResolutionDecision>> {
        self.resolutions_for_many_impl(ns, references, resolver_version)
            .await
    }

    async fn commit_resolutions(&self, commits: Vec<ResolutionCommit>) -> Result<Vec<EntityId>> {
        self.commit_resolutions_impl(commits).await
    }

    async fn entity_key_data(&self, ns: NamespaceId, keys: &[BlockingKey]) -> Result<KeyData> {
        self.entity_key_data_impl(ns, keys).await
    }

    async fn entity_key_rows(
        &self,
        ns: NamespaceId,
        keys: &[BlockingKey],
    ) -> Result<Vec<(BlockingKey, Vec<(EntityId, String)>)>> {
        self.entity_key_rows_impl(ns, keys).await
    }

    async fn entities(&self, ns: NamespaceId, ids: &[EntityId]) -> Result<Vec<EntityRecord>> {
        self.entities_impl(ns, ids).await
    }

    async fn list_entities(&self, filter: &EntityFilter, limit: u32) -> Result<Vec<EntityRecord>> {
        self.list_entities_impl(filter, limit).await
    }

    async fn resolution_for(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        ordinal: u32,
        resolver_version: &str,
    ) -> Result<Option<ResolutionDecision>> {
        self.resolution_for_impl(ns, claim, ordinal, resolver_version)
            .await
    }

    async fn commit_resolution(
        &self,
        commit: ResolutionCommit,
        now: Timestamp,
    ) -> Result<EntityId> {
        self.commit_resolution_impl(commit, now).await
    }

    async fn add_exclusion(
        &self,
        ns: NamespaceId,
        a: EntityId,
        b: EntityId,
        decided_by: &str,
    ) -> Result<()> {
        self.add_exclusion_impl(ns, a, b, decided_by).await
    }

    async fn exclusions(
        &self,
        ns: NamespaceId,
        ids: &[EntityId],
    ) -> Result<Vec<(EntityId, EntityId)>> {
        self.exclusions_impl(ns, ids).await
    }

    async fn document_bindings(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        lemma: &str,
    ) -> Result<Vec<DocumentBinding>> {
        self.document_bindings_impl(ns, doc, lemma).await
    }

    async fn document_entity_bindings(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<DocumentBinding>> {
        self.document_entity_bindings_impl(ns, doc).await
    }

    async fn resolution_decision(
        &self,
        ns: NamespaceId,
        id: DecisionId,
    ) -> Result<Option<ResolutionDecision>> {
        self.resolution_decision_impl(ns, id).await
    }

    async fn resolution_decisions(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
    ) -> Result<Vec<ResolutionDecision>> {
        self.resolution_decisions_impl(ns, entities).await
    }

    async fn mentions(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        limit: u32,
    ) -> Result<Vec<Mention>> {
        self.mentions_impl(ns, entity, limit).await
    }

    async fn set_profile(
        &self,
        ns: NamespaceId,
        entity: EntityId,
        summary: &str,
        profile_key: &str,
        now: Timestamp,
    ) -> Result<()> {
        self.set_profile_impl(ns, entity, summary, profile_key, now)
            .await
    }

    async fn merge_entities(&self, event: MergeEvent) -> Result<()> {
        self.merge_entities_impl(event).await
    }

    async fn unmerge_entities(
        &self,
        ns: NamespaceId,
        merge: MergeId,
        now: Timestamp,
    ) -> Result<MergeEvent> {
        self.unmerge_entities_impl(ns, merge, now).await
    }

    async fn merge_events(
        &self,
        ns: NamespaceId,
        entities: &[EntityId],
    ) -> Result<Vec<MergeEvent>> {
        self.merge_events_impl(ns, entities).await
    }
}

#[async_trait]
impl FactStore for SqliteStore {
    async fn invalidate_fact(
        &self,
        ns: NamespaceId,
        fact: FactId,
        reason: &str,
        correction: Option<&str>,
        request: Option<&RequestKey>,
        now: Timestamp,
    ) -> Result<FactInvalidation> {
        self.invalidate_fact_impl(ns, fact, reason, correction, request, now)
            .await
    }

    async fn fact_events(&self, ns: NamespaceId, fact: FactId) -> Result<Vec<FactEvent>> {
        self.fact_events_impl(ns, fact).await
    }

    async fn bootstrap_predicates(
        &self,
        ns: NamespaceId,
        core: &[(String, String, Vec<String>)],
    ) -> Result<()> {
        self.bootstrap_predicates_impl(ns, core).await
    }

    async fn predicates(&self, ns: NamespaceId) -> Result<Vec<PredicateRow>> {
        self.predicates_impl(ns).await
    }

    async fn commit_normalizations(
        &self,
        commits: Vec<NormalizationCommit>,
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        self.commit_normalizations_impl(commits, now).await
    }

    async fn commit_normalization(
        &self,
        lease: &Lease,
        claim: ClaimId,
        normalizer_version: &str,
        output: serde_json::Value,
        assertions: Vec<Assertion>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        self.commit_normalization_impl(
            lease,
            claim,
            normalizer_version,
            output,
            assertions,
            follow_up,
            now,
        )
        .await
    }

    async fn normalization(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        normalizer_version: &str,
    ) -> Result<Option<serde_json::Value>> {
        self.normalization_impl(ns, claim, normalizer_version).await
    }

    async fn unapplied_assertions(
        &self,
        ns: NamespaceId,
        subjects: &[EntityId],
    ) -> Result<Vec<Assertion>> {
        self.unapplied_assertions_impl(ns, subjects).await
    }

    async fn pending_subjects(&self, ns: NamespaceId, version: VersionId) -> Result<Vec<EntityId>> {
        self.pending_subjects_impl(ns, version).await
    }

    async fn apply_assertion(
        &self,
        ns: NamespaceId,
        commit: ApplyCommit,
        now: Timestamp,
    ) -> Result<bool> {
        self.apply_assertion_impl(ns, commit, now).await
    }

    async fn apply_assertions(
        &self,
        ns: NamespaceId,
        commits: Vec<ApplyCommit>,
    ) -> Result<Vec<bool>> {
        self.apply_assertions_impl(ns, commits).await
    }

    async fn list_facts(&self, filter: &FactFilter, limit: u32) -> Result<Vec<FactRecord>> {
        self.list_facts_impl(filter, limit).await
    }

    async fn list_facts_after(
        &self,
        filter: &FactFilter,
        after: Option<(&str, i64)>,
        limit: u32,
    ) -> Result<Vec<(i64, FactRecord)>> {
        self.list_facts_after_impl(filter, after, limit).await
    }

    async fn facts(&self, ns: NamespaceId, ids: &[FactId]) -> Result<Vec<FactRecord>> {
        self.facts_impl(ns, ids).await
    }

    async fn list_fact_keys(&self, filter: &FactFilter, limit: u32) -> Result<Vec<FactKey>> {
        self.list_fact_keys_impl(filter, limit).await
    }

    async fn fact_evidence(&self, ns: NamespaceId, fact: FactId) -> Result<Vec<EvidenceRecord>> {
        self.fact_evidence_impl(ns, fact).await
    }

    async fn adjudications(
        &self,
        ns: NamespaceId,
        fact: FactId,
    ) -> Result<Vec<AdjudicationRecord>> {
        self.adjudications_impl(ns, fact).await
    }
}

#[async_trait]
impl LifecycleStore for SqliteStore {
    async fn put_feedback(&self, feedback: FeedbackRecord, prune_before: Timestamp) -> Result<()> {
        self.put_feedback_impl(feedback, prune_before).await
    }

    async fn list_feedback(
        &self,
        ns: NamespaceId,
        receipt: Option<ReceiptId>,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>> {
        self.list_feedback_impl(ns, receipt, limit).await
    }

    async fn prune_feedback(&self, before: Timestamp) -> Result<u64> {
        self.prune_feedback_impl(before).await
    }

    async fn revoke_note(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        now: Timestamp,
    ) -> Result<(NoteRecord, Vec<EntityId>)> {
        self.revoke_note_impl(ns, version, expected, now).await
    }

    async fn forget(
        &self,
        manifest: &ForgetManifest,
        now: Timestamp,
    ) -> Result<(ForgetReport, Vec<EntityId>)> {
        self.forget_impl(manifest, now).await
    }

    async fn begin_forget(&self, manifest: &ForgetManifest, now: Timestamp) -> Result<()> {
        self.begin_forget_impl(manifest, now).await
    }

    async fn incomplete_forgets(&self, ns: NamespaceId) -> Result<Vec<ForgetManifest>> {
        self.incomplete_forgets_impl(ns).await
    }

    async fn pending_forgets(&self) -> Result<Vec<rememberstack_core::forget::PendingForget>> {
        self.pending_forgets_impl().await
    }

    async fn file_rewrite_pending(&self) -> Result<Option<String>> {
        self.file_rewrite_pending_impl().await
    }

    async fn put_receipt(&self, receipt: Receipt) -> Result<Receipt> {
        let body = serde_json::to_string(&receipt).map_err(|e| Error::internal(e.to_string()))?;
        let mut tx = self.write.begin().await.map_err(db_err)?;
        if let Some(request) = &receipt.request_id {
            let existing = sqlx::query(crate::shared(&rememberstack_sql::receipts::BY_REQUEST))
                .bind(receipt.namespace_id.to_string())
                .bind(request)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            if let Some(row) = existing {
                return rememberstack_sql::rows::receipt_row(&row);
            }
        }
        sqlx::query(
            "INSERT INTO recall_receipts (namespace_id, id, request_id, operation, body_json, created_at)
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(receipt.namespace_id.to_string())
        .bind(receipt.receipt_id.to_string())
        .bind(&receipt.request_id)
        .bind(&receipt.operation)
        .bind(&body)
        .bind(to_rfc3339(&receipt.created_at))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(receipt)
    }

    async fn receipt(&self, ns: NamespaceId, id: ReceiptId) -> Result<Option<Receipt>> {
        sqlx::query(crate::shared(&rememberstack_sql::receipts::BY_ID))
            .bind(ns.to_string())
            .bind(id.to_string())
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?
            .map(|r| rememberstack_sql::rows::receipt_row(&r))
            .transpose()
    }

    async fn receipt_by_request(
        &self,
        ns: NamespaceId,
        request_id: &str,
    ) -> Result<Option<Receipt>> {
        sqlx::query(crate::shared(&rememberstack_sql::receipts::BY_REQUEST))
            .bind(ns.to_string())
            .bind(request_id)
            .fetch_optional(&self.read)
            .await
            .map_err(db_err)?
            .map(|r| rememberstack_sql::rows::receipt_row(&r))
            .transpose()
    }
}

#[async_trait]
impl KeyStore for SqliteStore {
    async fn insert_api_key(&self, key: &ApiKey, secret_hash: &str) -> Result<()> {
        self.insert_api_key_impl(key, secret_hash).await
    }

    async fn api_keys(&self) -> Result<Vec<ApiKey>> {
        self.api_keys_impl().await
    }

    async fn api_key_by_hash(&self, secret_hash: &str) -> Result<Option<ApiKey>> {
        self.api_key_by_hash_impl(secret_hash).await
    }

    async fn revoke_api_key(&self, id: &str, at: Timestamp) -> Result<ApiKey> {
        self.revoke_api_key_impl(id, at).await
    }

    async fn active_api_key_count(&self) -> Result<u64> {
        self.active_api_key_count_impl().await
    }
}

fn parse_id<T: FromStr<Err = Error>>(s: &str) -> Result<T> {
    T::from_str(s).map_err(|_| Error::store(format!("corrupt id `{s}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_migration_is_the_shared_schema_version() {
        let latest = super::MIGRATOR.iter().map(|m| m.version).max();
        assert_eq!(latest, Some(rememberstack_sql::SCHEMA_VERSION));
    }

    #[test]
    fn fts_query_quotes_everything() {
        assert_eq!(
            fts_query(&["a\"b".into(), "NEAR".into()]),
            "\"a\"\"b\" OR \"NEAR\""
        );
    }

    /// The ledger's queue statements read the partial indexes of unfinished work
    /// (which SQLite uses only when a statement names their condition), never every
    /// row of a stage or of the ledger: among 20,000 finished items and a small
    /// backlog, each plan names its index.
    #[tokio::test]
    async fn the_ledger_reads_unfinished_work_through_its_partial_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("m.db")).await.unwrap();
        sqlx::query(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 20099)
             INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id,
                 stage, component_version, status, not_before, lease_expires_at, created_at,
                 updated_at)
             SELECT 'ns', 'w' || i, 'claim', 't' || i, 'v' || (i / 50), 'e3.normalize', 'v1',
                    CASE WHEN i < 20000 THEN 'done' WHEN i % 4 = 0 THEN 'running'
                         WHEN i % 4 = 1 THEN 'failed' WHEN i % 4 = 2 THEN 'dead_letter'
                         ELSE 'pending' END,
                    i, CASE WHEN i >= 20000 AND i % 4 = 0 THEN i END, i, i FROM n",
        )
        .execute(&store.write)
        .await
        .unwrap();
        sqlx::query("ANALYZE").execute(&store.write).await.unwrap();
        let plans: [(&str, &str, &[&str]); 7] = [
            (
                "claim",
                CLAIM_DUE,
                &["processing_state_due", "processing_state_leases"],
            ),
            (
                "wakeup",
                shared(&ledger::NEXT_WAKEUP),
                &["processing_state_status", "processing_state_leases"],
            ),
            (
                "expedite",
                shared(&ledger::EXPEDITE_FAILED),
                &["processing_state_status"],
            ),
            (
                "replay",
                shared(&ledger::REPLAY_DEAD_LETTERS),
                &["processing_state_status"],
            ),
            (
                "listing",
                shared(&ledger::UNFINISHED_WORK),
                &["processing_state_status"],
            ),
            (
                "freshness counts",
                shared(&ledger::UNFINISHED_WORK_COUNTS),
                &["processing_state_due"],
            ),
            (
                "release",
                "SELECT lease_process, COUNT(*) FROM processing_state
                 WHERE status = 'running' AND lease_process IS NOT NULL AND lease_process <> ?
                   AND lease_expires_at > ? GROUP BY lease_process",
                &["processing_state_leases"],
            ),
        ];
        for (name, sql, indexes) in plans {
            let plan: Vec<String> = sqlx::query(AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
                .fetch_all(&store.write)
                .await
                .unwrap()
                .iter()
                .map(|r| r.get::<String, _>("detail"))
                .collect();
            let shown = plan.join("\n");
            // Every read of the ledger by what it holds (an update's own rows found
            // again by id aside) goes through the listed indexes, in order: a search
            // of one, or a scan of one (it holds unfinished work only).
            let reads: Vec<&String> = plan
                .iter()
                .filter(|d| {
                    d.starts_with("SEARCH processing_state ")
                        || d.starts_with("SCAN processing_state")
                })
                .filter(|d| !d.contains("processing_state_by_id (id=?)"))
                .collect();
            assert_eq!(reads.len(), indexes.len(), "{name}:\n{shown}");
            for (read, index) in reads.iter().zip(indexes) {
                assert!(
                    read.contains(&format!("INDEX {index} ("))
                        || read.ends_with(&format!("INDEX {index}")),
                    "{name}: `{read}` is not a read of {index}:\n{shown}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_write_group_is_invisible_to_other_tasks_until_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(dir.path().join("m.db")).await.unwrap());
        let now = chrono::Utc::now();
        let (inside, outside) = {
            let mut seen = (None, None);
            store
                .grouped(Box::pin(async {
                    store.ensure_namespace("grouped", now).await.unwrap();
                    let other = Arc::clone(&store);
                    seen.1 = tokio::spawn(async move { other.namespace("grouped").await })
                        .await
                        .unwrap()
                        .unwrap();
                    seen.0 = store.namespace("grouped").await.unwrap();
                }))
                .await
                .unwrap();
            seen
        };
        assert!(inside.is_some(), "the group reads its own write");
        assert!(
            outside.is_none(),
            "another task reads only what is committed"
        );
        assert!(store.namespace("grouped").await.unwrap().is_some());
        // A write outside any group is durable at once, also while a group is open.
        store
            .grouped(Box::pin(async {
                store.ensure_namespace("in-group", now).await.unwrap();
                let other = Arc::clone(&store);
                tokio::spawn(async move { other.ensure_namespace("outside", now).await })
                    .await
                    .unwrap()
                    .unwrap();
            }))
            .await
            .unwrap();
        let reopened = SqliteStore::open(dir.path().join("m.db")).await.unwrap();
        for slug in ["grouped", "in-group", "outside"] {
            assert!(reopened.namespace(slug).await.unwrap().is_some(), "{slug}");
        }
    }

    #[tokio::test]
    async fn full_text_tables_of_an_older_tokenizer_are_rebuilt_with_stemming_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let table = "chunk_fts_00112233445566778899aabbccddeeff";
        {
            let store = SqliteStore::open(&path).await.unwrap();
            sqlx::raw_sql(AssertSqlSafe(format!(
                "CREATE VIRTUAL TABLE {table} USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
                 INSERT INTO {table} (rowid, text) VALUES (7, 'Melanie went running'), (9, 'a quiet day');"
            )))
            .execute(&store.write)
            .await
            .unwrap();
            let (n,): (i64,) = sqlx::query_as(AssertSqlSafe(format!(
                "SELECT count(*) FROM {table} WHERE {table} MATCH '\"run\"'"
            )))
            .fetch_one(&store.write)
            .await
            .unwrap();
            assert_eq!(n, 0, "unicode61 alone does not stem");
        }
        let store = SqliteStore::open(&path).await.unwrap();
        let (sql,): (String,) = sqlx::query_as("SELECT sql FROM sqlite_master WHERE name = ?")
            .bind(table)
            .fetch_one(&store.write)
            .await
            .unwrap();
        assert!(sql.contains(FTS_TOKENIZER), "{sql}");
        let rows: Vec<(i64,)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT rowid FROM {table} WHERE {table} MATCH '\"run\"'"
        )))
        .fetch_all(&store.write)
        .await
        .unwrap();
        assert_eq!(rows, vec![(7,)], "the rows survive and the stem matches");
        let (n,): (i64,) = sqlx::query_as(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&store.write)
            .await
            .unwrap();
        assert_eq!(n, 2);
        // A third open finds nothing to rebuild.
        drop(store);
        SqliteStore::open(&path).await.unwrap();
    }

    #[tokio::test]
    async fn a_lock_held_past_the_busy_timeout_is_a_retryable_timeout() {
        use sqlx::ConnectOptions;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .busy_timeout(Duration::ZERO);
        let mut holder = options.connect().await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&mut holder)
            .await
            .unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .unwrap();
        let mut other = options.connect().await.unwrap();
        let busy = sqlx::query("INSERT INTO t VALUES (1)")
            .execute(&mut other)
            .await
            .unwrap_err();
        let err = db_err(busy);
        assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
        // Any other database failure stays a store error.
        let other_failure = sqlx::query("SELECT * FROM no_such_table")
            .execute(&mut other)
            .await
            .unwrap_err();
        assert_eq!(db_err(other_failure).code(), ErrorCode::Store);
    }

    /// Concurrent reads need SQLite compiled without a process-wide page cache and
    /// without allocation statistics (both take a process-wide mutex on every page
    /// or allocation); the workspace's `.cargo/config.toml` sets `LIBSQLITE3_FLAGS`
    /// for that.
    #[tokio::test]
    async fn the_bundled_sqlite_keeps_a_page_cache_per_connection_and_no_allocation_statistics() {
        let (_dir, store, _ns) = crate::entities::tests::open().await;
        let options: Vec<String> = sqlx::query_scalar("PRAGMA compile_options")
            .fetch_all(&store.read)
            .await
            .unwrap();
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "built with one page cache for every connection: {options:?}"
        );
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "built with allocation statistics: {options:?}"
        );
    }

    #[tokio::test]
    async fn the_change_stamp_moves_with_writes_of_its_namespace_only() {
        use rememberstack_core::ledger::{NewWork, Stage};
        let (_dir, store, ns) = crate::entities::tests::open().await;
        let now = crate::entities::tests::t("2024-01-01T00:00:00Z");
        let other = store.ensure_namespace("other", now).await.unwrap().id;
        let before = store.change_stamp(ns).await.unwrap();
        let other_before = store.change_stamp(other).await.unwrap();
        let work = |ns| {
            NewWork::now(
                ns,
                Stage::Prepare,
                uuid::Uuid::new_v4(),
                VersionId::new(),
                "v1",
                now,
            )
        };
        store.enqueue(vec![work(ns)], now).await.unwrap();
        let after = store.change_stamp(ns).await.unwrap();
        assert!(after > before, "{before} -> {after}");
        assert_eq!(store.change_stamp(other).await.unwrap(), other_before);
        // A second write moves it again; a read does not.
        store.work_counts(Some(ns)).await.unwrap();
        assert_eq!(store.change_stamp(ns).await.unwrap(), after);
        store.enqueue(vec![work(ns)], now).await.unwrap();
        assert!(store.change_stamp(ns).await.unwrap() > after);
    }

    /// Enqueue `n` prepare items and claim them as `owner` on `store`, leased for
    /// an hour.
    async fn lease_work(store: &SqliteStore, ns: NamespaceId, n: usize, now: Timestamp) -> usize {
        let work: Vec<NewWork> = (0..n)
            .map(|_| {
                NewWork::now(
                    ns,
                    Stage::Prepare,
                    uuid::Uuid::new_v4(),
                    VersionId::new(),
                    "v1",
                    now,
                )
            })
            .collect();
        store.enqueue(work, now).await.unwrap();
        claim_all(store, now).await
    }

    async fn claim_all(store: &SqliteStore, now: Timestamp) -> usize {
        store
            .claim(&ClaimRequest {
                owner: "worker".into(),
                stages: vec![Stage::Prepare],
                limit: 100,
                stage_limits: vec![],
                lease_until: now + chrono::Duration::hours(1),
                now,
            })
            .await
            .unwrap()
            .len()
    }

    #[tokio::test]
    async fn leases_of_a_process_that_ended_are_taken_at_once_and_a_live_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let now = chrono::Utc::now();
        let first = SqliteStore::open(&path).await.unwrap();
        let second = SqliteStore::open(&path).await.unwrap();
        let ns = first.ensure_namespace("t", now).await.unwrap().id;
        assert_eq!(lease_work(&first, ns, 3, now).await, 3);
        // The first process runs: its leases hold, and a waiting worker can say whose
        // they are and until when.
        assert_eq!(claim_all(&second, now).await, 0);
        let holders = second.lease_holders(now).await.unwrap();
        assert_eq!(holders.len(), 1, "{holders:?}");
        assert_eq!(holders[0].items, 3);
        assert_eq!(holders[0].holder, format!("process {}", std::process::id()));
        assert!(holders[0].until > now + chrono::Duration::minutes(59));
        // What SIGKILL leaves: the lease rows and the owner file, with no lock on
        // it (the process's descriptors are gone). The leases are taken at once,
        // not in an hour, and the attempt counts as an expired lease's would.
        let token = first.owner.as_ref().unwrap().token().to_string();
        let file = owners::owners_dir(&path).join(format!("{token}.lock"));
        first.close().await;
        drop(first);
        std::fs::write(&file, b"").unwrap();
        assert_eq!(claim_all(&second, now).await, 3);
        let attempts: Vec<i64> =
            sqlx::query_scalar("SELECT attempts FROM processing_state WHERE namespace_id = ?")
                .bind(ns.to_string())
                .fetch_all(&second.read)
                .await
                .unwrap();
        assert_eq!(attempts, vec![2, 2, 2]);
        assert!(!file.exists(), "the ended owner's file is removed");
    }

    #[tokio::test]
    async fn the_last_extraction_completed_owes_a_currency_refresh_until_it_is_applied() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("memory.db"))
            .await
            .unwrap();
        let now = chrono::Utc::now();
        let ns = store.ensure_namespace("t", now).await.unwrap().id;
        let version = VersionId::new();
        let work: Vec<NewWork> = (0..2)
            .map(|_| NewWork::now(ns, Stage::Extract, uuid::Uuid::new_v4(), version, "x", now))
            .collect();
        store.enqueue(work, now).await.unwrap();
        let claim = |limit| ClaimRequest {
            owner: "worker".into(),
            stages: vec![Stage::Extract],
            limit,
            stage_limits: vec![],
            lease_until: now + chrono::Duration::hours(1),
            now,
        };
        let items = store.claim(&claim(2)).await.unwrap();
        store
            .complete(&Lease::of(&items[0]), vec![], now)
            .await
            .unwrap();
        assert!(
            store.currency_due().await.unwrap().is_empty(),
            "one unit is still running"
        );
        // The completion of the last unit writes the debt in its own transaction.
        store
            .complete(&Lease::of(&items[1]), vec![], now)
            .await
            .unwrap();
        assert_eq!(store.currency_due().await.unwrap(), vec![(ns, version)]);
        // Applying the version's currency pays it, in the same transaction.
        store
            .apply_currency(
                ns,
                DocumentId::new(),
                &[],
                "extraction_completed",
                Some(version),
                now,
            )
            .await
            .unwrap();
        assert!(store.currency_due().await.unwrap().is_empty());
    }

    /// Vectors are stored as `f16` (two bytes a component), scaled to unit length
    /// when half precision would not hold them, `f32` only when not finite; blobs of
    /// either width (older stores hold `f32`) decode.
    #[test]
    fn vectors_are_stored_at_half_precision_when_it_keeps_them() {
        // Exact in f16: stored in two bytes a component, read back equal.
        let v = vec![0.5f32, -1.25, 3.0];
        let b = encode_vector(&v);
        assert_eq!(b.len(), 6);
        assert_eq!(decode_vector(&b, 3).unwrap(), v);
        // A unit vector: within f16's relative precision of its largest component,
        // and its cosine with the original is 1 to six places.
        let raw: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let norm = raw.iter().map(|x| x * x).sum::<f32>().sqrt();
        let unit: Vec<f32> = raw.iter().map(|x| x / norm).collect();
        let back = decode_vector(&encode_vector(&unit), 384).unwrap();
        let largest = unit.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        for (a, b) in unit.iter().zip(&back) {
            assert!((a - b).abs() <= largest / 2048.0, "{a} {b}");
        }
        let cos: f32 = unit.iter().zip(&back).map(|(a, b)| a * b).sum::<f32>()
            / back.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((cos - 1.0).abs() < 1e-6, "{cos}");
        // Out of f16's range, or too small for its precision: scaled to unit length
        // (the direction, all a cosine sees, kept), then two bytes a component.
        for (big, unit) in [
            (
                vec![70_000.0f32, 0.0, -70_000.0],
                [0.70710677f32, 0.0, -0.70710677],
            ),
            (vec![3e-3f32, -4e-3, 0.0], [0.6, -0.8, 0.0]),
        ] {
            let b = encode_vector(&big);
            assert_eq!(b.len(), 6, "{big:?}");
            let back = decode_vector(&b, 3).unwrap();
            for (a, b) in unit.iter().zip(&back) {
                assert!((a - b).abs() < 1e-3, "{big:?}: {back:?}");
            }
        }
        // Not finite: kept whole, as f32.
        let b = encode_vector(&[f32::NAN, 1.0]);
        assert_eq!(b.len(), 8);
        assert_eq!(decode_vector(&b, 2).unwrap()[1], 1.0);
        // A blob of an older store (f32) still decodes; a torn one is refused.
        let old: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(decode_vector(&old, 3).unwrap(), v);
        assert!(decode_vector(&[1, 2, 3], 3).is_err());
        assert!(decode_vector(&b, -1).is_err());
    }
}
