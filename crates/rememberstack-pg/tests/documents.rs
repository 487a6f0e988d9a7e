//! The PostgreSQL store's documents area against a real server: versions and
//! originals, prepared representations, chunks (with their `chunk_lexical` rows),
//! lineages and settings. Every test needs `DATABASE_URL` (`scripts/pg-local.sh
//! start` prints one) and is skipped, saying so, without it. Each test works in a
//! schema of its own, dropped at the end.

use chrono::{TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::hash::sha256_hex;
use rememberstack_core::ids::{ChunkId, DocumentId, NamespaceId, VersionId};
use rememberstack_core::ledger::{NewWork, Stage};
use rememberstack_core::source::{Admission, DocumentMetadata, Field, Origin, VersioningMode};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{
    ContentObject, Lease, NewChunk, NewNote, NewVersion, PreparedVersion, VersionOutcome,
};
use rememberstack_core::text::{
    Block, BlockKind, ChunkPlan, Representation, Section, SectionRole, SourceFormat, TurnMeta,
    TurnSpan,
};
use rememberstack_pg::{PgStore, PgStoreConfig};
use sqlx::Row;

fn database_url(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            eprintln!("{test}: skipped, DATABASE_URL is not set (scripts/pg-local.sh start)");
            None
        }
    }
}

/// A schema name no other test (or run) uses.
fn fresh_schema(tag: &str) -> String {
    format!("rs_it_{tag}_{}", uuid::Uuid::new_v4().simple())
}

fn config(schema: &str) -> PgStoreConfig {
    PgStoreConfig {
        max_connections: 2,
        schema: Some(schema.to_string()),
        ..PgStoreConfig::default()
    }
}

async fn drop_schema(store: &PgStore) {
    let schema = store.schema().expect("tests use a schema");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(store.pool())
    .await
    .expect("drop the test schema");
    store.close().await;
}

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

fn new_version(ns: NamespaceId, source_ref: &str, bytes: &[u8], now: i64) -> NewVersion {
    let version_id = VersionId::new();
    NewVersion {
        namespace_id: ns,
        document_id: DocumentId::new(),
        version_id,
        source_kind: "file".into(),
        source_ref: source_ref.into(),
        mode: None,
        content: ContentObject {
            sha256: sha256_hex(bytes),
            mime: "text/markdown".into(),
            bytes: bytes.to_vec(),
        },
        format: Some(SourceFormat::Markdown),
        source_modified_at: at(now - 100),
        origin: Origin::External,
        metadata: DocumentMetadata {
            file_name: Some(Field::source(format!("{source_ref}.md"))),
            ..DocumentMetadata::default()
        },
        work: NewWork::now(
            ns,
            Stage::Prepare,
            version_id.uuid(),
            version_id,
            "prep-1",
            at(now),
        ),
        expected_latest: None,
        admission: Admission::Promoted,
        distinct: false,
        note: None,
        principal: None,
        now: at(now),
    }
}

fn created(o: &VersionOutcome) -> (DocumentId, VersionId, bool) {
    match o {
        VersionOutcome::Created {
            document_id,
            version_id,
            new_lineage,
        } => (*document_id, *version_id, *new_lineage),
        other => panic!("expected Created, got {other:?}"),
    }
}

async fn open(url: &str, tag: &str, max: u32) -> (PgStore, NamespaceId) {
    let mut cfg = config(&fresh_schema(tag));
    cfg.max_connections = max;
    let store = PgStore::connect_with(url, cfg).await.unwrap();
    let ns = store.ensure_namespace("docs", at(0)).await.unwrap().id;
    (store, ns)
}

/// Lease the version's pending work item of `stage` to `owner` (the ledger's
/// `claim` belongs to another area: plain SQL).
async fn lease(store: &PgStore, version: VersionId, stage: Stage, owner: &str) -> Lease {
    let id: String = sqlx::query_scalar(
        "UPDATE processing_state SET status = 'running', lease_owner = $1, lease_expires_at = $2
         WHERE version_id = $3 AND stage = $4 RETURNING id",
    )
    .bind(owner)
    .bind(at(10_000).timestamp_millis())
    .bind(version.to_string())
    .bind(stage.as_str())
    .fetch_one(store.pool())
    .await
    .unwrap();
    Lease {
        work_id: id.parse().unwrap(),
        owner: owner.into(),
    }
}

async fn work_count(store: &PgStore, version: VersionId) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM processing_state WHERE version_id = $1")
        .bind(version.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn pg_create_version_admits_once_and_guards_the_lineage() {
    let Some(url) = database_url("pg_create_version_admits_once_and_guards_the_lineage") else {
        return;
    };
    let (store, ns) = open(&url, "docver", 2).await;

    // A new lineage: version 1, the original stored, the first work item queued.
    let nv1 = new_version(ns, "a", b"# Alpha\n\nfirst", 1);
    let (doc, v1, new_lineage) = created(&store.create_version(nv1.clone()).await.unwrap());
    assert!(new_lineage);
    assert_eq!(doc, nv1.document_id);
    assert_eq!(v1, nv1.version_id);
    assert_eq!(work_count(&store, v1).await, 1);
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
    assert_eq!(rec.origin, Origin::External);
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
    let replay = new_version(ns, "a", b"# Alpha\n\nfirst", 2);
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
    assert_eq!(work_count(&store, replay.version_id).await, 0);

    // `distinct` forces a version for identical bytes; the original is stored once.
    let mut forced = new_version(ns, "a", b"# Alpha\n\nfirst", 3);
    forced.distinct = true;
    let (_, v2, new_lineage) = created(&store.create_version(forced).await.unwrap());
    assert!(!new_lineage);
    let objects: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM content_objects")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(objects, 1);

    // New bytes with the right expected latest: version 3, titled.
    let mut nv3 = new_version(ns, "a", b"# Alpha\n\nsecond", 4);
    nv3.expected_latest = Some(v2);
    nv3.metadata.title = Some(Field::source("Alpha".to_string()));
    let (doc3, v3, _) = created(&store.create_version(nv3).await.unwrap());
    assert_eq!(doc3, doc);

    // A stale expected latest is a conflict; so is a mode change.
    let mut stale = new_version(ns, "a", b"# Alpha\n\nthird", 5);
    stale.expected_latest = Some(v1);
    let err = store.create_version(stale.clone()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);
    let mut living = new_version(ns, "a", b"# Alpha\n\nthird", 5);
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

    // A parked and a dead item of the latest version are counted apart.
    sqlx::query("UPDATE processing_state SET defer_reason = 'no_route' WHERE version_id = $1")
        .bind(v3.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let row = store.document(ns, doc).await.unwrap().unwrap();
    assert_eq!((row.latest_work.open, row.latest_work.parked), (0, 1));
    sqlx::query("UPDATE processing_state SET status = 'dead_letter' WHERE version_id = $1")
        .bind(v3.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let row = store.document(ns, doc).await.unwrap().unwrap();
    assert_eq!(
        (
            row.latest_work.open,
            row.latest_work.parked,
            row.latest_work.dead_letter
        ),
        (0, 0, 1)
    );

    // documents(): newest lineage first, deleted lineages left out.
    let (doc_b, _, _) = created(
        &store
            .create_version(new_version(ns, "b", b"bravo", 6))
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
    sqlx::query("UPDATE documents SET deleted_at = $1 WHERE id = $2")
        .bind(at(7))
        .bind(doc_b.to_string())
        .execute(store.pool())
        .await
        .unwrap();
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
    let back = new_version(ns, "b", b"bravo", 8);
    let (again_b, vb2, new_lineage) = created(&store.create_version(back).await.unwrap());
    assert_eq!((again_b, new_lineage), (doc_b, false));
    assert_eq!(store.version(ns, vb2).await.unwrap().unwrap().ordinal, 2);
    assert_eq!(
        store.document(ns, doc_b).await.unwrap().unwrap().deleted_at,
        None
    );

    // Forgotten bytes are refused in their namespace.
    sqlx::query(
        "INSERT INTO forgotten_content (namespace_id, sha256, manifest_id, document_id,
             source_identity_sha256, forgotten_at) VALUES ($1, $2, 'm', 'd', 's', $3)",
    )
    .bind(ns.to_string())
    .bind(sha256_hex(b"secret"))
    .bind(at(9))
    .execute(store.pool())
    .await
    .unwrap();
    let err = store
        .create_version(new_version(ns, "c", b"secret", 10))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ForgottenContent);
    assert!(
        store
            .document_by_ref(ns, "file", "c")
            .await
            .unwrap()
            .is_none()
    );
    created(
        &store
            .create_version(new_version(other, "c", b"secret", 10))
            .await
            .unwrap(),
    );

    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_create_version_concurrent_same_bytes_creates_one_version() {
    let Some(url) = database_url("pg_create_version_concurrent_same_bytes_creates_one_version")
    else {
        return;
    };
    let (store, ns) = open(&url, "docrace", 8).await;
    // A second store on the same schema stands in for a second process.
    let second = PgStore::connect_with(
        &url,
        PgStoreConfig {
            max_connections: 4,
            schema: store.schema().map(str::to_string),
            ..PgStoreConfig::default()
        },
    )
    .await
    .unwrap();
    for round in 0..3 {
        let source_ref = format!("race-{round}");
        let attempts: Vec<NewVersion> = (0..8)
            .map(|_| new_version(ns, &source_ref, b"the same bytes", 1))
            .collect();
        let mut handles = Vec::new();
        for (i, nv) in attempts.into_iter().enumerate() {
            let s = if i % 2 == 0 {
                store.clone()
            } else {
                second.clone()
            };
            handles.push(tokio::spawn(async move { s.create_version(nv).await }));
        }
        let mut created_n = 0;
        let mut ids = std::collections::BTreeSet::new();
        for h in handles {
            match h.await.unwrap().unwrap() {
                VersionOutcome::Created {
                    document_id,
                    version_id,
                    new_lineage,
                } => {
                    assert!(new_lineage);
                    created_n += 1;
                    ids.insert((document_id, version_id));
                }
                VersionOutcome::Unchanged {
                    document_id,
                    version_id,
                } => {
                    ids.insert((document_id, version_id));
                }
            }
        }
        assert_eq!(created_n, 1, "exactly one version is created");
        assert_eq!(ids.len(), 1, "every caller names the same version: {ids:?}");
        let (doc, _) = *ids.iter().next().unwrap();
        assert_eq!(store.versions(ns, doc).await.unwrap().len(), 1);
    }
    // Distinct bytes racing on one lineage get distinct, gapless ordinals.
    let mut handles = Vec::new();
    for i in 0..6 {
        let s = if i % 2 == 0 {
            store.clone()
        } else {
            second.clone()
        };
        let nv = new_version(ns, "seq", format!("bytes {i}").as_bytes(), 2);
        handles.push(tokio::spawn(async move { s.create_version(nv).await }));
    }
    for h in handles {
        h.await.unwrap().unwrap();
    }
    let doc = store
        .document_by_ref(ns, "file", "seq")
        .await
        .unwrap()
        .unwrap();
    let ordinals: Vec<u32> = store
        .versions(ns, doc.document_id)
        .await
        .unwrap()
        .iter()
        .map(|v| v.ordinal)
        .collect();
    assert_eq!(ordinals, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(doc.version_count, 6);
    second.close().await;
    drop_schema(&store).await;
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

fn chunk(ordinal: u32, section: u32, text: &str) -> NewChunk {
    NewChunk {
        id: ChunkId::new(),
        plan: ChunkPlan {
            ordinal,
            section_ordinal: section,
            block_start: ordinal,
            block_end: ordinal + 1,
            start: 10 * ordinal as usize,
            end: 10 * ordinal as usize + text.len(),
            char_start: 10 * ordinal as usize,
            char_end: 10 * ordinal as usize + text.len(),
            text: text.into(),
            content_hash: sha256_hex(text.as_bytes()),
            token_estimate: 5,
        },
        embedding_key: format!("key-{ordinal}"),
        event_ids: vec![format!("ev-{ordinal}")],
    }
}

fn chunk_work(ns: NamespaceId, version: VersionId, stage: Stage) -> NewWork {
    NewWork::now(ns, stage, version.uuid(), version, "c-1", at(20))
}

async fn lexical_rows(store: &PgStore, ns: NamespaceId, query: &str) -> Vec<String> {
    sqlx::query(
        "SELECT c.id FROM chunk_lexical l JOIN chunks c ON c.seq = l.seq
         WHERE l.namespace_id = $1 AND l.tsv @@ to_tsquery('english', $2) ORDER BY c.seq",
    )
    .bind(ns.to_string())
    .bind(query)
    .fetch_all(store.pool())
    .await
    .unwrap()
    .iter()
    .map(|r| r.get::<String, _>("id"))
    .collect()
}

#[tokio::test]
async fn pg_prepare_and_chunk_a_version() {
    let Some(url) = database_url("pg_prepare_and_chunk_a_version") else {
        return;
    };
    let (store, ns) = open(&url, "docchunk", 2).await;
    let (doc, v1, _) = created(
        &store
            .create_version(new_version(ns, "a", b"one", 1))
            .await
            .unwrap(),
    );
    assert!(store.prepared(ns, v1).await.unwrap().is_none());

    // commit_prepared: under the lease, with follow-up work.
    let l1 = lease(&store, v1, Stage::Prepare, "w1").await;
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
    assert_eq!(work_count(&store, v1).await, 2);
    let status: String = sqlx::query_scalar("SELECT status FROM processing_state WHERE id = $1")
        .bind(l1.work_id.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(status, "done");
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
    sqlx::query("UPDATE processing_state SET status = 'pending' WHERE id = $1")
        .bind(l1.work_id.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let l1b = lease(&store, v1, Stage::Prepare, "w2").await;
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
    assert_eq!(work_count(&store, v1).await, 2, "follow-up is idempotent");

    // commit_chunks: chunks, their lexical rows, the version becomes current.
    let l2 = lease(&store, v1, Stage::Chunk, "w1").await;
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
    assert_eq!(work_count(&store, v1).await, 3);
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
    assert_eq!(
        lexical_rows(&store, ns, "run").await,
        vec![chunks[0].id.to_string()]
    );

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

    // Replay with the spent lease: refused. Re-chunk under a new lease: replaced.
    assert_eq!(
        store
            .commit_chunks(&l2, v1, vec![], vec![], at(14))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::LeaseLost
    );
    sqlx::query("UPDATE processing_state SET status = 'pending' WHERE id = $1")
        .bind(l2.work_id.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let l2b = lease(&store, v1, Stage::Chunk, "w3").await;
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
    let lexical: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM chunk_lexical WHERE namespace_id = $1")
            .bind(ns.to_string())
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(lexical, 2, "the old lexical rows went with their chunks");
    assert_eq!(
        lexical_rows(&store, ns, "run").await,
        vec![rechunked[0].id.to_string()]
    );
    assert!(lexical_rows(&store, ns, "cat").await.is_empty());

    // A newer version becomes current; an older one chunked later does not take over.
    let (_, v2, _) = created(
        &store
            .create_version(new_version(ns, "a", b"two", 20))
            .await
            .unwrap(),
    );
    let lp = lease(&store, v2, Stage::Prepare, "w1").await;
    store
        .commit_prepared(
            &lp,
            prepared(v2, "Alpha 2"),
            vec![chunk_work(ns, v2, Stage::Chunk)],
            at(21),
        )
        .await
        .unwrap();
    let lc = lease(&store, v2, Stage::Chunk, "w1").await;
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
    sqlx::query("UPDATE processing_state SET status = 'pending' WHERE id = $1")
        .bind(l2b.work_id.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let l_old = lease(&store, v1, Stage::Chunk, "w4").await;
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
    let mut cand = new_version(ns, "a", b"three", 30);
    cand.admission = Admission::Candidate;
    let (_, v3, _) = created(&store.create_version(cand).await.unwrap());
    let lp = lease(&store, v3, Stage::Prepare, "w1").await;
    store
        .commit_prepared(
            &lp,
            prepared(v3, "Alpha 3"),
            vec![chunk_work(ns, v3, Stage::Chunk)],
            at(31),
        )
        .await
        .unwrap();
    let lc = lease(&store, v3, Stage::Chunk, "w1").await;
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
        Some(v2)
    );

    drop_schema(&store).await;
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
async fn pg_create_version_records_notes() {
    let Some(url) = database_url("pg_create_version_records_notes") else {
        return;
    };
    let (store, ns) = open(&url, "docnote", 2).await;
    let mut first = new_version(ns, "n1", b"note one", 1);
    first.source_kind = "note".into();
    first.note = Some(note("n1", "r1", "req-1"));
    let (doc, v1, _) = created(&store.create_version(first).await.unwrap());
    // Make v1 current with a current claim, as the pipeline would.
    sqlx::query("UPDATE documents SET current_version_id = $1 WHERE id = $2")
        .bind(v1.to_string())
        .bind(doc.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json, valid_precision,
             valid_kind, asserted_at, extractor_version, extraction_input_hash, origin_version_id,
             origin_chunk_id, embedding_key, claim_key, is_current, created_at)
         VALUES ($1, 'c1', $2, 't', '[]', 'day', 'open', $3, 'x', 'h', $4, 'ch', 'k', 'ck', true, $3)",
    )
    .bind(ns.to_string())
    .bind(doc.to_string())
    .bind(at(1))
    .bind(v1.to_string())
    .execute(store.pool())
    .await
    .unwrap();

    // A second promoted revision archives the first and unserves it.
    let mut second = new_version(ns, "n1", b"note two", 2);
    second.source_kind = "note".into();
    second.note = Some(note("n1", "r2", "req-2"));
    let (doc2, v2, _) = created(&store.create_version(second).await.unwrap());
    assert_eq!(doc2, doc);
    let rows = sqlx::query(
        "SELECT n.version_id, n.lifecycle, n.lifecycle_version, n.metadata_json, v.admission
         FROM notes n JOIN document_versions v ON v.id = n.version_id ORDER BY n.seq",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    let got: Vec<(String, String, i32, String)> = rows
        .iter()
        .map(|r| {
            (
                r.get("version_id"),
                r.get("lifecycle"),
                r.get("lifecycle_version"),
                r.get("admission"),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (v1.to_string(), "archived".into(), 2, "archived".into()),
            (v2.to_string(), "promoted".into(), 1, "promoted".into()),
        ]
    );
    assert_eq!(
        rows[1].get::<serde_json::Value, _>("metadata_json"),
        serde_json::json!({ "tag": "r2" })
    );
    assert_eq!(
        store
            .document(ns, doc)
            .await
            .unwrap()
            .unwrap()
            .current_version_id,
        None
    );
    let (current, events): (bool, i64) = (
        sqlx::query_scalar("SELECT is_current FROM claims WHERE id = 'c1'")
            .fetch_one(store.pool())
            .await
            .unwrap(),
        sqlx::query_scalar(
            "SELECT COUNT(*) FROM claim_currency_events WHERE claim_id = 'c1'
               AND NOT is_current AND reason = 'note_archived'",
        )
        .fetch_one(store.pool())
        .await
        .unwrap(),
    );
    assert_eq!((current, events), (false, 1));
    let requests: Vec<String> =
        sqlx::query_scalar("SELECT request_id FROM note_requests ORDER BY request_id")
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert_eq!(requests, vec!["req-1".to_string(), "req-2".to_string()]);

    // The same revision again (other bytes) is a conflict, and nothing is written.
    let mut dup = new_version(ns, "n1", b"note two again", 3);
    dup.source_kind = "note".into();
    dup.note = Some(note("n1", "r2", "req-3"));
    let err = store.create_version(dup.clone()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);
    assert!(store.version(ns, dup.version_id).await.unwrap().is_none());
    assert_eq!(store.versions(ns, doc).await.unwrap().len(), 2);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_times_keep_millisecond_precision_like_sqlite() {
    let Some(url) = database_url("pg_times_keep_millisecond_precision_like_sqlite") else {
        return;
    };
    let (store, ns) = open(&url, "docms", 2).await;
    let fine = at(5) + chrono::Duration::microseconds(1_234_567);
    let mut a = new_version(ns, "a", b"a", 5);
    a.now = fine;
    a.source_modified_at = fine;
    let (doc_a, va, _) = created(&store.create_version(a).await.unwrap());
    let rec = store.version(ns, va).await.unwrap().unwrap();
    let truncated = at(6) + chrono::Duration::milliseconds(234);
    assert_eq!(rec.created_at, truncated);
    assert_eq!(rec.source_modified_at, truncated);
    // Two lineages created in the same millisecond tie on created_at and fall to
    // the id tie-break, as in SQLite.
    let mut b = new_version(ns, "b", b"b", 5);
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
    assert_eq!(listed, expected);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_concurrent_leased_commits_of_one_version_replace_each_other() {
    let Some(url) = database_url("pg_concurrent_leased_commits_of_one_version_replace_each_other")
    else {
        return;
    };
    let (store, ns) = open(&url, "docleases", 8).await;
    let (_, v1, _) = created(
        &store
            .create_version(new_version(ns, "a", b"one", 1))
            .await
            .unwrap(),
    );
    for round in 0..5 {
        // Two work items of one version (two component versions), leased to two
        // workers, commit at once: the rows of exactly one of them remain.
        let mut items = Vec::new();
        for (i, stage) in [
            (0, Stage::Prepare),
            (1, Stage::Prepare),
            (2, Stage::Chunk),
            (3, Stage::Chunk),
        ] {
            let mut w = NewWork::now(ns, stage, v1.uuid(), v1, format!("r{round}-c{i}"), at(2));
            w.target_id = v1.uuid();
            items.push(w);
        }
        for w in &items {
            sqlx::query(
                "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id,
                     stage, component_version, status, attempts, max_attempts, not_before,
                     lease_owner, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', 1, 3, 0, $8, 0, 0)",
            )
            .bind(ns.to_string())
            .bind(rememberstack_core::ids::WorkId::new().to_string())
            .bind(w.target_kind.as_str())
            .bind(w.target_id.to_string())
            .bind(v1.to_string())
            .bind(w.stage.as_str())
            .bind(&w.component_version)
            .bind(format!("owner-{}", w.component_version))
            .execute(store.pool())
            .await
            .unwrap();
        }
        let lease_of = |cv: String| {
            let store = store.clone();
            async move {
                let id: String = sqlx::query_scalar(
                    "SELECT id FROM processing_state WHERE component_version = $1",
                )
                .bind(&cv)
                .fetch_one(store.pool())
                .await
                .unwrap();
                Lease {
                    work_id: id.parse().unwrap(),
                    owner: format!("owner-{cv}"),
                }
            }
        };
        let la = lease_of(format!("r{round}-c0")).await;
        let lb = lease_of(format!("r{round}-c1")).await;
        let (s1, s2) = (store.clone(), store.clone());
        let pa = prepared(v1, "A");
        let mut pb = prepared(v1, "B");
        pb.blocks.truncate(1);
        let (ra, rb) = tokio::join!(
            s1.commit_prepared(&la, pa.clone(), vec![], at(3)),
            s2.commit_prepared(&lb, pb.clone(), vec![], at(3)),
        );
        ra.unwrap();
        rb.unwrap();
        let got = store.prepared(ns, v1).await.unwrap().unwrap();
        assert!(got == pa || got == pb, "one commit's rows, whole: {got:?}");

        let lc = lease_of(format!("r{round}-c2")).await;
        let ld = lease_of(format!("r{round}-c3")).await;
        let ca = vec![chunk(0, 0, "alpha one"), chunk(1, 0, "alpha two")];
        let cb = vec![chunk(0, 0, "bravo one")];
        let (s1, s2) = (store.clone(), store.clone());
        let (ra, rb) = tokio::join!(
            s1.commit_chunks(&lc, v1, ca.clone(), vec![], at(4)),
            s2.commit_chunks(&ld, v1, cb.clone(), vec![], at(4)),
        );
        ra.unwrap();
        rb.unwrap();
        let ids: Vec<ChunkId> = store
            .version_chunks(ns, v1)
            .await
            .unwrap()
            .iter()
            .map(|c| c.chunk_id)
            .collect();
        let a_ids: Vec<ChunkId> = ca.iter().map(|c| c.id).collect();
        let b_ids: Vec<ChunkId> = cb.iter().map(|c| c.id).collect();
        assert!(ids == a_ids || ids == b_ids, "one commit's chunks: {ids:?}");
        let lexical: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM chunk_lexical WHERE namespace_id = $1")
                .bind(ns.to_string())
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert_eq!(lexical as usize, ids.len());
    }
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_ingest_and_chunk_commits_on_one_lineage_do_not_deadlock() {
    let Some(url) = database_url("pg_ingest_and_chunk_commits_on_one_lineage_do_not_deadlock")
    else {
        return;
    };
    let (store, ns) = open(&url, "docdeadlock", 8).await;
    let (doc, v1, _) = created(
        &store
            .create_version(new_version(ns, "a", b"zero", 1))
            .await
            .unwrap(),
    );
    let lp = lease(&store, v1, Stage::Prepare, "w").await;
    store
        .commit_prepared(&lp, prepared(v1, "A"), vec![], at(2))
        .await
        .unwrap();
    for round in 0..12 {
        // A chunk commit of version 1 and a new version of the same lineage, at once.
        let cv = format!("chunk-{round}");
        let id = rememberstack_core::ids::WorkId::new();
        sqlx::query(
            "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id,
                 stage, component_version, status, attempts, max_attempts, not_before,
                 lease_owner, created_at, updated_at)
             VALUES ($1, $2, 'version', $3, $3, 'e1.chunk', $4, 'running', 1, 3, 0, 'w', 0, 0)",
        )
        .bind(ns.to_string())
        .bind(id.to_string())
        .bind(v1.to_string())
        .bind(&cv)
        .execute(store.pool())
        .await
        .unwrap();
        let l = Lease {
            work_id: id,
            owner: "w".into(),
        };
        let nv = new_version(ns, "a", format!("bytes {round}").as_bytes(), 3 + round);
        let chunks = vec![chunk(0, 0, "one"), chunk(1, 0, "two"), chunk(2, 1, "three")];
        let (s1, s2) = (store.clone(), store.clone());
        let (rc, rv) = tokio::join!(
            s1.commit_chunks(&l, v1, chunks, vec![], at(3 + round)),
            s2.create_version(nv),
        );
        rc.unwrap();
        created(&rv.unwrap());
    }
    let row = store.document(ns, doc).await.unwrap().unwrap();
    assert_eq!(row.version_count, 13);
    drop_schema(&store).await;
}
