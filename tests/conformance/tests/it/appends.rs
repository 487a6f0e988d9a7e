//! Conversation appends cost what they add: superseded versions are compacted, so a
//! conversation appended one message at a time ends close to the size of the same
//! conversation ingested once, with the same search answers, every claim keeping
//! its evidence, no unchanged input extracted twice, and a clean hard forget.

use crate::facts::at;
use rememberstack::Message;
use rememberstack_conformance::{Harness, stores};

fn message(i: usize) -> Message {
    let people = ["Caroline", "Melanie", "Jon", "Gina"];
    let places = ["Lisbon", "Porto", "Oslo", "Quito", "Hanoi"];
    Message {
        event_id: Some(format!("T:{i:04}")),
        speaker: people[i % people.len()].into(),
        text: format!(
            "On day {i}, {} said that {} moved to {} and now works for Company{i:04} Inc.",
            people[i % people.len()],
            people[(i + 1) % people.len()],
            places[i % places.len()]
        ),
        timestamp: Some(at("2024-01-01T00:00:00Z") + chrono::Duration::minutes(i as i64)),
    }
}

/// Rows and bytes a conversation leaves in the store.
#[derive(Debug, PartialEq)]
struct Footprint {
    blobs: u64,
    blob_bytes: u64,
    chunks: u64,
    representation_bytes: u64,
    blocks: u64,
    ledger_rows: u64,
}

async fn footprint(h: &Harness) -> Footprint {
    let n = |sql: &'static str| async move {
        h.query_texts(sql).await[0].parse::<u64>().expect("a count")
    };
    Footprint {
        blobs: n("SELECT CAST(COUNT(*) AS TEXT) FROM content_objects").await,
        blob_bytes: n("SELECT CAST(COALESCE(SUM(size), 0) AS TEXT) FROM content_objects").await,
        chunks: n("SELECT CAST(COUNT(*) AS TEXT) FROM chunks").await,
        representation_bytes: n(
            "SELECT CAST(COALESCE(SUM(LENGTH(markdown)), 0) AS TEXT) FROM representations",
        )
        .await,
        blocks: n("SELECT CAST(COUNT(*) AS TEXT) FROM blocks").await,
        ledger_rows: n("SELECT CAST(COUNT(*) AS TEXT) FROM processing_state").await,
    }
}

fn within(kind: &str, what: &str, got: u64, reference: u64) {
    assert!(
        got <= 3 * reference.max(1),
        "{kind}: {what} {got} is more than 3x one ingest ({reference})"
    );
}

const TURNS: usize = 120;

#[tokio::test]
async fn appended_conversation_costs_what_it_adds_and_answers_like_one_ingest() {
    for (h, reference) in stores().await.into_iter().zip(stores().await) {
        let kind = h.kind;
        let memory = h.memory().await;
        let mut doc = None;
        for i in 0..TURNS {
            let r = memory
                .append_messages("chat/long", vec![message(i)])
                .await
                .unwrap();
            doc = Some(r.document_id);
            memory.process_until_idle().await.unwrap();
        }
        let doc = doc.unwrap();
        let once = reference.memory().await;
        once.append_messages("chat/long", (0..TURNS).map(message).collect())
            .await
            .unwrap();
        once.process_until_idle().await.unwrap();

        let (got, want) = (footprint(&h).await, footprint(&reference).await);
        within(kind, "blobs", got.blobs, want.blobs);
        within(kind, "blob bytes", got.blob_bytes, want.blob_bytes);
        within(kind, "chunks", got.chunks, want.chunks);
        within(
            kind,
            "representation bytes",
            got.representation_bytes,
            want.representation_bytes,
        );
        within(kind, "blocks", got.blocks, want.blocks);
        within(kind, "ledger rows", got.ledger_rows, want.ledger_rows);

        // Every version row stays; all but the latest are compacted.
        let detail = memory.document(doc).await.unwrap();
        assert_eq!(detail.versions.len(), TURNS, "{kind}");
        let compacted = detail
            .versions
            .iter()
            .filter(|v| v.compacted_at.is_some())
            .count();
        assert_eq!(compacted, TURNS - 1, "{kind}");
        assert!(detail.versions.last().unwrap().compacted_at.is_none());

        // Search serves the same chunks as one ingest of the final conversation.
        for q in [
            "day 7 Lisbon",
            "Company0099",
            "Melanie moved to Oslo",
            "day 119",
        ] {
            let texts = |r: rememberstack::Envelope<rememberstack::ChunkResult>| {
                r.results.into_iter().map(|c| c.text).collect::<Vec<_>>()
            };
            let a = texts(memory.search(q, 5).await.unwrap());
            let b = texts(once.search(q, 5).await.unwrap());
            assert!(!a.is_empty(), "{kind}: {q}");
            assert_eq!(a[0], b[0], "{kind}: {q}");
            let (mut sa, mut sb) = (a.clone(), b.clone());
            sa.sort();
            sb.sort();
            assert_eq!(sa, sb, "{kind}: {q}");
        }

        // Every claim keeps at least one occurrence (its evidence).
        let bare = h
            .query_texts(
                "SELECT c.id FROM claims c WHERE NOT EXISTS (SELECT 1 FROM chunk_claims cc
                   WHERE cc.namespace_id = c.namespace_id AND cc.claim_id = c.id)",
            )
            .await;
        assert_eq!(bare, Vec::<String>::new(), "{kind}");
        let claims = memory.claims(Some(doc), false).await.unwrap();
        assert!(!claims.is_empty(), "{kind}");
        // No input was extracted twice: compaction kept what reuse needs.
        let twice = h
            .query_texts(
                "SELECT extraction_input_hash FROM claim_extraction_decisions WHERE kind <> 'reused'
                 GROUP BY extraction_input_hash HAVING COUNT(DISTINCT chunk_id) > 1",
            )
            .await;
        assert_eq!(twice, Vec::<String>::new(), "{kind}");

        // Compaction is idempotent: another pass changes nothing.
        let again = h
            .store
            .compact_conversation(
                h.store.namespace("default").await.unwrap().unwrap().id,
                doc,
                at("2030-01-01T00:00:00Z"),
            )
            .await
            .unwrap();
        assert_eq!(again, 0, "{kind}");
        assert_eq!(footprint(&h).await, got, "{kind}");

        // A hard forget of the compacted lineage verifies clean.
        let report = memory.forget_document(doc).await.unwrap();
        assert!(
            report.verification.iter().all(|c| c.remaining == 0),
            "{kind}: {report:?}"
        );
        let left = footprint(&h).await;
        assert_eq!((left.blobs, left.chunks), (0, 0), "{kind}: {left:?}");
    }
}

#[tokio::test]
async fn appends_processed_at_once_only_process_the_latest_version() {
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let mut last = None;
        for i in 0..40 {
            last = Some(
                memory
                    .append_messages_at("chat/batch", vec![message(i)], at("2024-02-01T00:00:00Z"))
                    .await
                    .unwrap(),
            );
        }
        let last = last.unwrap();
        // Each append withdrew the never-started processing of the version before it.
        let pending = h
            .query_texts(
                "SELECT DISTINCT version_id FROM processing_state WHERE status = 'pending'",
            )
            .await;
        assert_eq!(pending, vec![last.version_id.to_string()], "{kind}");
        memory.process_until_idle().await.unwrap();
        let detail = memory.document(last.document_id).await.unwrap();
        assert_eq!(detail.versions.len(), 40);
        assert_eq!(
            detail
                .versions
                .iter()
                .filter(|v| v.compacted_at.is_some())
                .count(),
            39,
            "{kind}"
        );
        let blobs = h
            .query_texts("SELECT CAST(COUNT(*) AS TEXT) FROM content_objects")
            .await;
        assert_eq!(blobs, vec!["1".to_string()], "{kind}");
        // Only the latest version was prepared and chunked.
        let versions = h
            .query_texts("SELECT DISTINCT version_id FROM chunks")
            .await;
        assert_eq!(versions, vec![last.version_id.to_string()], "{kind}");
        let hits = memory.search("day 39", 3).await.unwrap();
        assert!(
            hits.results
                .iter()
                .any(|c| c.event_ids.contains(&"T:0039".to_string())),
            "{kind}: {hits:?}"
        );
    }
}

#[tokio::test]
async fn sqlite_a_compaction_cut_short_after_removing_the_bytes_finishes_on_retry() {
    let h = stores().await.remove(0);
    let rememberstack_conformance::Location::Sqlite(path) = &h.location else {
        unreachable!("the first harness is SQLite")
    };
    let memory = h.memory().await;
    let first = memory
        .append_messages("chat/cut", (0..6).map(message).collect())
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    // The second version is not processed yet: the first stays whole (current).
    let second = memory
        .append_messages("chat/cut", vec![message(6)])
        .await
        .unwrap();
    let detail = memory.document(first.document_id).await.unwrap();
    assert!(detail.versions.iter().all(|v| v.compacted_at.is_none()));
    // A compaction killed after unlinking the first version's bytes, before its
    // commit: the file is gone, every row is still there.
    let sha = detail.versions[0].content_sha256.clone();
    let ns = h.store.namespace("default").await.unwrap().unwrap().id;
    let blob = path
        .with_extension("db.blobs")
        .join(ns.to_string())
        .join(&sha[..2])
        .join(&sha);
    assert!(blob.exists(), "{}", blob.display());
    std::fs::remove_file(&blob).unwrap();
    // The next processing finishes the compaction and the store is consistent.
    memory.process_until_idle().await.unwrap();
    let detail = memory.document(first.document_id).await.unwrap();
    assert!(detail.versions[0].compacted_at.is_some());
    assert!(detail.versions[1].compacted_at.is_none());
    assert_eq!(detail.versions[1].version_id, second.version_id);
    let objects = h.query_texts("SELECT sha256 FROM content_objects").await;
    assert_eq!(objects, vec![detail.versions[1].content_sha256.clone()]);
    let hits = memory.search("day 6", 3).await.unwrap();
    assert!(
        hits.results
            .iter()
            .any(|c| c.event_ids.contains(&"T:0006".to_string()))
    );
}

/// What a conversation's memory serves, one canonical line per record: the current
/// claims with their validity, the entities they name, and the facts with their
/// windows and current support. Independent of how the conversation arrived.
async fn served(h: &Harness) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, sql) in [
        (
            "claim",
            "SELECT c.text || '|' || COALESCE(CAST(c.valid_from AS TEXT), '') || '|'
                    || COALESCE(CAST(c.valid_until AS TEXT), '')
             FROM claims c WHERE c.is_current",
        ),
        (
            "entity",
            "SELECT e.canonical_name FROM entities e WHERE e.merged_into IS NULL",
        ),
        (
            "fact",
            "SELECT f.statement || '|' || COALESCE(CAST(f.valid_from AS TEXT), '') || '|'
                    || COALESCE(CAST(f.valid_until AS TEXT), '') || '|'
                    || CASE WHEN f.invalidated_at IS NULL THEN 'open' ELSE 'closed' END || '|'
                    || CAST((SELECT COUNT(*) FROM fact_evidence e
                             JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                             WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id
                               AND e.stance = 'support' AND c.is_current) AS TEXT)
             FROM facts f",
        ),
    ] {
        lines.extend(
            h.query_texts(sql)
                .await
                .into_iter()
                .map(|l| format!("{name}\t{l}")),
        );
    }
    lines.sort();
    lines
}

/// `e2.extract` units and chunks of one version.
async fn extract_units(h: &Harness, version: &str) -> (u64, u64) {
    let count = |sql: String| async move {
        h.query_texts(&sql).await[0]
            .parse::<u64>()
            .expect("a count")
    };
    (
        count(format!(
            "SELECT CAST(COUNT(*) AS TEXT) FROM processing_state
             WHERE stage = 'e2.extract' AND version_id = '{version}'"
        ))
        .await,
        count(format!(
            "SELECT CAST(COUNT(*) AS TEXT) FROM chunks WHERE version_id = '{version}'"
        ))
        .await,
    )
}

#[tokio::test]
async fn each_processed_append_extracts_only_its_new_chunks_and_serves_like_one_ingest() {
    const APPENDS: usize = 60;
    for (h, reference) in stores().await.into_iter().zip(stores().await) {
        let kind = h.kind;
        let memory = h.memory().await;
        let (mut units_total, mut last) = (0, None);
        for i in 0..APPENDS {
            let r = memory
                .append_messages("chat/inc", vec![message(i)])
                .await
                .unwrap();
            memory.process_until_idle().await.unwrap();
            let version = r.version_id.to_string();
            let (units, chunks) = extract_units(&h, &version).await;
            // The chunks before the changed tail carry their extractions over: only
            // the new or grown last chunk and the neighbour whose context it changed
            // are extracted, however long the conversation already is.
            assert!(
                units <= 3,
                "{kind}: append {i}: {units} of {chunks} chunks extracted"
            );
            let reused = h
                .query_texts(&format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM claim_extraction_decisions
                     WHERE kind = 'reused' AND version_id = '{version}'"
                ))
                .await[0]
                .parse::<u64>()
                .unwrap();
            if i > 0 {
                assert_eq!(reused + units, chunks, "{kind}: append {i}");
            }
            units_total += units;
            last = Some((r, chunks));
        }
        let (last, chunks) = last.unwrap();
        assert!(
            chunks >= 8,
            "{kind}: only {chunks} chunks: the test proves nothing"
        );
        assert!(
            units_total <= 3 * APPENDS as u64,
            "{kind}: {units_total} extraction units for {APPENDS} appends"
        );
        // Nothing is left owing a currency refresh, and every chunk's evidence is there.
        let due = h
            .query_texts("SELECT CAST(COUNT(*) AS TEXT) FROM currency_due")
            .await;
        assert_eq!(due, vec!["0".to_string()], "{kind}");

        let once = reference.memory().await;
        once.append_messages("chat/inc", (0..APPENDS).map(message).collect())
            .await
            .unwrap();
        once.process_until_idle().await.unwrap();
        let (got, want) = (served(&h).await, served(&reference).await);
        assert!(
            want.iter().any(|l| l.starts_with("fact\t")),
            "{kind}: {want:?}"
        );
        assert_eq!(got, want, "{kind}");
        // The latest version's current claims are exactly the one ingest's.
        let doc_once = once
            .append_messages("chat/inc", vec![message(0)])
            .await
            .unwrap()
            .document_id;
        assert_eq!(
            claim_texts(&memory, last.document_id).await,
            claim_texts(&once, doc_once).await,
            "{kind}"
        );
    }
}

async fn claim_texts(m: &rememberstack::Memory, doc: rememberstack::DocumentId) -> Vec<String> {
    let mut t: Vec<String> = m
        .claims(Some(doc), false)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.text)
        .collect();
    t.sort();
    t
}

/// A conversation reads back exactly as it was ingested and appended: every
/// message in order with its event id and timestamp, before and after processing
/// and after its superseded versions are compacted; a deleted or unknown
/// conversation is `document_not_found`.
#[tokio::test]
async fn conversation_messages_read_back_exactly_what_was_ingested_and_appended() {
    use rememberstack::{Conversation, ErrorCode, IngestOptions};
    for h in stores().await {
        let kind = h.kind;
        let memory = h.memory().await;
        let first = Conversation {
            session_time: Some(at("2024-03-01T10:00:00Z")),
            messages: vec![
                message(0),
                Message {
                    event_id: None,
                    speaker: "Ana".into(),
                    text: "Line one.\n\n  Line two, indented, with trailing spaces.  ".into(),
                    timestamp: None,
                },
            ],
        };
        memory
            .ingest_conversation(&first, IngestOptions::new("chat/exact"))
            .await
            .unwrap();
        let read = memory.conversation_messages("chat/exact").await.unwrap();
        assert_eq!(read.messages, first.messages, "{kind}: before processing");
        assert_eq!(read.session_time, first.session_time, "{kind}");
        memory.process_until_idle().await.unwrap();
        let appended: Vec<Message> = (1..4).map(message).collect();
        let receipt = memory
            .append_messages("chat/exact", appended.clone())
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let read = memory.conversation_messages("chat/exact").await.unwrap();
        let mut expected = first.messages.clone();
        expected.extend(appended);
        assert_eq!(
            read.messages, expected,
            "{kind}: after an append and compaction"
        );
        assert_eq!(read.version_id, receipt.version_id, "{kind}");
        assert_eq!(read.document_id, receipt.document_id, "{kind}");

        let code = |r: rememberstack::Result<_>| {
            r.map(|_: rememberstack::ConversationMessages| ())
                .unwrap_err()
                .code()
        };
        assert_eq!(
            code(memory.conversation_messages("chat/none").await),
            ErrorCode::DocumentNotFound,
            "{kind}"
        );
        assert_eq!(
            code(memory.conversation_messages("").await),
            ErrorCode::InvalidInput,
            "{kind}"
        );
        memory.delete_document(receipt.document_id).await.unwrap();
        assert_eq!(
            code(memory.conversation_messages("chat/exact").await),
            ErrorCode::DocumentNotFound,
            "{kind}: deleted"
        );
    }
}
