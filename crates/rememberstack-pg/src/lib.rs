//! RememberStack's PostgreSQL [`MemoryStore`]: PostgreSQL 16+ with pgvector, one
//! database or one schema per deployment (D68), built-in full-text search over
//! generated `tsvector` columns ranked with BM25 and per-generation HNSW vector
//! indexes.
//!
//! Not for direct use: depend on `rememberstack`.
//!
//! # Layout
//!
//! The schema (`migrations/0001_init.sql`) is the final state of the SQLite
//! store's migrations up to `0011` in PostgreSQL types (see its header); later
//! migrations mirror the SQLite store's one for one (`0002_api_keys.sql` is
//! SQLite's `0012_api_keys.sql`). The trait's methods are grouped by area, one
//! module each, mirroring the SQLite store's modules:
//! `documents` (sources, chunks, settings), `ledger` (work ledger, provider-call
//! accounting), `claims`, `entities`, `facts` (normalization, predicates, facts),
//! `lifecycle` (deletion, retraction, invalidation, feedback, notes), `forget`
//! (hard forget, note revocation), `search` (chunk vectors and search, change
//! stamp, receipts) and `keys` (API keys, deployment-wide).
//!
//! Where the embedded store relies on its single writer, this one takes row
//! locks (`FOR UPDATE`, `FOR UPDATE SKIP LOCKED` to claim work) and
//! transaction-scoped advisory locks keyed by lemma, entity, note, request and
//! version. Lexical channels rank with Okapi BM25 as SQLite's FTS5 `bm25()` does
//! (k1 = 1.2, b = 0.75), computed in SQL from term statistics the store keeps
//! (row lengths, row and token totals and document frequencies per namespace and
//! channel, maintained by triggers; migration `0011_bm25.sql`) over `rs_english`
//! tsvectors (Snowball English stemming that keeps stop words); semantic channels
//! use a per-generation HNSW index with iterative scans, the eligibility filters in
//! the same statement, and an exact re-ranking of ties at the cut.
#![forbid(unsafe_code)]
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod claims;
mod compact;
mod documents;
mod entities;
mod facts;
mod forget;
mod keys;
mod ledger;
mod lifecycle;
mod liveness;
mod rows;
mod search;
mod signal;

/// The ledger's claim statement, for plan tests (not part of the API).
#[doc(hidden)]
pub use ledger::claim_statement;

use async_trait::async_trait;
use rememberstack_core::embed::EmbedderIdentity;
use rememberstack_core::entities::{
    BlockingKey, BlockingQuery, BlockingResult, DocumentBinding, EntityFilter, EntityRecord,
    KeyData, MergeEvent, ResolutionCommit, ResolutionDecision,
};
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, EvidenceRecord, FactFilter, FactKey, FactRecord,
    PredicateRow,
};
use rememberstack_core::ids::{
    ChunkId, ClaimId, DecisionId, DocumentId, EntityId, FactId, MergeId, NamespaceId, ReceiptId,
    VersionId, WorkId,
};
use rememberstack_core::keys::ApiKey;
use rememberstack_core::ledger::{
    BarrierStatus, ClaimRequest, DeferReason, FailureOutcome, LeaseHolder, NewWork, Stage,
    WorkCount, WorkItem, WorkStatus,
};
use rememberstack_core::source::Admission;
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{
    CallRecord, ChunkFilter, ChunkHit, ChunkRecord, ChunkRef, ClaimFilter, ClaimHit, ClaimRecord,
    ClaimRetraction, DecisionRecord, DeletionOutcome, DocumentRow, ExtractionCommit, FactEvent,
    FactInvalidation, FeedbackRecord, Lease, Namespace, NewChunk, NewVersion, NormalizationCommit,
    NoteLookup, NoteRecord, PreparedVersion, PriorExtraction, Receipt, RequestKey, SectionRow,
    StoreLock, StoreTuning, VectorCoverage, VersionOutcome, VersionRecord,
};
use rememberstack_core::text::SourceFormat;
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::coverage::Target;
use rememberstack_sql::manifests::ManifestRoot;
use rememberstack_sql::rows::namespace_row;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, Executor, PgPool, Row};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How [`PgStore::connect_with`] connects.
#[derive(Clone, Debug)]
pub struct PgStoreConfig {
    /// Connections in the pool (default 8).
    pub max_connections: u32,
    /// How long to wait for a free connection before failing (default 30 s).
    pub acquire_timeout: Duration,
    /// The schema that holds the store (created if missing; default: none, so the
    /// connection's default `search_path`, normally `public`). One deployment is one
    /// database or one schema (D68). A lowercase identifier: ASCII letters, digits
    /// and `_`, starting with a letter or `_`, at most 63 bytes.
    pub schema: Option<String>,
    /// The forget manifest root (D74): `REMEMBERSTACK_MANIFEST_ROOT` when this is
    /// unset, else `<data dir>/rememberstack/manifests/<database key>`, where the
    /// key is the cluster's system identifier, the database name and the schema.
    pub manifest_root: Option<PathBuf>,
    /// The longest any one statement of the store may run (default 5 s; `None`: no
    /// bound). A statement past it is cancelled, its transaction rolls back and the
    /// call fails `timeout`, which is safe to retry. Maintenance that may run long
    /// by nature (migrations, index builds, `VACUUM`) runs on a connection of its
    /// own without the bound.
    pub statement_timeout: Option<Duration>,
    /// The longest a statement may wait for a lock (default 2 s; `None`: no bound);
    /// past it the call fails `timeout` as above. The engine's own named locks,
    /// which a worker holds while it works, are waited for without this bound.
    pub lock_timeout: Option<Duration>,
    /// The longest a vector search may walk an HNSW index before the exact scan
    /// answers instead (default 1 s, never above `statement_timeout`). A walk
    /// normally takes milliseconds; the bound is there for walks that do not end.
    pub index_pass_timeout: Duration,
    /// A namespace holding fewer vectors of an embedder generation than this ranks
    /// its chunks and facts by exact scan without walking the HNSW index first
    /// (default [`DEFAULT_EXACT_SCAN_BELOW`]; 0: every vector search walks the index
    /// first). Computing every distance costs about 2 µs a vector; a walk of the
    /// generation's one index for chunks or facts, a minority of its vectors,
    /// visits several vectors of other records for each one it keeps, so below a
    /// few thousand vectors the exact scan is cheaper, and exact. Claims, most of
    /// the vectors, always walk the index.
    pub exact_scan_below: usize,
    /// A read replica's URL (`postgres://…`, with the same schema): the search
    /// channels of the read-only operations (lexical and semantic ranking of
    /// chunks, claims and facts) run there; everything else, writes and the reads
    /// that decide them, stays on the primary. A replica lags its primary, so a
    /// search right after a write may not find it yet. Connected on first use.
    pub read_url: Option<String>,
}

impl Default for PgStoreConfig {
    fn default() -> Self {
        Self {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(30),
            schema: None,
            manifest_root: None,
            statement_timeout: Some(DEFAULT_STATEMENT_TIMEOUT),
            lock_timeout: Some(DEFAULT_LOCK_TIMEOUT),
            index_pass_timeout: Duration::from_secs(1),
            exact_scan_below: DEFAULT_EXACT_SCAN_BELOW,
            read_url: None,
        }
    }
}

/// The default [`PgStoreConfig::exact_scan_below`]: at 2,600 vectors an exact
/// chunk ranking took 5 ms against 11 ms for the index pass.
pub const DEFAULT_EXACT_SCAN_BELOW: usize = 5_000;

/// The default bound on one store statement's run time.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default bound on one store statement's wait for a lock.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// `options` whose connections carry `config`'s statement and lock bounds.
fn with_bounds(options: PgConnectOptions, config: &PgStoreConfig) -> PgConnectOptions {
    options.options([
        (
            "statement_timeout",
            timeout_setting(config.statement_timeout),
        ),
        ("lock_timeout", timeout_setting(config.lock_timeout)),
    ])
}

/// A time bound as a PostgreSQL setting value in milliseconds (`0`, no bound, for
/// `None`; at least 1 ms otherwise, since `0` would lift it).
fn timeout_setting(bound: Option<Duration>) -> String {
    match bound {
        None => "0".to_string(),
        Some(d) => d.as_millis().clamp(1, i32::MAX as u128).to_string(),
    }
}

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    locks: PgPool,
    /// Connections for maintenance that may run long by nature (migrations, index
    /// builds, `VACUUM`): without the statement pool's time bounds.
    maintenance: PgPool,
    /// Rows written by this process, for [`PgStore::grew`].
    growth: std::sync::Arc<Growth>,
    /// The read replica's pool, when one is configured (see [`PgStore::reads`]).
    read: Option<PgPool>,
    /// The bound on an index pass of a vector search (see `vector_search_tx`).
    index_pass_timeout: Duration,
    /// See [`PgStoreConfig::exact_scan_below`].
    exact_scan_below: usize,
    /// Whether a (namespace, generation) held fewer vectors than
    /// `exact_scan_below`, and when that was counted (see `exact_scan_is_cheaper`).
    small_generations: std::sync::Arc<std::sync::Mutex<search::SmallGenerations>>,
    schema: Option<String>,
    manifests: ManifestRoot,
    /// Whether the manifest root was named (config or environment) rather than
    /// defaulted to this host's data directory.
    shared_root: bool,
    /// The session whose lock says this process still runs (see `liveness`).
    owner: std::sync::Arc<liveness::Owner>,
    /// What wakes this process's idle workers (see `signal`).
    work_signal: std::sync::Arc<signal::WorkSignal>,
}

/// This process's host name, for the connection's `application_name`: a
/// deployment's processes announce their host and manifest-root mode there, so
/// one on another host with a host-local root is noticed.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(40)
        .collect();
    if name.is_empty() {
        "unknown".into()
    } else {
        name
    }
}

const APP_PREFIX: &str = "rememberstack ";

/// The warning for processes of this database on several hosts when any of them
/// keeps forget manifests in a host-local default root: a manifest written on one
/// host is not re-honoured by the others, so restoring a backup through another
/// host could bring forgotten content back.
fn multi_host_warning(me: &str, my_shared: bool, peers: &[String]) -> Option<String> {
    let mut others: Vec<(&str, bool)> = peers
        .iter()
        .filter_map(|a| {
            let rest = a.strip_prefix(APP_PREFIX)?;
            let (host, mode) = rest.rsplit_once(' ')?;
            Some((host, mode == "manifests=shared"))
        })
        .filter(|(host, _)| *host != me)
        .collect();
    others.sort();
    others.dedup();
    if others.is_empty() || (my_shared && others.iter().all(|(_, shared)| *shared)) {
        return None;
    }
    let hosts: Vec<&str> = others.iter().map(|(h, _)| *h).collect();
    Some(format!(
        "processes on other hosts ({}) use this database, and forget manifests are kept in a \
         host-local default root on at least one of them: a forget on one host is not \
         re-honoured by the others after a restore. Give every process the same shared \
         manifest root (`[store] manifest_root`, REMEMBERSTACK_MANIFEST_ROOT or --manifest-root)",
        hosts.join(", ")
    ))
}

/// `<data dir>/rememberstack/manifests/<system identifier>-<database>[-<schema>]`:
/// one root per database (and schema), whichever host or replica reaches it. A
/// server that hides its system identifier (some managed services) is keyed by
/// its address instead.
async fn default_manifest_root(pool: &PgPool, schema: Option<&str>) -> Result<PathBuf> {
    let row = sqlx::query(
        "SELECT current_database() AS db,
                COALESCE(host(inet_server_addr()), 'local') || ':' ||
                    COALESCE(inet_server_port()::text, '') AS addr",
    )
    .fetch_one(pool)
    .await
    .map_err(db_err)?;
    let db: String = row.try_get("db").map_err(db_err)?;
    let cluster =
        match sqlx::query_scalar::<_, i64>("SELECT system_identifier FROM pg_control_system()")
            .fetch_one(pool)
            .await
        {
            Ok(id) => id.to_string(),
            Err(_) => row
                .try_get::<String, _>("addr")
                .map_err(db_err)?
                .replace([':', '/'], "_"),
        };
    let mut key = format!("{cluster}-{db}");
    if let Some(schema) = schema {
        key.push('-');
        key.push_str(schema);
    }
    let key: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = dirs::data_dir().ok_or_else(|| {
        Error::new(
            ErrorCode::Config,
            "no data directory for the forget manifest root: set REMEMBERSTACK_MANIFEST_ROOT",
        )
    })?;
    Ok(base.join("rememberstack").join("manifests").join(key))
}

/// Rows this process has written, and the count at which it next looks for
/// tables whose planner statistics are stale (see [`PgStore::grew`]).
#[derive(Debug, Default)]
struct Growth {
    rows: std::sync::atomic::AtomicU64,
    next: std::sync::atomic::AtomicU64,
}

/// Rows written by this process between two looks for stale statistics, and
/// the fewest changed rows that make a table's statistics stale.
const ANALYZE_CHECK_EVERY: u64 = 200;

/// The store's tables whose rows changed, since their statistics were last
/// gathered, by at least as many as the statistics counted (the table doubled,
/// or was rewritten) and at least [`ANALYZE_CHECK_EVERY`]; never-analyzed
/// tables count as empty (`reltuples` is -1).
const STALE_STATISTICS_SQL: &str = "SELECT s.relname::text FROM pg_stat_user_tables s
       JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema()
        AND s.n_mod_since_analyze >= GREATEST($1, c.reltuples)
      ORDER BY s.relname";

/// `SET search_path` to the store's schema, then `public` (where the `vector`
/// type and operators may live).
fn search_path_sql(schema: &str) -> String {
    format!("SET search_path TO \"{schema}\", public")
}

/// Pool options whose connections resolve the store's tables in `schema` (the
/// `vector` type and operators may live in `public`).
fn in_schema(options: PgPoolOptions, schema: Option<String>) -> PgPoolOptions {
    match schema {
        Some(schema) => options.after_connect(move |conn, _meta| {
            let sql = search_path_sql(&schema);
            Box::pin(async move {
                conn.execute(AssertSqlSafe(sql)).await?;
                Ok(())
            })
        }),
        None => options,
    }
}

/// A statement of `rememberstack_sql` (written once for both stores) as PostgreSQL
/// runs it.
pub(crate) fn shared(statement: &'static rememberstack_sql::Statement) -> &'static str {
    statement.sql(rememberstack_sql::Dialect::Postgres)
}

/// A list for a shared statement's `{ANY}`: PostgreSQL binds it as a `text[]`.
pub(crate) fn any_list<T: ToString>(items: &[T]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

/// A database failure as the core's store error; a statement cancelled by its
/// time bound (`query_canceled`, 57014) or that waited too long for a lock
/// (`lock_not_available`, 55P03) is `timeout`, which callers may retry.
pub(crate) fn db_err(e: sqlx::Error) -> Error {
    if let sqlx::Error::Database(db) = &e
        && matches!(db.code().as_deref(), Some("57014" | "55P03"))
    {
        return Error::timeout(format!(
            "a PostgreSQL statement ran past its time bound and was cancelled; nothing of it \
             was kept, retry ({})",
            db.message()
        ));
    }
    Error::store(e)
}

/// One column of a multi-row write: `f` of every item, in order, bound as an array
/// that `unnest` turns back into rows.
pub(crate) fn column<'a, T, U>(items: &'a [T], f: impl FnMut(&'a T) -> U) -> Vec<U> {
    items.iter().map(f).collect()
}

/// `v` as JSON text, for a `jsonb` column bound as text (a multi-row write casts
/// the array's elements).
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::internal(e.to_string()))
}

/// Add the lexical rows of records just inserted (their `seq` and text), one
/// statement for all of them.
pub(crate) async fn insert_lexical(
    conn: &mut sqlx::PgConnection,
    index: rememberstack_sql::LexicalIndex,
    ns: &str,
    seqs: &[i64],
    texts: &[String],
) -> Result<()> {
    if seqs.is_empty() {
        return Ok(());
    }
    use rememberstack_sql::LexicalIndex;
    let sql = match index {
        LexicalIndex::Chunks => {
            "INSERT INTO chunk_lexical (namespace_id, seq, text)
             SELECT $1, l.seq, l.text FROM unnest($2::int8[], $3::text[]) AS l(seq, text)"
        }
        LexicalIndex::Claims => {
            "INSERT INTO claim_lexical (namespace_id, seq, text)
             SELECT $1, l.seq, l.text FROM unnest($2::int8[], $3::text[]) AS l(seq, text)"
        }
        LexicalIndex::Facts => {
            "INSERT INTO fact_lexical (namespace_id, seq, text)
             SELECT $1, l.seq, l.text FROM unnest($2::int8[], $3::text[]) AS l(seq, text)"
        }
    };
    sqlx::query(sql)
        .bind(ns)
        .bind(seqs)
        .bind(texts)
        .execute(conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Take transaction-scoped advisory locks on `keys` in one round trip, in sorted
/// order (a `BTreeSet`), so two writers never wait on each other crosswise.
pub(crate) async fn lock_keys(
    conn: &mut sqlx::PgConnection,
    keys: std::collections::BTreeSet<String>,
) -> Result<()> {
    sqlx::query(
        "SELECT COUNT(pg_advisory_xact_lock(hashtextextended(k, 0)))
           FROM unnest($1::text[]) AS l(k)",
    )
    .bind(keys.into_iter().collect::<Vec<_>>())
    .execute(conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// A stored id back into its type.
pub(crate) fn parse_id<T: FromStr<Err = Error>>(s: &str) -> Result<T> {
    T::from_str(s).map_err(|_| Error::store(format!("corrupt id `{s}`")))
}

fn valid_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

impl PgStore {
    /// Connect to the database at `url` (`postgres://user[:password]@host[:port]/db`)
    /// with the default [`PgStoreConfig`], make sure the `vector` extension exists
    /// and apply the store's migrations.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PgStoreConfig::default()).await
    }

    /// [`PgStore::connect`] with a configuration.
    pub async fn connect_with(url: &str, config: PgStoreConfig) -> Result<Self> {
        if let Some(schema) = &config.schema
            && !valid_schema_name(schema)
        {
            return Err(Error::new(
                ErrorCode::Config,
                format!(
                    "`{schema}` is not a usable schema name: use lowercase ASCII letters, digits \
                     and `_`, starting with a letter or `_`, at most 63 bytes"
                ),
            ));
        }
        if config.max_connections == 0 {
            return Err(Error::new(
                ErrorCode::Config,
                "max_connections must be at least 1",
            ));
        }
        let options = PgConnectOptions::from_str(url).map_err(|e| {
            Error::new(
                ErrorCode::Config,
                format!("the PostgreSQL URL is not valid ({e}); expected postgres://user@host:port/database"),
            )
        })?;
        let schema = config.schema.clone();
        let named_root = config.manifest_root.clone().or_else(|| {
            std::env::var_os("REMEMBERSTACK_MANIFEST_ROOT")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        let options = options.application_name(&format!(
            "{APP_PREFIX}{} manifests={}",
            host_name(),
            if named_root.is_some() {
                "shared"
            } else {
                "local"
            }
        ));
        // Every statement of the pool is bounded in time (`statement_timeout`,
        // `lock_timeout` as the connection's settings); the lock sessions and the
        // maintenance connection are not.
        let bounded = with_bounds(options.clone(), &config);
        let pool_options = in_schema(
            PgPoolOptions::new()
                .max_connections(config.max_connections)
                .acquire_timeout(config.acquire_timeout),
            schema.clone(),
        );
        // Cross-process locks hold a session each while the engine works: they get
        // a pool of their own, so held locks never starve the statements.
        let locks = PgPoolOptions::new()
            .max_connections(64)
            .min_connections(0)
            .acquire_timeout(config.acquire_timeout)
            .connect_lazy_with(options.clone());
        let work_signal =
            std::sync::Arc::new(signal::WorkSignal::new(options.clone(), schema.clone()));
        let maintenance = in_schema(
            PgPoolOptions::new()
                .max_connections(2)
                .min_connections(0)
                .idle_timeout(Duration::from_secs(60))
                .acquire_timeout(config.acquire_timeout),
            schema.clone(),
        )
        .connect_lazy_with(options);
        let read = match &config.read_url {
            Some(url) => {
                let replica = PgConnectOptions::from_str(url).map_err(|e| {
                    Error::new(
                        ErrorCode::Config,
                        format!(
                            "the read replica URL is not valid ({e}); expected \
                             postgres://user@host:port/database"
                        ),
                    )
                })?;
                let replica = with_bounds(replica, &config);
                Some(
                    in_schema(
                        PgPoolOptions::new()
                            .max_connections(config.max_connections)
                            .min_connections(0)
                            .acquire_timeout(config.acquire_timeout),
                        schema.clone(),
                    )
                    .connect_lazy_with(replica),
                )
            }
            None => None,
        };
        let pool = pool_options
            .connect_with(bounded)
            .await
            .map_err(|e| Error::store(format!("cannot connect to PostgreSQL: {e}")))?;
        // Creating the extension needs a superuser (or a database owner where
        // pgvector is trusted) the first time; when it exists this is a no-op.
        sqlx::query("CREATE EXTENSION IF NOT EXISTS vector")
            .execute(&maintenance)
            .await
            .map_err(|e| {
                Error::store(format!(
                    "the pgvector extension is missing and could not be created ({e}); \
                     run `CREATE EXTENSION vector` in this database as a superuser"
                ))
            })?;
        if let Some(schema) = &schema {
            sqlx::query(AssertSqlSafe(format!(
                "CREATE SCHEMA IF NOT EXISTS \"{schema}\""
            )))
            .execute(&maintenance)
            .await
            .map_err(db_err)?;
        }
        // Migrations may rewrite or index whole tables: no statement bound.
        MIGRATOR.run(&maintenance).await.map_err(|e| {
            Error::store(format!(
                "cannot apply the PostgreSQL store's migrations: {e}"
            ))
        })?;
        let shared_root = named_root.is_some();
        let manifest_dir = match named_root {
            Some(dir) => dir,
            None => default_manifest_root(&pool, schema.as_deref()).await?,
        };
        let store = Self {
            pool,
            locks,
            maintenance,
            growth: Default::default(),
            read,
            index_pass_timeout: config
                .statement_timeout
                .map_or(config.index_pass_timeout, |b| {
                    b.min(config.index_pass_timeout)
                }),
            exact_scan_below: config.exact_scan_below,
            small_generations: Default::default(),
            schema,
            manifests: ManifestRoot::new(manifest_dir),
            shared_root,
            owner: Default::default(),
            work_signal,
        };
        if let Ok(Some(warning)) = store.manifest_root_warning_impl().await {
            tracing::warn!("{warning}");
        }
        // Every manifest is honoured before the store serves (D74): an unreadable
        // root fails the connect.
        store.rehonour_manifests().await?;
        tracing::debug!(
            schema = store.schema.as_deref().unwrap_or("(default)"),
            manifests = %store.manifests.dir().display(),
            "postgres store ready"
        );
        Ok(store)
    }

    /// The multi-host warning (see [`multi_host_warning`]) from the sessions
    /// connected to this database now.
    async fn manifest_root_warning_impl(&self) -> Result<Option<String>> {
        let peers: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT application_name FROM pg_stat_activity
             WHERE datname = current_database() AND application_name LIKE 'rememberstack %'",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(multi_host_warning(&host_name(), self.shared_root, &peers))
    }

    /// The forget manifest root this store appends to and re-honours.
    pub fn manifest_root(&self) -> &Path {
        self.manifests.dir()
    }

    /// Count `rows` written and, every [`ANALYZE_CHECK_EVERY`] of them, refresh
    /// the planner's statistics of each table that has doubled since its last
    /// refresh ([`STALE_STATISTICS_SQL`]). Autovacuum analyzes a table once a
    /// tenth of it has changed, but at most once a minute per database, and may
    /// do so while the table is nearly empty: a store being filled fast was then
    /// read and adjudicated with plans made for tables a tenth their size (fact
    /// channels past the statement bound; the adjudication stage at a few items
    /// a second for a minute, until the next autoanalyze). A table-by-table
    /// doubling rule keeps the refreshes to a few per table and is shared by every
    /// process writing the store, since it reads the server's own counters.
    pub(crate) async fn grew(&self, rows: u64) {
        use std::sync::atomic::Ordering::SeqCst;
        if rows == 0 {
            return;
        }
        let total = self.growth.rows.fetch_add(rows, SeqCst) + rows;
        let next = self.growth.next.load(SeqCst);
        if total < next.max(ANALYZE_CHECK_EVERY)
            || self
                .growth
                .next
                .compare_exchange(next, total + ANALYZE_CHECK_EVERY, SeqCst, SeqCst)
                .is_err()
        {
            return;
        }
        // On the maintenance pool: over large tables ANALYZE may outlast the
        // statement bound. A failure leaves the statistics to autovacuum.
        let stale: std::result::Result<Vec<String>, sqlx::Error> =
            sqlx::query_scalar(STALE_STATISTICS_SQL)
                .bind(ANALYZE_CHECK_EVERY as f64)
                .fetch_all(&self.maintenance)
                .await;
        let refreshed = match stale {
            Ok(tables) if tables.is_empty() => return,
            Ok(tables) => {
                let list = tables
                    .iter()
                    .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
                    .collect::<Vec<_>>()
                    .join(", ");
                sqlx::query(AssertSqlSafe(format!("ANALYZE {list}")))
                    .execute(&self.maintenance)
                    .await
                    .map(|_| ())
            }
            Err(e) => Err(e),
        };
        if let Err(e) = refreshed {
            tracing::warn!(error = %e, "cannot refresh the planner's statistics");
        }
    }

    /// Where the search channels read: the read replica's pool when one is
    /// configured ([`PgStoreConfig::read_url`]), else the primary's.
    pub(crate) fn reads(&self) -> &PgPool {
        self.read.as_ref().unwrap_or(&self.pool)
    }

    /// The connection pool (for tests, maintenance and the porters' SQL).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The schema the store lives in, when one was configured.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// Close every connection; waits until they are returned.
    pub async fn close(&self) {
        self.work_signal.stop();
        self.locks.close().await;
        self.maintenance.close().await;
        if let Some(read) = &self.read {
            read.close().await;
        }
        self.pool.close().await;
    }
}

#[async_trait]
impl StoreRuntime for PgStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn tuning(&self) -> StoreTuning {
        // Several processes may write: locks are the server's, and a batch's keys
        // are taken on one session ([`StoreRuntime::lock_keys`]).
        StoreTuning {
            pipeline_thread: None,
            one_writer_process: false,
            decides_batches: true,
        }
    }

    async fn namespace(&self, slug: &str) -> Result<Option<Namespace>> {
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::namespaces::WITH_OPEN_FORGET,
        ))
        .bind(slug)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        if let Some(r) = &row
            && let Some(doc) = r.try_get::<Option<String>, _>("gated").map_err(db_err)?
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
            .bind(rememberstack_core::ids::NamespaceId::new().to_string())
            .bind(slug)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        let row = sqlx::query(crate::shared(&rememberstack_sql::namespaces::BY_SLUG))
            .bind(slug)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        namespace_row(&row)
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::namespaces::LIST))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(namespace_row).collect()
    }

    async fn change_stamp(&self, ns: NamespaceId) -> Result<u64> {
        self.change_stamp_impl(ns).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>> {
        self.setting_impl(key).await
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.set_setting_impl(key, value).await
    }

    async fn lock_key(&self, key: &str) -> Result<Option<StoreLock>> {
        // Its own key space: the store's transactions take transaction-scoped locks
        // on the same names (`lemma:…`, `entity:…`) while the engine holds these.
        let key = format!("engine:{key}");
        let conn = self.locks.acquire().await.map_err(db_err)?;
        // If this future is dropped while the server is still waiting for the lock,
        // the session may acquire it afterwards: it must never go back to the pool,
        // so the guard closes it unless the wait completes.
        let mut waiting = Waiting(Some(conn));
        let conn = waiting.0.as_mut().expect("held until the wait completes");
        sqlx::query("SELECT pg_advisory_lock(hashtextextended($1, 0))")
            .bind(&key)
            .execute(&mut **conn)
            .await
            .map_err(db_err)?;
        Ok(Some(StoreLock::new(SessionLock {
            conn: waiting.0.take(),
            keys: vec![key],
        })))
    }

    async fn lock_keys(&self, keys: &[String]) -> Result<Option<StoreLock>> {
        let keys: Vec<String> = keys
            .iter()
            .map(|k| format!("engine:{k}"))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if keys.is_empty() {
            return Ok(None);
        }
        let conn = self.locks.acquire().await.map_err(db_err)?;
        let mut waiting = Waiting(Some(conn));
        let conn = waiting.0.as_mut().expect("held until the wait completes");
        // All or none: try every key; if one is held elsewhere, give back the ones
        // taken, wait until that one is free (holding nothing), and try again. A
        // session never waits while it holds part of its set, so holders of
        // overlapping sets never wait on each other crosswise, whatever their order.
        loop {
            let tried: Vec<(String, bool)> = sqlx::query_as(
                "SELECT k, pg_try_advisory_lock(hashtextextended(k, 0))
                   FROM unnest($1::text[]) WITH ORDINALITY AS t(k, i) ORDER BY i",
            )
            .bind(&keys)
            .fetch_all(&mut **conn)
            .await
            .map_err(db_err)?;
            let Some(busy) = tried.iter().find(|(_, got)| !got).map(|(k, _)| k.clone()) else {
                break;
            };
            let taken: Vec<String> = tried
                .into_iter()
                .filter(|(_, got)| *got)
                .map(|(k, _)| k)
                .collect();
            sqlx::query(
                "SELECT pg_advisory_unlock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k",
            )
            .bind(&taken)
            .execute(&mut **conn)
            .await
            .map_err(db_err)?;
            sqlx::query(
                "SELECT pg_advisory_lock(hashtextextended($1, 0)),
                        pg_advisory_unlock(hashtextextended($1, 0))",
            )
            .bind(&busy)
            .execute(&mut **conn)
            .await
            .map_err(db_err)?;
        }
        Ok(Some(StoreLock::new(SessionLock {
            conn: waiting.0.take(),
            keys,
        })))
    }
}

#[async_trait]
impl SourceStore for PgStore {
    async fn create_version(&self, version: NewVersion) -> Result<VersionOutcome> {
        self.create_version_impl(version).await
    }

    async fn version(&self, ns: NamespaceId, id: VersionId) -> Result<Option<VersionRecord>> {
        self.version_impl(ns, id).await
    }

    async fn versions(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<VersionRecord>> {
        self.versions_impl(ns, doc).await
    }

    async fn content(&self, ns: NamespaceId, sha256: &str) -> Result<Vec<u8>> {
        self.content_impl(ns, sha256).await
    }

    async fn commit_prepared(
        &self,
        lease: &Lease,
        prepared: PreparedVersion,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        self.commit_prepared_impl(lease, prepared, follow_up, now)
            .await
    }

    async fn prepared(&self, ns: NamespaceId, id: VersionId) -> Result<Option<PreparedVersion>> {
        self.prepared_impl(ns, id).await
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
        self.commit_chunks_impl(lease, version_id, chunks, carried, follow_up, now)
            .await
    }

    async fn documents(&self, ns: NamespaceId) -> Result<Vec<DocumentRow>> {
        self.documents_impl(ns).await
    }

    async fn document(&self, ns: NamespaceId, doc: DocumentId) -> Result<Option<DocumentRow>> {
        self.document_impl(ns, doc).await
    }

    async fn document_by_ref(
        &self,
        ns: NamespaceId,
        source_kind: &str,
        source_ref: &str,
    ) -> Result<Option<DocumentRow>> {
        self.document_by_ref_impl(ns, source_kind, source_ref).await
    }

    async fn document_names(&self, ns: NamespaceId, doc: DocumentId) -> Result<Vec<String>> {
        self.document_names_impl(ns, doc).await
    }

    async fn sections(&self, ns: NamespaceId, version: VersionId) -> Result<Vec<SectionRow>> {
        self.sections_impl(ns, version).await
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

    async fn chunks(&self, ns: NamespaceId, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>> {
        self.chunks_impl(ns, ids).await
    }

    async fn latest_versions(&self) -> Result<Vec<(NamespaceId, VersionId, Option<SourceFormat>)>> {
        self.latest_versions_impl().await
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

    async fn version_chunks(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Vec<ChunkRecord>> {
        self.version_chunks_impl(ns, version).await
    }
}

#[async_trait]
impl LedgerStore for PgStore {
    fn work_signal(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.work_signal.subscribe()
    }

    async fn enqueue(&self, items: Vec<NewWork>, now: Timestamp) -> Result<u64> {
        self.enqueue_impl(items, now).await
    }

    async fn claim(&self, request: &ClaimRequest) -> Result<Vec<WorkItem>> {
        self.claim_impl(request).await
    }

    async fn complete(&self, lease: &Lease, follow_up: Vec<NewWork>, now: Timestamp) -> Result<()> {
        self.complete_impl(lease, follow_up, now).await
    }

    async fn complete_many(&self, leases: &[Lease], now: Timestamp) -> Result<Vec<Result<()>>> {
        self.complete_many_impl(leases, now).await
    }

    async fn fail(
        &self,
        lease: &Lease,
        error: &str,
        outcome: FailureOutcome,
        now: Timestamp,
    ) -> Result<()> {
        self.fail_impl(lease, error, outcome, now).await
    }

    async fn park(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        self.park_impl(lease, reason, not_before, now).await
    }

    async fn work_item(&self, id: WorkId) -> Result<Option<WorkItem>> {
        self.work_item_impl(id).await
    }

    async fn barrier(
        &self,
        ns: NamespaceId,
        version: VersionId,
        stage: Stage,
    ) -> Result<BarrierStatus> {
        self.barrier_impl(ns, version, stage).await
    }

    async fn work_counts(&self, ns: Option<NamespaceId>) -> Result<Vec<WorkCount>> {
        self.work_counts_impl(ns).await
    }

    async fn unfinished_work_counts(&self, ns: NamespaceId) -> Result<Vec<WorkCount>> {
        self.unfinished_work_counts_impl(ns).await
    }

    async fn work_items(
        &self,
        ns: Option<NamespaceId>,
        status: WorkStatus,
        limit: u32,
    ) -> Result<Vec<WorkItem>> {
        self.work_items_impl(ns, status, limit).await
    }

    async fn replay_dead_letters(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        allowance: u32,
        now: Timestamp,
    ) -> Result<u64> {
        self.replay_dead_letters_impl(ns, stage, allowance, now)
            .await
    }

    async fn expedite_failed(
        &self,
        ns: Option<NamespaceId>,
        stage: Option<Stage>,
        now: Timestamp,
    ) -> Result<u64> {
        self.expedite_failed_impl(ns, stage, now).await
    }

    async fn rearm_stranded_units(&self, now: Timestamp) -> Result<u64> {
        self.rearm_stranded_units_impl(now).await
    }

    async fn next_wakeup(&self) -> Result<Option<Timestamp>> {
        self.next_wakeup_impl().await
    }

    async fn lease_holders(&self, now: Timestamp) -> Result<Vec<LeaseHolder>> {
        self.lease_holders_impl(now).await
    }

    async fn currency_due(&self) -> Result<Vec<(NamespaceId, VersionId)>> {
        self.currency_due_impl().await
    }

    async fn clear_currency_due(&self, ns: NamespaceId, version: VersionId) -> Result<()> {
        self.clear_currency_due_impl(ns, version).await
    }

    async fn record_call(&self, call: CallRecord, now: Timestamp) -> Result<()> {
        self.record_call_impl(call, now).await
    }

    async fn call_costs(&self, ns: NamespaceId) -> Result<Vec<(String, String, u64, u64)>> {
        self.call_costs_impl(ns).await
    }

    async fn defer(
        &self,
        lease: &Lease,
        reason: DeferReason,
        not_before: Timestamp,
        now: Timestamp,
    ) -> Result<()> {
        self.defer_impl(lease, reason, not_before, now).await
    }
}

#[async_trait]
impl SearchStore for PgStore {
    async fn existing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
        keys: &[String],
    ) -> Result<Vec<String>> {
        self.existing_vectors_impl(ns, generation, keys).await
    }

    async fn commit_vectors(
        &self,
        leases: &[Lease],
        ns: NamespaceId,
        generation: &EmbedderIdentity,
        vectors: Vec<(String, Vec<f32>)>,
        now: Timestamp,
    ) -> Result<()> {
        let rows = vectors.len() as u64;
        self.commit_vectors_impl(leases, ns, generation, vectors, now)
            .await?;
        self.grew(rows).await;
        Ok(())
    }

    async fn vector_coverage(&self, ns: NamespaceId, generation: &str) -> Result<VectorCoverage> {
        self.counted_coverage(ns, Target::Chunks, generation).await
    }

    async fn chunks_missing_vectors(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<Vec<ChunkRef>> {
        self.chunks_missing_vectors_impl(ns, generation).await
    }

    async fn search_chunks_lexical(
        &self,
        filter: &ChunkFilter,
        terms: &[String],
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        self.search_chunks_lexical_impl(filter, terms, limit).await
    }

    async fn search_chunks_semantic(
        &self,
        filter: &ChunkFilter,
        generation: &str,
        query: &[f32],
        limit: usize,
    ) -> Result<Vec<ChunkHit>> {
        self.search_chunks_semantic_impl(filter, generation, query, limit)
            .await
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

    async fn fact_vector_coverage(
        &self,
        ns: NamespaceId,
        generation: &str,
    ) -> Result<VectorCoverage> {
        self.counted_coverage(ns, Target::Facts, generation).await
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
}

#[async_trait]
impl ClaimStore for PgStore {
    async fn commit_extractions(
        &self,
        ns: NamespaceId,
        extractions: Vec<(Lease, ExtractionCommit, Vec<NewWork>)>,
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        let rows = extractions
            .iter()
            .map(|(_, e, _)| e.claims.len() as u64)
            .sum();
        let committed = self.commit_extractions_impl(ns, extractions, now).await?;
        self.grew(rows).await;
        Ok(committed)
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
impl IdentityStore for PgStore {
    async fn block_entities(&self, query: &BlockingQuery) -> Result<BlockingResult> {
        self.block_entities_impl(query).await
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

    async fn resolutions_for_many(
        &self,
        ns: NamespaceId,
        references: &[(ClaimId, u32)],
        resolver_version: &str,
    ) -> Result<Vec<ResolutionDecision>> {
        self.resolutions_for_many_impl(ns, references, resolver_version)
            .await
    }

    async fn document_bindings_many(
        &self,
        ns: NamespaceId,
        pairs: &[(DocumentId, String)],
    ) -> Result<Vec<DocumentBinding>> {
        self.document_bindings_many_impl(ns, pairs).await
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

    async fn commit_resolution(
        &self,
        commit: ResolutionCommit,
        now: Timestamp,
    ) -> Result<EntityId> {
        self.commit_resolution_impl(commit, now).await
    }

    async fn commit_resolutions(&self, commits: Vec<ResolutionCommit>) -> Result<Vec<EntityId>> {
        self.commit_resolutions_impl(commits).await
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
    ) -> Result<Vec<rememberstack_core::entities::Mention>> {
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
impl FactStore for PgStore {
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

    #[allow(clippy::too_many_arguments)]
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

    async fn commit_normalizations(
        &self,
        commits: Vec<NormalizationCommit>,
        now: Timestamp,
    ) -> Result<Vec<Result<()>>> {
        self.commit_normalizations_impl(commits, now).await
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
        let applied = self.apply_assertion_impl(ns, commit, now).await?;
        self.grew(1).await;
        Ok(applied)
    }

    async fn apply_assertions(
        &self,
        ns: NamespaceId,
        commits: Vec<ApplyCommit>,
    ) -> Result<Vec<bool>> {
        let n = commits.len() as u64;
        let applied = self.apply_assertions_impl(ns, commits).await?;
        self.grew(n).await;
        Ok(applied)
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

    async fn list_fact_keys(&self, filter: &FactFilter, limit: u32) -> Result<Vec<FactKey>> {
        self.list_fact_keys_impl(filter, limit).await
    }

    async fn facts(&self, ns: NamespaceId, ids: &[FactId]) -> Result<Vec<FactRecord>> {
        self.facts_impl(ns, ids).await
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
impl LifecycleStore for PgStore {
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
        manifest: &rememberstack_core::forget::ForgetManifest,
        now: Timestamp,
    ) -> Result<(rememberstack_core::forget::ForgetReport, Vec<EntityId>)> {
        self.forget_impl(manifest, now).await
    }

    async fn begin_forget(
        &self,
        manifest: &rememberstack_core::forget::ForgetManifest,
        now: Timestamp,
    ) -> Result<()> {
        self.begin_forget_impl(manifest, now).await
    }

    async fn incomplete_forgets(
        &self,
        ns: NamespaceId,
    ) -> Result<Vec<rememberstack_core::forget::ForgetManifest>> {
        self.incomplete_forgets_impl(ns).await
    }

    async fn pending_forgets(&self) -> Result<Vec<rememberstack_core::forget::PendingForget>> {
        self.pending_forgets_impl().await
    }

    async fn manifest_root_warning(&self) -> Result<Option<String>> {
        self.manifest_root_warning_impl().await
    }

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

    async fn put_receipt(&self, receipt: Receipt) -> Result<Receipt> {
        self.put_receipt_impl(receipt).await
    }

    async fn receipt(&self, ns: NamespaceId, id: ReceiptId) -> Result<Option<Receipt>> {
        self.receipt_impl(ns, id).await
    }

    async fn receipt_by_request(
        &self,
        ns: NamespaceId,
        request_id: &str,
    ) -> Result<Option<Receipt>> {
        self.receipt_by_request_impl(ns, request_id).await
    }
}

#[async_trait]
impl KeyStore for PgStore {
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

/// A lock session whose `pg_advisory_lock` has not returned: dropped before it
/// does (a cancelled wait, or an error), the session is closed, never pooled.
struct Waiting(Option<sqlx::pool::PoolConnection<sqlx::Postgres>>);

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut conn) = self.0.take() {
            conn.close_on_drop();
        }
    }
}

/// Session-level advisory locks held on their own connection until dropped.
struct SessionLock {
    conn: Option<sqlx::pool::PoolConnection<sqlx::Postgres>>,
    keys: Vec<String>,
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let keys = std::mem::take(&mut self.keys);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let unlocked = sqlx::query(
                        "SELECT pg_advisory_unlock(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k",
                    )
                    .bind(&keys)
                    .execute(&mut *conn)
                    .await;
                    if unlocked.is_err() {
                        // A session that may still hold the lock never goes back to
                        // the pool: closing it releases every lock it holds.
                        let _ = sqlx::Connection::close(conn.detach()).await;
                    }
                });
            }
            // No runtime to unlock on: closing the session releases the lock.
            Err(_) => conn.close_on_drop(),
        }
    }
}

#[cfg(test)]
mod host_tests {
    use super::multi_host_warning;

    #[test]
    fn the_latest_migration_is_the_shared_schema_version() {
        let latest = super::MIGRATOR.iter().map(|m| m.version).max();
        assert_eq!(latest, Some(rememberstack_sql::SCHEMA_VERSION));
    }

    fn app(host: &str, mode: &str) -> String {
        format!("rememberstack {host} manifests={mode}")
    }

    #[test]
    fn a_second_host_with_a_local_manifest_root_is_warned_about() {
        // Alone, or with peers on this host: nothing to say.
        assert_eq!(multi_host_warning("a", false, &[app("a", "local")]), None);
        // Every process on a shared root: fine.
        assert_eq!(
            multi_host_warning("a", true, &[app("a", "shared"), app("b", "shared")]),
            None
        );
        // This host defaults, another exists: warned, naming the host.
        let w = multi_host_warning("a", false, &[app("b", "shared")]).unwrap();
        assert!(w.contains("(b)") && w.contains("manifest_root"), "{w}");
        // This host is shared, another defaults: warned too.
        assert!(multi_host_warning("a", true, &[app("b", "local")]).is_some());
        // Other applications' sessions are not peers.
        assert_eq!(multi_host_warning("a", false, &["psql".into()]), None);
    }
}

#[cfg(test)]
mod growth_tests {
    use super::*;

    /// The store refreshes a table's planner statistics when the table has
    /// doubled since they were gathered: looked for every 200 rows the process
    /// writes, not between, and a table that grew by less than it held is left.
    #[tokio::test]
    #[allow(clippy::print_stderr)] // says why it skips, like the integration tests
    async fn pg_statistics_are_refreshed_as_a_table_doubles() {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            eprintln!(
                "pg_statistics_are_refreshed_as_a_table_doubles: skipped, DATABASE_URL is not set"
            );
            return;
        };
        let schema = format!("rs_ut_grow_{}", uuid::Uuid::new_v4().simple());
        let store = PgStore::connect_with(
            &url,
            PgStoreConfig {
                max_connections: 2,
                schema: Some(schema.clone()),
                ..PgStoreConfig::default()
            },
        )
        .await
        .unwrap();
        // A table of the store's schema that only this test writes, out of
        // autovacuum's way: the rule covers every table of the schema.
        sqlx::query("CREATE TABLE grow_probe (x integer) WITH (autovacuum_enabled = off)")
            .execute(store.pool())
            .await
            .unwrap();
        let probe = |column: &'static str| {
            let schema = schema.clone();
            let pool = store.pool().clone();
            async move {
                sqlx::query_scalar::<_, i64>(AssertSqlSafe(format!(
                    "SELECT {column} FROM pg_stat_user_tables
                      WHERE schemaname = $1 AND relname = 'grow_probe'"
                )))
                .bind(&schema)
                .fetch_one(&pool)
                .await
                .unwrap()
            }
        };
        // Counters reach the statistics views within about a second.
        let wait_for = |column: &'static str, want: i64| {
            let probe = &probe;
            async move {
                let mut got = probe(column).await;
                for _ in 0..50 {
                    if got >= want {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    got = probe(column).await;
                }
                got
            }
        };
        let insert = |n: i32| {
            let pool = store.pool().clone();
            async move {
                sqlx::query("INSERT INTO grow_probe SELECT generate_series(1, $1)")
                    .bind(n)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        };
        insert(250).await;
        assert_eq!(wait_for("n_mod_since_analyze", 250).await, 250);
        store.grew(ANALYZE_CHECK_EVERY - 1).await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(
            probe("analyze_count").await,
            0,
            "looked before 200 rows were written"
        );
        store.grew(1).await;
        assert_eq!(
            wait_for("analyze_count", 1).await,
            1,
            "a never-analyzed table of 250 rows was left"
        );
        // 200 more rows on 250: not doubled.
        insert(200).await;
        assert_eq!(wait_for("n_mod_since_analyze", 200).await, 200);
        store.grew(ANALYZE_CHECK_EVERY).await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(
            probe("analyze_count").await,
            1,
            "analyzed again before the table doubled"
        );
        // 300 on 250: doubled.
        insert(100).await;
        assert_eq!(wait_for("n_mod_since_analyze", 300).await, 300);
        store.grew(ANALYZE_CHECK_EVERY).await;
        assert_eq!(
            wait_for("analyze_count", 2).await,
            2,
            "not analyzed when the table doubled"
        );
        sqlx::query(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
            .execute(store.pool())
            .await
            .unwrap();
        store.close().await;
    }
}
