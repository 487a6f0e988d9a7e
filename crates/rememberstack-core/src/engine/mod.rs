//! The engine: ingest (E0), the pipeline stages run from the work ledger (E0/E1),
//! hybrid chunk search, document listings and ledger status. One instance is
//! shared by every shell (library, CLI, later the server).

use crate::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use crate::envelope::*;
use crate::fuse::rrf;
use crate::hash::{sha256_hex, sha256_parts};
use crate::ids::*;
use crate::ledger::*;
use crate::source::*;
use crate::store::*;
use crate::text::{self, ChunkParams, SectionRole, SourceFormat};
use crate::time::{Clock, Timestamp};
use crate::{Error, ErrorCode, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

mod config;
mod context;
mod cursor;
mod doctor;
mod extract;
mod facts;
mod ingest;
mod keys;
mod lifecycle;
mod pipeline;
mod primitives;
mod proposals;
mod query_vectors;
mod reads;
mod search;
mod types;

pub use config::EngineConfig;
use cursor::*;
pub use types::*;

pub use context::{
    ClaimsAndSourcesInput, CombinedContextInput, FactsContextInput, OperationDescriptor,
    ReceiptResolution, ResolveEntityInput, ResolvedRecord, TemporalScope, operations,
};
pub use extract::{EXTRACT_NEIGHBOURS, next_current_claims};
pub use facts::{
    EntityDetail, FactModels, FactPage, FactQuery, FactTrace, FactsConfig, TracedEvidence,
    profile_summary, unit_id,
};
pub use lifecycle::{
    AppendReceipt, ConversationMessages, ExportSelection, FactCorrection, FeedbackInput, NoteInput,
    NotePage, PACK_FORMAT, canonical_json,
};
pub use primitives::{
    DocumentFilter, DocumentQuery, DocumentResult, HYDRATE_MAX_RECORDS, HydratedEvidence,
    HydratedRecord, NEIGHBORHOOD_MAX_DEPTH, NEIGHBORHOOD_MAX_EXPANSIONS, NEIGHBORHOOD_MAX_FRONTIER,
    NEIGHBORHOOD_MAX_RESULTS, NeighborhoodRequest, PathResult, RecordRef,
};
pub use proposals::{AUTO_MERGES_PER_PASS, MAX_PROPOSAL_SCAN, MergeProposal};

/// The version of the deterministic embedding-input policy (D80).
pub const EMBED_INPUT_POLICY_VERSION: &str = "embed-input-v1";

/// The setting key holding the component versions last seen on open.
const COMPONENTS_SETTING: &str = "component_versions";

/// The setting key holding the secret that signs continuation cursors.
const CURSOR_SECRET_SETTING: &str = "cursor_secret";

/// The engine.
#[derive(Debug, Clone)]
pub struct Engine {
    store: Arc<dyn MemoryStore>,
    /// The store's tuning, read once when the engine opens.
    tuning: crate::store::StoreTuning,
    embedder: Arc<dyn Embedder>,
    extractor: Option<ExtractorModels>,
    fact_models: FactModels,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    worker_id: String,
    locks: Arc<facts::Locks>,
    bootstrapped: Arc<std::sync::Mutex<HashSet<NamespaceId>>>,
    aggregates: Arc<AggregateCache>,
    /// Whether this engine looked for currency refreshes owed since before it
    /// started (a process killed between a completion and its refresh).
    resumed: Arc<std::sync::atomic::AtomicBool>,
    /// The store's secret that signs continuation cursors, so a client cannot
    /// forge one (e.g. to ask the channels for an arbitrary depth).
    cursor_key: Arc<[u8; 32]>,
    /// Recent queries' vectors: the searches of one operation share one embedding.
    query_vectors: Arc<query_vectors::QueryVectors>,
    /// Per namespace, the change stamp the last idle merge-proposal pass of this
    /// process saw: an unchanged namespace is not scanned again.
    merge_pass_stamps: Arc<std::sync::Mutex<HashMap<NamespaceId, u64>>>,
    /// Whether the idle merge-proposal pass already ran since this process last
    /// ran work.
    merge_pass_idle: Arc<std::sync::atomic::AtomicBool>,
}

/// Read-side aggregates (freshness, vector coverage) per namespace and key, each
/// with the store's change stamp it was computed under: reused while the stamp is
/// unchanged, recomputed as soon as anything relevant is written.
#[derive(Debug, Default)]
struct AggregateCache {
    freshness: Stamped<Freshness>,
    coverage: Stamped<VectorCoverage>,
}

/// Values per (namespace, key), each with the change stamp it was computed under.
type Stamped<V> = std::sync::Mutex<HashMap<(NamespaceId, String), (u64, V)>>;

/// Look `key` up in a stamped cache map.
fn cached<V: Clone>(map: &Stamped<V>, key: &(NamespaceId, String), stamp: u64) -> Option<V> {
    let map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.get(key)
        .filter(|(s, _)| *s == stamp)
        .map(|(_, v)| v.clone())
}

/// Store `value` under `key` with its stamp (the map stays small: one entry per
/// namespace and key).
fn remember_cached<V>(map: &Stamped<V>, key: (NamespaceId, String), stamp: u64, value: V) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.insert(key, (stamp, value));
}

#[derive(Clone)]
enum StageError {
    /// Another worker holds the item now: do nothing.
    LeaseLost,
    /// A failure, retryable or not.
    Failed { message: String, retryable: bool },
}

impl From<Error> for StageError {
    fn from(e: Error) -> Self {
        match e.code() {
            ErrorCode::LeaseLost => StageError::LeaseLost,
            ErrorCode::Provider => StageError::Failed {
                retryable: match &e {
                    Error::Provider(p) => p.is_retryable(),
                    _ => true,
                },
                message: e.to_string(),
            },
            ErrorCode::Store | ErrorCode::Timeout | ErrorCode::Internal => StageError::Failed {
                message: e.to_string(),
                retryable: true,
            },
            _ => StageError::Failed {
                message: e.to_string(),
                retryable: false,
            },
        }
    }
}

impl Engine {
    /// Build an engine over `store` and reconcile the ledger with the configured
    /// components: a changed component version or embedder generation enqueues the
    /// affected stages.
    pub async fn open(
        store: Arc<dyn MemoryStore>,
        providers: Providers,
        clock: Arc<dyn Clock>,
        config: EngineConfig,
    ) -> Result<Self> {
        if config.chunk.token_budget == 0 || config.chunk.anchor_period == 0 {
            return Err(Error::new(
                ErrorCode::Config,
                "chunk token_budget and anchor_period must be positive",
            ));
        }
        if config.claim_limit == 0 || config.grouped_claim_limit == 0 || config.max_k == 0 {
            return Err(Error::new(
                ErrorCode::Config,
                "claim_limit, grouped_claim_limit and max_k must be positive",
            ));
        }
        config
            .fusion
            .validate()
            .map_err(|m| Error::new(ErrorCode::Config, m))?;
        config
            .relevance
            .validate()
            .map_err(|m| Error::new(ErrorCode::Config, m))?;
        let engine = Engine {
            tuning: store.tuning(),
            store,
            embedder: providers.embedder,
            extractor: providers.extractor,
            fact_models: providers.facts,
            clock,
            config,
            worker_id: format!("worker-{}", uuid::Uuid::new_v4().simple()),
            locks: Arc::default(),
            bootstrapped: Arc::default(),
            aggregates: Arc::default(),
            query_vectors: Arc::default(),
            resumed: Arc::default(),
            merge_pass_stamps: Arc::default(),
            merge_pass_idle: Arc::default(),
            cursor_key: Arc::new([0; 32]),
        };
        let engine = Engine {
            cursor_key: Arc::new(engine.cursor_secret().await?),
            ..engine
        };
        engine.reconcile().await?;
        Ok(engine)
    }

    /// Forget the kept query vectors, so the next operation embeds its query as a
    /// question never asked before would (benchmarks time first questions).
    pub fn clear_query_vectors(&self) {
        self.query_vectors.clear();
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// How the store asked to be driven.
    pub fn tuning(&self) -> crate::store::StoreTuning {
        self.tuning
    }

    /// What the envelopes' `freshness.semantic.degraded` says: the kind of a
    /// non-semantic embedder.
    pub(crate) fn semantic_degraded(&self) -> Option<String> {
        self.embedder().degraded().map(|d| d.kind)
    }

    /// Why the configured semantic model is not in use, if it is not.
    pub fn embedder_fallback(&self) -> Option<String> {
        self.embedder().degraded().and_then(|d| d.reason)
    }

    /// The embedder (benchmarks embed their baselines with the same one).
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The relevance curve in force, and whether it was fitted for this embedder
    /// (or configured) rather than borrowed from the default model.
    pub fn relevance_curve(&self) -> (crate::relevance::Calibration, bool) {
        self.config.relevance.curve(self.embedder_identity())
    }

    /// The embedder identity.
    pub fn embedder_identity(&self) -> &EmbedderIdentity {
        self.embedder.identity()
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The component version of each stage under this configuration.
    pub fn component_version(&self, stage: Stage) -> String {
        match stage {
            Stage::Prepare => format!(
                "{}+{}+{}",
                text::CONVERTER_VERSION,
                text::BLOCKIZER_VERSION,
                text::SECTIONER_VERSION
            ),
            Stage::Chunk => format!(
                "{}+{}",
                self.config.chunk.component_version(),
                EMBED_INPUT_POLICY_VERSION
            ),
            Stage::Embed | Stage::EmbedClaims => self.embedder.identity().generation(),
            Stage::Extract => self.extractor_version(),
            Stage::Normalize => self.normalizer_version(),
            Stage::Adjudicate => self.adjudicator_version(),
            Stage::EmbedFacts => self.embedder.identity().generation(),
        }
    }

    /// The store's cursor-signing secret, created on first open. Kept in the store
    /// so every process on it accepts the others' cursors.
    async fn cursor_secret(&self) -> Result<[u8; 32]> {
        let parse = |hex: &str| -> Option<[u8; 32]> {
            let mut key = [0u8; 32];
            if hex.len() != 64 {
                return None;
            }
            for (i, byte) in key.iter_mut().enumerate() {
                *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
            }
            Some(key)
        };
        if let Some(key) = self
            .store
            .setting(CURSOR_SECRET_SETTING)
            .await?
            .as_deref()
            .and_then(parse)
        {
            return Ok(key);
        }
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| Error::internal(format!("no randomness for the cursor secret: {e}")))?;
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        self.store.set_setting(CURSOR_SECRET_SETTING, &hex).await?;
        // Another process may have written its secret first: the stored one wins.
        Ok(self
            .store
            .setting(CURSOR_SECRET_SETTING)
            .await?
            .as_deref()
            .and_then(parse)
            .unwrap_or(key))
    }

    async fn reconcile(&self) -> Result<()> {
        let now = self.clock.now();
        // Testimony never waits forever: a unit that ran while assertions of its
        // version still wait runs again. Opening does not fail over it (another
        // process may hold those rows); the next open tries again.
        match self.store.rearm_stranded_units(now).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(
                units = n,
                "assertions were waiting with no adjudication to decide them: their units run again"
            ),
            Err(e) => tracing::warn!(error = %e, "could not look for waiting assertions"),
        }
        let current: BTreeMap<String, String> = Stage::ALL
            .iter()
            .map(|s| (s.as_str().to_string(), self.component_version(*s)))
            .collect();
        let stored: Option<BTreeMap<String, String>> = self
            .store
            .setting(COMPONENTS_SETTING)
            .await?
            .and_then(|s| serde_json::from_str(&s).ok());
        let Some(stored) = stored else {
            let json =
                serde_json::to_string(&current).map_err(|e| Error::internal(e.to_string()))?;
            return self.store.set_setting(COMPONENTS_SETTING, &json).await;
        };
        let changed = |s: Stage| stored.get(s.as_str()) != current.get(s.as_str());
        let rerun = if changed(Stage::Prepare) {
            Some(Stage::Prepare)
        } else if changed(Stage::Chunk) {
            Some(Stage::Chunk)
        } else {
            None
        };
        if let Some(stage) = rerun {
            let mut work = Vec::new();
            for (ns, version, format) in self.store.latest_versions().await? {
                if format.is_some() {
                    work.push(NewWork::now(
                        ns,
                        stage,
                        version.uuid(),
                        version,
                        self.component_version(stage),
                        now,
                    ));
                }
            }
            let n = self.store.enqueue(work, now).await?;
            tracing::info!(
                stage = stage.as_str(),
                enqueued = n,
                "component changed: re-running stage"
            );
        }
        if rerun.is_none() && changed(Stage::Extract) {
            // A new extractor generation re-extracts the latest version of every lineage;
            // the previous generation's claims retire when it completes (D54).
            let extractor = self.component_version(Stage::Extract);
            let mut work = Vec::new();
            for (ns, version, format) in self.store.latest_versions().await? {
                if format.is_none() {
                    continue;
                }
                for c in self.store.version_chunks(ns, version).await? {
                    work.push(NewWork::now(
                        ns,
                        Stage::Extract,
                        c.chunk_id.uuid(),
                        version,
                        extractor.clone(),
                        now,
                    ));
                }
            }
            let n = self.store.enqueue(work, now).await?;
            tracing::info!(extractor = %extractor, enqueued = n, "extractor changed: re-extracting");
        }
        if rerun.is_none() && !changed(Stage::Extract) && changed(Stage::Normalize) {
            // A new normalizer generation (or a store from before E3) normalizes every
            // current claim again; re-extraction enqueues its own normalization.
            let normalizer = self.component_version(Stage::Normalize);
            let mut total = 0;
            for ns in self.store.namespaces().await? {
                let filter = ClaimFilter {
                    namespace_id: ns.id,
                    include_retired: false,
                    document_id: None,
                    entities: vec![],
                    documents: None,
                };
                let work = self
                    .store
                    .list_claims(&filter, u32::MAX)
                    .await?
                    .into_iter()
                    .filter_map(|c| {
                        let version = c.occurrences.first()?.version_id;
                        Some(NewWork::now(
                            ns.id,
                            Stage::Normalize,
                            c.claim_id.uuid(),
                            version,
                            normalizer.clone(),
                            now,
                        ))
                    })
                    .collect();
                total += self.store.enqueue(work, now).await?;
            }
            tracing::info!(normalizer = %normalizer, enqueued = total, "normalizer changed: normalizing current claims");
        }
        if changed(Stage::Embed) {
            let generation = self.component_version(Stage::Embed);
            let mut total = 0;
            for ns in self.store.namespaces().await? {
                let filter = crate::facts::FactFilter {
                    namespace_id: ns.id,
                    entities: vec![],
                    at: None,
                    history: true,
                    overlap: None,
                    documents: None,
                    group: None,
                    unsupported: false,
                };
                let facts = self.store.list_facts(&filter, u32::MAX).await?;
                let keys: Vec<String> = facts.iter().map(|f| f.embedding_key.clone()).collect();
                let have: HashSet<String> = self
                    .store
                    .existing_vectors(ns.id, &generation, &keys)
                    .await?
                    .into_iter()
                    .collect();
                let mut queued = HashSet::new();
                let work: Vec<NewWork> = facts
                    .into_iter()
                    .filter(|f| {
                        !have.contains(&f.embedding_key) && queued.insert(f.embedding_key.clone())
                    })
                    .map(|f| {
                        // A fact's embedding belongs to no version barrier; the fact id
                        // keeps the row well-formed.
                        NewWork::now(
                            ns.id,
                            Stage::EmbedFacts,
                            f.fact_id.uuid(),
                            VersionId(f.fact_id.uuid()),
                            generation.clone(),
                            now,
                        )
                    })
                    .collect();
                total += self.store.enqueue(work, now).await?;
            }
            for ns in self.store.namespaces().await? {
                let claims = self
                    .store
                    .claims_missing_vectors(ns.id, &generation)
                    .await?
                    .into_iter()
                    .map(|(claim, version)| {
                        NewWork::now(
                            ns.id,
                            Stage::EmbedClaims,
                            claim.uuid(),
                            version,
                            generation.clone(),
                            now,
                        )
                    })
                    .collect();
                total += self.store.enqueue(claims, now).await?;
                let missing = self
                    .store
                    .chunks_missing_vectors(ns.id, &generation)
                    .await?;
                let work = missing
                    .into_iter()
                    .map(|c| {
                        NewWork::now(
                            ns.id,
                            Stage::Embed,
                            c.chunk_id.uuid(),
                            c.version_id,
                            generation.clone(),
                            now,
                        )
                    })
                    .collect();
                total += self.store.enqueue(work, now).await?;
            }
            tracing::info!(generation = %generation, enqueued = total, "embedder generation changed: re-embedding");
        }
        let json = serde_json::to_string(&current).map_err(|e| Error::internal(e.to_string()))?;
        self.store.set_setting(COMPONENTS_SETTING, &json).await
    }
}

enum Outcome {
    Completed,
    Parked,
    /// Put back to wait for a barrier; the attempt does not count.
    Deferred,
}

fn channel(status: &str, candidates: usize, message: Option<String>) -> ChannelReport {
    ChannelReport {
        status: status.to_string(),
        candidates,
        message,
    }
}

fn empty_freshness(generation: String, degraded: Option<String>) -> Freshness {
    Freshness {
        pending_work: BTreeMap::new(),
        parked_no_route: 0,
        dead_letters: 0,
        semantic: SemanticReadiness {
            generation,
            ready: true,
            chunks: 0,
            missing_vectors: 0,
            degraded,
        },
    }
}

/// Run CPU-bound work (conversion, hashing) on the blocking pool, off the async
/// runtime's workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("a blocking task failed: {e}")))?
}

/// Decide the format of an input: the declared kind, else the file extension
/// (a `.json` file holding a conversation is a conversation), else Markdown for
/// text without a name. `None` means no conversion route: the original is parked.
pub fn route(kind: DeclaredKind, file_name: Option<&str>, bytes: &[u8]) -> Option<SourceFormat> {
    match kind {
        DeclaredKind::Format(f) => Some(f),
        DeclaredKind::Auto => {
            let Some(name) = file_name else {
                return Some(SourceFormat::Markdown);
            };
            let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
            match SourceFormat::from_extension(ext) {
                Some(SourceFormat::Json) if text::parse_conversation(bytes).is_ok() => {
                    Some(SourceFormat::Conversation)
                }
                other => other,
            }
        }
    }
}

fn guess_mime(file_name: Option<&str>) -> String {
    let ext = file_name
        .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()))
        .unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "csv" => "text/csv",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
    .to_string()
}

/// The deterministic embedding-input policy (D80): conversation turns embed their
/// body alone; other chunks get a short location header (title › section path).
pub fn embedding_text(title: &str, path: &[String], is_conversation: bool, body: &str) -> String {
    if is_conversation {
        return body.to_string();
    }
    let mut header = String::new();
    let title = title.trim();
    if !title.is_empty() {
        header.push_str(title);
    }
    for p in path {
        if p.trim() == title {
            continue;
        }
        if !header.is_empty() {
            header.push_str(" › ");
        }
        header.push_str(p.trim());
    }
    if header.is_empty() {
        return body.to_string();
    }
    let header: String = header.chars().take(200).collect();
    format!("{header}\n\n{body}")
}

/// The key a chunk's vector is stored under: the embedding text and the policy version.
pub fn embedding_key(embedding_text: &str) -> String {
    sha256_parts([
        EMBED_INPUT_POLICY_VERSION.as_bytes(),
        embedding_text.as_bytes(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing() {
        assert_eq!(
            route(DeclaredKind::Auto, Some("a.md"), b"# x"),
            Some(SourceFormat::Markdown)
        );
        assert_eq!(
            route(DeclaredKind::Auto, Some("page.HTM"), b"<p>x</p>"),
            Some(SourceFormat::Html)
        );
        assert_eq!(route(DeclaredKind::Auto, Some("scan.pdf"), b"%PDF"), None);
        assert_eq!(
            route(
                DeclaredKind::Auto,
                Some("chat.json"),
                br#"[{"speaker":"A","text":"hi"}]"#
            ),
            Some(SourceFormat::Conversation)
        );
        assert_eq!(
            route(DeclaredKind::Auto, Some("data.json"), br#"{"a":1}"#),
            Some(SourceFormat::Json)
        );
        assert_eq!(
            route(DeclaredKind::Auto, None, b"x"),
            Some(SourceFormat::Markdown)
        );
    }

    #[test]
    fn embedding_policy() {
        assert_eq!(embedding_text("T", &[], true, "A: hi"), "A: hi");
        assert_eq!(
            embedding_text("Guide", &["Guide".into(), "Setup".into()], false, "body"),
            "Guide › Setup\n\nbody"
        );
        assert_ne!(embedding_key("a"), embedding_key("b"));
    }

    #[test]
    fn cursor_round_trip_and_rejects_garbage() {
        let key = [7u8; 32];
        let c = Cursor {
            o: 10,
            d: 50,
            q: "abc".into(),
        };
        let back = decode_cursor(&key, &encode_cursor(&key, &c)).unwrap();
        assert_eq!((back.o, back.d, back.q.as_str()), (10, 50, "abc"));
        let refused = |s: &str, key: &[u8; 32]| decode_cursor(key, s).unwrap_err().code();
        assert_eq!(refused("!!!", &key), ErrorCode::InvalidParameter);
        // Another store's cursor.
        assert_eq!(
            refused(&encode_cursor(&[8u8; 32], &c), &key),
            ErrorCode::InvalidParameter
        );
        // A forged depth with the old tag, and the unsigned form of before.
        let good = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encode_cursor(&key, &c))
            .unwrap();
        let tag = &good[good.len() - CURSOR_TAG_BYTES..];
        let mut forged = br#"{"o":10,"d":9999,"q":"abc"}"#.to_vec();
        forged.extend_from_slice(tag);
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged);
        assert_eq!(refused(&forged, &key), ErrorCode::InvalidParameter);
        let unsigned = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"o":10,"d":50,"q":"abc"}"#);
        assert_eq!(refused(&unsigned, &key), ErrorCode::InvalidParameter);
        // A signed cursor past the depth limit is refused too.
        let deep = Cursor {
            o: 0,
            d: crate::limits::MAX_SEARCH_DEPTH + 1,
            q: "abc".into(),
        };
        assert_eq!(
            refused(&encode_cursor(&key, &deep), &key),
            ErrorCode::InvalidParameter
        );
    }

    #[test]
    fn hmac_matches_rfc_4231_case_1() {
        // The key is 20 bytes of 0x0b; HMAC pads a short key with zeros.
        let mut key = [0u8; 32];
        key[..20].fill(0x0b);
        let tag: String = hmac_sha256(&key, b"Hi There")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            tag,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn open_work_counts_what_a_worker_will_still_do() {
        let counts = |pairs: &[(&str, u64)]| {
            pairs
                .iter()
                .map(|(s, n)| (s.to_string(), *n))
                .collect::<BTreeMap<_, _>>()
        };
        let mut status = StatusReport {
            store: "sqlite".into(),
            namespace: "default".into(),
            ledger: BTreeMap::from([
                (
                    "e0.prepare".to_string(),
                    counts(&[("done", 4), ("pending", 2)]),
                ),
                (
                    "e2.extract".to_string(),
                    counts(&[("running", 1), ("failed", 3), ("dead_letter", 5)]),
                ),
            ]),
            parked_no_route: 2,
            dead_letters: vec![],
            embedder: "hashing".into(),
            embedder_fallback: None,
            semantic: SemanticReadiness {
                generation: "hashing".into(),
                ready: true,
                chunks: 0,
                missing_vectors: 0,
                degraded: None,
            },
            documents: 1,
            forget_in_progress: None,
        };
        // Pending, running and failed count; done and dead letters do not; parked
        // originals wait for a route, not for a worker.
        assert_eq!(status.open_work(), 2 + 1 + 3 - 2);
        status.ledger.clear();
        assert_eq!(status.open_work(), 0);
    }
}
