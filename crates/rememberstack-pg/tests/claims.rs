//! What the PostgreSQL store's claims area must do that only a real server shows:
//! many sessions applying currency to one lineage at once, each change recorded
//! once. Extraction commits, reuse, currency, claim reads and claim search are
//! tested on every store in `tests/conformance` (`store_claims`). Needs
//! `DATABASE_URL` (`scripts/pg-local.sh start` prints one); skipped, saying so,
//! without it. Each test works in a schema of its own, dropped at the end. Rows
//! owned by other areas (documents, versions, work items) are written with plain
//! SQL.

use chrono::{TimeZone, Utc};
use rememberstack_core::claims::{EvidenceSpan, Precision, Validity, ValidityKind};
use rememberstack_core::ids::{ChunkId, ClaimId, DocumentId, NamespaceId, VersionId, WorkId};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{DecisionRow, ExtractionCommit, Lease, NewClaim, Occurrence};
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

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

const EXT: &str = "extract-v1";

/// A lineage with versions of ordinals 1..=n (the last one current), titled.
async fn document(
    store: &PgStore,
    ns: NamespaceId,
    source_ref: &str,
    n: usize,
) -> (DocumentId, Vec<VersionId>) {
    let doc = DocumentId::new();
    let versions: Vec<VersionId> = (0..n).map(|_| VersionId::new()).collect();
    let last = versions.last().unwrap().to_string();
    sqlx::query(
        "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode, current_version_id,
             latest_version_id, version_count, created_at, updated_at)
         VALUES ($1, $2, 'file', $3, 'living', $4, $4, $5, $6, $6)",
    )
    .bind(ns.to_string())
    .bind(doc.to_string())
    .bind(source_ref)
    .bind(&last)
    .bind(n as i32)
    .bind(at(0))
    .execute(store.pool())
    .await
    .unwrap();
    for (i, v) in versions.iter().enumerate() {
        sqlx::query(
            "INSERT INTO document_versions (namespace_id, id, document_id, ordinal, content_sha256,
                 size, mime, source_modified_at, origin, metadata_json, created_at)
             VALUES ($1, $2, $3, $4, 'sha', 1, 'text/markdown', $5, 'external', '{}', $5)",
        )
        .bind(ns.to_string())
        .bind(v.to_string())
        .bind(doc.to_string())
        .bind(i as i32 + 1)
        .bind(at(i as i64))
        .execute(store.pool())
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO representations (namespace_id, version_id, markdown, turns_json, title,
                 component_version, created_at)
             VALUES ($1, $2, '', '[]', $3, 'e0', $4)",
        )
        .bind(ns.to_string())
        .bind(v.to_string())
        .bind(format!("{source_ref} v{}", i + 1))
        .bind(at(0))
        .execute(store.pool())
        .await
        .unwrap();
    }
    (doc, versions)
}

/// A running work item leased to `owner`.
async fn lease(store: &PgStore, ns: NamespaceId, version: VersionId, owner: &str) -> Lease {
    let id = WorkId::new();
    sqlx::query(
        "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id, stage,
             component_version, status, attempts, max_attempts, not_before, lease_owner,
             lease_expires_at, created_at, updated_at)
         VALUES ($1, $2, 'chunk', $3, $4, 'e2.extract', $5, 'running', 1, 3, 0, $6, $7, 0, 0)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(version.to_string())
    .bind(EXT)
    .bind(owner)
    .bind(i64::MAX / 2)
    .execute(store.pool())
    .await
    .unwrap();
    Lease {
        work_id: id,
        owner: owner.to_string(),
    }
}

fn new_claim(
    doc: DocumentId,
    version: VersionId,
    chunk: ChunkId,
    text: &str,
    key: &str,
) -> NewClaim {
    NewClaim {
        id: ClaimId::new(),
        document_id: doc,
        text: text.to_string(),
        added_context: vec![format!("context of {key}")],
        validity: Validity {
            from: Some(at(-86_400)),
            until: None,
            precision: Precision::Day,
            kind: ValidityKind::Event,
        },
        asserted_at: at(5),
        extractor_version: EXT.to_string(),
        extraction_input_hash: format!("hash-{chunk}"),
        origin_version_id: version,
        origin_chunk_id: chunk,
        embedding_key: format!("emb-{key}"),
        claim_key: format!("key-{key}"),
    }
}

fn occurrence(c: &NewClaim, version: VersionId, chunk: ChunkId, ordinal: u32) -> Occurrence {
    Occurrence {
        claim_id: c.id,
        chunk_id: chunk,
        version_id: version,
        document_id: c.document_id,
        extractor_version: EXT.to_string(),
        extraction_input_hash: c.extraction_input_hash.clone(),
        ordinal,
        spans: vec![EvidenceSpan {
            start: 3,
            end: 9,
            char_start: 3,
            char_end: 9,
        }],
        passages: vec!["P1".to_string()],
        event_ids: vec!["m1".to_string()],
        reused: false,
    }
}

/// A fresh extraction of `chunk` with these claims (one `keep` decision each).
fn fresh(
    doc: DocumentId,
    version: VersionId,
    chunk: ChunkId,
    hash: &str,
    claims: Vec<NewClaim>,
) -> ExtractionCommit {
    let occurrences = claims
        .iter()
        .enumerate()
        .map(|(i, c)| occurrence(c, version, chunk, i as u32))
        .collect();
    let decisions = claims
        .iter()
        .map(|c| DecisionRow {
            kind: "keep".to_string(),
            passage: Some("P1".to_string()),
            reason: None,
            claim_id: Some(c.id),
            detail: serde_json::json!({"text": c.text}),
        })
        .collect();
    ExtractionCommit {
        document_id: doc,
        version_id: version,
        chunk_id: chunk,
        extraction_input_hash: hash.to_string(),
        extractor_version: EXT.to_string(),
        claims,
        occurrences,
        decisions,
    }
}

async fn currency_events(store: &PgStore, claim: ClaimId) -> Vec<(bool, String)> {
    sqlx::query_as(
        "SELECT is_current, reason FROM claim_currency_events WHERE claim_id = $1 ORDER BY seq",
    )
    .bind(claim.to_string())
    .fetch_all(store.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn pg_claims_apply_currency_concurrently() {
    let Some(url) = database_url("pg_claims_apply_currency_concurrently") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("claims_conc")))
        .await
        .unwrap();
    let ns = store.ensure_namespace("t", at(0)).await.unwrap().id;
    let (doc, v) = document(&store, ns, "c.md", 1).await;
    let k = ChunkId::new();
    let claims: Vec<NewClaim> = (0..6)
        .map(|i| new_claim(doc, v[0], k, &format!("claim number {i}"), &format!("n{i}")))
        .collect();
    let l = lease(&store, ns, v[0], "w").await;
    store
        .commit_extractions(
            ns,
            vec![(l, fresh(doc, v[0], k, "h", claims.clone()), vec![])],
            at(1),
        )
        .await
        .unwrap();
    let ids: Vec<ClaimId> = claims.iter().map(|c| c.id).collect();
    // Many writers flip the same lineage between two sets: every change is
    // recorded exactly once, and the final state is one of the two sets.
    let (even, odd): (Vec<ClaimId>, Vec<ClaimId>) = (
        ids.iter().step_by(2).copied().collect(),
        ids.iter().skip(1).step_by(2).copied().collect(),
    );
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = store.clone();
        let set = if i % 2 == 0 {
            even.clone()
        } else {
            odd.clone()
        };
        tasks.push(tokio::spawn(async move {
            s.apply_currency(ns, doc, &set, "race", None, at(2)).await
        }));
    }
    let mut changed = 0;
    for t in tasks {
        changed += t.await.unwrap().unwrap();
    }
    let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM claim_currency_events")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(events as u64, changed);
    let current: Vec<ClaimId> = store
        .current_claim_refs(ns, doc)
        .await
        .unwrap()
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert!(current == even || current == odd, "{current:?}");
    // Replaying each claim's events gives its current flag.
    for id in &ids {
        let ev = currency_events(&store, *id).await;
        let last = ev.last().map(|e| e.0).unwrap_or(false);
        assert_eq!(last, current.contains(id));
        for w in ev.windows(2) {
            assert_ne!(w[0].0, w[1].0, "transitions alternate");
        }
    }
    drop_schema(&store).await;
}
