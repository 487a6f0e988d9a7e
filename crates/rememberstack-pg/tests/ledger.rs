//! What the PostgreSQL store's work ledger must do that only a real server shows:
//! concurrent claimers in several processes, rows another transaction holds,
//! deadlock freedom under overlapping writes. The ledger's store contract (enqueue,
//! claim, complete, fail, park, defer, expired leases, the forget gate, barrier,
//! listings, replay, next wakeup, the change stamp, provider calls) is tested on
//! every store in `tests/conformance` (`store_ledger`). Every test needs
//! `DATABASE_URL` (`scripts/pg-local.sh start` prints one) and is skipped, saying
//! so, without it. Each test works in a schema of its own, dropped at the end.

use chrono::{TimeZone, Utc};
use rememberstack_core::ids::{NamespaceId, VersionId, WorkId};
use rememberstack_core::ledger::{ClaimRequest, NewWork, Stage, WorkStatus};
use rememberstack_core::store::Lease;
use rememberstack_core::store::traits::*;
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

/// Whether `signal` changes within `within` (marking it seen).
async fn changes(
    signal: &mut tokio::sync::watch::Receiver<u64>,
    within: std::time::Duration,
) -> bool {
    tokio::time::timeout(within, signal.changed())
        .await
        .is_ok_and(|r| r.is_ok())
}

/// Another process's new work and ended leases wake this process's idle workers
/// (LISTEN/NOTIFY, migration 0029); its claims do not, nor does a store in another
/// schema of the same database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_ledger_signal_wakes_other_processes_on_new_and_released_work() {
    let Some(url) = database_url("pg_ledger_signal") else {
        return;
    };
    let schema = fresh_schema("ledger_signal");
    let here = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let there = PgStore::connect_with(&url, config(&schema)).await.unwrap();
    let elsewhere = store("pg_ledger_signal", "ledger_signal_other")
        .await
        .unwrap();
    let long = std::time::Duration::from_secs(10);
    let short = std::time::Duration::from_millis(700);
    let mut signal = here
        .work_signal()
        .expect("PostgreSQL signals ledger changes");
    // The session says it listens (it may have missed what came before).
    assert!(
        changes(&mut signal, long).await,
        "the session never listened"
    );
    let ns = NamespaceId::new();

    there
        .enqueue(vec![work(ns, Stage::Embed, 0)], at(0))
        .await
        .unwrap();
    assert!(changes(&mut signal, long).await, "new work sent nothing");

    let got = there.claim(&req("w", &[], 5, 10)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert!(
        !changes(&mut signal, short).await,
        "a claim woke the workers"
    );

    there
        .complete(&Lease::of(&got[0]), vec![], at(11))
        .await
        .unwrap();
    assert!(
        changes(&mut signal, long).await,
        "a released lease sent nothing"
    );

    elsewhere
        .enqueue(vec![work(NamespaceId::new(), Stage::Embed, 0)], at(0))
        .await
        .unwrap();
    assert!(
        !changes(&mut signal, short).await,
        "another schema's work woke these workers"
    );
    drop_schema(&elsewhere).await;
    there.close().await;
    drop_schema(&here).await;
}

/// A claim walks the due work of its stage in order through `processing_state_due`
/// and stops at its batch: among 20,000 finished items, 5,000 due ones and dead
/// letters and parked work older than all of them, its plan sorts nothing, and it
/// leases the oldest due items (never a dead letter or parked item).
#[tokio::test]
async fn pg_ledger_claim_walks_due_work_in_order() {
    let Some(store) = store("pg_ledger_claim_walk", "ledger_walk").await else {
        return;
    };
    let ns = NamespaceId::new();
    // Rows 0..20,000 are done; 20,000..20,100 are dead letters and 20,100..20,200
    // parked without a route, all due long ago; the rest are pending, due in order
    // of their number (older than nothing above, newer than nothing below).
    sqlx::query(
        "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id,
             stage, component_version, status, defer_reason, not_before, created_at, updated_at)
         SELECT $1, md5('w' || i)::uuid::text, 'claim', md5('t' || i)::uuid::text,
                md5('v' || (i / 50))::uuid::text,
                'e3.normalize', 'v1',
                CASE WHEN i < 20000 THEN 'done' WHEN i < 20100 THEN 'dead_letter'
                     ELSE 'pending' END,
                CASE WHEN i >= 20100 AND i < 20200 THEN 'no_route' END,
                CASE WHEN i >= 20000 AND i < 20200 THEN 0 ELSE 1000 + i END, i, i
           FROM generate_series(0, 24999) AS i",
    )
    .bind(ns.to_string())
    .execute(store.pool())
    .await
    .unwrap();
    sqlx::query("ANALYZE processing_state")
        .execute(store.pool())
        .await
        .unwrap();
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN {}",
        rememberstack_pg::claim_statement()
    )))
    .bind("walker")
    .bind(i64::MAX)
    .bind(i64::MAX - 1)
    .bind(Stage::Normalize.as_str())
    .bind(32_i64)
    .bind(None::<i64>)
    .fetch_all(store.pool())
    .await
    .unwrap();
    let shown = plan.join("\n");
    assert!(
        plan.iter().any(|l| l.contains("processing_state_due")),
        "the claim does not walk processing_state_due:\n{shown}"
    );
    assert!(
        !plan
            .iter()
            .any(|l| l.trim_start().starts_with("-> Sort") || l.trim_start().starts_with("Sort")),
        "the claim sorts the due work:\n{shown}"
    );
    // The oldest 32 due items, in order; no dead letter, no parked item.
    let got = store
        .claim(&ClaimRequest {
            owner: "walker".into(),
            stages: vec![Stage::Normalize],
            limit: 32,
            stage_limits: vec![],
            lease_until: at(100_000_000),
            now: at(90_000_000),
        })
        .await
        .unwrap();
    assert_eq!(got.len(), 32);
    let mut created: Vec<i64> = got
        .iter()
        .map(|w| w.created_at.timestamp_millis())
        .collect();
    created.sort_unstable();
    assert_eq!(created, (20200..20232).collect::<Vec<i64>>());
    let leased: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM processing_state WHERE namespace_id = $1 AND status = 'running'",
    )
    .bind(ns.to_string())
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(leased, 32);
    drop_schema(&store).await;
}
