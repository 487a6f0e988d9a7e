//! E0: lineages, versions, modes, namespaces, parking and bad input.

use crate::{conversation_json, ledger_rows};
use rememberstack::{EngineConfig, ErrorCode, IngestOptions, SourceFormat, VersioningMode};
use rememberstack_conformance::{stores, test_config};

#[tokio::test]
async fn lineage_and_version_identity() {
    for h in stores().await {
        let memory = h.memory().await;
        let path = h.write(
            "notes/plan.md",
            "# Plan\n\nShip the first release in May.\n",
        );
        let first = memory.ingest_file(&path, Default::default()).await.unwrap();
        assert_eq!(first.outcome, "created", "{}", h.kind);
        assert!(first.new_lineage);
        assert_eq!(first.source_kind, "file");
        let canonical = std::fs::canonicalize(&path).unwrap();
        assert_eq!(first.source_ref, canonical.to_string_lossy());
        memory.process_until_idle().await.unwrap();

        // An edited file is a new version of the same lineage.
        std::fs::write(&path, "# Plan\n\nShip the first release in June.\n").unwrap();
        let second = memory.ingest_file(&path, Default::default()).await.unwrap();
        assert_eq!(second.outcome, "created");
        assert!(!second.new_lineage);
        assert_eq!(second.document_id, first.document_id);
        assert_ne!(second.version_id, first.version_id);
        memory.process_until_idle().await.unwrap();

        let docs = memory.documents().await.unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].version_count, 2);
        assert_eq!(docs[0].current_version_id, Some(second.version_id));
        assert_eq!(docs[0].file_name.as_deref(), Some("plan.md"));
        assert_eq!(docs[0].title, "Plan");
        assert_eq!(docs[0].status, "ready");

        let detail = memory.document(first.document_id).await.unwrap();
        assert_eq!(
            detail.names,
            vec!["Plan".to_string(), "plan.md".to_string()]
        );
        let ordinals: Vec<u32> = detail.versions.iter().map(|v| v.ordinal).collect();
        assert_eq!(ordinals, vec![1, 2]);
        assert!(detail.versions[1].is_current && !detail.versions[0].is_current);

        // Search serves the current version only.
        let env = memory.search("release June May", 10).await.unwrap();
        assert!(!env.results.is_empty());
        assert!(
            env.results
                .iter()
                .all(|r| r.version_id == second.version_id)
        );

        // An explicit --source-ref names another lineage for the same bytes.
        let other = memory
            .ingest_file(&path, IngestOptions::new("drive:file-42"))
            .await
            .unwrap();
        assert!(other.new_lineage);
        assert_ne!(other.document_id, first.document_id);
    }
}

#[tokio::test]
async fn identical_bytes_are_a_no_op() {
    for h in stores().await {
        let memory = h.memory().await;
        let path = h.write("same.md", "Nothing changes here.\n");
        let first = memory.ingest_file(&path, Default::default()).await.unwrap();
        let rows = ledger_rows(h.store.as_ref()).await;
        let again = memory.ingest_file(&path, Default::default()).await.unwrap();
        assert_eq!(again.outcome, "unchanged");
        assert_eq!(again.version_id, first.version_id);
        assert_eq!(ledger_rows(h.store.as_ref()).await, rows, "no new work");
        assert_eq!(memory.documents().await.unwrap()[0].version_count, 1);
    }
}

#[tokio::test]
async fn living_and_snapshot_lineages() {
    for h in stores().await {
        let memory = h.memory().await;
        for (name, mode) in [
            ("snap", VersioningMode::Snapshot),
            ("live", VersioningMode::Living),
        ] {
            let opts = IngestOptions::new(name).mode(mode);
            memory
                .ingest_text("Version one says the sky is green.", opts.clone())
                .await
                .unwrap();
            memory.process_until_idle().await.unwrap();
            memory
                .ingest_text("Version two says the sky is blue.", opts)
                .await
                .unwrap();
            memory.process_until_idle().await.unwrap();
        }
        let docs = memory.documents().await.unwrap();
        let testimony = |name: &'static str| {
            let id = docs.iter().find(|d| d.source_ref == name).unwrap().doc_id;
            let memory = memory.clone();
            async move {
                let d = memory.document(id).await.unwrap();
                assert_eq!(
                    d.summary.mode.as_str(),
                    if name == "snap" { "snapshot" } else { "living" }
                );
                d.versions
                    .iter()
                    .map(|v| v.testimony.clone())
                    .collect::<Vec<_>>()
            }
        };
        // Snapshot: every version stays testimony. Living: the old version is superseded.
        assert_eq!(testimony("snap").await, vec!["current", "current"]);
        assert_eq!(testimony("live").await, vec!["superseded", "current"]);

        // A lineage's mode cannot flip; the refusal writes nothing.
        let rows = ledger_rows(h.store.as_ref()).await;
        let err = memory
            .ingest_text(
                "Version three.",
                IngestOptions::new("snap").mode(VersioningMode::Living),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);
        assert_eq!(ledger_rows(h.store.as_ref()).await, rows);
        let snap = docs.iter().find(|d| d.source_ref == "snap").unwrap().doc_id;
        assert_eq!(memory.document(snap).await.unwrap().versions.len(), 2);
    }
}

#[tokio::test]
async fn namespaces_are_isolated() {
    for h in stores().await {
        let a = h.memory().await.with_namespace("team-a").unwrap();
        let b = a.with_namespace("team-b").unwrap();
        a.ingest_text(
            "The zebra project ships on Monday.",
            IngestOptions::new("zebra"),
        )
        .await
        .unwrap();
        b.ingest_text(
            "Zebra crossings need repainting on Elm Street.",
            IngestOptions::new("zebra"),
        )
        .await
        .unwrap();
        a.process_until_idle().await.unwrap();

        let a_docs: Vec<_> = a
            .documents()
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.doc_id)
            .collect();
        let b_docs: Vec<_> = b
            .documents()
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.doc_id)
            .collect();
        assert_eq!(a_docs.len(), 1);
        assert_eq!(b_docs.len(), 1);
        assert_ne!(
            a_docs, b_docs,
            "the same source_ref is a different lineage per namespace"
        );

        for (memory, own, other) in [(&a, &a_docs, &b_docs), (&b, &b_docs, &a_docs)] {
            let env = memory.search("zebra", 10).await.unwrap();
            assert!(!env.results.is_empty());
            for r in &env.results {
                assert!(own.contains(&r.document_id));
                assert!(!other.contains(&r.document_id));
            }
            assert_eq!(memory.status().await.unwrap().documents, 1);
        }

        // A namespace that was never written reads as empty, not as an error.
        let ghost = a.with_namespace("never-written").unwrap();
        assert!(ghost.search("zebra", 5).await.unwrap().results.is_empty());
        assert!(ghost.documents().await.unwrap().is_empty());
        let names: Vec<String> = h
            .store
            .namespaces()
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.slug)
            .collect();
        assert!(!names.contains(&"never-written".to_string()));
        assert!(a.with_namespace("Bad/Name").is_err());
    }
}

#[tokio::test]
async fn unknown_formats_are_stored_and_parked() {
    for h in stores().await {
        let memory = h.memory().await;
        let bytes: Vec<u8> = (0u8..=255).cycle().take(4000).collect();
        let path = h.write("scan.pdf", &bytes);
        let receipt = memory.ingest_file(&path, Default::default()).await.unwrap();
        assert!(receipt.parked);
        assert_eq!(receipt.format, None);
        let report = memory.process_until_idle().await.unwrap();
        assert_eq!(report.dead_lettered, 0);
        let status = memory.status().await.unwrap();
        assert_eq!(status.parked_no_route, 1);
        assert_eq!(status.ledger["e0.prepare"]["pending"], 1);
        assert!(status.dead_letters.is_empty());
        let docs = memory.documents().await.unwrap();
        assert_eq!(docs[0].status, "parked");
        assert_eq!(docs[0].current_version_id, None);
        // Never lost: the original is still there, byte for byte.
        let detail = memory.document(receipt.document_id).await.unwrap();
        assert_eq!(detail.versions[0].mime, "application/pdf");
        let ns = h.store.namespace("default").await.unwrap().unwrap();
        let stored = h
            .store
            .content(ns.id, &detail.versions[0].content_sha256)
            .await
            .unwrap();
        assert_eq!(stored, bytes);
    }
}

#[tokio::test]
async fn bad_input_is_refused_and_writes_nothing() {
    for h in stores().await {
        let mut config = test_config();
        config.engine = EngineConfig {
            max_source_bytes: 200,
            ..config.engine
        };
        let memory = h.memory_with(config, None, None).await;
        let cases: Vec<(&str, Vec<u8>, ErrorCode)> = vec![
            ("empty.md", vec![], ErrorCode::EmptyInput),
            ("blank.txt", b"  \n\t \n".to_vec(), ErrorCode::EmptyInput),
            (
                "latin1.md",
                vec![b'c', b'a', b'f', 0xE9, b'\n'],
                ErrorCode::InvalidUtf8,
            ),
            ("big.md", vec![b'a'; 201], ErrorCode::TooLarge),
            (
                "broken.json",
                b"{not json".to_vec(),
                ErrorCode::InvalidInput,
            ),
        ];
        for (name, bytes, code) in cases {
            let path = h.write(name, &bytes);
            let err = memory
                .ingest_file(&path, Default::default())
                .await
                .unwrap_err();
            assert_eq!(err.code(), code, "{name}: {err}");
        }
        // Declared conversations are validated as conversations.
        let path = h.write("turns.json", br#"[{"speaker": "", "text": "hi"}]"#);
        let err = memory
            .ingest_file(
                &path,
                rememberstack::IngestOptions::default().kind(SourceFormat::Conversation),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConversation);
        let err = memory
            .ingest_file(h.dir.path().join("missing.md"), Default::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotFound);
        let err = memory
            .ingest_text("text", IngestOptions::new("  "))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);

        assert!(
            h.store.namespaces().await.unwrap().is_empty(),
            "no namespace was created"
        );
        assert_eq!(ledger_rows(h.store.as_ref()).await, 0);
        assert!(memory.documents().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn conversations_keep_turns_and_event_ids() {
    for h in stores().await {
        let memory = h.memory().await;
        let path = h.write("session.json", conversation_json(0, 6));
        let receipt = memory.ingest_file(&path, Default::default()).await.unwrap();
        assert_eq!(receipt.format, Some(SourceFormat::Conversation));
        memory.process_until_idle().await.unwrap();
        let detail = memory.document(receipt.document_id).await.unwrap();
        // D137: consecutive turns stay in one section.
        assert_eq!(detail.sections.len(), 1);
        let meta = &detail.versions[0].metadata;
        assert_eq!(
            meta.authors.as_ref().unwrap().value,
            vec!["Caroline".to_string(), "Melanie".to_string()]
        );
        // The session time is the version's source time.
        assert_eq!(
            detail.versions[0].source_modified_at.to_rfc3339(),
            "2023-05-08T13:56:00+00:00"
        );
        let env = memory.search("sourdough starter", 3).await.unwrap();
        let top = &env.results[0];
        assert!(top.text.contains("Melanie: Turn 1"), "{}", top.text);
        assert!(
            top.event_ids.contains(&"D1:1".to_string()),
            "{:?}",
            top.event_ids
        );
        assert_eq!(top.asserted_at.to_rfc3339(), "2023-05-08T13:56:00+00:00");
    }
}

#[tokio::test]
async fn config_is_validated() {
    for h in stores().await {
        let mut config = rememberstack_conformance::test_config();
        config.engine.chunk.token_budget = 0;
        let err = rememberstack::Memory::builder()
            .store(h.store.clone())
            .config(config)
            .open()
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Config);
    }
}

/// D101: a version records who created it, only when it is created; identical
/// bytes later (a no-op) never rewrite it, and a principal is validated.
#[tokio::test]
async fn ingest_attribution_is_recorded_at_creation_only() {
    use rememberstack::{IngestPrincipal, PrincipalKind};
    for h in stores().await {
        let memory = h.memory().await;
        let alice = IngestPrincipal::new(PrincipalKind::User, "alice@example.com").unwrap();
        let bot = IngestPrincipal::new(PrincipalKind::Service, "sync-bot").unwrap();
        let mut options = rememberstack::IngestOptions::new("attributed");
        options.principal = Some(alice.clone());
        let first = memory
            .ingest_text("# A\n\nFirst text.", options)
            .await
            .unwrap();
        // The same bytes from someone else: unchanged, attribution untouched.
        let mut options = rememberstack::IngestOptions::new("attributed");
        options.principal = Some(bot.clone());
        let again = memory
            .ingest_text("# A\n\nFirst text.", options)
            .await
            .unwrap();
        assert_eq!(again.outcome, "unchanged", "{}", h.kind);
        assert_eq!(again.version_id, first.version_id);
        // New bytes without a principal: a version without attribution.
        memory
            .ingest_text(
                "# A\n\nSecond text.",
                rememberstack::IngestOptions::new("attributed"),
            )
            .await
            .unwrap();
        let detail = memory.document(first.document_id).await.unwrap();
        assert_eq!(detail.versions.len(), 2, "{}", h.kind);
        assert_eq!(
            detail.versions[0].ingested_by,
            Some(alice.clone()),
            "{}",
            h.kind
        );
        assert_eq!(detail.versions[1].ingested_by, None);
        let json = serde_json::to_value(&detail).unwrap();
        assert_eq!(json["versions"][0]["ingested_by"]["kind"], "user");
        assert!(
            json["versions"][1].get("ingested_by").is_none(),
            "omitted when absent"
        );
        // One principal row serves every version it creates.
        let mut options = rememberstack::IngestOptions::new("other");
        options.principal = Some(alice.clone());
        let other = memory.ingest_text("# B\n\nOther.", options).await.unwrap();
        let detail = memory.document(other.document_id).await.unwrap();
        assert_eq!(detail.versions[0].ingested_by, Some(alice));
    }
    for bad in ["", "naïve", "tab\there", &"x".repeat(257)] {
        let err = IngestPrincipal::new(PrincipalKind::User, bad).unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_input", "{bad:?}");
    }
    assert!(PrincipalKind::parse("robot").is_err());
}
