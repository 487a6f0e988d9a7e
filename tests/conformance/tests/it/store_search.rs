//! The search area of the store contract on every store: lexical chunk search
//! (eligibility, scopes, anchors, terms that are only words, BM25 with FTS5's
//! scores). What only PostgreSQL shows (its HNSW indexes and the planner's use of
//! them, the BM25 statistics tables, concurrent writers) stays in its own tests,
//! and so do chunk vector commits and semantic chunk search, whose PostgreSQL
//! tests also check refusals (vectors of another dimension or not finite, a
//! non-finite query) the embedded store does not make.

use crate::store_fixtures::{chunk_as, chunked_version, extract, mention, new_claim};
use chrono::{TimeZone, Utc};
use rememberstack::store::text::SectionRole;
use rememberstack::store::traits::*;
use rememberstack::store::{ChunkFilter, ChunkHit, NewChunk};
use rememberstack::{ChunkId, DocumentId, EntityId, NamespaceId, VersionId};
use rememberstack_conformance::stores;

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
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

/// Chunk `id` of section `section` at `ordinal`, its vector under `key`.
fn planned(id: ChunkId, ordinal: u32, section: u32, text: &str, key: &str) -> NewChunk {
    chunk_as(id, ordinal, section, text, key)
}

/// A version of lineage `source_ref` with sections of `roles` and these chunks
/// (the lineage's current version once committed, being its newest).
async fn version(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    source_ref: &str,
    bytes: &str,
    roles: &[SectionRole],
    chunks: Vec<NewChunk>,
) -> (DocumentId, VersionId) {
    chunked_version(
        store,
        ns,
        source_ref,
        bytes.as_bytes(),
        "T",
        roles,
        chunks,
        at(0),
    )
    .await
}

/// A claim of chunk `chunk` that mentions `entity` (a new one when `None`).
async fn mentioned(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    (doc, version, chunk): (DocumentId, VersionId, ChunkId),
    entity: Option<EntityId>,
) -> EntityId {
    let c = new_claim(doc, version, chunk, "X", &ChunkId::new().to_string(), at(0));
    let id = c.id;
    extract(
        store,
        ns,
        (doc, version, chunk),
        &format!("h-{id}"),
        vec![c],
        at(0),
    )
    .await;
    mention(store, ns, id, entity, "X", at(0)).await
}

#[tokio::test]
async fn search_lexical_ranks_eligible_chunks() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("default", at(0)).await.unwrap().id;
        let roles = [SectionRole::Body, SectionRole::Nav];
        let (a, b, c, nav, old, other) = (
            ChunkId::new(),
            ChunkId::new(),
            ChunkId::new(),
            ChunkId::new(),
            ChunkId::new(),
            ChunkId::new(),
        );
        // Lineage 1: an old version, then the current one; lineage 2: one version.
        version(
            store,
            ns,
            "d1",
            "v0",
            &roles,
            vec![planned(old, 0, 0, "Kigali marathon runs", "ko")],
        )
        .await;
        let (d1, v1) = version(
            store,
            ns,
            "d1",
            "v1",
            &roles,
            vec![
                planned(a, 0, 0, "The runner was running a marathon in Kigali", "ka"),
                planned(b, 1, 0, "Kigali is a city", "kb"),
                planned(nav, 2, 1, "Kigali runs the menu", "kn"),
            ],
        )
        .await;
        let (d2, _) = version(
            store,
            ns,
            "d2",
            "v2",
            &roles,
            vec![planned(c, 0, 0, "Nothing relevant here", "kc")],
        )
        .await;
        // Another namespace's matching chunk never shows.
        let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
        version(
            store,
            ns2,
            "d3",
            "v3",
            &roles,
            vec![planned(other, 0, 0, "Kigali marathon run", "kx")],
        )
        .await;

        let t = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let f = filter(ns);
        // Stemmed (`run` finds `running`), OR-joined, best first; only current body chunks.
        let hits = store
            .search_chunks_lexical(&f, &t(&["run", "marathon", "kigali"]), 10)
            .await
            .unwrap();
        assert_eq!(ids(&hits), vec![a, b], "{}", h.kind);
        assert!(hits[0].score > hits[1].score && hits[1].score > 0.0);
        // BM25 normalises by length: b, the shorter chunk, ranks above a although a
        // was written first.
        let hits = store
            .search_chunks_lexical(&f, &t(&["kigali"]), 10)
            .await
            .unwrap();
        let expected = vec![b, a];
        assert_eq!(ids(&hits), expected);
        assert!(hits[0].score > hits[1].score);
        assert_eq!(
            ids(&store
                .search_chunks_lexical(&f, &t(&["kigali"]), 1)
                .await
                .unwrap()),
            vec![expected[0]]
        );
        // Roles: nav admitted only when asked for.
        let with_nav = ChunkFilter {
            roles: vec![SectionRole::Body, SectionRole::Nav],
            ..f.clone()
        };
        let mut got = ids(&store
            .search_chunks_lexical(&with_nav, &t(&["kigali"]), 10)
            .await
            .unwrap());
        got.sort();
        let mut want = vec![a, b, nav];
        want.sort();
        assert_eq!(got, want);
        let no_roles = ChunkFilter {
            roles: vec![],
            ..f.clone()
        };
        assert!(
            store
                .search_chunks_lexical(&no_roles, &t(&["kigali"]), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Document scope: only the scoped lineages; an empty scope admits nothing.
        let scoped = ChunkFilter {
            documents: Some(vec![d2]),
            ..f.clone()
        };
        assert_eq!(
            ids(&store
                .search_chunks_lexical(&scoped, &t(&["kigali", "relevant"]), 10)
                .await
                .unwrap()),
            vec![c]
        );
        let empty_scope = ChunkFilter {
            documents: Some(vec![]),
            ..f.clone()
        };
        assert!(
            store
                .search_chunks_lexical(&empty_scope, &t(&["kigali"]), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Entity anchor: only chunks with a claim mentioning an anchored entity.
        let e1 = mentioned(store, ns, (d1, v1, b), None).await;
        let e2 = EntityId::new();
        let anchored = ChunkFilter {
            entities: vec![e1, e2],
            ..f.clone()
        };
        assert_eq!(
            ids(&store
                .search_chunks_lexical(&anchored, &t(&["kigali"]), 10)
                .await
                .unwrap()),
            vec![b]
        );
        let anchored_elsewhere = ChunkFilter {
            entities: vec![e2],
            ..f.clone()
        };
        assert!(
            store
                .search_chunks_lexical(&anchored_elsewhere, &t(&["kigali"]), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Terms are words, never query syntax; no terms or no limit: nothing.
        for syntax in [
            t(&["kigali & !city"]),
            t(&["'kigali'", ":*", "|"]),
            t(&["a\\b", "(", "<->"]),
        ] {
            store.search_chunks_lexical(&f, &syntax, 10).await.unwrap();
        }
        let hits = store
            .search_chunks_lexical(&f, &t(&["KIGALI"]), 10)
            .await
            .unwrap();
        assert_eq!(hits.len(), 2, "a term matches whatever its case");
        // A term of several tokens is a phrase: `kigali's` is `kigali` followed by
        // `s`, which no chunk holds.
        assert!(
            store
                .search_chunks_lexical(&f, &t(&["kigali's"]), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Stop words are indexed.
        assert_eq!(
            ids(&store
                .search_chunks_lexical(&f, &t(&["the"]), 10)
                .await
                .unwrap()),
            vec![a],
        );
        assert!(
            store
                .search_chunks_lexical(&f, &[], 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .search_chunks_lexical(&f, &t(&["kigali"]), 0)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

/// Ten body chunks of one current version, in this order.
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

/// The scores SQLite's FTS5 gives [`BM25_CORPUS`] (`-bm25()`, tokenizer
/// `porter unicode61 remove_diacritics 2`), best first.
const FTS5_APPLE_OR_ZEBRA: [(usize, f64); 4] = [
    (3, 1.8069216782864224),
    (1, 0.9453250497198898),
    (2, 0.7460762102004751),
    (0, 0.61619833995281),
];

async fn bm25_corpus(store: &dyn MemoryStore, ns: NamespaceId) -> Vec<ChunkId> {
    let out: Vec<ChunkId> = BM25_CORPUS.iter().map(|_| ChunkId::new()).collect();
    let chunks = BM25_CORPUS
        .iter()
        .zip(&out)
        .enumerate()
        .map(|(i, (text, id))| planned(*id, i as u32, 0, text, &format!("k{i}")))
        .collect();
    let source = uuid::Uuid::new_v4().to_string();
    version(store, ns, &source, &source, &[SectionRole::Body], chunks).await;
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

/// Rankings that need corpus statistics and length normalisation, with FTS5's
/// `bm25()` scores to the ninth decimal.
#[tokio::test]
async fn search_lexical_is_fts5_bm25() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("default", at(0)).await.unwrap().id;
        let c = bm25_corpus(store, ns).await;
        let f = filter(ns);
        // The rare term (zebra, 1 row of 10) beats the commoner one (apple, 3 rows),
        // written before it; among the apple rows the shortest ranks first.
        let hits = store
            .search_chunks_lexical(&f, &terms(&["apple", "zebra"]), 10)
            .await
            .unwrap();
        assert_scores(&hits, &c, &FTS5_APPLE_OR_ZEBRA);
        // A shorter row beats a longer one with the same term frequency.
        let hits = store
            .search_chunks_lexical(&f, &terms(&["kiwi"]), 10)
            .await
            .unwrap();
        assert_scores(
            &hits,
            &c,
            &[(5, 1.517917300943752), (4, 0.8427316810840929)],
        );
        // Stop words are words: `she` and `did` match and score as FTS5 scores them.
        for (query, score) in [
            (&["she"][..], 1.4923705157220546),
            (&["she", "did"][..], 2.984741031444109),
        ] {
            let hits = store
                .search_chunks_lexical(&f, &terms(query), 10)
                .await
                .unwrap();
            assert_scores(&hits, &c, &[(0, score)]);
        }
        // Another namespace's rows never change this one's statistics.
        let other = store.ensure_namespace("other", at(0)).await.unwrap().id;
        bm25_corpus(store, other).await;
        bm25_corpus(store, other).await;
        let hits = store
            .search_chunks_lexical(&f, &terms(&["apple", "zebra"]), 10)
            .await
            .unwrap();
        assert_scores(&hits, &c, &FTS5_APPLE_OR_ZEBRA);
    }
}

/// The vector rules every store applies: a vector of another dimension than its
/// generation's, or with a non-finite component, is refused typed and nothing of
/// its batch is kept; a query vector with a NaN is refused by every semantic search.
#[tokio::test]
async fn vectors_of_another_dimension_or_not_finite_and_nan_queries_are_refused() {
    use crate::store_fixtures::{identity, lease, put_vectors};
    use rememberstack::store::{ClaimFilter, facts::FactFilter};
    use rememberstack::{ErrorCode, Stage};
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("vectors", at(0)).await.unwrap().id;
        let (_, version) = version(
            store,
            ns,
            "v",
            "# T\n\nalpha\n",
            &[SectionRole::Body],
            vec![planned(ChunkId::new(), 0, 0, "alpha", "k1")],
        )
        .await;
        let generation = identity("m", 3);
        let gen_key = generation.generation();
        let keys = vec!["k1".to_string(), "k2".to_string()];
        for bad in [
            vec![
                ("k1".to_string(), vec![1.0, 0.0, 0.0]),
                ("k2".to_string(), vec![1.0, 0.0]),
            ],
            vec![
                ("k1".to_string(), vec![1.0, 0.0, 0.0]),
                ("k2".to_string(), vec![f32::NAN, 0.0, 0.0]),
            ],
            vec![("k2".to_string(), vec![f32::INFINITY, 0.0, 0.0])],
        ] {
            let work = lease(store, ns, version, Stage::Embed, "w").await;
            let err = store
                .commit_vectors(std::slice::from_ref(&work), ns, &generation, bad, at(5))
                .await
                .unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidInput, "{}: {err}", h.kind);
            assert!(
                store
                    .existing_vectors(ns, &gen_key, &keys)
                    .await
                    .unwrap()
                    .is_empty(),
                "{}: nothing of the refused batch is kept",
                h.kind
            );
        }
        put_vectors(
            store,
            ns,
            &generation,
            vec![("k1".into(), vec![1.0, 0.0, 0.0])],
            at(6),
        )
        .await;
        let nan = [f32::NAN, 0.0, 0.0];
        let chunks = store
            .search_chunks_semantic(&filter(ns), &gen_key, &nan, 5)
            .await;
        let claims = store
            .search_claims_semantic(
                &ClaimFilter {
                    namespace_id: ns,
                    include_retired: false,
                    document_id: None,
                    entities: vec![],
                    documents: None,
                },
                &gen_key,
                &nan,
                5,
            )
            .await;
        let facts = store
            .search_facts_semantic(
                &FactFilter {
                    namespace_id: ns,
                    entities: vec![],
                    at: None,
                    history: false,
                    overlap: None,
                    documents: None,
                    group: None,
                    unsupported: false,
                },
                &gen_key,
                &nan,
                5,
            )
            .await;
        for (what, code) in [
            ("chunks", chunks.map(|_| ()).map_err(|e| e.code())),
            ("claims", claims.map(|_| ()).map_err(|e| e.code())),
            ("facts", facts.map(|_| ()).map_err(|e| e.code())),
        ] {
            assert_eq!(code, Err(ErrorCode::InvalidInput), "{}: {what}", h.kind);
        }
        // The same search with a finite query ranks the kept vector.
        let hits = store
            .search_chunks_semantic(&filter(ns), &gen_key, &[1.0, 0.0, 0.0], 5)
            .await
            .unwrap();
        assert_eq!(hits.len(), 1, "{}", h.kind);
    }
}
