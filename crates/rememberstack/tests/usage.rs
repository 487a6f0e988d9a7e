//! Provider usage: every embedder call the engine makes is counted, ingest stages
//! and request-path query embeddings alike.

use rememberstack::{Config, IngestOptions, Memory};

#[tokio::test]
async fn embedder_calls_and_texts_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let memory = Memory::builder()
        .path(dir.path().join("memory.db"))
        .config(Config {
            embedder: rememberstack::EmbedderConfig::hashing(),
            ..Config::default()
        })
        .open()
        .await
        .unwrap();
    assert!(memory.provider_usage().is_empty(), "nothing called yet");
    memory
        .ingest_text(
            "# Log\n\nThe lighthouse keeper logs every storm. Ada keeps the lamp.",
            IngestOptions::new("log"),
        )
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    let embed = |m: &Memory| {
        m.provider_usage()
            .into_iter()
            .find(|u| u.provider == "embedder")
            .expect("embedder usage")
    };
    let after_ingest = embed(&memory);
    assert!(after_ingest.calls > 0);
    assert!(after_ingest.texts >= after_ingest.calls);
    assert_eq!(after_ingest.failures, 0);
    assert_eq!(after_ingest.seat, "embed");
    // A search embeds its query: one more call, one more text; a handle on another
    // namespace shares the counters.
    memory.search("storm", 5).await.unwrap();
    let other = memory.with_namespace("elsewhere").unwrap();
    let after_search = embed(&other);
    assert_eq!(after_search.calls, after_ingest.calls + 1);
    assert_eq!(after_search.texts, after_ingest.texts + 1);
}
