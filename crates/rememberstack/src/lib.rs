//! # RememberStack
//!
//! An embeddable memory engine for AI agents. Give it documents, conversations and
//! notes; it keeps the sources, cuts them into blocks, sections and chunks, embeds
//! them, and answers agents through zero-LLM retrieval operations that return typed,
//! honest envelopes.
//!
//! ```no_run
//! # async fn demo() -> rememberstack::Result<()> {
//! use rememberstack::{IngestOptions, Memory};
//!
//! let memory = Memory::open("memory.db").await?;
//! memory.ingest_text("Ada Lovelace wrote the first program.", IngestOptions::new("notes/ada")).await?;
//! memory.process_until_idle().await?;
//! let envelope = memory.search("who wrote the first program?", 5).await?;
//! for hit in &envelope.results {
//!     println!("{} — {}", hit.document_title, hit.text);
//! }
//! # Ok(()) }
//! ```
//!
//! The embedded store is one SQLite file plus a blob directory beside it; the
//! default embedder is a deterministic hashing embedder that needs no network
//! (configure an OpenAI-compatible one with [`Config`], or, with the
//! `local-embedder` feature, a sentence-embedding model run in-process from a local
//! directory: `provider = "local"`).
#![forbid(unsafe_code)]
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod calls;
mod config;
pub mod defaults;
pub mod models;
pub mod ops;
mod usage;

/// For writing a store: the `MemoryStore` contract (its nine capability traits in
/// `traits`), its record types, and the vocabulary its signatures use (the work
/// ledger, sources, text, claims, entities, facts, forget manifests, keys).
pub mod store {
    pub use rememberstack_core::store::*;
    pub use rememberstack_core::{
        claims, entities, facts, forget, hash, keys, ledger, source, text,
    };
}

/// For writing a provider: the embedder and chat-model ports.
pub mod providers {
    pub use rememberstack_core::chat::*;
    pub use rememberstack_core::embed::*;
}

pub use rememberstack_core::time;

/// The engine itself (feature `internals`); applications use [`Memory`].
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use rememberstack_core::engine::Engine;
#[cfg(not(feature = "internals"))]
use rememberstack_core::engine::Engine;

/// The engine's own modules, for the benchmark harness and the stores'
/// conformance tests (feature `internals`): not part of the supported API.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use rememberstack_core as internals;

pub use config::{Config, StoreConfig, default_db_path};
pub use rememberstack_core::claims::{Precision, Validity, ValidityKind};
pub use rememberstack_core::embed::{Degraded, Embedder, EmbedderIdentity, ProviderError};
pub use rememberstack_core::engine::{
    AppendReceipt, ClaimsAndSourcesInput, CombinedContextInput, ConversationMessages, DeadLetter,
    DoctorReport, DocumentDetail, DocumentFilter, DocumentQuery, DocumentResult, DocumentSummary,
    DrainReport, EngineConfig, EntityDetail, ExportSelection, ExtractorModels, FactCorrection,
    FactModels, FactPage, FactQuery, FactTrace, FactsConfig, FactsContextInput, FeedbackInput,
    HydratedEvidence, HydratedRecord, IngestReceipt, MergeProposal, NeighborhoodRequest, NoteInput,
    NotePage, OperationDescriptor, PACK_FORMAT, PathResult, ProviderCheck, Providers,
    ReceiptResolution, RecordRef, ResolveEntityInput, ResolvedRecord, SearchRequest, StageStats,
    StatusReport, TemporalScope, TracedEvidence, VersionSummary, canonical_json, operations,
};
pub use rememberstack_core::entities::{
    BlockingTier, EntityRecord, MergeEvent, ResolutionDecision,
};
pub use rememberstack_core::envelope::{
    BudgetReport, ChannelReport, ChannelScore, CharSpan, ChunkResult, ClaimResult, ContextBundle,
    Contradiction, EntityResult, Envelope, EvidenceResult, FactResult, Freshness, Grain, Negative,
    OperationInfo, ScopeEcho, Scores, SemanticReadiness, Truncation,
};
pub use rememberstack_core::facts::{AdjudicationRecord, FactKind, FactRecord, PredicateRow};
pub use rememberstack_core::forget::{
    ForgetCheck, ForgetManifest, ForgetReport, ForgetTarget,
    MANIFEST_FORMAT as FORGET_MANIFEST_FORMAT, PendingForget,
};
pub use rememberstack_core::fuse::{Fusion, SemanticScale};
pub use rememberstack_core::ids::*;
pub use rememberstack_core::keys::{ApiKey, KeyScope, generate_secret, hash_secret};
pub use rememberstack_core::ledger::{Stage, WorkCount, WorkStatus};
pub use rememberstack_core::limits;
pub use rememberstack_core::relevance;
pub use rememberstack_core::source::{
    Admission, DeclaredKind, DocumentMetadata, Field, IngestPrincipal, IngestRequest, Origin,
    PrincipalKind, Provenance, VersioningMode,
};
pub use rememberstack_core::store::MemoryStore;
pub use rememberstack_core::store::{
    ClaimRecord, ClaimRetraction, DecisionRecord, DocumentDeletion, FactEvent, FactInvalidation,
    FeedbackRecord, NoteRecord, Occurrence, Receipt, ReceiptSelection,
};
pub use rememberstack_core::text::{
    Conversation, Message, SectionRole, SourceFormat, parse_conversation,
};
pub use rememberstack_core::time::{Clock, SystemClock, Timestamp};
pub use rememberstack_core::{Error, ErrorCode, Result};
/// The in-process sentence-embedding model (feature `local-embedder`).
#[cfg(feature = "local-embedder")]
pub use rememberstack_llm::LocalEmbedder;
/// The static (model2vec-style) embedding table (feature `static-embedder`).
#[cfg(feature = "static-embedder")]
pub use rememberstack_llm::StaticEmbedder;
pub use rememberstack_llm::{
    ChatConfig, ChatSeats, EmbedderConfig, HashingEmbedder, OpenAiChatConfig, OpenAiChatModel,
    OpenAiEmbedder, OpenAiEmbedderConfig, ScriptedChatModel,
};
pub use rememberstack_pg::{PgStore, PgStoreConfig};
pub use rememberstack_sqlite::{DEFAULT_APPROXIMATE_FROM, SqliteStore};
pub use usage::{ProviderUsage, SeatUsage};

/// `path` as a PostgreSQL URL, when it is one (`postgres://` or `postgresql://`):
/// every surface that takes a database path (`--db`, `REMEMBERSTACK_DB`,
/// [`MemoryBuilder::path`]) takes a PostgreSQL URL too.
fn postgres_url(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    (s.starts_with("postgres://") || s.starts_with("postgresql://")).then_some(s)
}

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The namespace used when none is given.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A handle on a memory: an engine plus the namespace this handle reads and writes.
/// Cloning is cheap; clones share the engine.
#[derive(Debug, Clone)]
pub struct Memory {
    engine: Arc<Engine>,
    namespace: String,
    usage: Arc<ProviderUsage>,
}

/// Options for one ingest.
#[derive(Clone, Debug, Default)]
pub struct IngestOptions {
    /// The lineage reference. For files it defaults to the canonical absolute path.
    pub source_ref: Option<String>,
    /// The declared kind (default: detect).
    pub kind: DeclaredKind,
    /// The source time (`asserted_at` of what the source says).
    pub source_time: Option<Timestamp>,
    /// Versioning mode; `None` keeps the lineage's (snapshot for a new one).
    pub mode: Option<VersioningMode>,
    /// Origin (default external).
    pub origin: Origin,
    /// A thread reference.
    pub thread_ref: Option<String>,
    /// Who creates the version (D101), recorded only if a version is created.
    pub principal: Option<IngestPrincipal>,
}

impl IngestOptions {
    /// Options from an ingest's fields as every surface takes them (the CLI's flags,
    /// HTTP's body or query, the MCP tool's arguments, the bindings' keywords): the
    /// declared kind (`auto` when omitted), the source time (RFC 3339), the
    /// versioning mode and a thread reference. The one reading of those fields, so a
    /// bad value is refused with the same code and message everywhere.
    pub fn from_fields(
        source_ref: Option<String>,
        kind: Option<&str>,
        source_time: Option<&str>,
        mode: Option<&str>,
        thread_ref: Option<String>,
    ) -> Result<Self> {
        Ok(IngestOptions {
            source_ref,
            kind: kind
                .map(DeclaredKind::parse)
                .transpose()?
                .unwrap_or_default(),
            source_time: source_time
                .map(|t| time::parse_instant("source_time", t))
                .transpose()?,
            mode: mode.map(VersioningMode::parse).transpose()?,
            thread_ref,
            ..Default::default()
        })
    }

    /// The declared kind of a text ingest: Markdown unless declared.
    pub fn text_kind(&self) -> DeclaredKind {
        match self.kind {
            DeclaredKind::Auto => DeclaredKind::Format(SourceFormat::Markdown),
            k => k,
        }
    }

    /// Options with a lineage reference.
    pub fn new(source_ref: impl Into<String>) -> Self {
        IngestOptions {
            source_ref: Some(source_ref.into()),
            ..Default::default()
        }
    }
    /// Set the declared kind.
    pub fn kind(mut self, kind: SourceFormat) -> Self {
        self.kind = DeclaredKind::Format(kind);
        self
    }
    /// Set the source time.
    pub fn source_time(mut self, t: Timestamp) -> Self {
        self.source_time = Some(t);
        self
    }
    /// Set the versioning mode.
    pub fn mode(mut self, mode: VersioningMode) -> Self {
        self.mode = Some(mode);
        self
    }
}

/// Builds a [`Memory`] over a custom store, embedder or clock.
#[derive(Debug, Default)]
pub struct MemoryBuilder {
    store: Option<Arc<dyn MemoryStore>>,
    path: Option<PathBuf>,
    embedder: Option<Arc<dyn Embedder>>,
    extractor: Option<ExtractorModels>,
    fact_models: Option<FactModels>,
    clock: Option<Arc<dyn Clock>>,
    config: Option<Config>,
    namespace: Option<String>,
}

impl MemoryBuilder {
    /// Use this store.
    pub fn store(mut self, store: Arc<dyn MemoryStore>) -> Self {
        self.store = Some(store);
        self
    }
    /// Use the embedded store at `path`.
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }
    /// Use this embedder (overrides the configuration's).
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }
    /// Run E3 (normalization, T4 resolution, fact adjudication) with these chat models;
    /// a seat left empty runs its offline path (default: from the configuration's
    /// `normalize`, `resolve` and `adjudicate` seats, else offline).
    pub fn fact_models(mut self, models: FactModels) -> Self {
        self.fact_models = Some(models);
        self
    }

    /// Use these chat models for model-backed claim extraction (default: from the
    /// configuration, else the offline extractor).
    pub fn extractor(mut self, models: ExtractorModels) -> Self {
        self.extractor = Some(models);
        self
    }
    /// Use this clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
    /// Use this configuration (default: [`Config::load`]).
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }
    /// The handle's namespace (default `default`).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
    /// Open the memory.
    pub async fn open(self) -> Result<Memory> {
        let config = match self.config {
            Some(c) => c,
            None => Config::load(None)?,
        };
        // (A store passed in was configured by its caller.)
        let embedded = self.store.is_none()
            && self
                .path
                .as_deref()
                .is_none_or(|p| postgres_url(p).is_none());
        if let Some(schema) = &config.store.schema
            && embedded
        {
            return Err(Error::new(
                ErrorCode::Config,
                format!(
                    "a store schema (`{schema}`, from [store] schema or REMEMBERSTACK_PG_SCHEMA) \
                     applies to a PostgreSQL URL only; unset it for the embedded store"
                ),
            ));
        }
        if config.store.read_url.is_some() && embedded {
            return Err(Error::new(
                ErrorCode::Config,
                "a read replica URL ([store] read_url) applies to a PostgreSQL URL only; unset \
                 it for the embedded store",
            ));
        }
        let store: Arc<dyn MemoryStore> = match (self.store, self.path) {
            (Some(s), _) => s,
            (None, Some(p)) if postgres_url(&p).is_some() => {
                let url = postgres_url(&p).unwrap_or_default();
                Arc::new(
                    PgStore::connect_with(
                        url,
                        PgStoreConfig {
                            manifest_root: config.store.manifest_root.clone(),
                            schema: config.store.schema.clone(),
                            statement_timeout: StoreConfig::bound(
                                config.store.statement_timeout,
                                "statement_timeout",
                            )?,
                            lock_timeout: StoreConfig::bound(
                                config.store.lock_timeout,
                                "lock_timeout",
                            )?,
                            read_url: config.store.read_url.clone(),
                            ..PgStoreConfig::default()
                        },
                    )
                    .await?,
                )
            }
            (None, p) => {
                let path = match p {
                    Some(p) => p,
                    None => default_db_path()?,
                };
                let store =
                    SqliteStore::open_with(path, config.store.manifest_root.clone()).await?;
                store.set_approximate_from(config.store.approximate_from);
                Arc::new(store)
            }
        };
        let usage = Arc::new(ProviderUsage::default());
        let embedder: Arc<dyn Embedder> = Arc::new(usage::CountingEmbedder {
            inner: match self.embedder {
                Some(e) => e,
                None => {
                    let progress = models::terminal_progress();
                    rememberstack_llm::resolve_embedder(&config.embedder, progress.as_deref())
                        .await?
                        .embedder
                }
            },
            usage: usage.clone(),
        });
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let namespace = self
            .namespace
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
        rememberstack_core::source::validate_namespace(&namespace)?;
        let seats = match (&self.extractor, &self.fact_models) {
            (Some(_), Some(_)) => None,
            _ => rememberstack_llm::build_chat_models(&config.chat)?,
        };
        let extractor = match self.extractor {
            Some(m) => Some(m),
            None => seats.as_ref().map(extractor_models).transpose()?.flatten(),
        };
        let facts = match self.fact_models {
            Some(m) => m,
            None => seats
                .as_ref()
                .map(|seats| FactModels {
                    normalizer: seats.seat("normalize"),
                    resolver: seats.seat("resolve"),
                    adjudicator: seats.seat("adjudicate"),
                })
                .unwrap_or_default(),
        };
        let extractor = extractor.map(|m| ExtractorModels {
            selection: usage::count_chat(m.selection, "selection", &usage),
            claimify: usage::count_chat(m.claimify, "claimify", &usage),
        });
        let facts = FactModels {
            normalizer: facts
                .normalizer
                .map(|m| usage::count_chat(m, "normalize", &usage)),
            resolver: facts
                .resolver
                .map(|m| usage::count_chat(m, "resolve", &usage)),
            adjudicator: facts
                .adjudicator
                .map(|m| usage::count_chat(m, "adjudicate", &usage)),
        };
        let providers = Providers {
            embedder,
            extractor,
            facts,
        };
        let engine = Engine::open(store, providers, clock, config.engine).await?;
        Ok(Memory {
            engine: Arc::new(engine),
            namespace,
            usage,
        })
    }
}

/// The extractor of the configured chat seats: `selection` and `claimify` are one
/// stage, so both offline (`None`: the offline extractor) or neither.
fn extractor_models(seats: &ChatSeats) -> Result<Option<ExtractorModels>> {
    match (seats.seat("selection"), seats.seat("claimify")) {
        (Some(selection), Some(claimify)) => Ok(Some(ExtractorModels {
            selection,
            claimify,
        })),
        (None, None) => Ok(None),
        (selection, _) => {
            let (offline, online) = match selection {
                None => ("selection", "claimify"),
                Some(_) => ("claimify", "selection"),
            };
            Err(Error::new(
                ErrorCode::Config,
                format!(
                    "chat seats `selection` and `claimify` are one stage (the claim extractor): \
                     `{offline}` is \"{model}\" but `{online}` is not; set both to \"{model}\" \
                     (the offline extractor) or give both a model",
                    model = rememberstack_llm::OFFLINE_MODEL
                ),
            ))
        }
    }
}

impl Memory {
    /// Open the embedded store at `path` with the configuration from the environment
    /// (`REMEMBERSTACK_CONFIG`, `REMEMBERSTACK_*`).
    pub async fn open(path: impl AsRef<Path>) -> Result<Memory> {
        Memory::builder().path(path.as_ref()).open().await
    }

    /// Connect to the PostgreSQL store at `url` (`postgres://user@host:port/db`;
    /// PostgreSQL 16+ with the `vector` extension), with the configuration from the
    /// environment. Its migrations are applied and its forget manifests honoured
    /// before it serves.
    pub async fn connect(url: &str) -> Result<Memory> {
        if postgres_url(Path::new(url)).is_none() {
            return Err(Error::new(
                ErrorCode::Config,
                format!("`{url}` is not a PostgreSQL URL (postgres://user@host:port/database)"),
            ));
        }
        Memory::builder().path(url).open().await
    }

    /// A builder for custom stores and providers.
    pub fn builder() -> MemoryBuilder {
        MemoryBuilder::default()
    }

    /// The same memory, reading and writing namespace `namespace`.
    pub fn with_namespace(&self, namespace: impl Into<String>) -> Result<Memory> {
        let namespace = namespace.into();
        rememberstack_core::source::validate_namespace(&namespace)?;
        Ok(Memory {
            engine: self.engine.clone(),
            namespace,
            usage: self.usage.clone(),
        })
    }

    /// The provider calls (and tokens) this memory's engine has made in this
    /// process: embedder calls and texts, chat calls and tokens, by seat.
    pub fn provider_usage(&self) -> Vec<SeatUsage> {
        self.usage.snapshot()
    }

    /// This handle's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The engine under this handle (feature `internals`). For the benchmark
    /// harness and the stores' conformance tests, which measure and drive its
    /// stages directly; an application has what it needs on `Memory`.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Ingest a file. Without a `source_ref`, the lineage is `("file", canonical
    /// absolute path)`, so re-ingesting an edited file makes a new version. The
    /// source time defaults to the file's modification time.
    pub async fn ingest_file(
        &self,
        path: impl AsRef<Path>,
        options: IngestOptions,
    ) -> Result<IngestReceipt> {
        let path = path.as_ref();
        let canonical = tokio::fs::canonicalize(path).await.map_err(|e| {
            Error::new(
                ErrorCode::NotFound,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        let meta = tokio::fs::metadata(&canonical).await.map_err(|e| {
            Error::new(
                ErrorCode::NotFound,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        if !meta.is_file() {
            return Err(Error::invalid_input(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        let max = self.engine.config().max_source_bytes;
        if meta.len() > max {
            return Err(Error::new(
                ErrorCode::TooLarge,
                format!(
                    "{} is {} bytes, over the maximum source size of {max} bytes",
                    path.display(),
                    meta.len()
                ),
            ));
        }
        let bytes = tokio::fs::read(&canonical).await.map_err(|e| {
            Error::new(
                ErrorCode::NotFound,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        let file_name = canonical
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let modified = meta
            .modified()
            .ok()
            .map(chrono::DateTime::<chrono::Utc>::from);
        let source_ref = options
            .source_ref
            .clone()
            .unwrap_or_else(|| canonical.to_string_lossy().into_owned());
        let mut req = IngestRequest::new(&self.namespace, "file", source_ref, bytes);
        req.kind = options.kind;
        req.file_name = file_name;
        req.file_modified_at = modified;
        self.fill(&mut req, &options);
        self.engine.ingest(req).await
    }

    /// Ingest Markdown (or plain) text under lineage `("text", source_ref)`.
    pub async fn ingest_text(
        &self,
        text: impl Into<String>,
        options: IngestOptions,
    ) -> Result<IngestReceipt> {
        let text = text.into();
        let source_ref = options.source_ref.clone().ok_or_else(|| {
            Error::invalid_input("ingest_text needs a source_ref naming the lineage")
        })?;
        let mut req = IngestRequest::new(&self.namespace, "text", source_ref, text.into_bytes());
        req.kind = options.text_kind();
        self.fill(&mut req, &options);
        self.engine.ingest(req).await
    }

    /// Ingest a conversation under lineage `("conversation", source_ref)`. Each
    /// message becomes one turn block `Speaker: text` and keeps its `event_id`.
    pub async fn ingest_conversation(
        &self,
        conversation: &Conversation,
        options: IngestOptions,
    ) -> Result<IngestReceipt> {
        let source_ref = options.source_ref.clone().ok_or_else(|| {
            Error::invalid_input("ingest_conversation needs a source_ref naming the lineage")
        })?;
        let bytes = serde_json::to_vec(conversation)
            .map_err(|e| Error::invalid_input(format!("conversation: {e}")))?;
        let mut req = IngestRequest::new(&self.namespace, "conversation", source_ref, bytes);
        req.kind = DeclaredKind::Format(SourceFormat::Conversation);
        self.fill(&mut req, &options);
        self.engine.ingest(req).await
    }

    /// Ingest a fully specified request (its namespace is used as given).
    pub async fn ingest(&self, request: IngestRequest) -> Result<IngestReceipt> {
        self.engine.ingest(request).await
    }

    fn fill(&self, req: &mut IngestRequest, options: &IngestOptions) {
        req.source_time = options.source_time;
        req.mode = options.mode;
        req.origin = options.origin;
        req.thread_ref = options.thread_ref.clone();
        req.principal = options.principal.clone();
    }

    /// Run the work ledger continuously with `concurrency` workers in this process
    /// (each claims its own batches under its own lease owner) until `shutdown`
    /// turns true: then no worker claims again, and each finishes the batch it is
    /// running, so nothing it leased is left behind. An idle worker polls every
    /// `idle_poll` (or sooner, when waiting work falls due). Several processes may
    /// run workers on one PostgreSQL store; the ledger hands each item to one of
    /// them. On the embedded store the workers share one thread pinned to the
    /// pipeline CPU (see [`rememberstack_core::affinity`]): they take turns at their
    /// awaits, as SQLite's single writer makes them do anyway. Returns what all
    /// workers did.
    pub async fn run_workers(
        &self,
        concurrency: usize,
        idle_poll: std::time::Duration,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Result<DrainReport> {
        if concurrency == 0 {
            return Err(Error::new(
                ErrorCode::InvalidInput,
                "a worker pool needs at least one worker",
            ));
        }
        let engine = self.engine.clone();
        self.on_pipeline(worker_pool(engine, concurrency, idle_poll, shutdown))
            .await
    }

    /// Run the work ledger in this process until nothing is left to do, waiting
    /// out retry backoffs. Dead letters stay dead (see [`Memory::retry`]).
    pub async fn process_until_idle(&self) -> Result<DrainReport> {
        let engine = self.engine.clone();
        self.on_pipeline(async move {
            let mut total = DrainReport::default();
            // What the last wait reported, and when.
            let mut told: Option<(Vec<(String, u64)>, std::time::Instant)> = None;
            // Work another process enqueues (or a lease it releases) wakes the wait
            // below at once where the store signals it.
            let mut signal = WorkWait::new(&engine);
            loop {
                signal.mark_seen();
                let report = engine.drain().await?;
                total.add(&report);
                let Some(next) = report.next_wakeup else {
                    return Ok(total);
                };
                let now = chrono::Utc::now();
                let wait = (next - now)
                    .to_std()
                    .unwrap_or_default()
                    .min(std::time::Duration::from_secs(60));
                let holders = if wait >= std::time::Duration::from_secs(1) {
                    engine.store().lease_holders(now).await?
                } else {
                    vec![]
                };
                // Never a silent wait: say whose leases hold the work up (a process
                // that ended has none: its leases were released) when that changes,
                // or every 30 s, and look again every two seconds, so the wait ends
                // soon after their work does.
                let summary: Vec<(String, u64)> = holders
                    .iter()
                    .map(|h| (h.holder.clone(), h.items))
                    .collect();
                let tell = !holders.is_empty()
                    && told.as_ref().is_none_or(|(last, at)| {
                        *last != summary || at.elapsed() >= std::time::Duration::from_secs(30)
                    });
                if tell {
                    told = Some((summary, std::time::Instant::now()));
                }
                for h in holders.iter().filter(|_| tell) {
                    tracing::warn!(
                        target: "rememberstack::work",
                        holder = %h.holder,
                        items = h.items,
                        until = %h.until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        "waiting for work leased by another running worker"
                    );
                }
                let wait = if holders.is_empty() {
                    wait
                } else {
                    wait.min(std::time::Duration::from_secs(2))
                };
                signal
                    .wait(wait.max(std::time::Duration::from_millis(20)))
                    .await;
            }
        })
        .await
    }

    /// Drive pipeline work. When the store asks for a pipeline thread of its own
    /// ([`store::StoreTuning::pipeline_thread`]: the embedded store pins it beside its
    /// writer, on more than one CPU), the work runs on such a thread; elsewhere it
    /// runs in place. Dropping the returned future stops the work at its next await,
    /// as in place.
    async fn on_pipeline<T, F>(&self, work: F) -> Result<T>
    where
        F: std::future::Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let Some(prepare) = self.engine.tuning().pipeline_thread else {
            return work.await;
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("rememberstack-pipeline".into())
            .spawn(move || {
                let mut tx = tx;
                prepare();
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(Error::internal(format!(
                            "cannot start the pipeline thread's runtime: {e}"
                        ))));
                        return;
                    }
                };
                runtime.block_on(async move {
                    tokio::select! {
                        out = work => { let _ = tx.send(out); }
                        // The caller went away: stop here, as the work would have in place.
                        _ = tx.closed() => {}
                    }
                });
            })
            .map_err(|e| Error::internal(format!("cannot start the pipeline thread: {e}")))?;
        rx.await
            .map_err(|_| Error::internal("the pipeline thread stopped without an answer"))?
    }

    /// Hybrid chunk search in this handle's namespace, first page of `k` results.
    pub async fn search(&self, query: &str, k: usize) -> Result<Envelope<ChunkResult>> {
        self.engine
            .search(SearchRequest::new(&self.namespace, query, k))
            .await
    }

    /// Hybrid chunk search with every option.
    pub async fn search_with(&self, mut request: SearchRequest) -> Result<Envelope<ChunkResult>> {
        request.namespace = self.namespace.clone();
        self.engine.search(request).await
    }

    /// Hybrid claim search (current testimony) in this handle's namespace.
    pub async fn search_claims(&self, query: &str, k: usize) -> Result<Envelope<ClaimResult>> {
        self.engine
            .search_claims(SearchRequest::new(&self.namespace, query, k))
            .await
    }

    /// Hybrid claim search with every option (`include_retired` for audits).
    pub async fn search_claims_with(
        &self,
        mut request: SearchRequest,
    ) -> Result<Envelope<ClaimResult>> {
        request.namespace = self.namespace.clone();
        self.engine.search_claims(request).await
    }

    /// Claims in this namespace (optionally of one document), newest first.
    pub async fn claims(
        &self,
        document: Option<DocumentId>,
        include_retired: bool,
    ) -> Result<Vec<ClaimRecord>> {
        self.engine
            .claims(&self.namespace, document, include_retired, 10_000)
            .await
    }

    /// The extraction ledger of one document: every keep, drop, accepted claim,
    /// grounding rejection, omission and reuse, in write order.
    pub async fn claim_decisions(&self, document: DocumentId) -> Result<Vec<DecisionRecord>> {
        self.engine.claim_decisions(&self.namespace, document).await
    }

    /// Document lineages in this namespace.
    pub async fn documents(&self) -> Result<Vec<DocumentSummary>> {
        self.engine.documents(&self.namespace).await
    }

    /// One document with its versions and sections.
    pub async fn document(&self, id: DocumentId) -> Result<DocumentDetail> {
        self.engine.document(&self.namespace, id).await
    }

    /// Delete a document lineage (D135): its claims stop being current testimony,
    /// facts it alone supported close (`retracted_source_removal`), facts with other
    /// support stay. Soft and auditable (the original and retired claims remain):
    /// it is not erasure. An unknown or already
    /// deleted id is `document_not_found`. Ingesting the same bytes again later
    /// creates a new version, processed afresh.
    pub async fn delete_document(&self, id: DocumentId) -> Result<DocumentDeletion> {
        self.engine.delete_document(&self.namespace, id).await
    }

    /// Hard-forget a document lineage (D74): erasure, not deletion. A content-free
    /// manifest goes to the manifest root first (`<db>.manifests` by default,
    /// `[store] manifest_root` or `REMEMBERSTACK_MANIFEST_ROOT`); while the forget
    /// is incomplete the namespace refuses every read and write
    /// (`forget_in_progress`). The bytes and everything derived from them are
    /// removed, facts and entities left without support go, receipts resolve as if
    /// the records never existed, and the store files are compacted so no copy of
    /// the text remains. Ingesting the same bytes again is `forgotten_content`.
    /// Opening the store re-honours every manifest, so restoring an older copy of
    /// the database cannot bring the content back. An unknown id, and a repeat
    /// after completion, are `document_not_found`; a repeat after an interruption
    /// finishes the forget.
    pub async fn forget_document(&self, id: DocumentId) -> Result<ForgetReport> {
        self.engine.forget_document(&self.namespace, id).await
    }

    /// Hard-forget a note (every revision of the note lineage `note_id`), as
    /// [`Memory::forget_document`] does.
    pub async fn forget_note(&self, note_id: DocumentId) -> Result<ForgetReport> {
        self.engine.forget_note(&self.namespace, note_id).await
    }

    /// Append messages to the conversation `conversation_ref` (created on first
    /// use). Every message needs an `event_id`; an id already present with the same
    /// speaker and text is skipped (a replayed append is `unchanged`), one holding a
    /// different message is refused (`conflict`) and nothing changes. Each append
    /// that adds messages is a new version; unchanged chunks reuse their claims.
    /// The messages of the conversation `conversation_ref`, in order, exactly as
    /// they were ingested and appended (processed or not yet). An unknown or deleted
    /// conversation is `document_not_found`.
    pub async fn conversation_messages(
        &self,
        conversation_ref: &str,
    ) -> Result<ConversationMessages> {
        self.engine
            .conversation_messages(&self.namespace, conversation_ref)
            .await
    }

    pub async fn append_messages(
        &self,
        conversation_ref: &str,
        messages: Vec<Message>,
    ) -> Result<AppendReceipt> {
        self.engine
            .append_messages(&self.namespace, conversation_ref, messages, None)
            .await
    }

    /// [`Memory::append_messages`] with a source time for messages that carry no
    /// timestamp of their own.
    pub async fn append_messages_at(
        &self,
        conversation_ref: &str,
        messages: Vec<Message>,
        source_time: Timestamp,
    ) -> Result<AppendReceipt> {
        self.engine
            .append_messages(
                &self.namespace,
                conversation_ref,
                messages,
                Some(source_time),
            )
            .await
    }

    /// Correct a fact: invalidate it (`closed_reason = corrected`, an event with
    /// the statement and reason in [`Memory::trace`]) and remember the corrected
    /// statement as a system-origin note, processed like any source, so the
    /// correction has evidence. Run [`Memory::process_until_idle`] to derive its
    /// facts. A `request_id` replays exactly.
    pub async fn correct_fact(
        &self,
        id: FactId,
        statement: &str,
        reason: &str,
        request_id: Option<&str>,
    ) -> Result<FactCorrection> {
        self.engine
            .correct_fact(&self.namespace, id, statement, reason, request_id)
            .await
    }

    /// Remember a note revision (an explicit memory write): idempotent by request
    /// id, refused on a reused request id with other content (`request_conflict`)
    /// or other text under an existing source key and revision
    /// (`revision_conflict`). It starts promoted (archiving the source's earlier
    /// promoted revision) or as a candidate, per [`Memory::set_note_policy`].
    pub async fn remember_note(&self, input: NoteInput) -> Result<NoteRecord> {
        self.engine.remember_note(&self.namespace, input).await
    }

    /// Promote a note revision if its lifecycle version is still `expected_version`.
    pub async fn promote_note(
        &self,
        version: VersionId,
        expected_version: u32,
    ) -> Result<NoteRecord> {
        self.engine
            .transition_note(
                &self.namespace,
                version,
                expected_version,
                Admission::Promoted,
            )
            .await
    }

    /// Revoke a candidate or promoted note revision if its lifecycle version is
    /// still `expected_version`: its text, chunks, the claims only it carried,
    /// vectors and index rows are removed; a tombstone (ids, digests, times)
    /// stays, and the revision can never be remembered again (`revoked`).
    pub async fn revoke_note(
        &self,
        version: VersionId,
        expected_version: u32,
    ) -> Result<NoteRecord> {
        self.engine
            .revoke_note(&self.namespace, version, expected_version)
            .await
    }

    /// Archive a promoted note revision if its lifecycle version is still
    /// `expected_version`: it stops being served.
    pub async fn archive_note(
        &self,
        version: VersionId,
        expected_version: u32,
    ) -> Result<NoteRecord> {
        self.engine
            .transition_note(
                &self.namespace,
                version,
                expected_version,
                Admission::Archived,
            )
            .await
    }

    /// Note revisions' metadata (never text), a page at a time.
    pub async fn list_notes(&self, cursor: Option<&str>, limit: u32) -> Result<NotePage> {
        self.engine.list_notes(&self.namespace, cursor, limit).await
    }

    /// The state new notes start in for this namespace (`promoted` by default).
    pub async fn set_note_policy(&self, start_as: Admission) -> Result<()> {
        self.engine.set_note_policy(&self.namespace, start_as).await
    }

    /// Rate one item (`kind:id`) a recall receipt selected: `useful`, `not_useful`
    /// or `wrong`, with an optional comment. Kept for `feedback_retention`.
    pub async fn feedback(&self, input: FeedbackInput) -> Result<FeedbackRecord> {
        self.engine.feedback(&self.namespace, input).await
    }

    /// Feedback of this namespace (optionally one receipt's), oldest first.
    pub async fn list_feedback(
        &self,
        receipt: Option<ReceiptId>,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>> {
        self.engine
            .list_feedback(&self.namespace, receipt, limit)
            .await
    }

    /// Delete feedback older than the configured retention (every namespace).
    pub async fn prune_feedback(&self) -> Result<u64> {
        self.engine.prune_feedback().await
    }

    /// A canonical JSON memory pack (`rememberstack.pack/v1`): the selected facts,
    /// their current evidence claims with spans, the source documents with content
    /// hashes, the entities, the omissions, and a digest over the rest.
    pub async fn export_pack(&self, selection: &ExportSelection) -> Result<serde_json::Value> {
        self.engine.export_pack(&self.namespace, selection).await
    }

    /// Retract a claim with a reason: it stops being current testimony for good,
    /// support is recounted, and facts it alone supported close
    /// (`retracted_claim`); facts with other support survive. Every fact it evidences
    /// shows the retraction in [`Memory::trace`]. A `request_id` replays exactly; the
    /// same id with another input is `request_conflict`.
    pub async fn retract_claim(
        &self,
        id: ClaimId,
        reason: &str,
        request_id: Option<&str>,
    ) -> Result<ClaimRetraction> {
        self.engine
            .retract_claim(&self.namespace, id, reason, request_id)
            .await
    }

    /// Invalidate a fact with a reason: the belief ends now (`closed_reason =
    /// invalidated`, an event in [`Memory::trace`]). A fact already closed is a
    /// `conflict`; a `request_id` replays exactly.
    pub async fn invalidate_fact(
        &self,
        id: FactId,
        reason: &str,
        request_id: Option<&str>,
    ) -> Result<FactInvalidation> {
        self.engine
            .invalidate_fact(&self.namespace, id, reason, request_id)
            .await
    }

    /// Check the store and every configured provider with one cheap call each.
    pub async fn doctor(&self) -> DoctorReport {
        self.engine.doctor().await
    }

    /// Why the configured semantic embedding model is not in use, when the hashing
    /// embedder stands in for it (the model could not be found, downloaded or
    /// loaded); `None` when the configured embedder runs.
    pub fn embedder_fallback(&self) -> Option<String> {
        self.engine.embedder_fallback()
    }

    /// Ledger status of this namespace.
    pub async fn status(&self) -> Result<StatusReport> {
        self.engine.status(&self.namespace).await
    }

    /// The operation registry: the four assured operations with their input schemas.
    pub fn operations(&self) -> Vec<OperationDescriptor> {
        operations()
    }

    /// Run an operation of the registry by name with its JSON input (the same JSON the
    /// CLI's `operations run --input` and the server take); returns the envelope or
    /// `ContextBundle/v2` as JSON.
    pub async fn run_operation(
        &self,
        name: &str,
        input: serde_json::Value,
    ) -> Result<serde_json::Value> {
        self.engine
            .run_operation(&self.namespace, name, input)
            .await
    }

    /// `resolve_entity`: the entities a name may refer to, ranked; ambiguity explicit.
    pub async fn resolve_entity(
        &self,
        name: &str,
        k: Option<usize>,
    ) -> Result<Envelope<EntityResult>> {
        self.engine
            .resolve_entity(
                &self.namespace,
                ResolveEntityInput {
                    name: name.to_string(),
                    k,
                },
            )
            .await
    }

    /// `claims_and_sources_context`: claims and source chunks for a question.
    pub async fn claims_and_sources_context(
        &self,
        input: ClaimsAndSourcesInput,
    ) -> Result<Envelope<EvidenceResult>> {
        self.engine
            .claims_and_sources_context(&self.namespace, input)
            .await
    }

    /// `facts_context`: relations and observations for a question in a time scope.
    pub async fn facts_context(&self, input: FactsContextInput) -> Result<Envelope<FactResult>> {
        self.engine.facts_context(&self.namespace, input).await
    }

    /// `combined_context`: both context operations as one `ContextBundle/v2`.
    pub async fn combined_context(&self, input: CombinedContextInput) -> Result<ContextBundle> {
        self.engine.combined_context(&self.namespace, input).await
    }

    /// Re-check a recall receipt's records against current authority: their current
    /// texts, or a refusal naming why (`revoked`, `archived`, `superseded`, `changed`,
    /// `missing`).
    pub async fn resolve_receipt(&self, id: ReceiptId) -> Result<ReceiptResolution> {
        self.engine.resolve_receipt(&self.namespace, id).await
    }

    /// A recall receipt as stored: ids, versions, digests, scores and counts; no text.
    pub async fn inspect_receipt(&self, id: ReceiptId) -> Result<Receipt> {
        self.engine.inspect_receipt(&self.namespace, id).await
    }

    /// Records (`fact:…`, `claim:…`, `chunk:…`) with the claims behind them and the
    /// source chunks those come from; zero LLM. Missing records are counted in
    /// `hydration_drops`.
    pub async fn hydrate(&self, records: &[RecordRef]) -> Result<Envelope<HydratedRecord>> {
        self.engine.hydrate(&self.namespace, records).await
    }

    /// The chunks around a chunk in its version (`window` 1–2 on each side), in
    /// document order (D130).
    pub async fn adjacent_chunks(
        &self,
        chunk: ChunkId,
        window: usize,
    ) -> Result<Envelope<ChunkResult>> {
        self.engine
            .adjacent_chunks(&self.namespace, chunk, window)
            .await
    }

    /// Bounded multi-hop traversal over relations from resolved entities.
    pub async fn neighborhood(&self, request: NeighborhoodRequest) -> Result<Envelope<PathResult>> {
        self.engine.neighborhood(&self.namespace, request).await
    }

    /// Documents by name and content, with metadata filters (D134).
    pub async fn search_documents(&self, query: DocumentQuery) -> Result<Envelope<DocumentResult>> {
        self.engine.search_documents(&self.namespace, query).await
    }

    /// Hybrid fact search (live facts; `include_retired` adds closed and superseded ones).
    pub async fn search_facts(&self, query: &str, k: usize) -> Result<Envelope<FactResult>> {
        self.engine
            .search_facts(SearchRequest::new(&self.namespace, query, k))
            .await
    }

    /// Hybrid fact search with every option.
    pub async fn search_facts_with(
        &self,
        mut request: SearchRequest,
    ) -> Result<Envelope<FactResult>> {
        request.namespace = self.namespace.clone();
        self.engine.search_facts(request).await
    }

    /// Entities in this namespace, oldest first (merged ones only with `include_merged`).
    pub async fn entities(&self, include_merged: bool, limit: u32) -> Result<Vec<EntityRecord>> {
        self.engine
            .entities(&self.namespace, include_merged, limit)
            .await
    }

    /// One entity by id or exact name, with its facts, mentions and merges; a merged
    /// id redirects (and says so).
    pub async fn entity(&self, name_or_id: &str) -> Result<EntityDetail> {
        self.engine.entity(&self.namespace, name_or_id).await
    }

    /// Merge entity `from` into `into` (a reversible redirect).
    pub async fn merge_entities(&self, from: EntityId, into: EntityId) -> Result<MergeEvent> {
        self.engine
            .merge_entities(&self.namespace, from, into)
            .await
    }

    /// Undo a merge, restoring the exact prior membership.
    pub async fn unmerge_entities(&self, merge: MergeId) -> Result<MergeEvent> {
        self.engine.unmerge_entities(&self.namespace, merge).await
    }

    /// The merges this namespace's names propose: each one-word name that
    /// abbreviates exactly one longer name (`Marta` → `Marta Ilves`, `Mel` →
    /// `Melanie`), with its rule and reason. Those marked `automatic` the idle
    /// pipeline merges by itself; the others wait for
    /// [`Memory::accept_merge_proposal`] or [`Memory::reject_merge_proposal`].
    pub async fn merge_proposals(&self) -> Result<Vec<MergeProposal>> {
        self.engine.merge_proposals(&self.namespace).await
    }

    /// Accept a proposal: an ordinary merge (undo it with
    /// [`Memory::unmerge_entities`]) whose event records the rule. `not_found`
    /// when the namespace proposes no such merge now.
    pub async fn accept_merge_proposal(
        &self,
        from: EntityId,
        into: EntityId,
    ) -> Result<MergeEvent> {
        self.engine
            .accept_merge_proposal(&self.namespace, from, into)
            .await
    }

    /// Reject a proposal: the two entities become cannot-link and the pair is
    /// never proposed again. Returns the proposal rejected.
    pub async fn reject_merge_proposal(
        &self,
        from: EntityId,
        into: EntityId,
    ) -> Result<MergeProposal> {
        self.engine
            .reject_merge_proposal(&self.namespace, from, into)
            .await
    }

    /// Facts in this namespace: current ones, those holding `at` an instant, or the
    /// whole history.
    pub async fn facts(&self, query: &FactQuery) -> Result<Vec<FactRecord>> {
        self.engine.facts(&self.namespace, query).await
    }

    /// One page of [`Memory::facts`]: pass the page's `cursor` back with the same
    /// query for the next one. Listing every fact goes a page at a time (`limit` is
    /// at most 1,000).
    pub async fn facts_page(&self, query: &FactQuery, cursor: Option<&str>) -> Result<FactPage> {
        self.engine.facts_page(&self.namespace, query, cursor).await
    }

    /// A fact with its evidence claims, adjudication transcripts and the resolution
    /// decisions of its entities.
    pub async fn trace(&self, fact: FactId) -> Result<FactTrace> {
        self.engine.trace(&self.namespace, fact).await
    }

    /// The predicate registry of this namespace.
    pub async fn predicates(&self) -> Result<Vec<PredicateRow>> {
        self.engine.predicates(&self.namespace).await
    }

    /// Replay dead letters in this namespace (optionally of one stage); unless
    /// `dead_letters_only`, failed items waiting for a backoff become due now too.
    pub async fn retry(&self, stage: Option<Stage>, dead_letters_only: bool) -> Result<u64> {
        self.engine
            .retry(Some(&self.namespace), stage, dead_letters_only)
            .await
    }

    // --- API keys: deployment-wide, whatever this handle's namespace.

    /// Create an API key granting `scopes` on `namespaces` (`admin` implies every
    /// scope, `write` implies `ingest`). Returns the key and its secret (`rsk_…`):
    /// the secret is returned this once and never stored — only its SHA-256 is.
    /// No namespace, a malformed namespace, no scope or a bad name is
    /// `invalid_input` and creates nothing.
    pub async fn create_api_key(
        &self,
        namespaces: Vec<String>,
        scopes: Vec<KeyScope>,
        name: Option<String>,
    ) -> Result<(ApiKey, String)> {
        self.engine.create_api_key(namespaces, scopes, name).await
    }

    /// Every API key, revoked ones included, oldest first (no secrets, no hashes).
    pub async fn api_keys(&self) -> Result<Vec<ApiKey>> {
        self.engine.api_keys().await
    }

    /// Revoke an API key by id; revoking twice keeps the first revocation time.
    /// `not_found` for an unknown id.
    pub async fn revoke_api_key(&self, id: &str) -> Result<ApiKey> {
        self.engine.revoke_api_key(id).await
    }

    /// The live key a presented secret belongs to; `None` for an unknown or a
    /// revoked key. Check what it may do with [`ApiKey::allows`].
    pub async fn authenticate_key(&self, secret: &str) -> Result<Option<ApiKey>> {
        self.engine.authenticate_key(secret).await
    }

    /// Whether any API key is live.
    pub async fn has_active_api_keys(&self) -> Result<bool> {
        self.engine.has_active_api_keys().await
    }

    // Deployment-wide reads: the whole store, not this handle's namespace (what a
    // server's readiness, metrics and namespace listing report).

    /// The store's kind: `sqlite` or `postgres`.
    pub fn store_kind(&self) -> &'static str {
        self.engine.store().kind()
    }

    /// The schema version the store is at once open (opening applies its
    /// migrations): the built-in stores' shared version; `None` for a store of
    /// another kind.
    pub fn schema_version(&self) -> Option<i64> {
        matches!(self.store_kind(), "sqlite" | "postgres")
            .then_some(rememberstack_sql::SCHEMA_VERSION)
    }

    /// Every namespace of the store, oldest first.
    pub async fn namespaces(&self) -> Result<Vec<store::Namespace>> {
        self.engine.store().namespaces().await
    }

    /// The forgets that began and have not completed, in any namespace: each keeps
    /// its namespace closed until it is resumed.
    pub async fn pending_forgets(&self) -> Result<Vec<PendingForget>> {
        self.engine.store().pending_forgets().await
    }

    /// The ledger's work items by stage and status, every namespace together.
    pub async fn work_counts(&self) -> Result<Vec<WorkCount>> {
        self.engine.store().work_counts(None).await
    }

    /// The embedder generation this store's vectors are made with
    /// (`provider/model/dDIM/vVERSION`).
    pub fn embedder_generation(&self) -> String {
        self.engine.embedder_identity().generation()
    }
}

/// An idle worker's wait: its poll interval, cut short when the store signals
/// that the ledger changed since the worker last looked (see
/// [`store::LedgerStore::work_signal`]); a store without the signal, or one whose
/// signal is gone, leaves the plain poll.
struct WorkWait(Option<tokio::sync::watch::Receiver<u64>>);

impl WorkWait {
    fn new(engine: &Engine) -> Self {
        WorkWait(engine.store().work_signal())
    }

    /// Call before looking for work: a change after this ends the next wait.
    fn mark_seen(&mut self) {
        if let Some(s) = self.0.as_mut() {
            s.borrow_and_update();
        }
    }

    async fn wait(&mut self, poll: std::time::Duration) {
        let sleep = tokio::time::sleep(poll);
        tokio::pin!(sleep);
        if let Some(s) = self.0.as_mut() {
            tokio::select! {
                _ = &mut sleep => return,
                changed = s.changed() => {
                    if changed.is_ok() {
                        return;
                    }
                    self.0 = None;
                }
            }
        }
        sleep.await;
    }
}

/// `concurrency` ledger workers, each claiming its own batches under its own lease
/// owner, until `shutdown` turns true (see [`Memory::run_workers`]).
async fn worker_pool(
    engine: Arc<Engine>,
    concurrency: usize,
    idle_poll: std::time::Duration,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<DrainReport> {
    let base = format!("worker-{}", uuid::Uuid::new_v4().simple());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..concurrency {
        let engine = engine.clone();
        let owner = format!("{base}-{i}");
        let mut shutdown = shutdown.clone();
        tasks.spawn(async move {
            let mut total = DrainReport::default();
            let mut signal = WorkWait::new(&engine);
            while !*shutdown.borrow() {
                signal.mark_seen();
                let wait = match engine.run_batch(&owner).await {
                    Ok((0, _)) => match engine.next_wakeup().await {
                        Ok(Some(next)) => (next - chrono::Utc::now())
                            .to_std()
                            .unwrap_or_default()
                            .clamp(std::time::Duration::from_millis(20), idle_poll),
                        _ => idle_poll,
                    },
                    Ok((_, report)) => {
                        total.add(&report);
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(worker = %owner, error = %e, "work batch failed");
                        idle_poll
                    }
                };
                tokio::select! {
                    _ = signal.wait(wait) => {}
                    _ = shutdown.changed() => {}
                }
            }
            total
        });
    }
    let mut total = DrainReport::default();
    while let Some(done) = tasks.join_next().await {
        let report = done.map_err(|e| Error::internal(format!("a worker panicked: {e}")))?;
        total.add(&report);
    }
    total.next_wakeup = engine.next_wakeup().await?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_fields_are_read_once_for_every_surface() {
        let o = IngestOptions::from_fields(
            Some("notes/a".into()),
            Some("markdown"),
            Some("2024-05-01T10:00:00Z"),
            Some("living"),
            Some("t1".into()),
        )
        .unwrap();
        assert_eq!(o.kind, DeclaredKind::Format(SourceFormat::Markdown));
        assert_eq!(
            o.source_time.unwrap().to_rfc3339(),
            "2024-05-01T10:00:00+00:00"
        );
        assert_eq!(o.mode, Some(VersioningMode::Living));
        assert_eq!(o.thread_ref.as_deref(), Some("t1"));
        // Omitted: detect, and a text ingest reads Markdown.
        let o = IngestOptions::from_fields(None, None, None, None, None).unwrap();
        assert_eq!(o.kind, DeclaredKind::Auto);
        assert_eq!(o.text_kind(), DeclaredKind::Format(SourceFormat::Markdown));
        for (kind, time, mode) in [
            (Some("spreadsheet"), None, None),
            (None, Some("yesterday"), None),
            (None, None, Some("sometimes")),
        ] {
            let e = IngestOptions::from_fields(None, kind, time, mode, None).unwrap_err();
            assert!(
                matches!(
                    e.code(),
                    ErrorCode::InvalidInput | ErrorCode::InvalidParameter
                ),
                "{e}"
            );
        }
    }

    /// A chat configuration whose endpoint nothing answers (port 9, discard).
    fn chat(model: &str, seats: &[(&str, &str)]) -> ChatConfig {
        ChatConfig::Openai {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: model.into(),
            seats: seats
                .iter()
                .map(|(s, m)| ((*s).to_owned(), (*m).to_owned()))
                .collect(),
            api_key_env: Some("REMEMBERSTACK_TEST_NO_SUCH_KEY".into()),
            strict: None,
            timeout_secs: Some(1),
            temperature: None,
            max_tokens: None,
        }
    }

    #[test]
    fn the_extractor_seats_are_offline_together() {
        let model: Arc<dyn providers::ChatModel> = Arc::new(ScriptedChatModel::new("m"));
        let online = extractor_models(&ChatSeats::new(model.clone())).unwrap();
        assert!(online.is_some_and(|m| m.selection.model() == "m" && m.claimify.model() == "m"));
        let both = ChatSeats::new(model.clone())
            .with_offline_seat("selection")
            .with_offline_seat("claimify");
        assert!(extractor_models(&both).unwrap().is_none());
        assert!(extractor_models(&ChatSeats::offline()).unwrap().is_none());
        for (seats, offline) in [
            (
                ChatSeats::new(model.clone()).with_offline_seat("selection"),
                "`selection` is \"offline\"",
            ),
            (
                ChatSeats::offline().with_seat("selection", model.clone()),
                "`claimify` is \"offline\"",
            ),
        ] {
            let err = extractor_models(&seats).expect_err("one seat offline");
            assert_eq!(err.code(), ErrorCode::Config);
            let text = err.to_string();
            assert!(text.contains(offline), "{text}");
            assert!(
                text.contains("`selection`") && text.contains("`claimify`"),
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn deployment_wide_reads_see_every_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::builder()
            .path(dir.path().join("memory.db"))
            .config(Config {
                embedder: EmbedderConfig::hashing(),
                ..Config::default()
            })
            .namespace("alpha")
            .open()
            .await
            .unwrap();
        let beta = memory.with_namespace("beta").unwrap();
        for (m, text) in [(&memory, "Ada wrote programs."), (&beta, "Bo sails boats.")] {
            m.ingest_text(text, IngestOptions::new("notes/one"))
                .await
                .unwrap();
        }
        assert_eq!(memory.store_kind(), "sqlite");
        let slugs: Vec<String> = beta
            .namespaces()
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.slug)
            .collect();
        assert!(
            slugs.contains(&"alpha".to_string()) && slugs.contains(&"beta".to_string()),
            "{slugs:?}"
        );
        // Both namespaces' pending work, from either handle.
        let pending: u64 = memory
            .work_counts()
            .await
            .unwrap()
            .iter()
            .filter(|c| c.status == WorkStatus::Pending)
            .map(|c| c.count)
            .sum();
        let own: u64 = memory
            .status()
            .await
            .unwrap()
            .ledger
            .values()
            .filter_map(|by_status| by_status.get("pending"))
            .sum();
        assert!(pending > own && own > 0, "{pending} vs {own}");
        assert!(memory.pending_forgets().await.unwrap().is_empty());
        assert!(memory.embedder_generation().starts_with("hashing/"));
    }

    #[tokio::test]
    async fn postgres_only_store_settings_are_refused_for_the_embedded_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let opened = Memory::builder()
            .path(&path)
            .config(Config {
                embedder: EmbedderConfig::hashing(),
                store: StoreConfig {
                    read_url: Some("postgres://rs@replica/memory".to_string()),
                    ..StoreConfig::default()
                },
                ..Config::default()
            })
            .open()
            .await;
        let Err(err) = opened else {
            panic!("a read replica for the embedded store was accepted")
        };
        assert_eq!(err.code(), ErrorCode::Config);
        assert!(err.to_string().contains("read_url"), "{err}");
        assert!(!path.exists(), "the refused store was created");
        // A time bound is a number of seconds from 0 to a day.
        for bad in [
            "statement_timeout = -1",
            "lock_timeout = 1e9",
            "statement_timeout = nan",
        ] {
            let toml = format!("[store]\n{bad}\n");
            assert!(Config::from_toml_str(&toml).is_err(), "{bad}");
        }
        let ok =
            Config::from_toml_str("[store]\nstatement_timeout = 0\nlock_timeout = 0.5\n").unwrap();
        assert_eq!(
            StoreConfig::bound(ok.store.statement_timeout, "statement_timeout").unwrap(),
            None
        );
        assert_eq!(
            StoreConfig::bound(ok.store.lock_timeout, "lock_timeout").unwrap(),
            Some(std::time::Duration::from_millis(500))
        );
    }

    #[tokio::test]
    async fn offline_seats_call_no_model() {
        let dir = tempfile::tempdir().unwrap();
        let open = |chat: ChatConfig| {
            Memory::builder()
                .path(dir.path().join("memory.db"))
                .config(Config {
                    chat,
                    embedder: EmbedderConfig::hashing(),
                    ..Config::default()
                })
                .open()
        };
        // Every seat offline: the endpoint (unreachable) is never called.
        let seats = [
            ("selection", "offline"),
            ("claimify", "offline"),
            ("normalize", "offline"),
            ("resolve", "offline"),
            ("adjudicate", "offline"),
        ];
        for memory in [
            open(chat("some-model", &seats)).await.unwrap(),
            open(chat("offline", &[])).await.unwrap(),
        ] {
            memory
                .ingest_text(
                    "# HR\n\nAlice works for Acme. Alice lives in Lisbon.\n",
                    IngestOptions::new(format!("hr-{}", uuid::Uuid::new_v4())),
                )
                .await
                .unwrap();
            memory.process_until_idle().await.unwrap();
            let report = memory.doctor().await;
            assert!(report.offline_extractor);
            // No seat has a model, so doctor calls none.
            assert!(
                report.checks.iter().all(|c| !c.name.starts_with("chat:")),
                "{:?}",
                report.checks
            );
            assert!(
                memory.provider_usage().iter().all(|u| u.provider != "chat"),
                "{:?}",
                memory.provider_usage()
            );
            assert!(
                !memory
                    .facts(&FactQuery::default())
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
        // One extractor seat offline alone is refused, naming both.
        let err = open(chat("some-model", &[("claimify", "offline")]))
            .await
            .expect_err("refused");
        assert_eq!(err.code(), ErrorCode::Config);
        assert!(err.to_string().contains("`selection`"), "{err}");
    }

    #[tokio::test]
    async fn doctor_checks_every_seat_with_a_model() {
        let dir = tempfile::tempdir().unwrap();
        // Only adjudication has a model, and nothing answers at its endpoint.
        let memory = Memory::builder()
            .path(dir.path().join("memory.db"))
            .config(Config {
                chat: chat(
                    "judge",
                    &[
                        ("selection", "offline"),
                        ("claimify", "offline"),
                        ("normalize", "offline"),
                        ("resolve", "offline"),
                    ],
                ),
                embedder: EmbedderConfig::hashing(),
                ..Config::default()
            })
            .open()
            .await
            .unwrap();
        let report = memory.doctor().await;
        let chat: Vec<_> = report
            .checks
            .iter()
            .filter(|c| c.name.starts_with("chat:"))
            .collect();
        assert_eq!(chat.len(), 1, "{:?}", report.checks);
        assert_eq!(chat[0].name, "chat:adjudicate");
        assert_eq!(chat[0].identity, "judge");
        assert!(!chat[0].ok && chat[0].error.is_some());
        assert!(!report.ok);
        assert!(report.offline_extractor);
    }

    #[tokio::test]
    async fn embedded_processing_runs_on_the_pinned_pipeline_thread() {
        let dir = tempfile::tempdir().unwrap();
        let memory = Memory::open(dir.path().join("memory.db")).await.unwrap();
        let pinned = memory.engine().tuning().pipeline_thread.is_some();
        assert_eq!(
            pinned,
            rememberstack_sqlite::affinity::pipeline_cpu().is_some(),
            "the embedded store pins its writer exactly when the process has a pipeline CPU"
        );
        let thread = memory
            .on_pipeline(async { Ok(std::thread::current().name().map(str::to_owned)) })
            .await
            .unwrap();
        if pinned {
            assert_eq!(thread.as_deref(), Some("rememberstack-pipeline"));
        } else {
            assert_ne!(thread.as_deref(), Some("rememberstack-pipeline"));
        }
        // Processing on it works end to end.
        memory
            .ingest_text("Alice lives in Lisbon.", IngestOptions::new("alice"))
            .await
            .unwrap();
        let report = memory.process_until_idle().await.unwrap();
        assert!(report.completed > 0);
        let error = memory
            .on_pipeline(async { Err::<(), _>(Error::internal("from the pipeline")) })
            .await
            .unwrap_err();
        assert!(error.to_string().contains("from the pipeline"), "{error}");
    }
}
