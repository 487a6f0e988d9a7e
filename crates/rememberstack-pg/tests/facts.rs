//! The facts area of the PostgreSQL store against a real server: the predicate
//! registry, normalization commits, staged assertions, applying them, fact reads,
//! filters, fact search and label vectors. Every test needs `DATABASE_URL`
//! (`scripts/pg-local.sh start` prints one) and is skipped, saying so, without it.
//! Each test works in a schema of its own, dropped at the end. Rows of areas other
//! than facts (entities, claims, leased work, vectors) are written with plain SQL.

use rememberstack_core::ErrorCode;
use rememberstack_core::claims::{Precision, ValidityKind};
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, FactFilter, FactKind, FactRecord, NewFact, Stance,
    Window,
};
use rememberstack_core::ids::{
    AdjudicationId, AssertionId, ChunkId, ClaimId, DocumentId, EntityId, FactId, NamespaceId,
    VersionId, WorkId,
};
use rememberstack_core::ledger::{NewWork, Stage};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{Lease, VectorCoverage};
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
    format!("rs_facts_{tag}_{}", uuid::Uuid::new_v4().simple())
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

fn t(s: &str) -> Timestamp {
    rememberstack_core::time::parse_rfc3339(s).expect("timestamp")
}

/// A store in a fresh schema with one namespace; `None` when skipped.
async fn open(test: &str) -> Option<(PgStore, NamespaceId)> {
    let url = database_url(test)?;
    let store = PgStore::connect_with(&url, config(&fresh_schema(test)))
        .await
        .unwrap();
    let ns = store
        .ensure_namespace("test", t("2024-01-01T00:00:00Z"))
        .await
        .unwrap()
        .id;
    Some((store, ns))
}

/// An entity row (the entities area is written elsewhere).
async fn mint(store: &PgStore, ns: NamespaceId, name: &str) -> EntityId {
    let id = EntityId::new();
    sqlx::query(
        "INSERT INTO entities (namespace_id, id, canonical_name, lemma, created_at)
         VALUES ($1, $2, $3, lower($3), $4)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(name)
    .bind(t("2024-01-02T00:00:00Z"))
    .execute(store.pool())
    .await
    .unwrap();
    id
}

/// A minimal claim row of lineage `doc`.
async fn insert_claim(store: &PgStore, ns: NamespaceId, doc: DocumentId, current: bool) -> ClaimId {
    let id = ClaimId::new();
    sqlx::query(
        "INSERT INTO claims (namespace_id, id, document_id, text, added_context_json,
             valid_precision, valid_kind, asserted_at, extractor_version, extraction_input_hash,
             origin_version_id, origin_chunk_id, embedding_key, claim_key, is_current, created_at)
         VALUES ($1, $2, $3, 'a claim', '[]'::jsonb, 'unknown', 'state', $4, 'x', 'h',
                 $5, $6, 'k', $2, $7, $4)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(doc.to_string())
    .bind(t("2024-01-01T00:00:00Z"))
    .bind(VersionId::new().to_string())
    .bind(ChunkId::new().to_string())
    .bind(current)
    .execute(store.pool())
    .await
    .unwrap();
    id
}

async fn set_current(store: &PgStore, claim: ClaimId, current: bool) {
    sqlx::query("UPDATE claims SET is_current = $1 WHERE id = $2")
        .bind(current)
        .bind(claim.to_string())
        .execute(store.pool())
        .await
        .unwrap();
}

/// A running work item of `stage` leased to `worker` (the ledger area is written
/// elsewhere).
async fn lease(store: &PgStore, ns: NamespaceId, stage: Stage) -> Lease {
    let work = WorkId::new();
    let now = t("2024-03-01T00:00:00Z").timestamp_millis();
    sqlx::query(
        "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id, stage,
             component_version, status, attempts, max_attempts, not_before, lease_owner,
             lease_expires_at, created_at, updated_at)
         VALUES ($1, $2, 'claim', $3, $4, $5, 'v1', 'running', 1, 3, $6, 'worker', $7, $6, $6)",
    )
    .bind(ns.to_string())
    .bind(work.to_string())
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(VersionId::new().to_string())
    .bind(stage.as_str())
    .bind(now)
    .bind(now + 600_000)
    .execute(store.pool())
    .await
    .unwrap();
    Lease {
        work_id: work,
        owner: "worker".into(),
    }
}

async fn work_status(store: &PgStore, work: WorkId) -> String {
    sqlx::query_scalar("SELECT status FROM processing_state WHERE id = $1")
        .bind(work.to_string())
        .fetch_one(store.pool())
        .await
        .unwrap()
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
    .bind(pgvector::Vector::from(v))
    .bind(t("2024-01-01T00:00:00Z"))
    .execute(store.pool())
    .await
    .unwrap();
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

fn observation(
    ns: NamespaceId,
    claim: ClaimId,
    version: VersionId,
    subject: EntityId,
    statement: &str,
    ordinal: u32,
) -> Assertion {
    Assertion {
        assertion_id: AssertionId::new(),
        namespace_id: ns,
        claim_id: claim,
        document_id: DocumentId::new(),
        version_id: version,
        kind: FactKind::Observation,
        subject,
        predicate: None,
        object: None,
        statement: statement.to_string(),
        window: Window::unknown(),
        validity_kind: ValidityKind::State,
        asserted_at: t("2024-01-01T00:00:00Z"),
        ordinal,
    }
}

/// Stage `assertions` through a fresh normalize lease.
async fn stage(store: &PgStore, ns: NamespaceId, claim: ClaimId, assertions: Vec<Assertion>) {
    let l = lease(store, ns, Stage::Normalize).await;
    store
        .commit_normalization(
            &l,
            claim,
            "normalizer-test",
            serde_json::json!({"entities": []}),
            assertions,
            vec![],
            t("2024-03-01T00:01:00Z"),
        )
        .await
        .unwrap();
}

/// The commit creating a new fact from `a`, with `evidence` claims supporting it.
fn new_fact_commit(
    ns: NamespaceId,
    a: &Assertion,
    w: Window,
    evidence: &[(ClaimId, Stance)],
) -> (FactId, ApplyCommit) {
    let fact = FactId::new();
    let commit = ApplyCommit {
        follow_up: vec![],
        assertion_id: a.assertion_id,
        new_fact: Some(NewFact {
            fact_id: fact,
            kind: a.kind,
            subject: a.subject,
            predicate: a.predicate.clone(),
            object: a.object,
            statement: a.statement.clone(),
            window: w,
            validity_kind: a.validity_kind,
            embedding_key: format!("key-{fact}"),
        }),
        evidence: evidence.iter().map(|(c, s)| (fact, *c, *s)).collect(),
        windows: vec![],
        contradiction: None,
        superseded: None,
        links: vec![],
        transcript: AdjudicationRecord {
            adjudication_id: AdjudicationId::new(),
            namespace_id: ns,
            assertion_id: a.assertion_id,
            claim_id: a.claim_id,
            verdict: "new".into(),
            target_fact: None,
            result_fact: fact,
            candidates: vec![],
            reason: "no candidate".into(),
            input: serde_json::json!({"rule": "new"}),
            model: None,
            adjudicator_version: "adjudicator-test".into(),
            created_at: t("2024-03-02T00:00:00Z"),
        },
    };
    (fact, commit)
}

/// Stage and apply one observation as a new fact.
async fn fact(
    store: &PgStore,
    ns: NamespaceId,
    subject: EntityId,
    statement: &str,
    w: Window,
    evidence: &[(ClaimId, Stance)],
) -> FactId {
    let claim = evidence.first().map(|e| e.0).unwrap_or_default();
    let a = observation(ns, claim, VersionId::new(), subject, statement, 0);
    stage(store, ns, claim, vec![a.clone()]).await;
    let (id, commit) = new_fact_commit(ns, &a, w, evidence);
    assert!(
        store
            .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
            .await
            .unwrap()
    );
    id
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
async fn pg_facts_normalization_stages_assertions_and_counts_predicates() {
    let Some((store, ns)) = open("norm").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    let engine = mint(&store, ns, "Analytical Engine").await;
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
    let mut works = observation(
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
    let mut obs = observation(
        ns,
        claim,
        version,
        engine,
        "The Analytical Engine is mechanical.",
        2,
    );
    obs.window = window(Some("1837-01-01T00:00:00Z"), Some("1871-01-01T00:00:00Z"));
    let assertions = vec![works.clone(), admires.clone(), obs.clone()];

    let l = lease(&store, ns, Stage::Normalize).await;
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
    assert_eq!(work_status(&store, l.work_id).await, "done");
    let queued: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM processing_state WHERE namespace_id = $1 AND stage = 'e3.adjudicate'
            AND status = 'pending' AND component_version = 'adj-v1' AND target_id = $2",
    )
    .bind(ns.to_string())
    .bind(follow.target_id.to_string())
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(queued, 1);

    // A replay under a new lease stages nothing twice and counts no use twice.
    let l2 = lease(&store, ns, Stage::Normalize).await;
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
    let staged: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM staged_assertions")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(staged, 3);
    let queued: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM processing_state WHERE stage = 'e3.adjudicate'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(queued, 1, "follow-up work is idempotent");

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
        ]
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
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_facts_apply_assertion_creates_a_fact_once() {
    let Some((store, ns)) = open("apply").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    let doc = DocumentId::new();
    let claim = insert_claim(&store, ns, doc, true).await;
    let version = VersionId::new();
    let a = observation(
        ns,
        claim,
        version,
        ada,
        "Ada Lovelace wrote the first program.",
        0,
    );
    stage(&store, ns, claim, vec![a.clone()]).await;
    let (id, mut commit) = new_fact_commit(
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
    commit.follow_up = vec![follow];
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
            .unwrap()
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
    let (fact_id, verdict): (String, String) = sqlx::query_as(
        "SELECT fact_id, verdict FROM staged_assertions WHERE id = $1 AND applied_at IS NOT NULL",
    )
    .bind(a.assertion_id.to_string())
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!((fact_id, verdict), (id.to_string(), "new".to_string()));
    let follow_ups: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM processing_state WHERE component_version = 'follow-v1'",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(follow_ups, 1);
    let lexical: Vec<String> = sqlx::query_scalar(
        "SELECT l.text FROM fact_lexical l JOIN facts f ON f.seq = l.seq WHERE f.id = $1",
    )
    .bind(id.to_string())
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(lexical, vec![a.statement.clone()]);

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
    assert_eq!(transcripts[0].input, serde_json::json!({"rule": "new"}));
    assert_eq!(transcripts[0].created_at, t("2024-03-02T00:00:00Z"));

    // Supersession, a window revision and a contradiction group in one apply.
    let b = observation(
        ns,
        claim,
        VersionId::new(),
        ada,
        "Ada Lovelace wrote notes on the engine.",
        1,
    );
    stage(&store, ns, claim, vec![b.clone()]).await;
    let (successor, mut commit) = new_fact_commit(ns, &b, Window::unknown(), &[]);
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

    let missing = observation(ns, claim, VersionId::new(), ada, "never staged", 0);
    let (_, commit) = new_fact_commit(ns, &missing, Window::unknown(), &[]);
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
    let (_, commit) = new_fact_commit(other, &b, Window::unknown(), &[]);
    assert_eq!(
        store
            .apply_assertion(other, commit, t("2024-03-05T00:00:00Z"))
            .await
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert!(store.facts(other, &[id]).await.unwrap().is_empty());
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_facts_concurrent_applies_of_one_assertion_apply_once() {
    let Some((store, ns)) = open("race").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    let claim = insert_claim(&store, ns, DocumentId::new(), true).await;
    let a = observation(ns, claim, VersionId::new(), ada, "Ada raced.", 0);
    stage(&store, ns, claim, vec![a.clone()]).await;
    // Two adjudicators decided the same assertion independently (different fact ids).
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (_, commit) = new_fact_commit(ns, &a, Window::unknown(), &[(claim, Stance::Support)]);
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            store
                .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
                .await
                .unwrap()
        }));
    }
    let mut applied = 0;
    for task in tasks {
        applied += usize::from(task.await.unwrap());
    }
    assert_eq!(applied, 1);
    let facts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM facts")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let transcripts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM adjudications")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!((facts, transcripts), (1, 1));
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_facts_evidence_counts_distinct_current_lineages() {
    let Some((store, ns)) = open("evidence").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    let (doc1, doc2, doc3) = (DocumentId::new(), DocumentId::new(), DocumentId::new());
    let c1 = insert_claim(&store, ns, doc1, true).await;
    let c2 = insert_claim(&store, ns, doc1, true).await;
    let c3 = insert_claim(&store, ns, doc2, false).await;
    let c4 = insert_claim(&store, ns, doc3, true).await;
    let id = fact(
        &store,
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
        "two claims of one lineage count once; retired testimony not at all"
    );
    set_current(&store, c3, true).await;
    set_current(&store, c4, false).await;
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
    for c in [c1, c2, c3] {
        set_current(&store, c, false).await;
    }
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
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_facts_list_facts_honours_at_history_overlap_and_entities() {
    let Some((store, ns)) = open("list").await else {
        return;
    };
    let beta = mint(&store, ns, "Beta").await;
    let alpha = mint(&store, ns, "Alpha").await;
    let b1 = fact(
        &store,
        ns,
        beta,
        "Beta held office.",
        window(Some("2020-01-01T00:00:00Z"), Some("2022-01-01T00:00:00Z")),
        &[],
    )
    .await;
    let b2 = fact(
        &store,
        ns,
        beta,
        "Beta leads.",
        window(Some("2022-01-01T00:00:00Z"), None),
        &[],
    )
    .await;
    let b3 = fact(&store, ns, beta, "Beta is tall.", Window::unknown(), &[]).await;
    let a1 = fact(&store, ns, alpha, "Alpha exists.", Window::unknown(), &[]).await;
    // b4 is superseded by b2.
    let claim = ClaimId::new();
    let s = observation(ns, claim, VersionId::new(), beta, "Beta led once.", 0);
    stage(&store, ns, claim, vec![s.clone()]).await;
    let (b4, mut commit) = new_fact_commit(ns, &s, Window::unknown(), &[]);
    commit.superseded = Some((b4, b2));
    store
        .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
        .await
        .unwrap();
    // A relation of alpha towards beta: listed for either end.
    let r = ClaimId::new();
    let mut rel = observation(ns, r, VersionId::new(), alpha, "Alpha knows Beta.", 0);
    rel.kind = FactKind::Relation;
    rel.predicate = Some("knows".into());
    rel.object = Some(beta);
    stage(&store, ns, r, vec![rel.clone()]).await;
    let (r1, commit) = new_fact_commit(ns, &rel, Window::unknown(), &[]);
    store
        .apply_assertion(ns, commit, t("2024-03-02T00:00:00Z"))
        .await
        .unwrap();
    // An invalidated fact only shows in history.
    let b5 = fact(&store, ns, beta, "Beta was wrong.", Window::unknown(), &[]).await;
    sqlx::query(
        "UPDATE facts SET invalidated_at = $1, closed_reason = 'invalidated' WHERE id = $2",
    )
    .bind(t("2024-03-05T00:00:00Z"))
    .bind(b5.to_string())
    .execute(store.pool())
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
        vec![a1, r1, b1, b2, b3]
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
    assert_eq!(
        store.fact_vector_coverage(ns, "gen").await.unwrap(),
        VectorCoverage {
            chunks: 5,
            missing: 5
        }
    );
    put_vector(&store, ns, "gen", &format!("key-{b1}"), vec![1.0, 0.0]).await;
    put_vector(&store, ns, "gen", &format!("key-{b4}"), vec![1.0, 0.0]).await;
    put_vector(&store, ns, "other", &format!("key-{b2}"), vec![1.0, 0.0]).await;
    assert_eq!(
        store.fact_vector_coverage(ns, "gen").await.unwrap(),
        VectorCoverage {
            chunks: 5,
            missing: 4
        }
    );
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_facts_search_ranks_eligible_facts() {
    let Some((store, ns)) = open("search").await else {
        return;
    };
    let filter = all_facts(ns);
    assert!(
        store
            .search_facts_lexical(&filter, &["engine".into()], 5)
            .await
            .unwrap()
            .is_empty()
    );
    let ada = mint(&store, ns, "Ada Lovelace").await;
    let f1 = fact(
        &store,
        ns,
        ada,
        "Ada designed the engine program.",
        Window::unknown(),
        &[],
    )
    .await;
    let f2 = fact(&store, ns, ada, "Ada liked poetry.", Window::unknown(), &[]).await;
    let f3 = fact(
        &store,
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
        "more occurrences rank higher"
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
    // An ineligible (superseded) fact is not found.
    sqlx::query("UPDATE facts SET superseded_by = $1 WHERE id = $2")
        .bind(f1.to_string())
        .bind(f3.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    let hits = store
        .search_facts_lexical(&filter, &["engine".into()], 5)
        .await
        .unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![f1]);

    for (fact, v) in [
        (f1, vec![1.0f32, 0.0]),
        (f2, vec![0.6f32, 0.8]),
        (f3, vec![0.0f32, 1.0]),
    ] {
        put_vector(&store, ns, "gen", &format!("key-{fact}"), v).await;
    }
    // Another dimension in another generation is never compared.
    put_vector(
        &store,
        ns,
        "gen3",
        &format!("key-{f2}"),
        vec![0.0, 1.0, 0.0],
    )
    .await;
    let hits = store
        .search_facts_semantic(&filter, "gen", &[0.0, 2.0], 5)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        vec![f2, f1],
        "the superseded f3 is not eligible"
    );
    assert!((hits[0].1 - 0.8).abs() < 1e-6);
    assert!(hits[1].1.abs() < 1e-6);
    let history = FactFilter {
        history: true,
        ..filter.clone()
    };
    let hits = store
        .search_facts_semantic(&history, "gen", &[0.0, 1.0], 2)
        .await
        .unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![f3, f2]);
    assert!((hits[0].1 - 1.0).abs() < 1e-6);
    assert!(
        store
            .search_facts_semantic(&filter, "gen", &[0.0, 1.0, 0.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty(),
        "no vector of that dimension"
    );
    assert!(
        store
            .search_facts_semantic(&filter, "gen", &[], 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_facts_semantic(&filter, "gen", &[1.0, 0.0], 0)
            .await
            .unwrap()
            .is_empty()
    );
    // A zero query scores every candidate 0, ties by id.
    let hits = store
        .search_facts_semantic(&filter, "gen", &[0.0, 0.0], 5)
        .await
        .unwrap();
    let mut want = vec![f1, f2];
    want.sort_by_key(|f| f.to_string());
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), want);
    assert!(hits.iter().all(|h| h.1 == 0.0));
    // Equal vectors tie by id.
    let f4 = fact(&store, ns, ada, "Ada again.", Window::unknown(), &[]).await;
    put_vector(&store, ns, "gen", &format!("key-{f4}"), vec![0.6, 0.8]).await;
    let hits = store
        .search_facts_semantic(&filter, "gen", &[0.0, 1.0], 2)
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
            .search_facts_semantic(&only_other, "gen", &[0.0, 1.0], 5)
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
            .search_facts_semantic(&all_facts(other), "gen", &[0.0, 1.0], 5)
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
    let vectors = store.vectors(ns, "gen", &keys).await.unwrap();
    assert_eq!(
        vectors,
        vec![
            (keys[0].clone(), vec![0.6f32, 0.8]),
            (keys[2].clone(), vec![1.0f32, 0.0])
        ]
    );
    assert!(
        store
            .vectors(ns, "other-gen", &keys)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.vectors(other, "gen", &keys).await.unwrap().is_empty());
    drop_schema(&store).await;
}

/// An HNSW index `name` over generation `gen`'s 3-dimensional vectors, as the
/// search area builds one per generation.
async fn hnsw_index(store: &PgStore, name: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE INDEX {name} ON vectors
             USING hnsw ((embedding::vector(3)) vector_cosine_ops) WHERE generation = 'gen'"
    )))
    .execute(store.pool())
    .await
    .unwrap();
}

/// The fact vector channel walks the generation's HNSW index instead of computing
/// and sorting every distance, which the planner prefers when it misjudges how
/// few facts the eligibility filter keeps (and always on a store this small).
#[tokio::test]
async fn pg_facts_semantic_walks_the_generation_index() {
    let Some((store, ns)) = open("walks").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    hnsw_index(&store, "vectors_hnsw_walk").await;
    for i in 0..20u8 {
        let f = fact(
            &store,
            ns,
            ada,
            &format!("Ada fact {i}."),
            Window::unknown(),
            &[],
        )
        .await;
        let x = f32::from(i);
        put_vector(
            &store,
            ns,
            "gen",
            &format!("key-{f}"),
            vec![1.0, x, 20.0 - x],
        )
        .await;
    }
    let scans = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT idx_scan FROM pg_stat_user_indexes
              WHERE schemaname = current_schema() AND indexrelname = 'vectors_hnsw_walk'",
        )
        .fetch_one(store.pool())
        .await
        .unwrap()
    };
    let before = scans().await;
    let hits = store
        .search_facts_semantic(&all_facts(ns), "gen", &[1.0, 19.0, 1.0], 3)
        .await
        .unwrap();
    assert_eq!(hits.len(), 3);
    // Statistics reach the shared counters within about a second of the search.
    let mut after = scans().await;
    for _ in 0..50 {
        if after > before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        after = scans().await;
    }
    assert!(
        after > before,
        "the index was not walked ({before} → {after})"
    );
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_facts_semantic_ties_at_the_last_place_go_by_id_with_an_hnsw_index() {
    let Some((store, ns)) = open("ties").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    let bob = mint(&store, ns, "Bob").await;
    // The search area creates this per generation; the statement must work with it.
    hnsw_index(&store, "vectors_hnsw_test").await;
    let mut tied = Vec::new();
    for i in 0..6 {
        let f = fact(
            &store,
            ns,
            ada,
            &format!("Ada fact {i}."),
            Window::unknown(),
            &[],
        )
        .await;
        put_vector(&store, ns, "gen", &format!("key-{f}"), vec![0.0, 3.0, 4.0]).await;
        tied.push(f);
    }
    let best = fact(&store, ns, ada, "Ada best.", Window::unknown(), &[]).await;
    put_vector(
        &store,
        ns,
        "gen",
        &format!("key-{best}"),
        vec![0.0, 1.0, 0.0],
    )
    .await;
    let far = fact(&store, ns, bob, "Bob far.", Window::unknown(), &[]).await;
    put_vector(
        &store,
        ns,
        "gen",
        &format!("key-{far}"),
        vec![1.0, 0.0, 0.0],
    )
    .await;
    // Two facts sharing one label vector are two candidates.
    let twin = fact(&store, ns, bob, "Bob twin.", Window::unknown(), &[]).await;
    sqlx::query("UPDATE facts SET embedding_key = $1 WHERE id = $2")
        .bind(format!("key-{far}"))
        .bind(twin.to_string())
        .execute(store.pool())
        .await
        .unwrap();

    tied.sort_by_key(|f| f.to_string());
    let hits = store
        .search_facts_semantic(&all_facts(ns), "gen", &[0.0, 1.0, 0.0], 3)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        vec![best, tied[0], tied[1]],
        "ties at the last place by id"
    );
    assert!((hits[0].1 - 1.0).abs() < 1e-6);
    assert!((hits[1].1 - 0.6).abs() < 1e-6 && (hits[2].1 - 0.6).abs() < 1e-6);
    // A filter that admits only the farthest candidates still fills the page.
    let bobs = FactFilter {
        entities: vec![bob],
        ..all_facts(ns)
    };
    let hits = store
        .search_facts_semantic(&bobs, "gen", &[0.0, 1.0, 0.0], 5)
        .await
        .unwrap();
    let mut want = vec![far, twin];
    want.sort_by_key(|f| f.to_string());
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), want);
    assert!(hits.iter().all(|h| h.1.abs() < 1e-6));
    // A generation name is data, whatever it holds.
    for generation in ["it's", "back\\slash'; --"] {
        put_vector(
            &store,
            ns,
            generation,
            &format!("key-{best}"),
            vec![0.0, 0.0, 1.0],
        )
        .await;
        let hits = store
            .search_facts_semantic(&all_facts(ns), generation, &[0.0, 0.0, 1.0], 5)
            .await
            .unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![best]);
    }
    drop_schema(&store).await;
}
