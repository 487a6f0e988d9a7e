//! `load`: a bounded loopback load run against `remember serve`'s HTTP API — a
//! store seeded from the synthetic corpus, an in-process server with its worker
//! pool, and C concurrent clients mixing context operations and writes for D
//! seconds. Reports throughput and p50/p95/p99 per route, and every 5xx.

use crate::scale::{Stats, stats};
use crate::stores::{BenchStore, StoreChoice};
use crate::synth::{Generator, Item};
use crate::{LoadArgs, commit};
use anyhow::{Context, Result, bail};
use rememberstack::{IngestOptions, Memory};
use rememberstack_server::{ServerConfig, auth::Limits, serve_on};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One route's figures.
#[derive(Debug, Default, Serialize)]
struct RouteReport {
    requests: usize,
    /// Requests per second over the run.
    throughput_rps: f64,
    latency: Stats,
    /// Responses by status.
    statuses: BTreeMap<u16, usize>,
}

#[derive(Default)]
struct Samples {
    /// route → (latency ms, status)
    by_route: BTreeMap<String, Vec<(f64, u16)>>,
}

/// Run the load and write `load.json` and `load.md` under `a.out`.
pub async fn run(a: LoadArgs) -> Result<Value> {
    if a.clients == 0 || a.secs == 0 {
        bail!("--clients and --secs must be at least 1");
    }
    if a.write_percent > 100 {
        bail!("--write-percent is a percentage (0–100)");
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let dir = tempfile::tempdir()?;
    let bench_store = BenchStore::open(StoreChoice {
        kind: a.store,
        db: a.db.as_deref(),
        schema: None,
        default_path: dir.path().join("load.db"),
        purpose: "load",
        max_connections: 32,
    })
    .await?;
    let run = load_on(&a, &bench_store).await;
    bench_store.finish(run).await
}

/// Seed the store, serve it and load it.
async fn load_on(a: &LoadArgs, bench_store: &BenchStore) -> Result<Value> {
    let store = bench_store.describe();
    let memory = Memory::builder()
        .store(bench_store.store())
        .namespace("load")
        .open()
        .await?;

    // Seed the namespace and process it, so reads have something to find.
    let mut generator = Generator::new(a.seed, 40, a.seed_items * 4);
    let seeded = Instant::now();
    for _ in 0..a.seed_items {
        match generator.next_item() {
            Item::Session {
                source_ref,
                conversation,
            } => {
                let mut options = IngestOptions::new(source_ref);
                options.source_time = conversation.session_time;
                memory.ingest_conversation(&conversation, options).await?;
            }
            Item::Document {
                source_ref,
                source_time,
                text,
            } => {
                memory
                    .ingest_text(
                        text,
                        IngestOptions::new(source_ref).source_time(source_time),
                    )
                    .await?;
            }
        }
    }
    memory.process_until_idle().await?;
    let seed_secs = seeded.elapsed().as_secs_f64();
    let queries = generator.queries(64, a.seed);
    let docs: Vec<(String, String)> = (0..256)
        .filter_map(|_| match generator.next_item() {
            Item::Document {
                source_ref, text, ..
            } => Some((source_ref, text)),
            Item::Session { .. } => None,
        })
        .collect();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let config = ServerConfig {
        workers: a.workers,
        limits: Limits {
            rate_per_sec: 1e9,
            burst: 1e9,
            in_flight: 100_000,
        },
        ..ServerConfig::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_on(listener, memory.clone(), config, async move {
        let _ = stop_rx.await;
    }));

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(a.clients)
        .build()?;
    let deadline = Instant::now() + Duration::from_secs(a.secs);
    let started = Instant::now();
    let queries = Arc::new(queries);
    let docs = Arc::new(docs);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..a.clients {
        let (client, base, queries, docs) =
            (client.clone(), base.clone(), queries.clone(), docs.clone());
        let write_percent = a.write_percent;
        let distinct = a.distinct_queries;
        let mut rng = crate::synth::Rng::new(a.seed.wrapping_mul(1000).wrapping_add(c as u64));
        tasks.spawn(async move {
            let mut samples: Vec<(String, f64, u16)> = Vec::new();
            let mut i = 0usize;
            while Instant::now() < deadline {
                i += 1;
                let q = rng.pick(&queries);
                let question = read_question(&q.question, distinct.then_some((c, i)));
                let ns = "/v1/namespaces/load";
                let (route, path, body): (&str, String, Value) = if rng.chance(write_percent) {
                    if rng.chance(50) {
                        (
                            "POST notes",
                            format!("{ns}/notes"),
                            json!({"request_id": format!("c{c}-{i}"), "source_key": format!("load/c{c}/n{i}"),
                                   "source_revision": "1", "text": format!("Client {c} noted that {} asked about item {i}.", q.name)}),
                        )
                    } else {
                        let (source_ref, text) = rng.pick(&docs);
                        (
                            "POST documents",
                            format!("{ns}/documents"),
                            json!({"text": format!("{text}\n\nRevision {c}-{i}."), "source_ref": format!("{source_ref}/c{c}")}),
                        )
                    }
                } else {
                    match rng.below(5) {
                        0 => (
                            "POST operations/resolve_entity",
                            format!("{ns}/operations/resolve_entity"),
                            json!({"name": q.name}),
                        ),
                        1 => (
                            "POST operations/claims_and_sources_context",
                            format!("{ns}/operations/claims_and_sources_context"),
                            json!({"query": question}),
                        ),
                        2 => (
                            "POST operations/facts_context",
                            format!("{ns}/operations/facts_context"),
                            json!({"query": question}),
                        ),
                        3 => (
                            "POST operations/combined_context",
                            format!("{ns}/operations/combined_context"),
                            json!({"query": question}),
                        ),
                        _ => (
                            "POST search",
                            format!("{ns}/search"),
                            json!({"query": question, "k": 10}),
                        ),
                    }
                };
                let t = Instant::now();
                let status = match client.post(format!("{base}{path}")).json(&body).send().await {
                    Ok(resp) => {
                        let s = resp.status().as_u16();
                        let _ = resp.bytes().await;
                        s
                    }
                    Err(_) => 599,
                };
                samples.push((route.to_string(), t.elapsed().as_secs_f64() * 1e3, status));
            }
            samples
        });
    }
    let mut all = Samples::default();
    while let Some(done) = tasks.join_next().await {
        for (route, ms, status) in done? {
            all.by_route.entry(route).or_default().push((ms, status));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    server.await??;
    // What the workers had not processed when the load stopped, and how long it takes
    // to catch up: a request rate bought by processing falling behind shows here.
    let status = memory.status().await?;
    let backlog: u64 = status
        .ledger
        .values()
        .flat_map(|by_status| by_status.iter())
        .filter(|(s, _)| matches!(s.as_str(), "pending" | "running"))
        .map(|(_, n)| n)
        .sum();
    let draining = Instant::now();
    let drained = memory.process_until_idle().await?;
    let drain_secs = draining.elapsed().as_secs_f64();

    let mut routes = BTreeMap::new();
    let (mut total, mut errors_5xx, mut errors_4xx) = (0usize, 0usize, 0usize);
    for (route, samples) in &all.by_route {
        let mut r = RouteReport {
            requests: samples.len(),
            throughput_rps: samples.len() as f64 / elapsed,
            latency: stats(&samples.iter().map(|(ms, _)| *ms).collect::<Vec<_>>()),
            statuses: BTreeMap::new(),
        };
        for (_, s) in samples {
            *r.statuses.entry(*s).or_default() += 1;
            if *s >= 500 {
                errors_5xx += 1;
            } else if *s >= 400 {
                errors_4xx += 1;
            }
        }
        total += samples.len();
        routes.insert(route.clone(), r);
    }
    let result = json!({
        "config": {
            "store": store, "clients": a.clients, "secs": a.secs, "write_percent": a.write_percent,
            "workers": a.workers, "seed": a.seed, "seed_items": a.seed_items, "commit": commit(),
            "distinct_queries": a.distinct_queries,
            "embedder": memory.engine().component_version(rememberstack::Stage::Embed),
        },
        "seed_secs": seed_secs,
        "elapsed_secs": elapsed,
        "backlog_items": backlog,
        "drain_secs": drain_secs,
        "drained_items": drained.completed,
        "requests": total,
        "throughput_rps": total as f64 / elapsed,
        "errors_5xx": errors_5xx,
        "errors_4xx": errors_4xx,
        "routes": routes,
    });
    std::fs::write(
        a.out.join("load.json"),
        serde_json::to_string_pretty(&result)?,
    )?;
    let mut md = format!(
        "# Load: {} clients, {} s, {}% writes{}, {}\n\n{} requests, {:.1} req/s, {} 5xx, {} 4xx\n\nProcessing: {} work items waiting when the load stopped, {} processed in {:.1} s after it.\n\n| route | requests | req/s | p50 ms | p95 ms | p99 ms |\n|---|---|---|---|---|---|\n",
        a.clients,
        a.secs,
        a.write_percent,
        if a.distinct_queries {
            ", every question distinct"
        } else {
            ""
        },
        store,
        total,
        total as f64 / elapsed,
        errors_5xx,
        errors_4xx,
        backlog,
        drained.completed,
        drain_secs
    );
    for (route, r) in &routes {
        md.push_str(&format!(
            "| {route} | {} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            r.requests, r.throughput_rps, r.latency.p50_ms, r.latency.p95_ms, r.latency.p99_ms
        ));
    }
    std::fs::write(a.out.join("load.md"), &md)?;
    println!("{md}");
    println!("results in {}", a.out.join("load.json").display());
    Ok(result)
}

/// The question a read asks: `question`, or with `request` (client, number) its own
/// copy, which no other read asks (`--distinct-queries`).
fn read_question(question: &str, request: Option<(usize, usize)>) -> String {
    match request {
        Some((client, n)) => format!("{question} (request {client}-{n})"),
        None => question.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreArg;

    #[test]
    fn distinct_reads_never_ask_the_same_question() {
        let q = "Where does Alice Moreno live?";
        assert_eq!(read_question(q, None), q);
        let asked: std::collections::BTreeSet<String> = (0..4)
            .flat_map(|c| (0..50).map(move |i| read_question(q, Some((c, i)))))
            .collect();
        assert_eq!(asked.len(), 200);
        assert!(asked.iter().all(|a| a.starts_with(q) && a != q));
        // Client 1's 12th and client 11's 2nd request stay apart.
        assert_ne!(
            read_question(q, Some((1, 12))),
            read_question(q, Some((11, 2)))
        );
    }

    /// A short mixed run serves every route without a server error, and reports
    /// what processing left behind when the load stopped and how it caught up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_run_reports_its_routes_and_the_processing_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(LoadArgs {
            store: StoreArg::Sqlite,
            db: None,
            clients: 2,
            secs: 1,
            write_percent: 50,
            seed_items: 2,
            workers: 1,
            seed: 3,
            distinct_queries: true,
            out: dir.path().to_path_buf(),
        })
        .await
        .unwrap();
        assert!(r["requests"].as_u64().unwrap() > 0);
        assert_eq!(r["errors_5xx"], 0);
        assert!(r["routes"]["POST notes"]["requests"].as_u64().unwrap() > 0);
        // Every write was processed by the end: what waited was drained after.
        let backlog = r["backlog_items"].as_u64().unwrap();
        let drained = r["drained_items"].as_u64().unwrap();
        assert!(
            drained >= backlog.min(1),
            "{backlog} waiting, {drained} drained"
        );
        assert!(r["drain_secs"].as_f64().unwrap() >= 0.0);
        let md = std::fs::read_to_string(dir.path().join("load.md")).unwrap();
        assert!(
            md.contains("work items waiting when the load stopped"),
            "{md}"
        );
    }
}
