//! Throughput of the deterministic offline extractor on conversational text
//! (a measurement, not a test). Run in a release build:
//!
//! ```sh
//! cargo run --release -p rememberstack --example offline_extractor_throughput
//! ```
//!
//! It builds a synthetic conversation (about six turns, ~100 words, per chunk),
//! prepares every chunk's context bundle once, then times `offline::extract` alone
//! on one thread and prints chunks per second (median of five runs).

use rememberstack::internals::claims::bundle::{ChunkSpan, build_bundle};
use rememberstack::internals::claims::{DocumentHeader, offline};
use rememberstack::internals::text::{self, ChunkParams, SourceFormat};
use std::time::Instant;

fn main() {
    let speakers = ["Caroline", "Melanie"];
    let lines = [
        "I went to the LGBTQ support group yesterday and it was so powerful.",
        "That sounds amazing! What did you talk about?",
        "We talked about transgender stories and I felt really accepted.",
        "I painted a lake sunrise last year and I am framing it this week.",
        "My kids loved the camping trip to the mountains in June 2023.",
        "Thanks! I moved from Sweden four years ago with my mom.",
        "Are you still thinking about counseling as a career?",
        "Yes, I signed up for a psychology course that starts next month.",
    ];
    let messages: Vec<serde_json::Value> = (0..12_000)
        .map(|i| {
            serde_json::json!({
                "event_id": format!("D1:{i}"),
                "speaker": speakers[i % 2],
                "text": lines[(i * 7 + i / 3) % lines.len()],
            })
        })
        .collect();
    let bytes = serde_json::to_vec(&serde_json::json!({
        "session_time": "2023-05-08T13:56:00Z",
        "messages": messages,
    }))
    .expect("json");
    let converted = text::convert(SourceFormat::Conversation, &bytes, None).expect("convert");
    let rep = converted.representation;
    let blocks = text::blockize(&rep);
    let sections = text::build_sections(&rep.markdown, &blocks, "throughput");
    let params = ChunkParams {
        token_budget: 160,
        ..ChunkParams::default()
    };
    let plans = text::chunk_document(&rep.markdown, &blocks, &sections, &params);
    let spans: Vec<ChunkSpan> = plans
        .iter()
        .map(|p| ChunkSpan {
            ordinal: p.ordinal,
            section_ordinal: p.section_ordinal,
            block_start: p.block_start,
            block_end: p.block_end,
            start: p.start,
            end: p.end,
        })
        .collect();
    let header = DocumentHeader {
        title: "throughput".into(),
        source_kind: "conversation".into(),
        source_time: rememberstack_time("2023-05-08T13:56:00Z"),
        file_name: None,
    };
    let bundles: Vec<_> = (0..spans.len())
        .map(|i| build_bundle(&rep.markdown, &blocks, &spans, i, header.clone(), vec![], 1))
        .collect();
    let words: usize = plans
        .iter()
        .map(|p| p.text.split_whitespace().count())
        .sum();
    let turns: usize = plans
        .iter()
        .map(|p| (p.block_end - p.block_start) as usize)
        .sum();
    let mut rates = Vec::new();
    let mut claims = 0;
    for _ in 0..5 {
        let started = Instant::now();
        claims = 0;
        for b in &bundles {
            claims += offline::extract(b).claims.len();
        }
        rates.push(bundles.len() as f64 / started.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "offline extractor {}: {} chunks ({:.1} turns, {:.0} words per chunk), {} claims per pass",
        offline::OFFLINE_EXTRACTOR_VERSION,
        bundles.len(),
        turns as f64 / bundles.len() as f64,
        words as f64 / bundles.len() as f64,
        claims
    );
    println!(
        "median {:.0} chunks/s on one thread (min {:.0}, max {:.0})",
        rates[2], rates[0], rates[4]
    );
}

fn rememberstack_time(s: &str) -> Option<rememberstack::Timestamp> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}
