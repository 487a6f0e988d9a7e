//! The lifecycle writes of the store contract on every store: document deletion
//! (the cascade over claims and facts), claim retraction, fact invalidation (with
//! request-id replay), fact events and note revisions. What only PostgreSQL shows
//! (retractions, promotions and deletions racing in several sessions) stays in its
//! own tests.

use crate::store_fixtures::{
    chunk, claim, created, fact as fact_of, is_current, lineage, mint, new_version,
    prepare_and_chunk, rows,
};
use chrono::{DateTime, SubsecRound, TimeZone, Utc};
use rememberstack::store::facts::{Stance, Window};
use rememberstack::store::hash::sha256_hex;
use rememberstack::store::source::Admission;
use rememberstack::store::text::SectionRole;
use rememberstack::store::traits::*;
use rememberstack::store::{DeletionOutcome, NewNote, NoteLookup, RequestKey};
use rememberstack::{
    ChunkId, ClaimId, DocumentId, EntityId, ErrorCode, FactId, NamespaceId, VersionId,
};
use rememberstack_conformance::stores;

type Ts = DateTime<Utc>;

/// An instant with sub-millisecond digits (the stores keep milliseconds).
fn at(secs: i64) -> Ts {
    Utc.timestamp_opt(1_780_000_000 + secs, 123_456_789)
        .unwrap()
}

async fn open(store: &dyn MemoryStore) -> NamespaceId {
    store.ensure_namespace("default", at(0)).await.unwrap().id
}

/// A live fact of `subject` (a relation when `object` is given) with its evidence.
async fn fact(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    subject: EntityId,
    object: Option<EntityId>,
    evidence: &[(ClaimId, Stance)],
) -> FactId {
    fact_of(
        store,
        ns,
        subject,
        object,
        "s",
        Window::unknown(),
        evidence,
        at(0),
    )
    .await
}

/// Whether the fact was closed, when and why.
async fn fact_state(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    f: FactId,
) -> (Option<Ts>, Option<String>) {
    let r = &store.facts(ns, &[f]).await.unwrap()[0];
    (r.invalidated_at, r.closed_reason.clone())
}

/// Fact events of these facts, in all.
async fn events(store: &dyn MemoryStore, ns: NamespaceId, facts: &[FactId]) -> usize {
    let mut n = 0;
    for f in facts {
        n += store.fact_events(ns, *f).await.unwrap().len();
    }
    n
}

async fn entities(store: &dyn MemoryStore, ns: NamespaceId) -> (EntityId, EntityId, EntityId) {
    (
        mint(store, ns, "One", at(0)).await,
        mint(store, ns, "Two", at(0)).await,
        mint(store, ns, "Three", at(0)).await,
    )
}

fn key(id: &str, op: &str, digest: &str) -> RequestKey {
    RequestKey {
        request_id: id.into(),
        operation: op.into(),
        digest: digest.into(),
    }
}

#[tokio::test]
async fn delete_document_cascade() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        assert_eq!(
            store
                .delete_document(ns, DocumentId::new(), at(1))
                .await
                .unwrap(),
            DeletionOutcome::NotFound
        );
        // Lineage d has two versions (the second current); lineage o one.
        let first = lineage(store, ns, "d", at(0)).await;
        let c = chunk(0, 0, "d v2");
        let k2 = c.id;
        let (_, v2, _) = created(
            &store
                .create_version(new_version(ns, "d", b"d v2", at(0)))
                .await
                .unwrap(),
        );
        prepare_and_chunk(store, ns, v2, "d", &[SectionRole::Body], vec![c], at(0)).await;
        let doc_line = (first.0, v2, k2);
        let doc = doc_line.0;
        let o = lineage(store, ns, "o", at(0)).await;
        let other = o.0;
        let c1 = claim(store, ns, doc_line, "one", true, at(0)).await;
        let c2 = claim(store, ns, doc_line, "two", true, at(0)).await;
        let c3 = claim(store, ns, doc_line, "three", false, at(0)).await;
        let c4 = claim(store, ns, o, "four", true, at(0)).await;
        let (e1, e2, e3) = entities(store, ns).await;
        // Only the lineage supports it: closed.
        let f1 = fact(
            store,
            ns,
            e1,
            Some(e2),
            &[(c1, Stance::Support), (c3, Stance::Support)],
        )
        .await;
        // Another lineage still supports it: open.
        let f2 = fact(
            store,
            ns,
            e3,
            None,
            &[(c2, Stance::Support), (c4, Stance::Support)],
        )
        .await;
        // Only contradicted by the lineage, no support at all: closed (an observation).
        let f3 = fact(store, ns, e3, None, &[(c2, Stance::Contradict)]).await;
        // Already closed: untouched.
        let f4 = fact(store, ns, e1, None, &[(c1, Stance::Support)]).await;
        store
            .invalidate_fact(ns, f4, "closed", None, None, at(0))
            .await
            .unwrap();
        // A fact of another lineage only: untouched.
        let f5 = fact(store, ns, e2, None, &[(c4, Stance::Support)]).await;

        let now = at(10);
        let DeletionOutcome::Deleted(del) = store.delete_document(ns, doc, now).await.unwrap()
        else {
            panic!("expected a deletion");
        };
        assert_eq!(del.doc_id, doc);
        assert_eq!(del.deleted_at, now.trunc_subsecs(3));
        assert_eq!(del.claims_retired, 2, "{}", h.kind);
        assert_eq!(del.relations_closed, 1);
        assert_eq!(del.observations_closed, 1);
        let mut touched = vec![e1, e2, e3];
        touched.sort();
        assert_eq!(del.touched_entities, touched);

        let row = store.document(ns, doc).await.unwrap().unwrap();
        assert_eq!(row.deleted_at, Some(del.deleted_at));
        assert_eq!(row.current_version_id, None);
        assert_eq!(
            rows(
                &h,
                &format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM document_versions
                      WHERE document_id = '{doc}' AND deleted_at IS NOT NULL"
                )
            )
            .await,
            2
        );
        assert!(!is_current(store, ns, c1).await && !is_current(store, ns, c2).await);
        assert!(is_current(store, ns, c4).await);
        assert_eq!(
            rows(
                &h,
                "SELECT CAST(COUNT(*) AS TEXT) FROM claim_currency_events
                  WHERE reason = 'document_deleted' AND NOT is_current"
            )
            .await,
            2
        );
        assert_eq!(
            fact_state(store, ns, f1).await,
            (
                Some(del.deleted_at),
                Some("retracted_source_removal".into())
            )
        );
        assert_eq!(fact_state(store, ns, f2).await, (None, None));
        assert_eq!(
            fact_state(store, ns, f3).await.1.as_deref(),
            Some("retracted_source_removal")
        );
        assert_eq!(
            fact_state(store, ns, f4).await.1.as_deref(),
            Some("invalidated")
        );
        assert_eq!(fact_state(store, ns, f5).await, (None, None));
        let ev = store.fact_events(ns, f1).await.unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event, "closed");
        assert_eq!(ev[0].reason, "retracted_source_removal");
        assert_eq!(
            ev[0].detail,
            serde_json::json!({ "document_id": doc.to_string() })
        );
        assert_eq!(ev[0].created_at, del.deleted_at);
        assert!(store.fact_events(ns, f2).await.unwrap().is_empty());
        let deletions = format!(
            "SELECT CAST(claims_retired AS TEXT) || ' ' || CAST(relations_closed AS TEXT)
                    || ' ' || CAST(observations_closed AS TEXT)
               FROM document_deletions WHERE document_id = '{doc}' ORDER BY deleted_at"
        );
        assert_eq!(h.query_texts(&deletions).await, vec!["2 1 1".to_string()]);

        // A repeat that changes nothing.
        assert_eq!(
            store.delete_document(ns, doc, at(20)).await.unwrap(),
            DeletionOutcome::AlreadyDeleted
        );
        assert_eq!(h.query_texts(&deletions).await.len(), 1);
        // Work that landed after the tombstone (a claim made current behind the
        // deletion's back): a repeat retires it, under the first tombstone's instant.
        h.execute_sql(&format!(
            "UPDATE claims SET is_current = (1 = 1) WHERE id = '{c3}'"
        ))
        .await;
        assert!(is_current(store, ns, c3).await);
        let DeletionOutcome::Deleted(again) = store.delete_document(ns, doc, at(30)).await.unwrap()
        else {
            panic!("expected a finishing episode");
        };
        assert_eq!(again.deleted_at, del.deleted_at);
        assert_eq!(again.claims_retired, 1);
        assert_eq!((again.relations_closed, again.observations_closed), (0, 0));
        assert!(again.touched_entities.is_empty());
        assert!(!is_current(store, ns, c3).await);
        assert_eq!(h.query_texts(&deletions).await.len(), 2);
        // Another namespace does not see the lineage.
        let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
        assert_eq!(
            store.delete_document(ns2, other, at(40)).await.unwrap(),
            DeletionOutcome::NotFound
        );
        assert_eq!(
            store.document(ns, other).await.unwrap().unwrap().deleted_at,
            None
        );
    }
}

#[tokio::test]
async fn retract_claim() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let doc = lineage(store, ns, "d", at(0)).await;
        let c1 = claim(store, ns, doc, "one", true, at(0)).await;
        let c2 = claim(store, ns, doc, "two", true, at(0)).await;
        let (e1, e2, e3) = entities(store, ns).await;
        let f1 = fact(store, ns, e1, Some(e2), &[(c1, Stance::Support)]).await;
        let f2 = fact(
            store,
            ns,
            e3,
            None,
            &[(c1, Stance::Support), (c2, Stance::Support)],
        )
        .await;
        let f3 = fact(
            store,
            ns,
            e3,
            None,
            &[(c1, Stance::Contradict), (c2, Stance::Support)],
        )
        .await;
        let all = [f1, f2, f3];

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
        assert_eq!(r.facts_recounted, 3, "{}", h.kind);
        assert_eq!((r.relations_closed, r.observations_closed), (1, 0));
        let mut touched = vec![e1, e2];
        touched.sort();
        assert_eq!(r.touched_entities, touched);
        assert!(!is_current(store, ns, c1).await);
        assert!(is_current(store, ns, c2).await);
        assert_eq!(
            rows(
                &h,
                &format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM claim_currency_events
                      WHERE claim_id = '{c1}' AND reason = 'retracted'"
                )
            )
            .await,
            1
        );
        assert_eq!(
            fact_state(store, ns, f1).await,
            (Some(r.retracted_at), Some("retracted_claim".into()))
        );
        assert_eq!(fact_state(store, ns, f2).await, (None, None));
        assert_eq!(fact_state(store, ns, f3).await, (None, None));
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
        let written = events(store, ns, &all).await;
        let replayed = store
            .retract_claim(ns, c1, "wrong", Some(&req), at(9))
            .await
            .unwrap();
        let mut public = r.clone();
        public.touched_entities = vec![];
        assert_eq!(replayed, public);
        assert_eq!(events(store, ns, &all).await, written);
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
        assert!(is_current(store, ns, c2).await);
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
        assert_eq!(events(store, ns, &all).await, written);
        assert_eq!(
            rows(&h, "SELECT CAST(COUNT(*) AS TEXT) FROM lifecycle_requests").await,
            2
        );
        assert_eq!(
            h.query_texts(&format!(
                "SELECT request_id FROM claim_retractions WHERE claim_id = '{c1}'"
            ))
            .await,
            vec!["r1".to_string()]
        );

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
        let c3 = claim(store, ns, doc, "three", false, at(0)).await;
        let r3 = store
            .retract_claim(ns, c3, "old", None, at(21))
            .await
            .unwrap();
        assert!(!r3.was_current);
        assert_eq!(
            rows(
                &h,
                &format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM claim_currency_events WHERE claim_id = '{c3}'"
                )
            )
            .await,
            0
        );
    }
}

#[tokio::test]
async fn invalidate_fact() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let err = store
            .invalidate_fact(ns, FactId::new(), "x", None, None, at(1))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotFound);
        let (e1, e2, _) = entities(store, ns).await;
        let f1 = fact(store, ns, e1, Some(e2), &[]).await;
        let f2 = fact(store, ns, e2, None, &[]).await;

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
        assert_eq!(inv.touched_entities, vec![e1, e2], "{}", h.kind);
        assert_eq!(
            fact_state(store, ns, f1).await,
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
        assert_eq!(fact_state(store, ns, f2).await, (None, None));
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
            rows(&h, "SELECT CAST(COUNT(*) AS TEXT) FROM lifecycle_requests").await,
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
    }
}

/// A revision `revision` of note `prefs` (text digest `digest`) admitted as
/// `admission`, remembered at `at(0)` under request `init-{revision}`.
async fn revision(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    (revision, digest): (&str, &str),
    admission: Admission,
) -> (DocumentId, VersionId) {
    let mut nv = new_version(ns, "prefs", revision.as_bytes(), at(0));
    nv.source_kind = "note".into();
    nv.admission = admission;
    nv.note = Some(NewNote {
        source_key: "prefs".into(),
        source_revision: revision.into(),
        content_digest: digest.into(),
        request_digest: sha256_hex(revision.as_bytes()),
        request_id: format!("init-{revision}"),
        metadata: serde_json::json!({ "rev": revision }),
    });
    let (doc, version, _) = created(&store.create_version(nv).await.unwrap());
    (doc, version)
}

/// The admission recorded on the version itself.
async fn admission(h: &rememberstack_conformance::Harness, v: VersionId) -> String {
    h.query_texts(&format!(
        "SELECT admission FROM document_versions WHERE id = '{v}'"
    ))
    .await
    .remove(0)
}

async fn current_version(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    doc: DocumentId,
) -> Option<VersionId> {
    store
        .document(ns, doc)
        .await
        .unwrap()
        .unwrap()
        .current_version_id
}

#[tokio::test]
async fn notes() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        // v1 (promoted) serves the lineage, with a current claim; v2 and v3 are candidates.
        let (doc, v1) = revision(store, ns, ("r1", "t1"), Admission::Promoted).await;
        let k = chunk(0, 0, "r1");
        let k_id = k.id;
        prepare_and_chunk(store, ns, v1, "prefs", &[SectionRole::Body], vec![k], at(0)).await;
        let (_, v2) = revision(store, ns, ("r2", "t2"), Admission::Candidate).await;
        let (_, v3) = revision(store, ns, ("r3", "t3"), Admission::Candidate).await;
        assert_eq!(current_version(store, ns, doc).await, Some(v1));
        let c_v1 = claim(store, ns, (doc, v1, k_id), "a claim", true, at(0)).await;

        // Lookup: unknown, then the revision, then the request.
        assert_eq!(
            store.note_lookup(ns, "q1", "prefs", "r9").await.unwrap(),
            NoteLookup::New
        );
        let NoteLookup::Revision(n1) = store.note_lookup(ns, "q1", "prefs", "r1").await.unwrap()
        else {
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
        assert_eq!(err.code(), ErrorCode::Conflict, "{}", h.kind);
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
            store
                .list_notes(ns, 0, 10)
                .await
                .unwrap()
                .iter()
                .filter(|n| n.source_revision == "r1")
                .count(),
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
        assert_eq!(admission(&h, v2).await, "promoted");
        let n1b = store.note(ns, v1).await.unwrap().unwrap();
        assert_eq!(
            (n1b.lifecycle, n1b.lifecycle_version),
            (Admission::Archived, 2)
        );
        assert_eq!(admission(&h, v1).await, "archived");
        assert_eq!(
            current_version(store, ns, doc).await,
            Some(v2),
            "{}",
            h.kind
        );
        assert!(!is_current(store, ns, c_v1).await);
        assert_eq!(
            rows(
                &h,
                "SELECT CAST(COUNT(*) AS TEXT) FROM claim_currency_events
                  WHERE reason = 'note_archived'"
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
        assert_eq!(admission(&h, v3).await, "revoked");
        assert_eq!(current_version(store, ns, doc).await, Some(v2));
        let err = store
            .transition_note(ns, v3, 2, Admission::Promoted, at(6))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);

        // Archive v2: the lineage serves nothing; its current claims retire.
        let c_v2 = claim(store, ns, (doc, v2, ChunkId::new()), "b claim", true, at(6)).await;
        assert!(is_current(store, ns, c_v2).await, "{}", h.kind);
        let n2b = store
            .transition_note(ns, v2, 2, Admission::Archived, at(7))
            .await
            .unwrap();
        assert_eq!(
            (n2b.lifecycle, n2b.lifecycle_version),
            (Admission::Archived, 3)
        );
        assert_eq!(current_version(store, ns, doc).await, None);
        assert!(!is_current(store, ns, c_v2).await);
    }
}
