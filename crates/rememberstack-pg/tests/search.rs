//! The PostgreSQL store's search area against a real server: chunk vectors
//! (existing, commit with lease fencing, coverage, missing; vectors pgvector cannot
//! hold refused), the change stamp, semantic chunk search (a non-finite query
//! refused), the generations' HNSW indexes and the planner's use of them, and the
//! BM25 statistics tables under deletes and concurrent writers. The two refusals
//! are PostgreSQL's own (the embedded store stores and scores such vectors), which
//! keeps those tests here. Lexical chunk search is tested on every store in
//! `tests/conformance` (`store_search`; receipts: `store_basics`). Needs
//! `DATABASE_URL` (`scripts/pg-local.sh start`); skipped, saying so, without it.
//! Rows of other areas (documents, sections, chunks, work items, mentions) are
//! inserted with plain SQL.

use chrono::{TimeZone, Utc};
use rememberstack_core::ErrorCode;
use rememberstack_core::embed::EmbedderIdentity;
use rememberstack_core::ids::{
    ChunkId, ClaimId, DocumentId, EntityId, NamespaceId, VersionId, WorkId,
};
use rememberstack_core::store::traits::*;
use rememberstack_core::store::{ChunkFilter, ChunkHit, ChunkRef, Lease, VectorCoverage};
use rememberstack_core::text::SectionRole;
use rememberstack_pg::{PgStore, PgStoreConfig};
use sqlx::PgPool;

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
    format!("rs_search_{tag}_{}", uuid::Uuid::new_v4().simple())
}

/// These tests' namespaces are small: every vector search walks the index first,
/// as a large namespace's does (`exact_scan_below: 0`), so that the index pass is
/// what they test.
fn config(schema: &str) -> PgStoreConfig {
    PgStoreConfig {
        max_connections: 2,
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

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

async fn open(test: &str, tag: &str) -> Option<(PgStore, NamespaceId)> {
    let url = database_url(test)?;
    let store = PgStore::connect_with(&url, config(&fresh_schema(tag)))
        .await
        .unwrap();
    let ns = store.ensure_namespace("default", at(0)).await.unwrap().id;
    Some((store, ns))
}

// --- fixtures (rows of other areas, as plain SQL)

async fn document(pool: &PgPool, ns: NamespaceId, doc: DocumentId, current: Option<VersionId>) {
    let latest = current.unwrap_or_default();
    sqlx::query(
        "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode, current_version_id,
             latest_version_id, version_count, created_at, updated_at)
         VALUES ($1, $2, 'file', $2, 'living', $3, $4, 1, $5, $5)",
    )
    .bind(ns.to_string())
    .bind(doc.to_string())
    .bind(current.map(|v| v.to_string()))
    .bind(latest.to_string())
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
}

async fn section(pool: &PgPool, ns: NamespaceId, version: VersionId, ordinal: i32, role: &str) {
    sqlx::query(
        "INSERT INTO sections (namespace_id, version_id, ordinal, block_start, block_end, level,
             title, path_json, role, parent)
         VALUES ($1, $2, $3, 0, 1, 1, 'T', '[]'::jsonb, $4, NULL)",
    )
    .bind(ns.to_string())
    .bind(version.to_string())
    .bind(ordinal)
    .bind(role)
    .execute(pool)
    .await
    .unwrap();
}

#[allow(clippy::too_many_arguments)]
async fn chunk(
    pool: &PgPool,
    ns: NamespaceId,
    id: ChunkId,
    doc: DocumentId,
    version: VersionId,
    ordinal: i32,
    section: i32,
    text: &str,
    key: &str,
) {
    sqlx::query(
        "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
             block_start, block_end, start_byte, end_byte, char_start, char_end, text,
             content_hash, token_estimate, embedding_key, event_ids_json)
         VALUES ($1, $2, $3, $4, $5, $6, 0, 1, 0, 10, 0, 10, $7, 'h', 4, $8, '[]'::jsonb)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(version.to_string())
    .bind(doc.to_string())
    .bind(ordinal)
    .bind(section)
    .bind(text)
    .bind(key)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO chunk_lexical (namespace_id, seq, text)
         SELECT namespace_id, seq, text FROM chunks WHERE namespace_id = $1 AND id = $2",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .execute(pool)
    .await
    .unwrap();
}

/// A running work item leased to `owner`.
async fn leased(pool: &PgPool, ns: NamespaceId, owner: &str) -> Lease {
    let id = WorkId::new();
    sqlx::query(
        "INSERT INTO processing_state (namespace_id, id, target_kind, target_id, version_id, stage,
             component_version, status, attempts, max_attempts, not_before, lease_owner,
             lease_expires_at, created_at, updated_at)
         VALUES ($1, $2, 'version', $3, $3, 'embed', 'e1', 'running', 1, 3, 0, $4, $5, 0, 0)",
    )
    .bind(ns.to_string())
    .bind(id.to_string())
    .bind(VersionId::new().to_string())
    .bind(owner)
    .bind(at(600).timestamp_millis())
    .execute(pool)
    .await
    .unwrap();
    Lease {
        work_id: id,
        owner: owner.to_string(),
    }
}

async fn work_status(pool: &PgPool, lease: &Lease) -> String {
    sqlx::query_scalar("SELECT status FROM processing_state WHERE id = $1")
        .bind(lease.work_id.to_string())
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A claim of `chunk` that mentions `entity`.
async fn mention(pool: &PgPool, ns: NamespaceId, chunk: ChunkId, entity: EntityId) {
    let claim = ClaimId::new();
    sqlx::query(
        "INSERT INTO chunk_claims (namespace_id, chunk_id, claim_id, version_id, document_id,
             extractor_version, extraction_input_hash, ordinal, spans_json, passages_json,
             event_ids_json, reused, created_at)
         VALUES ($1, $2, $3, $4, $5, 'x1', 'h', 0, '[]', '[]', '[]', false, $6)",
    )
    .bind(ns.to_string())
    .bind(chunk.to_string())
    .bind(claim.to_string())
    .bind(VersionId::new().to_string())
    .bind(DocumentId::new().to_string())
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO entity_mentions (namespace_id, entity_id, claim_id, surface, decision_id, created_at)
         VALUES ($1, $2, $3, 'X', 'd', $4)",
    )
    .bind(ns.to_string())
    .bind(entity.to_string())
    .bind(claim.to_string())
    .bind(at(0))
    .execute(pool)
    .await
    .unwrap();
}

fn identity(dimension: usize) -> EmbedderIdentity {
    EmbedderIdentity {
        provider: "hashing".into(),
        model: "it's \\ m".into(),
        dimension,
        version: "1".into(),
    }
}

fn filter(ns: NamespaceId) -> ChunkFilter {
    ChunkFilter {
        namespace_id: ns,
        roles: vec![SectionRole::Body],
        entities: vec![],
        documents: None,
        exact: false,
    }
}

fn ids(hits: &[ChunkHit]) -> Vec<ChunkId> {
    hits.iter().map(|h| h.chunk_id).collect()
}

/// Cosine similarity as the SQLite store computes it.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[tokio::test]
async fn pg_search_vectors_commit_coverage_and_stamp() {
    let Some((store, ns)) = open("pg_search_vectors_commit_coverage_and_stamp", "vec").await else {
        return;
    };
    let pool = store.pool().clone();
    let (doc, v0, v1) = (DocumentId::new(), VersionId::new(), VersionId::new());
    document(&pool, ns, doc, Some(v1)).await;
    section(&pool, ns, v0, 0, "body").await;
    section(&pool, ns, v1, 0, "body").await;
    let old = ChunkId::new();
    let (c0, c1, c2) = (ChunkId::new(), ChunkId::new(), ChunkId::new());
    chunk(&pool, ns, old, doc, v0, 0, 0, "old", "k-old").await;
    chunk(&pool, ns, c2, doc, v1, 2, 0, "two", "k2").await;
    chunk(&pool, ns, c0, doc, v1, 0, 0, "zero", "k1").await;
    chunk(&pool, ns, c1, doc, v1, 1, 0, "one", "k1").await;
    let generation = identity(3);
    let gen_key = generation.generation();

    // Nothing embedded yet: every current chunk (not the old version's) is missing.
    assert_eq!(
        store.vector_coverage(ns, &gen_key).await.unwrap(),
        VectorCoverage {
            chunks: 3,
            missing: 3
        }
    );
    let missing = store.chunks_missing_vectors(ns, &gen_key).await.unwrap();
    let refs = |cs: &[ChunkId]| -> Vec<ChunkRef> {
        cs.iter()
            .map(|c| ChunkRef {
                chunk_id: *c,
                version_id: v1,
            })
            .collect()
    };
    assert_eq!(missing, refs(&[c0, c1, c2]), "by version, then ordinal");
    let keys = vec!["k1".to_string(), "k2".to_string(), "nope".to_string()];
    assert!(
        store
            .existing_vectors(ns, &gen_key, &keys)
            .await
            .unwrap()
            .is_empty()
    );

    // A commit completes its work items and registers the generation.
    let stamp0 = store.change_stamp(ns).await.unwrap();
    assert!(stamp0 > 0, "the chunk inserts stamped the namespace");
    assert_eq!(store.change_stamp(NamespaceId::new()).await.unwrap(), 0);
    let lease = leased(&pool, ns, "w1").await;
    store
        .commit_vectors(
            std::slice::from_ref(&lease),
            ns,
            &generation,
            vec![("k1".into(), vec![1.0, 0.0, 0.0])],
            at(10),
        )
        .await
        .unwrap();
    assert_eq!(work_status(&pool, &lease).await, "done");
    let stamp1 = store.change_stamp(ns).await.unwrap();
    assert!(stamp1 > stamp0, "writing vectors moves the stamp");
    assert_eq!(
        store.existing_vectors(ns, &gen_key, &keys).await.unwrap(),
        vec!["k1".to_string()]
    );
    assert!(
        store
            .existing_vectors(ns, "other/gen/d3/v1", &keys)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .existing_vectors(NamespaceId::new(), &gen_key, &keys)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.vector_coverage(ns, &gen_key).await.unwrap(),
        VectorCoverage {
            chunks: 3,
            missing: 1
        }
    );
    assert_eq!(
        store.chunks_missing_vectors(ns, &gen_key).await.unwrap(),
        refs(&[c2])
    );
    let registered: (String, String, i32, String) = sqlx::query_as(
        "SELECT provider, model, dimension, version FROM embedder_generations WHERE generation = $1",
    )
    .bind(&gen_key)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(
        registered,
        ("hashing".into(), "it's \\ m".into(), 3, "1".into())
    );

    // The generation's HNSW partial index exists, over the quoted generation.
    let (name, def): (String, String) = sqlx::query_as(
        "SELECT indexname::text, indexdef FROM pg_indexes
          WHERE schemaname = $1 AND indexname LIKE 'vectors_hnsw_%'",
    )
    .bind(store.schema().unwrap())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(name.len(), "vectors_hnsw_".len() + 32);
    assert!(def.contains("hnsw"), "{def}");
    assert!(def.contains("vector(3)"), "{def}");
    assert!(def.contains("it''s"), "{def}");

    // A lost lease refuses the whole commit: nothing is stored.
    let stolen = leased(&pool, ns, "w2").await;
    let lost = Lease {
        work_id: stolen.work_id,
        owner: "w1".into(),
    };
    let err = store
        .commit_vectors(
            &[lost],
            ns,
            &generation,
            vec![("k2".into(), vec![0.0, 1.0, 0.0])],
            at(11),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseLost);
    assert_eq!(work_status(&pool, &stolen).await, "running");
    assert_eq!(
        store.existing_vectors(ns, &gen_key, &keys).await.unwrap(),
        vec!["k1".to_string()]
    );
    // The finished lease cannot complete twice either.
    let err = store
        .commit_vectors(
            std::slice::from_ref(&lease),
            ns,
            &generation,
            vec![],
            at(12),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseLost);

    // A replay keeps the first vector (ON CONFLICT DO NOTHING) and adds the new one.
    store
        .commit_vectors(
            &[],
            ns,
            &generation,
            vec![
                ("k1".into(), vec![0.0, 0.0, 1.0]),
                ("k2".into(), vec![0.0, 1.0, 0.0]),
            ],
            at(13),
        )
        .await
        .unwrap();
    let kept: String = sqlx::query_scalar(
        "SELECT embedding::text FROM vectors WHERE namespace_id = $1 AND embedding_key = 'k1'",
    )
    .bind(ns.to_string())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(kept, "[1,0,0]");
    assert_eq!(
        store.vector_coverage(ns, &gen_key).await.unwrap(),
        VectorCoverage {
            chunks: 3,
            missing: 0
        }
    );
    assert!(
        store
            .chunks_missing_vectors(ns, &gen_key)
            .await
            .unwrap()
            .is_empty()
    );
    let indexes: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'vectors_hnsw_%'",
    )
    .bind(store.schema().unwrap())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(indexes, 1, "one index per generation");

    // Vectors pgvector cannot hold are refused typed, before anything is written.
    for bad in [vec![1.0, 0.0], vec![f32::NAN, 0.0, 0.0]] {
        let lease = leased(&pool, ns, "w3").await;
        let err = store
            .commit_vectors(
                std::slice::from_ref(&lease),
                ns,
                &generation,
                vec![("k9".into(), bad)],
                at(14),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidInput);
        assert_eq!(work_status(&pool, &lease).await, "running");
    }
    drop_schema(&store).await;
}

/// A store in a schema of its own builds its generation's HNSW index even when a
/// relation of that index's name exists in `public` (the other schema on its
/// `search_path`), as it does when a store in `public` has the same generation.
#[tokio::test]
async fn pg_search_a_schema_gets_its_own_generation_index() {
    let Some((store, ns)) = open("pg_search_a_schema_gets_its_own_generation_index", "own").await
    else {
        return;
    };
    let pool = store.pool().clone();
    let schema = store.schema().unwrap().to_string();
    let generation = EmbedderIdentity {
        model: format!("own-{}", uuid::Uuid::new_v4().simple()),
        ..identity(3)
    };
    let gen_key = generation.generation();
    let name: String = sqlx::query_scalar("SELECT 'vectors_hnsw_' || md5($1)")
        .bind(&gen_key)
        .fetch_one(&pool)
        .await
        .unwrap();
    // `name` is `vectors_hnsw_` and 32 hex digits.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE public.{name} ()"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let lease = leased(&pool, ns, "w1").await;
    let committed = store
        .commit_vectors(
            std::slice::from_ref(&lease),
            ns,
            &generation,
            vec![("k1".into(), vec![1.0, 0.0, 0.0])],
            at(10),
        )
        .await;
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 AND indexname = $2",
    )
    .bind(&schema)
    .bind(&name)
    .fetch_all(&pool)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE public.{name}")))
        .execute(&pool)
        .await
        .unwrap();
    committed.unwrap();
    assert_eq!(indexes, vec![name]);
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_search_semantic_matches_the_exact_ranking() {
    let Some((store, ns)) = open("pg_search_semantic_matches_the_exact_ranking", "sem").await
    else {
        return;
    };
    let pool = store.pool().clone();
    let (d1, d2, v0, v1, v2) = (
        DocumentId::new(),
        DocumentId::new(),
        VersionId::new(),
        VersionId::new(),
        VersionId::new(),
    );
    document(&pool, ns, d1, Some(v1)).await;
    document(&pool, ns, d2, Some(v2)).await;
    for v in [v0, v1, v2] {
        section(&pool, ns, v, 0, "body").await;
        section(&pool, ns, v, 1, "legal").await;
    }
    let generation = identity(4);
    let gen_key = generation.generation();
    // 80 chunks with distinct pseudo-random vectors, 3 sharing one vector (ties),
    // one legal chunk, one chunk of an old version, one chunk without a vector.
    let mut expected: Vec<(ChunkId, Vec<f32>, DocumentId)> = Vec::new();
    let mut vectors = Vec::new();
    let mut seed = 7_u32;
    // Multiples of 1/1024 in [-1, 1): exact at half precision, as the store keeps
    // vectors, so the exact ranking below is the stored vectors' ranking.
    let mut rnd = || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        ((seed >> 8) % 2_048) as f32 / 1_024.0 - 1.0
    };
    for i in 0..80 {
        let id = ChunkId::new();
        let (doc, version) = if i % 2 == 0 { (d1, v1) } else { (d2, v2) };
        let v: Vec<f32> = if i < 3 {
            vec![0.875, 0.125, 0.0, 0.125]
        } else {
            (0..4).map(|_| rnd()).collect()
        };
        let key = format!("k{i}");
        chunk(&pool, ns, id, doc, version, i, 0, "t", &key).await;
        vectors.push((key, v.clone()));
        expected.push((id, v, doc));
    }
    let (legal, old, bare) = (ChunkId::new(), ChunkId::new(), ChunkId::new());
    chunk(&pool, ns, legal, d1, v1, 100, 1, "t", "k-legal").await;
    chunk(&pool, ns, old, d1, v0, 0, 0, "t", "k-old").await;
    chunk(&pool, ns, bare, d1, v1, 101, 0, "t", "k-bare").await;
    let best = vec![0.875_f32, 0.125, 0.0, 0.125];
    vectors.push(("k-legal".into(), best.clone()));
    vectors.push(("k-old".into(), best.clone()));
    store
        .commit_vectors(&[], ns, &generation, vectors, at(1))
        .await
        .unwrap();

    let exact = |query: &[f32], docs: Option<&[DocumentId]>, limit: usize| {
        let mut scored: Vec<(ChunkId, f64)> = expected
            .iter()
            .filter(|(_, _, d)| docs.is_none_or(|docs| docs.contains(d)))
            .map(|(id, v, _)| (*id, cosine(query, v)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        scored.truncate(limit);
        scored
    };
    let check = |hits: Vec<ChunkHit>, want: Vec<(ChunkId, f64)>| {
        assert_eq!(
            ids(&hits),
            want.iter().map(|w| w.0).collect::<Vec<_>>(),
            "same chunks in the same order as the exact scan"
        );
        for (h, w) in hits.iter().zip(&want) {
            // The store keeps vectors at half precision: 11 significant bits.
            assert!((h.score - w.1).abs() < 1e-3, "{} vs {}", h.score, w.1);
        }
    };
    let f = filter(ns);
    // Small limits take the index pass (more eligible rows than it asks for).
    for limit in [1, 2, 3, 5] {
        check(
            store
                .search_chunks_semantic(&f, &gen_key, &best, limit)
                .await
                .unwrap(),
            exact(&best, None, limit),
        );
    }
    let hits = store
        .search_chunks_semantic(&f, &gen_key, &best, 3)
        .await
        .unwrap();
    let mut tied: Vec<ChunkId> = expected[..3].iter().map(|e| e.0).collect();
    tied.sort();
    assert_eq!(ids(&hits), tied, "identical vectors tie by chunk id");
    assert!((hits[0].score - 1.0).abs() < 1e-6);
    for q in [vec![0.1_f32, -0.5, 0.3, 0.9], vec![-1.0, 0.0, 0.2, 0.0]] {
        for limit in [4, 10, 200] {
            check(
                store
                    .search_chunks_semantic(&f, &gen_key, &q, limit)
                    .await
                    .unwrap(),
                exact(&q, None, limit),
            );
        }
    }
    // Large limit: every eligible chunk with a vector, never the legal, old or bare one.
    let all = store
        .search_chunks_semantic(&f, &gen_key, &best, 1_000)
        .await
        .unwrap();
    assert_eq!(all.len(), 80);
    for c in [legal, old, bare] {
        assert!(!ids(&all).contains(&c));
    }
    // Roles, document scope and entity anchor apply before the top-k.
    let legal_only = ChunkFilter {
        roles: vec![SectionRole::Legal],
        ..f.clone()
    };
    assert_eq!(
        ids(&store
            .search_chunks_semantic(&legal_only, &gen_key, &best, 5)
            .await
            .unwrap()),
        vec![legal]
    );
    let scoped = ChunkFilter {
        documents: Some(vec![d2]),
        ..f.clone()
    };
    check(
        store
            .search_chunks_semantic(&scoped, &gen_key, &best, 5)
            .await
            .unwrap(),
        exact(&best, Some(&[d2]), 5),
    );
    let nothing = ChunkFilter {
        documents: Some(vec![]),
        ..f.clone()
    };
    assert!(
        store
            .search_chunks_semantic(&nothing, &gen_key, &best, 5)
            .await
            .unwrap()
            .is_empty()
    );
    let e = EntityId::new();
    let far = exact(&best, None, 80)[79].0;
    mention(&pool, ns, far, e).await;
    let anchored = ChunkFilter {
        entities: vec![e],
        ..f.clone()
    };
    assert_eq!(
        ids(&store
            .search_chunks_semantic(&anchored, &gen_key, &best, 5)
            .await
            .unwrap()),
        vec![far],
        "the worst match is found when it is the only eligible one"
    );
    // Another dimension, another generation, another namespace, no limit: nothing.
    assert!(
        store
            .search_chunks_semantic(&f, &gen_key, &[1.0, 0.0, 0.0], 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_chunks_semantic(&f, "hashing/x/d4/v9", &best, 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_chunks_semantic(&filter(NamespaceId::new()), &gen_key, &best, 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_chunks_semantic(&f, &gen_key, &best, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .search_chunks_semantic(&f, &gen_key, &[], 5)
            .await
            .unwrap()
            .is_empty()
    );
    let err = store
        .search_chunks_semantic(&f, &gen_key, &[f32::NAN, 0.0, 0.0, 0.0], 5)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidInput);
    // A zero query has no direction: every score is 0, ties by id.
    let zero = store
        .search_chunks_semantic(&f, &gen_key, &[0.0; 4], 3)
        .await
        .unwrap();
    assert_eq!(zero.len(), 3);
    assert!(zero.iter().all(|h| h.score == 0.0));
    let mut all_ids: Vec<ChunkId> = expected.iter().map(|e| e.0).collect();
    all_ids.sort();
    assert_eq!(ids(&zero), all_ids[..3].to_vec());
    drop_schema(&store).await;
}

#[tokio::test]
async fn pg_search_semantic_uses_the_generation_index() {
    let Some((store, ns)) = open("pg_search_semantic_uses_the_generation_index", "plan").await
    else {
        return;
    };
    let generation = identity(2);
    let gen_key = generation.generation();
    store
        .commit_vectors(
            &[],
            ns,
            &generation,
            vec![("a".into(), vec![1.0, 0.0]), ("b".into(), vec![0.0, 1.0])],
            at(1),
        )
        .await
        .unwrap();
    // The search's expression and predicate (inline quoted generation) match the
    // index the commit created.
    let mut conn = store.pool().acquire().await.unwrap();
    sqlx::query("SET enable_seqscan = off")
        .execute(&mut *conn)
        .await
        .unwrap();
    let literal = format!("E'{}'", gen_key.replace('\\', "\\\\").replace('\'', "''"));
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN SELECT embedding_key FROM vectors v
          WHERE v.generation = {literal} AND v.namespace_id = $1 AND v.dimension = 2
          ORDER BY (v.embedding::vector(2)) <=> $2::vector(2) LIMIT 5"
    )))
    .bind(ns.to_string())
    .bind(pgvector::Vector::from(vec![1.0_f32, 0.0]))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    assert!(
        plan.iter().any(|l| l.contains("vectors_hnsw_")),
        "the generation's index is not used: {plan:?}"
    );
    drop(conn);
    drop_schema(&store).await;
}

/// One document version of 60 chunks in section `body`, each with a vector of
/// generation `identity(4)` drawn from `seed`; returns the generation.
async fn sixty_chunks_with_vectors(
    store: &PgStore,
    ns: NamespaceId,
    mut seed: u32,
) -> EmbedderIdentity {
    let pool = store.pool();
    let (doc, version) = (DocumentId::new(), VersionId::new());
    document(pool, ns, doc, Some(version)).await;
    section(pool, ns, version, 0, "body").await;
    let generation = identity(4);
    let mut vectors = Vec::new();
    let mut rnd = || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        ((seed >> 8) % 2_000) as f32 / 1_000.0 - 1.0
    };
    for i in 0..60 {
        let key = format!("k{i}");
        chunk(pool, ns, ChunkId::new(), doc, version, i, 0, "t", &key).await;
        vectors.push((key, (0..4).map(|_| rnd()).collect::<Vec<f32>>()));
    }
    store
        .commit_vectors(&[], ns, &generation, vectors, at(1))
        .await
        .unwrap();
    generation
}

/// The scans of `schema`'s HNSW indexes that PostgreSQL's statistics have counted.
async fn index_scans(pool: &PgPool, schema: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(
        "SELECT COALESCE(SUM(idx_scan), 0)::bigint FROM pg_stat_user_indexes
          WHERE schemaname = $1 AND indexrelname LIKE 'vectors_hnsw_%'",
    )
    .bind(schema)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// `ChunkFilter::exact` ranks by an exact scan: the generation's HNSW index is not
/// scanned (PostgreSQL's own index statistics say so), and the ranking equals the
/// index pass's.
#[tokio::test]
async fn pg_search_exact_flag_skips_the_index() {
    let Some((store, ns)) = open("pg_search_exact_flag_skips_the_index", "exact").await else {
        return;
    };
    let url = database_url("pg_search_exact_flag_skips_the_index").unwrap();
    let schema = store.schema().unwrap().to_string();
    let pool = store.pool().clone();
    let generation = sixty_chunks_with_vectors(&store, ns, 11).await;
    let scans = || index_scans(&pool, &schema);
    let before = scans().await;
    let query = [0.3_f32, -0.2, 0.8, 0.1];
    // Each search runs on a store of its own, closed afterwards: a backend
    // reports its statistics when it exits.
    // The planner would scan 60 rows sequentially whatever the query asked; with
    // sequential scans priced out, only `exact` keeps the index unused.
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20enable_seqscan%3Doff");
    let search = |exact: bool| {
        let (url, schema) = (url.clone(), schema.clone());
        let generation = generation.generation();
        async move {
            let s = PgStore::connect_with(&url, config(&schema)).await.unwrap();
            let hits = s
                .search_chunks_semantic(
                    &ChunkFilter {
                        exact,
                        ..filter(ns)
                    },
                    &generation,
                    &query,
                    5,
                )
                .await
                .unwrap();
            s.close().await;
            hits
        }
    };
    let exact = search(true).await;
    let indexed = search(false).await;
    assert_eq!(ids(&exact), ids(&indexed));
    assert_eq!(exact.len(), 5);
    // The index pass of the second search is counted; the exact one added nothing.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut after = scans().await;
    while after == before && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        after = scans().await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        scans().await,
        before + 1,
        "one index scan, by the non-exact search"
    );
    drop_schema(&store).await;
}

/// A namespace with fewer vectors than `exact_scan_below` ranks them by exact scan:
/// its searches leave the generation's HNSW index unscanned and rank as the index
/// pass of a store that always walks it (`exact_scan_below: 0`).
#[tokio::test]
async fn pg_search_a_small_namespace_ranks_exactly_without_the_index() {
    let Some((store, ns)) = open(
        "pg_search_a_small_namespace_ranks_exactly_without_the_index",
        "small",
    )
    .await
    else {
        return;
    };
    let url = database_url("pg_search_a_small_namespace_ranks_exactly_without_the_index").unwrap();
    let schema = store.schema().unwrap().to_string();
    let pool = store.pool().clone();
    let generation = sixty_chunks_with_vectors(&store, ns, 29).await;
    let scans = || index_scans(&pool, &schema);
    // Sequential scans priced out, as in the test above: only the choice of an
    // exact scan keeps the index unused.
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20enable_seqscan%3Doff");
    let query = [0.3_f32, -0.2, 0.8, 0.1];
    // Each search runs on a store of its own, closed afterwards: a backend reports
    // its statistics when it exits.
    let search = |exact_scan_below: usize| {
        let (url, schema) = (url.clone(), schema.clone());
        let generation = generation.generation();
        async move {
            let s = PgStore::connect_with(
                &url,
                PgStoreConfig {
                    exact_scan_below,
                    ..config(&schema)
                },
            )
            .await
            .unwrap();
            let hits = s
                .search_chunks_semantic(&filter(ns), &generation, &query, 5)
                .await
                .unwrap();
            s.close().await;
            hits
        }
    };
    let settled = || async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let mut last = scans().await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mut now = scans().await;
        while now != last && std::time::Instant::now() < deadline {
            last = now;
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            now = scans().await;
        }
        now
    };
    let before = settled().await;
    // 60 vectors: below the default bound and below 61, exact.
    let small = search(rememberstack_pg::DEFAULT_EXACT_SCAN_BELOW).await;
    let also_small = search(61).await;
    assert_eq!(
        settled().await,
        before,
        "a small namespace scanned the index"
    );
    // At the bound the namespace is no longer small: the index is walked.
    let walked = search(60).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while scans().await == before && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(settled().await, before + 1, "one index scan, by the walk");
    assert_eq!(small.len(), 5);
    assert_eq!(ids(&small), ids(&walked));
    assert_eq!(ids(&also_small), ids(&walked));
    drop_schema(&store).await;
}

// --- BM25 (migration 0011)

/// Rows of `lexical_totals` and `lexical_terms` that differ from the statistics
/// recounted from the lexical rows (0 when the triggers kept them right).
async fn statistics_drift(pool: &PgPool) -> i64 {
    let mut drift = 0;
    for (channel, table) in [
        ("chunk", "chunk_lexical"),
        ("claim", "claim_lexical"),
        ("fact", "fact_lexical"),
    ] {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "WITH kept AS (SELECT namespace_id, term, df FROM lexical_terms WHERE channel = $1),
                  counted AS (SELECT l.namespace_id, u.lexeme COLLATE \"C\" AS term, COUNT(*) AS df
                                FROM {table} l, unnest(l.tsv) AS u GROUP BY 1, 2),
                  totals AS (SELECT namespace_id, docs, tokens FROM lexical_totals
                              WHERE channel = $1 AND docs > 0),
                  recounted AS (SELECT namespace_id, COUNT(*) AS docs, SUM(len) AS tokens
                                  FROM {table} GROUP BY namespace_id)
             SELECT (SELECT COUNT(*) FROM ((SELECT * FROM kept EXCEPT SELECT * FROM counted)
                                 UNION ALL (SELECT * FROM counted EXCEPT SELECT * FROM kept)) d)
                  + (SELECT COUNT(*) FROM ((SELECT * FROM totals EXCEPT SELECT * FROM recounted)
                                 UNION ALL (SELECT * FROM recounted EXCEPT SELECT * FROM totals)) d)"
        )))
        .bind(channel)
        .fetch_one(pool)
        .await
        .unwrap();
        drift += n;
    }
    drift
}

/// Ten body chunks of one current version, in this order (`seq`).
const BM25_CORPUS: [&str; 10] = [
    "She did see an apple tree",
    "apple jam",
    "apple cider in autumn",
    "the zebra ate grass",
    "kiwi is a green fruit from far away",
    "kiwi fruit",
    "nothing to see",
    "rain again today",
    "a quiet evening",
    "sunny morning walk",
];

async fn bm25_corpus(store: &PgStore, ns: NamespaceId) -> Vec<ChunkId> {
    let pool = store.pool();
    let (d, v) = (DocumentId::new(), VersionId::new());
    document(pool, ns, d, Some(v)).await;
    section(pool, ns, v, 0, "body").await;
    let mut out = vec![];
    for (i, text) in BM25_CORPUS.iter().enumerate() {
        let id = ChunkId::new();
        chunk(pool, ns, id, d, v, i as i32, 0, text, &format!("k{i}")).await;
        out.push(id);
    }
    out
}

fn terms(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn assert_scores(hits: &[ChunkHit], chunks: &[ChunkId], expected: &[(usize, f64)]) {
    assert_eq!(
        ids(hits),
        expected.iter().map(|(i, _)| chunks[*i]).collect::<Vec<_>>()
    );
    for (hit, (_, score)) in hits.iter().zip(expected) {
        assert!(
            (hit.score - score).abs() < 1e-9,
            "score {} where FTS5 gives {score}",
            hit.score
        );
    }
}

/// The statistics follow every delete: the base row's cascade, a direct delete
/// of lexical rows, an update of the text.
#[tokio::test]
async fn pg_search_lexical_statistics_follow_deletes() {
    let Some((store, ns)) = open("pg_search_lexical_statistics_follow_deletes", "bm25del").await
    else {
        return;
    };
    let pool = store.pool().clone();
    let c = bm25_corpus(&store, ns).await;
    let df = |term: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT df FROM lexical_terms WHERE namespace_id = $1 AND channel = 'chunk'
                   AND term = $2",
            )
            .bind(ns.to_string())
            .bind(term)
            .fetch_optional(&pool)
            .await
            .unwrap()
        }
    };
    let totals = || {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (i64, i64)>(
                "SELECT docs, tokens FROM lexical_totals
                  WHERE namespace_id = $1 AND channel = 'chunk'",
            )
            .bind(ns.to_string())
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(totals().await, (10, 38));
    assert_eq!(df("see").await, Some(2));
    assert_eq!(df("zebra").await, Some(1));
    // The chunk goes, its lexical row with it (the foreign key's cascade): its
    // words no row holds any more leave the statistics, and the ranking is
    // FTS5's over the nine rows left.
    sqlx::query("DELETE FROM chunks WHERE namespace_id = $1 AND id = $2")
        .bind(ns.to_string())
        .bind(c[3].to_string())
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(totals().await, (9, 34));
    assert_eq!(df("zebra").await, None);
    assert_eq!(df("grass").await, None);
    let hits = store
        .search_chunks_lexical(&filter(ns), &terms(&["apple", "zebra"]), 10)
        .await
        .unwrap();
    assert_scores(
        &hits,
        &c,
        &[
            (1, 0.766624715046118),
            (2, 0.604492595153858),
            (0, 0.4989669481550164),
        ],
    );
    // A lexical row deleted on its own: `see` is counted once now.
    sqlx::query(
        "DELETE FROM chunk_lexical WHERE namespace_id = $1
           AND seq = (SELECT seq FROM chunks WHERE namespace_id = $1 AND id = $2)",
    )
    .bind(ns.to_string())
    .bind(c[6].to_string())
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(totals().await, (8, 31));
    assert_eq!(df("see").await, Some(1));
    // A changed text moves the counts from the old words to the new.
    sqlx::query(
        "UPDATE chunk_lexical SET text = 'kiwi kiwi kiwi' WHERE namespace_id = $1
           AND seq = (SELECT seq FROM chunks WHERE namespace_id = $1 AND id = $2)",
    )
    .bind(ns.to_string())
    .bind(c[7].to_string())
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(totals().await, (8, 31));
    assert_eq!(df("rain").await, None);
    assert_eq!(df("kiwi").await, Some(3));
    assert_eq!(statistics_drift(&pool).await, 0);
    drop_schema(&store).await;
}

/// A pool of eight connections to the store's schema, for concurrent writers, and
/// a document with a current version (and its body section) for their chunks.
async fn writers(store: &PgStore, ns: NamespaceId) -> (PgPool, DocumentId, VersionId) {
    let schema = store.schema().unwrap().to_string();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(8)
        .after_connect(move |conn, _| {
            let sql = format!("SET search_path TO \"{schema}\", public");
            Box::pin(async move {
                sqlx::Executor::execute(conn, sqlx::AssertSqlSafe(sql)).await?;
                Ok(())
            })
        })
        .connect_with(store.pool().connect_options().as_ref().clone())
        .await
        .unwrap();
    let (d, v) = (DocumentId::new(), VersionId::new());
    document(&pool, ns, d, Some(v)).await;
    section(&pool, ns, v, 0, "body").await;
    (pool, d, v)
}

/// A chunk of version `v` of document `d` with `text` and `embedding_key`, written
/// in `tx`; its `seq`.
async fn insert_chunk(
    tx: &mut sqlx::PgConnection,
    ns: NamespaceId,
    (d, v): (DocumentId, VersionId),
    ordinal: usize,
    text: &str,
    embedding_key: &str,
) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal,
             section_ordinal, block_start, block_end, start_byte, end_byte,
             char_start, char_end, text, content_hash, token_estimate,
             embedding_key, event_ids_json)
         VALUES ($1, $2, $3, $4, $5, 0, 0, 1, 0, 10, 0, 10, $6, 'h', 4, $7, '[]'::jsonb)
         RETURNING seq",
    )
    .bind(ns.to_string())
    .bind(ChunkId::new().to_string())
    .bind(v.to_string())
    .bind(d.to_string())
    .bind(ordinal as i32)
    .bind(text)
    .bind(embedding_key)
    .fetch_one(tx)
    .await
    .unwrap()
}

/// Writers of one namespace's statistics, each adding and removing rows over
/// several statements of one transaction with the same words in different
/// orders, never deadlock, and the statistics come out exact.
#[tokio::test]
async fn pg_search_lexical_concurrent_writers_never_deadlock() {
    let Some((store, ns)) = open(
        "pg_search_lexical_concurrent_writers_never_deadlock",
        "bm25conc",
    )
    .await
    else {
        return;
    };
    let (pool, d, v) = writers(&store, ns).await;
    const WORDS: [&str; 8] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let mut tasks = vec![];
    for w in 0..8usize {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let mut tx = pool.begin().await.unwrap();
            for i in 0..6usize {
                // Each writer walks the words from its own start, forwards or backwards.
                let text: Vec<&str> = (0..5)
                    .map(|k| {
                        let j = if w % 2 == 0 {
                            w + i + k
                        } else {
                            w + 64 - i - k
                        };
                        WORDS[j % WORDS.len()]
                    })
                    .collect();
                let seq =
                    insert_chunk(&mut tx, ns, (d, v), w * 100 + i, &text.join(" "), "k").await;
                sqlx::query(
                    "INSERT INTO chunk_lexical (namespace_id, seq, text)
                     SELECT namespace_id, seq, text FROM chunks WHERE seq = $1",
                )
                .bind(seq)
                .execute(&mut *tx)
                .await
                .unwrap();
                if i % 3 == 2 {
                    // Take one of this writer's rows out again.
                    sqlx::query("DELETE FROM chunks WHERE seq = $1")
                        .bind(seq)
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            tx.commit().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let docs: i64 = sqlx::query_scalar(
        "SELECT docs FROM lexical_totals WHERE namespace_id = $1 AND channel = 'chunk'",
    )
    .bind(ns.to_string())
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(docs, 8 * 4);
    assert_eq!(statistics_drift(&pool).await, 0);
    pool.close().await;
    drop_schema(&store).await;
}

// --- Vector coverage counters (migration 0036)

/// Chunks and the vectors of their keys written at once by concurrent
/// transactions, in opposite orders: each counter query runs after its writer
/// holds the namespace's stamp row, so no chunk is counted without the vector an
/// earlier writer committed, and the counters equal the recount.
#[tokio::test]
async fn pg_search_coverage_counters_hold_under_concurrent_writers() {
    let Some((store, ns)) = open(
        "pg_search_coverage_counters_hold_under_concurrent_writers",
        "covconc",
    )
    .await
    else {
        return;
    };
    let (pool, d, v) = writers(&store, ns).await;
    const KEYS: usize = 6;
    let mut tasks = vec![];
    for w in 0..8usize {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let mut tx = pool.begin().await.unwrap();
            for i in 0..KEYS {
                if w % 2 == 0 {
                    insert_chunk(&mut tx, ns, (d, v), w * 100 + i, "words", &format!("k{i}")).await;
                } else {
                    sqlx::query(
                        "INSERT INTO vectors (namespace_id, generation, embedding_key, dimension,
                             embedding, created_at)
                         VALUES ($1, 'g', $2, 3, '[1,0,0]'::vector, now()) ON CONFLICT DO NOTHING",
                    )
                    .bind(ns.to_string())
                    .bind(format!("k{}", KEYS - 1 - i))
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                }
                tokio::time::sleep(std::time::Duration::from_millis(3)).await;
            }
            tx.commit().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let counted = store.vector_coverage(ns, "g").await.unwrap();
    assert_eq!(
        counted,
        VectorCoverage {
            chunks: 4 * KEYS as u64,
            missing: 0
        }
    );
    let recounted = store
        .recount_vector_coverage(ns, rememberstack_sql::coverage::Target::Chunks, "g")
        .await
        .unwrap();
    assert_eq!(counted, recounted);
    pool.close().await;
    drop_schema(&store).await;
}
