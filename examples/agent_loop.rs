//! A minimal agent loop over RememberStack: remember the conversation, recall
//! before answering. No LLM is needed to run it: where an agent would call its
//! model, this prints the context it would hand over.
//!
//! ```sh
//! cargo run -p rememberstack --example agent_loop
//! ```
//! (The Python and Node versions: `examples/python/agent_loop.py`,
//! `examples/node/agent_loop.mjs`.)

use rememberstack::{
    CombinedContextInput, ContextBundle, Conversation, EvidenceResult, IngestOptions, Memory,
    Message,
};

const QUESTIONS: [&str; 2] = [
    "Why did the nightly backup fail?",
    "When is the runner migration?",
];

fn message(event_id: &str, speaker: &str, text: &str) -> Message {
    Message {
        event_id: Some(event_id.into()),
        speaker: speaker.into(),
        text: text.into(),
        timestamp: None,
    }
}

/// The prompt section an agent would send its model: evidence with provenance.
fn render_context(bundle: &ContextBundle) -> String {
    let mut lines = Vec::new();
    for item in &bundle.claims_and_sources.results {
        let (kind, source_ref, event_ids) = match item {
            EvidenceResult::Claim(c) => ("claim", &c.source_ref, &c.event_ids),
            EvidenceResult::Chunk(c) => ("chunk", &c.source_ref, &c.event_ids),
        };
        let turns = if event_ids.is_empty() {
            String::new()
        } else {
            format!(" turns {}", event_ids.join(", "))
        };
        let text: String = item.text().split_whitespace().collect::<Vec<_>>().join(" ");
        let text: String = if text.chars().count() > 160 {
            text.chars().take(157).collect::<String>() + "..."
        } else {
            text
        };
        lines.push(format!("- {text}  [{kind} from {source_ref}{turns}]"));
    }
    for fact in &bundle.facts.results {
        lines.push(format!(
            "- fact: {}  [fact {}, {} evidence]",
            fact.fact.statement, fact.fact.fact_id, fact.fact.evidence_count
        ));
    }
    if lines.is_empty() {
        "(nothing remembered about this)".into()
    } else {
        lines.join("\n")
    }
}

#[tokio::main]
async fn main() -> rememberstack::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| rememberstack::Error::internal(e.to_string()))?;
    let memory = Memory::open(dir.path().join("memory.db")).await?;

    // 1. Remember what was said (a later turn appends).
    let conversation = Conversation {
        session_time: "2024-06-03T09:30:00Z".parse().ok(),
        messages: vec![
            message(
                "m1",
                "Maria",
                "Morning! The nightly backup failed again on Saturday.",
            ),
            message(
                "m2",
                "Joao",
                "I saw that. The cold-storage bucket hit its quota, so I raised it to 2 TB.",
            ),
            message(
                "m3",
                "Maria",
                "Thanks. Can you also move the runners to the new rack next week?",
            ),
            message(
                "m4",
                "Joao",
                "Sure, I will schedule the runner migration for Tuesday afternoon.",
            ),
        ],
    };
    memory
        .ingest_conversation(&conversation, IngestOptions::new("chat/standup"))
        .await?;
    memory
        .append_messages(
            "chat/standup",
            vec![message(
                "m5",
                "Maria",
                "Great, the backup ran fine last night.",
            )],
        )
        .await?;
    memory.process_until_idle().await?;

    // 2. For each user question: recall, then (here) show what the model would see.
    for question in QUESTIONS {
        let bundle = memory
            .combined_context(CombinedContextInput {
                query: question.into(),
                entity_ids: None,
                temporal_scope: None,
            })
            .await?;
        println!("user: {question}\ncontext:\n{}\n", render_context(&bundle));
    }
    Ok(())
}
