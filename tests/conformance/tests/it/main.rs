//! Behaviour tests run through the facade against every store.

mod appends;
mod claimify;
mod claims;
mod context;
mod corpus;
mod facts;
mod forget;
mod ingest;
mod keys;
mod ledger;
mod lifecycle;
mod schema;
mod search;
mod store_basics;
mod store_claims;
mod store_entities;
mod store_facts;
mod store_fixtures;
mod store_forget;
mod store_ledger;
mod store_lifecycle;
mod store_search;
mod store_sources;

use rememberstack::store::traits::*;
use rememberstack::{Memory, Stage, WorkStatus};

/// Total ledger rows in the store.
pub async fn ledger_rows(store: &dyn MemoryStore) -> u64 {
    store
        .work_counts(None)
        .await
        .unwrap()
        .iter()
        .map(|c| c.count)
        .sum()
}

/// Ledger rows of one stage and status in the memory's namespace.
pub async fn count(memory: &Memory, stage: Stage, status: WorkStatus) -> u64 {
    let status_report = memory.status().await.unwrap();
    status_report.ledger[stage.as_str()][status.as_str()]
}

/// A conversation JSON document of `n` turns starting at turn `from`.
pub fn conversation_json(from: usize, n: usize) -> String {
    let topics = [
        "the hiking trip to the Dolomites",
        "a new sourdough starter",
        "the chess tournament in Oslo",
        "repairing the old bicycle",
        "learning to play the cello",
        "the garden tomatoes",
        "a book about deep sea creatures",
    ];
    let messages: Vec<serde_json::Value> = (from..from + n)
        .map(|i| {
            serde_json::json!({
                "event_id": format!("D1:{i}"),
                "speaker": if i % 2 == 0 { "Caroline" } else { "Melanie" },
                "text": format!("Turn {i}: let me tell you about {} and how it went this week.", topics[i % topics.len()]),
            })
        })
        .collect();
    serde_json::json!({"session_time": "2023-05-08T13:56:00Z", "messages": messages}).to_string()
}
