//! The sources area of the store contract on every store: versions and their
//! originals (admitted once, lineage guards, forgotten bytes refused), prepared
//! representations, chunks and currency, note revisions recorded with their
//! versions, millisecond times, latest versions. What only PostgreSQL shows
//! (concurrent creators and committers of one lineage in several sessions) stays
//! in its own tests.

use crate::store_fixtures::{
    claim, created, forget_manifest, is_current, lease, lease_pending, new_version,
    prepare_and_chunk, rows, work_of,
};
use chrono::{TimeZone, Utc};
use rememberstack::store::hash::sha256_hex;
use rememberstack::store::ledger::{ClaimRequest, DeferReason, FailureOutcome, NewWork, Stage};
use rememberstack::store::source::{Admission, Field, VersioningMode};
use rememberstack::store::text::{
    Block, BlockKind, Representation, Section, SectionRole, SourceFormat, TurnMeta, TurnSpan,
};
use rememberstack::store::traits::*;
use rememberstack::store::{
    ChunkFilter, DeletionOutcome, Lease, NewNote, NoteLookup, PreparedVersion, VersionOutcome,
};
use rememberstack::{ChunkId, DocumentId, ErrorCode, NamespaceId, VersionId};
use rememberstack_conformance::stores;

use crate::store_fixtures::chunk;

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

fn claim_all(stage: Stage, now: i64) -> ClaimRequest {
    ClaimRequest {
        owner: "w".into(),
        stages: vec![stage],
        limit: 100,
        stage_limits: vec![],
        lease_until: at(now + 600),
        now: at(now),
    }
}

#[tokio::test]
async fn create_version_admits_once_and_guards_the_lineage() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("docs", at(0)).await.unwrap().id;

        // A new lineage: version 1, the original stored, the first work item queued.
        let nv1 = new_version(ns, "a", b"# Alpha\n\nfirst", at(1));
        let (doc, v1, new_lineage) = created(&store.create_version(nv1.clone()).await.unwrap());
        assert!(new_lineage);
        assert_eq!(doc, nv1.document_id);
        assert_eq!(v1, nv1.version_id);
        assert_eq!(work_of(store, ns, v1).await.len(), 1);
        let rec = store.version(ns, v1).await.unwrap().unwrap();
        assert_eq!(rec.ordinal, 1);
        assert_eq!(rec.document_id, doc);
        assert_eq!(rec.namespace_id, ns);
        assert_eq!(rec.source_kind, "file");
        assert_eq!(rec.source_ref, "a");
        assert_eq!(rec.mode, VersioningMode::Snapshot);
        assert_eq!(rec.content_sha256, nv1.content.sha256);
        assert_eq!(rec.size, nv1.content.bytes.len() as u64);
        assert_eq!(rec.mime, "text/markdown");
        assert_eq!(rec.format, Some(SourceFormat::Markdown));
        assert_eq!(rec.source_modified_at, at(-99));
        assert_eq!(rec.origin, rememberstack::store::source::Origin::External);
        assert_eq!(rec.metadata, nv1.metadata);
        assert_eq!(rec.created_at, at(1));
        assert!(!rec.is_current, "no chunks committed yet");
        assert_eq!(
            store.content(ns, &nv1.content.sha256).await.unwrap(),
            nv1.content.bytes
        );
        let missing = store.content(ns, &sha256_hex(b"nope")).await.unwrap_err();
        assert_eq!(missing.code(), ErrorCode::NotFound);
        // Another namespace does not see the original.
        let other = store.ensure_namespace("other", at(0)).await.unwrap().id;
        assert_eq!(
            store
                .content(other, &nv1.content.sha256)
                .await
                .unwrap_err()
                .code(),
            ErrorCode::NotFound
        );
        assert!(store.version(other, v1).await.unwrap().is_none());

        // The same bytes again: unchanged, nothing written.
        let replay = new_version(ns, "a", b"# Alpha\n\nfirst", at(2));
        assert_eq!(
            store.create_version(replay.clone()).await.unwrap(),
            VersionOutcome::Unchanged {
                document_id: doc,
                version_id: v1
            }
        );
        assert!(
            store
                .version(ns, replay.version_id)
                .await
                .unwrap()
                .is_none()
        );
        assert!(work_of(store, ns, replay.version_id).await.is_empty());

        // `distinct` forces a version for identical bytes; the original is stored once.
        let mut forced = new_version(ns, "a", b"# Alpha\n\nfirst", at(3));
        forced.distinct = true;
        let (_, v2, new_lineage) = created(&store.create_version(forced).await.unwrap());
        assert!(!new_lineage);
        assert_eq!(
            rows(&h, "SELECT CAST(COUNT(*) AS TEXT) FROM content_objects").await,
            1,
            "{}",
            h.kind
        );

        // New bytes with the right expected latest: version 3, titled.
        let mut nv3 = new_version(ns, "a", b"# Alpha\n\nsecond", at(4));
        nv3.expected_latest = Some(v2);
        nv3.metadata.title = Some(Field::source("Alpha".to_string()));
        let (doc3, v3, _) = created(&store.create_version(nv3).await.unwrap());
        assert_eq!(doc3, doc);

        // A stale expected latest is a conflict; so is a mode change.
        let mut stale = new_version(ns, "a", b"# Alpha\n\nthird", at(5));
        stale.expected_latest = Some(v1);
        let err = store.create_version(stale.clone()).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);
        let mut living = new_version(ns, "a", b"# Alpha\n\nthird", at(5));
        living.mode = Some(VersioningMode::Living);
        assert_eq!(
            store.create_version(living).await.unwrap_err().code(),
            ErrorCode::Conflict
        );
        // The refused attempts left nothing behind.
        assert!(store.version(ns, stale.version_id).await.unwrap().is_none());

        let versions = store.versions(ns, doc).await.unwrap();
        assert_eq!(
            versions
                .iter()
                .map(|v| (v.version_id, v.ordinal))
                .collect::<Vec<_>>(),
            vec![(v1, 1), (v2, 2), (v3, 3)]
        );
        // Names in first-seen order, then bytewise.
        assert_eq!(
            store.document_names(ns, doc).await.unwrap(),
            vec!["a.md".to_string(), "Alpha".to_string()]
        );

        // Lineage rows.
        let row = store.document(ns, doc).await.unwrap().unwrap();
        assert_eq!(row.latest_version_id, v3);
        assert_eq!(row.current_version_id, None);
        assert_eq!(row.version_count, 3);
        assert_eq!(row.created_at, at(1));
        assert_eq!(row.deleted_at, None);
        assert_eq!(row.metadata.title.as_ref().unwrap().value, "Alpha");
        assert_eq!(row.latest_work.open, 1);
        assert_eq!(row.latest_work.parked, 0);
        assert_eq!(row.latest_work.dead_letter, 0);
        assert_eq!(
            store.document_by_ref(ns, "file", "a").await.unwrap(),
            Some(row.clone())
        );
        assert!(
            store
                .document_by_ref(ns, "url", "a")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .document(ns, DocumentId::new())
                .await
                .unwrap()
                .is_none()
        );

        // A dead and a parked item of the latest version are counted apart. (The
        // other versions' prepare items are completed on the way.)
        for w in store.claim(&claim_all(Stage::Prepare, 10)).await.unwrap() {
            if w.version_id == v3 {
                store
                    .fail(&Lease::of(&w), "fatal", FailureOutcome::DeadLetter, at(11))
                    .await
                    .unwrap();
            } else {
                store
                    .complete(&Lease::of(&w), vec![], at(11))
                    .await
                    .unwrap();
            }
        }
        let row = store.document(ns, doc).await.unwrap().unwrap();
        assert_eq!(
            (
                row.latest_work.open,
                row.latest_work.parked,
                row.latest_work.dead_letter
            ),
            (0, 0, 1)
        );
        store
            .replay_dead_letters(Some(ns), Some(Stage::Prepare), 1, at(12))
            .await
            .unwrap();
        let again = store.claim(&claim_all(Stage::Prepare, 13)).await.unwrap();
        assert_eq!(again.len(), 1);
        store
            .park(&Lease::of(&again[0]), DeferReason::NoRoute, at(100), at(14))
            .await
            .unwrap();
        let row = store.document(ns, doc).await.unwrap().unwrap();
        assert_eq!(
            (
                row.latest_work.open,
                row.latest_work.parked,
                row.latest_work.dead_letter
            ),
            (0, 1, 0)
        );

        // documents(): newest lineage first, deleted lineages left out.
        let (doc_b, _, _) = created(
            &store
                .create_version(new_version(ns, "b", b"bravo", at(6)))
                .await
                .unwrap(),
        );
        let listed: Vec<DocumentId> = store
            .documents(ns)
            .await
            .unwrap()
            .iter()
            .map(|d| d.document_id)
            .collect();
        assert_eq!(listed, vec![doc_b, doc]);
        assert!(matches!(
            store.delete_document(ns, doc_b, at(7)).await.unwrap(),
            DeletionOutcome::Deleted(_)
        ));
        let listed: Vec<DocumentId> = store
            .documents(ns)
            .await
            .unwrap()
            .iter()
            .map(|d| d.document_id)
            .collect();
        assert_eq!(listed, vec![doc]);
        assert_eq!(
            store.document(ns, doc_b).await.unwrap().unwrap().deleted_at,
            Some(at(7))
        );
        // Bytes that come back after a deletion are a new version (D135).
        let back = new_version(ns, "b", b"bravo", at(8));
        let (again_b, vb2, new_lineage) = created(&store.create_version(back).await.unwrap());
        assert_eq!((again_b, new_lineage), (doc_b, false));
        assert_eq!(store.version(ns, vb2).await.unwrap().unwrap().ordinal, 2);
        assert_eq!(
            store.document(ns, doc_b).await.unwrap().unwrap().deleted_at,
            None
        );

        // Forgotten bytes are refused in their namespace.
        let (secret, _, _) = created(
            &store
                .create_version(new_version(ns, "s", b"secret", at(9)))
                .await
                .unwrap(),
        );
        let m = forget_manifest(store, "docs", secret, ("file", "s"), at(9)).await;
        store.forget(&m, at(9)).await.unwrap();
        let err = store
            .create_version(new_version(ns, "c", b"secret", at(10)))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ForgottenContent, "{}", h.kind);
        assert!(
            store
                .document_by_ref(ns, "file", "c")
                .await
                .unwrap()
                .is_none()
        );
        created(
            &store
                .create_version(new_version(other, "c", b"secret", at(10)))
                .await
                .unwrap(),
        );
    }
}

fn prepared(version: VersionId, title: &str) -> PreparedVersion {
    let markdown = "# Intro\n\nRunning dogs bark.\n\n## Details\n\nCats sleep all day.\n";
    PreparedVersion {
        version_id: version,
        representation: Representation {
            markdown: markdown.into(),
            turns: vec![TurnSpan {
                start: 0,
                end: 7,
                speaker: "ann".into(),
                event_id: Some("e1".into()),
                timestamp: Some(at(3)),
            }],
        },
        blocks: vec![
            Block {
                ordinal: 0,
                kind: BlockKind::Heading,
                level: Some(1),
                start: 0,
                end: 7,
                hash: "h0".into(),
                turn: None,
            },
            Block {
                ordinal: 1,
                kind: BlockKind::ListItem,
                level: None,
                start: 9,
                end: 27,
                hash: "h1".into(),
                turn: Some(TurnMeta {
                    speaker: "ann".into(),
                    event_id: Some("e1".into()),
                    timestamp: Some(at(3)),
                }),
            },
            Block {
                ordinal: 2,
                kind: BlockKind::Paragraph,
                level: None,
                start: 29,
                end: 39,
                hash: "h2".into(),
                turn: None,
            },
        ],
        sections: vec![
            Section {
                ordinal: 0,
                block_start: 0,
                block_end: 2,
                level: 1,
                title: "Intro".into(),
                path: vec!["Intro".into()],
                role: SectionRole::Body,
                parent: None,
            },
            Section {
                ordinal: 1,
                block_start: 2,
                block_end: 3,
                level: 2,
                title: "Details".into(),
                path: vec!["Intro".into(), "Details".into()],
                role: SectionRole::References,
                parent: Some(0),
            },
        ],
        title: title.into(),
        component_version: "prep-1".into(),
    }
}

fn chunk_work(ns: NamespaceId, version: VersionId, stage: Stage) -> NewWork {
    NewWork::now(ns, stage, version.uuid(), version, "c-1", at(20))
}

/// The version's items of `stage`.
async fn items(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    version: VersionId,
    stage: Stage,
) -> usize {
    work_of(store, ns, version)
        .await
        .iter()
        .filter(|w| w.stage == stage)
        .count()
}

/// Chunks matching `term`, in every section role.
async fn lexical(store: &dyn MemoryStore, ns: NamespaceId, term: &str) -> Vec<ChunkId> {
    let filter = ChunkFilter {
        namespace_id: ns,
        roles: vec![
            SectionRole::Body,
            SectionRole::References,
            SectionRole::Nav,
            SectionRole::Boilerplate,
            SectionRole::Legal,
        ],
        entities: vec![],
        documents: None,
        exact: false,
    };
    store
        .search_chunks_lexical(&filter, &[term.to_string()], 10)
        .await
        .unwrap()
        .iter()
        .map(|h| h.chunk_id)
        .collect()
}

#[tokio::test]
async fn prepare_and_chunk_a_version() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("docs", at(0)).await.unwrap().id;
        let (doc, v1, _) = created(
            &store
                .create_version(new_version(ns, "a", b"one", at(1)))
                .await
                .unwrap(),
        );
        assert!(store.prepared(ns, v1).await.unwrap().is_none());

        // commit_prepared: under the lease, with follow-up work.
        let l1 = lease_pending(store, v1, Stage::Prepare, "w1").await;
        let p = prepared(v1, "Alpha doc");
        store
            .commit_prepared(
                &l1,
                p.clone(),
                vec![chunk_work(ns, v1, Stage::Chunk)],
                at(11),
            )
            .await
            .unwrap();
        assert_eq!(store.prepared(ns, v1).await.unwrap(), Some(p.clone()));
        assert_eq!(work_of(store, ns, v1).await.len(), 2);
        assert_eq!(
            store.work_item(l1.work_id).await.unwrap().unwrap().status,
            rememberstack::WorkStatus::Done
        );
        // Replaying the commit with the spent lease is refused and changes nothing.
        let lost = store
            .commit_prepared(&l1, prepared(v1, "Other"), vec![], at(12))
            .await
            .unwrap_err();
        assert_eq!(lost.code(), ErrorCode::LeaseLost);
        assert_eq!(
            store.prepared(ns, v1).await.unwrap().unwrap().title,
            "Alpha doc"
        );
        // A new lease re-prepares in place: replaced, never duplicated.
        let l1b = lease(store, ns, v1, Stage::Prepare, "w2").await;
        let mut p2 = prepared(v1, "Alpha doc v2");
        p2.blocks.truncate(2);
        store
            .commit_prepared(
                &l1b,
                p2.clone(),
                vec![chunk_work(ns, v1, Stage::Chunk)],
                at(12),
            )
            .await
            .unwrap();
        assert_eq!(store.prepared(ns, v1).await.unwrap(), Some(p2.clone()));
        assert_eq!(
            items(store, ns, v1, Stage::Chunk).await,
            1,
            "follow-up is idempotent"
        );

        // commit_chunks: chunks, their lexical rows, the version becomes current.
        let l2 = lease_pending(store, v1, Stage::Chunk, "w1").await;
        let chunks = vec![
            chunk(0, 0, "Running dogs bark."),
            chunk(1, 0, "Birds sing."),
            chunk(2, 1, "Cats sleep all day."),
        ];
        store
            .commit_chunks(
                &l2,
                v1,
                chunks.clone(),
                vec![chunk_work(ns, v1, Stage::Embed)],
                at(13),
            )
            .await
            .unwrap();
        assert_eq!(items(store, ns, v1, Stage::Embed).await, 1);
        let recs = store.version_chunks(ns, v1).await.unwrap();
        assert_eq!(
            recs.iter().map(|c| c.chunk_id).collect::<Vec<_>>(),
            chunks.iter().map(|c| c.id).collect::<Vec<_>>()
        );
        let r0 = &recs[0];
        assert_eq!(r0.document_id, doc);
        assert_eq!(r0.version_id, v1);
        assert_eq!(r0.text, "Running dogs bark.");
        assert_eq!(r0.document_title, "Alpha doc v2");
        assert_eq!(r0.section_title, "Intro");
        assert_eq!(r0.section_path, vec!["Intro".to_string()]);
        assert_eq!(r0.section_role, SectionRole::Body);
        assert_eq!(r0.event_ids, vec!["ev-0".to_string()]);
        assert_eq!(r0.embedding_key, "key-0");
        assert_eq!(r0.content_hash, sha256_hex(b"Running dogs bark."));
        assert_eq!(
            (r0.start, r0.end, r0.char_start, r0.char_end),
            (0, 18, 0, 18)
        );
        assert_eq!((r0.block_start, r0.block_end, r0.ordinal), (0, 1, 0));
        assert_eq!(r0.source_kind, "file");
        assert_eq!(r0.source_ref, "a");
        assert_eq!(r0.source_modified_at, at(-99));
        assert_eq!(r0.format, Some(SourceFormat::Markdown));
        assert!(r0.is_current);
        assert_eq!(recs[2].section_role, SectionRole::References);
        assert_eq!(
            recs[2].section_path,
            vec!["Intro".to_string(), "Details".to_string()]
        );
        let row = store.document(ns, doc).await.unwrap().unwrap();
        assert_eq!(row.current_version_id, Some(v1));
        assert!(store.version(ns, v1).await.unwrap().unwrap().is_current);
        // Stemmed full text: `run` finds "Running".
        assert_eq!(lexical(store, ns, "run").await, vec![chunks[0].id]);

        // sections(): with chunk counts.
        let sections = store.sections(ns, v1).await.unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].section, p2.sections[0]);
        assert_eq!(sections[0].chunk_count, 2);
        assert_eq!(sections[1].section, p2.sections[1]);
        assert_eq!(sections[1].chunk_count, 1);

        // chunks(): in the order asked, unknown ids skipped.
        let got = store
            .chunks(ns, &[chunks[2].id, ChunkId::new(), chunks[0].id])
            .await
            .unwrap();
        assert_eq!(
            got.iter().map(|c| c.chunk_id).collect::<Vec<_>>(),
            vec![chunks[2].id, chunks[0].id]
        );
        assert!(store.chunks(ns, &[]).await.unwrap().is_empty());
        let other = store.ensure_namespace("other", at(0)).await.unwrap().id;
        assert!(
            store
                .chunks(other, &[chunks[0].id])
                .await
                .unwrap()
                .is_empty()
        );

        // Replay with the spent lease: refused. Re-chunk under a new lease: replaced,
        // the old chunks' lexical rows gone with them.
        assert_eq!(
            store
                .commit_chunks(&l2, v1, vec![], vec![], at(14))
                .await
                .unwrap_err()
                .code(),
            ErrorCode::LeaseLost
        );
        let l2b = lease(store, ns, v1, Stage::Chunk, "w3").await;
        let rechunked = vec![chunk(0, 0, "Running dogs bark."), chunk(1, 1, "Fish swim.")];
        store
            .commit_chunks(&l2b, v1, rechunked.clone(), vec![], at(15))
            .await
            .unwrap();
        assert_eq!(
            store
                .version_chunks(ns, v1)
                .await
                .unwrap()
                .iter()
                .map(|c| c.chunk_id)
                .collect::<Vec<_>>(),
            rechunked.iter().map(|c| c.id).collect::<Vec<_>>()
        );
        assert_eq!(lexical(store, ns, "run").await, vec![rechunked[0].id]);
        assert_eq!(lexical(store, ns, "fish").await, vec![rechunked[1].id]);
        assert!(lexical(store, ns, "cat").await.is_empty());
        assert!(lexical(store, ns, "birds").await.is_empty());

        // A newer version becomes current; an older one chunked later does not take over.
        let (_, v2, _) = created(
            &store
                .create_version(new_version(ns, "a", b"two", at(20)))
                .await
                .unwrap(),
        );
        let lp = lease_pending(store, v2, Stage::Prepare, "w1").await;
        store
            .commit_prepared(
                &lp,
                prepared(v2, "Alpha 2"),
                vec![chunk_work(ns, v2, Stage::Chunk)],
                at(21),
            )
            .await
            .unwrap();
        let lc = lease_pending(store, v2, Stage::Chunk, "w1").await;
        store
            .commit_chunks(&lc, v2, vec![chunk(0, 0, "Second version")], vec![], at(22))
            .await
            .unwrap();
        assert_eq!(
            store
                .document(ns, doc)
                .await
                .unwrap()
                .unwrap()
                .current_version_id,
            Some(v2)
        );
        assert!(!store.version_chunks(ns, v1).await.unwrap()[0].is_current);
        let l_old = lease(store, ns, v1, Stage::Chunk, "w4").await;
        store
            .commit_chunks(&l_old, v1, vec![chunk(0, 0, "old again")], vec![], at(23))
            .await
            .unwrap();
        assert_eq!(
            store
                .document(ns, doc)
                .await
                .unwrap()
                .unwrap()
                .current_version_id,
            Some(v2)
        );

        // A candidate version never becomes current by chunking.
        let mut cand = new_version(ns, "a", b"three", at(30));
        cand.admission = Admission::Candidate;
        let (_, v3, _) = created(&store.create_version(cand).await.unwrap());
        let lp = lease_pending(store, v3, Stage::Prepare, "w1").await;
        store
            .commit_prepared(
                &lp,
                prepared(v3, "Alpha 3"),
                vec![chunk_work(ns, v3, Stage::Chunk)],
                at(31),
            )
            .await
            .unwrap();
        let lc = lease_pending(store, v3, Stage::Chunk, "w1").await;
        store
            .commit_chunks(&lc, v3, vec![chunk(0, 0, "candidate")], vec![], at(32))
            .await
            .unwrap();
        assert_eq!(
            store
                .document(ns, doc)
                .await
                .unwrap()
                .unwrap()
                .current_version_id,
            Some(v2),
            "{}",
            h.kind
        );
    }
}

fn note(key: &str, revision: &str, request: &str) -> NewNote {
    NewNote {
        source_key: key.into(),
        source_revision: revision.into(),
        content_digest: sha256_hex(revision.as_bytes()),
        request_digest: sha256_hex(request.as_bytes()),
        request_id: request.into(),
        metadata: serde_json::json!({ "tag": revision }),
    }
}

#[tokio::test]
async fn create_version_records_notes() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("docs", at(0)).await.unwrap().id;
        let mut first = new_version(ns, "n1", b"note one", at(1));
        first.source_kind = "note".into();
        first.note = Some(note("n1", "r1", "req-1"));
        let (doc, v1, _) = created(&store.create_version(first).await.unwrap());
        // v1 becomes current with a current claim, as the pipeline would make it.
        let k = chunk(0, 0, "note one");
        let k_id = k.id;
        prepare_and_chunk(store, ns, v1, "n1", &[SectionRole::Body], vec![k], at(1)).await;
        assert_eq!(
            store
                .document(ns, doc)
                .await
                .unwrap()
                .unwrap()
                .current_version_id,
            Some(v1)
        );
        let c1 = claim(store, ns, (doc, v1, k_id), "t", true, at(1)).await;

        // A second promoted revision archives the first and unserves it.
        let mut second = new_version(ns, "n1", b"note two", at(2));
        second.source_kind = "note".into();
        second.note = Some(note("n1", "r2", "req-2"));
        let (doc2, v2, _) = created(&store.create_version(second).await.unwrap());
        assert_eq!(doc2, doc);
        let notes = store.list_notes(ns, 0, 10).await.unwrap();
        assert_eq!(
            notes
                .iter()
                .map(|n| (n.version_id, n.lifecycle, n.lifecycle_version))
                .collect::<Vec<_>>(),
            vec![(v1, Admission::Archived, 2), (v2, Admission::Promoted, 1)],
            "{}",
            h.kind
        );
        assert_eq!(notes[1].metadata, serde_json::json!({ "tag": "r2" }));
        assert_eq!(store.note(ns, v1).await.unwrap().as_ref(), Some(&notes[0]));
        assert_eq!(
            store
                .document(ns, doc)
                .await
                .unwrap()
                .unwrap()
                .current_version_id,
            None
        );
        assert!(!is_current(store, ns, c1).await);
        assert_eq!(
            rows(
                &h,
                &format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM claim_currency_events
                      WHERE claim_id = '{c1}' AND NOT is_current AND reason = 'note_archived'"
                )
            )
            .await,
            1
        );
        // Each revision's request id is remembered.
        for (request, version) in [("req-1", v1), ("req-2", v2)] {
            match store.note_lookup(ns, request, "n1", "r9").await.unwrap() {
                NoteLookup::Request(digest, n) => {
                    assert_eq!(digest, sha256_hex(request.as_bytes()));
                    assert_eq!(n.version_id, version);
                }
                other => panic!("{request}: {other:?}"),
            }
        }

        // The same revision again (other bytes) is a conflict, and nothing is written.
        let mut dup = new_version(ns, "n1", b"note two again", at(3));
        dup.source_kind = "note".into();
        dup.note = Some(note("n1", "r2", "req-3"));
        let err = store.create_version(dup.clone()).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);
        assert!(store.version(ns, dup.version_id).await.unwrap().is_none());
        assert_eq!(store.versions(ns, doc).await.unwrap().len(), 2);
        assert_eq!(
            store.note_lookup(ns, "req-3", "n1", "r9").await.unwrap(),
            NoteLookup::New
        );
    }
}

#[tokio::test]
async fn times_keep_millisecond_precision() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("docs", at(0)).await.unwrap().id;
        let fine = at(5) + chrono::Duration::microseconds(1_234_567);
        let mut a = new_version(ns, "a", b"a", at(5));
        a.now = fine;
        a.source_modified_at = fine;
        let (doc_a, va, _) = created(&store.create_version(a).await.unwrap());
        let rec = store.version(ns, va).await.unwrap().unwrap();
        let truncated = at(6) + chrono::Duration::milliseconds(234);
        assert_eq!(rec.created_at, truncated, "{}", h.kind);
        assert_eq!(rec.source_modified_at, truncated);
        // Two lineages created in the same millisecond tie on created_at and fall to
        // the id tie-break.
        let mut b = new_version(ns, "b", b"b", at(5));
        b.now = fine + chrono::Duration::microseconds(300);
        let (doc_b, _, _) = created(&store.create_version(b).await.unwrap());
        let mut expected = vec![doc_a, doc_b];
        expected.sort_by_key(|d| d.to_string());
        let listed: Vec<DocumentId> = store
            .documents(ns)
            .await
            .unwrap()
            .iter()
            .map(|d| d.document_id)
            .collect();
        assert_eq!(listed, expected, "{}", h.kind);
    }
}

#[tokio::test]
async fn latest_versions_name_each_lineages_newest_version() {
    for h in stores().await {
        let store = h.store.as_ref();
        assert!(store.latest_versions().await.unwrap().is_empty());
        let ns = store.ensure_namespace("docs", at(0)).await.unwrap().id;
        // Lineage 2 is created first; lineage 1 has two versions, the latest Markdown.
        let mut two = new_version(ns, "doc-2", b"two", at(1));
        two.format = None;
        let (_, v_other, _) = created(&store.create_version(two).await.unwrap());
        let mut old = new_version(ns, "doc-1", b"one", at(2));
        old.format = Some(SourceFormat::Text);
        created(&store.create_version(old).await.unwrap());
        let (_, v_new, _) = created(
            &store
                .create_version(new_version(ns, "doc-1", b"one again", at(3)))
                .await
                .unwrap(),
        );
        assert_eq!(
            store.latest_versions().await.unwrap(),
            vec![
                (ns, v_other, None),
                (ns, v_new, Some(SourceFormat::Markdown)),
            ],
            "{}",
            h.kind
        );
    }
}
