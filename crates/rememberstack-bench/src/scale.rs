//! `scale`: build a store of about N claims from the deterministic synthetic corpus
//! (see [`crate::synth`]) with the configured pipeline, then measure it: ingest and
//! processing throughput (embedding time apart), per-stage processing time, the
//! latency of the four assured operations and `search`, peak memory and bytes on
//! disk per claim.
//!
//! Items are generated and ingested in batches; after each batch the ledger is run
//! until idle and the namespace's current claims are counted, until there are at
//! least N. A sidecar file beside the database (`<db>.scale.json`) records the
//! generator's parameters and how many items went in, so a kept store (`--db`) can
//! be resumed or reused for a reads-only run. On PostgreSQL the record is a one-row
//! table in the run's schema, and a store is kept when `--schema` names it.

use crate::stores::{BenchStore, StoreChoice};
use crate::synth::{self, Generator, Item, Query};
use crate::{DrainArgs, ScaleArgs, StoreArg, commit};
use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use rememberstack::internals::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use rememberstack::{
    ClaimsAndSourcesInput, CombinedContextInput, FactQuery, FactsContextInput, IngestOptions,
    Memory, MemoryStore, Stage,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The namespace the corpus goes into.
pub const NAMESPACE: &str = "scale";

/// The measured operations, in the order they run for each query.
pub const OPERATIONS: [&str; 5] = [
    "resolve_entity",
    "claims_and_sources_context",
    "facts_context",
    "combined_context",
    "search",
];

/// Results `search` is asked for (the assured operations use their defaults).
const SEARCH_K: usize = 10;

// ---------------------------------------------------------------------------
// Timing embedder
// ---------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Meter {
    nanos: AtomicU64,
    calls: AtomicU64,
    texts: AtomicU64,
}

/// Time spent in one purpose's `embed` calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbedTotals {
    /// Seconds inside `embed`.
    pub secs: f64,
    /// Calls.
    pub calls: u64,
    /// Texts embedded.
    pub texts: u64,
}

/// An [`Embedder`] that forwards to another and sums the wall time of its `embed`
/// calls per [`EmbedPurpose`].
#[derive(Debug)]
pub struct TimingEmbedder {
    inner: Arc<dyn Embedder>,
    document: Meter,
    query: Meter,
}

impl TimingEmbedder {
    /// Wrap `inner`.
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        TimingEmbedder {
            inner,
            document: Meter::default(),
            query: Meter::default(),
        }
    }

    fn meter(&self, purpose: EmbedPurpose) -> &Meter {
        match purpose {
            EmbedPurpose::Document => &self.document,
            EmbedPurpose::Query => &self.query,
        }
    }

    /// Totals so far for `purpose`.
    pub fn totals(&self, purpose: EmbedPurpose) -> EmbedTotals {
        let m = self.meter(purpose);
        EmbedTotals {
            secs: m.nanos.load(Ordering::Relaxed) as f64 / 1e9,
            calls: m.calls.load(Ordering::Relaxed),
            texts: m.texts.load(Ordering::Relaxed),
        }
    }

    /// Nanoseconds spent embedding queries so far.
    pub fn query_nanos(&self) -> u64 {
        self.query.nanos.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl Embedder for TimingEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        self.inner.identity()
    }

    fn is_in_process(&self) -> bool {
        self.inner.is_in_process()
    }

    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }

    fn degraded(&self) -> Option<rememberstack::Degraded> {
        self.inner.degraded()
    }

    async fn embed(
        &self,
        texts: &[String],
        purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        let started = Instant::now();
        let out = self.inner.embed(texts, purpose).await;
        let m = self.meter(purpose);
        m.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        m.calls.fetch_add(1, Ordering::Relaxed);
        m.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        out
    }
}

// ---------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------

/// The nearest-rank `p`-th percentile (0–100) of `sorted` (ascending): the smallest
/// sample with at least `p`% of the samples at or below it. `None` when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Latency statistics in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Timed runs.
    pub runs: usize,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// Statistics of samples in milliseconds (all zero when there are none).
pub fn stats(samples_ms: &[f64]) -> Stats {
    let mut s = samples_ms.to_vec();
    s.sort_by(f64::total_cmp);
    let p = |q| percentile(&s, q).unwrap_or(0.0);
    Stats {
        runs: s.len(),
        p50_ms: p(50.0),
        p95_ms: p(95.0),
        p99_ms: p(99.0),
        mean_ms: if s.is_empty() {
            0.0
        } else {
            s.iter().sum::<f64>() / s.len() as f64
        },
        max_ms: s.last().copied().unwrap_or(0.0),
    }
}

// ---------------------------------------------------------------------------
// Store helpers
// ---------------------------------------------------------------------------

/// The current claims (testimony of current document versions) of the handle's
/// namespace, counted by the store without loading a claim: the count the store
/// keeps for claim-vector coverage (`claim_vector_coverage`, whose `chunks` field
/// counts the current claims).
pub async fn current_claims(memory: &Memory) -> Result<u64> {
    let engine = memory.engine();
    let Some(ns) = engine.store().namespace(memory.namespace()).await? else {
        return Ok(0);
    };
    let generation = engine.component_version(Stage::EmbedClaims);
    Ok(engine
        .store()
        .claim_vector_coverage(ns.id, &generation)
        .await?
        .chunks)
}

/// Every fact of the namespace (current ones, or the whole history), a page at a
/// time: a listing returns at most a page.
pub async fn all_facts(memory: &Memory, history: bool) -> Result<Vec<rememberstack::FactRecord>> {
    let query = FactQuery {
        history,
        ..Default::default()
    };
    let mut facts = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = memory.facts_page(&query, cursor.as_deref()).await?;
        facts.extend(page.facts);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(facts),
        }
    }
}

/// Processing time of one stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTime {
    /// Seconds in batches of this stage.
    pub secs: f64,
    /// Batches.
    pub batches: u64,
    /// Work items the stage's batches claimed.
    pub items: u64,
}

/// What running the ledger until idle did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Processing {
    /// Seconds inside the engine's batches.
    pub busy_secs: f64,
    /// Wall seconds, including claiming work and any backoff waits.
    pub wall_secs: f64,
    /// Work items completed.
    pub completed: u64,
    /// Attempts that failed and were retried.
    pub retried: u64,
    /// Items dead-lettered.
    pub dead_lettered: u64,
    /// Per stage, as the engine's drain report gives it (a batch holds one stage).
    pub stages: BTreeMap<String, StageTime>,
    /// Seconds the worker processes spent embedding documents (they embed outside
    /// this process's meter); zero when this process ran the ledger.
    #[serde(default)]
    pub processes_embedding: EmbedTotals,
}

impl Processing {
    fn add(&mut self, other: &Processing) {
        self.busy_secs += other.busy_secs;
        self.wall_secs += other.wall_secs;
        self.completed += other.completed;
        self.retried += other.retried;
        self.dead_lettered += other.dead_lettered;
        self.processes_embedding.secs += other.processes_embedding.secs;
        self.processes_embedding.calls += other.processes_embedding.calls;
        self.processes_embedding.texts += other.processes_embedding.texts;
        for (k, v) in &other.stages {
            let s = self.stages.entry(k.clone()).or_default();
            s.secs += v.secs;
            s.batches += v.batches;
            s.items += v.items;
        }
    }
}

/// Who runs the ledger after each batch `build` ingests.
#[derive(Clone, Debug)]
pub enum Runner {
    /// This process (`Memory::process_until_idle`).
    Here,
    /// Processes of this benchmark's `drain` command on the same store, started
    /// together: each runs the ledger until no work is left (waiting on the
    /// others' leases), as several `remember worker` processes would.
    Processes {
        /// How many.
        count: usize,
        /// Their arguments after `drain` (how to open the store).
        args: Vec<String>,
        /// Their extra environment.
        env: Vec<(String, String)>,
    },
}

impl Runner {
    /// Worker processes for `store` (`count` 0 is this process).
    pub fn for_store(store: &BenchStore, count: usize) -> Runner {
        if count == 0 {
            return Runner::Here;
        }
        let (args, env) = store.reopen_args();
        Runner::Processes { count, args, env }
    }

    /// How many processes run the ledger.
    pub fn processes(&self) -> usize {
        match self {
            Runner::Here => 1,
            Runner::Processes { count, .. } => *count,
        }
    }

    /// Run the ledger until idle. With worker processes, the stage times are
    /// their sum and the wall time is from the first start to the last exit.
    pub async fn run(&self, memory: &Memory) -> Result<Processing> {
        let Runner::Processes { count, args, env } = self else {
            return process(memory).await;
        };
        let exe = std::env::current_exe().context("finding this benchmark's executable")?;
        let started = Instant::now();
        let mut children = Vec::with_capacity(*count);
        for _ in 0..*count {
            let child = tokio::process::Command::new(&exe)
                .arg("drain")
                .args(args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .with_context(|| format!("starting {} drain", exe.display()))?;
            children.push(child);
        }
        let mut out = Processing::default();
        for child in children {
            let done = child.wait_with_output().await?;
            if !done.status.success() {
                bail!(
                    "a worker process ({} drain) failed: {}",
                    exe.display(),
                    done.status
                );
            }
            let text = String::from_utf8_lossy(&done.stdout);
            let line = text.lines().last().unwrap_or_default();
            let p: Processing = serde_json::from_str(line)
                .with_context(|| format!("reading a worker process's report `{line}`"))?;
            out.add(&p);
        }
        // Throughput counts wall time: the processes ran side by side.
        out.wall_secs = started.elapsed().as_secs_f64();
        out.busy_secs = out.wall_secs;
        Ok(out)
    }
}

/// `store` opened on namespace [`NAMESPACE`] with the configured pipeline, its
/// embedder wrapped in a [`TimingEmbedder`].
async fn open_timed(store: Arc<dyn MemoryStore>) -> Result<(Memory, Arc<TimingEmbedder>)> {
    let configured = Memory::builder()
        .store(store.clone())
        .namespace(NAMESPACE)
        .open()
        .await?;
    let timed = Arc::new(TimingEmbedder::new(configured.engine().embedder().clone()));
    drop(configured);
    let memory = Memory::builder()
        .store(store)
        .embedder(timed.clone())
        .namespace(NAMESPACE)
        .open()
        .await?;
    Ok((memory, timed))
}

/// `rememberstack-bench drain`: one worker process of `scale --worker-processes`.
/// Opens the store with the configured pipeline, runs the ledger until idle and
/// prints what it did as one JSON line.
pub async fn drain(a: DrainArgs) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let bench_store = BenchStore::open(StoreChoice {
        kind: a.store,
        db: a.db.as_deref(),
        schema: a.schema.as_deref(),
        default_path: tmp.path().join("memory.db"),
        purpose: "drain",
        max_connections: 8,
    })
    .await?;
    let (memory, timed) = open_timed(bench_store.store()).await?;
    let mut p = process(&memory).await?;
    p.processes_embedding = timed.totals(EmbedPurpose::Document);
    println!("{}", serde_json::to_string(&p)?);
    Ok(())
}

/// Run the ledger until nothing is left to do (`Memory::process_until_idle`) and
/// take the per-stage times from its report.
pub async fn process(memory: &Memory) -> Result<Processing> {
    let started = Instant::now();
    let report = memory.process_until_idle().await?;
    let mut out = Processing {
        wall_secs: started.elapsed().as_secs_f64(),
        completed: report.completed,
        retried: report.retried,
        dead_lettered: report.dead_lettered,
        ..Processing::default()
    };
    for (stage, s) in &report.stages {
        out.busy_secs += s.secs();
        out.stages.insert(
            stage.clone(),
            StageTime {
                secs: s.secs(),
                batches: s.batches,
                items: s.items,
            },
        );
    }
    Ok(out)
}

/// Peak resident set size of this process in bytes (`VmHWM`), where the platform
/// reports it (Linux).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The 1, 5 and 15-minute load averages (`/proc/loadavg`, Linux): figures taken on
/// a busy machine are slower, and this says how busy it was.
pub fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

// ---------------------------------------------------------------------------
// Sidecar
// ---------------------------------------------------------------------------

/// What a kept store was built from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    /// The generator seed.
    pub seed: u64,
    /// The cast size.
    pub people: usize,
    /// The claim target the generator was made for (it sets the item spacing).
    pub generator_claims_target: usize,
    /// Items ingested so far, in generator order.
    pub items: usize,
    /// Whether turns were lengthened (`--long-turns`).
    #[serde(default)]
    pub long_turns: bool,
}

async fn read_sidecar(store: &BenchStore) -> Result<Option<Sidecar>> {
    store
        .read_record()
        .await?
        .map(|s| {
            serde_json::from_str(&s).with_context(|| format!("reading {}", store.record_location()))
        })
        .transpose()
}

async fn write_sidecar(store: &BenchStore, s: &Sidecar) -> Result<()> {
    store.write_record(&serde_json::to_string_pretty(s)?).await
}

// ---------------------------------------------------------------------------
// Build
// ---------------------------------------------------------------------------

/// What building did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Build {
    /// Batches (ingest, then process until idle, then count).
    pub batches: usize,
    /// Items ingested: documents, one per session or note.
    pub items: usize,
    /// Conversation sessions ingested.
    pub sessions: usize,
    /// Notes ingested.
    pub notes: usize,
    /// Conversation turns ingested.
    pub turns: usize,
    /// Bytes of source text ingested (turn texts and note bodies).
    pub text_bytes: usize,
    /// Seconds in the ingest calls.
    pub ingest_secs: f64,
    /// The ledger runs.
    pub processing: Processing,
}

/// Ingest items from `generator` in batches, running the ledger until idle after
/// each, until the namespace holds at least `target` current claims. `on_batch`
/// sees the generator after each batch (to record progress).
pub async fn build(
    memory: &Memory,
    runner: &Runner,
    generator: &mut Generator,
    target: u64,
    mut on_batch: impl AsyncFnMut(&Generator, u64) -> Result<()>,
) -> Result<Build> {
    let mut out = Build::default();
    let start_claims = current_claims(memory).await?;
    let mut claims = start_claims;
    // Claims per batch: a tenth of the target, 100 to 5,000.
    let batch_goal = (target / 10).clamp(100, 5000);
    // Claims per item, refined after every batch: a long-turn session says many
    // more sentences.
    let mut rate = if generator.has_long_turns() {
        200.0
    } else {
        6.0f64
    };
    while claims < target {
        let goal = (target - claims).min(batch_goal);
        let n = ((goal as f64 / rate).ceil() as usize).max(1);
        for _ in 0..n {
            let item = generator.next_item();
            let t = Instant::now();
            match item {
                Item::Session {
                    source_ref,
                    conversation,
                } => {
                    out.sessions += 1;
                    out.turns += conversation.messages.len();
                    out.text_bytes += conversation
                        .messages
                        .iter()
                        .map(|m| m.text.len())
                        .sum::<usize>();
                    let mut options = IngestOptions::new(source_ref);
                    options.source_time = conversation.session_time;
                    memory.ingest_conversation(&conversation, options).await?;
                }
                Item::Document {
                    source_ref,
                    source_time,
                    text,
                } => {
                    out.notes += 1;
                    out.text_bytes += text.len();
                    memory
                        .ingest_text(
                            text,
                            IngestOptions::new(source_ref).source_time(source_time),
                        )
                        .await?;
                }
            }
            out.ingest_secs += t.elapsed().as_secs_f64();
        }
        out.items += n;
        out.batches += 1;
        let p = runner.run(memory).await?;
        out.processing.add(&p);
        let now = current_claims(memory).await?;
        if now <= claims {
            bail!(
                "a batch of {n} items added no claims ({claims} in namespace `{}`): \
                 the configured extractor yields nothing from the synthetic corpus",
                memory.namespace()
            );
        }
        claims = now;
        rate = (claims - start_claims) as f64 / out.items as f64;
        on_batch(generator, claims).await?;
        println!(
            "batch {}: {n} items, {claims} claims, {:.1} s processing",
            out.batches, p.busy_secs
        );
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Latency
// ---------------------------------------------------------------------------

/// Run operation `op` for `q`.
pub async fn run_operation(memory: &Memory, op: &str, q: &Query) -> Result<()> {
    match op {
        "resolve_entity" => {
            memory.resolve_entity(&q.name, None).await?;
        }
        "claims_and_sources_context" => {
            memory
                .claims_and_sources_context(ClaimsAndSourcesInput {
                    query: q.question.clone(),
                    ..Default::default()
                })
                .await?;
        }
        "facts_context" => {
            memory
                .facts_context(FactsContextInput {
                    query: q.question.clone(),
                    ..Default::default()
                })
                .await?;
        }
        "combined_context" => {
            memory
                .combined_context(CombinedContextInput {
                    query: q.question.clone(),
                    entity_ids: None,
                    temporal_scope: None,
                })
                .await?;
        }
        "search" => {
            memory.search(&q.question, SEARCH_K).await?;
        }
        other => bail!("unknown operation `{other}`"),
    }
    Ok(())
}

/// One operation's latency: the whole call, the query embedding inside it, and the
/// rest (retrieval).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OperationLatency {
    /// The whole call.
    #[serde(flatten)]
    pub total: Stats,
    /// Time in the embedder's `embed` with the query purpose during the call.
    pub query_embedding: Stats,
    /// The call minus its query embedding.
    pub retrieval: Stats,
}

/// Starts the embedded store's approximate indexes (one search of each kind) and
/// waits until they are built; the seconds it took.
async fn index_approximately(
    memory: &Memory,
    store: &rememberstack::SqliteStore,
    queries: &[Query],
) -> Result<f64> {
    let t = Instant::now();
    if let Some(q) = queries.first() {
        run_operation(memory, "combined_context", q).await?;
        run_operation(memory, "search", q).await?;
    }
    store.wait_for_vector_indexes().await;
    Ok(t.elapsed().as_secs_f64())
}

/// Recall@10 of the embedded store's semantic searches (claims and chunks) through
/// its approximate indexes against the exact scan of the same store, over
/// `queries`, with each way's median time. Below the index size both are exact and
/// the recall is 1.
pub async fn approximate_recall(
    memory: &Memory,
    store: &rememberstack::SqliteStore,
    queries: &[Query],
    approximate_from: usize,
) -> Result<Value> {
    use rememberstack::store::text::SectionRole;
    use rememberstack::store::{ChunkFilter, ClaimFilter, SearchStore};
    const K: usize = 10;
    let engine = memory.engine();
    let Some(ns) = engine.store().namespace(memory.namespace()).await? else {
        return Ok(json!(null));
    };
    let generation = engine.component_version(Stage::EmbedClaims);
    let texts: Vec<String> = queries.iter().map(|q| q.question.clone()).collect();
    let vectors = engine
        .embedder()
        .embed(&texts, EmbedPurpose::Query)
        .await
        .map_err(|e| anyhow::anyhow!("embedding the queries: {e}"))?;
    let claims = ClaimFilter {
        namespace_id: ns.id,
        include_retired: false,
        document_id: None,
        entities: vec![],
        documents: None,
    };
    let chunks = ChunkFilter {
        namespace_id: ns.id,
        roles: vec![SectionRole::Body],
        entities: vec![],
        documents: None,
        exact: false,
    };
    // Each query's (claim hits, chunk hits) as (id, score), and the milliseconds of
    // each search.
    type Hits = Vec<(String, f64)>;
    type Run = (Vec<(Hits, Hits)>, Vec<f64>, Vec<f64>);
    let run = async || -> Result<Run> {
        let (mut hits, mut claim_ms, mut chunk_ms) = (Vec::new(), Vec::new(), Vec::new());
        for v in &vectors {
            let t = Instant::now();
            let c = store
                .search_claims_semantic(&claims, &generation, v, K)
                .await?;
            claim_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let k = store
                .search_chunks_semantic(&chunks, &generation, v, K)
                .await?;
            chunk_ms.push(t.elapsed().as_secs_f64() * 1e3);
            hits.push((
                c.iter()
                    .map(|h| (h.claim_id.to_string(), h.score))
                    .collect(),
                k.iter()
                    .map(|h| (h.chunk_id.to_string(), h.score))
                    .collect(),
            ));
        }
        Ok((hits, claim_ms, chunk_ms))
    };
    let (approximate, claim_approx, chunk_approx) = run().await?;
    store.set_approximate_from(0);
    let exact = run().await;
    store.set_approximate_from(approximate_from);
    let (exact, claim_exact, chunk_exact) = exact?;
    // Recall two ways: the exact scan's ids found, and hits scoring at least the exact
    // scan's last (records of equal cosine are equally good answers, and a corpus of
    // templated sentences has many: the exact scan breaks their ties by id).
    let recall = |pick: fn(&(Hits, Hits)) -> &Hits| {
        let (mut ids, mut scores, mut want) = (0usize, 0usize, 0usize);
        for (a, e) in approximate.iter().zip(&exact) {
            let (a, e) = (pick(a), pick(e));
            want += e.len();
            ids += e
                .iter()
                .filter(|(id, _)| a.iter().any(|(x, _)| x == id))
                .count();
            let last = e.last().map_or(f64::INFINITY, |(_, s)| *s);
            scores += a
                .iter()
                .filter(|(_, s)| *s >= last - 1e-6)
                .count()
                .min(e.len());
        }
        let share = |n: usize| {
            if want == 0 {
                1.0
            } else {
                n as f64 / want as f64
            }
        };
        (share(ids), share(scores))
    };
    let (claims_ids, claims_scores) = recall(|p| &p.0);
    let (chunks_ids, chunks_scores) = recall(|p| &p.1);
    Ok(json!({
        "queries": vectors.len(),
        "k": K,
        "claims": {
            "recall_at_10": claims_scores,
            "id_recall_at_10": claims_ids,
            "median_ms": stats(&claim_approx).p50_ms,
            "exact_median_ms": stats(&claim_exact).p50_ms,
        },
        "chunks": {
            "recall_at_10": chunks_scores,
            "id_recall_at_10": chunks_ids,
            "median_ms": stats(&chunk_approx).p50_ms,
            "exact_median_ms": stats(&chunk_exact).p50_ms,
        },
    }))
}

/// Run every query through every operation: `warmup` queries untimed first, then
/// all of them timed.
pub async fn latency(
    memory: &Memory,
    timed: &TimingEmbedder,
    queries: &[Query],
    warmup: usize,
) -> Result<BTreeMap<String, OperationLatency>> {
    for q in queries.iter().take(warmup) {
        for op in OPERATIONS {
            run_operation(memory, op, q).await?;
        }
    }
    let mut samples: BTreeMap<&str, [Vec<f64>; 3]> = BTreeMap::new();
    for q in queries {
        for op in OPERATIONS {
            // Every timed call pays its query's embedding, as a new question does
            // (the engine keeps recent queries' vectors).
            memory.engine().clear_query_vectors();
            let e0 = timed.query_nanos();
            let t = Instant::now();
            run_operation(memory, op, q)
                .await
                .with_context(|| format!("{op} for `{}`", q.question))?;
            let total = t.elapsed().as_secs_f64() * 1e3;
            let embed = (timed.query_nanos() - e0) as f64 / 1e6;
            let s = samples.entry(op).or_default();
            s[0].push(total);
            s[1].push(embed);
            s[2].push((total - embed).max(0.0));
        }
    }
    Ok(samples
        .into_iter()
        .map(|(op, [t, e, r])| {
            (
                op.to_string(),
                OperationLatency {
                    total: stats(&t),
                    query_embedding: stats(&e),
                    retrieval: stats(&r),
                },
            )
        })
        .collect())
}

// ---------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------

fn per_sec(n: f64, secs: f64) -> f64 {
    if secs > 0.0 { n / secs } else { 0.0 }
}

/// `rememberstack-bench scale`.
pub async fn run(a: ScaleArgs) -> Result<Value> {
    if a.claims == 0 {
        bail!("--claims must be at least 1");
    }
    if a.queries == 0 {
        bail!("--queries must be at least 1");
    }
    if a.worker_processes > 0 && a.store != StoreArg::Postgres {
        bail!(
            "--worker-processes applies to --store postgres: the embedded store has one \
             writing process (its worker pool runs inside it)"
        );
    }
    let load_start = load_average();
    let tmp = tempfile::tempdir()?;
    let bench_store = BenchStore::open(StoreChoice {
        kind: a.store,
        db: a.db.as_deref(),
        schema: a.schema.as_deref(),
        default_path: tmp.path().join("memory.db"),
        purpose: "scale",
        max_connections: 8,
    })
    .await?;
    let (mut result, claims) = match build_and_measure(&a, &bench_store, load_start).await {
        Ok(r) => r,
        Err(e) => return bench_store.finish(Err(e)).await,
    };
    // Disk: as the store left it, then closed (and, embedded, checkpointed).
    result["disk"] = bench_store.close_and_measure(claims).await?;
    // The store against the text it was built from (known when the whole corpus is).
    if let Some(text) = result["corpus"]["text_bytes"].as_u64().filter(|b| *b > 0) {
        let total = f(&result["disk"]["bytes_per_claim_with_blobs"]) * claims as f64;
        result["disk"]["source_text_bytes"] = json!(text);
        result["disk"]["times_source_text"] = json!(total / text as f64);
    }
    let json_path = crate::write_results(&a.out, "scale", &result, &markdown(&result))?;
    println!("results in {}", json_path.display());
    Ok(result)
}

/// Build (or resume) the store and measure it; the disk figures are the caller's.
async fn build_and_measure(
    a: &ScaleArgs,
    bench_store: &BenchStore,
    load_start: Option<String>,
) -> Result<(Value, u64)> {
    let (memory, timed) = open_timed(bench_store.store()).await?;
    let engine = memory.engine();
    let status = memory.status().await?;
    let target = a.claims as u64;
    let existing = current_claims(&memory).await?;
    let sidecar = read_sidecar(bench_store).await?;

    // The generator: resumed from the sidecar of a kept store, else fresh.
    let (mut generator, replayed, corpus_known) = match &sidecar {
        Some(s) if existing > 0 => {
            if s.seed != a.seed && existing < target {
                bail!(
                    "the store at {} was built with --seed {}; resume it with that seed or \
                     use a fresh store",
                    bench_store.describe(),
                    s.seed
                );
            }
            if s.long_turns != a.long_turns && existing < target {
                bail!(
                    "the store at {} was built {} --long-turns; resume it the same way or \
                     use a fresh store",
                    bench_store.describe(),
                    if s.long_turns { "with" } else { "without" }
                );
            }
            let mut g = Generator::new(s.seed, s.people, s.generator_claims_target)
                .long_turns(s.long_turns);
            for _ in 0..s.items {
                g.next_item();
            }
            (g, s.items, true)
        }
        None if existing > 0 && existing < target => bail!(
            "the store at {} holds {existing} claims in namespace `{NAMESPACE}` (fewer than \
             --claims {target}) but no build record ({}): it cannot be resumed; use a fresh \
             store",
            bench_store.describe(),
            bench_store.record_location()
        ),
        _ => (
            Generator::new(a.seed, synth::cast_size(a.claims), a.claims).long_turns(a.long_turns),
            0,
            existing == 0,
        ),
    };
    let seed = sidecar
        .as_ref()
        .filter(|_| existing > 0)
        .map_or(a.seed, |s| s.seed);
    let long_turns = sidecar
        .as_ref()
        .filter(|_| existing > 0)
        .map_or(a.long_turns, |s| s.long_turns);
    let config = json!({
        "store": status.store,
        "embedder": status.embedder,
        "extractor": engine.component_version(Stage::Extract),
        "normalizer": engine.component_version(Stage::Normalize),
        "adjudicator": engine.component_version(Stage::Adjudicate),
        "commit": commit(),
        "seed": seed,
        "long_turns": long_turns,
        "claims_target": a.claims,
        "people": generator.people().len(),
        "queries": a.queries,
        "warmup_queries": a.warmup.min(a.queries),
        "namespace": NAMESPACE,
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "db": bench_store.describe(),
    });
    println!("configuration: {config}");

    let chunks_before = status.semantic.chunks;
    let ingest = if existing >= target {
        println!(
            "the store already holds {existing} claims (at least --claims {target}) in \
             namespace `{NAMESPACE}`: ingest skipped, measuring reads only"
        );
        json!({"skipped": true, "existing_claims": existing})
    } else {
        let params = Sidecar {
            seed,
            people: generator.people().len(),
            generator_claims_target: sidecar
                .as_ref()
                .filter(|_| existing > 0)
                .map_or(a.claims, |s| s.generator_claims_target),
            items: replayed,
            long_turns,
        };
        let runner = Runner::for_store(bench_store, a.worker_processes);
        let build = build(&memory, &runner, &mut generator, target, async |g, _| {
            write_sidecar(
                bench_store,
                &Sidecar {
                    items: g.counts().items,
                    ..params.clone()
                },
            )
            .await
        })
        .await?;
        let claims_now = current_claims(&memory).await?;
        let chunks_now = memory.status().await?.semantic.chunks;
        let p = &build.processing;
        let mut embed = timed.totals(EmbedPurpose::Document);
        embed.secs += p.processes_embedding.secs;
        embed.calls += p.processes_embedding.calls;
        embed.texts += p.processes_embedding.texts;
        // Worker processes embed side by side: "excluding embedding" takes out an
        // average process's share of it.
        let embed_wall = embed.secs / runner.processes() as f64;
        let build_secs = build.ingest_secs + p.busy_secs;
        let staged_secs: f64 = p.stages.values().map(|v| v.secs).sum();
        let new_claims = (claims_now - existing) as f64;
        let new_chunks = chunks_now.saturating_sub(chunks_before) as f64;
        let stage_shares: BTreeMap<&str, Value> = p
            .stages
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    json!({
                        "secs": v.secs,
                        "share": per_sec(v.secs, staged_secs),
                        "batches": v.batches,
                        "items": v.items,
                    }),
                )
            })
            .collect();
        json!({
            "skipped": false,
            "resumed_from_items": replayed,
            "batches": build.batches,
            "documents": build.items,
            "sessions": build.sessions,
            "notes": build.notes,
            "turns": build.turns,
            "text_bytes": build.text_bytes,
            "claims": claims_now - existing,
            "chunks": chunks_now.saturating_sub(chunks_before),
            "ingest_secs": build.ingest_secs,
            "process_secs": p.busy_secs,
            "process_wall_secs": p.wall_secs,
            "worker_processes": a.worker_processes,
            "build_secs": build_secs,
            "embedding": {"document": embed},
            "work": {
                "completed": p.completed,
                "retried": p.retried,
                "dead_lettered": p.dead_lettered,
            },
            "stages": stage_shares,
            "rates": {
                "documents_per_sec": per_sec(build.items as f64, build_secs),
                "chunks_per_sec": per_sec(new_chunks, build_secs),
                "claims_per_sec": per_sec(new_claims, build_secs),
                "turns_per_sec": per_sec(build.turns as f64, build_secs),
                "text_bytes_per_sec": per_sec(build.text_bytes as f64, build_secs),
                "turns_per_sec_excluding_embedding":
                    per_sec(build.turns as f64, build_secs - embed_wall),
                "claims_per_sec_excluding_embedding":
                    per_sec(new_claims, build_secs - embed_wall),
            },
        })
    };
    let peak_after_build = peak_rss_bytes();

    // What the store holds.
    let status = memory.status().await?;
    let claims = current_claims(&memory).await?;
    let entities = memory.entities(false, u32::MAX).await?.len();
    let facts = all_facts(&memory, false).await?;
    let relations = facts.iter().filter(|f| f.predicate.is_some()).count();
    let mut corpus = if corpus_known {
        serde_json::to_value(generator.counts())?
    } else {
        json!({"generated": "unknown: the store was built without a sidecar"})
    };
    corpus["store"] = json!({
        "documents": status.documents,
        "chunks": status.semantic.chunks,
        "claims": claims,
        "entities": entities,
        "facts": facts.len(),
        "relation_facts": relations,
        "observation_facts": facts.len() - relations,
    });

    // Latency, once the embedded store's approximate indexes are built (a first
    // search starts them; searches scan exactly until they are ready).
    let queries = generator.queries(a.queries, seed);
    let approximate_from = a
        .approximate_from
        .unwrap_or(rememberstack::DEFAULT_APPROXIMATE_FROM);
    let indexes = match bench_store {
        BenchStore::Sqlite { store, .. } => {
            store.set_approximate_from(approximate_from);
            Some(index_approximately(&memory, store, &queries).await?)
        }
        BenchStore::Postgres { .. } => None,
    };
    let lat = latency(&memory, &timed, &queries, a.warmup).await?;
    let approximate = match (bench_store, indexes) {
        (BenchStore::Sqlite { store, .. }, Some(build_secs)) => {
            let mut r = approximate_recall(&memory, store, &queries, approximate_from).await?;
            r["approximate_from"] = json!(approximate_from);
            r["index_build_secs"] = json!(build_secs);
            r["indexes"] = json!(
                store
                    .vector_indexes()
                    .await
                    .into_iter()
                    .map(|(_, table, records)| json!({"table": table, "records": records}))
                    .collect::<Vec<_>>()
            );
            r
        }
        _ => {
            json!({"store": "postgres: pgvector's HNSW indexes (the exact flag is not measured here)"})
        }
    };
    let peak = peak_rss_bytes();

    let memory_json = match (peak_after_build, peak) {
        (Some(b), Some(p)) => json!({"peak_rss_bytes_after_build": b, "peak_rss_bytes": p,
                                     "source": "VmHWM in /proc/self/status",
                                     "scope": bench_store.memory_scope()}),
        _ => json!({"peak_rss_bytes": "unavailable"}),
    };
    let host = json!({
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "load_average_start": load_start,
        "load_average_end": load_average(),
    });
    Ok((
        json!({
            "config": config,
            "host": host,
            "corpus": corpus,
            "ingest": ingest,
            "latency": lat,
            "approximate": approximate,
            "memory": memory_json,
        }),
        claims,
    ))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// The Markdown report of a `scale.json` value.
pub fn markdown(r: &Value) -> String {
    let c = &r["config"];
    let mut md = format!(
        "Scale run: {} claims target, seed {}, {} store, embedder {}, extractor {}, commit {}, {} build.\n\n",
        c["claims_target"],
        c["seed"],
        c["store"].as_str().unwrap_or("?"),
        c["embedder"].as_str().unwrap_or("?"),
        c["extractor"].as_str().unwrap_or("?"),
        c["commit"].as_str().unwrap_or("?"),
        c["profile"].as_str().unwrap_or("?"),
    );
    let h = &r["host"];
    md.push_str(&format!(
        "Host: {} CPUs, load average {} at the start, {} at the end.\n\n",
        h["cpus"],
        h["load_average_start"].as_str().unwrap_or("unavailable"),
        h["load_average_end"].as_str().unwrap_or("unavailable"),
    ));
    let s = &r["corpus"]["store"];
    md.push_str(&format!(
        "Store: {} documents, {} chunks, {} claims, {} entities, {} facts ({} relations).\n\n",
        s["documents"], s["chunks"], s["claims"], s["entities"], s["facts"], s["relation_facts"]
    ));
    let i = &r["ingest"];
    if i["skipped"].as_bool() == Some(true) {
        md.push_str("Ingest skipped: the store already held the target claim count.\n\n");
    } else {
        let rates = &i["rates"];
        md.push_str(
            "| documents | turns | text KB | claims | ingest s | processing s | embedding s | claims/s | turns/s | text KB/s | turns/s excl. embedding | chunks/s | documents/s |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        md.push_str(&format!(
            "| {} | {} | {:.0} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} |\n\n",
            i["documents"],
            i["turns"],
            f(&i["text_bytes"]) / 1000.0,
            i["claims"],
            f(&i["ingest_secs"]),
            f(&i["process_secs"]),
            f(&i["embedding"]["document"]["secs"]),
            f(&rates["claims_per_sec"]),
            f(&rates["turns_per_sec"]),
            f(&rates["text_bytes_per_sec"]) / 1000.0,
            f(&rates["turns_per_sec_excluding_embedding"]),
            f(&rates["chunks_per_sec"]),
            f(&rates["documents_per_sec"]),
        ));
        if let Some(stages) = i["stages"].as_object() {
            md.push_str("| stage | seconds | share | batches | items |\n|---|---|---|---|---|\n");
            for (k, v) in stages {
                md.push_str(&format!(
                    "| {k} | {:.1} | {:.1}% | {} | {} |\n",
                    f(&v["secs"]),
                    100.0 * f(&v["share"]),
                    v["batches"],
                    v["items"]
                ));
            }
            md.push('\n');
        }
    }
    md.push_str(
        "| operation | runs | p50 ms | p95 ms | p99 ms | mean ms | query embedding mean ms | retrieval p50 ms | retrieval p95 ms |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for op in OPERATIONS {
        let l = &r["latency"][op];
        md.push_str(&format!(
            "| {op} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.2} | {:.2} |\n",
            l["runs"],
            f(&l["p50_ms"]),
            f(&l["p95_ms"]),
            f(&l["p99_ms"]),
            f(&l["mean_ms"]),
            f(&l["query_embedding"]["mean_ms"]),
            f(&l["retrieval"]["p50_ms"]),
            f(&l["retrieval"]["p95_ms"]),
        ));
    }
    let x = &r["approximate"];
    if x["claims"].is_object() {
        let indexed: Vec<String> = x["indexes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| format!("{} {}", i["table"].as_str().unwrap_or("?"), i["records"]))
                    .collect()
            })
            .unwrap_or_default();
        md.push_str(&format!(
            "\nApproximate vector indexes: {} (built in {:.1} s). Semantic top-{} against the \
             exact scan over {} queries (ties at the cut counted found; ids alone in \
             brackets): claims recall {:.3} [{:.3}] (median {:.2} ms, exact {:.2} ms), chunks \
             recall {:.3} [{:.3}] (median {:.2} ms, exact {:.2} ms).\n",
            if indexed.is_empty() {
                "none (every table below the size)".to_string()
            } else {
                indexed.join(", ")
            },
            f(&x["index_build_secs"]),
            x["k"],
            x["queries"],
            f(&x["claims"]["recall_at_10"]),
            f(&x["claims"]["id_recall_at_10"]),
            f(&x["claims"]["median_ms"]),
            f(&x["claims"]["exact_median_ms"]),
            f(&x["chunks"]["recall_at_10"]),
            f(&x["chunks"]["id_recall_at_10"]),
            f(&x["chunks"]["median_ms"]),
            f(&x["chunks"]["exact_median_ms"]),
        ));
    }
    let m = &r["memory"];
    let d = &r["disk"];
    let peak = match m["peak_rss_bytes"].as_u64() {
        Some(b) => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
        None => "unavailable".to_string(),
    };
    md.push_str(&format!(
        "\nPeak memory (VmHWM): {peak}. Disk: {:.0} bytes per claim (database, checkpointed), \
         {:.0} with the blob directory.\n",
        f(&d["bytes_per_claim"]),
        f(&d["bytes_per_claim_with_blobs"]),
    ));
    if let Some(times) = d["times_source_text"].as_f64() {
        md.push_str(&format!(
            "The store is {times:.1}× its source text ({:.1} MB of turns and notes).\n",
            f(&d["source_text_bytes"]) / 1e6
        ));
    }
    md.push_str(&table_sizes_md(d));
    md
}

/// The per-table size report: every table's rows and indexes, in bytes per claim
/// and as a share of the store.
fn table_sizes_md(disk: &Value) -> String {
    let Some(tables) = disk["tables"].as_array().filter(|t| !t.is_empty()) else {
        return String::new();
    };
    let claims = disk["claims"].as_u64().unwrap_or(0).max(1) as f64;
    let bytes = |t: &Value, k: &str| t[k].as_u64().unwrap_or(0) as f64;
    let total: f64 = tables
        .iter()
        .map(|t| bytes(t, "table_bytes") + bytes(t, "index_bytes"))
        .sum();
    let mut md = String::from(
        "\n| table | rows (bytes/claim) | indexes (bytes/claim) | share |\n|---|---|---|---|\n",
    );
    for t in tables {
        let (rows, idx) = (bytes(t, "table_bytes"), bytes(t, "index_bytes"));
        if rows + idx == 0.0 {
            continue;
        }
        md.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.1}% |\n",
            t["table"].as_str().unwrap_or("?"),
            rows / claims,
            idx / claims,
            100.0 * (rows + idx) / total.max(1.0),
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-table report lists the claims and vectors tables with bytes, and its
    /// rows account for most of the store's `total` bytes and no more; returns
    /// their sum.
    fn assert_tables_accounted(disk: &Value, total: u64) -> u64 {
        let tables = disk["tables"].as_array().expect("a per-table report");
        let size =
            |t: &Value| t["table_bytes"].as_u64().unwrap() + t["index_bytes"].as_u64().unwrap();
        for name in ["claims", "vectors"] {
            let t = tables.iter().find(|t| t["table"] == name);
            assert!(t.is_some_and(|t| size(t) > 0), "{name}: {tables:?}");
        }
        let sum: u64 = tables.iter().map(size).sum();
        assert!(sum <= total && sum * 2 >= total, "{sum} of {total}");
        assert!(table_sizes_md(disk).contains("| claims |"));
        sum
    }
    use crate::stores::testing::{schema_exists, schema_of};
    use std::path::Path;

    #[test]
    fn nearest_rank_percentiles() {
        let s: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), Some(50.0));
        assert_eq!(percentile(&s, 95.0), Some(95.0));
        assert_eq!(percentile(&s, 99.0), Some(99.0));
        assert_eq!(percentile(&s, 100.0), Some(100.0));
        assert_eq!(percentile(&s, 0.0), Some(1.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        // Ten samples: p95 and p99 are the largest; p50 the fifth.
        let s: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&s, 50.0), Some(5.0));
        assert_eq!(percentile(&s, 95.0), Some(10.0));
        let st = stats(&[3.0, 1.0, 2.0, 4.0]);
        assert_eq!(
            (st.runs, st.p50_ms, st.p99_ms, st.mean_ms, st.max_ms),
            (4, 2.0, 4.0, 2.5, 4.0)
        );
        assert_eq!(stats(&[]).runs, 0);
    }

    #[test]
    fn peak_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }

    fn args(dir: &Path, claims: usize) -> ScaleArgs {
        ScaleArgs {
            claims,
            store: StoreArg::Sqlite,
            db: Some(dir.join("memory.db").display().to_string()),
            schema: None,
            queries: 6,
            warmup: 2,
            seed: 11,
            long_turns: false,
            worker_processes: 0,
            approximate_from: None,
            out: dir.join("out"),
        }
    }

    #[tokio::test]
    async fn a_path_for_postgres_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = args(dir.path(), 10);
        a.store = StoreArg::Postgres;
        let err = run(a).await.unwrap_err();
        assert!(
            err.to_string().contains("must be a postgres:// URL"),
            "{err}"
        );
        assert!(!dir.path().join("memory.db").exists());
        assert!(!dir.path().join("out").exists());
    }

    /// `--store postgres`: a kept schema is built, re-read without ingest, then
    /// resumed from its build record; a run without `--schema` leaves nothing behind.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scale_runs_on_postgres() {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            eprintln!("scale_runs_on_postgres: skipped, DATABASE_URL is not set");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let schema = format!(
            "rs_bench_test_{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let pg = |claims: usize, schema: Option<&str>| ScaleArgs {
            store: StoreArg::Postgres,
            db: Some(url.clone()),
            schema: schema.map(str::to_string),
            queries: 4,
            warmup: 1,
            ..args(dir.path(), claims)
        };
        let first = run(pg(120, Some(&schema))).await.unwrap();
        let claims = first["corpus"]["store"]["claims"].as_u64().unwrap();
        assert!(claims >= 120, "{claims}");
        assert_eq!(first["ingest"]["skipped"], false);
        assert_eq!(first["ingest"]["work"]["dead_lettered"], 0);
        assert!(first["config"]["db"].as_str().unwrap().contains(&schema));
        assert!(first["disk"]["schema_bytes"].as_u64().unwrap() > 0);
        let total = first["disk"]["schema_bytes"].as_u64().unwrap();
        assert_eq!(assert_tables_accounted(&first["disk"], total), total);
        for op in OPERATIONS {
            assert_eq!(first["latency"][op]["runs"], 4, "{op}");
        }
        assert!(schema_exists(&url, &schema).await);

        let again = run(pg(120, Some(&schema))).await.unwrap();
        assert_eq!(again["ingest"]["skipped"], true);
        assert_eq!(again["corpus"]["store"]["claims"], claims);

        let grown = run(pg(claims as usize + 60, Some(&schema))).await.unwrap();
        assert_eq!(
            grown["ingest"]["resumed_from_items"],
            first["corpus"]["items"]
        );
        assert!(grown["corpus"]["store"]["claims"].as_u64().unwrap() >= claims + 60);

        // Without --schema the run's own schema is dropped at the end.
        let temporary = run(pg(40, None)).await.unwrap();
        let name = schema_of(temporary["config"]["db"].as_str().unwrap());
        assert!(name.starts_with("rs_bench_scale_"), "{name}");
        assert!(!schema_exists(&url, name).await, "{name} was left behind");

        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA \"{schema}\" CASCADE"
        )))
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }

    /// `--long-turns`: the report counts the source text, its rate and the store
    /// against it, and a kept store is not resumed in the other mode.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn long_turns_report_the_source_text_and_keep_their_mode_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let long = ScaleArgs {
            long_turns: true,
            ..args(dir.path(), 30)
        };
        let r = run(long).await.unwrap();
        assert_eq!(r["config"]["long_turns"], true);
        let text = r["ingest"]["text_bytes"].as_u64().unwrap();
        let turns = r["ingest"]["turns"].as_u64().unwrap();
        assert!(text > 250 * turns, "{text} bytes in {turns} turns");
        assert_eq!(r["corpus"]["text_bytes"].as_u64(), Some(text));
        assert!(r["ingest"]["rates"]["text_bytes_per_sec"].as_f64().unwrap() > 0.0);
        let times = r["disk"]["times_source_text"].as_f64().unwrap();
        let total = r["disk"]["bytes_per_claim_with_blobs"].as_f64().unwrap()
            * r["disk"]["claims"].as_f64().unwrap();
        assert!((times * text as f64 - total).abs() < 1.0, "{times}");
        let md = std::fs::read_to_string(dir.path().join("out/scale.md")).unwrap();
        assert!(md.contains("× its source text"), "{md}");

        let err = run(args(dir.path(), 1_000_000)).await.unwrap_err();
        assert!(err.to_string().contains("--long-turns"), "{err}");
    }

    /// The whole command on a few hundred claims: the offline pipeline yields claims
    /// and facts in the generated shapes, the count is honest, every operation is
    /// timed, and a second run over the kept store only measures reads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scale_builds_measures_and_reuses_a_kept_store() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(args(dir.path(), 300)).await.unwrap();
        let claims = r["corpus"]["store"]["claims"].as_u64().unwrap();
        assert!(claims >= 300, "{claims}");
        assert_eq!(r["ingest"]["skipped"], false);
        assert!(
            r["ingest"]["embedding"]["document"]["calls"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert!(r["ingest"]["turns"].as_u64().unwrap() > 0);
        assert_eq!(r["ingest"]["work"]["dead_lettered"], 0);
        assert!(
            r["ingest"]["stages"]["e2.extract"]["secs"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        for op in OPERATIONS {
            assert_eq!(r["latency"][op]["runs"], 6, "{op}");
            assert!(r["latency"][op]["p50_ms"].as_f64().unwrap() > 0.0, "{op}");
        }
        assert!(
            r["latency"]["search"]["query_embedding"]["mean_ms"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        assert!(r["disk"]["bytes_per_claim"].as_f64().unwrap() > 0.0);
        let total = r["disk"]["checkpointed"]["db_bytes"].as_u64().unwrap();
        assert_tables_accounted(&r["disk"], total);
        let out = dir.path().join("out");
        assert!(out.join("scale.md").exists());
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("scale.json")).unwrap())
                .unwrap();
        assert_eq!(written["config"]["claims_target"], 300);

        // The counted claims are the claims, and the facts have the generated shapes.
        let memory = Memory::builder()
            .path(dir.path().join("memory.db"))
            .namespace(NAMESPACE)
            .open()
            .await
            .unwrap();
        let listed = memory.claims(None, false).await.unwrap();
        assert_eq!(current_claims(&memory).await.unwrap(), listed.len() as u64);
        assert_eq!(listed.len() as u64, claims);
        let texts: Vec<&str> = listed.iter().map(|c| c.text.as_str()).collect();
        for shape in [" works at ", " lives in ", " moved to ", " joined "] {
            assert!(
                texts.iter().any(|t| t.contains(shape)),
                "no claim with `{shape}`"
            );
        }
        // First-person turns rewritten onto the speaker.
        assert!(
            texts
                .iter()
                .any(|t| t.contains(" is working at ") || t.contains(" is living in ")),
            "no rewritten first-person claim"
        );
        let facts = all_facts(&memory, true).await.unwrap();
        for p in ["works_for", "located_in"] {
            assert!(
                facts.iter().any(|f| f.predicate.as_deref() == Some(p)),
                "no {p} fact"
            );
        }
        drop(memory);

        // Again over the kept store: reads only, the same questions.
        let again = run(args(dir.path(), 300)).await.unwrap();
        assert_eq!(again["ingest"]["skipped"], true);
        assert_eq!(again["corpus"]["store"]["claims"], claims);
        assert_eq!(again["corpus"]["items"], r["corpus"]["items"]);
    }
}
