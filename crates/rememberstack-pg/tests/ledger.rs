//! What the PostgreSQL store's work ledger must do that only a real server shows,
//! or that its tests set up with SQL: concurrent claimers in several processes, rows
//! another transaction holds, deadlock freedom under overlapping writes, parking
//! and deferring (attempts rewound by SQL), the forget gate, latest versions and
//! provider-call transcripts. The ledger's store contract (enqueue, claim, complete,
//! fail, expired leases, barrier, listings, replay, next wakeup, the change stamp)
//! is tested on every store in `tests/conformance` (`store_ledger`). Every test
//! needs `DATABASE_URL` (`scripts/pg-local.sh start` prints one) and is skipped,
//! saying so, without it. Each test works in a schema of its own, dropped at the end.

use chrono::{TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::ids::{NamespaceId, VersionId, WorkId};
use rememberstack_core::ledger::{ClaimRequest, DeferReason, NewWork, Stage, WorkStatus};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{CallRecord, Lease};
use rememberstack_core::text::SourceFormat;
use rememberstack_pg::{PgStore, PgStoreConfig};
use std::collections::HashSet;

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

async fn store(test: &str, tag: &str) -> Option<PgStore> {
    let url = database_url(test)?;
    Some(
        PgStore::connect_with(&url, config(&fresh_schema(tag)))
            .await
            .unwrap(),
    )
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

fn work(ns: NamespaceId, stage: Stage, not_before: i64) -> NewWork {
    NewWork::now(
        ns,
        stage,
        uuid::Uuid::new_v4(),
        VersionId::new(),
        "v1",
        at(not_before),
    )
}

fn req(owner: &str, stages: &[Stage], limit: u32, now: i64) -> ClaimRequest {
    ClaimRequest {
        owner: owner.to_string(),
        stages: stages.to_vec(),
        limit,
        stage_limits: vec![],
        lease_until: at(now + 60),
        now: at(now),
    }
}

fn lease(id: WorkId, owner: &str) -> Lease {
    Lease {
        work_id: id,
        owner: owner.to_string(),
    }
}

#[tokio::test]
async fn pg_ledger_park_and_defer_give_the_attempt_back() {
    let Some(store) = store("pg_ledger_park", "ledger_park").await else {
        return;
    };
    let ns = NamespaceId::new();
    let p = work(ns, Stage::Normalize, 0);
    let d = work(ns, Stage::Normalize, 0);
    store
        .enqueue(vec![p.clone(), d.clone()], at(0))
        .await
        .unwrap();
    let got = store.claim(&req("w", &[], 2, 1)).await.unwrap();
    assert_eq!(got.len(), 2);
    let lp = Lease::of(got.iter().find(|w| w.target_id == p.target_id).unwrap());
    let ld = Lease::of(got.iter().find(|w| w.target_id == d.target_id).unwrap());
    // Wrong owner: LeaseLost for both.
    let err = store
        .park(&lease(lp.work_id, "x"), DeferReason::NoRoute, at(5), at(2))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseLost);
    let err = store
        .defer(&lease(ld.work_id, "x"), DeferReason::Budget, at(5), at(2))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseLost);

    store
        .park(&lp, DeferReason::NoRoute, at(5), at(2))
        .await
        .unwrap();
    let parked = store.work_item(lp.work_id).await.unwrap().unwrap();
    assert_eq!(parked.status, WorkStatus::Pending);
    assert_eq!(parked.attempts, 0);
    assert_eq!(parked.defer_reason, Some(DeferReason::NoRoute));
    assert_eq!(parked.not_before, at(5));
    assert_eq!(parked.lease_owner, None);
    assert_eq!(parked.updated_at, at(2));

    store
        .defer(&ld, DeferReason::Budget, at(50), at(2))
        .await
        .unwrap();
    let deferred = store.work_item(ld.work_id).await.unwrap().unwrap();
    assert_eq!(deferred.status, WorkStatus::Pending);
    assert_eq!(deferred.attempts, 0);
    assert_eq!(deferred.defer_reason, Some(DeferReason::Budget));
    assert_eq!(deferred.not_before, at(50));
    assert_eq!(deferred.lease_owner, None);
    assert_eq!(deferred.lease_expires_at, None);
    // Deferring again: the lease is gone.
    let err = store
        .defer(&ld, DeferReason::Budget, at(50), at(3))
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseLost);

    // The no-route row is neither claimable nor a wake-up; the deferred one is both.
    assert_eq!(store.next_wakeup().await.unwrap(), Some(at(50)));
    assert!(store.claim(&req("w", &[], 5, 49)).await.unwrap().is_empty());
    let got = store.claim(&req("w", &[], 5, 50)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, ld.work_id);
    assert_eq!(got[0].attempts, 1);
    // The running lease is the next wake-up.
    assert_eq!(store.next_wakeup().await.unwrap(), Some(at(110)));
    let counts = store.work_counts(Some(ns)).await.unwrap();
    let pending = counts
        .iter()
        .find(|c| c.status == WorkStatus::Pending)
        .unwrap();
    assert_eq!((pending.count, pending.parked_no_route), (1, 1));
    // Park floors attempts at zero: a claimed-then-parked twice item stays at 0.
    sqlx::query("UPDATE processing_state SET attempts = 0 WHERE id = $1")
        .bind(ld.work_id.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    store
        .park(&Lease::of(&got[0]), DeferReason::Barrier, at(60), at(51))
        .await
        .unwrap();
    assert_eq!(
        store.work_item(ld.work_id).await.unwrap().unwrap().attempts,
        0
    );
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_ledger_claim_skips_namespaces_with_an_incomplete_forget() {
    let Some(store) = store("pg_ledger_forget", "ledger_fgt").await else {
        return;
    };
    let gated = NamespaceId::new();
    let open = NamespaceId::new();
    let g = work(gated, Stage::Prepare, 0);
    let o = work(open, Stage::Prepare, 1);
    store
        .enqueue(vec![g.clone(), o.clone()], at(0))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO forget_episodes (namespace_id, manifest_id, document_id, manifest_json, started_at)
         VALUES ($1, 'm1', 'd1', '{}'::jsonb, now())",
    )
    .bind(gated.to_string())
    .execute(store.pool())
    .await
    .unwrap();
    let got = store.claim(&req("w", &[], 10, 5)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].target_id, o.target_id);
    assert!(store.claim(&req("w", &[], 10, 5)).await.unwrap().is_empty());
    sqlx::query("UPDATE forget_episodes SET completed_at = now()")
        .execute(store.pool())
        .await
        .unwrap();
    let got = store.claim(&req("w", &[], 10, 5)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].target_id, g.target_id);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_ledger_latest_versions() {
    let Some(store) = store("pg_ledger_latest", "ledger_lv").await else {
        return;
    };
    assert!(store.latest_versions().await.unwrap().is_empty());
    let ns = NamespaceId::new();
    let v_old = VersionId::new();
    let v_new = VersionId::new();
    let v_other = VersionId::new();
    let insert_doc = |doc: String, latest: VersionId, created: i64| {
        let pool = store.pool().clone();
        async move {
            sqlx::query(
                "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode,
                     current_version_id, latest_version_id, version_count, created_at, updated_at)
                 VALUES ($1, $2, 'file', $2, 'living', $3, $3, 1, $4, $4)",
            )
            .bind(ns.to_string())
            .bind(doc)
            .bind(latest.to_string())
            .bind(at(created))
            .execute(&pool)
            .await
            .unwrap();
        }
    };
    let insert_version = |doc: String, v: VersionId, ord: i32, format: Option<&'static str>| {
        let pool = store.pool().clone();
        async move {
            sqlx::query(
                "INSERT INTO document_versions (namespace_id, id, document_id, ordinal, content_sha256,
                     size, mime, format, source_modified_at, origin, metadata_json, created_at)
                 VALUES ($1, $2, $3, $4, 'sha', 1, 'text/plain', $5, now(), 'external', '{}'::jsonb, now())",
            )
            .bind(ns.to_string())
            .bind(v.to_string())
            .bind(doc)
            .bind(ord)
            .bind(format)
            .execute(&pool)
            .await
            .unwrap();
        }
    };
    // Doc 2 created first; doc 1 has two versions, the latest markdown.
    insert_doc("doc-2".into(), v_other, 1).await;
    insert_doc("doc-1".into(), v_new, 2).await;
    insert_version("doc-1".into(), v_old, 1, Some("plain")).await;
    insert_version("doc-1".into(), v_new, 2, Some("markdown")).await;
    insert_version("doc-2".into(), v_other, 1, None).await;
    let got = store.latest_versions().await.unwrap();
    assert_eq!(
        got,
        vec![
            (ns, v_other, None),
            (ns, v_new, SourceFormat::parse("markdown")),
        ]
    );
    assert!(SourceFormat::parse("markdown").is_some());
    drop_schema(&store).await;
}

fn call(ns: NamespaceId, work: WorkId, attempt: u32, key: &str, tokens: u64) -> CallRecord {
    CallRecord {
        namespace_id: ns,
        processing_id: work,
        attempt,
        call_key: key.to_string(),
        stage: Stage::Extract,
        model: "m-1".to_string(),
        prompt_tokens: tokens,
        completion_tokens: tokens / 2,
        request_hash: "h".to_string(),
        prompt_version: "p1".to_string(),
        raw_output: "out\0put".to_string(),
        verdict: "ok".to_string(),
        reason: None,
    }
}

#[tokio::test]
async fn pg_ledger_record_call_and_call_costs() {
    let Some(store) = store("pg_ledger_calls", "ledger_calls").await else {
        return;
    };
    let ns = NamespaceId::new();
    let other = NamespaceId::new();
    let w = WorkId::new();
    assert!(store.call_costs(ns).await.unwrap().is_empty());
    store
        .record_call(call(ns, w, 1, "selection", 100), at(1))
        .await
        .unwrap();
    store
        .record_call(call(ns, w, 1, "claimify", 40), at(2))
        .await
        .unwrap();
    // The same call again (a replayed attempt): one cost row, two transcripts.
    store
        .record_call(call(ns, w, 1, "selection", 999), at(3))
        .await
        .unwrap();
    store
        .record_call(call(ns, w, 2, "selection", 7), at(4))
        .await
        .unwrap();
    store
        .record_call(call(other, w, 1, "selection", 5), at(5))
        .await
        .unwrap();
    assert_eq!(
        store.call_costs(ns).await.unwrap(),
        vec![
            ("selection".to_string(), "m-1".to_string(), 100, 50),
            ("claimify".to_string(), "m-1".to_string(), 40, 20),
            ("selection".to_string(), "m-1".to_string(), 7, 3),
        ]
    );
    assert_eq!(
        store.call_costs(other).await.unwrap(),
        vec![("selection".to_string(), "m-1".to_string(), 5, 2)]
    );
    let transcripts: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM llm_transcripts WHERE namespace_id = $1")
            .bind(ns.to_string())
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(transcripts, 4);
    drop_schema(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_ledger_concurrent_claimers_never_share_an_item() {
    let Some(url) = database_url("pg_ledger_concurrent") else {
        return;
    };
    let schema = fresh_schema("ledger_conc");
    // Two "processes": two stores (pools) on one schema.
    let wide = |s: &str| PgStoreConfig {
        max_connections: 4,
        ..config(s)
    };
    let one = PgStore::connect_with(&url, wide(&schema)).await.unwrap();
    let two = PgStore::connect_with(&url, wide(&schema)).await.unwrap();
    let ns = NamespaceId::new();
    let items: Vec<_> = (0..240)
        .map(|i| {
            work(
                ns,
                if i % 2 == 0 {
                    Stage::Embed
                } else {
                    Stage::Extract
                },
                i % 7,
            )
        })
        .collect();
    assert_eq!(one.enqueue(items, at(0)).await.unwrap(), 240);
    let mut tasks = Vec::new();
    for (k, s) in [one.clone(), two.clone(), one.clone(), two.clone()]
        .into_iter()
        .enumerate()
    {
        tasks.push(tokio::spawn(async move {
            let owner = format!("worker-{k}");
            let mut mine = Vec::new();
            loop {
                let got = s.claim(&req(&owner, &[], 5, 10)).await.unwrap();
                if got.is_empty() {
                    break;
                }
                for w in &got {
                    assert_eq!(w.lease_owner.as_deref(), Some(owner.as_str()));
                    assert_eq!(w.attempts, 1, "claimed once only");
                }
                // Complete half of them to interleave writes with claims.
                for w in got.iter().step_by(2) {
                    s.complete(&Lease::of(w), vec![], at(11)).await.unwrap();
                }
                mine.extend(got.into_iter().map(|w| w.id));
            }
            mine
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    let mut busy = 0;
    for t in tasks {
        let mine = t.await.unwrap();
        if !mine.is_empty() {
            busy += 1;
        }
        total += mine.len();
        for id in mine {
            assert!(seen.insert(id), "item {id} claimed twice");
        }
    }
    assert_eq!(total, 240);
    assert!(busy >= 1);
    let counts = one.work_counts(Some(ns)).await.unwrap();
    let running: u64 = counts
        .iter()
        .filter(|c| c.status == WorkStatus::Running)
        .map(|c| c.count)
        .sum();
    let done: u64 = counts
        .iter()
        .filter(|c| c.status == WorkStatus::Done)
        .map(|c| c.count)
        .sum();
    assert_eq!(running + done, 240);
    two.close().await;
    drop_schema(&one).await;
}

#[tokio::test]
async fn pg_ledger_claim_skips_rows_another_claimer_holds() {
    let Some(store) = store("pg_ledger_skip_locked", "ledger_skip").await else {
        return;
    };
    let ns = NamespaceId::new();
    let first = work(ns, Stage::Chunk, 0);
    let second = work(ns, Stage::Chunk, 1);
    store
        .enqueue(vec![first.clone(), second.clone()], at(0))
        .await
        .unwrap();
    // Another process is mid-claim on the oldest row: it holds its row lock.
    let mut other = store.pool().begin().await.unwrap();
    sqlx::query("SELECT id FROM processing_state WHERE target_id = $1 FOR UPDATE")
        .bind(first.target_id.to_string())
        .execute(&mut *other)
        .await
        .unwrap();
    // This claim neither waits for it nor returns it: it takes the next one.
    let got = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.claim(&req("w", &[], 5, 10)),
    )
    .await
    .expect("claim does not wait for a locked row")
    .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].target_id, second.target_id);
    other.rollback().await.unwrap();
    let got = store.claim(&req("w", &[], 5, 10)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].target_id, first.target_id);
    drop_schema(&store).await;
}

/// Workers complete items while others enqueue work that names the same items
/// (as two entity units of one version enqueue the same follow-up): the ledger's
/// writes take the namespace's change stamp first, so none of them deadlocks.
#[tokio::test]
async fn pg_ledger_completions_and_overlapping_enqueues_never_deadlock() {
    let Some(url) = database_url("pg_ledger_deadlock") else {
        return;
    };
    let store = std::sync::Arc::new(
        PgStore::connect_with(
            &url,
            PgStoreConfig {
                max_connections: 12,
                schema: Some(fresh_schema("ledger_dl")),
                ..PgStoreConfig::default()
            },
        )
        .await
        .unwrap(),
    );
    let ns = NamespaceId::new();
    let items: Vec<NewWork> = (0..40).map(|_| work(ns, Stage::Chunk, 0)).collect();
    store.enqueue(items.clone(), at(0)).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..4 {
        let store = store.clone();
        let items = items.clone();
        tasks.spawn(async move {
            let owner = format!("w{w}");
            loop {
                let batch = store.claim(&req(&owner, &[], 1, 1)).await?;
                let Some(item) = batch.first() else {
                    return Ok::<_, rememberstack_core::Error>(());
                };
                // Follow-up work overlapping the items other workers hold.
                let follow: Vec<NewWork> = items.iter().rev().take(8).cloned().collect();
                store
                    .complete(&lease(item.id, &owner), follow, at(2))
                    .await?;
            }
        });
    }
    for e in 0..4 {
        let store = store.clone();
        let items = items.clone();
        tasks.spawn(async move {
            for round in 0..25 {
                let mut again: Vec<NewWork> = items
                    .iter()
                    .skip((e + round) % 7)
                    .step_by(3)
                    .cloned()
                    .collect();
                again.push(work(ns, Stage::Embed, 0));
                store.enqueue(again, at(1)).await?;
            }
            Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap().unwrap();
    }
    let stuck = store
        .work_items(Some(ns), WorkStatus::Running, 100)
        .await
        .unwrap();
    assert!(stuck.is_empty(), "{stuck:?}");
    let schema = store.schema().unwrap().to_string();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA \"{schema}\" CASCADE"
    )))
    .execute(store.pool())
    .await
    .unwrap();
}
