//! E2 with the offline extractor: claims, spans, the ledger, reuse and currency.

use rememberstack::{ErrorCode, IngestOptions, Memory, SearchRequest, Stage, VersioningMode};
use rememberstack_conformance::stores;
use std::collections::{HashMap, HashSet};

const CHAT: &str = r#"{"session_time": "2023-05-08T13:56:00Z", "messages": [
  {"event_id": "D1:1", "speaker": "Caroline", "text": "Hey Mel! How was your weekend?"},
  {"event_id": "D1:2", "speaker": "Melanie", "text": "Great! I painted that lake sunrise last year and finally framed it yesterday."},
  {"event_id": "D1:3", "speaker": "Caroline", "text": "I moved to Boston in 2019 for the counseling program."},
  {"event_id": "D1:4", "speaker": "Melanie", "text": "Cool."}
]}"#;

/// The version text a claim's span points into, for checking spans.
async fn version_text(memory: &Memory, version: rememberstack::VersionId) -> String {
    let store = memory.engine().store();
    let ns = store.namespace(memory.namespace()).await.unwrap().unwrap();
    store
        .prepared(ns.id, version)
        .await
        .unwrap()
        .unwrap()
        .representation
        .markdown
}

fn slice_chars(text: &str, start: u64, end: u64) -> String {
    text.chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect()
}

#[tokio::test]
async fn a_conversation_yields_attributed_grounded_claims() {
    for h in stores().await {
        let memory = h.memory().await;
        let receipt = memory
            .ingest_conversation(
                &serde_json::from_str(CHAT).unwrap(),
                IngestOptions::new("chat/weekend"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let claims = memory
            .claims(Some(receipt.document_id), false)
            .await
            .unwrap();
        assert!(!claims.is_empty(), "{}", h.kind);
        let texts: Vec<&str> = claims.iter().map(|c| c.text.as_str()).collect();
        // First-person statements become claims about the named speaker.
        assert!(
            texts
                .iter()
                .any(|t| t.contains("Caroline") && t.contains("Boston")),
            "{texts:?}"
        );
        // Relative dates resolve against the source time (2023-05-08).
        let lake = claims
            .iter()
            .find(|c| c.text.contains("lake sunrise"))
            .expect("the painting claim");
        assert!(lake.text.contains("Melanie"), "{}", lake.text);
        assert!(!lake.text.contains("last year"), "{}", lake.text);
        assert_eq!(lake.asserted_at.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        // Questions and fillers make no claims.
        assert!(texts.iter().all(|t| !t.contains("How was your weekend")));
        assert!(texts.iter().all(|t| *t != "Cool." && !t.ends_with("Cool.")));

        let text = version_text(&memory, receipt.version_id).await;
        for c in &claims {
            assert!(c.is_current);
            let occ = &c.occurrences[0];
            assert_eq!(occ.version_id, receipt.version_id);
            assert!(!occ.spans.is_empty());
            for s in &occ.spans {
                assert_eq!(
                    &text[s.start..s.end],
                    slice_chars(&text, s.char_start as u64, s.char_end as u64)
                );
            }
            assert!(!occ.event_ids.is_empty(), "claims carry their message ids");
        }
        let boston = claims.iter().find(|c| c.text.contains("Boston")).unwrap();
        assert_eq!(boston.occurrences[0].event_ids, vec!["D1:3".to_string()]);
        let span = boston.occurrences[0].spans[0];
        assert!(text[span.start..span.end].contains("moved to Boston in 2019"));

        // The ledger accounts for every passage: keeps, drops with reasons, accepted claims.
        let decisions = memory.claim_decisions(receipt.document_id).await.unwrap();
        let kinds: HashMap<&str, usize> = decisions.iter().fold(HashMap::new(), |mut m, d| {
            *m.entry(d.row.kind.as_str()).or_default() += 1;
            m
        });
        assert!(kinds.get("drop").copied().unwrap_or(0) >= 2, "{kinds:?}");
        assert_eq!(
            kinds.get("accepted").copied().unwrap_or(0),
            claims.len(),
            "{kinds:?}"
        );
        assert!(
            decisions
                .iter()
                .any(|d| d.row.kind == "drop" && d.row.reason.as_deref() == Some("question"))
        );

        // Claims are searchable, with provenance.
        let env = memory
            .search_claims("where did Caroline move", 3)
            .await
            .unwrap();
        assert_eq!(env.operation.name, "search_claims");
        let top = &env.results[0];
        assert!(top.text.contains("Boston"), "{}", top.text);
        assert_eq!(top.event_ids, vec!["D1:3".to_string()]);
        assert_eq!(top.version_id, receipt.version_id);
        assert!(env.freshness.semantic.ready);
        assert_eq!(
            memory.status().await.unwrap().ledger[Stage::Extract.as_str()]["done"],
            1
        );
    }
}

#[tokio::test]
async fn living_versions_retire_their_claims_snapshot_versions_keep_them() {
    for h in stores().await {
        let memory = h.memory().await;
        for (name, mode) in [
            ("snap", VersioningMode::Snapshot),
            ("live", VersioningMode::Living),
        ] {
            let opts = IngestOptions::new(name).mode(mode);
            memory
                .ingest_text("Alice Smith joined Acme Corp in 2021.", opts.clone())
                .await
                .unwrap();
            memory.process_until_idle().await.unwrap();
            memory
                .ingest_text("Alice Smith left Acme Corp in 2024.", opts)
                .await
                .unwrap();
            memory.process_until_idle().await.unwrap();
        }
        let docs = memory.documents().await.unwrap();
        for (name, expect_old_current) in [("snap", true), ("live", false)] {
            let doc = docs.iter().find(|d| d.source_ref == name).unwrap().doc_id;
            let current = memory.claims(Some(doc), false).await.unwrap();
            let all = memory.claims(Some(doc), true).await.unwrap();
            let joined = all
                .iter()
                .find(|c| c.text.contains("joined"))
                .expect("v1 claim");
            assert_eq!(joined.is_current, expect_old_current, "{name}");
            assert!(current.iter().any(|c| c.text.contains("left")), "{name}");
            assert_eq!(
                current.iter().any(|c| c.text.contains("joined")),
                expect_old_current,
                "{name}"
            );
        }
        // Retired claims are hidden from search unless the audit flag asks for them.
        let mut req = SearchRequest::new("ignored", "Alice joined Acme", 10);
        let live_doc = docs.iter().find(|d| d.source_ref == "live").unwrap().doc_id;
        let default = memory.search_claims_with(req.clone()).await.unwrap();
        assert!(
            default
                .results
                .iter()
                .all(|r| r.is_current && !(r.document_id == live_doc && r.text.contains("joined")))
        );
        req.include_retired = true;
        let audit = memory.search_claims_with(req).await.unwrap();
        assert!(
            audit
                .results
                .iter()
                .any(|r| !r.is_current && r.document_id == live_doc && r.text.contains("joined"))
        );
    }
}

#[tokio::test]
async fn appends_reuse_claims_across_many_versions() {
    const VERSIONS: usize = 500;
    for h in stores().await {
        let memory = h.memory().await;
        let turn = |i: usize| {
            serde_json::json!({
                "event_id": format!("m{i}"),
                "speaker": if i.is_multiple_of(2) { "Nate" } else { "Joanna" },
                "text": format!("I finished chapter {i} of my novel about the lighthouse in Maine."),
            })
        };
        let mut messages: Vec<serde_json::Value> = (0..4).map(turn).collect();
        let mut versions = Vec::new();
        for v in 0..VERSIONS {
            if v > 0 {
                messages.push(turn(messages.len()));
            }
            let conv =
                serde_json::json!({"session_time": "2023-01-10T10:00:00Z", "messages": messages});
            let r = memory
                .ingest_conversation(
                    &serde_json::from_value(conv).unwrap(),
                    IngestOptions::new("novel"),
                )
                .await
                .unwrap();
            versions.push(r.version_id);
            memory.process_until_idle().await.unwrap();
        }
        let doc = memory.documents().await.unwrap()[0].doc_id;
        let claims = memory.claims(Some(doc), true).await.unwrap();
        // One claim per distinct turn: nothing multiplied by 500 versions.
        let texts: HashSet<&str> = claims.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts.len(), claims.len(), "no duplicated claim texts");
        let turns = 4 + VERSIONS - 1;
        assert!(
            claims.len() <= turns * 2,
            "{} claims for {turns} turns",
            claims.len()
        );
        // Fresh extractions happened only where the input changed: the end of the
        // conversation. Superseded versions are compacted (their reuse decisions go),
        // so the latest version shows the reuse, and no input was extracted twice.
        let decisions = memory.claim_decisions(doc).await.unwrap();
        let last = *versions.last().unwrap();
        let in_last = |reused: bool| {
            decisions
                .iter()
                .filter(|d| d.version_id == last && (d.row.kind == "reused") == reused)
                .map(|d| d.chunk_id)
                .collect::<HashSet<_>>()
                .len()
        };
        assert!(
            in_last(true) > in_last(false) * 5,
            "reused {}, fresh {}",
            in_last(true),
            in_last(false)
        );
        let fresh_chunks: HashSet<_> = decisions
            .iter()
            .filter(|d| d.row.kind != "reused")
            .map(|d| d.chunk_id)
            .collect();
        assert!(
            fresh_chunks.len() <= 3 * VERSIONS,
            "{} chunks extracted afresh over {VERSIONS} versions",
            fresh_chunks.len()
        );
        // Every occurrence's spans point at the right text in its own version.
        // (Only the latest version keeps its text: the others are compacted.)
        {
            let version = last;
            let text = version_text(&memory, version).await;
            for c in &claims {
                for o in c.occurrences.iter().filter(|o| o.version_id == version) {
                    for s in &o.spans {
                        let slice = &text[s.start..s.end];
                        let n: String = c
                            .text
                            .split("chapter ")
                            .nth(1)
                            .and_then(|t| t.split(' ').next())
                            .unwrap_or_default()
                            .to_string();
                        assert!(
                            slice.contains(&format!("chapter {n} ")),
                            "{slice} vs {}",
                            c.text
                        );
                    }
                }
            }
        }
        // The first claim is still current and occurs in the latest version; the
        // compacted versions no longer hold an occurrence each.
        let first_claim = claims
            .iter()
            .find(|c| c.text.contains("chapter 0 "))
            .unwrap();
        assert!(first_claim.occurrences.iter().any(|o| o.version_id == last));
        assert!(
            first_claim.occurrences.len() < 5,
            "{}",
            first_claim.occurrences.len()
        );
        assert!(first_claim.is_current);
    }
}

#[tokio::test]
async fn claim_reads_refuse_unknown_documents() {
    for h in stores().await {
        let memory = h.memory().await;
        memory
            .ingest_text("Anything at all.", IngestOptions::new("x"))
            .await
            .unwrap();
        let ghost = rememberstack::DocumentId::new();
        assert_eq!(
            memory.claims(Some(ghost), false).await.unwrap_err().code(),
            ErrorCode::DocumentNotFound
        );
        assert_eq!(
            memory.claim_decisions(ghost).await.unwrap_err().code(),
            ErrorCode::DocumentNotFound
        );
        let other = memory.with_namespace("empty-ns").unwrap();
        assert!(other.claims(None, true).await.unwrap().is_empty());
    }
}
