//! What the PostgreSQL store's documents area must do that only a real server
//! shows: one version for the same bytes created at once by two processes (and
//! gapless ordinals for different bytes), concurrent leased commits of one
//! version, ingest and chunk commits on one lineage that never deadlock. Versions,
//! preparations, chunks, notes and times are tested on every store in
//! `tests/conformance` (`store_sources`). Every test needs `DATABASE_URL`
//! (`scripts/pg-local.sh start` prints one) and is skipped, saying so, without it.
//! Each test works in a schema of its own, dropped at the end.

use chrono::{TimeZone, Utc};
use rememberstack_core::hash::sha256_hex;
use rememberstack_core::ids::{ChunkId, DocumentId, NamespaceId, VersionId};
use rememberstack_core::ledger::{NewWork, Stage};
use rememberstack_core::source::{Admission, DocumentMetadata, Field, Origin};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{
    ContentObject, Lease, NewChunk, NewVersion, PreparedVersion, VersionOutcome,
};
use rememberstack_core::text::{
    Block, BlockKind, ChunkPlan, Representation, Section, SectionRole, SourceFormat, TurnMeta,
    TurnSpan,
};
use rememberstack_pg::{PgStore, PgStoreConfig};

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
