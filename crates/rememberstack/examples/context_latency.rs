//! Latency of the assured context operations on the embedded store (a measurement,
//! not a test). Run in a release build:
//!
//! ```sh
//! cargo run --release -p rememberstack --example context_latency -- 2000
//! ```
//!
//! The arguments are the number of synthetic documents (default 500), the number of
//! timed runs (default 200) and an optional store path that is kept and reused. Each document
//! has ten short sentences about people, employers and places, so claims ≈ 10 × docs.
//! Everything runs offline (hashing embedder, offline extractor, normalizer and
//! resolver). The store is built once through the ordinary pipeline; then every
//! operation runs 200 times with varied queries and anchors, and the median and p95
//! wall-clock latencies are printed. The query embedding (the hashing embedder) is
//! timed separately and reported on its own line.

use rememberstack::providers::{EmbedPurpose, Embedder};
use rememberstack::{
    ClaimsAndSourcesInput, CombinedContextInput, FactsContextInput, HashingEmbedder, IngestOptions,
    Memory,
};
use std::time::{Duration, Instant};

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i.min(samples.len() - 1)]
}

fn report(name: &str, samples: &mut [Duration]) {
    let p50 = percentile(samples, 0.5);
    let p95 = percentile(samples, 0.95);
    println!(
        "{name:<28} p50 {:>8.2} ms   p95 {:>8.2} ms   ({} runs)",
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
        samples.len()
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // REMEMBERSTACK_LOG=sqlx=debug prints every statement with its time.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("REMEMBERSTACK_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    let args: Vec<String> = std::env::args().collect();
    let docs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(500);
    let runs: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir()?;
    // A third argument keeps the built store at that path and reuses it next time.
    let path = args
        .get(3)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("memory.db"));
    let reuse = path.exists();
    let memory = Memory::open(&path).await?;
    let companies = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay"];
    let cities = [
        "Lisbon", "Oslo", "Prague", "Boston", "Kyoto", "Nairobi", "Lima",
    ];
    let hobbies = ["chess", "the cello", "sourdough", "climbing", "pottery"];
    let started = Instant::now();
    for d in 0..if reuse { 0 } else { docs } {
        let mut text = format!("# Team note {d}\n\n");
        for s in 0..10 {
            let person = format!("Person{} Surname{}", (d * 10 + s) % 997, s);
            let line = match s % 4 {
                0 => format!(
                    "{person} works for {}.",
                    companies[(d + s) % companies.len()]
                ),
                1 => format!("{person} lives in {}.", cities[(d * 3 + s) % cities.len()]),
                2 => format!(
                    "{person} enjoys {} on weekends.",
                    hobbies[(d + 2 * s) % hobbies.len()]
                ),
                _ => format!(
                    "{} opened an office in {} in March {}.",
                    companies[(d * 5 + s) % companies.len()],
                    cities[(d + s) % cities.len()],
                    2015 + (d % 10)
                ),
            };
            text.push_str(&line);
            text.push_str("\n\n");
        }
        memory
            .ingest_text(&text, IngestOptions::new(format!("notes/{d}")))
            .await?;
    }
    let ingest = started.elapsed();
    let drained = memory.process_until_idle().await?;
    let built = started.elapsed();
    let claims = memory.claims(None, false).await?.len();
    let entities = memory.entities(false, u32::MAX).await?.len();
    // Every current fact, a page at a time.
    let mut facts = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page = memory
            .facts_page(&rememberstack::FactQuery::default(), cursor.as_deref())
            .await?;
        facts += page.facts.len();
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    println!(
        "corpus: {docs} documents, {claims} claims, {entities} entities, {facts} facts; \
         ingest {:.1} s, pipeline {:.1} s ({} work items)",
        ingest.as_secs_f64(),
        (built - ingest).as_secs_f64(),
        drained.completed
    );

    let queries = [
        "who works for Acme",
        "where does Person12 Surname2 live",
        "offices opened in Oslo",
        "weekend hobbies like chess",
        "Initech office in Prague",
    ];
    let anchor_names = ["Acme", "Globex", "Oslo", "Lisbon"];
    let mut anchors = Vec::new();
    for n in anchor_names {
        if let Some(r) = memory.resolve_entity(n, Some(1)).await?.results.first() {
            anchors.push(r.entity_id.to_string());
        }
    }
    let (mut resolve, mut evidence, mut facts_t, mut combined, mut embed) =
        (vec![], vec![], vec![], vec![], vec![]);
    let embedder = HashingEmbedder::default();
    for i in 0..runs {
        let q = queries[i % queries.len()];
        let anchor = (i % 2 == 0).then(|| vec![anchors[i % anchors.len()].clone()]);
        let t = Instant::now();
        embedder
            .embed(&[q.to_string()], EmbedPurpose::Query)
            .await?;
        embed.push(t.elapsed());
        let t = Instant::now();
        memory
            .resolve_entity(anchor_names[i % anchor_names.len()], None)
            .await?;
        resolve.push(t.elapsed());
        let t = Instant::now();
        memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: q.into(),
                entity_ids: anchor.clone(),
                ..Default::default()
            })
            .await?;
        evidence.push(t.elapsed());
        let t = Instant::now();
        memory
            .facts_context(FactsContextInput {
                query: q.into(),
                entity_ids: anchor.clone(),
                ..Default::default()
            })
            .await?;
        facts_t.push(t.elapsed());
        let t = Instant::now();
        memory
            .combined_context(CombinedContextInput {
                query: q.into(),
                entity_ids: anchor,
                temporal_scope: None,
            })
            .await?;
        combined.push(t.elapsed());
        if i == 0 {
            eprintln!(
                "first run: resolve {:?}, evidence {:?}, facts {:?}, combined {:?}",
                resolve[0], evidence[0], facts_t[0], combined[0]
            );
        }
    }
    report("query embedding (hashing)", &mut embed);
    report("resolve_entity", &mut resolve);
    report("claims_and_sources_context", &mut evidence);
    report("facts_context", &mut facts_t);
    report("combined_context", &mut combined);
    Ok(())
}
