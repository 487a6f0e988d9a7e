//! What the PostgreSQL store's entity methods must do that only a real server shows,
//! or that its tests read with SQL: blocking that skips over-shared keys, idempotent
//! and concurrent resolution commits, merge and unmerge (concurrent merges admit
//! one). Blocking by every tier, aliases, exclusions, bindings and profiles are
//! tested on every store in `tests/conformance` (`store_entities`). Every test needs `DATABASE_URL` (`scripts/pg-local.sh start`
//! prints one) and is skipped, saying so, without it. Each test works in a schema of
//! its own, dropped at the end.

use chrono::{TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::entities::{
    BlockingQuery, BlockingTier, CandidateAudit, EntityFilter, Mention, MergeEvent, NewAlias,
    RESOLVER_VERSION, ResolutionCommit, ResolutionDecision,
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

fn query(
    ns: NamespaceId,
    lemma: &str,
    trigrams: Vec<String>,
    phonetic: Vec<String>,
    limit: usize,
) -> BlockingQuery {
    BlockingQuery {
        namespace_id: ns,
        lemma: lemma.to_string(),
        trigrams,
        phonetic,
        limit,
    }
}

#[tokio::test]
async fn pg_blocking_skips_keys_most_entities_share_and_says_so() {
    let Some((store, ns)) = open("pg_blocking_skips_keys_most_entities_share_and_says_so").await
    else {
        return;
    };
    for i in 0..210 {
        mint(&store, ns, &format!("Person{i}")).await;
    }
    let target = mint(&store, ns, "Personne Zyxwv").await;
    // The trigger-kept counts follow the inserted keys.
    let n: i64 = sqlx::query_scalar(
        "SELECT n FROM entity_key_counts WHERE namespace_id = $1 AND kind = 'tri' AND key = $2",
    )
    .bind(ns.to_string())
    .bind(&NewAlias::of("Person1").trigrams[0])
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert!(n > 200, "{n}");
    let near = NewAlias::of("Personne Zyxwu");
    let hits = store
        .block_entities(&query(ns, "", near.trigrams.clone(), vec![], 5))
        .await
        .unwrap();
    assert_eq!(
        hits.hits[0].entity_id, target,
        "the rare trigrams still block"
    );
    assert!(hits.truncated, "skipped keys make the block incomplete");
    let shared: Vec<String> = NewAlias::of("Person1")
        .trigrams
        .into_iter()
        .filter(|g| {
            NewAlias::of("Person2").trigrams.contains(g)
                && NewAlias::of("Person3").trigrams.contains(g)
        })
        .collect();
    assert!(!shared.is_empty());
    let only_common = store
        .block_entities(&query(ns, "", shared, vec![], 5))
        .await
        .unwrap();
    assert!(!only_common.hits.is_empty());
    assert!(only_common.truncated);
    let rare = NewAlias::of("Zyxwv");
    let complete = store
        .block_entities(&query(ns, "", rare.trigrams.clone(), vec![], 5))
        .await
        .unwrap();
    assert_eq!(complete.hits[0].entity_id, target);
    assert!(!complete.truncated);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_duplicate_decision_key_is_a_no_op() {
    let Some((store, ns)) = open("pg_duplicate_decision_key_is_a_no_op").await else {
        return;
    };
    let claim = ClaimId::new();
    let mut first = mint_commit(ns, claim, 3, "Ada Lovelace");
    first.decision.candidates = vec![
        CandidateAudit {
            entity_id: EntityId::new(),
            canonical_name: "Ada King".into(),
            score: 0.5,
            via: vec![BlockingTier::T1, BlockingTier::T2],
            t3_score: Some(0.75),
        },
        CandidateAudit {
            entity_id: EntityId::new(),
            canonical_name: "Lovelace".into(),
            score: 1.0,
            via: vec![BlockingTier::T0],
            t3_score: None,
        },
    ];
    first.decision.complete = false;
    first.decision.model = Some("m-1".into());
    first.decision.t3_score = None;
    let first_decision = first.decision.clone();
    let stood = store.commit_resolution(first.clone(), t(2)).await.unwrap();
    assert_eq!(stood, first_decision.entity_id);
    // Same (claim, ordinal, resolver): another id and entity, nothing written; the
    // first decision's entity is the answer.
    let second = mint_commit(ns, claim, 3, "Ada Byron");
    let second_entity = second.decision.entity_id;
    let stood = store.commit_resolution(second, t(3)).await.unwrap();
    assert_eq!(stood, first_decision.entity_id);
    // An exact replay is a no-op too.
    store.commit_resolution(first, t(4)).await.unwrap();

    let found = store
        .resolution_for(ns, claim, 3, RESOLVER_VERSION)
        .await
        .unwrap();
    assert_eq!(found.as_ref(), Some(&first_decision));
    assert_eq!(
        store
            .resolution_for(ns, claim, 4, RESOLVER_VERSION)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.resolution_for(ns, claim, 3, "other").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .resolution_decision(ns, first_decision.decision_id)
            .await
            .unwrap(),
        Some(first_decision.clone())
    );
    assert_eq!(
        store
            .resolution_decision(ns, DecisionId::new())
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .entities(ns, &[second_entity])
            .await
            .unwrap()
            .is_empty()
    );
    let filter = EntityFilter {
        namespace_id: ns,
        include_merged: true,
        lemma: None,
    };
    assert_eq!(store.list_entities(&filter, 10).await.unwrap().len(), 1);
    let mentions = store
        .mentions(ns, first_decision.entity_id, 10)
        .await
        .unwrap();
    assert_eq!(mentions.len(), 1);
    assert_eq!(mentions[0].start, Some(0));
    assert_eq!(mentions[0].end, Some("Ada Lovelace".len()));
    assert_eq!(mentions[0].surface, "Ada Lovelace");
    assert_eq!(mentions[0].claim_id, claim);
    let decisions = store
        .resolution_decisions(ns, &[first_decision.entity_id])
        .await
        .unwrap();
    assert_eq!(decisions, vec![first_decision.clone()]);
    assert!(
        store
            .resolution_decisions(ns, &[])
            .await
            .unwrap()
            .is_empty()
    );
    // One alias row, one set of keys: nothing was written twice.
    let aliases: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM entity_aliases")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(aliases, 1);
    drop_schema(&store).await;
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
async fn pg_merge_then_unmerge_restores_the_redirect() {
    let Some((store, ns)) = open("pg_merge_then_unmerge_restores_the_redirect").await else {
        return;
    };
    let a = mint(&store, ns, "Alan Turing").await;
    let b = mint(&store, ns, "A. M. Turing").await;
    let c = mint(&store, ns, "Turing").await;
    let event = |from: EntityId, into: EntityId| MergeEvent {
        merge_id: MergeId::new(),
        namespace_id: ns,
        from,
        into,
        snapshot: serde_json::json!({"from": [from], "into": [into]}),
        created_at: t(10),
        reverted_at: None,
    };
    let first = event(a, b);
    store.merge_entities(first.clone()).await.unwrap();
    assert_eq!(
        store.entities(ns, &[a]).await.unwrap()[0].merged_into,
        Some(b)
    );
    for refused in [
        event(a, c),
        event(c, a),
        event(c, c),
        event(EntityId::new(), c),
        event(c, EntityId::new()),
    ] {
        let err = store.merge_entities(refused).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput, "{err}");
    }
    let current = EntityFilter {
        namespace_id: ns,
        include_merged: false,
        lemma: None,
    };
    assert_eq!(
        store
            .list_entities(&current, 10)
            .await
            .unwrap()
            .iter()
            .map(|e| e.entity_id)
            .collect::<Vec<_>>(),
        vec![b, c]
    );
    let everything = EntityFilter {
        include_merged: true,
        ..current.clone()
    };
    assert_eq!(store.list_entities(&everything, 10).await.unwrap().len(), 3);
    assert_eq!(
        store.merge_events(ns, &[]).await.unwrap(),
        vec![first.clone()]
    );

    let undone = store
        .unmerge_entities(ns, first.merge_id, t(11))
        .await
        .unwrap();
    assert_eq!(undone.reverted_at, Some(t(11)));
    assert_eq!(undone.snapshot, first.snapshot);
    assert_eq!(store.entities(ns, &[a]).await.unwrap()[0].merged_into, None);
    let again = store
        .unmerge_entities(ns, first.merge_id, t(12))
        .await
        .unwrap_err();
    assert_eq!(again.code(), ErrorCode::InvalidInput);
    let unknown = store
        .unmerge_entities(ns, MergeId::new(), t(12))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), ErrorCode::InvalidInput);

    let second = event(b, c);
    store.merge_entities(second.clone()).await.unwrap();
    let all = store.merge_events(ns, &[]).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.merge_id).collect::<Vec<_>>(),
        vec![first.merge_id, second.merge_id]
    );
    assert_eq!(all[0], undone);
    assert_eq!(all[1], second);
    let touching_a = store.merge_events(ns, &[a]).await.unwrap();
    assert_eq!(touching_a.len(), 1);
    assert_eq!(touching_a[0].merge_id, first.merge_id);
    let touching_b = store.merge_events(ns, &[c, b]).await.unwrap();
    assert_eq!(
        touching_b.iter().map(|e| e.merge_id).collect::<Vec<_>>(),
        vec![first.merge_id, second.merge_id]
    );

    // A redirect changed behind the event's back cannot be reverted.
    sqlx::query("UPDATE entities SET merged_into = NULL WHERE id = $1")
        .bind(b.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let stale = store
        .unmerge_entities(ns, second.merge_id, t(13))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), ErrorCode::InvalidInput);
    assert_eq!(
        store.merge_events(ns, &[b]).await.unwrap()[1].reverted_at,
        None
    );
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
