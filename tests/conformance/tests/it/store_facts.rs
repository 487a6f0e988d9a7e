//! The facts area of the store contract on every store: the predicate registry,
//! normalization commits, staged assertions, applying them (once), fact reads and
//! filters, evidence counts, fact search and label vectors. What only PostgreSQL
//! shows (concurrent applies of one assertion, the planner walking the HNSW index)
//! stays in its own tests.

use crate::store_fixtures::{
    claim, fact as fact_of, identity, lease, lineage, mint, new_fact_commit, observation,
    put_vectors, set_current, stage,
};
use rememberstack::ErrorCode;
use rememberstack::store::claims::{Precision, ValidityKind};
use rememberstack::store::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, FactFilter, FactKind, FactRecord, Stance, Window,
};
use rememberstack::store::ledger::{NewWork, Stage, WorkStatus};
use rememberstack::store::traits::*;
use rememberstack::store::{Lease, VectorCoverage};
use rememberstack::{
    AdjudicationId, AssertionId, ClaimId, DocumentId, EntityId, FactId, NamespaceId, Timestamp,
    VersionId,
};
use rememberstack_conformance::stores;

fn t(s: &str) -> Timestamp {
    rememberstack::time::parse_rfc3339(s).expect("timestamp")
}

async fn open(store: &dyn MemoryStore) -> NamespaceId {
    store
        .ensure_namespace("test", t("2024-01-01T00:00:00Z"))
        .await
        .unwrap()
        .id
}

async fn entity(store: &dyn MemoryStore, ns: NamespaceId, name: &str) -> EntityId {
    mint(store, ns, name, t("2024-01-02T00:00:00Z")).await
}

async fn normalize_lease(store: &dyn MemoryStore, ns: NamespaceId) -> Lease {
    lease(store, ns, VersionId::new(), Stage::Normalize, "worker").await
}

async fn status(store: &dyn MemoryStore, lease: &Lease) -> WorkStatus {
    store
        .work_item(lease.work_id)
        .await
        .unwrap()
        .unwrap()
        .status
}

fn window(from: Option<&str>, until: Option<&str>) -> Window {
    Window {
        valid_from: from.map(t),
        valid_until: until.map(t),
        precision: if from.is_some() || until.is_some() {
            Precision::Day
        } else {
            Precision::Unknown
        },
    }
}

fn assertion(
    ns: NamespaceId,
    claim: ClaimId,
    version: VersionId,
    subject: EntityId,
    statement: &str,
    ordinal: u32,
) -> Assertion {
    observation(
        ns,
        claim,
        version,
        subject,
        statement,
        ordinal,
        t("2024-01-01T00:00:00Z"),
    )
}

async fn stage_all(store: &dyn MemoryStore, ns: NamespaceId, claim: ClaimId, a: Vec<Assertion>) {
    stage(store, ns, claim, a, t("2024-03-01T00:01:00Z")).await;
}

fn commit_for(
    ns: NamespaceId,
    a: &Assertion,
    w: Window,
    evidence: &[(ClaimId, Stance)],
) -> (FactId, ApplyCommit) {
    new_fact_commit(ns, a, w, evidence, t("2024-03-02T00:00:00Z"))
}

/// Stage and apply one observation of `subject` as a new fact.
async fn fact(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    subject: EntityId,
    statement: &str,
    w: Window,
    evidence: &[(ClaimId, Stance)],
) -> FactId {
    fact_of(
        store,
        ns,
        subject,
        None,
        statement,
        w,
        evidence,
        t("2024-03-02T00:00:00Z"),
    )
    .await
}

/// A claim of its own lineage `source_ref`, current or not.
async fn claim_in(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    lineage: (DocumentId, VersionId, rememberstack::ChunkId),
    current: bool,
) -> ClaimId {
    claim(
        store,
        ns,
        lineage,
        "a claim",
        current,
        t("2024-01-01T00:00:00Z"),
    )
    .await
}

fn all_facts(ns: NamespaceId) -> FactFilter {
    FactFilter {
        namespace_id: ns,
        entities: vec![],
        at: None,
        history: false,
        overlap: None,
        documents: None,
        group: None,
        unsupported: true,
    }
}

fn ids(v: Vec<FactRecord>) -> Vec<FactId> {
    v.into_iter().map(|f| f.fact_id).collect()
}

#[tokio::test]
async fn facts_normalization_stages_assertions_and_counts_predicates() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let ada = entity(store, ns, "Ada Lovelace").await;
        let engine = entity(store, ns, "Analytical Engine").await;
        let core = vec![
            (
                "works_on".to_string(),
                "Works on.".to_string(),
                vec!["builds".to_string()],
            ),
            ("knows".to_string(), "Knows.".to_string(), vec![]),
        ];
        store.bootstrap_predicates(ns, &core).await.unwrap();
        store.bootstrap_predicates(ns, &core).await.unwrap();

        let claim = ClaimId::new();
        let version = VersionId::new();
        let mut works = assertion(
            ns,
            claim,
            version,
            ada,
            "Ada Lovelace works on the Analytical Engine.",
            0,
        );
        works.kind = FactKind::Relation;
        works.predicate = Some("works_on".into());
        works.object = Some(engine);
        let mut admires = works.clone();
        admires.assertion_id = AssertionId::new();
        admires.predicate = Some("other:admires".into());
        admires.statement = "Ada Lovelace admires the Analytical Engine.".into();
        admires.ordinal = 1;
        let mut obs = assertion(
            ns,
            claim,
            version,
            engine,
            "The Analytical Engine is mechanical.",
            2,
        );
        obs.window = window(Some("1837-01-01T00:00:00Z"), Some("1871-01-01T00:00:00Z"));
        let assertions = vec![works.clone(), admires.clone(), obs.clone()];

        let l = normalize_lease(store, ns).await;
        let output = serde_json::json!({"relations": 2, "nested": {"b": [1, 2], "a": null}});
        let follow = NewWork::now(
            ns,
            Stage::Adjudicate,
            uuid::Uuid::new_v4(),
            version,
            "adj-v1",
            t("2024-03-01T00:01:00Z"),
        );
        store
            .commit_normalization(
                &l,
                claim,
                "normalizer-test",
                output.clone(),
                assertions.clone(),
                vec![follow.clone()],
                t("2024-03-01T00:01:00Z"),
            )
            .await
            .unwrap();
        assert_eq!(status(store, &l).await, WorkStatus::Done);
        let adjudications = || async {
            store
                .work_items(Some(ns), WorkStatus::Pending, 1_000)
                .await
                .unwrap()
                .into_iter()
                .filter(|w| w.stage == Stage::Adjudicate)
                .collect::<Vec<_>>()
        };
        let queued = adjudications().await;
        assert_eq!(queued.len(), 1);
        assert_eq!(
            (queued[0].target_id, queued[0].component_version.as_str()),
            (follow.target_id, "adj-v1")
        );

        // A replay under a new lease stages nothing twice and counts no use twice.
        let l2 = normalize_lease(store, ns).await;
        store
            .commit_normalization(
                &l2,
                claim,
                "normalizer-test",
                output.clone(),
                assertions.clone(),
                vec![follow],
                t("2024-03-01T00:01:30Z"),
            )
            .await
            .unwrap();
        assert_eq!(
            store
                .unapplied_assertions(ns, &[ada, engine])
                .await
                .unwrap()
                .len(),
            3,
            "{}",
            h.kind
        );
        assert_eq!(
            adjudications().await.len(),
            1,
            "follow-up work is idempotent"
        );

        let preds = store.predicates(ns).await.unwrap();
        assert_eq!(
            preds
                .iter()
                .map(|p| (p.name.as_str(), p.status.as_str(), p.uses))
                .collect::<Vec<_>>(),
            vec![
                ("works_on", "core", 1),
                ("knows", "core", 0),
                ("other:admires", "other", 1)
            ],
            "{}",
            h.kind
        );
        assert_eq!(preds[0].synonyms, vec!["builds".to_string()]);
        assert_eq!(preds[0].description, "Works on.");
        // Bootstrapping again keeps the use count; an `other:` value promoted to core
        // keeps its count too.
        let mut more = core.clone();
        more.insert(
            0,
            (
                "other:admires".to_string(),
                "Admires.".to_string(),
                vec!["adores".to_string()],
            ),
        );
        store.bootstrap_predicates(ns, &more).await.unwrap();
        let preds = store.predicates(ns).await.unwrap();
        assert_eq!(
            preds
                .iter()
                .map(|p| (p.name.as_str(), p.status.as_str(), p.uses))
                .collect::<Vec<_>>(),
            vec![
                ("other:admires", "core", 1),
                ("works_on", "core", 1),
                ("knows", "core", 0)
            ]
        );

        assert_eq!(
            store
                .normalization(ns, claim, "normalizer-test")
                .await
                .unwrap(),
            Some(output.clone())
        );
        assert_eq!(store.normalization(ns, claim, "other").await.unwrap(), None);
        // The lease is gone now.
        let lost = store
            .commit_normalization(
                &l,
                claim,
                "normalizer-test",
                serde_json::json!({"changed": true}),
                assertions.clone(),
                vec![],
                t("2024-03-01T00:02:00Z"),
            )
            .await
            .unwrap_err();
        assert_eq!(lost.code(), ErrorCode::LeaseLost);
        assert_eq!(
            store
                .normalization(ns, claim, "normalizer-test")
                .await
                .unwrap(),
            Some(output),
            "a refused commit writes nothing"
        );

        let pending = store
            .unapplied_assertions(ns, &[ada, engine])
            .await
            .unwrap();
        assert_eq!(
            pending,
            vec![admires.clone(), works.clone(), obs.clone()],
            "asserted_at, claim, statement, ordinal"
        );
        assert_eq!(
            store.unapplied_assertions(ns, &[engine]).await.unwrap(),
            vec![obs.clone()]
        );
        assert!(
            store
                .unapplied_assertions(ns, &[])
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.pending_subjects(ns, version).await.unwrap(),
            vec![ada, engine],
            "by first staging"
        );
        assert!(
            store
                .pending_subjects(ns, VersionId::new())
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn facts_apply_assertion_creates_a_fact_once() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let ada = entity(store, ns, "Ada Lovelace").await;
        let source = lineage(store, ns, "doc", t("2024-01-01T00:00:00Z")).await;
        let doc = source.0;
        let claim = claim_in(store, ns, source, true).await;
        let version = VersionId::new();
        let a = assertion(
            ns,
            claim,
            version,
            ada,
            "Ada Lovelace wrote the first program.",
            0,
        );
        stage_all(store, ns, claim, vec![a.clone()]).await;
        let (id, mut commit) = commit_for(
            ns,
            &a,
            window(Some("1843-01-01T00:00:00Z"), None),
            &[(claim, Stance::Support)],
        );
        let follow = NewWork::now(
            ns,
            Stage::Adjudicate,
            uuid::Uuid::new_v4(),
            version,
            "follow-v1",
            t("2024-03-02T00:00:00Z"),
        );
        commit.follow_up = vec![follow.clone()];
        assert!(
            store
                .apply_assertion(ns, commit.clone(), t("2024-03-02T00:00:00Z"))
                .await
                .unwrap()
        );
        assert!(
            !store
                .apply_assertion(ns, commit, t("2024-03-03T00:00:00Z"))
                .await
                .unwrap(),
            "{}",
            h.kind
        );
        assert!(
            store
                .unapplied_assertions(ns, &[ada])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .pending_subjects(ns, version)
                .await
                .unwrap()
                .is_empty()
        );
        let follow_ups = store
            .work_items(Some(ns), WorkStatus::Pending, 1_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|w| w.component_version == "follow-v1")
            .count();
        assert_eq!(follow_ups, 1);
        // The statement is searchable.
        let hits = store
            .search_facts_lexical(&all_facts(ns), &["program".into()], 5)
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![id]);

        let facts = store.facts(ns, &[FactId::new(), id]).await.unwrap();
        assert_eq!(facts.len(), 1);
        let f = &facts[0];
        assert_eq!(f.subject_name, "Ada Lovelace");
        assert_eq!(f.object_name, None);
        assert_eq!(f.statement, a.statement);
        assert_eq!(f.kind, FactKind::Observation);
        assert_eq!(f.window.valid_from, Some(t("1843-01-01T00:00:00Z")));
        assert_eq!(f.window.precision, Precision::Day);
        assert_eq!(f.validity_kind, ValidityKind::State);
        assert_eq!(f.recorded_at, t("2024-03-02T00:00:00Z"));
        assert_eq!(f.embedding_key, format!("key-{id}"));
        assert_eq!((f.evidence_count, f.contradict_count), (1, 0));
        let evidence = store.fact_evidence(ns, id).await.unwrap();
        assert_eq!(evidence.len(), 1);
        assert_eq!(
            (
                evidence[0].claim_id,
                evidence[0].stance,
                evidence[0].document_id,
                evidence[0].is_current,
                evidence[0].added_at
            ),
            (claim, Stance::Support, doc, true, t("2024-03-02T00:00:00Z"))
        );
        let transcripts = store.adjudications(ns, id).await.unwrap();
        assert_eq!(transcripts.len(), 1);
        assert_eq!(transcripts[0].verdict, "new");
        assert_eq!(
            (transcripts[0].assertion_id, transcripts[0].result_fact),
            (a.assertion_id, id)
        );
        assert_eq!(transcripts[0].input, serde_json::json!({"rule": "new"}));
        assert_eq!(transcripts[0].created_at, t("2024-03-02T00:00:00Z"));

        // Supersession, a window revision and a contradiction group in one apply.
        let b = assertion(
            ns,
            claim,
            VersionId::new(),
            ada,
            "Ada Lovelace wrote notes on the engine.",
            1,
        );
        stage_all(store, ns, claim, vec![b.clone()]).await;
        let (successor, mut commit) = commit_for(ns, &b, Window::unknown(), &[]);
        let group = uuid::Uuid::new_v4();
        commit.windows = vec![(
            id,
            window(Some("1843-01-01T00:00:00Z"), Some("1844-01-01T00:00:00Z")),
        )];
        commit.contradiction = Some((group, vec![id, successor]));
        commit.superseded = Some((id, successor));
        commit.transcript.verdict = "supersede".into();
        commit.transcript.target_fact = Some(id);
        commit.transcript.candidates = vec![id];
        commit.transcript.model = Some("model-x".into());
        assert!(
            store
                .apply_assertion(ns, commit, t("2024-03-04T00:00:00Z"))
                .await
                .unwrap()
        );
        let got = store.facts(ns, &[successor, id]).await.unwrap();
        assert_eq!(ids(got.clone()), vec![successor, id], "in the order asked");
        let old = &got[1];
        assert_eq!(old.superseded_by, Some(successor));
        assert_eq!(old.window.valid_until, Some(t("1844-01-01T00:00:00Z")));
        assert_eq!(old.contradiction_group, Some(group));
        assert_eq!(old.updated_at, t("2024-03-04T00:00:00Z"));
        assert_eq!(got[0].contradiction_group, Some(group));
        let transcripts = store.adjudications(ns, id).await.unwrap();
        assert_eq!(
            transcripts
                .iter()
                .map(|t| t.verdict.as_str())
                .collect::<Vec<_>>(),
            vec!["new", "supersede"]
        );
        assert_eq!(transcripts[1].candidates, vec![id]);
        assert_eq!(transcripts[1].model.as_deref(), Some("model-x"));
        assert_eq!(store.adjudications(ns, successor).await.unwrap().len(), 1);
        // The current view drops the superseded fact; the group filter finds both.
        assert_eq!(
            ids(store.list_facts(&all_facts(ns), 10).await.unwrap()),
            vec![successor]
        );
        let grouped = FactFilter {
            group: Some(group),
            history: true,
            ..all_facts(ns)
        };
        assert_eq!(
            ids(store.list_facts(&grouped, 10).await.unwrap()),
            vec![id, successor]
        );

        let missing = assertion(ns, claim, VersionId::new(), ada, "never staged", 0);
        let (_, commit) = commit_for(ns, &missing, Window::unknown(), &[]);
        assert_eq!(
            store
                .apply_assertion(ns, commit, t("2024-03-05T00:00:00Z"))
                .await
                .unwrap_err()
                .code(),
            ErrorCode::NotFound
        );
        // Another namespace does not see this one's staged assertions.
        let other = store
            .ensure_namespace("other", t("2024-01-01T00:00:00Z"))
            .await
            .unwrap()
            .id;
        let (_, commit) = commit_for(other, &b, Window::unknown(), &[]);
        assert_eq!(
            store
                .apply_assertion(other, commit, t("2024-03-05T00:00:00Z"))
                .await
                .unwrap_err()
                .code(),
            ErrorCode::NotFound
        );
        assert!(store.facts(other, &[id]).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn facts_evidence_counts_distinct_current_lineages() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let ada = entity(store, ns, "Ada Lovelace").await;
        let now = t("2024-01-01T00:00:00Z");
        let l1 = lineage(store, ns, "one", now).await;
        let l2 = lineage(store, ns, "two", now).await;
        let l3 = lineage(store, ns, "three", now).await;
        let (doc1, doc2, doc3) = (l1.0, l2.0, l3.0);
        let c1 = claim_in(store, ns, l1, true).await;
        let c2 = claim_in(store, ns, l1, true).await;
        let c3 = claim_in(store, ns, l2, false).await;
        let c4 = claim_in(store, ns, l3, true).await;
        let id = fact(
            store,
            ns,
            ada,
            "Ada Lovelace was a mathematician.",
            Window::unknown(),
            &[
                (c1, Stance::Support),
                (c2, Stance::Support),
                (c3, Stance::Support),
                (c4, Stance::Contradict),
            ],
        )
        .await;
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!(
            (f.evidence_count, f.contradict_count),
            (1, 1),
            "{}: two claims of one lineage count once; retired testimony not at all",
            h.kind
        );
        set_current(store, ns, doc2, &[c3], now).await;
        set_current(store, ns, doc3, &[], now).await;
        let f = &store.facts(ns, &[id]).await.unwrap()[0];
        assert_eq!((f.evidence_count, f.contradict_count), (2, 0));
        let evidence = store.fact_evidence(ns, id).await.unwrap();
        assert_eq!(
            evidence
                .iter()
                .map(|e| (e.claim_id, e.stance, e.is_current))
                .collect::<Vec<_>>(),
            vec![
                (c1, Stance::Support, true),
                (c2, Stance::Support, true),
                (c3, Stance::Support, true),
                (c4, Stance::Contradict, false)
            ],
            "oldest first, then in insertion order"
        );

        // The support rule and the documents scope, end to end.
        let supported = FactFilter {
            unsupported: false,
            ..all_facts(ns)
        };
        assert_eq!(
            ids(store.list_facts(&supported, 10).await.unwrap()),
            vec![id]
        );
        let in_doc = |docs: Vec<DocumentId>| FactFilter {
            documents: Some(docs),
            ..supported.clone()
        };
        assert_eq!(
            ids(store.list_facts(&in_doc(vec![doc2]), 10).await.unwrap()),
            vec![id]
        );
        // doc3 only contradicts; an unknown document scopes nothing in.
        assert!(
            store
                .list_facts(&in_doc(vec![doc3, DocumentId::new()]), 10)
                .await
                .unwrap()
                .is_empty()
        );
        set_current(store, ns, doc1, &[], now).await;
        set_current(store, ns, doc2, &[], now).await;
        assert!(store.list_facts(&supported, 10).await.unwrap().is_empty());
        assert!(
            store
                .list_fact_keys(&supported, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            ids(store.list_facts(&all_facts(ns), 10).await.unwrap()),
            vec![id],
            "`unsupported` admits facts without current support"
        );
        assert!(
            store
                .fact_evidence(ns, FactId::new())
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn facts_list_facts_honours_at_history_overlap_and_entities() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let beta = entity(store, ns, "Beta").await;
        let alpha = entity(store, ns, "Alpha").await;
        let b1 = fact(
            store,
            ns,
            beta,
            "Beta held office.",
            window(Some("2020-01-01T00:00:00Z"), Some("2022-01-01T00:00:00Z")),
            &[],
        )
        .await;
        let b2 = fact(
            store,
            ns,
            beta,
            "Beta leads.",
            window(Some("2022-01-01T00:00:00Z"), None),
            &[],
        )
        .await;
        let b3 = fact(store, ns, beta, "Beta is tall.", Window::unknown(), &[]).await;
        let a1 = fact(store, ns, alpha, "Alpha exists.", Window::unknown(), &[]).await;
        // b4 is superseded by b2.
        let claim = ClaimId::new();
        let s = assertion(ns, claim, VersionId::new(), beta, "Beta led once.", 0);
        stage_all(store, ns, claim, vec![s.clone()]).await;
        let (b4, mut commit) = commit_for(ns, &s, Window::unknown(), &[]);
        commit.superseded = Some((b4, b2));
        store
            .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
            .await
            .unwrap();
        // A relation of alpha towards beta: listed for either end.
        let r = ClaimId::new();
        let mut rel = assertion(ns, r, VersionId::new(), alpha, "Alpha knows Beta.", 0);
        rel.kind = FactKind::Relation;
        rel.predicate = Some("knows".into());
        rel.object = Some(beta);
        stage_all(store, ns, r, vec![rel.clone()]).await;
        let (r1, commit) = commit_for(ns, &rel, Window::unknown(), &[]);
        store
            .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
            .await
            .unwrap();
        // An invalidated fact only shows in history.
        let b5 = fact(store, ns, beta, "Beta was wrong.", Window::unknown(), &[]).await;
        store
            .invalidate_fact(ns, b5, "wrong", None, None, t("2024-03-05T00:00:00Z"))
            .await
            .unwrap();

        let filter = |entities: Vec<EntityId>, at: Option<&str>, history: bool| FactFilter {
            namespace_id: ns,
            entities,
            at: at.map(t),
            history,
            overlap: None,
            documents: None,
            group: None,
            unsupported: true,
        };
        assert_eq!(
            ids(store
                .list_facts(&filter(vec![], None, false), 100)
                .await
                .unwrap()),
            vec![a1, r1, b1, b2, b3],
            "{}",
            h.kind
        );
        let rel_record = &store
            .list_facts(&filter(vec![], None, false), 100)
            .await
            .unwrap()[1];
        assert_eq!(rel_record.object_name.as_deref(), Some("Beta"));
        assert_eq!(rel_record.predicate.as_deref(), Some("knows"));
        assert_eq!(
            ids(store
                .list_facts(
                    &filter(vec![beta], Some("2021-06-01T00:00:00Z"), false),
                    100
                )
                .await
                .unwrap()),
            // As of an instant, a superseded fact counts when its window holds.
            vec![r1, b1, b3, b4]
        );
        // `until` is exclusive, `from` inclusive.
        assert_eq!(
            ids(store
                .list_facts(
                    &filter(vec![beta], Some("2022-01-01T00:00:00Z"), false),
                    100
                )
                .await
                .unwrap()),
            vec![r1, b2, b3, b4]
        );
        assert_eq!(
            ids(store
                .list_facts(&filter(vec![beta], Some("2021-06-01T00:00:00Z"), true), 100)
                .await
                .unwrap()),
            vec![r1, b1, b2, b3, b4, b5]
        );
        assert_eq!(
            ids(store
                .list_facts(&filter(vec![], None, true), 2)
                .await
                .unwrap()),
            vec![a1, r1]
        );
        // Overlap with [2019, 2021): b1 (2020–2022) and the unknown windows; b2 starts
        // at 2022. [2022, ∞) excludes b1, whose window ends there.
        let overlap = |from: Option<&str>, until: Option<&str>| FactFilter {
            entities: vec![beta],
            overlap: Some((from.map(t), until.map(t))),
            ..filter(vec![], None, false)
        };
        assert_eq!(
            ids(store
                .list_facts(
                    &overlap(Some("2019-01-01T00:00:00Z"), Some("2021-01-01T00:00:00Z")),
                    100
                )
                .await
                .unwrap()),
            vec![r1, b1, b3, b4]
        );
        assert_eq!(
            ids(store
                .list_facts(&overlap(Some("2022-01-01T00:00:00Z"), None), 100)
                .await
                .unwrap()),
            vec![r1, b2, b3, b4]
        );
        assert_eq!(
            ids(store
                .list_facts(&overlap(None, Some("2020-01-01T00:00:00Z")), 100)
                .await
                .unwrap()),
            vec![r1, b3, b4]
        );
        // Keys admit exactly what the listing admits, ordered by statement then id.
        for f in [
            filter(vec![], None, false),
            filter(vec![beta], Some("2021-06-01T00:00:00Z"), false),
            filter(vec![beta], None, true),
            filter(vec![alpha], None, false),
        ] {
            let records = store.list_facts(&f, 100).await.unwrap();
            let mut expected: Vec<(String, FactId)> = records
                .iter()
                .map(|r| (r.statement.clone(), r.fact_id))
                .collect();
            expected.sort();
            let keys = store.list_fact_keys(&f, 100).await.unwrap();
            let got: Vec<(String, FactId)> = keys
                .iter()
                .map(|k| (k.statement.clone(), k.fact_id))
                .collect();
            assert_eq!(got, expected);
            for (k, r) in keys
                .iter()
                .map(|k| (k, records.iter().find(|r| r.fact_id == k.fact_id).unwrap()))
            {
                assert_eq!((k.subject, k.object), (r.subject, r.object));
            }
        }
        assert_eq!(
            store
                .list_fact_keys(&filter(vec![], None, false), 2)
                .await
                .unwrap()
                .iter()
                .map(|k| k.fact_id)
                .collect::<Vec<_>>(),
            vec![a1, r1],
            "`Alpha exists.` < `Alpha knows Beta.` bytewise"
        );
        // The coverage counts live facts (not invalidated, not superseded).
        let (generation, other) = (identity("gen", 2), identity("other", 2));
        let key = generation.generation();
        assert_eq!(
            store.fact_vector_coverage(ns, &key).await.unwrap(),
            VectorCoverage {
                chunks: 5,
                missing: 5
            }
        );
        let at = t("2024-01-01T00:00:00Z");
        put_vectors(
            store,
            ns,
            &generation,
            vec![
                (format!("key-{b1}"), vec![1.0, 0.0]),
                (format!("key-{b4}"), vec![1.0, 0.0]),
            ],
            at,
        )
        .await;
        put_vectors(
            store,
            ns,
            &other,
            vec![(format!("key-{b2}"), vec![1.0, 0.0])],
            at,
        )
        .await;
        assert_eq!(
            store.fact_vector_coverage(ns, &key).await.unwrap(),
            VectorCoverage {
                chunks: 5,
                missing: 4
            }
        );
    }
}

#[tokio::test]
async fn facts_search_ranks_eligible_facts() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let filter = all_facts(ns);
        assert!(
            store
                .search_facts_lexical(&filter, &["engine".into()], 5)
                .await
                .unwrap()
                .is_empty()
        );
        let ada = entity(store, ns, "Ada Lovelace").await;
        let f1 = fact(
            store,
            ns,
            ada,
            "Ada designed the engine program.",
            Window::unknown(),
            &[],
        )
        .await;
        let f2 = fact(store, ns, ada, "Ada liked poetry.", Window::unknown(), &[]).await;
        let f3 = fact(
            store,
            ns,
            ada,
            "Engines and engines: the engine of poetry.",
            Window::unknown(),
            &[],
        )
        .await;
        // Query syntax in a term is only text; stemming finds `engines` for `engine`.
        let hits = store
            .search_facts_lexical(
                &filter,
                &["engine".into(), "\"quoted".into(), "a|b&!".into()],
                5,
            )
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            vec![f3, f1],
            "{}: more occurrences rank higher",
            h.kind
        );
        assert!(hits[1].1 > 0.0 && hits[0].1 > hits[1].1);
        let hits = store
            .search_facts_lexical(&filter, &["poetry".into(), "program".into()], 5)
            .await
            .unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(
            store
                .search_facts_lexical(&filter, &["poetry".into(), "program".into()], 1)
                .await
                .unwrap()
                .len(),
            1
        );
        assert!(
            store
                .search_facts_lexical(&filter, &["'&|".into()], 5)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .search_facts_lexical(&filter, &["engine".into()], 0)
                .await
                .unwrap()
                .is_empty()
        );
        // A phrase term matches adjacent words only.
        let hits = store
            .search_facts_lexical(&filter, &["liked poetry".into()], 5)
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![f2]);
        // An ineligible (superseded) fact is not found: an apply that creates no
        // fact marks f3 superseded by f1.
        let claim = ClaimId::new();
        let x = assertion(ns, claim, VersionId::new(), ada, "Ada again and again.", 0);
        stage_all(store, ns, claim, vec![x.clone()]).await;
        let supersede = ApplyCommit {
            follow_up: vec![],
            assertion_id: x.assertion_id,
            new_fact: None,
            evidence: vec![],
            windows: vec![],
            contradiction: None,
            superseded: Some((f3, f1)),
            links: vec![],
            transcript: AdjudicationRecord {
                adjudication_id: AdjudicationId::new(),
                namespace_id: ns,
                assertion_id: x.assertion_id,
                claim_id: claim,
                verdict: "supersede".into(),
                target_fact: Some(f3),
                result_fact: f1,
                candidates: vec![f3],
                reason: "newer".into(),
                input: serde_json::json!({}),
                model: None,
                adjudicator_version: "adjudicator-test".into(),
                created_at: t("2024-03-02T00:00:00Z"),
            },
        };
        assert!(
            store
                .apply_assertion(ns, supersede, t("2024-03-02T00:00:00Z"))
                .await
                .unwrap()
        );
        assert_eq!(
            store.facts(ns, &[f3]).await.unwrap()[0].superseded_by,
            Some(f1)
        );
        let hits = store
            .search_facts_lexical(&filter, &["engine".into()], 5)
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![f1]);

        let at = t("2024-01-01T00:00:00Z");
        let generation = identity("gen", 2);
        put_vectors(
            store,
            ns,
            &generation,
            vec![
                (format!("key-{f1}"), vec![1.0f32, 0.0]),
                (format!("key-{f2}"), vec![0.6f32, 0.8]),
                (format!("key-{f3}"), vec![0.0f32, 1.0]),
            ],
            at,
        )
        .await;
        // Another dimension in another generation is never compared.
        put_vectors(
            store,
            ns,
            &identity("gen3", 3),
            vec![(format!("key-{f2}"), vec![0.0, 1.0, 0.0])],
            at,
        )
        .await;
        let gen_key = generation.generation();
        let hits = store
            .search_facts_semantic(&filter, &gen_key, &[0.0, 2.0], 5)
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            vec![f2, f1],
            "the superseded f3 is not eligible"
        );
        assert!((hits[0].1 - 0.8).abs() < crate::store_fixtures::HALF_PRECISION);
        assert!(hits[1].1.abs() < 1e-6);
        let history = FactFilter {
            history: true,
            ..filter.clone()
        };
        let hits = store
            .search_facts_semantic(&history, &gen_key, &[0.0, 1.0], 2)
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![f3, f2]);
        assert!((hits[0].1 - 1.0).abs() < 1e-6);
        assert!(
            store
                .search_facts_semantic(&filter, &gen_key, &[0.0, 1.0, 0.0, 0.0], 5)
                .await
                .unwrap()
                .is_empty(),
            "no vector of that dimension"
        );
        assert!(
            store
                .search_facts_semantic(&filter, &gen_key, &[], 5)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .search_facts_semantic(&filter, &gen_key, &[1.0, 0.0], 0)
                .await
                .unwrap()
                .is_empty()
        );
        // A zero query scores every candidate 0, ties by id.
        let hits = store
            .search_facts_semantic(&filter, &gen_key, &[0.0, 0.0], 5)
            .await
            .unwrap();
        let mut want = vec![f1, f2];
        want.sort_by_key(|f| f.to_string());
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), want);
        assert!(hits.iter().all(|h| h.1 == 0.0));
        // Equal vectors tie by id.
        let f4 = fact(store, ns, ada, "Ada again.", Window::unknown(), &[]).await;
        put_vectors(
            store,
            ns,
            &generation,
            vec![(format!("key-{f4}"), vec![0.6, 0.8])],
            at,
        )
        .await;
        let hits = store
            .search_facts_semantic(&filter, &gen_key, &[0.0, 1.0], 2)
            .await
            .unwrap();
        let mut want = vec![f2, f4];
        want.sort_by_key(|f| f.to_string());
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), want);

        let only_other = FactFilter {
            entities: vec![EntityId::new()],
            ..filter.clone()
        };
        assert!(
            store
                .search_facts_semantic(&only_other, &gen_key, &[0.0, 1.0], 5)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .search_facts_lexical(&only_other, &["engine".into()], 5)
                .await
                .unwrap()
                .is_empty()
        );
        // Another namespace's facts and vectors are invisible.
        let other = store
            .ensure_namespace("other", t("2024-01-01T00:00:00Z"))
            .await
            .unwrap()
            .id;
        assert!(
            store
                .search_facts_semantic(&all_facts(other), &gen_key, &[0.0, 1.0], 5)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .search_facts_lexical(&all_facts(other), &["engine".into()], 5)
                .await
                .unwrap()
                .is_empty()
        );

        let keys = vec![
            format!("key-{f2}"),
            "missing".to_string(),
            format!("key-{f1}"),
            format!("key-{f2}"),
        ];
        // As written, to half precision, in the order asked, each key once.
        let vectors = store.vectors(ns, &gen_key, &keys).await.unwrap();
        let want = [
            (keys[0].clone(), vec![0.6f32, 0.8]),
            (keys[2].clone(), vec![1.0f32, 0.0]),
        ];
        assert_eq!(vectors.len(), want.len(), "{vectors:?}");
        for ((key, got), (want_key, want)) in vectors.iter().zip(&want) {
            assert_eq!(key, want_key);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(want) {
                assert!(
                    f64::from((g - w).abs()) < crate::store_fixtures::HALF_PRECISION,
                    "{vectors:?}"
                );
            }
        }
        assert!(
            store
                .vectors(ns, "other-gen", &keys)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .vectors(other, &gen_key, &keys)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn facts_semantic_ties_at_the_last_place_go_by_id() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = open(store).await;
        let ada = entity(store, ns, "Ada Lovelace").await;
        let bob = entity(store, ns, "Bob").await;
        let at = t("2024-01-01T00:00:00Z");
        // PostgreSQL builds the generation's HNSW index with its first vectors: the
        // search must give the exact ranking with it.
        let generation = identity("gen", 3);
        let gen_key = generation.generation();
        let mut tied = Vec::new();
        for i in 0..6 {
            let f = fact(
                store,
                ns,
                ada,
                &format!("Ada fact {i}."),
                Window::unknown(),
                &[],
            )
            .await;
            put_vectors(
                store,
                ns,
                &generation,
                vec![(format!("key-{f}"), vec![0.0, 3.0, 4.0])],
                at,
            )
            .await;
            tied.push(f);
        }
        let best = fact(store, ns, ada, "Ada best.", Window::unknown(), &[]).await;
        put_vectors(
            store,
            ns,
            &generation,
            vec![(format!("key-{best}"), vec![0.0, 1.0, 0.0])],
            at,
        )
        .await;
        let far = fact(store, ns, bob, "Bob far.", Window::unknown(), &[]).await;
        put_vectors(
            store,
            ns,
            &generation,
            vec![(format!("key-{far}"), vec![1.0, 0.0, 0.0])],
            at,
        )
        .await;
        // Two facts sharing one label vector are two candidates.
        let twin_claim = ClaimId::new();
        let a = assertion(ns, twin_claim, VersionId::new(), bob, "Bob twin.", 0);
        stage_all(store, ns, twin_claim, vec![a.clone()]).await;
        let (twin, mut commit) = commit_for(ns, &a, Window::unknown(), &[]);
        if let Some(f) = commit.new_fact.as_mut() {
            f.embedding_key = format!("key-{far}");
        }
        assert!(
            store
                .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
                .await
                .unwrap()
        );

        tied.sort_by_key(|f| f.to_string());
        let hits = store
            .search_facts_semantic(&all_facts(ns), &gen_key, &[0.0, 1.0, 0.0], 3)
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            vec![best, tied[0], tied[1]],
            "{}: ties at the last place by id",
            h.kind
        );
        assert!((hits[0].1 - 1.0).abs() < 1e-6);
        let near = |s: f64| (s - 0.6).abs() < crate::store_fixtures::HALF_PRECISION;
        assert!(near(hits[1].1) && near(hits[2].1));
        // A filter that admits only the farthest candidates still fills the page.
        let bobs = FactFilter {
            entities: vec![bob],
            ..all_facts(ns)
        };
        let hits = store
            .search_facts_semantic(&bobs, &gen_key, &[0.0, 1.0, 0.0], 5)
            .await
            .unwrap();
        let mut want = vec![far, twin];
        want.sort_by_key(|f| f.to_string());
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), want);
        assert!(hits.iter().all(|h| h.1.abs() < 1e-6));
        // A generation name is data, whatever it holds.
        for model in ["it's", "back\\slash'; --"] {
            let odd = identity(model, 3);
            put_vectors(
                store,
                ns,
                &odd,
                vec![(format!("key-{best}"), vec![0.0, 0.0, 1.0])],
                at,
            )
            .await;
            let hits = store
                .search_facts_semantic(&all_facts(ns), &odd.generation(), &[0.0, 0.0, 1.0], 5)
                .await
                .unwrap();
            assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![best]);
        }
    }
}
