//! The store contract's small pieces on every store: namespaces, settings,
//! receipts (stored exactly, replayed by request id) and feedback (put, list, the
//! store-wide prune).

use chrono::{Duration, SubsecRound, TimeZone, Utc};
use rememberstack::store::{FeedbackRecord, MemoryStore, Receipt, ReceiptSelection};
use rememberstack::{ChunkId, ClaimId, ErrorCode, NamespaceId, ReceiptId, Timestamp, VersionId};
use rememberstack_conformance::stores;
use std::sync::Arc;

fn at(secs: i64) -> Timestamp {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

/// An instant with sub-millisecond digits, which the stores keep to the millisecond.
fn fine(secs: i64) -> Timestamp {
    Utc.timestamp_opt(1_780_000_000 + secs, 123_456_789)
        .unwrap()
}

#[tokio::test]
async fn namespaces_are_created_once_and_listed_by_slug() {
    for h in stores().await {
        let store = &h.store;
        assert!(store.namespace("beta").await.unwrap().is_none());
        let beta = store.ensure_namespace("beta", at(1)).await.unwrap();
        assert_eq!(beta.slug, "beta");
        assert_eq!(beta.created_at, at(1));
        // Idempotent: the same namespace, the first creation time.
        let again = store.ensure_namespace("beta", at(2)).await.unwrap();
        assert_eq!(again, beta, "{}", h.kind);
        let alpha = store.ensure_namespace("alpha", at(3)).await.unwrap();
        assert_ne!(alpha.id, beta.id);
        assert_eq!(store.namespace("beta").await.unwrap(), Some(beta.clone()));
        // Ordered by slug, bytewise (upper case first).
        let upper = store.ensure_namespace("Zed", at(4)).await.unwrap();
        let slugs: Vec<String> = store
            .namespaces()
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.slug)
            .filter(|s| s != "default")
            .collect();
        assert_eq!(slugs, ["Zed", "alpha", "beta"], "{}", h.kind);
        assert_ne!(upper.id, alpha.id);
    }
}

#[tokio::test]
async fn settings_are_kept_and_replaced_by_key() {
    for h in stores().await {
        let store = &h.store;
        assert_eq!(store.setting("k").await.unwrap(), None);
        store.set_setting("k", "v1").await.unwrap();
        assert_eq!(store.setting("k").await.unwrap().as_deref(), Some("v1"));
        store.set_setting("k", "v2").await.unwrap();
        store.set_setting("other", "x").await.unwrap();
        assert_eq!(store.setting("k").await.unwrap().as_deref(), Some("v2"));
        assert_eq!(store.setting("other").await.unwrap().as_deref(), Some("x"));
    }
}

fn feedback(ns: NamespaceId, receipt: ReceiptId, rating: &str, t: Timestamp) -> FeedbackRecord {
    FeedbackRecord {
        feedback_id: uuid::Uuid::new_v4(),
        namespace_id: ns,
        receipt_id: receipt,
        item_ref: format!("claim:{}", ClaimId::new()),
        rating: rating.into(),
        comment: (rating == "wrong").then(|| "no".to_string()),
        created_at: t,
    }
}

#[tokio::test]
async fn feedback_is_listed_by_receipt_refused_twice_and_pruned_store_wide() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("fb", fine(0)).await.unwrap().id;
        let ns2 = store.ensure_namespace("other", fine(0)).await.unwrap().id;
        let (r1, r2) = (ReceiptId::new(), ReceiptId::new());
        let old = fine(0) - Duration::days(100);
        let a = feedback(ns, r1, "useful", fine(1));
        let b = feedback(ns, r2, "wrong", fine(2));
        let c = feedback(ns, r1, "not_useful", fine(3));
        let elsewhere = feedback(ns2, r1, "useful", old);
        store
            .put_feedback(elsewhere.clone(), old - Duration::days(1))
            .await
            .unwrap();
        for f in [&a, &b, &c] {
            store
                .put_feedback(f.clone(), old - Duration::days(1))
                .await
                .unwrap();
        }
        let trunc = |f: &FeedbackRecord| FeedbackRecord {
            created_at: f.created_at.trunc_subsecs(3),
            ..f.clone()
        };
        assert_eq!(
            store.list_feedback(ns, None, 10).await.unwrap(),
            vec![trunc(&a), trunc(&b), trunc(&c)],
            "{}",
            h.kind
        );
        assert_eq!(
            store.list_feedback(ns, Some(r1), 10).await.unwrap(),
            vec![trunc(&a), trunc(&c)]
        );
        assert_eq!(store.list_feedback(ns, None, 2).await.unwrap().len(), 2);
        assert_eq!(
            store.list_feedback(ns2, None, 10).await.unwrap(),
            vec![trunc(&elsewhere)]
        );
        // A duplicate id is refused (no silent overwrite).
        assert!(
            store.put_feedback(a.clone(), old).await.is_err(),
            "{}",
            h.kind
        );
        // Putting prunes store-wide: the old row of the other namespace goes.
        let d = feedback(ns, r2, "useful", fine(4));
        store.put_feedback(d.clone(), fine(0)).await.unwrap();
        assert!(store.list_feedback(ns2, None, 10).await.unwrap().is_empty());
        assert_eq!(store.list_feedback(ns, None, 10).await.unwrap().len(), 4);
        // Prune before `c`: a and b go.
        assert_eq!(store.prune_feedback(fine(3)).await.unwrap(), 2);
        assert_eq!(
            store.list_feedback(ns, None, 10).await.unwrap(),
            vec![trunc(&c), trunc(&d)]
        );
        assert_eq!(store.prune_feedback(fine(3)).await.unwrap(), 0);
    }
}

fn receipt(ns: NamespaceId, request: Option<&str>, operation: &str) -> Receipt {
    Receipt {
        receipt_id: ReceiptId::new(),
        namespace_id: ns,
        request_id: request.map(str::to_string),
        operation: operation.to_string(),
        subject: Some("alice".into()),
        purpose: None,
        query_digest: "abc".into(),
        parameters: serde_json::json!({"k": 10, "budget": 0.25, "anchors": ["x"]}),
        selections: vec![ReceiptSelection {
            kind: "chunk".into(),
            id: ChunkId::new().to_string(),
            version_id: Some(VersionId::new()),
            content_digest: "d".into(),
            score: 0.123_456_789_012_345_67,
        }],
        coverage: serde_json::json!({"considered": 3, "returned": 1}),
        created_at: fine(0),
    }
}

#[tokio::test]
async fn receipts_are_kept_exactly_and_replayed_by_request_id() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("rcpt", at(0)).await.unwrap().id;
        // Without a request id: stored as given, read back exactly (nanoseconds too).
        let plain = receipt(ns, None, "recall");
        assert_eq!(store.put_receipt(plain.clone()).await.unwrap(), plain);
        assert_eq!(
            store.receipt(ns, plain.receipt_id).await.unwrap(),
            Some(plain.clone()),
            "{}",
            h.kind
        );
        assert_eq!(
            store
                .receipt(NamespaceId::new(), plain.receipt_id)
                .await
                .unwrap(),
            None
        );
        assert_eq!(store.receipt(ns, ReceiptId::new()).await.unwrap(), None);
        // The same receipt id twice is a store error, not a silent overwrite.
        let err = store.put_receipt(plain.clone()).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::Store, "{}", h.kind);

        // With a request id: a second receipt under it writes nothing and returns
        // the first.
        let first = receipt(ns, Some("req-1"), "recall");
        assert_eq!(store.put_receipt(first.clone()).await.unwrap(), first);
        let second = receipt(ns, Some("req-1"), "context");
        assert_eq!(store.put_receipt(second.clone()).await.unwrap(), first);
        assert_eq!(store.receipt(ns, second.receipt_id).await.unwrap(), None);
        assert_eq!(
            store.receipt_by_request(ns, "req-1").await.unwrap(),
            Some(first.clone())
        );
        assert_eq!(store.receipt_by_request(ns, "req-2").await.unwrap(), None);
        // Request ids are per namespace.
        let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
        let elsewhere = receipt(ns2, Some("req-1"), "recall");
        assert_eq!(
            store.put_receipt(elsewhere.clone()).await.unwrap(),
            elsewhere
        );
        assert_eq!(
            store.receipt_by_request(ns2, "req-1").await.unwrap(),
            Some(elsewhere)
        );
        // Concurrent writers of one request id all get the one stored receipt.
        let racers: Vec<Receipt> = (0..6)
            .map(|_| receipt(ns, Some("req-race"), "recall"))
            .collect();
        let results = race(store, racers.clone()).await;
        let stored = store
            .receipt_by_request(ns, "req-race")
            .await
            .unwrap()
            .unwrap();
        assert!(racers.contains(&stored));
        assert!(results.iter().all(|r| *r == stored), "{}", h.kind);
        // The losers' receipts were not kept under their own ids either.
        for r in &racers {
            if r.receipt_id != stored.receipt_id {
                assert_eq!(store.receipt(ns, r.receipt_id).await.unwrap(), None);
            }
        }
    }
}

/// Put every receipt at once, each from its own task.
async fn race(store: &Arc<dyn MemoryStore>, receipts: Vec<Receipt>) -> Vec<Receipt> {
    let handles: Vec<_> = receipts
        .into_iter()
        .map(|r| {
            let store = store.clone();
            tokio::spawn(async move { store.put_receipt(r).await })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap().unwrap());
    }
    out
}
