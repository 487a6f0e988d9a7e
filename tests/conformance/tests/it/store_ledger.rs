//! The work ledger's store contract, on every store: enqueue, claim (stage
//! selection, ordering, batching, expired leases, the forget gate), complete,
//! fail, park, defer, work_item, barrier, work_counts, work_items,
//! replay_dead_letters, expedite_failed, next_wakeup, the change stamp and the
//! provider call ledger. What only PostgreSQL can show (concurrent claimers in
//! several processes, rows another transaction holds, deadlock freedom under
//! overlapping writes) stays in its own tests.

use crate::store_fixtures::{created, forget_manifest, new_version, observation, rows, stage};
use chrono::{TimeZone, Utc};
use rememberstack::store::ledger::{
    ClaimRequest, DeferReason, FailureOutcome, NewWork, Stage, WorkStatus,
};
use rememberstack::store::traits::*;
use rememberstack::store::{CallRecord, Lease};
use rememberstack::{ClaimId, EntityId, ErrorCode, NamespaceId, VersionId, WorkId};
use rememberstack_conformance::stores;
use std::collections::HashSet;
use std::sync::Arc;

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

/// The work id of the row for `target`, whatever its status.
async fn id_of(store: &Arc<dyn MemoryStore>, target: uuid::Uuid) -> WorkId {
    for status in [
        WorkStatus::Pending,
        WorkStatus::Running,
        WorkStatus::Done,
        WorkStatus::Failed,
        WorkStatus::DeadLetter,
    ] {
        let items = store.work_items(None, status, 10_000).await.unwrap();
        if let Some(w) = items.iter().find(|w| w.target_id == target) {
            return w.id;
        }
    }
    panic!("no work item for {target}")
}

#[tokio::test]
async fn ledger_enqueue_is_idempotent_and_claim_orders_by_due_time() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        assert_eq!(store.enqueue(vec![], at(0)).await.unwrap(), 0);
        // Three due chunk items (due at 5, 1, 3), one not yet due, one parked for want of
        // a route, and a prepare item.
        let a = work(ns, Stage::Chunk, 5);
        let b = work(ns, Stage::Chunk, 1);
        let c = work(ns, Stage::Chunk, 3);
        let later = work(ns, Stage::Chunk, 500);
        let mut parked = work(ns, Stage::Chunk, 0);
        parked.defer_reason = Some(DeferReason::NoRoute);
        let prep = work(ns, Stage::Prepare, 0);
        let all = vec![
            a.clone(),
            b.clone(),
            c.clone(),
            later.clone(),
            parked.clone(),
            prep.clone(),
        ];
        assert_eq!(store.enqueue(all.clone(), at(0)).await.unwrap(), 6);
        // A replay is a no-op: the same (namespace, target, stage, component version).
        assert_eq!(store.enqueue(all, at(1)).await.unwrap(), 0);
        // A new component version is new work.
        let mut a2 = a.clone();
        a2.component_version = "v2".into();
        a2.not_before = at(400);
        assert_eq!(store.enqueue(vec![a2], at(2)).await.unwrap(), 1);

        let fresh = store
            .work_item(id_of(store, b.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(fresh.status, WorkStatus::Pending);
        assert_eq!(fresh.attempts, 0);
        assert_eq!(fresh.max_attempts, 3);
        assert_eq!(fresh.not_before, at(1));
        assert_eq!(fresh.created_at, at(0));
        assert_eq!(fresh.component_version, "v1");
        assert_eq!(fresh.namespace_id, ns);
        assert_eq!(fresh.target_id, b.target_id);
        assert_eq!(fresh.version_id, b.version_id);
        assert!(store.work_item(WorkId::new()).await.unwrap().is_none());

        // Stage priority: the first listed stage with due work wins, and a batch is
        // one stage. Within it, the earliest `not_before` is picked first (b, c).
        let got = store
            .claim(&req("w1", &[Stage::Chunk, Stage::Prepare], 2, 10))
            .await
            .unwrap();
        let targets: HashSet<_> = got.iter().map(|w| w.target_id).collect();
        assert_eq!(targets, HashSet::from([b.target_id, c.target_id]));
        // Returned by creation time, then id.
        let mut sorted = got.clone();
        sorted.sort_by(|x, y| x.created_at.cmp(&y.created_at).then(x.id.cmp(&y.id)));
        assert_eq!(got, sorted);
        for w in &got {
            assert_eq!(w.status, WorkStatus::Running);
            assert_eq!(w.attempts, 1);
            assert_eq!(w.lease_owner.as_deref(), Some("w1"));
            assert_eq!(w.lease_expires_at, Some(at(70)));
            assert_eq!(w.updated_at, at(10));
            assert_eq!(w.defer_reason, None);
        }
        let got = store
            .claim(&req("w1", &[Stage::Chunk, Stage::Prepare], 5, 10))
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].target_id, a.target_id);
        // Chunk has nothing due (later is not due, parked has no route): prepare next.
        let got = store
            .claim(&req("w1", &[Stage::Chunk, Stage::Prepare], 5, 10))
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].target_id, prep.target_id);
        assert!(
            store
                .claim(&req("w1", &[], 5, 10))
                .await
                .unwrap()
                .is_empty()
        );
        // Any stage (empty list): pipeline order. At 450 every lease (until 70) has
        // expired: prepare comes first, reclaimed (a second attempt) by another worker.
        let got = store.claim(&req("w2", &[], 5, 450)).await.unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].target_id, prep.target_id);
        assert_eq!(got[0].attempts, 2);
        assert_eq!(got[0].lease_owner.as_deref(), Some("w2"));
        // Then chunk: the expired b, c, a and the v2 item (due at 400); `later` (500)
        // is not due yet.
        let got = store.claim(&req("w2", &[], 5, 450)).await.unwrap();
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got.iter().all(|w| w.stage == Stage::Chunk));
        assert!(got.iter().all(|w| w.target_id != later.target_id));
        let got = store.claim(&req("w2", &[], 5, 500)).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].target_id, later.target_id);
        // The parked item stays put.
        let p = store
            .work_item(id_of(store, parked.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(p.status, WorkStatus::Pending);
        assert_eq!(p.defer_reason, Some(DeferReason::NoRoute));
    }
}

#[tokio::test]
async fn ledger_complete_is_lease_checked_and_enqueues_follow_ups() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let item = work(ns, Stage::Prepare, 0);
        let existing = work(ns, Stage::Chunk, 0);
        store
            .enqueue(vec![item.clone(), existing.clone()], at(0))
            .await
            .unwrap();
        let got = store
            .claim(&req("w1", &[Stage::Prepare], 1, 1))
            .await
            .unwrap();
        let id = got[0].id;
        // Someone else's lease: LeaseLost, nothing changes, no follow-up.
        let follow = work(ns, Stage::Chunk, 2);
        let err = store
            .complete(&lease(id, "intruder"), vec![follow.clone()], at(2))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        assert_eq!(
            store.work_item(id).await.unwrap().unwrap().status,
            WorkStatus::Running
        );
        // The owner completes; the follow-ups are enqueued (an existing one once).
        store
            .complete(
                &Lease::of(&got[0]),
                vec![follow.clone(), existing.clone()],
                at(3),
            )
            .await
            .unwrap();
        let done = store.work_item(id).await.unwrap().unwrap();
        assert_eq!(done.status, WorkStatus::Done);
        assert_eq!(done.lease_owner, None);
        assert_eq!(done.lease_expires_at, None);
        assert_eq!(done.updated_at, at(3));
        let chunks = store
            .work_items(Some(ns), WorkStatus::Pending, 10)
            .await
            .unwrap();
        assert_eq!(chunks.len(), 2);
        let f = chunks
            .iter()
            .find(|w| w.target_id == follow.target_id)
            .unwrap();
        assert_eq!(f.created_at, at(3));
        // A second completion of the same lease: lost.
        let err = store
            .complete(&Lease::of(&got[0]), vec![work(ns, Stage::Chunk, 0)], at(4))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        assert_eq!(
            store
                .work_items(Some(ns), WorkStatus::Pending, 10)
                .await
                .unwrap()
                .len(),
            2,
            "a refused completion enqueues nothing"
        );
    }
}

#[tokio::test]
async fn ledger_enqueue_runs_an_adjudication_unit_again_and_nothing_else() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let unit = work(ns, Stage::Adjudicate, 0);
        let chunk = work(ns, Stage::Chunk, 0);
        store
            .enqueue(vec![unit.clone(), chunk.clone()], at(0))
            .await
            .unwrap();
        for (stage, owner) in [(Stage::Adjudicate, "w1"), (Stage::Chunk, "w2")] {
            let got = store.claim(&req(owner, &[stage], 1, 1)).await.unwrap();
            store
                .complete(&Lease::of(&got[0]), vec![], at(2))
                .await
                .unwrap();
        }
        // Enqueued again, twice in one call: the finished unit is pending again,
        // once; the finished chunk item stays done (a replay changes nothing).
        let mut again = unit.clone();
        again.not_before = at(5);
        assert_eq!(
            store
                .enqueue(vec![again.clone(), again.clone(), chunk.clone()], at(5))
                .await
                .unwrap(),
            1
        );
        let unit_id = id_of(store, unit.target_id).await;
        let rearmed = store.work_item(unit_id).await.unwrap().unwrap();
        assert_eq!(rearmed.status, WorkStatus::Pending);
        assert_eq!((rearmed.attempts, rearmed.not_before), (0, at(5)));
        assert_eq!(rearmed.created_at, at(0), "the same row");
        let chunk_row = store
            .work_item(id_of(store, chunk.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(chunk_row.status, WorkStatus::Done);

        // A running unit enqueued again loses its lease: its completion is refused
        // and the unit is taken again.
        let got = store
            .claim(&req("w3", &[Stage::Adjudicate], 1, 6))
            .await
            .unwrap();
        assert_eq!(got[0].id, unit_id);
        store.enqueue(vec![again.clone()], at(7)).await.unwrap();
        let err = store
            .complete(&Lease::of(&got[0]), vec![], at(8))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        let retaken = store
            .claim(&req("w4", &[Stage::Adjudicate], 1, 9))
            .await
            .unwrap();
        assert_eq!(retaken[0].id, unit_id);
        store
            .complete(&Lease::of(&retaken[0]), vec![], at(10))
            .await
            .unwrap();
        // A pending unit enqueued again keeps its row as it is.
        let mut pending_unit = work(ns, Stage::Adjudicate, 20);
        store
            .enqueue(vec![pending_unit.clone()], at(11))
            .await
            .unwrap();
        pending_unit.not_before = at(60);
        assert_eq!(
            store
                .enqueue(vec![pending_unit.clone()], at(12))
                .await
                .unwrap(),
            0
        );
        let row = store
            .work_item(id_of(store, pending_unit.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((row.status, row.not_before), (WorkStatus::Pending, at(20)));
    }
}

#[tokio::test]
async fn ledger_a_finished_unit_with_assertions_of_its_version_waiting_runs_again() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let stranded = work(ns, Stage::Adjudicate, 0);
        let settled = work(ns, Stage::Adjudicate, 0);
        store
            .enqueue(vec![stranded.clone(), settled.clone()], at(0))
            .await
            .unwrap();
        let got = store
            .claim(&req("w1", &[Stage::Adjudicate], 2, 1))
            .await
            .unwrap();
        assert_eq!(got.len(), 2);
        store
            .complete_many(&got.iter().map(Lease::of).collect::<Vec<_>>(), at(2))
            .await
            .unwrap();
        assert_eq!(store.rearm_stranded_units(at(3)).await.unwrap(), 0);
        // An assertion of the first unit's version is staged with no unit enqueued.
        let claim = ClaimId::new();
        let a = observation(
            ns,
            claim,
            stranded.version_id,
            EntityId::new(),
            "waits",
            0,
            at(3),
        );
        stage(store.as_ref(), ns, claim, vec![a], at(3)).await;
        assert_eq!(store.rearm_stranded_units(at(4)).await.unwrap(), 1);
        let row = store
            .work_item(id_of(store, stranded.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (row.status, row.attempts, row.not_before),
            (WorkStatus::Pending, 0, at(4))
        );
        let other = store
            .work_item(id_of(store, settled.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(other.status, WorkStatus::Done);
        // Pending already: nothing more to do.
        assert_eq!(store.rearm_stranded_units(at(5)).await.unwrap(), 0);
    }
}

#[tokio::test]
async fn ledger_complete_many_completes_each_lease_it_holds_and_refuses_the_rest() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let items: Vec<NewWork> = (0..4).map(|i| work(ns, Stage::Normalize, i)).collect();
        assert_eq!(store.enqueue(items, at(0)).await.unwrap(), 4);
        let got = store
            .claim(&req("w1", &[Stage::Normalize], 4, 10))
            .await
            .unwrap();
        assert_eq!(got.len(), 4, "{}", h.kind);
        let before = store.change_stamp(ns).await.unwrap();
        assert!(store.complete_many(&[], at(11)).await.unwrap().is_empty());
        // The first and third are ours; the second is named with another owner;
        // the first is listed twice.
        let leases = [
            Lease::of(&got[0]),
            lease(got[1].id, "intruder"),
            Lease::of(&got[2]),
            Lease::of(&got[0]),
        ];
        let results = store.complete_many(&leases, at(12)).await.unwrap();
        let codes: Vec<Option<ErrorCode>> = results
            .iter()
            .map(|r| r.as_ref().err().map(|e| e.code()))
            .collect();
        assert_eq!(
            codes,
            [
                None,
                Some(ErrorCode::LeaseLost),
                None,
                Some(ErrorCode::LeaseLost)
            ],
            "{}",
            h.kind
        );
        let status = |i: usize| {
            let store = store.clone();
            let id = got[i].id;
            async move { store.work_item(id).await.unwrap().unwrap() }
        };
        for i in [0, 2] {
            let done = status(i).await;
            assert_eq!(done.status, WorkStatus::Done, "{}", h.kind);
            assert_eq!(done.lease_owner, None, "{}", h.kind);
            assert_eq!(done.updated_at, at(12), "{}", h.kind);
        }
        for i in [1, 3] {
            let running = status(i).await;
            assert_eq!(running.status, WorkStatus::Running, "{}", h.kind);
            assert_eq!(running.lease_owner.as_deref(), Some("w1"), "{}", h.kind);
        }
        assert!(store.change_stamp(ns).await.unwrap() > before, "{}", h.kind);
    }
}

#[tokio::test]
async fn ledger_fail_retries_with_backoff_or_dead_letters() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let one = work(ns, Stage::Extract, 0);
        let two = work(ns, Stage::Extract, 0);
        store
            .enqueue(vec![one.clone(), two.clone()], at(0))
            .await
            .unwrap();
        let got = store
            .claim(&req("w", &[Stage::Extract], 2, 1))
            .await
            .unwrap();
        let l1 = Lease::of(got.iter().find(|w| w.target_id == one.target_id).unwrap());
        let l2 = Lease::of(got.iter().find(|w| w.target_id == two.target_id).unwrap());
        // A long error with a NUL is kept (2000 characters).
        let long = format!("bad\0{}", "é".repeat(3000));
        store
            .fail(
                &l1,
                &long,
                FailureOutcome::Retry { retry_at: at(100) },
                at(2),
            )
            .await
            .unwrap();
        let f = store.work_item(l1.work_id).await.unwrap().unwrap();
        assert_eq!(f.status, WorkStatus::Failed);
        assert_eq!(f.not_before, at(100));
        assert_eq!(f.defer_reason, Some(DeferReason::RetryBackoff));
        assert_eq!(f.lease_owner, None);
        assert_eq!(f.lease_expires_at, None);
        assert_eq!(f.attempts, 1);
        let e = f.last_error.unwrap();
        assert_eq!(e.chars().count(), 2000);
        assert!(e.starts_with("bad"));
        // Already failed: the lease is gone.
        let err = store
            .fail(&l1, "again", FailureOutcome::DeadLetter, at(3))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        // Dead letter keeps not_before.
        store
            .fail(&l2, "fatal", FailureOutcome::DeadLetter, at(3))
            .await
            .unwrap();
        let d = store.work_item(l2.work_id).await.unwrap().unwrap();
        assert_eq!(d.status, WorkStatus::DeadLetter);
        assert_eq!(d.not_before, at(0));
        assert_eq!(d.defer_reason, None);
        assert_eq!(d.last_error.as_deref(), Some("fatal"));
        // The failed item is claimable at retry_at, not before; dead letters never.
        assert!(store.claim(&req("w", &[], 5, 99)).await.unwrap().is_empty());
        assert_eq!(store.next_wakeup().await.unwrap(), Some(at(100)));
        let again = store.claim(&req("w", &[], 5, 100)).await.unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].id, l1.work_id);
        assert_eq!(again[0].attempts, 2);
        assert_eq!(again[0].defer_reason, None);
    }
}

#[tokio::test]
async fn ledger_expired_leases_are_reclaimed_or_dead_lettered() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let mut x = work(ns, Stage::Embed, 0);
        x.max_attempts = 2;
        store.enqueue(vec![x.clone()], at(0)).await.unwrap();
        let first = store.claim(&req("a", &[], 1, 1)).await.unwrap();
        assert_eq!(first[0].attempts, 1);
        // Before expiry (lease until 61) nobody else gets it.
        assert!(store.claim(&req("b", &[], 1, 60)).await.unwrap().is_empty());
        let second = store.claim(&req("b", &[], 1, 61)).await.unwrap();
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].id, first[0].id);
        assert_eq!(second[0].attempts, 2);
        assert_eq!(second[0].lease_owner.as_deref(), Some("b"));
        // The first worker's lease is lost.
        let err = store
            .complete(&Lease::of(&first[0]), vec![], at(62))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        assert!(err.to_string().contains(&first[0].id.to_string()));
        // The final attempt's lease expires: the next claim dead-letters it.
        assert!(
            store
                .claim(&req("c", &[], 1, 121))
                .await
                .unwrap()
                .is_empty()
        );
        let dead = store.work_item(first[0].id).await.unwrap().unwrap();
        assert_eq!(dead.status, WorkStatus::DeadLetter);
        assert_eq!(dead.lease_owner, None);
        assert_eq!(dead.lease_expires_at, None);
        assert_eq!(
            dead.last_error.as_deref(),
            Some("lease expired during the final attempt (worker crashed or timed out)")
        );
        assert_eq!(dead.updated_at, at(121));
    }
}

#[tokio::test]
async fn ledger_barrier_counts_and_listings() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let other = NamespaceId::new();
        let version = VersionId::new();
        let mut items = Vec::new();
        for i in 0..4 {
            let mut w = work(ns, Stage::Normalize, i);
            w.version_id = version;
            items.push(w);
        }
        store.enqueue(items.clone(), at(0)).await.unwrap();
        store
            .enqueue(vec![work(other, Stage::Normalize, 0)], at(1))
            .await
            .unwrap();
        let b = store.barrier(ns, version, Stage::Normalize).await.unwrap();
        assert_eq!((b.total, b.done, b.dead_letter), (4, 0, 0));
        assert!(!b.is_complete());
        let empty = store
            .barrier(ns, VersionId::new(), Stage::Normalize)
            .await
            .unwrap();
        assert_eq!((empty.total, empty.done, empty.dead_letter), (0, 0, 0));

        // Claim three of the namespace's (oldest not_before first), finish two, kill one.
        let got = store
            .claim(&req("w", &[Stage::Normalize], 3, 10))
            .await
            .unwrap();
        assert_eq!(got.len(), 3);
        let mine: Vec<_> = got.iter().filter(|w| w.namespace_id == ns).collect();
        store
            .complete(&Lease::of(mine[0]), vec![], at(11))
            .await
            .unwrap();
        store
            .complete(&Lease::of(mine[1]), vec![], at(11))
            .await
            .unwrap();
        let running: Vec<_> = got.iter().skip(2).collect();
        store
            .fail(
                &Lease::of(running[0]),
                "x",
                FailureOutcome::DeadLetter,
                at(12),
            )
            .await
            .unwrap();
        let b = store.barrier(ns, version, Stage::Normalize).await.unwrap();
        let dead_here = u64::from(running[0].namespace_id == ns);
        assert_eq!((b.total, b.done, b.dead_letter), (4, 2, dead_here));

        // Counts per stage and status, ordered; the namespace filter applies.
        let all = store.work_counts(None).await.unwrap();
        let total: u64 = all.iter().map(|c| c.count).sum();
        assert_eq!(total, 5);
        let keys: Vec<_> = all
            .iter()
            .map(|c| (c.stage.as_str(), c.status.as_str()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        let mine = store.work_counts(Some(ns)).await.unwrap();
        assert_eq!(mine.iter().map(|c| c.count).sum::<u64>(), 4);
        let done = mine.iter().find(|c| c.status == WorkStatus::Done).unwrap();
        assert_eq!((done.stage, done.count), (Stage::Normalize, 2));
        assert!(
            store
                .work_counts(Some(NamespaceId::new()))
                .await
                .unwrap()
                .is_empty()
        );
        // Freshness counts the namespace's unfinished work alone: the same counts,
        // in the same order, without the finished rows.
        let unfinished = store.unfinished_work_counts(ns).await.unwrap();
        let expected: Vec<_> = mine
            .iter()
            .filter(|c| c.status != WorkStatus::Done)
            .cloned()
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(unfinished, expected);
        assert!(
            store
                .unfinished_work_counts(NamespaceId::new())
                .await
                .unwrap()
                .is_empty()
        );

        // Listings: by status, namespace, creation order then id, limited.
        let pending_all = store
            .work_items(None, WorkStatus::Pending, 10)
            .await
            .unwrap();
        let done_mine = store
            .work_items(Some(ns), WorkStatus::Done, 10)
            .await
            .unwrap();
        assert_eq!(done_mine.len(), 2);
        assert!(done_mine.iter().all(|w| w.status == WorkStatus::Done));
        let limited = store
            .work_items(None, WorkStatus::Pending, 1)
            .await
            .unwrap();
        assert_eq!(limited.len(), pending_all.len().min(1));
        let mut sorted = pending_all.clone();
        sorted.sort_by(|x, y| x.created_at.cmp(&y.created_at).then(x.id.cmp(&y.id)));
        assert_eq!(pending_all, sorted);
        if let Some(first) = pending_all.first() {
            assert_eq!(limited[0].id, first.id);
        }
    }
}

#[tokio::test]
async fn ledger_replay_dead_letters_and_expedite_failed() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        let other = NamespaceId::new();
        let a = work(ns, Stage::Extract, 0);
        let b = work(ns, Stage::Embed, 0);
        let c = work(other, Stage::Extract, 0);
        let r1 = work(ns, Stage::Prepare, 0);
        let r2 = work(other, Stage::Prepare, 0);
        store
            .enqueue(
                vec![a.clone(), b.clone(), c.clone(), r1.clone(), r2.clone()],
                at(0),
            )
            .await
            .unwrap();
        // Dead-letter a, b, c; fail r1, r2 with a retry far ahead.
        for stage in [Stage::Prepare, Stage::Embed, Stage::Extract] {
            let got = store.claim(&req("w", &[stage], 10, 1)).await.unwrap();
            for w in got {
                let outcome = if stage == Stage::Prepare {
                    FailureOutcome::Retry { retry_at: at(1000) }
                } else {
                    FailureOutcome::DeadLetter
                };
                store
                    .fail(&Lease::of(&w), "e", outcome, at(2))
                    .await
                    .unwrap();
            }
        }
        // Replay by namespace and stage: only a.
        let n = store
            .replay_dead_letters(Some(ns), Some(Stage::Extract), 2, at(10))
            .await
            .unwrap();
        assert_eq!(n, 1);
        let ra = store
            .work_item(id_of(store, a.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ra.status, WorkStatus::Pending);
        assert_eq!(ra.attempts, 1);
        assert_eq!(ra.max_attempts, 3);
        assert_eq!(ra.not_before, at(10));
        assert_eq!(ra.updated_at, at(10));
        assert_eq!(ra.defer_reason, None);
        // An allowance of 0 still grants one attempt; no filters: everything left.
        let n = store
            .replay_dead_letters(None, None, 0, at(11))
            .await
            .unwrap();
        assert_eq!(n, 2);
        let rb = store
            .work_item(id_of(store, b.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((rb.status, rb.max_attempts), (WorkStatus::Pending, 2));
        assert_eq!(
            store
                .replay_dead_letters(None, None, 1, at(12))
                .await
                .unwrap(),
            0
        );

        // Expedite: failed rows waiting in the future become due now (filters apply).
        assert_eq!(
            store
                .expedite_failed(Some(ns), Some(Stage::Extract), at(20))
                .await
                .unwrap(),
            0
        );
        assert_eq!(
            store.expedite_failed(Some(ns), None, at(20)).await.unwrap(),
            1
        );
        let e1 = store
            .work_item(id_of(store, r1.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (e1.status, e1.not_before, e1.updated_at),
            (WorkStatus::Failed, at(20), at(20))
        );
        assert_eq!(e1.defer_reason, Some(DeferReason::RetryBackoff));
        let e2 = store
            .work_item(id_of(store, r2.target_id).await)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(e2.not_before, at(1000));
        // Already due: not counted again.
        assert_eq!(
            store
                .expedite_failed(None, Some(Stage::Prepare), at(20))
                .await
                .unwrap(),
            1
        );
        assert_eq!(store.expedite_failed(None, None, at(20)).await.unwrap(), 0);
        let got = store
            .claim(&req("w", &[Stage::Prepare], 10, 20))
            .await
            .unwrap();
        assert_eq!(got.len(), 2);
    }
}

#[tokio::test]
async fn ledger_next_wakeup() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        assert_eq!(store.next_wakeup().await.unwrap(), None);
        let mut parked = work(ns, Stage::Chunk, 1);
        parked.defer_reason = Some(DeferReason::NoRoute);
        store.enqueue(vec![parked], at(0)).await.unwrap();
        assert_eq!(
            store.next_wakeup().await.unwrap(),
            None,
            "no-route is not a wake-up"
        );
        store
            .enqueue(
                vec![work(ns, Stage::Chunk, 300), work(ns, Stage::Prepare, 200)],
                at(0),
            )
            .await
            .unwrap();
        assert_eq!(store.next_wakeup().await.unwrap(), Some(at(200)));
        let got = store
            .claim(&req("w", &[Stage::Prepare], 1, 250))
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        // Pending at 300, lease until 310.
        assert_eq!(store.next_wakeup().await.unwrap(), Some(at(300)));
        store
            .complete(&Lease::of(&got[0]), vec![], at(251))
            .await
            .unwrap();
        let got = store.claim(&req("w", &[], 1, 300)).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(store.next_wakeup().await.unwrap(), Some(at(360)));
    }
}

#[tokio::test]
async fn ledger_leases_leave_the_change_stamp_and_completions_bump_it() {
    for h in stores().await {
        let store = &h.store;
        let ns = NamespaceId::new();
        store
            .enqueue(vec![work(ns, Stage::Chunk, 0)], at(0))
            .await
            .unwrap();
        let enqueued = store.change_stamp(ns).await.unwrap();
        assert!(enqueued > 0);
        // Leasing changes no stamped aggregate (pending and running count alike).
        let claimed = store.claim(&req("w1", &[], 1, 1)).await.unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(store.change_stamp(ns).await.unwrap(), enqueued);
        // Completing does.
        store
            .complete(&lease(claimed[0].id, "w1"), vec![], at(2))
            .await
            .unwrap();
        assert!(store.change_stamp(ns).await.unwrap() > enqueued);
    }
}

#[tokio::test]
async fn ledger_park_and_defer_give_the_attempt_back() {
    for h in stores().await {
        let store = &h.store;
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
        // Parking floors attempts at zero (a row whose count was already given back).
        h.execute_sql(&format!(
            "UPDATE processing_state SET attempts = 0 WHERE id = '{}'",
            ld.work_id
        ))
        .await;
        store
            .park(&Lease::of(&got[0]), DeferReason::Barrier, at(60), at(51))
            .await
            .unwrap();
        assert_eq!(
            store.work_item(ld.work_id).await.unwrap().unwrap().attempts,
            0,
            "{}",
            h.kind
        );
    }
}

#[tokio::test]
async fn ledger_claim_skips_namespaces_with_an_incomplete_forget() {
    for h in stores().await {
        let store = &h.store;
        let gated = store.ensure_namespace("gated", at(0)).await.unwrap().id;
        let open = store.ensure_namespace("open", at(0)).await.unwrap().id;
        // A lineage of the gated namespace to forget.
        let (doc, _, _) = created(
            &store
                .create_version(new_version(gated, "secret", b"secret", at(0)))
                .await
                .unwrap(),
        );
        let g = work(gated, Stage::Extract, 0);
        let o = work(open, Stage::Extract, 1);
        store
            .enqueue(vec![g.clone(), o.clone()], at(0))
            .await
            .unwrap();
        let m = forget_manifest(store.as_ref(), "gated", doc, ("file", "secret"), at(2)).await;
        // The forget began and stopped: the namespace's work waits.
        store.begin_forget(&m, at(2)).await.unwrap();
        let got = store
            .claim(&req("w", &[Stage::Extract], 10, 5))
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{}", h.kind);
        assert_eq!(got[0].target_id, o.target_id);
        assert!(
            store
                .claim(&req("w", &[Stage::Extract], 10, 5))
                .await
                .unwrap()
                .is_empty()
        );
        // Finished: it is claimed.
        store.forget(&m, at(6)).await.unwrap();
        let got = store
            .claim(&req("w", &[Stage::Extract], 10, 7))
            .await
            .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].target_id, g.target_id);
    }
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
async fn ledger_record_call_and_call_costs() {
    for h in stores().await {
        let store = &h.store;
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
            ],
            "{}",
            h.kind
        );
        assert_eq!(
            store.call_costs(other).await.unwrap(),
            vec![("selection".to_string(), "m-1".to_string(), 5, 2)]
        );
        assert_eq!(
            rows(
                &h,
                &format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM llm_transcripts WHERE namespace_id = '{ns}'"
                )
            )
            .await,
            4,
            "{}",
            h.kind
        );
    }
}
