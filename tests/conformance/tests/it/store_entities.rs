//! The entity store contract on every store: blocking by every tier, resolution
//! commits, aliases, exclusions, document bindings and profiles. What only
//! PostgreSQL shows (concurrent commits of one decision key or one merge, blocking
//! statistics read with SQL) stays in its own tests.

use chrono::{TimeZone, Utc};
use rememberstack::ErrorCode;
use rememberstack::store::entities::{
    BlockingQuery, BlockingTier, DocumentBinding, EntityFilter, Mention, NewAlias,
    RESOLVER_VERSION, ResolutionCommit, ResolutionDecision,
};
use rememberstack::store::traits::*;
use rememberstack::{ClaimId, DecisionId, DocumentId, EntityId, NamespaceId, Timestamp};
use rememberstack_conformance::stores;
use std::collections::BTreeSet;
use std::sync::Arc;

fn t(day: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2024, 1, day, 0, 0, 0).unwrap()
}

fn decision(
    ns: NamespaceId,
    claim: ClaimId,
    ordinal: u32,
    entity: EntityId,
    name: &str,
) -> ResolutionDecision {
    ResolutionDecision {
        decision_id: DecisionId::new(),
        namespace_id: ns,
        claim_id: claim,
        document_id: DocumentId::new(),
        ordinal,
        name: name.to_string(),
        lemma: NewAlias::of(name).lemma,
        tier: "mint".into(),
        candidates: vec![],
        complete: true,
        t3_score: Some(0.25),
        t3_outcome: "no_candidates".into(),
        verdict: "new".into(),
        entity_id: entity,
        rationale: "no candidate".into(),
        model: None,
        resolver_version: RESOLVER_VERSION.into(),
        features: serde_json::json!({"k": 1, "nested": {"b": [1, 2], "a": null}}),
        created_at: t(2),
    }
}

fn mint_commit(ns: NamespaceId, claim: ClaimId, ordinal: u32, name: &str) -> ResolutionCommit {
    let d = decision(ns, claim, ordinal, EntityId::new(), name);
    let alias = NewAlias::of(name);
    ResolutionCommit {
        mint: Some((name.to_string(), alias.lemma.clone())),
        mention: Mention {
            claim_id: claim,
            start: Some(0),
            end: Some(name.len()),
            surface: name.to_string(),
        },
        aliases: vec![alias],
        exclusions: vec![],
        binding: None,
        decision: d,
    }
}

async fn mint(store: &Arc<dyn MemoryStore>, ns: NamespaceId, name: &str) -> EntityId {
    let c = mint_commit(ns, ClaimId::new(), 0, name);
    let id = c.decision.entity_id;
    store.commit_resolution(c, t(2)).await.expect("commit");
    id
}

fn query(
    ns: NamespaceId,
    lemma: &str,
    trigrams: Vec<String>,
    phonetic: Vec<String>,
    limit: usize,
) -> BlockingQuery {
    BlockingQuery {
        namespace_id: ns,
        lemma: lemma.to_string(),
        trigrams,
        phonetic,
        limit,
    }
}

#[tokio::test]
async fn minted_entity_is_found_by_every_blocking_tier() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("test", t(1)).await.unwrap().id;
        let id = mint(store, ns, "Jonathan Smith").await;
        let other = mint(store, ns, "Grace Hopper").await;

        let rec = store.entities(ns, &[other, id]).await.unwrap();
        assert_eq!(rec.len(), 2);
        assert_eq!(rec[0].entity_id, other, "in the order asked");
        assert_eq!(rec[1].entity_id, id);
        assert_eq!(rec[1].canonical_name, "Jonathan Smith");
        assert_eq!(rec[1].lemma, NewAlias::of("Jonathan Smith").lemma);
        assert_eq!(rec[1].aliases, vec!["Jonathan Smith".to_string()]);
        assert_eq!(rec[1].mention_count, 1);
        assert_eq!(rec[1].created_at, t(2));
        assert_eq!(rec[1].merged_into, None);
        assert!(store.entities(ns, &[]).await.unwrap().is_empty());
        assert!(
            store
                .entities(NamespaceId::new(), &[id])
                .await
                .unwrap()
                .is_empty(),
            "another namespace sees nothing"
        );

        let exact = NewAlias::of("Jonathan Smith");
        let t0 = store
            .block_entities(&query(ns, &exact.lemma, vec![], vec![], 10))
            .await
            .unwrap();
        assert_eq!(t0.hits.len(), 1);
        assert_eq!(
            (t0.hits[0].entity_id, t0.hits[0].via),
            (id, BlockingTier::T0)
        );
        assert_eq!(t0.hits[0].alias_lemma, exact.lemma);
        assert!(!t0.truncated);

        let near = NewAlias::of("Jonathon Smith");
        let t1 = store
            .block_entities(&query(ns, "", near.trigrams.clone(), vec![], 10))
            .await
            .unwrap();
        assert_eq!(t1.hits[0].entity_id, id, "most shared trigrams first");
        assert!(t1.hits.iter().all(|h| h.via == BlockingTier::T1));

        assert!(!exact.phonetic.is_empty());
        let t2 = store
            .block_entities(&query(ns, "", vec![], exact.phonetic.clone(), 10))
            .await
            .unwrap();
        assert_eq!(t2.hits.len(), 1);
        assert_eq!(
            (t2.hits[0].entity_id, t2.hits[0].via),
            (id, BlockingTier::T2)
        );

        // All three tiers at once.
        let all_tiers = store
            .block_entities(&query(
                ns,
                &exact.lemma,
                exact.trigrams.clone(),
                exact.phonetic.clone(),
                10,
            ))
            .await
            .unwrap();
        let vias: BTreeSet<_> = all_tiers
            .hits
            .iter()
            .filter(|h| h.entity_id == id)
            .map(|h| format!("{:?}", h.via))
            .collect();
        assert_eq!(vias.len(), 3);

        let none = store
            .block_entities(&query(ns, "", vec![], vec![], 10))
            .await
            .unwrap();
        assert!(none.hits.is_empty() && !none.truncated);

        // Three entities share the lemma `acme`: a limit of two reports truncation and
        // keeps the two smallest ids (ties by id, bytewise).
        let mut acmes = vec![mint(store, ns, "Acme").await, mint(store, ns, "Acme").await];
        acmes.push(mint(store, ns, "ACME").await);
        let acme = NewAlias::of("Acme");
        let limited = store
            .block_entities(&query(ns, &acme.lemma, vec![], vec![], 2))
            .await
            .unwrap();
        let distinct: Vec<EntityId> = limited.hits.iter().map(|h| h.entity_id).collect();
        let mut expected: Vec<String> = acmes.iter().map(|e| e.to_string()).collect();
        expected.sort();
        assert_eq!(
            distinct.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            expected[..2].to_vec()
        );
        assert!(limited.truncated);
        let all = store
            .block_entities(&query(ns, &acme.lemma, vec![], vec![], 3))
            .await
            .unwrap();
        assert_eq!(all.hits.len(), 3);
        assert!(!all.truncated);
    }
}

#[tokio::test]
async fn exclusions_aliases_bindings_and_profiles() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("test", t(1)).await.unwrap().id;
        let a = mint(store, ns, "Mercury").await;
        let b = mint(store, ns, "Freddie Mercury").await;
        let doc = DocumentId::new();
        let anchor = DecisionId::new();
        let claim = ClaimId::new();
        let mut d = decision(ns, claim, 0, b, "Mercury");
        d.tier = "T4".into();
        d.verdict = "match".into();
        store
            .commit_resolution(
                ResolutionCommit {
                    decision: d,
                    mint: None,
                    aliases: vec![
                        NewAlias::of("Mercury"),
                        NewAlias::of("Freddie Mercury"),
                        NewAlias::of("F. Mercury"),
                    ],
                    mention: Mention {
                        claim_id: claim,
                        start: None,
                        end: None,
                        surface: "Mercury".into(),
                    },
                    exclusions: vec![a, b],
                    binding: Some(DocumentBinding {
                        document_id: doc,
                        lemma: "mercury".into(),
                        entity_id: b,
                        anchor: None,
                    }),
                },
                t(3),
            )
            .await
            .unwrap();
        // A later binding with an anchor sets it; a still later one without keeps it.
        for (day, anchor_now) in [(4, Some(anchor)), (5, None), (6, Some(DecisionId::new()))] {
            let claim2 = ClaimId::new();
            store
                .commit_resolution(
                    ResolutionCommit {
                        decision: decision(ns, claim2, 0, b, "Mercury"),
                        mint: None,
                        aliases: vec![],
                        mention: Mention {
                            claim_id: claim2,
                            start: None,
                            end: None,
                            surface: "Mercury".into(),
                        },
                        exclusions: vec![a],
                        binding: Some(DocumentBinding {
                            document_id: doc,
                            lemma: "mercury".into(),
                            entity_id: b,
                            anchor: anchor_now,
                        }),
                    },
                    t(day),
                )
                .await
                .unwrap();
        }
        // A second binding for the same lemma, another entity: listed after the first.
        let claim3 = ClaimId::new();
        store
            .commit_resolution(
                ResolutionCommit {
                    decision: decision(ns, claim3, 0, a, "Mercury"),
                    mint: None,
                    aliases: vec![],
                    mention: Mention {
                        claim_id: claim3,
                        start: None,
                        end: None,
                        surface: "Mercury".into(),
                    },
                    exclusions: vec![],
                    binding: Some(DocumentBinding {
                        document_id: doc,
                        lemma: "mercury".into(),
                        entity_id: a,
                        anchor: None,
                    }),
                },
                t(7),
            )
            .await
            .unwrap();
        let (lo, hi) = if a.to_string() < b.to_string() {
            (a, b)
        } else {
            (b, a)
        };
        assert_eq!(store.exclusions(ns, &[a]).await.unwrap(), vec![(lo, hi)]);
        assert_eq!(store.exclusions(ns, &[b]).await.unwrap(), vec![(lo, hi)]);
        assert_eq!(store.exclusions(ns, &[a, b]).await.unwrap(), vec![(lo, hi)]);
        assert!(
            store
                .exclusions(ns, &[EntityId::new()])
                .await
                .unwrap()
                .is_empty()
        );
        let bindings = store.document_bindings(ns, doc, "mercury").await.unwrap();
        assert_eq!(
            bindings,
            vec![
                DocumentBinding {
                    document_id: doc,
                    lemma: "mercury".into(),
                    entity_id: b,
                    anchor: Some(anchor),
                },
                DocumentBinding {
                    document_id: doc,
                    lemma: "mercury".into(),
                    entity_id: a,
                    anchor: None,
                },
            ]
        );
        assert!(
            store
                .document_bindings(ns, doc, "other")
                .await
                .unwrap()
                .is_empty()
        );
        let rec = &store.entities(ns, &[b]).await.unwrap()[0];
        // By creation time, then insertion order within one commit.
        assert_eq!(
            rec.aliases,
            vec![
                "Freddie Mercury".to_string(),
                "Mercury".to_string(),
                "F. Mercury".to_string()
            ]
        );
        assert_eq!(rec.mention_count, 5);
        // The new alias's keys block it; the known alias wrote no keys twice.
        let t2 = store
            .block_entities(&query(
                ns,
                &NewAlias::of("F. Mercury").lemma,
                vec![],
                vec![],
                10,
            ))
            .await
            .unwrap();
        assert_eq!(t2.hits.len(), 1);
        assert_eq!(t2.hits[0].entity_id, b);
        let by_alias = store
            .list_entities(
                &EntityFilter {
                    namespace_id: ns,
                    include_merged: false,
                    lemma: Some("mercury".into()),
                },
                10,
            )
            .await
            .unwrap();
        assert_eq!(
            by_alias.iter().map(|e| e.entity_id).collect::<Vec<_>>(),
            vec![a, b]
        );
        let limited = store
            .list_entities(
                &EntityFilter {
                    namespace_id: ns,
                    include_merged: false,
                    lemma: Some("mercury".into()),
                },
                1,
            )
            .await
            .unwrap();
        assert_eq!(limited.len(), 1);
        assert_eq!(limited[0].entity_id, a);
        assert_eq!(limited[0].aliases, vec!["Mercury".to_string()]);
        assert!(
            store
                .list_entities(
                    &EntityFilter {
                        namespace_id: ns,
                        include_merged: true,
                        lemma: Some("nobody".into()),
                    },
                    10,
                )
                .await
                .unwrap()
                .is_empty()
        );
        store
            .set_profile(ns, b, "A singer.", "profile-key", t(8))
            .await
            .unwrap();
        let rec = &store.entities(ns, &[b]).await.unwrap()[0];
        assert_eq!(rec.profile_summary.as_deref(), Some("A singer."));
        assert_eq!(rec.profile_key.as_deref(), Some("profile-key"));
        let err = store
            .set_profile(ns, EntityId::new(), "x", "k", t(8))
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    }
}
