//! Hard forget (D74) and note revocation: forgotten ≡ never existed. Every
//! surface, index, receipt and count stops revealing the content; the same bytes
//! are refused; an interrupted forget fails closed until it completes; and (for
//! the embedded store) no byte of the text survives in the store's files, not
//! even after an older copy of the database is restored.

use crate::facts::{all_facts as facts, at, named as about};
use crate::lifecycle::add;
use rememberstack::store::traits::*;
use rememberstack::{
    ClaimsAndSourcesInput, DocumentId, ForgetManifest, ForgetTarget, IngestOptions, Memory,
    MemoryStore, SqliteStore,
};
use rememberstack_conformance::{stores, test_config};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MARKER: &str = "Qwzmarker";
const ALPHA: &str = "# Field log\n\nAlice lives in Lisbon.\n\nQwzmarker works for Zentrix.\n\n\
                     Alice met Qwzmarker at the qwzmarker cafe in Porto.\n";
const BETA: &str = "# Beta notes\n\nAlice lives in Lisbon.\n";

/// Whether any read surface still shows the marker.
async fn served(memory: &Memory) -> Vec<String> {
    let mut seen = Vec::new();
    let hits = memory.search(MARKER, 20).await.unwrap();
    seen.extend(
        hits.results
            .iter()
            .filter(|c| c.text.contains(MARKER))
            .map(|c| format!("chunk {}", c.chunk_id)),
    );
    let env = memory
        .claims_and_sources_context(ClaimsAndSourcesInput {
            query: format!("who is {MARKER} and where does {MARKER} work"),
            k: Some(20),
            ..Default::default()
        })
        .await
        .unwrap();
    seen.extend(
        env.results
            .iter()
            .filter(|r| r.text().contains(MARKER))
            .map(|r| format!("context {}", r.text())),
    );
    // The fact and combined operations, asked without naming it.
    let facts_env = memory
        .facts_context(rememberstack::FactsContextInput {
            query: "who works for which company".into(),
            k: Some(20),
            ..Default::default()
        })
        .await
        .unwrap();
    let bundle = memory
        .combined_context(rememberstack::CombinedContextInput {
            query: "who works for which company".into(),
            entity_ids: None,
            temporal_scope: None,
        })
        .await
        .unwrap();
    for (what, json) in [
        ("facts_context", serde_json::to_string(&facts_env).unwrap()),
        ("combined_context", serde_json::to_string(&bundle).unwrap()),
    ] {
        if json.contains(MARKER) || json.contains("Zentrix") {
            seen.push(what.to_string());
        }
    }
    for c in memory.claims(None, true).await.unwrap() {
        if c.text.contains(MARKER) {
            seen.push(format!("claim {}", c.text));
        }
    }
    for f in facts(memory, true).await {
        if f.statement.contains(MARKER) || f.statement.contains("Zentrix") {
            seen.push(format!("fact {}", f.statement));
        }
    }
    for e in memory.entities(true, 500).await.unwrap() {
        if e.canonical_name.contains(MARKER)
            || e.canonical_name.contains("Zentrix")
            || e.profile_summary
                .as_deref()
                .is_some_and(|p| p.contains(MARKER))
        {
            seen.push(format!("entity {}", e.canonical_name));
        }
    }
    seen
}

/// The manifest `forget_document` would write for `doc`.
async fn manifest_for(store: &dyn MemoryStore, doc: DocumentId) -> ForgetManifest {
    let ns = store.namespace("default").await.unwrap().unwrap();
    let versions = store.versions(ns.id, doc).await.unwrap();
    ForgetManifest::new(
        &ns,
        ForgetTarget::Document,
        doc,
        &versions,
        ("text", "notes/alpha"),
        at("2024-06-01T00:00:00Z"),
    )
}

#[tokio::test]
async fn forget_removes_every_trace_keeps_independent_facts_and_refuses_the_bytes() {
    for h in stores().await {
        let memory = h.memory().await;
        let alpha = add(&memory, "notes/alpha", ALPHA).await;
        add(&memory, "notes/beta", BETA).await;
        let live = facts(&memory, false).await;
        assert_eq!(about(&live, "Lisbon")[0].evidence_count, 2, "{}", h.kind);
        assert!(!served(&memory).await.is_empty(), "{}: sanity", h.kind);

        // A receipt selecting records of both documents, recorded before the forget.
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: format!("Alice Lisbon {MARKER} Zentrix"),
                k: Some(8),
                record_receipt: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();
        let receipt = env.receipt_id.expect("receipt");
        let before = memory.resolve_receipt(receipt).await.unwrap();
        assert!(
            before.records.iter().any(|r| r.text.contains(MARKER)),
            "{}: {before:?}",
            h.kind
        );
        assert!(
            before.records.iter().any(|r| !r.text.contains(MARKER)),
            "{}: {before:?}",
            h.kind
        );

        let report = memory.forget_document(alpha).await.unwrap();
        assert_eq!(report.doc_id, alpha);
        assert!(report.claims >= 3, "{}: {report:?}", h.kind);
        assert!(report.chunks >= 1 && report.blobs == 1, "{report:?}");
        assert!(report.facts >= 1 && report.entities >= 2, "{report:?}");
        assert_eq!(report.receipts_rewritten, 1, "{report:?}");
        assert!(
            report.verification.len() > 10 && report.verification.iter().all(|c| c.remaining == 0),
            "{report:?}"
        );

        // No surface shows it; the independently supported fact survives, recounted.
        assert_eq!(served(&memory).await, Vec::<String>::new(), "{}", h.kind);
        let live = facts(&memory, false).await;
        let lisbon = about(&live, "Lisbon");
        assert_eq!(lisbon.len(), 1, "{}: {live:#?}", h.kind);
        assert_eq!(lisbon[0].evidence_count, 1, "{}", h.kind);
        let names: Vec<String> = memory
            .entities(true, 500)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.canonical_name)
            .collect();
        assert!(names.iter().any(|n| n == "Alice"), "{names:?}");
        assert_eq!(
            memory.document(alpha).await.unwrap_err().code().as_str(),
            "document_not_found",
            "{}",
            h.kind
        );
        assert!(
            memory
                .documents()
                .await
                .unwrap()
                .iter()
                .all(|d| d.doc_id != alpha)
        );

        // The receipt resolves as if the forgotten records had never been selected.
        let after = memory.resolve_receipt(receipt).await.unwrap();
        assert_eq!(after.status, "resolved", "{}: {after:?}", h.kind);
        let kept: Vec<&str> = before
            .records
            .iter()
            .filter(|r| !r.text.contains(MARKER) && !r.text.contains("Zentrix"))
            .map(|r| r.id.as_str())
            .collect();
        let now: Vec<&str> = after.records.iter().map(|r| r.id.as_str()).collect();
        assert!(!now.is_empty(), "{}", h.kind);
        assert!(now.iter().all(|id| kept.contains(id)), "{now:?} ⊄ {kept:?}");
        let inspected =
            serde_json::to_string(&memory.inspect_receipt(receipt).await.unwrap()).unwrap();
        assert_eq!(
            memory
                .inspect_receipt(receipt)
                .await
                .unwrap()
                .selections
                .len(),
            after.records.len(),
            "{inspected}"
        );

        // The same bytes are refused, under any reference; a repeat is not found.
        for r in ["notes/alpha", "elsewhere/alpha-copy"] {
            let err = memory
                .ingest_text(ALPHA, IngestOptions::new(r))
                .await
                .unwrap_err();
            assert_eq!(err.code().as_str(), "forgotten_content", "{}", h.kind);
        }
        let err = memory.forget_document(alpha).await.unwrap_err();
        assert_eq!(err.code().as_str(), "document_not_found");
        let err = memory.forget_document(DocumentId::new()).await.unwrap_err();
        assert_eq!(err.code().as_str(), "document_not_found");
        // Other bytes under the same reference are a new lineage.
        let fresh = memory
            .ingest_text(
                "# Field log\n\nBob lives in Madrid.\n",
                IngestOptions::new("notes/alpha"),
            )
            .await
            .unwrap();
        assert_ne!(fresh.document_id, alpha);
    }
}

#[tokio::test]
async fn an_interrupted_forget_fails_closed_until_it_is_resumed() {
    for h in stores().await {
        let memory = h.memory().await;
        let alpha = add(&memory, "notes/alpha", ALPHA).await;
        add(&memory, "notes/beta", BETA).await;
        // The process dies right after the manifest and the gate.
        h.store
            .begin_forget(
                &manifest_for(h.store.as_ref(), alpha).await,
                at("2024-06-01T00:00:00Z"),
            )
            .await
            .unwrap();

        let closed = |e: rememberstack::Error| assert_eq!(e.code().as_str(), "forget_in_progress");
        closed(memory.search("Alice", 5).await.unwrap_err());
        closed(
            memory
                .claims_and_sources_context(ClaimsAndSourcesInput {
                    query: "Alice".into(),
                    ..Default::default()
                })
                .await
                .unwrap_err(),
        );
        closed(memory.documents().await.unwrap_err());
        closed(
            memory
                .ingest_text("# New\n\nCarol lives in Rome.\n", IngestOptions::new("n"))
                .await
                .unwrap_err(),
        );
        closed(memory.list_notes(None, 10).await.unwrap_err());
        // Another namespace is not affected.
        let other = memory.with_namespace("other").unwrap();
        other.search("Alice", 5).await.unwrap();

        // The repeat finishes the episode; the namespace opens again.
        let report = memory.forget_document(alpha).await.unwrap();
        assert_eq!(report.doc_id, alpha);
        assert!(report.claims >= 3, "{}: {report:?}", h.kind);
        assert_eq!(served(&memory).await, Vec::<String>::new(), "{}", h.kind);
        assert!(memory.search("Alice", 5).await.is_ok());
        assert_eq!(
            about(&facts(&memory, false).await, "Lisbon")[0].evidence_count,
            1
        );
    }
}

#[tokio::test]
async fn revoking_a_note_clears_its_text_keeps_a_tombstone_and_refuses_it_again() {
    for h in stores().await {
        let memory = h.memory().await;
        let input = |request: &str, revision: &str, text: &str| rememberstack::NoteInput {
            request_id: request.into(),
            source_key: "notes/field".into(),
            source_revision: revision.into(),
            text: text.into(),
            metadata: Some(serde_json::json!({"author": "agent-7"})),
        };
        let text = "Qwzmarker works for Zentrix.";
        let note = memory.remember_note(input("r1", "1", text)).await.unwrap();
        add(&memory, "notes/beta", BETA).await;
        assert!(!served(&memory).await.is_empty(), "{}: sanity", h.kind);

        // A stale version is refused; an archived revision cannot be revoked.
        let err = memory.revoke_note(note.version_id, 7).await.unwrap_err();
        assert_eq!(err.code().as_str(), "conflict");
        let revoked = memory.revoke_note(note.version_id, 1).await.unwrap();
        assert_eq!(revoked.lifecycle, rememberstack::Admission::Revoked);
        assert_eq!(revoked.lifecycle_version, 2);
        assert_eq!(
            revoked.digest, note.digest,
            "the tombstone keeps the digest"
        );
        assert_eq!(served(&memory).await, Vec::<String>::new(), "{}", h.kind);
        assert!(about(&facts(&memory, false).await, "Lisbon").len() == 1);
        let page = memory.list_notes(None, 10).await.unwrap();
        assert_eq!(page.notes.len(), 1);
        assert_eq!(page.notes[0].lifecycle.as_str(), "revoked");
        let ns = h.store.namespace("default").await.unwrap().unwrap().id;
        let chunks = h.store.version_chunks(ns, note.version_id).await.unwrap();
        assert!(chunks.is_empty(), "{}: {chunks:?}", h.kind);
        assert!(
            h.store
                .prepared(ns, note.version_id)
                .await
                .unwrap()
                .is_none()
        );
        let err = memory.revoke_note(note.version_id, 2).await.unwrap_err();
        assert_eq!(err.code().as_str(), "conflict", "revoked is final");

        // Replay of the original request returns it (revoked); a new request naming
        // the revoked revision is refused, whatever its text.
        let replay = memory.remember_note(input("r1", "1", text)).await.unwrap();
        assert_eq!(replay.lifecycle, rememberstack::Admission::Revoked);
        for t in [text, "Something else."] {
            let err = memory.remember_note(input("r2", "1", t)).await.unwrap_err();
            assert_eq!(err.code().as_str(), "revoked", "{}", h.kind);
        }
        // A later revision of the same source is a new note.
        let next = memory
            .remember_note(input("r3", "2", "Dana works for Orbis."))
            .await
            .unwrap();
        assert_eq!(next.lifecycle, rememberstack::Admission::Promoted);

        // An archived revision: not revocable.
        memory.process_until_idle().await.unwrap();
        let archived = memory.archive_note(next.version_id, 1).await.unwrap();
        let err = memory
            .revoke_note(archived.version_id, archived.lifecycle_version)
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "conflict");
    }
}

#[tokio::test]
async fn forgetting_a_note_erases_every_revision_and_guards_its_text() {
    for h in stores().await {
        let memory = h.memory().await;
        let note = memory
            .remember_note(rememberstack::NoteInput {
                request_id: "r1".into(),
                source_key: "notes/secret".into(),
                source_revision: "1".into(),
                text: "Qwzmarker works for Zentrix.".into(),
                metadata: None,
            })
            .await
            .unwrap();
        let doc = add(&memory, "notes/beta", BETA).await;
        let err = memory.forget_note(doc).await.unwrap_err();
        assert_eq!(err.code().as_str(), "document_not_found", "not a note");
        let report = memory.forget_note(note.note_id).await.unwrap();
        assert_eq!(report.versions, 1);
        assert_eq!(served(&memory).await, Vec::<String>::new(), "{}", h.kind);
        assert!(memory.list_notes(None, 10).await.unwrap().notes.is_empty());
        let err = memory
            .remember_note(rememberstack::NoteInput {
                request_id: "r9".into(),
                source_key: "notes/again".into(),
                source_revision: "1".into(),
                text: "Qwzmarker works for Zentrix.".into(),
                metadata: None,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "forgotten_content", "{}", h.kind);
    }
}

// ---------------------------------------------------------------- SQLite files

/// Every file under `dir` whose bytes contain `needle`, case-insensitively.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let needle = needle.to_ascii_lowercase().into_bytes();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap().to_ascii_lowercase();
                if bytes.windows(needle.len()).any(|w| w == needle.as_slice()) {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Close a memory and its store (the WAL is checkpointed into the file).
async fn close(store: Arc<SqliteStore>, memory: Memory) {
    drop(memory);
    store.close().await;
}

async fn sqlite_memory(path: &Path) -> (Arc<SqliteStore>, Memory) {
    let store = Arc::new(SqliteStore::open(path).await.unwrap());
    let memory = Memory::builder()
        .store(store.clone())
        .config(test_config())
        .open()
        .await
        .unwrap();
    (store, memory)
}

#[tokio::test]
async fn sqlite_forget_leaves_no_byte_of_the_text_in_the_database_wal_or_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let path = root.join("memory.db");
    let (store, memory) = sqlite_memory(&path).await;
    let alpha = add(&memory, "notes/alpha", ALPHA).await;
    add(&memory, "notes/beta", BETA).await;
    // Churn: a second version of Alpha rewrites chunks and index segments.
    memory
        .ingest_text(
            &format!("{ALPHA}\nQwzmarker also sails.\n"),
            IngestOptions::new("notes/alpha"),
        )
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    memory.search(MARKER, 5).await.unwrap();
    assert!(
        !files_holding(&root, MARKER).is_empty(),
        "sanity: the marker is in the store files before the forget"
    );

    memory.forget_document(alpha).await.unwrap();
    close(store, memory).await;
    assert_eq!(files_holding(&root, MARKER), Vec::<PathBuf>::new());
    assert_eq!(files_holding(&root, "zentrix"), Vec::<PathBuf>::new());

    // Reopened: the store serves the rest, and still refuses the bytes.
    let (_store, memory) = sqlite_memory(&path).await;
    assert_eq!(served(&memory).await, Vec::<String>::new());
    assert_eq!(
        about(&facts(&memory, false).await, "Lisbon")[0].evidence_count,
        1
    );
    let err = memory
        .ingest_text(ALPHA, IngestOptions::new("notes/alpha"))
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "forgotten_content");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

#[tokio::test]
async fn sqlite_restoring_an_older_copy_cannot_resurrect_forgotten_content() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let path = root.join("memory.db");
    let blobs = root.join("memory.db.blobs");
    let backup = dir.path().join("backup");
    let (store, memory) = sqlite_memory(&path).await;
    let alpha = add(&memory, "notes/alpha", ALPHA).await;
    add(&memory, "notes/beta", BETA).await;
    close(store, memory).await;
    // The operator's backup: the database and its blobs (not the manifest root).
    std::fs::create_dir_all(&backup).unwrap();
    std::fs::copy(&path, backup.join("memory.db")).unwrap();
    copy_tree(&blobs, &backup.join("blobs"));

    let (store, memory) = sqlite_memory(&path).await;
    memory.forget_document(alpha).await.unwrap();
    close(store, memory).await;

    // Restore the old copy over the store.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(root.join(format!("memory.db{suffix}")));
    }
    std::fs::copy(backup.join("memory.db"), &path).unwrap();
    copy_tree(&backup.join("blobs"), &blobs);
    assert!(
        !files_holding(&root, MARKER).is_empty(),
        "sanity: the restored copy holds the marker"
    );

    // Opening re-honours the manifest before anything is served.
    let (store, memory) = sqlite_memory(&path).await;
    assert_eq!(served(&memory).await, Vec::<String>::new());
    let err = memory
        .ingest_text(ALPHA, IngestOptions::new("notes/alpha"))
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "forgotten_content");
    close(store, memory).await;
    assert_eq!(files_holding(&root, MARKER), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn sqlite_an_interrupted_forget_is_finished_when_the_store_opens() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let path = root.join("memory.db");
    let (store, memory) = sqlite_memory(&path).await;
    let alpha = add(&memory, "notes/alpha", ALPHA).await;
    add(&memory, "notes/beta", BETA).await;
    store
        .begin_forget(
            &manifest_for(store.as_ref(), alpha).await,
            at("2024-06-01T00:00:00Z"),
        )
        .await
        .unwrap();
    assert_eq!(
        memory.search("Alice", 3).await.unwrap_err().code().as_str(),
        "forget_in_progress"
    );
    close(store, memory).await;

    let (store, memory) = sqlite_memory(&path).await;
    assert_eq!(served(&memory).await, Vec::<String>::new());
    assert!(memory.search("Alice", 3).await.is_ok());
    close(store, memory).await;
    assert_eq!(files_holding(&root, MARKER), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn sqlite_an_unreadable_manifest_root_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let root = dir.path().join("manifests");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("broken.json"), b"{").unwrap();
    let err = SqliteStore::open_with(&path, Some(root)).await.unwrap_err();
    assert_eq!(err.code().as_str(), "store", "{err}");
}

/// A document of `n` lines, each naming a person who works for a company of
/// their own: about one fact per line that nothing else supports.
fn many_facts(n: usize) -> String {
    let mut text = String::from("# Staff\n\n");
    for i in 1..=n {
        text.push_str(&format!(
            "Person{i:05} Smith{i:05} works for Company{i:05} Inc.\n"
        ));
    }
    text
}

#[tokio::test]
async fn forgetting_a_document_that_alone_supports_thousands_of_facts_succeeds() {
    for h in stores().await {
        let memory = h.memory().await;
        let doc = add(&memory, "staff", &many_facts(1_000)).await;
        add(&memory, "notes/beta", BETA).await;
        let before = facts(&memory, false).await.len();
        assert!(before > 800, "{}: sanity, {before} facts", h.kind);
        // A receipt selecting the document's records, so the receipt pass runs too.
        memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "Person00007 Smith00007 Company00007".into(),
                k: Some(8),
                record_receipt: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();

        // Before the scrub built two expressions per removed fact into one
        // statement, which SQLite refused past about 500 facts.
        let report = memory.forget_document(doc).await.unwrap();
        assert!(report.facts > 800, "{}: {report:?}", h.kind);
        assert!(report.verification.iter().all(|c| c.remaining == 0));
        let left = facts(&memory, false).await;
        assert!(
            left.iter().all(|f| !f.statement.contains("Smith")),
            "{}",
            h.kind
        );
        assert_eq!(about(&left, "Lisbon").len(), 1, "{}", h.kind);
        assert!(memory.doctor().await.ok, "{}", h.kind);
    }
}

/// Damage every receipt of the harness so it no longer parses, keeping the ids it
/// names (a forget must rewrite such receipts, so it fails on them).
async fn corrupt_receipts(h: &rememberstack_conformance::Harness) {
    h.execute_sql(match h.kind {
        "postgres" => {
            "UPDATE recall_receipts SET body_json = jsonb_build_object('damaged', body_json)"
        }
        _ => "UPDATE recall_receipts SET body_json = json_object('damaged', json(body_json))",
    })
    .await;
}

#[tokio::test]
async fn a_forget_that_cannot_finish_closes_only_its_namespace_and_the_store_still_opens() {
    for h in stores().await {
        let memory = h.memory().await;
        let alpha = add(&memory, "notes/alpha", ALPHA).await;
        add(&memory, "notes/beta", BETA).await;
        let other = memory.with_namespace("other").unwrap();
        add(&other, "notes/gamma", "# Gamma\n\nCarol lives in Rome.\n").await;
        memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: format!("{MARKER} Zentrix"),
                k: Some(8),
                record_receipt: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();
        corrupt_receipts(&h).await;

        let err = memory.forget_document(alpha).await.unwrap_err();
        assert_eq!(err.code().as_str(), "store", "{}: {err}", h.kind);
        // The namespace is closed and says why, and how to resume.
        let closed = memory.search("Alice", 3).await.unwrap_err();
        assert_eq!(closed.code().as_str(), "forget_in_progress");
        assert!(closed.to_string().contains(&alpha.to_string()), "{closed}");
        let status = memory.status().await.unwrap();
        let pending = status.forget_in_progress.expect("status names the forget");
        assert_eq!(pending.document_id, alpha);
        assert!(
            pending
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("corrupt receipt")),
            "{}: {pending:?}",
            h.kind
        );
        assert_eq!(
            pending.resume_with,
            format!("remember --namespace default forget {alpha}")
        );
        let doctor = memory.doctor().await;
        assert!(!doctor.ok);
        let check = doctor.checks.iter().find(|c| c.name == "forgets").unwrap();
        assert!(
            check
                .error
                .as_deref()
                .is_some_and(|e| e.contains(&pending.resume_with)),
            "{check:?}"
        );

        // Opening the store again re-runs the forget, which fails again: the open
        // still succeeds, that namespace stays closed and every other one serves.
        let reopened = h.open_again().await;
        let again = rememberstack::Memory::builder()
            .store(reopened)
            .config(rememberstack_conformance::test_config())
            .open()
            .await
            .unwrap();
        assert_eq!(
            again.search("Alice", 3).await.unwrap_err().code().as_str(),
            "forget_in_progress"
        );
        let other_again = again.with_namespace("other").unwrap();
        assert!(
            !other_again
                .search("Carol", 3)
                .await
                .unwrap()
                .results
                .is_empty()
        );
        other_again
            .ingest_text("# Delta\n\nDan lives in Oslo.\n", IngestOptions::new("d"))
            .await
            .unwrap();

        // Repaired, the command the status named finishes the forget.
        h.execute_sql("DELETE FROM recall_receipts").await;
        let report = again.forget_document(alpha).await.unwrap();
        assert_eq!(report.doc_id, alpha);
        assert_eq!(served(&again).await, Vec::<String>::new(), "{}", h.kind);
        assert!(again.status().await.unwrap().forget_in_progress.is_none());
        assert!(again.doctor().await.ok, "{}", h.kind);
    }
}

#[tokio::test]
async fn sqlite_a_forget_without_room_to_rewrite_the_file_still_erases_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let path = root.join("memory.db");
    let (store, memory) = sqlite_memory(&path).await;
    let alpha = add(&memory, "notes/alpha", ALPHA).await;
    add(&memory, "notes/beta", BETA).await;
    // No disk could leave this much free.
    store.set_disk_reserve(u64::MAX / 4);
    let report = memory.forget_document(alpha).await.unwrap();
    let pending = report.file_rewrite_pending.expect("the rewrite is pending");
    assert!(pending.contains("not enough free disk"), "{pending}");
    assert_eq!(served(&memory).await, Vec::<String>::new());
    assert!(memory.search("Alice", 3).await.is_ok());
    let doctor = memory.doctor().await;
    let check = doctor.checks.iter().find(|c| c.name == "forgets").unwrap();
    assert!(!check.ok && check.error.as_deref().unwrap().contains("pending"));
    close(store, memory).await;

    // The next open has room and rewrites the file: nothing is pending any more,
    // and no byte of the text is left in the files (index pages can keep a removed
    // key until the file is rewritten).
    let (store, memory) = sqlite_memory(&path).await;
    assert!(memory.doctor().await.ok);
    close(store, memory).await;
    assert_eq!(files_holding(&root, MARKER), Vec::<PathBuf>::new());
}
