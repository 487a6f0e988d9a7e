//! The PostgreSQL store's claims area against a real server: extraction commits,
//! reuse lookups, currency, claim reads, lexical and semantic claim search, claim
//! vector coverage. Needs `DATABASE_URL` (`scripts/pg-local.sh start` prints one);
//! skipped, saying so, without it. Each test works in a schema of its own, dropped
//! at the end. Rows owned by other areas (documents, versions, work items,
//! vectors, mentions, retractions) are written with plain SQL.

use chrono::{TimeZone, Utc};
use pgvector::Vector;
use rememberstack_core::ErrorCode;
use rememberstack_core::claims::{EvidenceSpan, Precision, Validity, ValidityKind};
use rememberstack_core::ids::{
    ChunkId, ClaimId, DocumentId, EntityId, NamespaceId, VersionId, WorkId,
};
use rememberstack_core::ledger::{NewWork, Stage};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{
    ClaimFilter, DecisionRow, ExtractionCommit, Lease, NewClaim, Occurrence,
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

async fn work_status(store: &PgStore, id: WorkId) -> String {
    sqlx::query_scalar("SELECT status FROM processing_state WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
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

fn filter(ns: NamespaceId) -> ClaimFilter {
    ClaimFilter {
        namespace_id: ns,
        include_retired: false,
        document_id: None,
        entities: vec![],
        documents: None,
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
async fn pg_claims_commit_reuse_currency_and_reads() {
    let Some(url) = database_url("pg_claims_commit_reuse_currency_and_reads") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("claims_commit")))
        .await
        .unwrap();
    let ns = store.ensure_namespace("t", at(0)).await.unwrap().id;
    let (doc, v) = document(&store, ns, "notes.md", 2).await;
    let (v1, v2) = (v[0], v[1]);
    let (k1, k2) = (ChunkId::new(), ChunkId::new());

    // --- commit: one item commits, one whose lease was lost is skipped.
    let a = new_claim(doc, v1, k1, "Alice moved to Kigali in 2021", "a");
    let b = new_claim(doc, v1, k1, "Bob likes green tea", "b");
    let mut x1 = fresh(doc, v1, k1, "hash-1", vec![a.clone(), b.clone()]);
    x1.decisions.push(DecisionRow {
        kind: "drop".to_string(),
        passage: Some("P2".to_string()),
        reason: Some("opinion".to_string()),
        claim_id: None,
        detail: serde_json::json!({"passage": "I think so"}),
    });
    let l1 = lease(&store, ns, v1, "w1").await;
    let lost = lease(&store, ns, v1, "someone-else").await;
    let stray = new_claim(doc, v1, ChunkId::new(), "never written", "stray");
    let lost_x = fresh(
        doc,
        v1,
        stray.origin_chunk_id,
        "hash-lost",
        vec![stray.clone()],
    );
    let follow = NewWork::now(ns, Stage::EmbedClaims, a.id.uuid(), v1, "emb-1", at(1));
    let flags = store
        .commit_extractions(
            ns,
            vec![
                (l1.clone(), x1, vec![follow.clone(), follow.clone()]),
                (
                    Lease {
                        work_id: lost.work_id,
                        owner: "w1".to_string(),
                    },
                    lost_x,
                    vec![],
                ),
            ],
            at(10),
        )
        .await
        .unwrap();
    assert_eq!(flags, vec![true, false]);
    assert_eq!(work_status(&store, l1.work_id).await, "done");
    assert_eq!(work_status(&store, lost.work_id).await, "running");
    let follow_ups: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM processing_state WHERE stage = 'e2.embed' AND status = 'pending'
           AND target_id = $1 AND component_version = 'emb-1'",
    )
    .bind(a.id.to_string())
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(follow_ups, 1, "follow-up work is enqueued once");
    assert!(store.claims(ns, &[stray.id]).await.unwrap().is_empty());
    let lexical_rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM claim_lexical")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(lexical_rows, 2, "one full-text row per written claim");

    // A replayed lease (already done) is lost: nothing is written twice.
    let replay = fresh(doc, v1, k1, "hash-1", vec![a.clone()]);
    let flags = store
        .commit_extractions(ns, vec![(l1.clone(), replay, vec![])], at(11))
        .await
        .unwrap();
    assert_eq!(flags, vec![false]);

    // A batch with a failing item rolls back as a whole.
    let l_ok = lease(&store, ns, v2, "w1").await;
    let l_bad = lease(&store, ns, v2, "w1").await;
    let fresh_ok = new_claim(doc, v2, ChunkId::new(), "rolled back", "rb");
    let dup = fresh(doc, v2, ChunkId::new(), "hash-dup", vec![a.clone()]);
    let err = store
        .commit_extractions(
            ns,
            vec![
                (
                    l_ok.clone(),
                    fresh(
                        doc,
                        v2,
                        fresh_ok.origin_chunk_id,
                        "hash-rb",
                        vec![fresh_ok.clone()],
                    ),
                    vec![],
                ),
                (l_bad.clone(), dup, vec![]),
            ],
            at(12),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Store);
    assert_eq!(work_status(&store, l_ok.work_id).await, "running");
    assert!(store.claims(ns, &[fresh_ok.id]).await.unwrap().is_empty());

    // --- reuse: v2's chunk k2 reuses claim a.
    let mut occ = occurrence(&a, v2, k2, 0);
    occ.reused = true;
    let x2 = ExtractionCommit {
        document_id: doc,
        version_id: v2,
        chunk_id: k2,
        extraction_input_hash: "hash-1".to_string(),
        extractor_version: EXT.to_string(),
        claims: vec![],
        occurrences: vec![occ],
        decisions: vec![DecisionRow {
            kind: "reused".to_string(),
            passage: None,
            reason: None,
            claim_id: Some(a.id),
            detail: serde_json::json!({}),
        }],
    };
    let l2 = lease(&store, ns, v2, "w2").await;
    assert_eq!(
        store
            .commit_extractions(ns, vec![(l2, x2, vec![])], at(20))
            .await
            .unwrap(),
        vec![true]
    );

    // prior_extractions: the newest fresh extraction (the reuse does not count) whose
    // chunk is still stored (a compacted conversation version's chunk is not).
    stored_chunk(&store, ns, doc, v1, k1).await;
    let prior = store
        .prior_extractions(ns, doc, &["hash-1".to_string(), "hash-none".to_string()])
        .await
        .unwrap();
    assert_eq!(prior.len(), 1);
    assert_eq!(prior[0].0, "hash-1");
    assert_eq!(prior[0].1.chunk_id, k1);
    let occ_ids: Vec<ClaimId> = prior[0].1.occurrences.iter().map(|o| o.claim_id).collect();
    assert_eq!(occ_ids, vec![a.id, b.id], "occurrences by ordinal");
    assert_eq!(prior[0].1.occurrences[0], occurrence(&a, v1, k1, 0));
    // A later fresh extraction of the same input wins.
    let k3 = ChunkId::new();
    let c3 = new_claim(doc, v2, k3, "Carol runs the office", "c");
    stored_chunk(&store, ns, doc, v2, k3).await;
    let l3 = lease(&store, ns, v2, "w3").await;
    store
        .commit_extractions(
            ns,
            vec![(l3, fresh(doc, v2, k3, "hash-1", vec![c3.clone()]), vec![])],
            at(21),
        )
        .await
        .unwrap();
    let prior = store
        .prior_extractions(ns, doc, &["hash-1".to_string()])
        .await
        .unwrap();
    assert_eq!(prior[0].1.chunk_id, k3);
    assert_eq!(prior[0].1.occurrences.len(), 1);

    // claims_by_key
    let keys = store
        .claims_by_key(
            ns,
            doc,
            &[
                "key-b".to_string(),
                "key-a".to_string(),
                "key-x".to_string(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        keys,
        vec![("key-a".to_string(), a.id), ("key-b".to_string(), b.id)],
        "by write order"
    );
    assert!(
        store
            .claims_by_key(ns, DocumentId::new(), &["key-a".to_string()])
            .await
            .unwrap()
            .is_empty()
    );

    // version_claims
    let mut v1_claims = store.version_claims(ns, v1, EXT).await.unwrap();
    v1_claims.sort();
    let mut want = vec![a.id, b.id];
    want.sort();
    assert_eq!(v1_claims, want);
    let mut v2_claims = store.version_claims(ns, v2, EXT).await.unwrap();
    v2_claims.sort();
    let mut want = vec![a.id, c3.id];
    want.sort();
    assert_eq!(v2_claims, want);
    assert!(
        store
            .version_claims(ns, v1, "other")
            .await
            .unwrap()
            .is_empty()
    );

    // decisions, in write order
    let decisions = store.decisions(ns, doc).await.unwrap();
    let kinds: Vec<&str> = decisions.iter().map(|d| d.row.kind.as_str()).collect();
    assert_eq!(kinds, vec!["keep", "keep", "drop", "reused", "keep"]);
    assert_eq!(decisions[0].row.claim_id, Some(a.id));
    assert_eq!(decisions[0].chunk_id, k1);
    assert_eq!(decisions[0].version_id, v1);
    assert_eq!(decisions[0].extractor_version, EXT);
    assert_eq!(decisions[0].created_at, at(10));
    assert_eq!(decisions[2].row.reason.as_deref(), Some("opinion"));
    assert_eq!(decisions[2].row.claim_id, None);
    assert_eq!(
        decisions[2].row.detail,
        serde_json::json!({"passage": "I think so"})
    );
    assert_eq!(decisions[3].version_id, v2);

    // --- currency
    assert!(store.current_claim_refs(ns, doc).await.unwrap().is_empty());
    assert!(store.list_claims(&filter(ns), 10).await.unwrap().is_empty());
    let n = store
        .apply_currency(ns, doc, &[a.id, b.id], "extracted", Some(v1), at(30))
        .await
        .unwrap();
    assert_eq!(n, 2);
    let again = store
        .apply_currency(ns, doc, &[b.id, a.id], "extracted", Some(v1), at(31))
        .await
        .unwrap();
    assert_eq!(again, 0, "a replay changes nothing");
    assert_eq!(
        store.current_claim_refs(ns, doc).await.unwrap(),
        vec![(a.id, EXT.to_string()), (b.id, EXT.to_string())]
    );
    assert_eq!(
        currency_events(&store, a.id).await,
        vec![(true, "extracted".to_string())]
    );

    // list_claims: newest first, current only unless retired are asked for.
    let listed = store.list_claims(&filter(ns), 10).await.unwrap();
    let order: Vec<ClaimId> = listed.iter().map(|c| c.claim_id).collect();
    assert_eq!(order, vec![b.id, a.id]);
    let la = &listed[1];
    assert_eq!(la.text, a.text);
    assert_eq!(la.document_id, doc);
    assert_eq!(
        la.document_title, "notes.md v2",
        "the current version's title"
    );
    assert_eq!(la.source_kind, "file");
    assert_eq!(la.source_ref, "notes.md");
    assert_eq!(la.added_context, a.added_context);
    assert_eq!(la.validity, a.validity);
    assert_eq!(la.asserted_at, a.asserted_at);
    assert_eq!(la.extractor_version, EXT);
    assert!(la.is_current);
    assert_eq!(la.embedding_key, "emb-a");
    let occ: Vec<(VersionId, ChunkId, bool)> = la
        .occurrences
        .iter()
        .map(|o| (o.version_id, o.chunk_id, o.reused))
        .collect();
    assert_eq!(
        occ,
        vec![(v1, k1, false), (v2, k2, true)],
        "oldest version first"
    );
    assert_eq!(store.list_claims(&filter(ns), 1).await.unwrap().len(), 1);
    let mut all = filter(ns);
    all.include_retired = true;
    assert_eq!(store.list_claims(&all, 10).await.unwrap().len(), 3);
    let mut other_doc = filter(ns);
    other_doc.document_id = Some(DocumentId::new());
    assert!(store.list_claims(&other_doc, 10).await.unwrap().is_empty());

    // claims: in the order asked, missing ids skipped.
    let got = store
        .claims(ns, &[b.id, ClaimId::new(), a.id])
        .await
        .unwrap();
    assert_eq!(
        got.iter().map(|c| c.claim_id).collect::<Vec<_>>(),
        vec![b.id, a.id]
    );
    assert_eq!(got[1], listed[1]);
    assert!(store.claims(ns, &[]).await.unwrap().is_empty());
    assert!(
        store
            .claims(NamespaceId::new(), &[a.id])
            .await
            .unwrap()
            .is_empty()
    );

    // Retire b, make c3 current.
    let n = store
        .apply_currency(ns, doc, &[a.id, c3.id], "superseded", Some(v2), at(40))
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        currency_events(&store, b.id).await,
        vec![
            (true, "extracted".to_string()),
            (false, "superseded".to_string())
        ]
    );
    let order: Vec<ClaimId> = store
        .list_claims(&filter(ns), 10)
        .await
        .unwrap()
        .iter()
        .map(|c| c.claim_id)
        .collect();
    assert_eq!(order, vec![c3.id, a.id]);

    // A retracted claim never becomes current again.
    sqlx::query(
        "INSERT INTO claim_retractions (namespace_id, claim_id, reason, created_at)
         VALUES ($1, $2, 'wrong', $3)",
    )
    .bind(ns.to_string())
    .bind(a.id.to_string())
    .bind(at(50))
    .execute(store.pool())
    .await
    .unwrap();
    let n = store
        .apply_currency(ns, doc, &[a.id, b.id, c3.id], "recheck", None, at(51))
        .await
        .unwrap();
    assert_eq!(n, 2, "a retired (retracted), b current again");
    let refs: Vec<ClaimId> = store
        .current_claim_refs(ns, doc)
        .await
        .unwrap()
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert_eq!(refs, vec![b.id, c3.id]);

    // A deleted version's claims and extractions are no reuse basis.
    sqlx::query("UPDATE document_versions SET deleted_at = $1 WHERE id = $2")
        .bind(at(60))
        .bind(v1.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let keys = store
        .claims_by_key(ns, doc, &["key-a".to_string(), "key-c".to_string()])
        .await
        .unwrap();
    assert_eq!(keys, vec![("key-c".to_string(), c3.id)]);
    let prior = store
        .prior_extractions(ns, doc, &[format!("hash-{k1}"), "hash-1".to_string()])
        .await
        .unwrap();
    assert_eq!(prior.len(), 1);
    assert_eq!(prior[0].1.chunk_id, k3);

    // A deleted lineage publishes no testimony.
    sqlx::query("UPDATE documents SET deleted_at = $1 WHERE id = $2")
        .bind(at(70))
        .bind(doc.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let n = store
        .apply_currency(ns, doc, &[b.id, c3.id], "late", None, at(71))
        .await
        .unwrap();
    assert_eq!(n, 2);
    assert!(store.current_claim_refs(ns, doc).await.unwrap().is_empty());

    // A retried extraction of a chunk replaces its occurrences.
    let l4 = lease(&store, ns, v2, "w4").await;
    let mut only_b = occurrence(&b, v2, k3, 0);
    only_b.reused = true;
    let retry = ExtractionCommit {
        document_id: doc,
        version_id: v2,
        chunk_id: k3,
        extraction_input_hash: "hash-1".to_string(),
        extractor_version: EXT.to_string(),
        claims: vec![],
        occurrences: vec![only_b],
        decisions: vec![],
    };
    store
        .commit_extractions(ns, vec![(l4, retry, vec![])], at(80))
        .await
        .unwrap();
    let mut v2_claims = store.version_claims(ns, v2, EXT).await.unwrap();
    v2_claims.sort();
    let mut want = vec![a.id, b.id];
    want.sort();
    assert_eq!(v2_claims, want, "c3's occurrence in k3 was replaced by b's");

    drop_schema(&store).await;
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

/// Claims a..d in lineage 1 (a, b, d current... d later retired) and c in lineage 2.
struct Corpus {
    ns: NamespaceId,
    doc1: DocumentId,
    doc2: DocumentId,
    a: NewClaim,
    b: NewClaim,
    c: NewClaim,
    d: NewClaim,
}

async fn corpus(store: &PgStore) -> Corpus {
    let ns = store.ensure_namespace("s", at(0)).await.unwrap().id;
    let (doc1, v1) = document(store, ns, "one.md", 1).await;
    let (doc2, v2) = document(store, ns, "two.md", 1).await;
    let (k1, k2) = (ChunkId::new(), ChunkId::new());
    let a = new_claim(doc1, v1[0], k1, "Alice moved to Kigali in 2021", "a");
    let b = new_claim(
        doc1,
        v1[0],
        k1,
        "Kigali hosts the summit and Kigali is busy",
        "b",
    );
    let d = new_claim(doc1, v1[0], k1, "The cats sleep all day", "d");
    let c = new_claim(doc2, v2[0], k2, "Bob drinks tea in Kigali", "c");
    let l1 = lease(store, ns, v1[0], "w").await;
    let l2 = lease(store, ns, v2[0], "w").await;
    store
        .commit_extractions(
            ns,
            vec![
                (
                    l1,
                    fresh(doc1, v1[0], k1, "h1", vec![a.clone(), b.clone(), d.clone()]),
                    vec![],
                ),
                (l2, fresh(doc2, v2[0], k2, "h2", vec![c.clone()]), vec![]),
            ],
            at(1),
        )
        .await
        .unwrap();
    store
        .apply_currency(ns, doc1, &[a.id, b.id], "x", None, at(2))
        .await
        .unwrap();
    store
        .apply_currency(ns, doc2, &[c.id], "x", None, at(2))
        .await
        .unwrap();
    Corpus {
        ns,
        doc1,
        doc2,
        a,
        b,
        c,
        d,
    }
}

fn sorted(mut v: Vec<ClaimId>) -> Vec<ClaimId> {
    v.sort();
    v
}

#[tokio::test]
async fn pg_claims_lexical_search() {
    let Some(url) = database_url("pg_claims_lexical_search") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("claims_lex")))
        .await
        .unwrap();
    let t = corpus(&store).await;
    let ns = t.ns;
    let search = |f: ClaimFilter, terms: Vec<&str>, limit: usize| {
        let store = store.clone();
        let terms: Vec<String> = terms.into_iter().map(String::from).collect();
        async move {
            store
                .search_claims_lexical(&f, &terms, limit)
                .await
                .unwrap()
        }
    };

    // b says "Kigali" twice: it ranks first; c, shorter than a, ranks above it
    // (BM25's length normalisation) although a was stored first.
    let hits = search(filter(ns), vec!["kigali"], 10).await;
    let ids: Vec<ClaimId> = hits.iter().map(|h| h.claim_id).collect();
    assert_eq!(ids, vec![t.b.id, t.c.id, t.a.id]);
    assert!(hits[0].score > hits[1].score);
    assert!(hits[1].score > hits[2].score);
    assert!(hits[2].score > 0.0);
    // Terms are OR-ed; stemming matches "moving" to "moved".
    let hits = search(filter(ns), vec!["moving", "tea"], 10).await;
    assert_eq!(
        sorted(hits.iter().map(|h| h.claim_id).collect()),
        sorted(vec![t.a.id, t.c.id])
    );
    // Limits.
    assert_eq!(search(filter(ns), vec!["kigali"], 1).await.len(), 1);
    assert!(search(filter(ns), vec!["kigali"], 0).await.is_empty());
    assert!(search(filter(ns), vec![], 10).await.is_empty());
    assert!(search(filter(ns), vec!["absentword"], 10).await.is_empty());
    // Query syntax in the caller's terms is text, never tsquery syntax.
    assert!(
        search(filter(ns), vec!["!!!", "'", "&|"], 10)
            .await
            .is_empty()
    );
    let hits = search(filter(ns), vec!["kigali", "a|b&!(", "x') OR 1=1 --"], 10).await;
    assert_eq!(hits.len(), 3);
    // A term of several tokens is a phrase (an FTS5 string): `kigali's` is
    // `kigali` followed by `s`, which no claim holds.
    assert!(search(filter(ns), vec!["kigali's"], 10).await.is_empty());
    // A multi-word term is a phrase.
    let hits = search(filter(ns), vec!["drinks tea"], 10).await;
    assert_eq!(
        hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
        vec![t.c.id]
    );
    assert!(search(filter(ns), vec!["tea drinks"], 10).await.is_empty());

    // Retired claims only on request.
    assert!(search(filter(ns), vec!["cats"], 10).await.is_empty());
    let mut retired = filter(ns);
    retired.include_retired = true;
    let hits = search(retired, vec!["cats"], 10).await;
    assert_eq!(
        hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
        vec![t.d.id]
    );

    // Lineage filter and document scope.
    let mut one = filter(ns);
    one.document_id = Some(t.doc2);
    let hits = search(one, vec!["kigali"], 10).await;
    assert_eq!(
        hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
        vec![t.c.id]
    );
    let mut scoped = filter(ns);
    scoped.documents = Some(vec![t.doc1]);
    let hits = search(scoped, vec!["kigali"], 10).await;
    assert_eq!(
        sorted(hits.iter().map(|h| h.claim_id).collect()),
        sorted(vec![t.a.id, t.b.id])
    );
    let mut empty_scope = filter(ns);
    empty_scope.documents = Some(vec![]);
    assert!(search(empty_scope, vec!["kigali"], 10).await.is_empty());

    // Entity anchor: only claims that mention an anchored entity.
    let (e1, e2) = (EntityId::new(), EntityId::new());
    sqlx::query(
        "INSERT INTO entity_mentions (namespace_id, entity_id, claim_id, surface, decision_id, created_at)
         VALUES ($1, $2, $3, 'Alice', 'd1', $4), ($1, $2, $5, 'Bob', 'd2', $4)",
    )
    .bind(ns.to_string())
    .bind(e1.to_string())
    .bind(t.a.id.to_string())
    .bind(at(3))
    .bind(t.c.id.to_string())
    .execute(store.pool())
    .await
    .unwrap();
    let mut anchored = filter(ns);
    anchored.entities = vec![e1];
    let hits = search(anchored.clone(), vec!["kigali"], 10).await;
    assert_eq!(
        sorted(hits.iter().map(|h| h.claim_id).collect()),
        sorted(vec![t.a.id, t.c.id])
    );
    anchored.documents = Some(vec![t.doc2]);
    let hits = search(anchored, vec!["kigali"], 10).await;
    assert_eq!(
        hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
        vec![t.c.id]
    );
    let mut other = filter(ns);
    other.entities = vec![e2];
    assert!(search(other, vec!["kigali"], 10).await.is_empty());

    // Another namespace sees nothing.
    let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
    assert!(search(filter(ns2), vec!["kigali"], 10).await.is_empty());
    drop_schema(&store).await;
}

async fn put_vector(store: &PgStore, ns: NamespaceId, generation: &str, key: &str, v: Vec<f32>) {
    sqlx::query(
        "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, embedding, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(ns.to_string())
    .bind(generation)
    .bind(key)
    .bind(v.len() as i32)
    .bind(Vector::from(v))
    .bind(at(0))
    .execute(store.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn pg_claims_semantic_search_and_vector_coverage() {
    let Some(url) = database_url("pg_claims_semantic_search_and_vector_coverage") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("claims_sem")))
        .await
        .unwrap();
    let t = corpus(&store).await;
    let ns = t.ns;
    // Coverage before any vector: a, b, c current, all missing.
    let cov = store.claim_vector_coverage(ns, "g1").await.unwrap();
    assert_eq!((cov.chunks, cov.missing), (3, 3));
    let missing = store.claims_missing_vectors(ns, "g1").await.unwrap();
    assert_eq!(
        missing,
        vec![
            (t.a.id, t.a.origin_version_id),
            (t.b.id, t.b.origin_version_id),
            (t.c.id, t.c.origin_version_id)
        ],
        "in write order, the retired d left out"
    );

    put_vector(&store, ns, "g1", "emb-a", vec![1.0, 0.0, 0.0]).await;
    put_vector(&store, ns, "g1", "emb-b", vec![0.6, 0.8, 0.0]).await;
    put_vector(&store, ns, "g1", "emb-c", vec![2.0, 0.0, 0.0]).await;
    put_vector(&store, ns, "g1", "emb-d", vec![0.0, 0.0, 1.0]).await;
    put_vector(&store, ns, "g2", "emb-b", vec![1.0, 0.0]).await;
    let cov = store.claim_vector_coverage(ns, "g1").await.unwrap();
    assert_eq!((cov.chunks, cov.missing), (3, 0));
    assert!(
        store
            .claims_missing_vectors(ns, "g1")
            .await
            .unwrap()
            .is_empty()
    );
    let cov = store.claim_vector_coverage(ns, "g2").await.unwrap();
    assert_eq!((cov.chunks, cov.missing), (3, 2));
    assert_eq!(
        store.claims_missing_vectors(ns, "g2").await.unwrap(),
        vec![
            (t.a.id, t.a.origin_version_id),
            (t.c.id, t.c.origin_version_id)
        ]
    );
    let other = store.ensure_namespace("o", at(0)).await.unwrap().id;
    assert_eq!(
        store.claim_vector_coverage(other, "g1").await.unwrap(),
        Default::default()
    );

    let check = |hits: Vec<rememberstack_core::store::ClaimHit>, want: Vec<(ClaimId, f64)>| {
        let got: Vec<ClaimId> = hits.iter().map(|h| h.claim_id).collect();
        let ids: Vec<ClaimId> = want.iter().map(|w| w.0).collect();
        assert_eq!(got, ids);
        for (h, w) in hits.iter().zip(&want) {
            assert!((h.score - w.1).abs() < 1e-5, "{} vs {}", h.score, w.1);
        }
    };
    // a and c point the same way (c is longer: cosine ignores length): a tie, by id.
    let tie = sorted(vec![t.a.id, t.c.id]);
    for round in 0..2 {
        let hits = store
            .search_claims_semantic(&filter(ns), "g1", &[1.0, 0.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(tie[0], 1.0), (tie[1], 1.0), (t.b.id, 0.6)]);
        let hits = store
            .search_claims_semantic(&filter(ns), "g1", &[1.0, 0.0, 0.0], 1)
            .await
            .unwrap();
        check(hits, vec![(tie[0], 1.0)]);
        let mut retired = filter(ns);
        retired.include_retired = true;
        let hits = store
            .search_claims_semantic(&retired, "g1", &[0.0, 0.0, 2.0], 10)
            .await
            .unwrap();
        // a, b and c are orthogonal to the query: a three-way tie at 0, by id.
        let zeros = sorted(vec![t.a.id, t.b.id, t.c.id]);
        check(
            hits,
            vec![
                (t.d.id, 1.0),
                (zeros[0], 0.0),
                (zeros[1], 0.0),
                (zeros[2], 0.0),
            ],
        );
        let mut one = filter(ns);
        one.document_id = Some(t.doc1);
        let hits = store
            .search_claims_semantic(&one, "g1", &[0.0, 1.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.b.id, 0.8), (t.a.id, 0.0)]);
        let mut scoped = filter(ns);
        scoped.documents = Some(vec![t.doc2]);
        let hits = store
            .search_claims_semantic(&scoped, "g1", &[1.0, 0.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.c.id, 1.0)]);
        scoped.documents = Some(vec![]);
        assert!(
            store
                .search_claims_semantic(&scoped, "g1", &[1.0, 0.0, 0.0], 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Another generation, another dimension: only its vectors.
        let hits = store
            .search_claims_semantic(&filter(ns), "g2", &[1.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.b.id, 1.0)]);
        // A query of another dimension than the generation's finds nothing.
        for q in [vec![1.0, 0.0], vec![], vec![0.5; 16_001]] {
            assert!(
                store
                    .search_claims_semantic(&filter(ns), "g1", &q, 10)
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
        assert!(
            store
                .search_claims_semantic(&filter(ns), "g1", &[1.0, 0.0, 0.0], 0)
                .await
                .unwrap()
                .is_empty()
        );
        // The second round runs with the generation's HNSW partial index in place.
        if round == 0 {
            sqlx::query(
                "CREATE INDEX vectors_hnsw_claims_g1 ON vectors
                     USING hnsw ((embedding::vector(3)) vector_cosine_ops) WHERE generation = 'g1'",
            )
            .execute(store.pool())
            .await
            .unwrap();
        }
    }

    // Entity anchor.
    let e = EntityId::new();
    sqlx::query(
        "INSERT INTO entity_mentions (namespace_id, entity_id, claim_id, surface, decision_id, created_at)
         VALUES ($1, $2, $3, 'Kigali', 'd1', $4)",
    )
    .bind(ns.to_string())
    .bind(e.to_string())
    .bind(t.b.id.to_string())
    .bind(at(3))
    .execute(store.pool())
    .await
    .unwrap();
    let mut anchored = filter(ns);
    anchored.entities = vec![e];
    let hits = store
        .search_claims_semantic(&anchored, "g1", &[1.0, 0.0, 0.0], 10)
        .await
        .unwrap();
    check(hits, vec![(t.b.id, 0.6)]);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_claims_semantic_ties_break_by_id() {
    let Some(url) = database_url("pg_claims_semantic_ties_break_by_id") else {
        return;
    };
    let store = PgStore::connect_with(&url, config(&fresh_schema("claims_ties")))
        .await
        .unwrap();
    let ns = store.ensure_namespace("t", at(0)).await.unwrap().id;
    let (doc, v) = document(&store, ns, "same.md", 1).await;
    let k = ChunkId::new();
    // Forty claims share one vector (same text, same embedding key), one is near.
    let mut claims: Vec<NewClaim> = (0..41)
        .map(|i| {
            let mut c = new_claim(doc, v[0], k, "the same words", &format!("s{i}"));
            c.embedding_key = "emb-same".to_string();
            c
        })
        .collect();
    claims[40].embedding_key = "emb-near".to_string();
    let near = claims[40].id;
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
    store
        .apply_currency(ns, doc, &ids, "x", None, at(2))
        .await
        .unwrap();
    put_vector(&store, ns, "g", "emb-same", vec![1.0, 0.0]).await;
    put_vector(&store, ns, "g", "emb-near", vec![0.8, 0.6]).await;
    let same = sorted(ids[..40].to_vec());
    for limit in [1, 5, 40] {
        let hits = store
            .search_claims_semantic(&filter(ns), "g", &[1.0, 0.0], limit)
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
            same[..limit].to_vec(),
            "limit {limit}: the smallest ids of the tie"
        );
        assert!(hits.iter().all(|h| (h.score - 1.0).abs() < 1e-6));
    }
    let hits = store
        .search_claims_semantic(&filter(ns), "g", &[1.0, 0.0], 100)
        .await
        .unwrap();
    assert_eq!(hits.len(), 41);
    assert_eq!(hits[40].claim_id, near);
    assert!((hits[40].score - 0.8).abs() < 1e-6);
    // A zero query has no direction: every score is 0, ties by id (SQLite's scan).
    let hits = store
        .search_claims_semantic(&filter(ns), "g", &[0.0, 0.0], 3)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
        sorted(ids.clone())[..3].to_vec()
    );
    assert!(hits.iter().all(|h| h.score == 0.0));
    drop_schema(&store).await;
}

/// A bare chunk row: reuse looks only at extractions whose chunk is still stored.
async fn stored_chunk(
    store: &PgStore,
    ns: NamespaceId,
    doc: DocumentId,
    version: VersionId,
    chunk: ChunkId,
) {
    sqlx::query(
        "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
             block_start, block_end, start_byte, end_byte, char_start, char_end, text,
             content_hash, token_estimate, embedding_key, event_ids_json)
         VALUES ($1, $2, $3, $4, 0, 0, 0, 0, 0, 0, 0, 0, '', '', 0, '', '[]'::jsonb)",
    )
    .bind(ns.to_string())
    .bind(chunk.to_string())
    .bind(version.to_string())
    .bind(doc.to_string())
    .execute(store.pool())
    .await
    .unwrap();
}
