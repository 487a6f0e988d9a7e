//! The claims area of the store contract on every store: extraction commits
//! (lease-fenced, all or nothing), reuse lookups, currency, claim reads, lexical
//! and semantic claim search, claim vector coverage. What only PostgreSQL shows
//! (many sessions applying currency to one lineage at once) stays in its own tests.

use crate::store_fixtures::{
    EXTRACTOR as EXT, chunk_as, chunked_version, extract, forget_manifest, fresh, identity, lease,
    mention, new_claim, occurrence, put_vectors, rows,
};
use chrono::{TimeZone, Utc};
use rememberstack::store::ledger::{NewWork, Stage, WorkStatus};
use rememberstack::store::text::SectionRole;
use rememberstack::store::traits::*;
use rememberstack::store::{ClaimFilter, ClaimHit, DecisionRow, ExtractionCommit, Lease, NewClaim};
use rememberstack::{ChunkId, ClaimId, DocumentId, EntityId, ErrorCode, NamespaceId, VersionId};
use rememberstack_conformance::{Harness, stores};

fn at(secs: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0).unwrap()
}

/// A lineage with one version per entry of `chunks` (titled `{source_ref} vN`,
/// holding those chunks), the last one current.
async fn document(
    store: &dyn MemoryStore,
    ns: NamespaceId,
    source_ref: &str,
    chunks: &[&[ChunkId]],
) -> (DocumentId, Vec<VersionId>) {
    let mut doc = DocumentId::new();
    let mut versions = Vec::new();
    for (i, ids) in chunks.iter().enumerate() {
        let planned = ids
            .iter()
            .enumerate()
            .map(|(o, id)| chunk_as(*id, o as u32, 0, "text", &format!("k-{id}")))
            .collect();
        let (d, v) = chunked_version(
            store,
            ns,
            source_ref,
            format!("{source_ref} {i}").as_bytes(),
            &format!("{source_ref} v{}", i + 1),
            &[SectionRole::Body],
            planned,
            at(i as i64),
        )
        .await;
        doc = d;
        versions.push(v);
    }
    (doc, versions)
}

fn claim_at(
    doc: DocumentId,
    version: VersionId,
    chunk: ChunkId,
    text: &str,
    key: &str,
) -> NewClaim {
    new_claim(doc, version, chunk, text, key, at(5))
}

fn filter(ns: NamespaceId) -> ClaimFilter {
    ClaimFilter {
        namespace_id: ns,
        include_retired: false,
        document_id: None,
        entities: vec![],
        documents: None,
    }
}

async fn status(store: &dyn MemoryStore, lease: &Lease) -> WorkStatus {
    store
        .work_item(lease.work_id)
        .await
        .unwrap()
        .unwrap()
        .status
}

/// The claim's currency transitions, oldest first: (current, reason).
async fn currency_events(h: &Harness, claim: ClaimId) -> Vec<(bool, String)> {
    h.query_texts(&format!(
        "SELECT CASE WHEN is_current THEN 'true' ELSE 'false' END || ' ' || reason
           FROM claim_currency_events WHERE claim_id = '{claim}' ORDER BY seq"
    ))
    .await
    .iter()
    .map(|r| {
        let (current, reason) = r.split_once(' ').unwrap();
        (current == "true", reason.to_string())
    })
    .collect()
}

#[tokio::test]
async fn claims_commit_reuse_currency_and_reads() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("t", at(0)).await.unwrap().id;
        // Chunk k1 of version 1 and k3 of version 2 are stored; k2 (only reused) is not.
        let (k1, k2, k3) = (ChunkId::new(), ChunkId::new(), ChunkId::new());
        let (doc, v) = document(store, ns, "notes.md", &[&[k1], &[k3]]).await;
        let (v1, v2) = (v[0], v[1]);

        // --- commit: one item commits, one whose lease was lost is skipped.
        let a = claim_at(doc, v1, k1, "Alice moved to Kigali in 2021", "a");
        let b = claim_at(doc, v1, k1, "Bob likes green tea", "b");
        let mut x1 = fresh(doc, v1, k1, "hash-1", vec![a.clone(), b.clone()]);
        x1.decisions.push(DecisionRow {
            kind: "drop".to_string(),
            passage: Some("P2".to_string()),
            reason: Some("opinion".to_string()),
            claim_id: None,
            detail: serde_json::json!({"passage": "I think so"}),
        });
        let l1 = lease(store, ns, v1, Stage::Extract, "w1").await;
        let lost = lease(store, ns, v1, Stage::Extract, "someone-else").await;
        let stray = claim_at(doc, v1, ChunkId::new(), "never written", "stray");
        let lost_x = fresh(
            doc,
            v1,
            stray.origin_chunk_id,
            "hash-lost",
            vec![stray.clone()],
        );
        let follow = NewWork::now(ns, Stage::EmbedClaims, a.id.uuid(), v1, "emb-1", at(1));
        let flags = store
            .commit_extractions(
                ns,
                vec![
                    (l1.clone(), x1, vec![follow.clone(), follow.clone()]),
                    (
                        Lease {
                            work_id: lost.work_id,
                            owner: "w1".to_string(),
                        },
                        lost_x,
                        vec![],
                    ),
                ],
                at(10),
            )
            .await
            .unwrap();
        assert_eq!(flags, vec![true, false], "{}", h.kind);
        assert_eq!(status(store, &l1).await, WorkStatus::Done);
        assert_eq!(status(store, &lost).await, WorkStatus::Running);
        let follow_ups = store
            .work_items(Some(ns), WorkStatus::Pending, 1_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|w| {
                w.stage == Stage::EmbedClaims
                    && w.target_id == a.id.uuid()
                    && w.component_version == "emb-1"
            })
            .count();
        assert_eq!(follow_ups, 1, "follow-up work is enqueued once");
        assert!(store.claims(ns, &[stray.id]).await.unwrap().is_empty());
        // One full-text entry per written claim (the skipped one has none).
        let mut retired = filter(ns);
        retired.include_retired = true;
        let terms: Vec<String> = ["alice", "tea", "never", "written"]
            .map(String::from)
            .to_vec();
        let mut found: Vec<ClaimId> = store
            .search_claims_lexical(&retired, &terms, 10)
            .await
            .unwrap()
            .iter()
            .map(|h| h.claim_id)
            .collect();
        found.sort();
        assert_eq!(found, sorted(vec![a.id, b.id]), "{}", h.kind);

        // A replayed lease (already done) is lost: nothing is written twice.
        let replay = fresh(doc, v1, k1, "hash-1", vec![a.clone()]);
        let flags = store
            .commit_extractions(ns, vec![(l1.clone(), replay, vec![])], at(11))
            .await
            .unwrap();
        assert_eq!(flags, vec![false]);

        // A batch with a failing item rolls back as a whole.
        let l_ok = lease(store, ns, v2, Stage::Extract, "w1").await;
        let l_bad = lease(store, ns, v2, Stage::Extract, "w1").await;
        let fresh_ok = claim_at(doc, v2, ChunkId::new(), "rolled back", "rb");
        let dup = fresh(doc, v2, ChunkId::new(), "hash-dup", vec![a.clone()]);
        let err = store
            .commit_extractions(
                ns,
                vec![
                    (
                        l_ok.clone(),
                        fresh(
                            doc,
                            v2,
                            fresh_ok.origin_chunk_id,
                            "hash-rb",
                            vec![fresh_ok.clone()],
                        ),
                        vec![],
                    ),
                    (l_bad.clone(), dup, vec![]),
                ],
                at(12),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Store, "{}", h.kind);
        assert_eq!(status(store, &l_ok).await, WorkStatus::Running);
        assert!(store.claims(ns, &[fresh_ok.id]).await.unwrap().is_empty());

        // --- reuse: v2's chunk k2 reuses claim a.
        let mut occ = occurrence(&a, v2, k2, 0);
        occ.reused = true;
        let x2 = ExtractionCommit {
            document_id: doc,
            version_id: v2,
            chunk_id: k2,
            extraction_input_hash: "hash-1".to_string(),
            extractor_version: EXT.to_string(),
            claims: vec![],
            occurrences: vec![occ],
            decisions: vec![DecisionRow {
                kind: "reused".to_string(),
                passage: None,
                reason: None,
                claim_id: Some(a.id),
                detail: serde_json::json!({}),
            }],
        };
        let l2 = lease(store, ns, v2, Stage::Extract, "w2").await;
        assert_eq!(
            store
                .commit_extractions(ns, vec![(l2, x2, vec![])], at(20))
                .await
                .unwrap(),
            vec![true]
        );

        // prior_extractions: the newest fresh extraction (the reuse does not count)
        // whose chunk is still stored.
        let prior = store
            .prior_extractions(ns, doc, &["hash-1".to_string(), "hash-none".to_string()])
            .await
            .unwrap();
        assert_eq!(prior.len(), 1, "{}", h.kind);
        assert_eq!(prior[0].0, "hash-1");
        assert_eq!(prior[0].1.chunk_id, k1);
        let occ_ids: Vec<ClaimId> = prior[0].1.occurrences.iter().map(|o| o.claim_id).collect();
        assert_eq!(occ_ids, vec![a.id, b.id], "occurrences by ordinal");
        assert_eq!(prior[0].1.occurrences[0], occurrence(&a, v1, k1, 0));
        // A later fresh extraction of the same input wins.
        let c3 = claim_at(doc, v2, k3, "Carol runs the office", "c");
        extract(store, ns, (doc, v2, k3), "hash-1", vec![c3.clone()], at(21)).await;
        let prior = store
            .prior_extractions(ns, doc, &["hash-1".to_string()])
            .await
            .unwrap();
        assert_eq!(prior[0].1.chunk_id, k3);
        assert_eq!(prior[0].1.occurrences.len(), 1);

        // claims_by_key
        let keys = store
            .claims_by_key(
                ns,
                doc,
                &[
                    "key-b".to_string(),
                    "key-a".to_string(),
                    "key-x".to_string(),
                ],
            )
            .await
            .unwrap();
        assert_eq!(
            keys,
            vec![("key-a".to_string(), a.id), ("key-b".to_string(), b.id)],
            "by write order"
        );
        assert!(
            store
                .claims_by_key(ns, DocumentId::new(), &["key-a".to_string()])
                .await
                .unwrap()
                .is_empty()
        );

        // version_claims
        assert_eq!(
            sorted(store.version_claims(ns, v1, EXT).await.unwrap()),
            sorted(vec![a.id, b.id])
        );
        assert_eq!(
            sorted(store.version_claims(ns, v2, EXT).await.unwrap()),
            sorted(vec![a.id, c3.id])
        );
        assert!(
            store
                .version_claims(ns, v1, "other")
                .await
                .unwrap()
                .is_empty()
        );

        // decisions, in write order
        let decisions = store.decisions(ns, doc).await.unwrap();
        let kinds: Vec<&str> = decisions.iter().map(|d| d.row.kind.as_str()).collect();
        assert_eq!(kinds, vec!["keep", "keep", "drop", "reused", "keep"]);
        assert_eq!(decisions[0].row.claim_id, Some(a.id));
        assert_eq!(decisions[0].chunk_id, k1);
        assert_eq!(decisions[0].version_id, v1);
        assert_eq!(decisions[0].extractor_version, EXT);
        assert_eq!(decisions[0].created_at, at(10));
        assert_eq!(decisions[2].row.reason.as_deref(), Some("opinion"));
        assert_eq!(decisions[2].row.claim_id, None);
        assert_eq!(
            decisions[2].row.detail,
            serde_json::json!({"passage": "I think so"})
        );
        assert_eq!(decisions[3].version_id, v2);

        // --- currency
        assert!(store.current_claim_refs(ns, doc).await.unwrap().is_empty());
        assert!(store.list_claims(&filter(ns), 10).await.unwrap().is_empty());
        let n = store
            .apply_currency(ns, doc, &[a.id, b.id], "extracted", Some(v1), at(30))
            .await
            .unwrap();
        assert_eq!(n, 2);
        let again = store
            .apply_currency(ns, doc, &[b.id, a.id], "extracted", Some(v1), at(31))
            .await
            .unwrap();
        assert_eq!(again, 0, "a replay changes nothing");
        assert_eq!(
            store.current_claim_refs(ns, doc).await.unwrap(),
            vec![(a.id, EXT.to_string()), (b.id, EXT.to_string())]
        );
        assert_eq!(
            currency_events(&h, a.id).await,
            vec![(true, "extracted".to_string())]
        );

        // list_claims: newest first, current only unless retired are asked for.
        let listed = store.list_claims(&filter(ns), 10).await.unwrap();
        let order: Vec<ClaimId> = listed.iter().map(|c| c.claim_id).collect();
        assert_eq!(order, vec![b.id, a.id]);
        let la = &listed[1];
        assert_eq!(la.text, a.text);
        assert_eq!(la.document_id, doc);
        assert_eq!(
            la.document_title, "notes.md v2",
            "the current version's title"
        );
        assert_eq!(la.source_kind, "file");
        assert_eq!(la.source_ref, "notes.md");
        assert_eq!(la.added_context, a.added_context);
        assert_eq!(la.validity, a.validity);
        assert_eq!(la.asserted_at, a.asserted_at);
        assert_eq!(la.extractor_version, EXT);
        assert!(la.is_current);
        assert_eq!(la.embedding_key, "emb-a");
        let occ: Vec<(VersionId, ChunkId, bool)> = la
            .occurrences
            .iter()
            .map(|o| (o.version_id, o.chunk_id, o.reused))
            .collect();
        assert_eq!(
            occ,
            vec![(v1, k1, false), (v2, k2, true)],
            "oldest version first"
        );
        assert_eq!(store.list_claims(&filter(ns), 1).await.unwrap().len(), 1);
        assert_eq!(store.list_claims(&retired, 10).await.unwrap().len(), 3);
        let mut other_doc = filter(ns);
        other_doc.document_id = Some(DocumentId::new());
        assert!(store.list_claims(&other_doc, 10).await.unwrap().is_empty());

        // claims: in the order asked, missing ids skipped.
        let got = store
            .claims(ns, &[b.id, ClaimId::new(), a.id])
            .await
            .unwrap();
        assert_eq!(
            got.iter().map(|c| c.claim_id).collect::<Vec<_>>(),
            vec![b.id, a.id]
        );
        assert_eq!(got[1], listed[1]);
        assert!(store.claims(ns, &[]).await.unwrap().is_empty());
        assert!(
            store
                .claims(NamespaceId::new(), &[a.id])
                .await
                .unwrap()
                .is_empty()
        );

        // Retire b, make c3 current.
        let n = store
            .apply_currency(ns, doc, &[a.id, c3.id], "superseded", Some(v2), at(40))
            .await
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            currency_events(&h, b.id).await,
            vec![
                (true, "extracted".to_string()),
                (false, "superseded".to_string())
            ]
        );
        let order: Vec<ClaimId> = store
            .list_claims(&filter(ns), 10)
            .await
            .unwrap()
            .iter()
            .map(|c| c.claim_id)
            .collect();
        assert_eq!(order, vec![c3.id, a.id]);

        // A retracted claim never becomes current again.
        store
            .retract_claim(ns, a.id, "wrong", None, at(50))
            .await
            .unwrap();
        let n = store
            .apply_currency(ns, doc, &[a.id, b.id, c3.id], "recheck", None, at(51))
            .await
            .unwrap();
        assert_eq!(n, 1, "a stays retired (retracted), b current again");
        let refs: Vec<ClaimId> = store
            .current_claim_refs(ns, doc)
            .await
            .unwrap()
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(refs, vec![b.id, c3.id]);

        // A deleted version's claims and extractions are no reuse basis.
        h.execute_sql(&format!(
            "UPDATE document_versions SET deleted_at = created_at WHERE id = '{v1}'"
        ))
        .await;
        let keys = store
            .claims_by_key(ns, doc, &["key-a".to_string(), "key-c".to_string()])
            .await
            .unwrap();
        assert_eq!(keys, vec![("key-c".to_string(), c3.id)], "{}", h.kind);
        let prior = store
            .prior_extractions(ns, doc, &[format!("hash-{k1}"), "hash-1".to_string()])
            .await
            .unwrap();
        assert_eq!(prior.len(), 1);
        assert_eq!(prior[0].1.chunk_id, k3);

        // A deleted lineage publishes no testimony.
        store.delete_document(ns, doc, at(70)).await.unwrap();
        let n = store
            .apply_currency(ns, doc, &[b.id, c3.id], "late", None, at(71))
            .await
            .unwrap();
        assert_eq!(n, 0, "{}", h.kind);
        assert!(store.current_claim_refs(ns, doc).await.unwrap().is_empty());

        // A retried extraction of a chunk replaces its occurrences.
        let l4 = lease(store, ns, v2, Stage::Extract, "w4").await;
        let mut only_b = occurrence(&b, v2, k3, 0);
        only_b.reused = true;
        let retry = ExtractionCommit {
            document_id: doc,
            version_id: v2,
            chunk_id: k3,
            extraction_input_hash: "hash-1".to_string(),
            extractor_version: EXT.to_string(),
            claims: vec![],
            occurrences: vec![only_b],
            decisions: vec![],
        };
        store
            .commit_extractions(ns, vec![(l4, retry, vec![])], at(80))
            .await
            .unwrap();
        assert_eq!(
            sorted(store.version_claims(ns, v2, EXT).await.unwrap()),
            sorted(vec![a.id, b.id]),
            "c3's occurrence in k3 was replaced by b's"
        );
        // c3's transitions: made current, retired with its lineage; nothing since.
        assert_eq!(
            rows(
                &h,
                &format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM claim_currency_events
                      WHERE claim_id = '{}'",
                    c3.id
                )
            )
            .await,
            2,
            "{}",
            h.kind
        );
    }
}

/// Claims a, b, d in lineage 1 (a and b current, d not) and c in lineage 2.
struct Corpus {
    ns: NamespaceId,
    doc1: DocumentId,
    doc2: DocumentId,
    a: NewClaim,
    b: NewClaim,
    c: NewClaim,
    d: NewClaim,
}

async fn corpus(store: &dyn MemoryStore) -> Corpus {
    let ns = store.ensure_namespace("s", at(0)).await.unwrap().id;
    let (k1, k2) = (ChunkId::new(), ChunkId::new());
    let (doc1, v1) = document(store, ns, "one.md", &[&[k1]]).await;
    let (doc2, v2) = document(store, ns, "two.md", &[&[k2]]).await;
    let a = claim_at(doc1, v1[0], k1, "Alice moved to Kigali in 2021", "a");
    let b = claim_at(
        doc1,
        v1[0],
        k1,
        "Kigali hosts the summit and Kigali is busy",
        "b",
    );
    let d = claim_at(doc1, v1[0], k1, "The cats sleep all day", "d");
    let c = claim_at(doc2, v2[0], k2, "Bob drinks tea in Kigali", "c");
    extract(
        store,
        ns,
        (doc1, v1[0], k1),
        "h1",
        vec![a.clone(), b.clone(), d.clone()],
        at(1),
    )
    .await;
    extract(store, ns, (doc2, v2[0], k2), "h2", vec![c.clone()], at(1)).await;
    store
        .apply_currency(ns, doc1, &[a.id, b.id], "x", None, at(2))
        .await
        .unwrap();
    store
        .apply_currency(ns, doc2, &[c.id], "x", None, at(2))
        .await
        .unwrap();
    Corpus {
        ns,
        doc1,
        doc2,
        a,
        b,
        c,
        d,
    }
}

fn sorted(mut v: Vec<ClaimId>) -> Vec<ClaimId> {
    v.sort();
    v
}

#[tokio::test]
async fn claims_lexical_search() {
    for h in stores().await {
        let store = h.store.as_ref();
        let t = corpus(store).await;
        let ns = t.ns;
        let search = |f: ClaimFilter, terms: Vec<&str>, limit: usize| {
            let terms: Vec<String> = terms.into_iter().map(String::from).collect();
            async move {
                store
                    .search_claims_lexical(&f, &terms, limit)
                    .await
                    .unwrap()
            }
        };

        // b says "Kigali" twice: it ranks first; c, shorter than a, ranks above it
        // (BM25's length normalisation) although a was stored first.
        let hits = search(filter(ns), vec!["kigali"], 10).await;
        let ids: Vec<ClaimId> = hits.iter().map(|h| h.claim_id).collect();
        assert_eq!(ids, vec![t.b.id, t.c.id, t.a.id], "{}", h.kind);
        assert!(hits[0].score > hits[1].score);
        assert!(hits[1].score > hits[2].score);
        assert!(hits[2].score > 0.0);
        // Terms are OR-ed; stemming matches "moving" to "moved".
        let hits = search(filter(ns), vec!["moving", "tea"], 10).await;
        assert_eq!(
            sorted(hits.iter().map(|h| h.claim_id).collect()),
            sorted(vec![t.a.id, t.c.id])
        );
        // Limits.
        assert_eq!(search(filter(ns), vec!["kigali"], 1).await.len(), 1);
        assert!(search(filter(ns), vec!["kigali"], 0).await.is_empty());
        assert!(search(filter(ns), vec![], 10).await.is_empty());
        assert!(search(filter(ns), vec!["absentword"], 10).await.is_empty());
        // Query syntax in the caller's terms is text, never query syntax.
        assert!(
            search(filter(ns), vec!["!!!", "'", "&|"], 10)
                .await
                .is_empty()
        );
        let hits = search(filter(ns), vec!["kigali", "a|b&!(", "x') OR 1=1 --"], 10).await;
        assert_eq!(hits.len(), 3);
        // A term of several tokens is a phrase: `kigali's` is `kigali` followed by
        // `s`, which no claim holds.
        assert!(search(filter(ns), vec!["kigali's"], 10).await.is_empty());
        // A multi-word term is a phrase.
        let hits = search(filter(ns), vec!["drinks tea"], 10).await;
        assert_eq!(
            hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
            vec![t.c.id]
        );
        assert!(search(filter(ns), vec!["tea drinks"], 10).await.is_empty());

        // Retired claims only on request.
        assert!(search(filter(ns), vec!["cats"], 10).await.is_empty());
        let mut retired = filter(ns);
        retired.include_retired = true;
        let hits = search(retired, vec!["cats"], 10).await;
        assert_eq!(
            hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
            vec![t.d.id]
        );

        // Lineage filter and document scope.
        let mut one = filter(ns);
        one.document_id = Some(t.doc2);
        let hits = search(one, vec!["kigali"], 10).await;
        assert_eq!(
            hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
            vec![t.c.id]
        );
        let mut scoped = filter(ns);
        scoped.documents = Some(vec![t.doc1]);
        let hits = search(scoped, vec!["kigali"], 10).await;
        assert_eq!(
            sorted(hits.iter().map(|h| h.claim_id).collect()),
            sorted(vec![t.a.id, t.b.id])
        );
        let mut empty_scope = filter(ns);
        empty_scope.documents = Some(vec![]);
        assert!(search(empty_scope, vec!["kigali"], 10).await.is_empty());

        // Entity anchor: only claims that mention an anchored entity.
        let e1 = mention(store, ns, t.a.id, None, "Alice", at(3)).await;
        mention(store, ns, t.c.id, Some(e1), "Bob", at(3)).await;
        let e2 = EntityId::new();
        let mut anchored = filter(ns);
        anchored.entities = vec![e1];
        let hits = search(anchored.clone(), vec!["kigali"], 10).await;
        assert_eq!(
            sorted(hits.iter().map(|h| h.claim_id).collect()),
            sorted(vec![t.a.id, t.c.id])
        );
        anchored.documents = Some(vec![t.doc2]);
        let hits = search(anchored, vec!["kigali"], 10).await;
        assert_eq!(
            hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
            vec![t.c.id]
        );
        let mut other = filter(ns);
        other.entities = vec![e2];
        assert!(search(other, vec!["kigali"], 10).await.is_empty());

        // Another namespace sees nothing.
        let ns2 = store.ensure_namespace("other", at(0)).await.unwrap().id;
        assert!(search(filter(ns2), vec!["kigali"], 10).await.is_empty());
    }
}

fn check(hits: Vec<ClaimHit>, want: Vec<(ClaimId, f64)>) {
    let got: Vec<ClaimId> = hits.iter().map(|h| h.claim_id).collect();
    let ids: Vec<ClaimId> = want.iter().map(|w| w.0).collect();
    assert_eq!(got, ids);
    for (h, w) in hits.iter().zip(&want) {
        assert!(
            (h.score - w.1).abs() < crate::store_fixtures::HALF_PRECISION,
            "{} vs {}",
            h.score,
            w.1
        );
    }
}

/// Semantic search stays exact while claims are written, embedded and retired
/// between searches (the embedded store ranks a set it brings up to date by the rows
/// written since, not a list rebuilt on every write).
#[tokio::test]
async fn claims_semantic_search_follows_writes_between_searches() {
    for h in stores().await {
        semantic_search_follows_writes(h.store.as_ref()).await;
    }
}

/// The same through the embedded store's approximate index, kept here for every
/// record set: results and scores are those of the exact scan.
#[tokio::test]
async fn claims_semantic_search_through_the_approximate_index_follows_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = rememberstack::SqliteStore::open(dir.path().join("memory.db"))
        .await
        .unwrap();
    store.set_approximate_from(1);
    semantic_search_follows_writes(&store).await;
    let indexes = store.vector_indexes().await;
    assert!(
        indexes
            .iter()
            .any(|(_, table, n)| *table == "claims" && *n > 0),
        "the searches walked an index: {indexes:?}"
    );
}

async fn semantic_search_follows_writes(store: &dyn MemoryStore) {
    {
        let t = corpus(store).await;
        let ns = t.ns;
        let g = identity("g1", 3);
        let k = g.generation();
        let v = |key: &str, v: Vec<f32>| (key.to_string(), v);
        put_vectors(
            store,
            ns,
            &g,
            vec![
                v("emb-a", vec![1.0, 0.0, 0.0]),
                v("emb-b", vec![0.6, 0.8, 0.0]),
                v("emb-c", vec![0.0, 1.0, 0.0]),
                v("emb-d", vec![0.0, 0.0, 1.0]),
            ],
            at(3),
        )
        .await;
        let q = [1.0, 0.0, 0.0];
        let all = filter(ns);
        let search = || store.search_claims_semantic(&all, &k, &q, 2);
        check(search().await.unwrap(), vec![(t.a.id, 1.0), (t.b.id, 0.6)]);

        // A claim written after that search: found once its vector is stored.
        let k3 = ChunkId::new();
        let (doc3, v3) = document(store, ns, "three.md", &[&[k3]]).await;
        let e = claim_at(doc3, v3[0], k3, "Eve flew to Kigali", "e");
        extract(store, ns, (doc3, v3[0], k3), "h3", vec![e.clone()], at(4)).await;
        store
            .apply_currency(ns, doc3, &[e.id], "x", None, at(4))
            .await
            .unwrap();
        check(search().await.unwrap(), vec![(t.a.id, 1.0), (t.b.id, 0.6)]);
        put_vectors(store, ns, &g, vec![v("emb-e", vec![0.8, 0.6, 0.0])], at(5)).await;
        check(search().await.unwrap(), vec![(t.a.id, 1.0), (e.id, 0.8)]);

        // The best retired: the next take its place.
        store
            .apply_currency(ns, t.doc1, &[t.b.id], "x", None, at(6))
            .await
            .unwrap();
        check(search().await.unwrap(), vec![(e.id, 0.8), (t.b.id, 0.6)]);

        // The newest claim forgotten, then another written: SQLite may give it the
        // forgotten one's rowid, and it is found all the same.
        let m = forget_manifest(store, "s", doc3, ("file", "three.md"), at(7)).await;
        store.forget(&m, at(7)).await.unwrap();
        check(search().await.unwrap(), vec![(t.b.id, 0.6), (t.c.id, 0.0)]);
        let k4 = ChunkId::new();
        let (doc4, v4) = document(store, ns, "four.md", &[&[k4]]).await;
        let f = claim_at(doc4, v4[0], k4, "Fay sailed to Kigali", "f");
        extract(store, ns, (doc4, v4[0], k4), "h4", vec![f.clone()], at(8)).await;
        store
            .apply_currency(ns, doc4, &[f.id], "x", None, at(8))
            .await
            .unwrap();
        put_vectors(store, ns, &g, vec![v("emb-f", vec![1.0, 0.0, 0.0])], at(8)).await;
        check(search().await.unwrap(), vec![(f.id, 1.0), (t.b.id, 0.6)]);
    }
}

#[tokio::test]
async fn claims_semantic_search_and_vector_coverage() {
    for h in stores().await {
        let store = h.store.as_ref();
        let t = corpus(store).await;
        let ns = t.ns;
        let (g1, g2) = (identity("g1", 3), identity("g2", 2));
        let (k1, k2) = (g1.generation(), g2.generation());
        // Coverage before any vector: a, b, c current, all missing.
        let cov = store.claim_vector_coverage(ns, &k1).await.unwrap();
        assert_eq!((cov.chunks, cov.missing), (3, 3));
        let missing = store.claims_missing_vectors(ns, &k1).await.unwrap();
        assert_eq!(
            missing,
            vec![
                (t.a.id, t.a.origin_version_id),
                (t.b.id, t.b.origin_version_id),
                (t.c.id, t.c.origin_version_id)
            ],
            "in write order, the retired d left out"
        );

        let v = |key: &str, v: Vec<f32>| (key.to_string(), v);
        put_vectors(
            store,
            ns,
            &g1,
            vec![
                v("emb-a", vec![1.0, 0.0, 0.0]),
                v("emb-b", vec![0.6, 0.8, 0.0]),
                v("emb-c", vec![2.0, 0.0, 0.0]),
                v("emb-d", vec![0.0, 0.0, 1.0]),
            ],
            at(3),
        )
        .await;
        put_vectors(store, ns, &g2, vec![v("emb-b", vec![1.0, 0.0])], at(3)).await;
        let cov = store.claim_vector_coverage(ns, &k1).await.unwrap();
        assert_eq!((cov.chunks, cov.missing), (3, 0));
        assert!(
            store
                .claims_missing_vectors(ns, &k1)
                .await
                .unwrap()
                .is_empty()
        );
        let cov = store.claim_vector_coverage(ns, &k2).await.unwrap();
        assert_eq!((cov.chunks, cov.missing), (3, 2));
        assert_eq!(
            store.claims_missing_vectors(ns, &k2).await.unwrap(),
            vec![
                (t.a.id, t.a.origin_version_id),
                (t.c.id, t.c.origin_version_id)
            ]
        );
        let other = store.ensure_namespace("o", at(0)).await.unwrap().id;
        assert_eq!(
            store.claim_vector_coverage(other, &k1).await.unwrap(),
            Default::default()
        );

        // a and c point the same way (c is longer: cosine ignores length): a tie, by id.
        let tie = sorted(vec![t.a.id, t.c.id]);
        let hits = store
            .search_claims_semantic(&filter(ns), &k1, &[1.0, 0.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(tie[0], 1.0), (tie[1], 1.0), (t.b.id, 0.6)]);
        let hits = store
            .search_claims_semantic(&filter(ns), &k1, &[1.0, 0.0, 0.0], 1)
            .await
            .unwrap();
        check(hits, vec![(tie[0], 1.0)]);
        let mut retired = filter(ns);
        retired.include_retired = true;
        let hits = store
            .search_claims_semantic(&retired, &k1, &[0.0, 0.0, 2.0], 10)
            .await
            .unwrap();
        // a, b and c are orthogonal to the query: a three-way tie at 0, by id.
        let zeros = sorted(vec![t.a.id, t.b.id, t.c.id]);
        check(
            hits,
            vec![
                (t.d.id, 1.0),
                (zeros[0], 0.0),
                (zeros[1], 0.0),
                (zeros[2], 0.0),
            ],
        );
        let mut one = filter(ns);
        one.document_id = Some(t.doc1);
        let hits = store
            .search_claims_semantic(&one, &k1, &[0.0, 1.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.b.id, 0.8), (t.a.id, 0.0)]);
        let mut scoped = filter(ns);
        scoped.documents = Some(vec![t.doc2]);
        let hits = store
            .search_claims_semantic(&scoped, &k1, &[1.0, 0.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.c.id, 1.0)]);
        scoped.documents = Some(vec![]);
        assert!(
            store
                .search_claims_semantic(&scoped, &k1, &[1.0, 0.0, 0.0], 10)
                .await
                .unwrap()
                .is_empty()
        );
        // Another generation, another dimension: only its vectors.
        let hits = store
            .search_claims_semantic(&filter(ns), &k2, &[1.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.b.id, 1.0)]);
        // A query of another dimension than the generation's finds nothing.
        for q in [vec![1.0, 0.0], vec![], vec![0.5; 16_001]] {
            assert!(
                store
                    .search_claims_semantic(&filter(ns), &k1, &q, 10)
                    .await
                    .unwrap()
                    .is_empty(),
                "{}",
                h.kind
            );
        }
        assert!(
            store
                .search_claims_semantic(&filter(ns), &k1, &[1.0, 0.0, 0.0], 0)
                .await
                .unwrap()
                .is_empty()
        );

        // Entity anchor.
        let e = mention(store, ns, t.b.id, None, "Kigali", at(3)).await;
        let mut anchored = filter(ns);
        anchored.entities = vec![e];
        let hits = store
            .search_claims_semantic(&anchored, &k1, &[1.0, 0.0, 0.0], 10)
            .await
            .unwrap();
        check(hits, vec![(t.b.id, 0.6)]);
    }
}

#[tokio::test]
async fn claims_semantic_ties_break_by_id() {
    for h in stores().await {
        let store = h.store.as_ref();
        let ns = store.ensure_namespace("t", at(0)).await.unwrap().id;
        let k = ChunkId::new();
        let (doc, v) = document(store, ns, "same.md", &[&[k]]).await;
        // Forty claims share one vector (same text, same embedding key), one is near.
        let mut claims: Vec<NewClaim> = (0..41)
            .map(|i| {
                let mut c = claim_at(doc, v[0], k, "the same words", &format!("s{i}"));
                c.embedding_key = "emb-same".to_string();
                c
            })
            .collect();
        claims[40].embedding_key = "emb-near".to_string();
        let near = claims[40].id;
        extract(store, ns, (doc, v[0], k), "h", claims.clone(), at(1)).await;
        let ids: Vec<ClaimId> = claims.iter().map(|c| c.id).collect();
        store
            .apply_currency(ns, doc, &ids, "x", None, at(2))
            .await
            .unwrap();
        let g = identity("g", 2);
        put_vectors(
            store,
            ns,
            &g,
            vec![
                ("emb-same".into(), vec![1.0, 0.0]),
                ("emb-near".into(), vec![0.8, 0.6]),
            ],
            at(2),
        )
        .await;
        let g = g.generation();
        let same = sorted(ids[..40].to_vec());
        for limit in [1, 5, 40] {
            let hits = store
                .search_claims_semantic(&filter(ns), &g, &[1.0, 0.0], limit)
                .await
                .unwrap();
            assert_eq!(
                hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
                same[..limit].to_vec(),
                "{}: limit {limit}: the smallest ids of the tie",
                h.kind
            );
            assert!(hits.iter().all(|h| (h.score - 1.0).abs() < 1e-6));
        }
        let hits = store
            .search_claims_semantic(&filter(ns), &g, &[1.0, 0.0], 100)
            .await
            .unwrap();
        assert_eq!(hits.len(), 41);
        assert_eq!(hits[40].claim_id, near);
        assert!((hits[40].score - 0.8).abs() < crate::store_fixtures::HALF_PRECISION);
        // A zero query has no direction: every score is 0, ties by id.
        let hits = store
            .search_claims_semantic(&filter(ns), &g, &[0.0, 0.0], 3)
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.claim_id).collect::<Vec<_>>(),
            sorted(ids.clone())[..3].to_vec()
        );
        assert!(hits.iter().all(|h| h.score == 0.0));
    }
}
