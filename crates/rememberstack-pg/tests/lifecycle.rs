//! The PostgreSQL store's lifecycle writes against a real server: document
//! deletion, claim retraction, fact invalidation, fact events, feedback and notes.
//! Every test needs `DATABASE_URL` (`scripts/pg-local.sh start` prints one) and is
//! skipped, saying so, without it. Each test works in a schema of its own, dropped
//! at the end. Rows of other areas (documents, versions, claims, facts, notes) are
//! written with plain SQL.

use chrono::{DateTime, SubsecRound, TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::ids::{ClaimId, DocumentId, EntityId, FactId, NamespaceId, VersionId};
use rememberstack_core::source::Admission;
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{DeletionOutcome, NoteLookup, RequestKey};
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

async fn is_current(store: &PgStore, c: ClaimId) -> bool {
    sqlx::query_scalar("SELECT is_current FROM claims WHERE id = $1")
        .bind(c.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
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
async fn pg_delete_document_cascade() {
    let Some((store, ns)) = open("pg_delete_document_cascade", "lcdel").await else {
        return;
    };
    assert_eq!(
        store
            .delete_document(ns, DocumentId::new(), at(1))
            .await
            .unwrap(),
        DeletionOutcome::NotFound
    );
    let (v1, v2) = (VersionId::new(), VersionId::new());
    let doc = document(&store, ns, "d", &[(v1, "promoted"), (v2, "promoted")]).await;
    let other = document(&store, ns, "o", &[(VersionId::new(), "promoted")]).await;
    let c1 = claim(&store, ns, doc, true).await;
    let c2 = claim(&store, ns, doc, true).await;
    let c3 = claim(&store, ns, doc, false).await;
    let c4 = claim(&store, ns, other, true).await;
    let (e1, e2, e3) = (EntityId::new(), EntityId::new(), EntityId::new());
    // Only the lineage supports it: closed.
    let f1 = fact(
        &store,
        ns,
        e1,
        Some(e2),
        &[(c1, "support"), (c3, "support")],
    )
    .await;
    // Another lineage still supports it: open.
    let f2 = fact(&store, ns, e3, None, &[(c2, "support"), (c4, "support")]).await;
    // Only contradicted by the lineage, no support at all: closed (an observation).
    let f3 = fact(&store, ns, e3, None, &[(c2, "contradict")]).await;
    // Already closed: untouched.
    let f4 = fact(&store, ns, e1, None, &[(c1, "support")]).await;
    sqlx::query(
        "UPDATE facts SET invalidated_at = $1, closed_reason = 'invalidated' WHERE id = $2",
    )
    .bind(at(0))
    .bind(f4.to_string())
    .execute(store.pool())
    .await
    .unwrap();
    // A fact of another lineage only: untouched.
    let f5 = fact(&store, ns, e2, None, &[(c4, "support")]).await;

    let now = at(10);
    let DeletionOutcome::Deleted(d) = store.delete_document(ns, doc, now).await.unwrap() else {
        panic!("expected a deletion");
    };
    assert_eq!(d.doc_id, doc);
    assert_eq!(d.deleted_at, now.trunc_subsecs(3));
    assert_eq!(d.claims_retired, 2);
    assert_eq!(d.relations_closed, 1);
    assert_eq!(d.observations_closed, 1);
    let mut touched = vec![e1, e2, e3];
    touched.sort();
    assert_eq!(d.touched_entities, touched);

    let r = sqlx::query("SELECT deleted_at, current_version_id FROM documents WHERE id = $1")
        .bind(doc.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(r.get::<Option<Ts>, _>("deleted_at"), Some(d.deleted_at));
    assert_eq!(r.get::<Option<String>, _>("current_version_id"), None);
    assert_eq!(
        count(
            &store,
            &format!(
                "SELECT COUNT(*) FROM document_versions WHERE document_id = '{doc}' AND deleted_at IS NOT NULL"
            )
        )
        .await,
        2
    );
    assert!(!is_current(&store, c1).await && !is_current(&store, c2).await);
    assert!(is_current(&store, c4).await);
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM claim_currency_events WHERE reason = 'document_deleted' AND NOT is_current"
        )
        .await,
        2
    );
    assert_eq!(
        fact_state(&store, f1).await,
        (Some(d.deleted_at), Some("retracted_source_removal".into()))
    );
    assert_eq!(fact_state(&store, f2).await, (None, None));
    assert_eq!(
        fact_state(&store, f3).await.1.as_deref(),
        Some("retracted_source_removal")
    );
    assert_eq!(
        fact_state(&store, f4).await.1.as_deref(),
        Some("invalidated")
    );
    assert_eq!(fact_state(&store, f5).await, (None, None));
    let events = store.fact_events(ns, f1).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event, "closed");
    assert_eq!(events[0].reason, "retracted_source_removal");
    assert_eq!(
        events[0].detail,
        serde_json::json!({ "document_id": doc.to_string() })
    );
    assert_eq!(events[0].created_at, d.deleted_at);
    assert!(store.fact_events(ns, f2).await.unwrap().is_empty());
    let r = sqlx::query(
        "SELECT deleted_at, claims_retired, relations_closed, observations_closed
         FROM document_deletions WHERE document_id = $1",
    )
    .bind(doc.to_string())
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].get::<Ts, _>("deleted_at"), d.deleted_at);
    assert_eq!(r[0].get::<i64, _>("claims_retired"), 2);
    assert_eq!(r[0].get::<i64, _>("relations_closed"), 1);
    assert_eq!(r[0].get::<i64, _>("observations_closed"), 1);

    // A repeat that changes nothing.
    assert_eq!(
        store.delete_document(ns, doc, at(20)).await.unwrap(),
        DeletionOutcome::AlreadyDeleted
    );
    assert_eq!(
        count(&store, "SELECT COUNT(*) FROM document_deletions").await,
        1
    );
    // Work that landed after the tombstone: a repeat retires it, under the first
    // tombstone's instant.
    sqlx::query("UPDATE claims SET is_current = true WHERE id = $1")
        .bind(c3.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let DeletionOutcome::Deleted(again) = store.delete_document(ns, doc, at(30)).await.unwrap()
    else {
        panic!("expected a finishing episode");
    };
    assert_eq!(again.deleted_at, d.deleted_at);
    assert_eq!(again.claims_retired, 1);
    assert_eq!((again.relations_closed, again.observations_closed), (0, 0));
    assert!(again.touched_entities.is_empty());
    assert!(!is_current(&store, c3).await);
    assert_eq!(
        count(&store, "SELECT COUNT(*) FROM document_deletions").await,
        2
    );
    // Another namespace does not see the lineage.
    let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
    assert_eq!(
        store.delete_document(ns2, other, at(40)).await.unwrap(),
        DeletionOutcome::NotFound
    );
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_retract_claim() {
    let Some((store, ns)) = open("pg_retract_claim", "lcret").await else {
        return;
    };
    let doc = document(&store, ns, "d", &[(VersionId::new(), "promoted")]).await;
    let c1 = claim(&store, ns, doc, true).await;
    let c2 = claim(&store, ns, doc, true).await;
    let (e1, e2, e3) = (EntityId::new(), EntityId::new(), EntityId::new());
    let f1 = fact(&store, ns, e1, Some(e2), &[(c1, "support")]).await;
    let f2 = fact(&store, ns, e3, None, &[(c1, "support"), (c2, "support")]).await;
    let f3 = fact(&store, ns, e3, None, &[(c1, "contradict"), (c2, "support")]).await;

    let err = store
        .retract_claim(ns, ClaimId::new(), "why", None, at(1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);

    let req = key("r1", "retract_claim", "d1");
    let now = at(5);
    let r = store
        .retract_claim(ns, c1, "wrong", Some(&req), now)
        .await
        .unwrap();
    assert_eq!(r.claim_id, c1);
    assert_eq!(r.retracted_at, now.trunc_subsecs(3));
    assert_eq!(r.reason, "wrong");
    assert!(r.was_current);
    assert_eq!(r.facts_recounted, 3);
    assert_eq!((r.relations_closed, r.observations_closed), (1, 0));
    let mut touched = vec![e1, e2];
    touched.sort();
    assert_eq!(r.touched_entities, touched);
    assert!(!is_current(&store, c1).await);
    assert!(is_current(&store, c2).await);
    assert_eq!(
        count(
            &store,
            &format!(
                "SELECT COUNT(*) FROM claim_currency_events WHERE claim_id = '{c1}' AND reason = 'retracted'"
            )
        )
        .await,
        1
    );
    assert_eq!(
        fact_state(&store, f1).await,
        (Some(r.retracted_at), Some("retracted_claim".into()))
    );
    assert_eq!(fact_state(&store, f2).await, (None, None));
    assert_eq!(fact_state(&store, f3).await, (None, None));
    let ev = store.fact_events(ns, f1).await.unwrap();
    let names: Vec<_> = ev
        .iter()
        .map(|e| (e.event.as_str(), e.reason.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("support_retracted", "wrong"),
            ("closed", "retracted_claim")
        ]
    );
    let detail = serde_json::json!({ "claim_id": c1.to_string() });
    assert!(ev.iter().all(|e| e.detail == detail));
    for f in [f2, f3] {
        let ev = store.fact_events(ns, f).await.unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event, "support_retracted");
    }

    // The exact replay returns the stored result and writes nothing.
    let events = count(&store, "SELECT COUNT(*) FROM fact_events").await;
    let replayed = store
        .retract_claim(ns, c1, "wrong", Some(&req), at(9))
        .await
        .unwrap();
    let mut public = r.clone();
    public.touched_entities = vec![];
    assert_eq!(replayed, public);
    assert_eq!(
        count(&store, "SELECT COUNT(*) FROM fact_events").await,
        events
    );
    // The same id with another input, or for another operation.
    for other in [
        key("r1", "retract_claim", "d2"),
        key("r1", "invalidate_fact", "d1"),
    ] {
        let err = store
            .retract_claim(ns, c2, "x", Some(&other), at(9))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::RequestConflict);
    }
    assert!(is_current(&store, c2).await);
    // A repeat under a new id: the first retraction stands.
    let again = store
        .retract_claim(
            ns,
            c1,
            "other reason",
            Some(&key("r2", "retract_claim", "d3")),
            at(12),
        )
        .await
        .unwrap();
    assert_eq!(again.retracted_at, r.retracted_at);
    assert_eq!(again.reason, "wrong");
    assert!(!again.was_current);
    assert_eq!(
        (
            again.facts_recounted,
            again.relations_closed,
            again.observations_closed
        ),
        (0, 0, 0)
    );
    assert_eq!(
        count(&store, "SELECT COUNT(*) FROM fact_events").await,
        events
    );
    assert_eq!(
        count(&store, "SELECT COUNT(*) FROM lifecycle_requests").await,
        2
    );
    let stored: Option<String> =
        sqlx::query_scalar("SELECT request_id FROM claim_retractions WHERE claim_id = $1")
            .bind(c1.to_string())
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(stored.as_deref(), Some("r1"));

    // Retracting the last support of f2 and f3 (no request id) closes both.
    let r2 = store
        .retract_claim(ns, c2, "gone", None, at(20))
        .await
        .unwrap();
    assert!(r2.was_current);
    assert_eq!(r2.facts_recounted, 2);
    assert_eq!((r2.relations_closed, r2.observations_closed), (0, 2));
    assert_eq!(r2.touched_entities, vec![e3]);
    // A non-current claim is retracted without a currency event.
    let c3 = claim(&store, ns, doc, false).await;
    let r3 = store
        .retract_claim(ns, c3, "old", None, at(21))
        .await
        .unwrap();
    assert!(!r3.was_current);
    assert_eq!(
        count(
            &store,
            &format!("SELECT COUNT(*) FROM claim_currency_events WHERE claim_id = '{c3}'")
        )
        .await,
        0
    );
    drop_schema(&store).await;
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

#[tokio::test]
async fn pg_invalidate_fact() {
    let Some((store, ns)) = open("pg_invalidate_fact", "lcinv").await else {
        return;
    };
    let err = store
        .invalidate_fact(ns, FactId::new(), "x", None, None, at(1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    let (e1, e2) = (EntityId::new(), EntityId::new());
    let f1 = fact(&store, ns, e1, Some(e2), &[]).await;
    let f2 = fact(&store, ns, e2, None, &[]).await;

    let req = key("i1", "invalidate_fact", "d1");
    let now = at(3);
    let inv = store
        .invalidate_fact(ns, f1, "moved", Some("Ann lives in Oslo"), Some(&req), now)
        .await
        .unwrap();
    assert_eq!(inv.fact_id, f1);
    assert_eq!(inv.invalidated_at, now.trunc_subsecs(3));
    assert_eq!(inv.closed_reason, "corrected");
    assert_eq!(inv.reason, "moved");
    assert_eq!(inv.touched_entities, vec![e1, e2]);
    assert_eq!(
        fact_state(&store, f1).await,
        (Some(inv.invalidated_at), Some("corrected".into()))
    );
    let ev = store.fact_events(ns, f1).await.unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(
        (ev[0].event.as_str(), ev[0].reason.as_str()),
        ("corrected", "moved")
    );
    assert_eq!(
        ev[0].detail,
        serde_json::json!({ "request_id": "i1", "corrected_statement": "Ann lives in Oslo" })
    );
    assert_eq!(ev[0].created_at, inv.invalidated_at);

    // Replay: the stored answer, nothing written.
    let replayed = store
        .invalidate_fact(
            ns,
            f1,
            "moved",
            Some("Ann lives in Oslo"),
            Some(&req),
            at(8),
        )
        .await
        .unwrap();
    let mut public = inv.clone();
    public.touched_entities = vec![];
    assert_eq!(replayed, public);
    assert_eq!(store.fact_events(ns, f1).await.unwrap().len(), 1);
    let err = store
        .invalidate_fact(
            ns,
            f2,
            "x",
            None,
            Some(&key("i1", "invalidate_fact", "d2")),
            at(8),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::RequestConflict);
    assert_eq!(fact_state(&store, f2).await, (None, None));
    // A closed fact refuses another close.
    let err = store
        .invalidate_fact(
            ns,
            f1,
            "again",
            None,
            Some(&key("i2", "invalidate_fact", "d3")),
            at(9),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);
    assert!(err.to_string().contains("corrected"), "{err}");
    assert_eq!(
        count(&store, "SELECT COUNT(*) FROM lifecycle_requests").await,
        1
    );

    let inv2 = store
        .invalidate_fact(ns, f2, "false", None, None, at(10))
        .await
        .unwrap();
    assert_eq!(inv2.closed_reason, "invalidated");
    assert_eq!(inv2.touched_entities, vec![e2]);
    let ev = store.fact_events(ns, f2).await.unwrap();
    assert_eq!(ev[0].event, "invalidated");
    assert_eq!(
        ev[0].detail,
        serde_json::json!({ "request_id": null, "corrected_statement": null })
    );
    // Another namespace sees neither fact.
    let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
    assert!(store.fact_events(ns2, f1).await.unwrap().is_empty());
    let err = store
        .invalidate_fact(ns2, f1, "x", None, None, at(11))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
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

async fn admission(store: &PgStore, v: VersionId) -> String {
    sqlx::query_scalar("SELECT admission FROM document_versions WHERE id = $1")
        .bind(v.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn pg_notes() {
    let Some((store, ns)) = open("pg_notes", "lcnote").await else {
        return;
    };
    let (v1, v2, v3) = (VersionId::new(), VersionId::new(), VersionId::new());
    let doc = document(
        &store,
        ns,
        "prefs",
        &[(v1, "promoted"), (v2, "candidate"), (v3, "candidate")],
    )
    .await;
    // v1 serves the lineage.
    sqlx::query("UPDATE documents SET current_version_id = $1 WHERE id = $2")
        .bind(v1.to_string())
        .bind(doc.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    note_row(&store, ns, doc, v1, ("prefs", "r1", "t1"), "promoted").await;
    note_row(&store, ns, doc, v2, ("prefs", "r2", "t2"), "candidate").await;
    note_row(&store, ns, doc, v3, ("prefs", "r3", "t3"), "candidate").await;
    let c_v1 = claim(&store, ns, doc, true).await;

    // Lookup: unknown, then the revision, then the request.
    assert_eq!(
        store.note_lookup(ns, "q1", "prefs", "r9").await.unwrap(),
        NoteLookup::New
    );
    let NoteLookup::Revision(n1) = store.note_lookup(ns, "q1", "prefs", "r1").await.unwrap() else {
        panic!("expected the revision");
    };
    assert_eq!(n1.note_id, doc);
    assert_eq!(n1.version_id, v1);
    assert_eq!(
        (n1.source_key.as_str(), n1.source_revision.as_str()),
        ("prefs", "r1")
    );
    assert_eq!(n1.digest, "t1");
    assert_eq!(n1.lifecycle, Admission::Promoted);
    assert_eq!(n1.lifecycle_version, 1);
    assert_eq!(n1.metadata, serde_json::json!({ "rev": "r1" }));
    assert_eq!(n1.created_at, at(0).trunc_subsecs(3));
    store
        .add_note_request(ns, "q1", "rd1", v1, at(1))
        .await
        .unwrap();
    // The request id wins over the revision (whatever revision it names now).
    assert_eq!(
        store.note_lookup(ns, "q1", "prefs", "r9").await.unwrap(),
        NoteLookup::Request("rd1".into(), n1.clone())
    );
    // The same request id again: a concurrent use, `conflict`, and nothing changes.
    let err = store
        .add_note_request(ns, "q1", "rd2", v2, at(2))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);
    assert_eq!(
        store.note_lookup(ns, "q1", "prefs", "r1").await.unwrap(),
        NoteLookup::Request("rd1".into(), n1.clone())
    );
    // The same revision under a second request id: one note, two requests.
    store
        .add_note_request(ns, "q2", "rd1", v1, at(2))
        .await
        .unwrap();
    assert_eq!(
        store.note_lookup(ns, "q2", "prefs", "r1").await.unwrap(),
        NoteLookup::Request("rd1".into(), n1.clone())
    );
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM notes WHERE source_revision = 'r1'"
        )
        .await,
        1
    );
    // Another namespace knows none of it.
    let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
    assert_eq!(
        store.note_lookup(ns2, "q1", "prefs", "r1").await.unwrap(),
        NoteLookup::New
    );
    assert_eq!(store.note(ns2, v1).await.unwrap(), None);

    assert_eq!(store.note(ns, v1).await.unwrap(), Some(n1.clone()));
    assert_eq!(store.note(ns, VersionId::new()).await.unwrap(), None);

    // Listing in keyset order.
    let all = store.list_notes(ns, 0, 10).await.unwrap();
    let order: Vec<_> = all.iter().map(|n| n.version_id).collect();
    assert_eq!(order, vec![v1, v2, v3]);
    let page = store.list_notes(ns, all[0].seq, 1).await.unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].version_id, v2);
    assert!(
        store
            .list_notes(ns, all[2].seq, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // Transitions: unknown revision, stale version, forbidden move.
    let err = store
        .transition_note(ns, VersionId::new(), 1, Admission::Promoted, at(3))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    let err = store
        .transition_note(ns, v2, 2, Admission::Promoted, at(3))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);
    assert!(err.to_string().contains("stale"), "{err}");
    let err = store
        .transition_note(ns, v2, 1, Admission::Archived, at(3))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);
    assert_eq!(
        store.note(ns, v2).await.unwrap().unwrap().lifecycle_version,
        1
    );

    // Promote v2: v1 is archived, the lineage unserved then served by v2, v1's
    // claims retired.
    let now = at(4);
    let n2 = store
        .transition_note(ns, v2, 1, Admission::Promoted, now)
        .await
        .unwrap();
    assert_eq!(n2.lifecycle, Admission::Promoted);
    assert_eq!(n2.lifecycle_version, 2);
    assert_eq!(n2.updated_at, now.trunc_subsecs(3));
    assert_eq!(admission(&store, v2).await, "promoted");
    let n1b = store.note(ns, v1).await.unwrap().unwrap();
    assert_eq!(
        (n1b.lifecycle, n1b.lifecycle_version),
        (Admission::Archived, 2)
    );
    assert_eq!(admission(&store, v1).await, "archived");
    assert_eq!(current_version(&store, doc).await, Some(v2.to_string()));
    assert!(!is_current(&store, c_v1).await);
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM claim_currency_events WHERE reason = 'note_archived'"
        )
        .await,
        1
    );
    // The same compare-and-set again is stale.
    let err = store
        .transition_note(ns, v2, 1, Admission::Promoted, at(5))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);

    // Revoke the candidate v3: the lineage keeps serving v2.
    let n3 = store
        .transition_note(ns, v3, 1, Admission::Revoked, at(6))
        .await
        .unwrap();
    assert_eq!(
        (n3.lifecycle, n3.lifecycle_version),
        (Admission::Revoked, 2)
    );
    assert_eq!(admission(&store, v3).await, "revoked");
    assert_eq!(current_version(&store, doc).await, Some(v2.to_string()));
    let err = store
        .transition_note(ns, v3, 2, Admission::Promoted, at(6))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Conflict);

    // Archive v2: the lineage serves nothing; its current claims retire.
    let c_v2 = claim(&store, ns, doc, true).await;
    let n2b = store
        .transition_note(ns, v2, 2, Admission::Archived, at(7))
        .await
        .unwrap();
    assert_eq!(
        (n2b.lifecycle, n2b.lifecycle_version),
        (Admission::Archived, 3)
    );
    assert_eq!(current_version(&store, doc).await, None);
    assert!(!is_current(&store, c_v2).await);
    drop_schema(&store).await;
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
