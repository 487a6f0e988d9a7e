//! `rememberstack-bench`: measurements of RememberStack, not tests. Each command
//! writes a JSON result file and a Markdown table and prints the configuration a
//! figure needs to be reproduced.
//!
//! `locomo` scores turn-level evidence retrieval of the assured operations on
//! LoCoMo-format data (`locomo10.json`, read from the given path — never copied
//! into the repository).
//!
//! `scale` builds a store of about N claims from a deterministic synthetic corpus
//! and measures ingest throughput, operation latency, peak memory and bytes on disk.
//!
//! `knowledge` scores the offline knowledge pipeline (entities, current facts,
//! supersession, contradictions, pronouns) on an original gold set, and optionally
//! on the `scale` cast and three LoCoMo conversations.

mod baselines;
mod chart;
mod knowledge;
mod load;
mod scale;
mod score;
mod stores;
mod synth;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use rememberstack::internals::embed::EmbedPurpose;
use rememberstack::{
    ClaimsAndSourcesInput, CombinedContextInput, Config, Conversation, EmbedderConfig,
    EvidenceResult, FactResult, FactsContextInput, IngestOptions, Memory, Message, Stage,
};
use score::{QuestionScore, Summary, Touched, summarize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use stores::{BenchStore, StoreChoice};

#[derive(Parser, Debug)]
#[command(
    name = "rememberstack-bench",
    version,
    about = "RememberStack benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Turn-level evidence retrieval on LoCoMo-format conversations.
    Locomo(LocomoArgs),
    /// Throughput, latency, memory and disk of a store of about N claims built from
    /// a deterministic synthetic corpus.
    Scale(ScaleArgs),
    /// A bounded loopback load run against the HTTP server (`remember serve`): C
    /// clients mixing context operations and writes for D seconds; throughput and
    /// p50/p95/p99 per route.
    Load(LoadArgs),
    /// Entity precision/recall, current-fact accuracy, supersession, contradictions and
    /// pronoun resolution on the original gold set (`fixtures/knowledge`); optionally
    /// the LoCoMo common-word check and the `scale` cast's current facts.
    Knowledge(KnowledgeArgs),
    /// SVG charts from results this harness wrote: recall against context budget
    /// (a `locomo.json`) and p95 latency against store size (several `scale.json`).
    Chart(ChartArgs),
    /// One worker process of `scale --worker-processes` (started by it).
    #[command(hide = true)]
    Drain(DrainArgs),
}

#[derive(clap::Args, Debug)]
struct ChartArgs {
    /// A `locomo.json`: draws `recall-budget.svg`.
    #[arg(long)]
    locomo: Option<PathBuf>,
    /// A `scale.json` (repeat it, one per store size): draws `latency-size.svg`.
    #[arg(long)]
    scale: Vec<PathBuf>,
    /// The directory to write the charts to.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct KnowledgeArgs {
    /// The store.
    #[arg(long, value_enum, default_value_t = StoreArg::Sqlite)]
    store: StoreArg,
    /// The embedded store's file (default: a temporary one; it must be new), or the
    /// PostgreSQL URL (default: $DATABASE_URL; the run uses a fresh schema, dropped
    /// after it).
    #[arg(long)]
    db: Option<String>,
    /// The gold set: every `*.json` file of this directory.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/knowledge"))]
    data_dir: PathBuf,
    /// The LoCoMo JSON file: also ingest three of its conversations and count the
    /// entities whose name begins with a common English word.
    #[arg(long)]
    locomo: Option<PathBuf>,
    /// The LoCoMo conversations of that check (default: conv-26, conv-30, conv-41).
    #[arg(long, value_delimiter = ',')]
    locomo_conversations: Vec<String>,
    /// Also build the `scale` generator's corpus of about this many claims and score
    /// its cast's current employers and cities.
    #[arg(long)]
    scale_claims: Option<usize>,
    /// Most current-fact questions asked of the scale cast.
    #[arg(long, default_value_t = 400)]
    scale_questions: usize,
    /// The scale corpus seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The embedder (the hashing embedder is the fastest; facts_context's semantic
    /// channel uses it).
    #[arg(long, value_enum, default_value_t = EmbedderArg::Hashing)]
    embedder: EmbedderArg,
    /// The model directory of `--embedder local|static`.
    #[arg(long, env = "REMEMBERSTACK_EMBEDDER_MODEL_DIR")]
    model_dir: Option<PathBuf>,
    /// Where to write `knowledge.json` and `knowledge.md`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct LoadArgs {
    /// The store.
    #[arg(long, value_enum, default_value_t = StoreArg::Sqlite)]
    store: StoreArg,
    /// The embedded store's file (default: a temporary one), or the PostgreSQL URL
    /// (default: $DATABASE_URL; the run uses a fresh schema).
    #[arg(long)]
    db: Option<String>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// How long the load runs, in seconds.
    #[arg(long, default_value_t = 60)]
    secs: u64,
    /// The share of requests that write (half notes, half document ingests).
    #[arg(long, default_value_t = 30)]
    write_percent: usize,
    /// Corpus items ingested and processed before the run.
    #[arg(long, default_value_t = 200)]
    seed_items: usize,
    /// The server's ledger workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// The corpus, query and client seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Every read asks a question of its own (its request number appended), so no
    /// query vector is reused and each read pays its question's embedding; by default
    /// reads draw from 64 questions about the cast.
    #[arg(long)]
    distinct_queries: bool,
    /// Where to write `load.json` and `load.md`.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct LocomoArgs {
    /// The LoCoMo JSON file (a list of samples).
    #[arg(long)]
    data: PathBuf,
    /// Only these sample ids, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    conversations: Vec<String>,
    /// The store.
    #[arg(long, value_enum, default_value_t = StoreArg::Sqlite)]
    store: StoreArg,
    /// Where to keep the embedded store (default: a temporary directory), or the
    /// PostgreSQL URL (default: $DATABASE_URL).
    #[arg(long)]
    db: Option<String>,
    /// PostgreSQL: keep the store in this schema (default: a fresh schema, dropped
    /// after the run).
    #[arg(long)]
    schema: Option<String>,
    /// Results requested from each operation.
    #[arg(long, default_value_t = 50)]
    k: usize,
    /// Where to write `locomo.json` and `locomo.md`.
    #[arg(long)]
    out: PathBuf,
    /// Run only the baselines (no RememberStack ingest): checks the baseline recipe
    /// quickly.
    #[arg(long)]
    baselines_only: bool,
    /// The embedder of RememberStack and of the dense baseline (default: the
    /// configured one — `REMEMBERSTACK_CONFIG`, `REMEMBERSTACK_EMBEDDER` — else
    /// the default semantic model from the model cache). `local` needs a build with
    /// the `local-embedder` feature (on by default).
    #[arg(long, value_enum)]
    embedder: Option<EmbedderArg>,
    /// The local model directory (config.json, tokenizer.json, model.safetensors) for
    /// `--embedder local` or `--embedder static` (default: the cached default model of
    /// that kind).
    #[arg(long, env = "REMEMBERSTACK_EMBEDDER_MODEL_DIR")]
    model_dir: Option<PathBuf>,
    /// How each search fuses its semantic and lexical lists (default: the
    /// configured `[engine.fusion]`, else `rrf`).
    #[arg(long, value_enum)]
    fusion: Option<FusionArg>,
    /// The semantic weight of `--fusion scores`.
    #[arg(long, default_value_t = 0.5)]
    semantic_weight: f64,
    /// How `--fusion scores` scales cosines: `cosine` or `min-max`.
    #[arg(long, value_enum, default_value_t = SemanticScaleArg::Cosine)]
    semantic_scale: SemanticScaleArg,
    /// Write every scored result of the operations' first pages (default
    /// configuration) to this JSON Lines file: its channel scores and whether it
    /// touches a gold turn — the data the relevance calibration is fitted on.
    #[arg(long)]
    dump_results: Option<PathBuf>,
    /// Also score the operations under this fusion, on the same ingested store (an
    /// ablation row per value, suffixed `[fusion …]`): `rrf` or `scores:W` (W the
    /// semantic weight). Repeatable.
    #[arg(long, value_parser = parse_fusion)]
    ablate_fusion: Vec<rememberstack::Fusion>,
}

/// `rrf`, `scores`, `scores:W` or `scores:W:SCALE` (`cosine` or `min_max`).
fn parse_fusion(s: &str) -> std::result::Result<rememberstack::Fusion, String> {
    let mut parts = s.split(':');
    let fusion = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("rrf"), None, ..) => rememberstack::Fusion::Rrf,
        (Some("scores"), w, scale, None) => rememberstack::Fusion::Scores {
            semantic_weight: w.map_or(Ok(0.5), |w| {
                w.parse()
                    .map_err(|_| format!("`{w}` is not a semantic weight"))
            })?,
            semantic_scale: match scale {
                None | Some("cosine") => rememberstack::SemanticScale::Cosine,
                Some("min_max") => rememberstack::SemanticScale::MinMax,
                Some(other) => {
                    return Err(format!("`{other}`: expected `cosine` or `min_max`"));
                }
            },
        },
        _ => return Err(format!("`{s}`: expected `rrf` or `scores:W[:SCALE]`")),
    };
    fusion.validate()?;
    Ok(fusion)
}

/// The row suffix of an ablation's fusion.
fn fusion_label(f: &rememberstack::Fusion) -> String {
    match f {
        rememberstack::Fusion::Rrf => " [fusion rrf]".into(),
        rememberstack::Fusion::Scores {
            semantic_weight,
            semantic_scale,
        } => match semantic_scale {
            rememberstack::SemanticScale::Cosine => {
                format!(" [fusion scores w={semantic_weight}]")
            }
            rememberstack::SemanticScale::MinMax => {
                format!(" [fusion scores w={semantic_weight} min_max]")
            }
        },
    }
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum FusionArg {
    /// Reciprocal rank fusion (k = 60).
    Rrf,
    /// Weighted sum of cosine and relative lexical score.
    Scores,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum SemanticScaleArg {
    /// The raw cosine.
    Cosine,
    /// The cosine min-max scaled over the semantic list.
    MinMax,
}

impl From<SemanticScaleArg> for rememberstack::SemanticScale {
    fn from(a: SemanticScaleArg) -> Self {
        match a {
            SemanticScaleArg::Cosine => rememberstack::SemanticScale::Cosine,
            SemanticScaleArg::MinMax => rememberstack::SemanticScale::MinMax,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum EmbedderArg {
    /// The deterministic hashing embedder (256 dimensions).
    Hashing,
    /// A sentence-embedding model run in-process (`--model-dir`, else the cached
    /// default model).
    Local,
    /// A static (model2vec-style) embedding table (`--model-dir`, else the cached
    /// tokenlearn-static-64d).
    Static,
}

#[derive(clap::Args, Debug)]
struct ScaleArgs {
    /// Build until the namespace holds at least this many claims.
    #[arg(long)]
    claims: usize,
    /// The store.
    #[arg(long, value_enum, default_value_t = StoreArg::Sqlite)]
    store: StoreArg,
    /// Where to keep the embedded store (default: a temporary directory), or the
    /// PostgreSQL URL (default: $DATABASE_URL). A kept store that already holds the
    /// claims is only measured; a smaller one is resumed.
    #[arg(long)]
    db: Option<String>,
    /// PostgreSQL: keep the store in this schema, to resume or re-read it later
    /// (default: a fresh schema, dropped after the run).
    #[arg(long)]
    schema: Option<String>,
    /// Timed queries per operation.
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Untimed warm-up queries per operation, run first.
    #[arg(long, default_value_t = 20)]
    warmup: usize,
    /// The corpus and query seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Long turns: every conversation turn after the greeting is 300–3,000
    /// characters (its statement, then talk around it), as real assistant and user
    /// turns are; the report adds source bytes per second and the store's size
    /// against its source text.
    #[arg(long)]
    long_turns: bool,
    /// PostgreSQL: run the ledger in this many processes of this benchmark
    /// (`drain`), started together after each batch, as several `remember worker`
    /// processes on one store would (0: this process runs it).
    #[arg(long, default_value_t = 0)]
    worker_processes: usize,
    /// Embedded store: tables of at least this many records search through an
    /// approximate (HNSW) index (left out: the store's default, 0, exact always).
    /// The report gives the index's recall@10 against the exact scan.
    #[arg(long)]
    approximate_from: Option<usize>,
    /// Where to write `scale.json` and `scale.md`.
    #[arg(long)]
    out: PathBuf,
}

/// One worker process of `scale --worker-processes`: open the store, run the ledger
/// until idle, print what it did as one JSON line.
#[derive(clap::Args, Debug)]
struct DrainArgs {
    /// The store.
    #[arg(long, value_enum, default_value_t = StoreArg::Sqlite)]
    store: StoreArg,
    /// The embedded store's file (PostgreSQL: `DATABASE_URL`).
    #[arg(long)]
    db: Option<String>,
    /// PostgreSQL: the store's schema.
    #[arg(long)]
    schema: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum StoreArg {
    /// The embedded SQLite store.
    Sqlite,
    /// PostgreSQL with pgvector (`--db postgres://…` or `DATABASE_URL`).
    Postgres,
}

const SYSTEMS: [&str; 3] = [
    "rememberstack/claims_and_sources_context",
    "rememberstack/facts_context",
    "rememberstack/combined_context",
];

const BASELINES: [&str; 3] = [
    "baseline/bm25_turns",
    "baseline/dense_turns",
    "baseline/rrf_turns",
];

#[tokio::main]
async fn main() -> Result<()> {
    // REMEMBERSTACK_LOG=rememberstack::work=debug prints each work batch's time,
    // sqlx=debug every statement with its time (on stderr).
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("REMEMBERSTACK_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    match Cli::parse().command {
        Command::Locomo(a) => locomo(a).await,
        Command::Scale(a) => scale::run(a).await.map(|_| ()),
        Command::Load(a) => load::run(a).await.map(|_| ()),
        Command::Knowledge(a) => knowledge::run(a).await.map(|_| ()),
        Command::Drain(a) => scale::drain(a).await,
        Command::Chart(a) => {
            if a.locomo.is_none() && a.scale.is_empty() {
                anyhow::bail!("chart: give --locomo FILE and/or --scale FILE");
            }
            Ok(chart::run(a.locomo, &a.scale, &a.out)?)
        }
    }
}

/// A LoCoMo session date-time such as `1:56 pm on 8 May, 2023`, read as UTC (the
/// data set gives no time zone).
fn session_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let t = chrono::NaiveDateTime::parse_from_str(s.trim(), "%I:%M %p on %d %B, %Y").ok()?;
    Some(t.and_utc())
}

/// The namespace of a sample: its id lowercased, other characters as `-`.
fn namespace_of(sample_id: &str) -> String {
    let slug: String = sample_id
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("locomo-{slug}")
}

/// One session of a sample as a conversation document (turn text only; image
/// captions are left out).
fn sessions(sample: &Value) -> Result<Vec<(String, Conversation)>> {
    let conv = sample
        .get("conversation")
        .and_then(Value::as_object)
        .context("a sample has no `conversation` object")?;
    let mut out = Vec::new();
    for n in 1.. {
        let Some(turns) = conv.get(&format!("session_{n}")).and_then(Value::as_array) else {
            if n > 1 && conv.contains_key(&format!("session_{}", n + 1)) {
                continue;
            }
            break;
        };
        let when = conv
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .and_then(session_time);
        let messages = turns
            .iter()
            .filter_map(|t| {
                Some(Message {
                    event_id: Some(t.get("dia_id")?.as_str()?.to_string()),
                    speaker: t.get("speaker")?.as_str()?.to_string(),
                    text: t.get("text")?.as_str()?.to_string(),
                    timestamp: None,
                })
            })
            .filter(|m| !m.text.trim().is_empty())
            .collect();
        out.push((
            format!("session_{n}"),
            Conversation {
                session_time: when,
                messages,
            },
        ));
    }
    Ok(out)
}

/// What one answer's first page said about its own relevance.
struct Judged {
    /// The best result's relevance (0 without results).
    best: f64,
    /// Whether the answer was `no_relevant_memory`.
    weak: bool,
}

impl Judged {
    fn of(page: &[Touched], negative: Option<&rememberstack::Negative>) -> Judged {
        Judged {
            best: page.iter().filter_map(|t| t.relevance).fold(0.0, f64::max),
            weak: negative.is_some_and(|n| n.kind == "no_relevant_memory"),
        }
    }

    fn summary(all: &[Judged]) -> Value {
        let mut best: Vec<f64> = all.iter().map(|j| j.best).collect();
        best.sort_by(f64::total_cmp);
        let n = all.len().max(1) as f64;
        json!({
            "questions": all.len(),
            "no_relevant_memory_share": all.iter().filter(|j| j.weak).count() as f64 / n,
            "median_best_relevance": best.get(best.len() / 2).copied().unwrap_or(0.0),
        })
    }
}

fn channels(s: &rememberstack::Scores) -> [Option<f64>; 2] {
    [
        s.semantic.as_ref().map(|c| c.score),
        s.lexical.as_ref().map(|c| c.score),
    ]
}

fn evidence_touched(r: &EvidenceResult) -> Touched {
    let (turns, scores, kind) = match r {
        EvidenceResult::Claim(c) => (c.event_ids.clone(), &c.scores, "claim"),
        EvidenceResult::Chunk(c) => (c.event_ids.clone(), &c.scores, "chunk"),
    };
    Touched {
        turns,
        chars: r.text().chars().count(),
        channels: channels(scores),
        relevance: scores.relevance,
        fused: Some(scores.fused),
        kind,
        text: r.text().to_string(),
    }
}

fn fact_touched(r: &FactResult) -> Touched {
    let mut turns: Vec<String> = Vec::new();
    for p in &r.provenance {
        for e in &p.event_ids {
            if !turns.contains(e) {
                turns.push(e.clone());
            }
        }
    }
    Touched {
        turns,
        chars: r.fact.statement.chars().count(),
        channels: channels(&r.scores),
        relevance: r.scores.relevance,
        fused: Some(r.scores.fused),
        kind: "fact",
        text: r.fact.statement.clone(),
    }
}

/// Write `<out>/<name>.json` and `<out>/<name>.md` (creating `out`) and print the
/// Markdown. Returns the JSON file's path.
pub(crate) fn write_results(
    out: &std::path::Path,
    name: &str,
    result: &Value,
    md: &str,
) -> Result<PathBuf> {
    std::fs::create_dir_all(out)?;
    let json_path = out.join(format!("{name}.json"));
    std::fs::write(&json_path, serde_json::to_string_pretty(result)?)?;
    std::fs::write(out.join(format!("{name}.md")), md)?;
    println!("{md}");
    Ok(json_path)
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The configuration with the embedder `--embedder` and `--model-dir` ask for.
fn bench_config(a: &LocomoArgs) -> Result<Config> {
    let mut config = Config::load(None)?;
    match a.embedder {
        None => {}
        Some(EmbedderArg::Hashing) => config.embedder = EmbedderConfig::hashing(),
        Some(EmbedderArg::Local) => {
            if !cfg!(feature = "local-embedder") {
                bail!(
                    "--embedder local: this rememberstack-bench was built without the \
                     `local-embedder` feature (on by default); build it with its default \
                     features"
                );
            }
            config.embedder = match a.model_dir.clone() {
                Some(dir) => EmbedderConfig::local_dir(dir),
                None => EmbedderConfig::default(),
            };
        }
        Some(EmbedderArg::Static) => {
            config.embedder = EmbedderConfig::Static {
                model_dir: a.model_dir.clone(),
                model: None,
            }
        }
    }
    match a.fusion {
        None => {}
        Some(FusionArg::Rrf) => config.engine.fusion = rememberstack::Fusion::Rrf,
        Some(FusionArg::Scores) => {
            config.engine.fusion = rememberstack::Fusion::Scores {
                semantic_weight: a.semantic_weight,
                semantic_scale: a.semantic_scale.into(),
            }
        }
    }
    Ok(config)
}

async fn locomo(a: LocomoArgs) -> Result<()> {
    if a.k == 0 || a.k > 100 {
        bail!("--k must be between 1 and 100");
    }
    let raw = std::fs::read_to_string(&a.data)
        .with_context(|| format!("reading {}", a.data.display()))?;
    let data: Vec<Value> = serde_json::from_str(&raw).context("the data is not a JSON list")?;
    let wanted: BTreeSet<&str> = a.conversations.iter().map(String::as_str).collect();
    let samples: Vec<&Value> = data
        .iter()
        .filter(|s| {
            wanted.is_empty()
                || s.get("sample_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| wanted.contains(id))
        })
        .collect();
    if samples.is_empty() {
        bail!("no sample matches --conversations");
    }
    let config = bench_config(&a)?;
    let tmp = tempfile::tempdir()?;
    let store = BenchStore::open(StoreChoice {
        kind: a.store,
        db: a.db.as_deref(),
        schema: a.schema.as_deref(),
        default_path: tmp.path().join("memory.db"),
        purpose: "locomo",
        max_connections: 8,
    })
    .await?;
    let run = locomo_on(&a, &samples, &store, config).await;
    store.finish(run).await
}

/// Ingest and score `samples` on `store`.
async fn locomo_on(
    a: &LocomoArgs,
    samples: &[&Value],
    store: &BenchStore,
    config: Config,
) -> Result<()> {
    let base_config = config.clone();
    // The embedder is built once, here, and the dense baseline uses the same one.
    let memory = Memory::builder()
        .store(store.store())
        .config(config)
        .open()
        .await?;
    let status = memory.status().await?;
    if let Some(why) = &status.embedder_fallback {
        eprintln!(
            "WARNING: no semantic embedding model ({why}); these figures are the hashing \
             embedder's"
        );
    }
    let config = json!({
        "store": status.store,
        "db": store.describe(),
        "embedder": status.embedder,
        "embedder_fallback": status.embedder_fallback,
        "fusion": memory.engine().config().fusion,
        "extractor": memory.engine().component_version(Stage::Extract),
        "commit": commit(),
        "k": a.k,
        "data": a.data.display().to_string(),
        "session_time_zone": "none in the data; read as UTC",
        "combined_order": "claims_and_sources results, then facts results",
    });
    println!("configuration: {config}");

    let mut scores: BTreeMap<String, Vec<(u8, QuestionScore)>> = BTreeMap::new();
    // The relevance verdicts of claims_and_sources_context's first pages.
    let mut own: Vec<Judged> = Vec::new();
    let mut asked: Vec<(String, String)> = Vec::new();
    let mut dump = match &a.dump_results {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    // The ablation rows: the same store read by engines configured otherwise.
    let mut variants: Vec<(String, Memory)> = vec![(String::new(), memory.clone())];
    for fusion in &a.ablate_fusion {
        let mut cfg = base_config.clone();
        cfg.engine.fusion = *fusion;
        let v = Memory::builder()
            .store(store.store())
            .config(cfg)
            .open()
            .await?;
        variants.push((fusion_label(fusion), v));
    }
    let pool = baselines::memory_pool().await?;
    let embedder = memory.engine().embedder().clone();
    let mut index_count = 0usize;
    let (mut turns_ingested, mut skipped_evidence, mut skipped_questions) =
        (0usize, 0usize, 0usize);
    let started = Instant::now();
    let mut ingest_secs = 0.0;
    for sample in samples {
        let id = sample
            .get("sample_id")
            .and_then(Value::as_str)
            .context("a sample has no sample_id")?;
        let m = memory.with_namespace(namespace_of(id))?;
        let t = Instant::now();
        let mut known: BTreeSet<String> = BTreeSet::new();
        let mut turns: Vec<(String, String)> = Vec::new();
        for (name, conv) in sessions(sample)? {
            turns_ingested += conv.messages.len();
            for msg in &conv.messages {
                if let Some(e) = &msg.event_id {
                    known.insert(e.clone());
                    // The same `Speaker: text` RememberStack ingests as the turn.
                    turns.push((e.clone(), format!("{}: {}", msg.speaker, msg.text)));
                }
            }
            if !a.baselines_only {
                m.ingest_conversation(&conv, IngestOptions::new(format!("{id}/{name}")))
                    .await?;
            }
        }
        if !a.baselines_only {
            m.process_until_idle().await?;
        }
        ingest_secs += t.elapsed().as_secs_f64();
        index_count += 1;
        let index =
            baselines::TurnIndex::build(&pool, index_count, turns, embedder.as_ref()).await?;
        for qa in sample
            .get("qa")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(category) = qa.get("category").and_then(Value::as_u64) else {
                continue;
            };
            if !(1..=4).contains(&category) {
                continue;
            }
            let Some(question) = qa.get("question").and_then(Value::as_str) else {
                continue;
            };
            let mut gold: Vec<String> = Vec::new();
            for e in qa
                .get("evidence")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match e.as_str() {
                    Some(e) if known.contains(e) => gold.push(e.to_string()),
                    _ => skipped_evidence += 1,
                }
            }
            if gold.is_empty() {
                skipped_questions += 1;
                continue;
            }
            let cat = category as u8;
            // The baselines: one result per turn.
            let as_touched = |ids: Vec<String>| -> Vec<Touched> {
                ids.into_iter()
                    .map(|t| Touched {
                        chars: index.text(&t).chars().count(),
                        turns: vec![t],
                        channels: [None, None],
                        relevance: None,
                        fused: None,
                        kind: "turn",
                        text: String::new(),
                    })
                    .collect()
            };
            let bm25 = index.bm25(question).await?;
            let qv = embedder
                .embed(&[question.to_string()], EmbedPurpose::Query)
                .await?;
            let dense = qv.first().map(|v| index.dense(v)).unwrap_or_default();
            let fused = baselines::rrf(&[bm25.clone(), dense.clone()]);
            for (system, ids) in BASELINES.iter().zip([bm25, dense, fused]) {
                let ranked = as_touched(ids);
                let mut s = score::score(&ranked, &gold);
                score::score_budgets(&mut s, &ranked, &gold);
                scores.entry(system.to_string()).or_default().push((cat, s));
            }
            if a.baselines_only {
                continue;
            }
            for (suffix, variant) in &variants {
                let vm = variant.with_namespace(namespace_of(id))?;
                let (e, e_ranked, negative) = evidence_ranked(&vm, question, a.k).await?;
                if suffix.is_empty() {
                    own.push(Judged::of(&e, negative.as_ref()));
                    asked.push((id.to_string(), question.to_string()));
                }
                let (f, f_ranked) = facts_ranked(&vm, question, a.k).await?;
                let combined = vm
                    .combined_context(CombinedContextInput {
                        query: question.into(),
                        entity_ids: None,
                        temporal_scope: None,
                    })
                    .await?;
                let c: Vec<Touched> = combined
                    .claims_and_sources
                    .results
                    .iter()
                    .map(evidence_touched)
                    .chain(combined.facts.results.iter().map(fact_touched))
                    .collect();
                // combined_context takes no k and no cursor: its budget rows hold
                // what it returns.
                for (system, (page, ranked)) in
                    SYSTEMS
                        .iter()
                        .zip([(e, e_ranked), (f, f_ranked), (c.clone(), c)])
                {
                    if let (Some(w), true) = (dump.as_mut(), suffix.is_empty()) {
                        for (rank, t) in page.iter().enumerate() {
                            let row = json!({
                                "sample": id, "category": cat, "system": system,
                                "rank": rank + 1, "semantic": t.channels[0],
                                "lexical": t.channels[1], "relevance": t.relevance,
                                "turns": t.turns.len(),
                                "kind": t.kind, "fused": t.fused, "turn_ids": t.turns, "text": t.text,
                                "question": question, "gold": gold,
                                "relevant": t.turns.iter().any(|x| gold.contains(x)),
                            });
                            writeln!(w, "{row}")?;
                        }
                    }
                    let mut s = score::score(&page, &gold);
                    score::score_budgets(&mut s, &ranked, &gold);
                    scores
                        .entry(format!("{system}{suffix}"))
                        .or_default()
                        .push((cat, s));
                }
            }
        }
    }
    // Questions asked where they were never discussed: each sample's questions put
    // to the next sample's namespace (other people, other events). Their answers
    // should say `no_relevant_memory`; answers to the questions' own conversation
    // should not.
    let mut foreign: Vec<Judged> = Vec::new();
    if samples.len() > 1 && !a.baselines_only {
        let ids: Vec<&str> = samples
            .iter()
            .filter_map(|s| s.get("sample_id").and_then(Value::as_str))
            .collect();
        for (sample, question) in &asked {
            let at = ids.iter().position(|i| i == sample).unwrap_or(0);
            let other = ids[(at + 1) % ids.len()];
            let vm = memory.with_namespace(namespace_of(other))?;
            let env = vm
                .claims_and_sources_context(ClaimsAndSourcesInput {
                    query: question.clone(),
                    k: Some(a.k),
                    ..Default::default()
                })
                .await?;
            let page: Vec<Touched> = env.results.iter().map(evidence_touched).collect();
            if let Some(w) = dump.as_mut() {
                for (rank, t) in page.iter().enumerate() {
                    let row = json!({
                        "sample": sample, "asked_of": other,
                        "system": "foreign/claims_and_sources_context",
                        "rank": rank + 1, "semantic": t.channels[0],
                        "lexical": t.channels[1], "relevant": false,
                    });
                    writeln!(w, "{row}")?;
                }
            }
            foreign.push(Judged::of(&page, env.negative.as_ref()));
        }
    }
    let relevance = json!({
        "floor": memory.engine().config().relevance.floor,
        "curve": memory.engine().relevance_curve().0,
        "curve_fitted_for_embedder": memory.engine().relevance_curve().1,
        "own_questions": Judged::summary(&own),
        "foreign_questions": Judged::summary(&foreign),
    });
    let mut systems = serde_json::Map::new();
    for (system, list) in &scores {
        let overall = summarize(list.iter().map(|(_, s)| s));
        let mut by_category = serde_json::Map::new();
        for cat in 1..=4u8 {
            let s = summarize(list.iter().filter(|(c, _)| *c == cat).map(|(_, s)| s));
            if s.questions > 0 {
                by_category.insert(cat.to_string(), serde_json::to_value(&s)?);
            }
        }
        systems.insert(
            system.clone(),
            json!({"overall": overall, "by_category": by_category}),
        );
    }
    // RememberStack over each baseline, per overall metric.
    let mut ratios = serde_json::Map::new();
    for system in scores.keys().filter(|k| k.starts_with("rememberstack/")) {
        for base in BASELINES {
            let (Some(s), Some(b)) = (scores.get(system), scores.get(base)) else {
                continue;
            };
            let (s, b) = (
                summarize(s.iter().map(|(_, q)| q)),
                summarize(b.iter().map(|(_, q)| q)),
            );
            let per: serde_json::Map<String, Value> = s
                .means
                .iter()
                .filter(|(k, _)| !k.starts_with("context"))
                .filter_map(|(k, v)| {
                    let d = b.means.get(k)?;
                    (*d > 0.0).then(|| (k.clone(), json!(v / d)))
                })
                .collect();
            ratios.insert(format!("{system} / {base}"), Value::Object(per));
        }
    }
    let result = json!({
        "ratios": ratios,
        "config": config,
        "corpus": {
            "samples": samples.len(),
            "turns": turns_ingested,
            "skipped_evidence_ids": skipped_evidence,
            "skipped_questions_without_evidence": skipped_questions,
            "ingest_and_process_secs": ingest_secs,
            "total_secs": started.elapsed().as_secs_f64(),
        },
        "systems": systems,
        "relevance": relevance,
    });
    if let Some(w) = dump.as_mut() {
        w.flush()?;
    }
    let mut md = markdown(&scores);
    md.push_str(&format!(
        "\nrelevance (claims_and_sources_context, floor {}): `no_relevant_memory` for {:.1}% of questions asked of their own conversation, {:.1}% asked of another; median best relevance {:.3} / {:.3}\n",
        relevance["floor"],
        100.0 * relevance["own_questions"]["no_relevant_memory_share"].as_f64().unwrap_or(0.0),
        100.0 * relevance["foreign_questions"]["no_relevant_memory_share"].as_f64().unwrap_or(0.0),
        relevance["own_questions"]["median_best_relevance"].as_f64().unwrap_or(0.0),
        relevance["foreign_questions"]["median_best_relevance"].as_f64().unwrap_or(0.0),
    ));
    let json_path = write_results(&a.out, "locomo", &result, &md)?;
    println!(
        "{} samples, {turns_ingested} turns; {skipped_evidence} evidence ids and \
         {skipped_questions} questions skipped; results in {}",
        samples.len(),
        json_path.display()
    );
    Ok(())
}

fn markdown(scores: &BTreeMap<String, Vec<(u8, QuestionScore)>>) -> String {
    let mut md = String::from(
        "| system | questions | recall@5 | recall@10 | recall@20 | hit@10 | MRR | session recall@10 | context tokens (est.) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (system, list) in scores {
        let s: Summary = summarize(list.iter().map(|(_, s)| s));
        let g = |k: &str| s.means.get(k).copied().unwrap_or(0.0);
        md.push_str(&format!(
            "| {system} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} |\n",
            s.questions,
            g("recall@5"),
            g("recall@10"),
            g("recall@20"),
            g("hit@10"),
            g("mrr"),
            g("session_recall@10"),
            g("context_tokens_est"),
        ));
    }
    md.push_str("\nrecall within a context budget (whole results in rank order; tokens = characters / 4), and by LoCoMo category at 10 turns:\n\n| system | @500 tok | @1000 tok | @2000 tok | @4000 tok | multi-hop | temporal | open-domain | single-hop |\n|---|---|---|---|---|---|---|---|---|\n");
    for (system, list) in scores {
        let s: Summary = summarize(list.iter().map(|(_, s)| s));
        let g = |k: &str| s.means.get(k).copied().unwrap_or(0.0);
        // LoCoMo's category numbers: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
        let cat = |c: u8| {
            summarize(list.iter().filter(|(q, _)| *q == c).map(|(_, s)| s))
                .means
                .get("recall@10")
                .copied()
                .unwrap_or(0.0)
        };
        md.push_str(&format!(
            "| {system} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            g("recall@500tok"),
            g("recall@1000tok"),
            g("recall@2000tok"),
            g("recall@4000tok"),
            cat(1),
            cat(2),
            cat(3),
            cat(4),
        ));
    }
    md
}

/// An operation's first page, its ranking continued page by page until it fills
/// the largest context budget (or ends), and the first page's negative. `page`
/// runs the operation with a cursor.
async fn paged<R>(
    mut page: impl AsyncFnMut(Option<String>) -> Result<rememberstack::Envelope<R>>,
    touch: fn(&R) -> Touched,
) -> Result<(Vec<Touched>, Vec<Touched>, Option<rememberstack::Negative>)> {
    let mut ranked: Vec<Touched> = Vec::new();
    let mut first = None;
    let mut cursor = None;
    loop {
        let env = page(cursor.take()).await?;
        ranked.extend(env.results.iter().map(touch));
        if first.is_none() {
            first = Some((ranked.clone(), env.negative.clone()));
        }
        let filled: usize = ranked.iter().map(|t| t.chars).sum();
        match env.truncation.continuation {
            Some(c) if filled < score::largest_budget_chars() => cursor = Some(c),
            _ => break,
        }
    }
    let (first, negative) = first.unwrap_or_default();
    Ok((first, ranked, negative))
}

/// `claims_and_sources_context`, paged as [`paged`] does.
async fn evidence_ranked(
    m: &Memory,
    question: &str,
    k: usize,
) -> Result<(Vec<Touched>, Vec<Touched>, Option<rememberstack::Negative>)> {
    let page = async |cursor| {
        Ok(m.claims_and_sources_context(ClaimsAndSourcesInput {
            query: question.into(),
            k: Some(k),
            cursor,
            ..Default::default()
        })
        .await?)
    };
    paged(page, evidence_touched).await
}

/// `facts_context`, paged as [`paged`] does.
async fn facts_ranked(
    m: &Memory,
    question: &str,
    k: usize,
) -> Result<(Vec<Touched>, Vec<Touched>)> {
    let page = async |cursor| {
        Ok(m.facts_context(FactsContextInput {
            query: question.into(),
            k: Some(k),
            cursor,
            ..Default::default()
        })
        .await?)
    };
    let (first, ranked, _) = paged(page, fact_touched).await?;
    Ok((first, ranked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locomo_dates_read_as_utc() {
        let t = session_time("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        assert!(session_time("yesterday").is_none());
        assert_eq!(namespace_of("conv-26"), "locomo-conv-26");
        assert_eq!(namespace_of("A B"), "locomo-a-b");
    }

    #[test]
    fn sessions_become_conversations_with_turn_ids() {
        let sample = json!({"sample_id": "s", "conversation": {
            "speaker_a": "A", "speaker_b": "B",
            "session_1_date_time": "9:00 am on 1 June, 2023",
            "session_1": [
                {"speaker": "A", "dia_id": "D1:1", "text": "Hi"},
                {"speaker": "B", "dia_id": "D1:2", "text": "Hello", "blip_caption": "a cat"}
            ],
            "session_2_date_time": "9:00 am on 2 June, 2023",
            "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "Again"}]
        }});
        let s = sessions(&sample).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].1.messages[1].event_id.as_deref(), Some("D1:2"));
        assert_eq!(s[0].1.messages[1].text, "Hello");
        assert!(s[1].1.session_time.is_some());
    }

    #[test]
    fn a_file_that_is_not_a_list_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        std::fs::write(&p, "{}").unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let err = rt
            .block_on(locomo(LocomoArgs {
                data: p,
                conversations: vec![],
                store: StoreArg::Sqlite,
                db: None,
                schema: None,
                k: 10,
                out: dir.path().join("out"),
                baselines_only: false,
                embedder: None,
                model_dir: None,
                fusion: None,
                semantic_weight: 0.5,
                semantic_scale: SemanticScaleArg::Cosine,
                ablate_fusion: vec![],
                dump_results: None,
            }))
            .unwrap_err();
        assert!(err.to_string().contains("not a JSON list"), "{err}");
    }

    /// `locomo --store postgres` on the tiny fixture: every system is scored, the
    /// configuration names the run's schema, and the schema is gone afterwards.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn locomo_runs_on_postgres() {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            eprintln!("locomo_runs_on_postgres: skipped, DATABASE_URL is not set");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        locomo(LocomoArgs {
            data: PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/fixtures/tiny_locomo.json"
            )),
            store: StoreArg::Postgres,
            db: Some(url.clone()),
            out: out.clone(),
            ..args(Some(EmbedderArg::Hashing), None)
        })
        .await
        .unwrap();
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("locomo.json")).unwrap())
                .unwrap();
        assert!(r["config"]["store"].as_str().unwrap().contains("postgres"));
        for system in SYSTEMS.iter().chain(&BASELINES) {
            let questions = r["systems"][system]["overall"]["questions"].as_u64();
            assert!(questions.is_some_and(|q| q > 0), "{system}: {questions:?}");
        }
        // The fixture's answers are found on PostgreSQL too.
        let recall =
            r["systems"]["rememberstack/claims_and_sources_context"]["overall"]["recall@10"]
                .as_f64()
                .unwrap();
        assert!(recall > 0.0, "{recall}");
        let schema = stores::testing::schema_of(r["config"]["db"].as_str().unwrap());
        assert!(
            !stores::testing::schema_exists(&url, schema).await,
            "{schema} was left behind"
        );
    }

    fn args(embedder: Option<EmbedderArg>, model_dir: Option<&str>) -> LocomoArgs {
        LocomoArgs {
            data: PathBuf::from("unused.json"),
            conversations: vec![],
            store: StoreArg::Sqlite,
            db: None,
            schema: None,
            k: 10,
            out: PathBuf::from("unused"),
            baselines_only: false,
            embedder,
            model_dir: model_dir.map(PathBuf::from),
            fusion: None,
            semantic_weight: 0.5,
            semantic_scale: SemanticScaleArg::Cosine,
            ablate_fusion: vec![],
            dump_results: None,
        }
    }

    #[test]
    fn the_embedder_flag_chooses_the_embedder() {
        let c = bench_config(&args(Some(EmbedderArg::Hashing), None)).unwrap();
        assert_eq!(c.embedder, EmbedderConfig::hashing());
        let local = bench_config(&args(Some(EmbedderArg::Local), None));
        if cfg!(feature = "local-embedder") {
            assert_eq!(local.unwrap().embedder, EmbedderConfig::default());
            let c = bench_config(&args(Some(EmbedderArg::Local), Some("/m"))).unwrap();
            assert_eq!(c.embedder, EmbedderConfig::local_dir("/m"));
        } else {
            let err = local.unwrap_err().to_string();
            assert!(
                err.contains("without the `local-embedder` feature"),
                "{err}"
            );
        }
    }
}
