//! The bad-input corpus (`tests/conformance/corpus/bad-inputs`, with the outcome
//! each file must have in `expected.tsv`) and generated hostile inputs, each fed
//! through ingest: a typed error that writes nothing, or a correct result that
//! processes without a dead letter. Then arbitrary JSON bodies through every
//! JSON call the bindings and tools share: no panic, and an error writes nothing.

use crate::ledger_rows;
use proptest::prelude::*;
use rememberstack::{ErrorCode, IngestOptions, Memory, SourceFormat};
use rememberstack_conformance::{Harness, stores};
use serde_json::{Value, json};
use std::path::Path;

/// What a store holds, to compare before and after a refused input.
async fn footprint(h: &Harness, memory: &Memory) -> (u64, usize, usize) {
    (
        ledger_rows(h.store.as_ref()).await,
        h.store.namespaces().await.unwrap().len(),
        memory.documents().await.unwrap().len(),
    )
}

/// Ingest `bytes` as file `name` (a `.conv.json` name is declared a conversation)
/// and check the outcome: `ok` (then it must process cleanly and be served) or
/// the error code, with nothing written.
async fn check(h: &Harness, memory: &Memory, name: &str, bytes: &[u8], expected: &str) {
    let path = h.write(&format!("corpus/{name}"), bytes);
    let options = if name.ends_with(".conv.json") {
        IngestOptions::default().kind(SourceFormat::Conversation)
    } else {
        IngestOptions::default()
    };
    let before = footprint(h, memory).await;
    match memory.ingest_file(&path, options).await {
        Ok(receipt) => {
            assert_eq!(expected, "ok", "{}: {name} was accepted", h.kind);
            memory.process_until_idle().await.unwrap();
            let status = memory.status().await.unwrap();
            assert!(
                status.dead_letters.is_empty(),
                "{}: {name} left dead letters: {:?}",
                h.kind,
                status.dead_letters
            );
            let doc = memory.document(receipt.document_id).await.unwrap();
            assert_eq!(doc.summary.status, "ready", "{}: {name}", h.kind);
        }
        Err(e) => {
            assert_eq!(e.code().as_str(), expected, "{}: {name}: {e}", h.kind);
            assert!(!e.to_string().is_empty());
            assert_eq!(
                footprint(h, memory).await,
                before,
                "{}: refusing {name} wrote something",
                h.kind
            );
        }
    }
}

fn corpus_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/bad-inputs")
}

#[tokio::test]
async fn every_corpus_input_is_refused_typed_or_served() {
    let manifest = std::fs::read_to_string(corpus_dir().join("expected.tsv")).unwrap();
    let cases: Vec<(&str, &str)> = manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_once('\t').expect("file<TAB>outcome"))
        .collect();
    // Every file in the directory has an expected outcome, and the reverse.
    let mut files: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "expected.tsv")
        .collect();
    files.sort();
    let mut listed: Vec<String> = cases.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed);
    for h in stores().await {
        let memory = h.memory().await;
        for (name, expected) in &cases {
            let bytes = std::fs::read(corpus_dir().join(name)).unwrap();
            check(&h, &memory, name, &bytes, expected).await;
        }
    }
}

#[tokio::test]
async fn generated_hostile_inputs_are_refused_typed_or_served() {
    const MB: usize = 1024 * 1024;
    let token = "x".repeat(MB);
    // Ten nested 800-byte keys over 5,000 leaves: 18 KB that used to render ~40 MB.
    let mut amplifier = json!(vec![0; 5000]);
    for level in 0..10u8 {
        amplifier = json!({ char::from(b'a' + level).to_string().repeat(800): amplifier });
    }
    let speakers: Vec<Value> = (0..1001)
        .map(|i| json!({"speaker": format!("S{i}"), "text": "hello"}))
        .collect();
    let tiny_records: Vec<Value> = (0..7500).map(|i| json!([i % 10])).collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("one-mb-token.md", token.clone().into_bytes(), "ok"),
        (
            "one-mb-string.json",
            json!({ "title": "t", "blob": token })
                .to_string()
                .into_bytes(),
            "ok",
        ),
        (
            "one-mb-text.conv.json",
            json!([{ "speaker": "A", "text": token }])
                .to_string()
                .into_bytes(),
            "ok",
        ),
        (
            "amplifier.json",
            amplifier.to_string().into_bytes(),
            "too_large",
        ),
        (
            "speakers.conv.json",
            serde_json::to_vec(&speakers).unwrap(),
            "too_large",
        ),
        (
            "tiny-records.json",
            serde_json::to_vec(&tiny_records).unwrap(),
            "ok",
        ),
    ];
    for h in stores().await {
        let memory = h.memory().await;
        for (name, bytes, expected) in &cases {
            let chunks_before = memory.status().await.unwrap().semantic.chunks;
            check(&h, &memory, name, bytes, expected).await;
            if *name == "tiny-records.json" {
                // 7,500 records used to be 7,500 sections, hence 7,500 chunks; runs
                // of small records now share sections and list items, so chunks
                // follow the rendered bytes (about 110 KB at ~250 bytes a chunk).
                let chunks = memory.status().await.unwrap().semantic.chunks - chunks_before;
                assert!((1..=600).contains(&chunks), "{}: {chunks} chunks", h.kind);
            }
        }
    }
}

/// A JSON value built from the field names the calls use, hostile scalars and
/// nesting, so parsing reaches past the first field often.
fn json_value() -> impl Strategy<Value = Value> {
    let keys = prop::sample::select(vec![
        "query",
        "k",
        "roles",
        "cursor",
        "grain",
        "entities",
        "entity_ids",
        "documents",
        "document_ids",
        "text",
        "name",
        "speaker",
        "messages",
        "event_id",
        "conversation",
        "conversation_ref",
        "source_ref",
        "kind",
        "limit",
        "budget",
        "temporal_scope",
        "mode",
        "at",
        "records",
        "input",
        "document_id",
        "fact_id",
        "claim_id",
        "chunk_id",
        "depth",
        "predicates",
        "window",
        "start_as",
        "title",
        "from",
        "to",
        "bogus",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![Just(0u64), Just(1), Just(101), Just(u64::MAX)].prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z _\\-:.0-9é東\u{0}]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("body"),
            Just("legal"),
            Just("chunks"),
            Just("facts"),
            Just("current"),
            Just("history"),
            Just("2024-05-01T00:00:00Z"),
            Just("01a23acf-cf42-753e-bee9-ed7a73c06d9e"),
            Just("resolve_entity"),
            Just("facts_context"),
        ]
        .prop_map(|s| Value::String(s.to_string())),
        (0usize..5000).prop_map(|n| Value::String("q".repeat(n))),
    ];
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            (
                0usize..150,
                prop::sample::select(vec!["body", "legal", "nav", "references", "boilerplate"])
            )
                .prop_map(|(n, r)| Value::Array(vec![json!(r); n])),
            prop::collection::btree_map(keys.clone(), inner, 0..6).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

#[test]
fn arbitrary_json_bodies_get_typed_errors_and_write_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The embedded store: every call's parsing and validation is the facade's.
    let h = rt.block_on(stores()).into_iter().next().unwrap();
    let memory = rt.block_on(async {
        let memory = h.memory().await;
        memory
            .ingest_text(
                "Ada Lovelace worked with Charles Babbage in London.",
                IngestOptions::new("seed"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        memory
    });
    // Reading files named by the input is ingest_file's job, not a parser's, and
    // doctor calls the providers: both are left out.
    let methods: Vec<&str> = rememberstack::calls::methods()
        .into_iter()
        .filter(|m| !matches!(*m, "ingest_file" | "doctor"))
        .collect();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &(prop::sample::select(methods), json_value()),
            |(method, input)| {
                rt.block_on(async {
                    let before = footprint(&h, &memory).await;
                    match rememberstack::calls::call(&memory, method, input.clone()).await {
                        Ok(out) => {
                            prop_assert!(serde_json::from_str::<Value>(&out).is_ok());
                        }
                        Err(e) => {
                            prop_assert!(
                                !matches!(e.code(), ErrorCode::Internal | ErrorCode::Store),
                                "{method} {input}: {e}"
                            );
                            prop_assert_eq!(
                                footprint(&h, &memory).await,
                                before,
                                "{} {} wrote before failing: {}",
                                method,
                                input,
                                e
                            );
                        }
                    }
                    Ok(())
                })
            },
        )
        .unwrap();
}
