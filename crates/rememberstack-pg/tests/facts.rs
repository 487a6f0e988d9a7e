//! What the PostgreSQL store's facts area must do that only a real server shows:
//! concurrent applies of one assertion apply it once, and the fact vector channel
//! walks the generation's HNSW index. The predicate registry, normalizations,
//! staged assertions, applies, fact reads and filters and fact search are tested
//! on every store in `tests/conformance` (`store_facts`). Every test needs
//! `DATABASE_URL` (`scripts/pg-local.sh start` prints one) and is skipped, saying
//! so, without it. Each test works in a schema of its own, dropped at the end. Rows
//! of areas other than facts (entities, claims, leased work, vectors) are written
//! with plain SQL.

use rememberstack_core::claims::ValidityKind;
use rememberstack_core::facts::{
    AdjudicationRecord, ApplyCommit, Assertion, FactFilter, FactKind, NewFact, Stance, Window,
};
use rememberstack_core::ids::{
    AdjudicationId, AssertionId, ChunkId, ClaimId, DocumentId, EntityId, FactId, NamespaceId,
    VersionId, WorkId,
};
use rememberstack_core::ledger::Stage;
use rememberstack_core::store::Lease;
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
    format!("rs_facts_{tag}_{}", uuid::Uuid::new_v4().simple())
}

/// These tests' namespaces are small: every vector search walks the index first,
/// as a large namespace's does (`exact_scan_below: 0`), so that the index pass is
/// what they test.
fn config(schema: &str) -> PgStoreConfig {
    PgStoreConfig {
        max_connections: 4,
        schema: Some(schema.to_string()),
        exact_scan_below: 0,
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

/// An HNSW index `name` over generation `gen`'s 3-dimensional vectors, as the
/// search area builds one per generation.
/// `n` facts about `subject` ("Ada fact 0." …), fact `i` with the vector `vector(i)`
/// in generation `gen`.
async fn facts_with_vectors(
    store: &PgStore,
    ns: NamespaceId,
    subject: EntityId,
    n: u8,
    vector: impl Fn(u8) -> Vec<f32>,
) {
    for i in 0..n {
        let f = fact(
            store,
            ns,
            subject,
            &format!("Ada fact {i}."),
            Window::unknown(),
            &[],
        )
        .await;
        put_vector(store, ns, "gen", &format!("key-{f}"), vector(i)).await;
    }
}

async fn hnsw_index(store: &PgStore, name: &str) {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE INDEX {name} ON vectors
             USING hnsw ((embedding::vector(3)) vector_cosine_ops) WHERE generation = 'gen'"
    )))
    .execute(store.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn pg_facts_semantic_ranks_exactly_when_the_index_pass_runs_out_of_time() {
    let Some((store, ns)) = open("outoftime").await else {
        return;
    };
    let ada = mint(&store, ns, "Ada Lovelace").await;
    // Another namespace's vectors, nearer every query below than any of this
    // namespace's: a walk passes thousands of them before it finds a fact.
    let other = store
        .ensure_namespace("other", t("2024-01-01T00:00:00Z"))
        .await
        .unwrap()
        .id;
    sqlx::query(
        "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension, embedding, created_at)
         SELECT $1, 'gen', 'near-' || i, 3,
                format('[%s,%s,%s]', 1 + i % 7, 10 + i % 11, 10 + i % 13)::vector, now()
           FROM generate_series(1, 6000) AS i",
    )
    .bind(other.to_string())
    .execute(store.pool())
    .await
    .unwrap();
    // Pairs of facts share a vector: ties at the cut are broken by id.
    facts_with_vectors(&store, ns, ada, 40, |i| {
        let x = f32::from(i % 20);
        vec![-1.0, x, 20.0 - x]
    })
    .await;
    hnsw_index(&store, "vectors_hnsw_outoftime").await;
    // The same store through a second process whose index passes may walk for
    // 1 ms only: they end past it and fail `timeout`, and the exact scan answers.
    let url = std::env::var("DATABASE_URL").unwrap();
    let hurried = PgStore::connect_with(
        &url,
        PgStoreConfig {
            index_pass_timeout: std::time::Duration::from_millis(1),
            ..config(store.schema().unwrap())
        },
    )
    .await
    .unwrap();
    for (query, k) in [
        ([1.0, 19.0, 1.0], 3),
        ([1.0, 1.0, 20.0], 5),
        ([2.0, 7.0, 13.0], 7),
        ([1.0, 10.0, 10.0], 40),
    ] {
        let walked = store
            .search_facts_semantic(&all_facts(ns), "gen", &query, k)
            .await
            .unwrap();
        let exact = hurried
            .search_facts_semantic(&all_facts(ns), "gen", &query, k)
            .await
            .unwrap();
        assert_eq!(walked.len(), k.min(40));
        assert_eq!(walked, exact, "query {query:?}, k {k}");
    }
    hurried.close().await;
    drop_schema(&store).await;
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
    facts_with_vectors(&store, ns, ada, 20, |i| {
        let x = f32::from(i);
        vec![1.0, x, 20.0 - x]
    })
    .await;
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
async fn pg_an_entitys_facts_are_read_by_index() {
    let Some((store, ns)) = open("entity_index").await else {
        return;
    };
    // Ten thousand facts of a thousand subjects: as many as a store of 10k claims
    // holds, where a list the planner could not see chose a scan of all of them.
    sqlx::query(
        "INSERT INTO facts (namespace_id, id, kind, subject_id, statement, valid_precision,
             validity_kind, recorded_at, embedding_key, updated_at, evidence_count)
         SELECT $1, 'f' || i, 'observation', 'e' || (i % 1000), 'a statement', 'unknown',
             'unknown', now(), 'k' || i, now(), 1
           FROM generate_series(0, 9999) AS i",
    )
    .bind(ns.to_string())
    .execute(store.pool())
    .await
    .unwrap();
    sqlx::query("ANALYZE facts")
        .execute(store.pool())
        .await
        .unwrap();
    let mut filter = all_facts(ns);
    filter.entities = vec![EntityId::new()];
    let mut p = rememberstack_sql::Params::new(rememberstack_sql::Dialect::Postgres);
    let cond = rememberstack_sql::facts::eligibility(&filter, &mut p);
    let sql = format!("EXPLAIN SELECT f.seq FROM facts f WHERE {cond}");
    let mut q = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql));
    for arg in p.args() {
        q = match arg {
            rememberstack_sql::Arg::Text(s) => q.bind(s.clone()),
            rememberstack_sql::Arg::Int(n) => q.bind(*n),
            rememberstack_sql::Arg::Time(t) => q.bind(*t),
            rememberstack_sql::Arg::Texts(v) => q.bind(v.clone()),
        };
    }
    let plan = q.fetch_all(store.pool()).await.unwrap();
    for index in ["facts_by_subject", "facts_by_object"] {
        assert!(
            plan.iter().any(|l| l.contains(index)),
            "the entity's facts are not read through {index}:\n{}",
            plan.join("\n")
        );
    }
    drop_schema(&store).await;
}
