//! The assured operations: registry, envelopes, negatives, anchors, time scopes,
//! contradictions, budgets, the combined bundle and zero LLM on reads.

use crate::facts::{JudgeModel, at, ingest, verdicts};
use rememberstack::internals::chat::ChatModel;
use rememberstack::{
    ClaimsAndSourcesInput, CombinedContextInput, EntityId, EvidenceResult, ExtractorModels,
    FactModels, FactsContextInput, Memory, SearchRequest, TemporalScope,
};
use rememberstack_conformance::{Harness, ManualClock, stores, test_config};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

const NOW: &str = "2026-06-01T00:00:00Z";

/// The fixed corpus: a supersession, a contradiction and a conversation, adjudicated
/// by a scripted model, on a frozen clock.
async fn fixture(h: &Harness) -> Memory {
    let judge = JudgeModel::new(verdicts(vec![
        json!({"verdict": "supersede", "fact": "F1", "valid_from": "", "valid_until": "", "reason": "Alice changed employer"}),
    ]));
    let memory = Memory::builder()
        .store(h.store.clone())
        .config(test_config())
        .clock(ManualClock::at(at(NOW)))
        .fact_models(FactModels {
            adjudicator: Some(judge.clone()),
            ..FactModels::default()
        })
        .open()
        .await
        .unwrap();
    ingest(
        &memory,
        "hr-2024",
        "# HR\n\nAlice has worked for Acme since March 2024.\n",
        "2024-04-01T00:00:00Z",
    )
    .await;
    ingest(
        &memory,
        "hr-2026",
        "# HR update\n\nIn February 2026 Alice left Acme and joined Globex.\n",
        "2026-03-01T00:00:00Z",
    )
    .await;
    memory
}

/// Adds two contradicting revenue reports (a second adjudicator script).
async fn with_contradiction(h: &Harness) -> Memory {
    let judge = JudgeModel::new(verdicts(vec![json!({
        "verdict": "contradict", "fact": "F1", "valid_from": "", "valid_until": "",
        "reason": "same period, different revenue"
    })]));
    let memory = Memory::builder()
        .store(h.store.clone())
        .config(test_config())
        .clock(ManualClock::at(at(NOW)))
        .fact_models(FactModels {
            adjudicator: Some(judge),
            ..FactModels::default()
        })
        .open()
        .await
        .unwrap();
    ingest(
        &memory,
        "report-a",
        "# Report A\n\nInitech's FY2023 revenue was $5M according to the annual report.\n",
        "2024-02-01T00:00:00Z",
    )
    .await;
    ingest(
        &memory,
        "report-b",
        "# Report B\n\nInitech's FY2023 revenue was $7M.\n",
        "2024-03-01T00:00:00Z",
    )
    .await;
    memory
}

/// Replace every UUID with a stable placeholder, in order of first appearance.
fn redact(v: &mut Value, ids: &mut HashMap<String, String>) {
    match v {
        Value::String(s) if uuid_like(s) => {
            let n = ids.len();
            *s = ids
                .entry(s.clone())
                .or_insert_with(|| format!("<id{n}>"))
                .clone();
        }
        Value::Array(a) => a.iter_mut().for_each(|x| redact(x, ids)),
        Value::Object(o) => o.iter_mut().for_each(|(k, x)| match x {
            // A cursor is signed with the store's own secret: present, not fixed.
            Value::String(c) if k == "continuation" => *c = "<cursor>".into(),
            x => redact(x, ids),
        }),
        _ => {}
    }
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4 && s.parse::<EntityId>().is_ok()
}

/// Channel scores as every store gives them: a lexical score is the store's own
/// ranking function (BM25 on both, but over each store's own tokens: FTS5's Porter
/// stemmer, PostgreSQL's Snowball), so only its rank is compared; a semantic similarity is compared to six decimals (stores
/// compute it in single or double precision).
fn normalize_scores(v: &mut Value) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(normalize_scores),
        Value::Object(o) => {
            if let Some(Value::Object(lexical)) = o.get_mut("lexical")
                && lexical.contains_key("score")
            {
                lexical.insert("score".into(), Value::String("<store-defined>".into()));
            }
            if let Some(Value::Object(semantic)) = o.get_mut("semantic")
                && let Some(score) = semantic.get("score").and_then(Value::as_f64)
            {
                let rounded = (score * 1e6).round() / 1e6;
                semantic.insert("score".into(), serde_json::json!(rounded));
            }
            // Fused scores and relevance are built from the lexical score, which the two
            // stores compute in different arithmetic (they agree to ~1e-9, not bit for bit).
            for key in ["fused", "relevance", "best_relevance"] {
                if let Some(score) = o.get(key).and_then(Value::as_f64) {
                    let rounded = (score * 1e6).round() / 1e6;
                    o.insert(key.into(), serde_json::json!(rounded));
                }
            }
            o.values_mut().for_each(normalize_scores);
        }
        _ => {}
    }
}

fn snapshot_value(mut v: Value) -> Value {
    redact(&mut v, &mut HashMap::new());
    normalize_scores(&mut v);
    v
}

async fn id_of(memory: &Memory, name: &str) -> EntityId {
    let env = memory.resolve_entity(name, None).await.unwrap();
    env.results
        .iter()
        .find(|r| r.canonical_name == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .entity_id
}

fn scope(mode: &str, a: Option<&str>, from: Option<&str>, to: Option<&str>) -> TemporalScope {
    TemporalScope {
        mode: mode.into(),
        at: a.map(str::to_string),
        from: from.map(str::to_string),
        to: to.map(str::to_string),
    }
}

#[tokio::test]
async fn the_registry_holds_exactly_the_four_assured_operations() {
    for h in stores().await {
        let memory = h.memory().await;
        let names: Vec<String> = memory.operations().into_iter().map(|o| o.name).collect();
        assert_eq!(
            names,
            vec![
                "resolve_entity",
                "claims_and_sources_context",
                "facts_context",
                "combined_context"
            ]
        );
        for op in memory.operations() {
            assert_eq!(
                op.input_schema["additionalProperties"], false,
                "{}",
                op.name
            );
            assert!(op.description.len() > 40);
        }
        // Off-schema input is refused with invalid_parameter.
        for (name, input) in [
            ("facts_context", json!({"query": "x", "bogus": 1})),
            (
                "facts_context",
                json!({"query": "x", "temporal_scope": {"mode": "at"}}),
            ),
            (
                "facts_context",
                json!({"query": "x", "temporal_scope": {"mode": "soon"}}),
            ),
            (
                "claims_and_sources_context",
                json!({"query": "x", "entity_ids": ["nope"]}),
            ),
            (
                "claims_and_sources_context",
                json!({"query": "x", "entity_ids": []}),
            ),
            ("claims_and_sources_context", json!({"query": "  "})),
            ("combined_context", json!({"query": "x", "k": 3})),
            ("resolve_entity", json!({"name": "x", "k": 0})),
        ] {
            let err = memory.run_operation(name, input.clone()).await.unwrap_err();
            assert_eq!(
                err.code().as_str(),
                "invalid_parameter",
                "{name} {input}: {err}"
            );
        }
        assert_eq!(
            memory
                .run_operation("nope", json!({}))
                .await
                .unwrap_err()
                .code()
                .as_str(),
            "not_found"
        );
    }
}

#[tokio::test]
async fn envelopes_of_every_operation() {
    for h in stores().await {
        let memory = fixture(&h).await;
        let alice = id_of(&memory, "Alice").await;
        let resolve = memory.resolve_entity("Alice", None).await.unwrap();
        assert_eq!(resolve.results[0].canonical_name, "Alice");
        assert!(resolve.ambiguity.is_none());
        let facts = memory
            .facts_context(FactsContextInput {
                query: "where does Alice work".into(),
                entity_ids: Some(vec![alice.to_string()]),
                temporal_scope: None,
                k: Some(5),
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        let evidence = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "where does Alice work".into(),
                entity_ids: Some(vec![alice.to_string()]),
                k: Some(4),
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        insta::assert_json_snapshot!(
            "resolve_entity",
            snapshot_value(serde_json::to_value(&resolve).unwrap())
        );
        let globex = facts
            .results
            .iter()
            .find(|r| r.fact.statement == "Alice works for Globex.")
            .expect("the current employer");
        assert_eq!(globex.support_state.as_deref(), Some("supported"));
        let support = &globex.provenance[0];
        assert_eq!(support.document_title, "HR update");
        assert!(!support.spans.is_empty());
        assert_eq!(support.asserted_at, at("2026-03-01T00:00:00Z"));
        insta::assert_json_snapshot!(
            "facts_context",
            snapshot_value(serde_json::to_value(&facts).unwrap())
        );
        insta::assert_json_snapshot!(
            "claims_and_sources_context",
            snapshot_value(serde_json::to_value(&evidence).unwrap())
        );
        let bundle = memory
            .combined_context(CombinedContextInput {
                query: "where does Alice work".into(),
                entity_ids: Some(vec![alice.to_string()]),
                temporal_scope: None,
            })
            .await
            .unwrap();
        assert_eq!(bundle.contract, "ContextBundle/v2");
        let keys: Vec<String> = serde_json::to_value(&bundle)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, vec!["claims_and_sources", "contract", "facts"]);

        // The rest of the corpus: a contradiction and a conversation.
        let memory = with_contradiction(&h).await;
        let chat = r#"{"session_time": "2024-05-02T09:00:00Z", "messages": [
          {"event_id": "m1", "speaker": "Maria", "text": "The Initech audit starts next Monday."},
          {"event_id": "m2", "speaker": "Joao", "text": "I booked the meeting room for the Initech auditors."}
        ]}"#;
        memory
            .ingest_conversation(
                &serde_json::from_str(chat).unwrap(),
                rememberstack::IngestOptions::new("chat/audit"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let bundle = memory
            .combined_context(CombinedContextInput {
                query: "Initech revenue and audit".into(),
                entity_ids: None,
                temporal_scope: None,
            })
            .await
            .unwrap();
        assert!(
            bundle
                .facts
                .results
                .iter()
                .any(|r| r.contradiction.is_some()),
            "{}",
            h.kind
        );
        // Both conversation turns are in the bundle, on every store.
        let evidence = serde_json::to_string(&bundle.claims_and_sources).unwrap();
        assert!(
            evidence.contains("\"m1\"") && evidence.contains("\"m2\""),
            "{}",
            h.kind
        );
        // The bundle's fused order (and so what fits its budget) follows the
        // store's lexical ranking (BM25 on both stores, over each store's own
        // tokens): the whole envelope is pinned for the embedded store.
        if h.kind != "sqlite" {
            continue;
        }
        insta::assert_json_snapshot!(
            "combined_context",
            snapshot_value(serde_json::to_value(&bundle).unwrap())
        );
    }
}

#[tokio::test]
async fn combined_children_equal_the_direct_calls() {
    for h in stores().await {
        let memory = fixture(&h).await;
        let alice = id_of(&memory, "Alice").await.to_string();
        let scope = Some(scope("at", Some("2025-06-01T00:00:00Z"), None, None));
        let bundle = memory
            .run_operation(
                "combined_context",
                json!({"query": "Alice employer", "entity_ids": [alice], "temporal_scope": scope}),
            )
            .await
            .unwrap();
        let evidence = memory
            .run_operation(
                "claims_and_sources_context",
                json!({"query": "Alice employer", "entity_ids": [alice]}),
            )
            .await
            .unwrap();
        let facts = memory
            .run_operation(
                "facts_context",
                json!({"query": "Alice employer", "entity_ids": [alice], "temporal_scope": scope}),
            )
            .await
            .unwrap();
        assert_eq!(bundle["claims_and_sources"], evidence, "{}", h.kind);
        assert_eq!(bundle["facts"], facts, "{}", h.kind);
        // A failure in either child fails the whole call.
        let err = memory
            .run_operation(
                "combined_context",
                json!({"query": "x", "temporal_scope": {"mode": "at", "at": "not a time"}}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_parameter");
    }
}

#[tokio::test]
async fn time_scopes_select_the_right_employer() {
    for h in stores().await {
        let memory = fixture(&h).await;
        let alice = id_of(&memory, "Alice").await.to_string();
        let employers = |scope: Option<TemporalScope>| {
            let memory = memory.clone();
            let alice = alice.clone();
            async move {
                let env = memory
                    .facts_context(FactsContextInput {
                        query: "Alice works for".into(),
                        entity_ids: Some(vec![alice]),
                        temporal_scope: scope,
                        k: Some(20),
                        budget: None,
                        ..Default::default()
                    })
                    .await
                    .unwrap();
                let mut names: Vec<String> = env
                    .results
                    .iter()
                    .filter(|r| r.fact.predicate.as_deref() == Some("works_for"))
                    .filter_map(|r| r.fact.object_name.clone())
                    .collect();
                names.sort();
                (names, env.temporal_scope.unwrap())
            }
        };
        let (now, echo) = employers(None).await;
        assert_eq!(now, vec!["Globex"], "{}", h.kind);
        assert_eq!(echo.mode, "current");
        assert_eq!(echo.evaluated_at, at(NOW));
        let (then, echo) =
            employers(Some(scope("at", Some("2025-06-01T00:00:00Z"), None, None))).await;
        assert_eq!(then, vec!["Acme"]);
        assert_eq!(echo.at, Some(at("2025-06-01T00:00:00Z")));
        let (span, _) = employers(Some(scope(
            "overlap",
            None,
            Some("2025-12-01T00:00:00Z"),
            Some("2026-04-01T00:00:00Z"),
        )))
        .await;
        assert_eq!(span, vec!["Acme", "Globex"]);
        let (early, _) = employers(Some(scope(
            "overlap",
            None,
            None,
            Some("2024-01-01T00:00:00Z"),
        )))
        .await;
        assert!(early.is_empty());
        let (all, _) = employers(Some(scope("history", None, None, None))).await;
        assert_eq!(all, vec!["Acme", "Globex"]);
    }
}

#[tokio::test]
async fn negatives_are_typed() {
    for h in stores().await {
        let memory = fixture(&h).await;
        // An unknown anchor: unknown_entity, nothing searched.
        let env = memory
            .facts_context(FactsContextInput {
                query: "Alice".into(),
                entity_ids: Some(vec![EntityId::new().to_string()]),
                temporal_scope: None,
                k: None,
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(env.results.is_empty());
        assert_eq!(env.negative.as_ref().unwrap().kind, "unknown_entity");
        // A merged-away anchor is unknown too.
        let acme = id_of(&memory, "Acme").await;
        let globex = id_of(&memory, "Globex").await;
        memory.merge_entities(acme, globex).await.unwrap();
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "Acme".into(),
                entity_ids: Some(vec![acme.to_string()]),
                k: None,
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(env.negative.as_ref().unwrap().kind, "unknown_entity");
        // An empty namespace: known_empty.
        let empty = memory.with_namespace("nobody-here").unwrap();
        let env = empty
            .facts_context(FactsContextInput {
                query: "anything".into(),
                entity_ids: None,
                temporal_scope: None,
                k: None,
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(env.negative.as_ref().unwrap().kind, "known_empty");
        // Unprocessed sources: a boundary naming its limitation.
        let pending = memory.with_namespace("pending").unwrap();
        pending
            .ingest_text(
                "# P\n\nBob likes tea.\n",
                rememberstack::IngestOptions::new("p"),
            )
            .await
            .unwrap();
        let env = pending
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "tea".into(),
                entity_ids: None,
                k: None,
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        let negative = env.negative.unwrap();
        assert_eq!(negative.kind, "boundary");
        assert!(negative.limitation.is_some());
        // Results present: no negative.
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "Globex".into(),
                entity_ids: None,
                k: Some(1),
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(env.negative.is_none());
        assert_eq!(env.results.len(), 1);
        assert!(env.truncation.more_available, "a capped page says so");
    }
}

#[tokio::test]
async fn contradictions_are_never_one_sided_and_budgets_drop_whole_items() {
    for h in stores().await {
        let memory = with_contradiction(&h).await;
        let env = memory
            .facts_context(FactsContextInput {
                query: "Initech revenue".into(),
                entity_ids: None,
                temporal_scope: None,
                k: Some(1),
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(env.results.len(), 1, "{}", h.kind);
        let c = env.results[0].contradiction.as_ref().expect("group inline");
        assert_eq!((c.returned, c.total), (2, 2));
        assert_eq!(c.members.len(), 1);
        assert_ne!(c.members[0].statement, env.results[0].fact.statement);

        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "Initech revenue".into(),
                entity_ids: None,
                k: Some(10),
                budget: Some(40),
                ..Default::default()
            })
            .await
            .unwrap();
        let budget = env.budget.as_ref().unwrap();
        assert!(budget.used <= 40);
        let kept: usize = env.results.iter().map(|r| r.text().chars().count()).sum();
        assert_eq!(kept, budget.used);
        assert!(!budget.omitted.is_empty(), "{budget:?}");
    }
}

#[tokio::test]
async fn anchors_constrain_candidates_before_the_top_k_cut() {
    for h in stores().await {
        let memory = h.memory().await;
        // Many documents match the query better; one is about the anchored entity.
        for i in 0..55 {
            memory
                .ingest_text(
                    &format!("# Note {i}\n\nPerson{i} Smith praised the Globex quarterly revenue report.\n"),
                    rememberstack::IngestOptions::new(format!("n{i}")),
                )
                .await
                .unwrap();
        }
        memory
            .ingest_text(
                "# Zed\n\nZed Quill mentioned revenue once.\n",
                rememberstack::IngestOptions::new("zed"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let zed = id_of(&memory, "Zed Quill").await.to_string();
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "Globex quarterly revenue report".into(),
                entity_ids: Some(vec![zed.clone()]),
                k: Some(5),
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(!env.results.is_empty(), "{}", h.kind);
        for r in &env.results {
            assert!(r.text().contains("Zed Quill"), "{}: {}", h.kind, r.text());
        }
        assert!(
            env.results
                .iter()
                .any(|r| matches!(r, EvidenceResult::Claim(_)))
        );
        let facts = memory
            .facts_context(FactsContextInput {
                query: "Globex quarterly revenue report".into(),
                entity_ids: Some(vec![zed]),
                temporal_scope: None,
                k: Some(5),
                budget: None,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(!facts.results.is_empty());
        assert!(
            facts
                .results
                .iter()
                .all(|r| r.fact.subject_name == "Zed Quill")
        );
        assert_eq!(facts.results[0].anchors, Some(1));
    }
}

#[tokio::test]
async fn reads_never_call_a_chat_model() {
    for h in stores().await {
        fixture(&h).await;
        let refusing =
            JudgeModel::new(|request, _| panic!("a read called the model: {}", request.call_key));
        let model: Arc<dyn ChatModel> = refusing.clone();
        let reader = Memory::builder()
            .store(h.store.clone())
            .config(test_config())
            .extractor(ExtractorModels {
                selection: model.clone(),
                claimify: model.clone(),
            })
            .fact_models(FactModels {
                normalizer: Some(model.clone()),
                resolver: Some(model.clone()),
                adjudicator: Some(model),
            })
            .open()
            .await
            .unwrap();
        let alice = id_of(&reader, "Alice").await.to_string();
        for (name, input) in [
            ("resolve_entity", json!({"name": "Alice"})),
            (
                "claims_and_sources_context",
                json!({"query": "Alice", "entity_ids": [alice]}),
            ),
            (
                "facts_context",
                json!({"query": "Alice", "temporal_scope": {"mode": "history"}}),
            ),
            (
                "combined_context",
                json!({"query": "Alice", "entity_ids": [alice]}),
            ),
        ] {
            reader.run_operation(name, input).await.unwrap();
        }
        assert!(refusing.calls("selection").is_empty());
        assert!(refusing.calls("resolve_t4").is_empty());
        assert!(refusing.calls("adjudicate").is_empty());
        assert!(refusing.calls("normalize").is_empty());
    }
}

#[tokio::test]
async fn receipts_resolve_refuse_and_replay() {
    for h in stores().await {
        let memory = h.memory().await;
        let living = |text: &'static str| {
            let memory = memory.clone();
            async move {
                memory
                    .ingest_text(
                        text,
                        rememberstack::IngestOptions::new("wiki/tea")
                            .mode(rememberstack::VersioningMode::Living),
                    )
                    .await
                    .unwrap();
                memory.process_until_idle().await.unwrap();
            }
        };
        living("# Tea\n\nBob Brewer grows oolong tea in Taiwan.\n").await;
        let query = "where does Bob grow oolong tea";
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: query.into(),
                k: Some(3),
                record_receipt: Some(true),
                request_id: Some("req-1".into()),
                subject: Some("agent-7".into()),
                purpose: Some("answer".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let receipt_id = env.receipt_id.expect("receipt recorded");
        assert!(!env.results.is_empty());

        // Inspection: ids, digests, scores, counts — never the query or source text.
        let receipt = memory.inspect_receipt(receipt_id).await.unwrap();
        assert_eq!(receipt.selections.len(), env.results.len());
        assert_eq!(receipt.subject.as_deref(), Some("agent-7"));
        let json = serde_json::to_string(&receipt).unwrap();
        assert!(!json.contains("oolong"), "{}: {json}", h.kind);
        assert!(!json.contains("Tea"), "{json}");

        // Resolution: the current texts, in the selected order.
        let resolved = memory.resolve_receipt(receipt_id).await.unwrap();
        assert_eq!(resolved.status, "resolved");
        let texts: Vec<&str> = resolved.records.iter().map(|r| r.text.as_str()).collect();
        let expected: Vec<&str> = env.results.iter().map(|r| r.text()).collect();
        assert_eq!(texts, expected);

        // A replay of the request id returns the original receipt; a different request
        // under the same id is refused.
        let again = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: query.into(),
                k: Some(3),
                record_receipt: Some(true),
                request_id: Some("req-1".into()),
                subject: Some("agent-7".into()),
                purpose: Some("answer".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(again.receipt_id, Some(receipt_id));
        let conflict = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "something else".into(),
                record_receipt: Some(true),
                request_id: Some("req-1".into()),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(conflict.code().as_str(), "conflict");

        // A living-mode re-ingest drops the selected sentence: resolution refuses the
        // whole receipt with its reason; inspection still works.
        living("# Tea\n\nThe shop sells green tea.\n").await;
        let refused = memory.resolve_receipt(receipt_id).await.unwrap();
        assert_eq!(refused.status, "refused", "{}: {refused:?}", h.kind);
        assert_eq!(refused.reason.as_deref(), Some("superseded"));
        assert!(refused.records.is_empty());
        assert!(memory.inspect_receipt(receipt_id).await.is_ok());
        // An unknown receipt is not found.
        assert_eq!(
            memory
                .resolve_receipt(rememberstack::ReceiptId::new())
                .await
                .unwrap_err()
                .code()
                .as_str(),
            "not_found"
        );
    }
}

#[tokio::test]
async fn a_fact_receipt_refuses_once_the_fact_is_superseded() {
    for h in stores().await {
        let judge = JudgeModel::new(verdicts(vec![json!({
            "verdict": "supersede", "fact": "F1", "valid_from": "", "valid_until": "",
            "reason": "new employer"
        })]));
        let memory = Memory::builder()
            .store(h.store.clone())
            .config(test_config())
            .fact_models(FactModels {
                adjudicator: Some(judge),
                ..FactModels::default()
            })
            .open()
            .await
            .unwrap();
        ingest(
            &memory,
            "a",
            "# HR\n\nAlice has worked for Acme since March 2024.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        let env = memory
            .facts_context(FactsContextInput {
                query: "Alice works for Acme".into(),
                record_receipt: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();
        let id = env.receipt_id.unwrap();
        assert_eq!(memory.resolve_receipt(id).await.unwrap().status, "resolved");
        ingest(
            &memory,
            "b",
            "# HR update\n\nIn February 2026 Alice left Acme and joined Globex.\n",
            "2026-03-01T00:00:00Z",
        )
        .await;
        let refused = memory.resolve_receipt(id).await.unwrap();
        assert_eq!(
            refused.reason.as_deref(),
            Some("superseded"),
            "{}: {refused:?}",
            h.kind
        );
    }
}

#[tokio::test]
async fn adjacent_chunks_neighbourhoods_and_document_search() {
    for h in stores().await {
        let memory = h.memory().await;
        // Adjacent chunks: a long conversation cut into several chunks.
        let conv = crate::conversation_json(0, 60);
        memory
            .ingest_conversation(
                &serde_json::from_str(&conv).unwrap(),
                rememberstack::IngestOptions::new("chat/long"),
            )
            .await
            .unwrap();
        ingest(&memory, "org", "# Org\n\nAlice works for Acme.\n\nAcme is part of Initech.\n\nInitech is located in Ohio.\n", "2024-01-01T00:00:00Z").await;
        let hits = memory.search("cello", 3).await.unwrap();
        let middle = hits
            .results
            .iter()
            .find(|r| r.source_ref == "chat/long")
            .expect("a chat chunk")
            .chunk_id;
        let env = memory.adjacent_chunks(middle, 1).await.unwrap();
        assert!(env.results.len() >= 2, "{}: {}", h.kind, env.results.len());
        assert!(env.results.iter().any(|r| r.chunk_id == middle));
        let spans: Vec<u64> = env.results.iter().map(|r| r.char_span.start).collect();
        let mut sorted = spans.clone();
        sorted.sort();
        assert_eq!(spans, sorted, "document order");
        assert_eq!(
            memory
                .adjacent_chunks(middle, 3)
                .await
                .unwrap_err()
                .code()
                .as_str(),
            "invalid_parameter"
        );

        // Neighbourhood: one hop, two hops, a predicate filter at every hop.
        let alice = id_of(&memory, "Alice").await;
        let hop = |depth: usize, predicates: Vec<String>| {
            let memory = memory.clone();
            async move {
                let env = memory
                    .neighborhood(rememberstack::NeighborhoodRequest {
                        entity_ids: vec![alice],
                        depth: Some(depth),
                        predicates,
                        temporal_scope: None,
                    })
                    .await
                    .unwrap();
                env.results
                    .iter()
                    .map(|r| (r.depth, r.fact.statement.clone(), r.path.len()))
                    .collect::<Vec<_>>()
            }
        };
        let one = hop(1, vec![]).await;
        assert_eq!(one.len(), 1, "{}: {one:?}", h.kind);
        assert!(one[0].1.contains("Acme"));
        let three = hop(3, vec![]).await;
        assert_eq!(three.len(), 3, "{}: {three:?}", h.kind);
        assert_eq!(three.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(three[2].2, 3, "the path of the third hop has three edges");
        let only_work = hop(3, vec!["works_for".into()]).await;
        assert_eq!(only_work.len(), 1, "an ineligible edge stops the path");

        // Documents by name, title and content.
        let docs = memory
            .search_documents(rememberstack::DocumentQuery {
                query: "Initech Ohio".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(docs.results[0].source_ref, "org", "{}", h.kind);
        assert!(docs.results[0].best_chunk.is_some());
        let by_title = memory
            .search_documents(rememberstack::DocumentQuery {
                title: Some("org".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(by_title.results.len(), 1);
        let none = memory
            .search_documents(rememberstack::DocumentQuery {
                query: "Initech".into(),
                title: Some("no such title".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(none.negative.unwrap().kind, "known_empty");
        assert_eq!(
            memory
                .search_documents(rememberstack::DocumentQuery {
                    from: Some("yesterday".into()),
                    ..Default::default()
                })
                .await
                .unwrap_err()
                .code()
                .as_str(),
            "invalid_parameter"
        );
    }
}

#[tokio::test]
async fn document_filters_apply_before_the_top_k_cut() {
    for h in stores().await {
        let memory = h.memory().await;
        // Sixty decoys match the query better than the one scoped document does; the
        // channel depth is 50, so a filter applied after the cut would find nothing.
        for d in 0..60 {
            memory
                .ingest_text(
                    &format!("# Decoy {d}\n\nApples, apples and more apples were sold.\n"),
                    rememberstack::IngestOptions::new(format!("decoy/{d}")),
                )
                .await
                .unwrap();
        }
        ingest(
            &memory,
            "ledger",
            "# Orchard ledger\n\nCarol sold apples to Globex.\n",
            "2024-05-01T00:00:00Z",
        )
        .await;
        let scoped = |mut req: SearchRequest| {
            req.documents = Some(rememberstack::DocumentFilter {
                title: Some("orchard".into()),
                ..Default::default()
            });
            req
        };
        let req = SearchRequest::new("default", "apples sold", 5);
        let unscoped = memory.search_with(req.clone()).await.unwrap();
        assert!(
            unscoped.results.iter().all(|r| r.source_ref != "ledger"),
            "{}: the ledger is outside the unscoped top 5",
            h.kind
        );
        let chunks = memory.search_with(scoped(req.clone())).await.unwrap();
        assert_eq!(chunks.results.len(), 1, "{}", h.kind);
        assert_eq!(chunks.results[0].source_ref, "ledger");
        let claims = memory
            .search_claims_with(scoped(req.clone()))
            .await
            .unwrap();
        assert!(!claims.results.is_empty(), "{}", h.kind);
        assert!(claims.results.iter().all(|c| c.source_ref == "ledger"));
        let facts = memory
            .search_facts_with(scoped(SearchRequest::new("default", "Carol Globex", 5)))
            .await
            .unwrap();
        assert!(!facts.results.is_empty(), "{}", h.kind);
        assert!(
            facts
                .results
                .iter()
                .all(|f| f.fact.statement.contains("Carol")),
            "{}: {:?}",
            h.kind,
            facts.results
        );
        // Ids scope too; an unknown lineage admits nothing; a bad instant is refused.
        let ledger = chunks.results[0].document_id;
        let mut by_id = req.clone();
        by_id.documents = Some(rememberstack::DocumentFilter {
            document_ids: Some(vec![ledger]),
            ..Default::default()
        });
        let env = memory.search_with(by_id).await.unwrap();
        assert_eq!(env.results.len(), 1);
        let mut nowhere = req.clone();
        nowhere.documents = Some(rememberstack::DocumentFilter {
            document_ids: Some(vec![rememberstack::DocumentId::new()]),
            ..Default::default()
        });
        assert!(
            memory
                .search_with(nowhere)
                .await
                .unwrap()
                .results
                .is_empty()
        );
        let mut bad = req.clone();
        bad.documents = Some(rememberstack::DocumentFilter {
            from: Some("last week".into()),
            ..Default::default()
        });
        assert_eq!(
            memory.search_with(bad).await.unwrap_err().code().as_str(),
            "invalid_parameter"
        );
        // Document search ranks the scoped content before its own cut, too.
        let docs = memory
            .search_documents(rememberstack::DocumentQuery {
                query: "apples".into(),
                title: Some("orchard".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(docs.results.len(), 1);
        assert!(docs.results[0].best_chunk.is_some(), "{}", h.kind);
    }
}

#[tokio::test]
async fn hydrate_walks_from_a_record_to_its_evidence_and_sources() {
    use rememberstack::RecordRef;
    for h in stores().await {
        let memory = h.memory().await;
        ingest(
            &memory,
            "hr",
            "# HR\n\nAlice works for Acme.\n\nBob lives in Oslo.\n",
            "2024-01-01T00:00:00Z",
        )
        .await;
        let facts = memory.search_facts("Alice Acme", 5).await.unwrap();
        let fact = facts
            .results
            .iter()
            .find(|f| f.fact.statement.contains("Alice") && f.fact.statement.contains("Acme"))
            .expect("the employment fact")
            .fact
            .clone();
        let chunk = memory.search("Bob Oslo", 1).await.unwrap().results[0].chunk_id;
        let gone = RecordRef::Claim(rememberstack::ClaimId::new());
        let env = memory
            .hydrate(&[RecordRef::Fact(fact.fact_id), gone, RecordRef::Chunk(chunk)])
            .await
            .unwrap();
        assert_eq!(env.results.len(), 2, "{}", h.kind);
        assert_eq!(env.hydration_drops.get("record_gone"), Some(&1));
        let f = &env.results[0];
        assert_eq!(f.record, format!("fact:{}", fact.fact_id));
        assert_eq!(f.text, fact.statement);
        assert!(!f.evidence.is_empty());
        let claim = &f.evidence[0].claim;
        assert!(claim.text.contains("Alice"), "{}", claim.text);
        // The source chunk holds the claim's evidence span exactly.
        let occ = claim.occurrences.last().unwrap();
        let source = f
            .sources
            .iter()
            .find(|c| c.chunk_id == occ.chunk_id)
            .expect("the claim's chunk is a source");
        assert!(source.text.contains("Alice works for Acme"));
        // A claim hydrates to itself plus its chunk; a chunk to itself.
        let c = memory
            .hydrate(&[RecordRef::Claim(claim.claim_id)])
            .await
            .unwrap();
        assert_eq!(c.results[0].evidence.len(), 1);
        assert!(c.results[0].evidence[0].stance.is_none());
        assert_eq!(c.results[0].sources[0].chunk_id, occ.chunk_id);
        assert_eq!(env.results[1].sources[0].chunk_id, chunk);
        assert!(env.results[1].text.contains("Oslo"));
        // Bad input is typed.
        assert_eq!(
            "entity:x".parse::<RecordRef>().unwrap_err().code().as_str(),
            "invalid_parameter"
        );
        assert_eq!(
            memory.hydrate(&[]).await.unwrap_err().code().as_str(),
            "invalid_parameter"
        );
        assert_eq!(
            memory
                .hydrate(&vec![gone; 51])
                .await
                .unwrap_err()
                .code()
                .as_str(),
            "invalid_parameter"
        );
    }
}

#[tokio::test]
async fn context_pages_continue_without_repeats() {
    for h in stores().await {
        let memory = with_contradiction(&h).await;
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..20 {
            let env = memory
                .claims_and_sources_context(ClaimsAndSourcesInput {
                    query: "Initech revenue".into(),
                    k: Some(1),
                    cursor: cursor.clone(),
                    ..Default::default()
                })
                .await
                .unwrap();
            for r in &env.results {
                assert!(!seen.contains(&r.id()), "{}: repeated {}", h.kind, r.id());
                seen.push(r.id());
            }
            match env.truncation.continuation {
                Some(c) => {
                    assert!(env.truncation.more_available);
                    cursor = Some(c);
                }
                None => break,
            }
        }
        // Two claims and two chunks: every one reached, one per page.
        assert_eq!(seen.len(), 4, "{}: {seen:?}", h.kind);
        // A cursor of another request is refused.
        let first = memory
            .facts_context(FactsContextInput {
                query: "Initech revenue".into(),
                k: Some(1),
                ..Default::default()
            })
            .await
            .unwrap();
        let c = first.truncation.continuation.expect("a second fact page");
        let err = memory
            .facts_context(FactsContextInput {
                query: "something else".into(),
                k: Some(1),
                cursor: Some(c),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_parameter");
    }
}

/// Score fusion is a configuration of the same operations: a weight outside [0, 1]
/// is refused when the engine opens, and a valid one answers with fused scores that
/// are the weighted sum of the channels' (never RRF's 1/(60 + rank) values).
#[tokio::test]
async fn score_fusion_is_configured_and_checked() {
    for h in rememberstack_conformance::stores().await {
        let mut bad = rememberstack_conformance::test_config();
        bad.engine.fusion = rememberstack::Fusion::Scores {
            semantic_weight: 1.5,
            semantic_scale: rememberstack::SemanticScale::Cosine,
        };
        let err = Memory::builder()
            .store(h.store.clone())
            .config(bad)
            .open()
            .await
            .unwrap_err();
        assert_eq!(err.code(), rememberstack::ErrorCode::Config, "{}", h.kind);
        let mut config = rememberstack_conformance::test_config();
        config.engine.fusion = rememberstack::Fusion::Scores {
            semantic_weight: 0.5,
            semantic_scale: rememberstack::SemanticScale::Cosine,
        };
        let memory = h.memory_with(config, None, None).await;
        memory
            .ingest_text(
                "# Boats\n\nMarta navigates the boat at night.\n\nThe harbour closes at six.",
                rememberstack::IngestOptions::new("boats"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let env = memory.search("Marta navigates", 5).await.unwrap();
        let top = &env.results[0];
        assert!(top.text.contains("Marta navigates"), "{}", h.kind);
        let cosine = top
            .scores
            .semantic
            .as_ref()
            .map_or(0.0, |s| s.score.max(0.0));
        let lexical = top.scores.lexical.as_ref().map_or(0.0, |_| 1.0);
        // The top hit is also the best lexical one: its relative lexical score is 1.
        assert!(
            (top.scores.fused - (0.5 * cosine + 0.5 * lexical)).abs() < 1e-9,
            "{}: {:?}",
            h.kind,
            top.scores
        );
    }
}

/// Relevance is absolute: results of a question about something never ingested are
/// listed, but the answer says nothing remembered is about it
/// (`no_relevant_memory`, with the best relevance), while a question about what
/// was ingested carries no negative and its best result reaches the floor. The
/// floor is a setting: at 0 no answer is weak.
#[tokio::test]
async fn a_question_about_nothing_ingested_is_no_relevant_memory() {
    const NOTES: &str = "# Kitchen\n\nMarta bakes sourdough bread every Sunday morning.\n\n\
        The sourdough starter lives in the fridge and is fed with rye flour.\n\n\
        Marta's bread recipe uses seventy percent hydration and a long cold proof.\n";
    for h in stores().await {
        let memory = h.memory_with(test_config(), None, None).await;
        memory
            .ingest_text(NOTES, rememberstack::IngestOptions::new("kitchen"))
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let ask = |q: &str| ClaimsAndSourcesInput {
            query: q.into(),
            ..Default::default()
        };
        let known = memory
            .claims_and_sources_context(ask("How does Marta bake sourdough bread?"))
            .await
            .unwrap();
        assert!(known.negative.is_none(), "{}: {:?}", h.kind, known.negative);
        let best_known = known
            .results
            .iter()
            .filter_map(|r| match r {
                EvidenceResult::Claim(c) => c.scores.relevance,
                EvidenceResult::Chunk(c) => c.scores.relevance,
            })
            .fold(0.0f64, f64::max);
        let floor = rememberstack::relevance::DEFAULT_FLOOR;
        assert!(best_known >= floor, "{}: {best_known}", h.kind);

        let unknown = memory
            .claims_and_sources_context(ask(
                "Which telescope observed the supernova in the Andromeda galaxy?",
            ))
            .await
            .unwrap();
        // The weak guesses are still listed, each with its relevance.
        assert!(!unknown.results.is_empty(), "{}", h.kind);
        let json = serde_json::to_value(&unknown).unwrap();
        for r in json["results"].as_array().unwrap() {
            let x = r["scores"]["relevance"].as_f64().expect("a relevance");
            assert!((0.0..floor).contains(&x), "{}: {x}", h.kind);
        }
        let negative = unknown.negative.as_ref().expect("a negative");
        assert_eq!(negative.kind, "no_relevant_memory", "{}", h.kind);
        let best = negative.best_relevance.expect("the best relevance");
        assert!(best < floor && best < best_known, "{}: {best}", h.kind);
        assert_eq!(json["negative"]["best_relevance"].as_f64(), Some(best));

        // The floor is the caller's: at 0, the same answer is not weak.
        let mut lenient = test_config();
        lenient.engine.relevance.floor = 0.0;
        let memory = h.memory_with(lenient, None, None).await;
        let env = memory
            .claims_and_sources_context(ask(
                "Which telescope observed the supernova in the Andromeda galaxy?",
            ))
            .await
            .unwrap();
        assert!(env.negative.is_none(), "{}: {:?}", h.kind, env.negative);

        // A floor outside [0, 1] is refused when the engine opens.
        let mut bad = test_config();
        bad.engine.relevance.floor = 1.5;
        let err = Memory::builder()
            .store(h.store.clone())
            .config(bad)
            .open()
            .await
            .unwrap_err();
        assert_eq!(err.code(), rememberstack::ErrorCode::Config, "{}", h.kind);
    }
}

/// The hashing embedder, counting the query embeddings it is asked for.
#[derive(Debug, Default)]
struct CountingQueries {
    inner: rememberstack::HashingEmbedder,
    queries: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl rememberstack::internals::embed::Embedder for CountingQueries {
    fn identity(&self) -> &rememberstack::internals::embed::EmbedderIdentity {
        self.inner.identity()
    }
    async fn embed(
        &self,
        texts: &[String],
        purpose: rememberstack::internals::embed::EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, rememberstack::internals::embed::ProviderError> {
        if purpose == rememberstack::internals::embed::EmbedPurpose::Query {
            self.queries
                .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.embed(texts, purpose).await
    }
}

/// `combined_context` searches claims, chunks and facts: the query is embedded once
/// for all of them (a CPU model spends most of an operation embedding), and a new
/// query is embedded anew.
#[tokio::test]
async fn an_operation_embeds_its_query_once() {
    for h in stores().await {
        let counting = Arc::new(CountingQueries::default());
        let memory = h
            .memory_with(
                test_config(),
                Some(counting.clone() as Arc<dyn rememberstack::internals::embed::Embedder>),
                None,
            )
            .await;
        ingest(
            &memory,
            "boats",
            "# Boats\n\nMarta navigates the boat at night. The harbour closes at six.\n",
            "2026-01-01T00:00:00Z",
        )
        .await;
        let count = || counting.queries.load(std::sync::atomic::Ordering::SeqCst);
        let before = count();
        let bundle = memory
            .combined_context(CombinedContextInput {
                query: "Who navigates the boat?".into(),
                entity_ids: None,
                temporal_scope: None,
            })
            .await
            .unwrap();
        assert!(!bundle.claims_and_sources.results.is_empty(), "{}", h.kind);
        assert_eq!(count() - before, 1, "{}", h.kind);
        memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "When does the harbour close?".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(count() - before, 2, "{}", h.kind);
    }
}
