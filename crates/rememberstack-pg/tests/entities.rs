//! What the PostgreSQL store's entity methods must do that only a real server
//! shows: concurrent commits of one decision key write once, concurrent merges of
//! one entity admit one. Blocking, resolution commits, aliases, exclusions,
//! bindings, profiles, merge and unmerge are tested on every store in
//! `tests/conformance` (`store_entities`). Every test needs `DATABASE_URL`
//! (`scripts/pg-local.sh start` prints one) and is skipped, saying so, without it.
//! Each test works in a schema of its own, dropped at the end.

use chrono::{TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::entities::{
    Mention, MergeEvent, NewAlias, RESOLVER_VERSION, ResolutionCommit, ResolutionDecision,
};
use rememberstack_core::ids::{ClaimId, DecisionId, DocumentId, EntityId, MergeId, NamespaceId};
use rememberstack_core::store::traits::*;
use rememberstack_core::time::Timestamp;
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

fn t(day: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2024, 1, day, 0, 0, 0).unwrap()
}

/// A fresh store in its own schema with one namespace, or `None` when skipped.
async fn open(test: &str) -> Option<(PgStore, NamespaceId)> {
    let url = database_url(test)?;
    let store = PgStore::connect_with(&url, config(&fresh_schema("ent")))
        .await
        .expect("connect");
    let ns = store.ensure_namespace("test", t(1)).await.unwrap().id;
    Some((store, ns))
}

fn decision(
    ns: NamespaceId,
    claim: ClaimId,
    ordinal: u32,
    entity: EntityId,
    name: &str,
) -> ResolutionDecision {
    ResolutionDecision {
        decision_id: DecisionId::new(),
        namespace_id: ns,
        claim_id: claim,
        document_id: DocumentId::new(),
        ordinal,
        name: name.to_string(),
        lemma: NewAlias::of(name).lemma,
        tier: "mint".into(),
        candidates: vec![],
        complete: true,
        t3_score: Some(0.25),
        t3_outcome: "no_candidates".into(),
        verdict: "new".into(),
        entity_id: entity,
        rationale: "no candidate".into(),
        model: None,
        resolver_version: RESOLVER_VERSION.into(),
        features: serde_json::json!({"k": 1, "nested": {"b": [1, 2], "a": null}}),
        created_at: t(2),
    }
}

fn mint_commit(ns: NamespaceId, claim: ClaimId, ordinal: u32, name: &str) -> ResolutionCommit {
    let d = decision(ns, claim, ordinal, EntityId::new(), name);
    let alias = NewAlias::of(name);
    ResolutionCommit {
        mint: Some((name.to_string(), alias.lemma.clone())),
        mention: Mention {
            claim_id: claim,
            start: Some(0),
            end: Some(name.len()),
            surface: name.to_string(),
        },
        aliases: vec![alias],
        exclusions: vec![],
        binding: None,
        decision: d,
    }
}

async fn mint(store: &PgStore, ns: NamespaceId, name: &str) -> EntityId {
    let c = mint_commit(ns, ClaimId::new(), 0, name);
    let id = c.decision.entity_id;
    store.commit_resolution(c, t(2)).await.expect("commit");
    id
}

#[tokio::test]
async fn pg_concurrent_commits_of_one_decision_key_write_once() {
    let Some((store, ns)) = open("pg_concurrent_commits_of_one_decision_key_write_once").await
    else {
        return;
    };
    let claim = ClaimId::new();
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let store = store.clone();
        let c = mint_commit(ns, claim, 0, "Grace Hopper");
        tasks.push(tokio::spawn(async move {
            store.commit_resolution(c, t(2)).await
        }));
    }
    for task in tasks {
        task.await.unwrap().expect("every commit succeeds");
    }
    let decisions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM resolution_decisions")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(decisions, 1);
    let entities: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM entities")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(entities, 1);
    let mentions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM entity_mentions")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mentions, 1);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_concurrent_merges_of_one_entity_admit_one() {
    let Some((store, ns)) = open("pg_concurrent_merges_of_one_entity_admit_one").await else {
        return;
    };
    let from = mint(&store, ns, "Kurt Goedel").await;
    let mut targets = Vec::new();
    for i in 0..4 {
        targets.push(mint(&store, ns, &format!("Goedel {i}")).await);
    }
    let mut tasks = Vec::new();
    for into in targets {
        let store = store.clone();
        let e = MergeEvent {
            merge_id: MergeId::new(),
            namespace_id: ns,
            from,
            into,
            snapshot: serde_json::json!({}),
            created_at: t(10),
            reverted_at: None,
        };
        tasks.push(tokio::spawn(async move { store.merge_entities(e).await }));
    }
    let mut ok = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => ok += 1,
            Err(e) => assert_eq!(e.code(), ErrorCode::InvalidInput, "{e}"),
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(store.merge_events(ns, &[from]).await.unwrap().len(), 1);
    drop_schema(&store).await;
}
