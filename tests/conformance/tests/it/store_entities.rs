//! The entity store contract on every store: blocking by every tier (and past the
//! keys most entities share), resolution commits (a decision key written once),
//! aliases, exclusions, document bindings, profiles, merge and unmerge. What only
//! PostgreSQL shows (concurrent commits of one decision key or one merge) stays in
//! its own tests.

use chrono::{TimeZone, Utc};
use rememberstack::ErrorCode;
use rememberstack::store::entities::{
    BlockingQuery, BlockingTier, CandidateAudit, DocumentBinding, EntityFilter, Mention,
    MergeEvent, NewAlias, RESOLVER_VERSION, ResolutionCommit, ResolutionDecision,
};
use rememberstack::store::traits::*;
use rememberstack::{ClaimId, DecisionId, DocumentId, EntityId, MergeId, NamespaceId, Timestamp};
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

#[tokio::test]
async fn blocking_skips_keys_most_entities_share_and_says_so() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("test", t(1)).await.unwrap().id;
        for i in 0..210 {
            mint(store, ns, &format!("Person{i}")).await;
        }
        let target = mint(store, ns, "Personne Zyxwv").await;
        let near = NewAlias::of("Personne Zyxwu");
        let hits = store
            .block_entities(&query(ns, "", near.trigrams.clone(), vec![], 5))
            .await
            .unwrap();
        assert_eq!(
            hits.hits[0].entity_id, target,
            "the rare trigrams still block"
        );
        assert!(hits.truncated, "skipped keys make the block incomplete");
        // However wide the limit, the keys 211 aliases share are skipped: only the
        // rare ones block (they name the target alone), and the block says so.
        let wide = store
            .block_entities(&query(ns, "", near.trigrams.clone(), vec![], 1_000))
            .await
            .unwrap();
        assert!(wide.truncated, "{}", h.kind);
        assert!(!wide.hits.is_empty());
        assert!(
            wide.hits.iter().all(|hit| hit.entity_id == target),
            "{}: {:?}",
            h.kind,
            wide.hits
        );
        let shared: Vec<String> = NewAlias::of("Person1")
            .trigrams
            .into_iter()
            .filter(|g| {
                NewAlias::of("Person2").trigrams.contains(g)
                    && NewAlias::of("Person3").trigrams.contains(g)
            })
            .collect();
        assert!(!shared.is_empty());
        let only_common = store
            .block_entities(&query(ns, "", shared, vec![], 5))
            .await
            .unwrap();
        assert!(!only_common.hits.is_empty());
        assert!(only_common.truncated);
        let rare = NewAlias::of("Zyxwv");
        let complete = store
            .block_entities(&query(ns, "", rare.trigrams.clone(), vec![], 5))
            .await
            .unwrap();
        assert_eq!(complete.hits[0].entity_id, target);
        assert!(!complete.truncated);
    }
}

#[tokio::test]
async fn duplicate_decision_key_is_a_no_op() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("test", t(1)).await.unwrap().id;
        let claim = ClaimId::new();
        let mut first = mint_commit(ns, claim, 3, "Ada Lovelace");
        first.decision.candidates = vec![
            CandidateAudit {
                entity_id: EntityId::new(),
                canonical_name: "Ada King".into(),
                score: 0.5,
                via: vec![BlockingTier::T1, BlockingTier::T2],
                t3_score: Some(0.75),
            },
            CandidateAudit {
                entity_id: EntityId::new(),
                canonical_name: "Lovelace".into(),
                score: 1.0,
                via: vec![BlockingTier::T0],
                t3_score: None,
            },
        ];
        first.decision.complete = false;
        first.decision.model = Some("m-1".into());
        first.decision.t3_score = None;
        let first_decision = first.decision.clone();
        let stood = store.commit_resolution(first.clone(), t(2)).await.unwrap();
        assert_eq!(stood, first_decision.entity_id);
        // Same (claim, ordinal, resolver): another id and entity, nothing written; the
        // first decision's entity is the answer.
        let second = mint_commit(ns, claim, 3, "Ada Byron");
        let second_entity = second.decision.entity_id;
        let stood = store.commit_resolution(second, t(3)).await.unwrap();
        assert_eq!(stood, first_decision.entity_id);
        // An exact replay is a no-op too.
        store.commit_resolution(first, t(4)).await.unwrap();

        let found = store
            .resolution_for(ns, claim, 3, RESOLVER_VERSION)
            .await
            .unwrap();
        assert_eq!(found.as_ref(), Some(&first_decision), "{}", h.kind);
        assert_eq!(
            store
                .resolution_for(ns, claim, 4, RESOLVER_VERSION)
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            store.resolution_for(ns, claim, 3, "other").await.unwrap(),
            None
        );
        assert_eq!(
            store
                .resolution_decision(ns, first_decision.decision_id)
                .await
                .unwrap(),
            Some(first_decision.clone())
        );
        assert_eq!(
            store
                .resolution_decision(ns, DecisionId::new())
                .await
                .unwrap(),
            None
        );
        assert!(
            store
                .entities(ns, &[second_entity])
                .await
                .unwrap()
                .is_empty()
        );
        let filter = EntityFilter {
            namespace_id: ns,
            include_merged: true,
            lemma: None,
        };
        assert_eq!(store.list_entities(&filter, 10).await.unwrap().len(), 1);
        let mentions = store
            .mentions(ns, first_decision.entity_id, 10)
            .await
            .unwrap();
        assert_eq!(mentions.len(), 1);
        assert_eq!(mentions[0].start, Some(0));
        assert_eq!(mentions[0].end, Some("Ada Lovelace".len()));
        assert_eq!(mentions[0].surface, "Ada Lovelace");
        assert_eq!(mentions[0].claim_id, claim);
        let decisions = store
            .resolution_decisions(ns, &[first_decision.entity_id])
            .await
            .unwrap();
        assert_eq!(decisions, vec![first_decision.clone()]);
        assert!(
            store
                .resolution_decisions(ns, &[])
                .await
                .unwrap()
                .is_empty()
        );
        // One alias with one set of keys: nothing was written twice, and the
        // refused commit's alias not at all.
        let rec = &store
            .entities(ns, &[first_decision.entity_id])
            .await
            .unwrap()[0];
        assert_eq!(rec.aliases, vec!["Ada Lovelace".to_string()], "{}", h.kind);
        assert_eq!(rec.mention_count, 1);
        let exact = store
            .block_entities(&query(
                ns,
                &NewAlias::of("Ada Lovelace").lemma,
                vec![],
                vec![],
                10,
            ))
            .await
            .unwrap();
        assert_eq!(exact.hits.len(), 1, "{}", h.kind);
        let byron = store
            .block_entities(&query(
                ns,
                &NewAlias::of("Ada Byron").lemma,
                vec![],
                vec![],
                10,
            ))
            .await
            .unwrap();
        assert!(byron.hits.is_empty());
    }
}

#[tokio::test]
async fn merge_then_unmerge_restores_the_redirect() {
    for h in stores().await {
        let store = &h.store;
        let ns = store.ensure_namespace("test", t(1)).await.unwrap().id;
        let a = mint(store, ns, "Alan Turing").await;
        let b = mint(store, ns, "A. M. Turing").await;
        let c = mint(store, ns, "Turing").await;
        let event = |from: EntityId, into: EntityId| MergeEvent {
            merge_id: MergeId::new(),
            namespace_id: ns,
            from,
            into,
            snapshot: serde_json::json!({"from": [from], "into": [into]}),
            created_at: t(10),
            reverted_at: None,
        };
        let first = event(a, b);
        store.merge_entities(first.clone()).await.unwrap();
        assert_eq!(
            store.entities(ns, &[a]).await.unwrap()[0].merged_into,
            Some(b)
        );
        for refused in [
            event(a, c),
            event(c, a),
            event(c, c),
            event(EntityId::new(), c),
            event(c, EntityId::new()),
        ] {
            let err = store.merge_entities(refused).await.unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidInput, "{}: {err}", h.kind);
        }
        let current = EntityFilter {
            namespace_id: ns,
            include_merged: false,
            lemma: None,
        };
        assert_eq!(
            store
                .list_entities(&current, 10)
                .await
                .unwrap()
                .iter()
                .map(|e| e.entity_id)
                .collect::<Vec<_>>(),
            vec![b, c]
        );
        let everything = EntityFilter {
            include_merged: true,
            ..current.clone()
        };
        assert_eq!(store.list_entities(&everything, 10).await.unwrap().len(), 3);
        assert_eq!(
            store.merge_events(ns, &[]).await.unwrap(),
            vec![first.clone()]
        );

        let undone = store
            .unmerge_entities(ns, first.merge_id, t(11))
            .await
            .unwrap();
        assert_eq!(undone.reverted_at, Some(t(11)));
        assert_eq!(undone.snapshot, first.snapshot);
        assert_eq!(store.entities(ns, &[a]).await.unwrap()[0].merged_into, None);
        let again = store
            .unmerge_entities(ns, first.merge_id, t(12))
            .await
            .unwrap_err();
        assert_eq!(again.code(), ErrorCode::InvalidInput);
        let unknown = store
            .unmerge_entities(ns, MergeId::new(), t(12))
            .await
            .unwrap_err();
        assert_eq!(unknown.code(), ErrorCode::InvalidInput);

        let second = event(b, c);
        store.merge_entities(second.clone()).await.unwrap();
        let all = store.merge_events(ns, &[]).await.unwrap();
        assert_eq!(
            all.iter().map(|e| e.merge_id).collect::<Vec<_>>(),
            vec![first.merge_id, second.merge_id]
        );
        assert_eq!(all[0], undone);
        assert_eq!(all[1], second);
        let touching_a = store.merge_events(ns, &[a]).await.unwrap();
        assert_eq!(touching_a.len(), 1);
        assert_eq!(touching_a[0].merge_id, first.merge_id);
        let touching_b = store.merge_events(ns, &[c, b]).await.unwrap();
        assert_eq!(
            touching_b.iter().map(|e| e.merge_id).collect::<Vec<_>>(),
            vec![first.merge_id, second.merge_id]
        );

        // A redirect changed behind the event's back cannot be reverted.
        h.execute_sql(&format!(
            "UPDATE entities SET merged_into = NULL WHERE id = '{b}'"
        ))
        .await;
        let stale = store
            .unmerge_entities(ns, second.merge_id, t(13))
            .await
            .unwrap_err();
        assert_eq!(stale.code(), ErrorCode::InvalidInput, "{}", h.kind);
        assert_eq!(
            store.merge_events(ns, &[b]).await.unwrap()[1].reverted_at,
            None
        );
    }
}

/// What a batch of resolutions leaves, read back with the namespace's id blanked so
/// two namespaces compare.
async fn identity_state(
    store: &Arc<dyn MemoryStore>,
    ns: NamespaceId,
    entities: &[EntityId],
    doc: DocumentId,
) -> serde_json::Value {
    let mut mentions = Vec::new();
    for e in entities {
        mentions.push(store.mentions(ns, *e, 100).await.unwrap());
    }
    let block = store
        .block_entities(&query(
            ns,
            "countess lovelace",
            NewAlias::of("Countess Lovelace").trigrams,
            vec![],
            10,
        ))
        .await
        .unwrap();
    let state = serde_json::json!({
        "entities": store.entities(ns, entities).await.unwrap(),
        "decisions": store.resolution_decisions(ns, entities).await.unwrap(),
        "mentions": mentions,
        "exclusions": store.exclusions(ns, entities).await.unwrap(),
        "bindings": store.document_entity_bindings(ns, doc).await.unwrap(),
        "block": block
            .hits
            .iter()
            .map(|h| format!("{} {} {:?}", h.entity_id, h.alias_lemma, h.via))
            .collect::<BTreeSet<_>>(),
    });
    serde_json::from_str(&state.to_string().replace(&ns.to_string(), "NS")).unwrap()
}

#[tokio::test]
async fn a_batch_of_resolutions_leaves_what_one_at_a_time_would() {
    for h in stores().await {
        let store = &h.store;
        let batch_ns = store.ensure_namespace("batch", t(1)).await.unwrap().id;
        let single_ns = store.ensure_namespace("single", t(1)).await.unwrap().id;
        let doc = DocumentId::new();
        let (c1, c2, c3) = (ClaimId::new(), ClaimId::new(), ClaimId::new());
        let binding = |lemma: &str, entity: EntityId, anchor: Option<DecisionId>| DocumentBinding {
            document_id: doc,
            lemma: lemma.to_string(),
            entity_id: entity,
            anchor,
        };
        // Ada is minted, bound without an anchor.
        let mut ada = mint_commit(batch_ns, c1, 0, "Ada Lovelace");
        let e_ada = ada.decision.entity_id;
        ada.binding = Some(binding("ada lovelace", e_ada, None));
        // Babbage is minted and may not be Ada.
        let mut babbage = mint_commit(batch_ns, c3, 0, "Charles Babbage");
        let e_babbage = babbage.decision.entity_id;
        babbage.exclusions = vec![e_ada, e_babbage];
        babbage.binding = Some(binding(
            "charles babbage",
            e_babbage,
            Some(babbage.decision.decision_id),
        ));
        // A match to Ada with a known and a new surface: the binding gains its anchor,
        // the cannot-link pair is the same one again.
        let mut matched = mint_commit(batch_ns, c2, 0, "Countess Lovelace");
        matched.mint = None;
        matched.decision.entity_id = e_ada;
        matched.decision.verdict = "match".into();
        matched.decision.created_at = t(3);
        matched.aliases = vec![
            NewAlias::of("Ada Lovelace"),
            NewAlias::of("Countess Lovelace"),
        ];
        matched.exclusions = vec![e_babbage];
        matched.binding = Some(binding(
            "ada lovelace",
            e_ada,
            Some(matched.decision.decision_id),
        ));
        // The same decision key again: nothing is written, Ada answers.
        let mut again = mint_commit(batch_ns, c2, 0, "Ada Byron");
        again.decision.created_at = t(4);
        // A later anchor does not replace the first.
        let mut later = mint_commit(batch_ns, c1, 1, "Lovelace");
        later.mint = None;
        later.decision.entity_id = e_ada;
        later.decision.verdict = "match".into();
        later.decision.created_at = t(5);
        later.binding = Some(binding(
            "ada lovelace",
            e_ada,
            Some(later.decision.decision_id),
        ));
        let commits = vec![ada, babbage, matched, again, later];

        let batched = store.commit_resolutions(commits.clone()).await.unwrap();
        let mut single = Vec::new();
        for mut c in commits {
            c.decision.namespace_id = single_ns;
            let at = c.decision.created_at;
            single.push(store.commit_resolution(c, at).await.unwrap());
        }
        assert_eq!(
            batched,
            vec![e_ada, e_babbage, e_ada, e_ada, e_ada],
            "{}",
            h.kind
        );
        assert_eq!(batched, single, "{}", h.kind);
        let entities = [e_ada, e_babbage];
        let batch_state = identity_state(store, batch_ns, &entities, doc).await;
        let single_state = identity_state(store, single_ns, &entities, doc).await;
        assert_eq!(batch_state, single_state, "{}", h.kind);
        // What one at a time leaves: two entities, Ada's surfaces once each, four
        // decisions, one cannot-link pair, the first anchor kept, and Ada found by the
        // alias the match added.
        assert_eq!(batch_state["entities"].as_array().unwrap().len(), 2);
        assert_eq!(
            batch_state["entities"][0]["aliases"],
            serde_json::json!(["Ada Lovelace", "Countess Lovelace", "Lovelace"]),
            "{}",
            h.kind
        );
        assert_eq!(
            batch_state["decisions"].as_array().unwrap().len(),
            4,
            "{}",
            h.kind
        );
        assert_eq!(
            batch_state["exclusions"].as_array().unwrap().len(),
            1,
            "{}",
            h.kind
        );
        let bindings = batch_state["bindings"].as_array().unwrap();
        assert_eq!(bindings.len(), 2, "{}", h.kind);
        let ada_binding = bindings
            .iter()
            .find(|b| b["lemma"] == "ada lovelace")
            .unwrap();
        assert_eq!(
            ada_binding["anchor"],
            serde_json::json!(batch_state["decisions"][2]["decision_id"]),
            "{}",
            h.kind
        );
        assert!(
            batch_state["block"]
                .as_array()
                .unwrap()
                .iter()
                .any(|hit| hit
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{e_ada} countess lovelace"))),
            "{}: {}",
            h.kind,
            batch_state["block"]
        );
    }
}
