//! What the PostgreSQL store's lifecycle writes must do that only a real server
//! shows: retractions of one fact's supports at once close it once, one request
//! id used twice at once runs once, note promotions and deletions of one lineage
//! race safely. Document deletion, claim retraction, fact invalidation and note
//! revisions are tested on every store in `tests/conformance` (`store_lifecycle`).
//! Every test needs `DATABASE_URL` (`scripts/pg-local.sh start` prints one) and is
//! skipped, saying so, without it. Each test works in a schema of its own, dropped
//! at the end. Rows of other areas (documents, versions, claims, facts, notes) are
//! written with plain SQL.

use chrono::{DateTime, SubsecRound, TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::ids::{ClaimId, DocumentId, EntityId, FactId, NamespaceId, VersionId};
use rememberstack_core::source::Admission;
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{DeletionOutcome, RequestKey};
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
        max_connections: 4,
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

type Ts = DateTime<Utc>;

/// An instant with sub-millisecond digits (the store keeps milliseconds).
fn at(secs: i64) -> Ts {
    Utc.timestamp_opt(1_780_000_000 + secs, 123_456_789)
        .unwrap()
}

async fn open(test: &str, tag: &str) -> Option<(PgStore, NamespaceId)> {
    let url = database_url(test)?;
    let store = PgStore::connect_with(&url, config(&fresh_schema(tag)))
        .await
        .unwrap();
    let ns = store.ensure_namespace("default", at(0)).await.unwrap().id;
    Some((store, ns))
}

/// A lineage with `versions` versions (ordinal 1..), the last one current.
async fn document(
    store: &PgStore,
    ns: NamespaceId,
    source_ref: &str,
    versions: &[(VersionId, &str)],
) -> DocumentId {
    let doc = DocumentId::new();
    let last = versions.last().unwrap().0;
    sqlx::query(
        "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode,
             current_version_id, latest_version_id, version_count, created_at, updated_at)
         VALUES ($1, $2, 'note', $3, 'living', $4, $4, $5, $6, $6)",
    )
    .bind(ns.to_string())
    .bind(doc.to_string())
    .bind(source_ref)
    .bind(last.to_string())
    .bind(versions.len() as i32)
    .bind(at(0))
    .execute(store.pool())
    .await
    .unwrap();
    for (i, (v, admission)) in versions.iter().enumerate() {
        sqlx::query(
            "INSERT INTO document_versions (namespace_id, id, document_id, ordinal, content_sha256,
                 size, mime, source_modified_at, origin, metadata_json, created_at, admission)
             VALUES ($1, $2, $3, $4, 'sha', 1, 'text/markdown', $5, 'external', '{}'::jsonb, $5, $6)",
        )
        .bind(ns.to_string())
        .bind(v.to_string())
        .bind(doc.to_string())
        .bind(i as i32 + 1)
        .bind(at(0))
        .bind(*admission)
        .execute(store.pool())
        .await
        .unwrap();
    }
    doc
}

async fn claim(store: &PgStore, ns: NamespaceId, doc: DocumentId, current: bool) -> ClaimId {
    let id = ClaimId::new();
    sqlx::query(
        "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json,
             valid_precision, valid_kind, asserted_at, extractor_version, extraction_input_hash,
             origin_version_id, origin_chunk_id, embedding_key, claim_key, is_current, created_at)
         VALUES ($1, $2, $3, 'a claim', '[]'::jsonb, 'unknown', 'unknown', $4, 'x1', 'h',
             'v', 'c', 'k', $2, $5, $4)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(doc.to_string())
    .bind(at(0))
    .bind(current)
    .execute(store.pool())
    .await
    .unwrap();
    id
}

/// A live fact (`object` makes it a relation) with its evidence.
async fn fact(
    store: &PgStore,
    ns: NamespaceId,
    subject: EntityId,
    object: Option<EntityId>,
    evidence: &[(ClaimId, &str)],
) -> FactId {
    let id = FactId::new();
    sqlx::query(
        "INSERT INTO facts (namespace_id, id, kind, subject_id, predicate, object_id, statement,
             valid_precision, validity_kind, recorded_at, embedding_key, updated_at)
         VALUES ($1, $2, $3, $4, 'knows', $5, 's', 'unknown', 'unknown', $6, 'k', $6)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(if object.is_some() {
        "relation"
    } else {
        "observation"
    })
    .bind(subject.to_string())
    .bind(object.map(|o| o.to_string()))
    .bind(at(0))
    .execute(store.pool())
    .await
    .unwrap();
    for (c, stance) in evidence {
        sqlx::query(
            "INSERT INTO fact_evidence (namespace_id, fact_id, claim_id, stance, added_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(ns.to_string())
        .bind(id.to_string())
        .bind(c.to_string())
        .bind(*stance)
        .bind(at(0))
        .execute(store.pool())
        .await
        .unwrap();
    }
    id
}

async fn fact_state(store: &PgStore, f: FactId) -> (Option<Ts>, Option<String>) {
    let r = sqlx::query("SELECT invalidated_at, closed_reason FROM facts WHERE id = $1")
        .bind(f.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap();
    (r.get("invalidated_at"), r.get("closed_reason"))
}

async fn count(store: &PgStore, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

fn key(id: &str, op: &str, digest: &str) -> RequestKey {
    RequestKey {
        request_id: id.into(),
        operation: op.into(),
        digest: digest.into(),
    }
}

#[tokio::test]
async fn pg_retract_claim_concurrent_support() {
    let Some((store, ns)) = open("pg_retract_claim_concurrent_support", "lcrace").await else {
        return;
    };
    // Two claims support one fact; retracting both at once must close it.
    for round in 0..5 {
        let doc = document(
            &store,
            ns,
            &format!("d{round}"),
            &[(VersionId::new(), "promoted")],
        )
        .await;
        let c1 = claim(&store, ns, doc, true).await;
        let c2 = claim(&store, ns, doc, true).await;
        let f = fact(
            &store,
            ns,
            EntityId::new(),
            None,
            &[(c1, "support"), (c2, "support")],
        )
        .await;
        let (a, b) = tokio::join!(
            store.retract_claim(ns, c1, "a", None, at(1)),
            store.retract_claim(ns, c2, "b", None, at(1))
        );
        let closed = a.unwrap().observations_closed + b.unwrap().observations_closed;
        assert_eq!(closed, 1);
        assert_eq!(
            fact_state(&store, f).await.1.as_deref(),
            Some("retracted_claim")
        );
    }
    // The same request id twice at once: one runs, the other replays it.
    let doc = document(&store, ns, "dr", &[(VersionId::new(), "promoted")]).await;
    let c = claim(&store, ns, doc, true).await;
    let req = key("same", "retract_claim", "dg");
    let (a, b) = tokio::join!(
        store.retract_claim(ns, c, "a", Some(&req), at(2)),
        store.retract_claim(ns, c, "a", Some(&req), at(2))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.retracted_at, b.retracted_at);
    assert!(a.was_current && b.was_current);
    drop_schema(&store).await;
}

/// A note revision row for `version` of lineage `doc`.
async fn note_row(
    store: &PgStore,
    ns: NamespaceId,
    doc: DocumentId,
    version: VersionId,
    (key, revision, digest): (&str, &str, &str),
    lifecycle: &str,
) {
    sqlx::query(
        "INSERT INTO notes (namespace_id, document_id, version_id, source_key, source_revision,
             digest, lifecycle, lifecycle_version, metadata_json, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $9)",
    )
    .bind(ns.to_string())
    .bind(doc.to_string())
    .bind(version.to_string())
    .bind(key)
    .bind(revision)
    .bind(digest)
    .bind(lifecycle)
    .bind(sqlx::types::Json(serde_json::json!({ "rev": revision })))
    .bind(at(0).trunc_subsecs(3))
    .execute(store.pool())
    .await
    .unwrap();
}

async fn current_version(store: &PgStore, doc: DocumentId) -> Option<String> {
    sqlx::query_scalar("SELECT current_version_id FROM documents WHERE id = $1")
        .bind(doc.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn pg_note_promotions_race() {
    let Some((store, ns)) = open("pg_note_promotions_race", "lcnrace").await else {
        return;
    };
    // Two candidates promoted at once: exactly one stays promoted.
    let (v1, v2) = (VersionId::new(), VersionId::new());
    let doc = document(&store, ns, "k", &[(v1, "candidate"), (v2, "candidate")]).await;
    note_row(&store, ns, doc, v1, ("k", "a", "ta"), "candidate").await;
    note_row(&store, ns, doc, v2, ("k", "b", "tb"), "candidate").await;
    let (a, b) = tokio::join!(
        store.transition_note(ns, v1, 1, Admission::Promoted, at(1)),
        store.transition_note(ns, v2, 1, Admission::Promoted, at(1))
    );
    a.unwrap();
    b.unwrap();
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM notes WHERE lifecycle = 'promoted'"
        )
        .await,
        1
    );
    // The same compare-and-set twice at once: one wins, the other is stale.
    let v3 = VersionId::new();
    let doc3 = document(&store, ns, "k3", &[(v3, "candidate")]).await;
    note_row(&store, ns, doc3, v3, ("k3", "a", "ta"), "candidate").await;
    let (a, b) = tokio::join!(
        store.transition_note(ns, v3, 1, Admission::Promoted, at(2)),
        store.transition_note(ns, v3, 1, Admission::Revoked, at(2))
    );
    assert_eq!(a.is_ok() as u8 + b.is_ok() as u8, 1);
    let err = a.err().or(b.err()).unwrap();
    assert_eq!(err.code(), ErrorCode::Conflict);
    assert_eq!(
        store.note(ns, v3).await.unwrap().unwrap().lifecycle_version,
        2
    );
    // A deletion and a transition of the same lineage at once: both finish.
    for round in 0..5 {
        let (v4, v5) = (VersionId::new(), VersionId::new());
        let key = format!("kd{round}");
        let doc = document(&store, ns, &key, &[(v4, "promoted"), (v5, "candidate")]).await;
        note_row(&store, ns, doc, v4, (&key, "a", "ta"), "promoted").await;
        note_row(&store, ns, doc, v5, (&key, "b", "tb"), "candidate").await;
        claim(&store, ns, doc, true).await;
        let (d, t) = tokio::join!(
            store.delete_document(ns, doc, at(3)),
            store.transition_note(ns, v5, 1, Admission::Promoted, at(3))
        );
        assert!(matches!(d.unwrap(), DeletionOutcome::Deleted(_)));
        assert_eq!(t.unwrap().lifecycle, Admission::Promoted);
        // The tombstone wins: a deleted lineage is never served again.
        assert_eq!(current_version(&store, doc).await, None);
    }
    drop_schema(&store).await;
}
