// The library API in one file: open an embedded memory, ingest a document and a
// conversation, process, search. Run with `cargo run --example quickstart`.

use rememberstack::{Conversation, IngestOptions, Memory, Message};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let memory = Memory::open(dir.path().join("memory.db")).await?;

    memory
        .ingest_text(
            "# Release plan\n\nVersion 2.0 ships on 14 March with the new sync engine.\n",
            IngestOptions::new("notes/release-plan"),
        )
        .await?;
    let conversation = Conversation {
        session_time: Some("2024-03-01T10:00:00Z".parse()?),
        messages: vec![
            Message {
                event_id: Some("msg-1".into()),
                speaker: "Ana".into(),
                text: "Did QA sign off on the sync engine?".into(),
                timestamp: None,
            },
            Message {
                event_id: Some("msg-2".into()),
                speaker: "Ben".into(),
                text: "Yes, QA signed off yesterday after the load tests passed.".into(),
                timestamp: None,
            },
        ],
    };
    memory
        .ingest_conversation(&conversation, IngestOptions::new("chat/release"))
        .await?;
    memory.process_until_idle().await?;

    for query in [
        "when does version 2.0 ship?",
        "who signed off on the sync engine?",
    ] {
        let envelope = memory.search(query, 3).await?;
        println!("{query}");
        for hit in &envelope.results {
            println!(
                "  [{:.3}] {} {:?}: {}",
                hit.scores.fused,
                hit.document_title,
                hit.event_ids,
                hit.text.replace('\n', " ")
            );
        }
    }
    Ok(())
}
