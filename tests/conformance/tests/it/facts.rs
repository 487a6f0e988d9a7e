//! E3 end to end: normalization, entity resolution (offline policy, T4 with a
//! scripted judge, document-local replay, stale answers), fact adjudication
//! (evidence, supersession, contradiction, recurring events), evidence counting,
//! merge and unmerge.

use async_trait::async_trait;
use rememberstack::internals::chat::{ChatModel, ChatRequest, ChatResponse, StructuredMode, Usage};
use rememberstack::internals::embed::ProviderError;
use rememberstack::internals::entities::{
    DocumentBinding, Mention, NewAlias, ResolutionCommit, ResolutionDecision,
};
use rememberstack::{
    DecisionId, EntityId, FactKind, FactModels, FactQuery, FactRecord, IngestOptions, Memory,
    MemoryStore, Timestamp,
};
use rememberstack_conformance::{Harness, stores, test_config};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

pub(crate) type Judge = dyn Fn(&ChatRequest, usize) -> Value + Send + Sync;

/// A chat model whose answers are computed from the request (call key, prompt
/// text and how many calls of that key came before).
pub(crate) struct JudgeModel {
    judge: Box<Judge>,
    calls: Mutex<Vec<ChatRequest>>,
    /// Runs (once) before the first `resolve_t4` answer: lets a test change the
    /// store while the call is in flight.
    during_t4: Mutex<Option<Box<dyn FnOnce() -> BoxFuture + Send>>>,
}

pub(crate) type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

impl std::fmt::Debug for JudgeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JudgeModel")
    }
}

impl JudgeModel {
    pub(crate) fn new(
        judge: impl Fn(&ChatRequest, usize) -> Value + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(JudgeModel {
            judge: Box::new(judge),
            calls: Mutex::new(vec![]),
            during_t4: Mutex::new(None),
        })
    }
    pub(crate) fn calls(&self, key: &str) -> Vec<ChatRequest> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.call_key == key)
            .cloned()
            .collect()
    }
}

#[async_trait]
impl ChatModel for JudgeModel {
    fn model(&self) -> &str {
        "judge-model"
    }
    async fn complete_json(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        if request.call_key == "resolve_t4" {
            let hook = self.during_t4.lock().unwrap().take();
            if let Some(hook) = hook {
                hook().await;
            }
        }
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let n = calls
                .iter()
                .filter(|c| c.call_key == request.call_key)
                .count();
            calls.push(request.clone());
            n
        };
        let value = (self.judge)(request, n);
        rememberstack::internals::chat::validate_json(&request.schema, &value).map_err(|e| {
            ProviderError::Malformed {
                message: e.to_string(),
            }
        })?;
        Ok(ChatResponse {
            value,
            model: "judge-model".into(),
            usage: Usage::default(),
            provider_request_id: None,
            mode: StructuredMode::Scripted,
        })
    }
}

async fn memory_with(h: &Harness, models: FactModels) -> Memory {
    Memory::builder()
        .store(h.store.clone())
        .config(test_config())
        .fact_models(models)
        .open()
        .await
        .unwrap()
}

pub(crate) fn at(s: &str) -> Timestamp {
    rememberstack::time::parse_rfc3339(s).unwrap()
}

pub(crate) async fn ingest(memory: &Memory, source_ref: &str, text: &str, source_time: &str) {
    memory
        .ingest_text(
            text,
            IngestOptions::new(source_ref).source_time(at(source_time)),
        )
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
}

pub(crate) async fn all_facts(memory: &Memory, history: bool) -> Vec<FactRecord> {
    memory
        .facts(&FactQuery {
            history,
            ..FactQuery::default()
        })
        .await
        .unwrap()
}

pub(crate) fn named<'a>(facts: &'a [FactRecord], needle: &str) -> Vec<&'a FactRecord> {
    facts
        .iter()
        .filter(|f| f.statement.contains(needle))
        .collect()
}

async fn entity_ids_named(memory: &Memory, name: &str) -> Vec<EntityId> {
    memory
        .entities(false, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.canonical_name == name)
        .map(|e| e.entity_id)
        .collect()
}

#[tokio::test]
async fn offline_pipeline_builds_entities_relations_and_a_trace() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "notes/alice",
            "# Team notes\n\nAlice has worked for Acme since March 2024.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        let names: Vec<String> = memory
            .entities(false, 100)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.canonical_name)
            .collect();
        assert!(
            names.contains(&"Alice".to_string()),
            "{}: {names:?}",
            h.kind
        );
        assert!(names.contains(&"Acme".to_string()), "{}: {names:?}", h.kind);
        assert!(
            !names
                .iter()
                .any(|n| n.contains("Team notes") || n == "March"),
            "{}: the title and month names are not entities: {names:?}",
            h.kind
        );
        let facts = all_facts(&memory, false).await;
        let works: Vec<&FactRecord> = facts
            .iter()
            .filter(|f| f.predicate.as_deref() == Some("works_for"))
            .collect();
        assert_eq!(works.len(), 1, "{}: {facts:#?}", h.kind);
        let fact = works[0];
        assert_eq!(fact.kind, FactKind::Relation);
        assert_eq!(fact.subject_name, "Alice");
        assert_eq!(fact.object_name.as_deref(), Some("Acme"));
        assert_eq!(fact.evidence_count, 1);
        assert_eq!(fact.window.valid_from, Some(at("2024-03-01T00:00:00Z")));
        assert_eq!(
            fact.window.valid_until, None,
            "since March 2024 is open-ended"
        );

        // The trace: evidence with spans, the transcript, the resolution decisions.
        let trace = memory.trace(fact.fact_id).await.unwrap();
        assert_eq!(trace.evidence.len(), 1);
        let claim = trace.evidence[0].claim.as_ref().expect("claim");
        assert!(claim.text.contains("Alice has worked for Acme"));
        assert!(!claim.occurrences[0].spans.is_empty());
        assert_eq!(trace.adjudications.len(), 1);
        assert_eq!(trace.adjudications[0].verdict, "new");
        assert!(trace.resolutions.iter().any(|d| d.name == "Alice"));
        assert!(trace.resolutions.iter().all(|d| d.tier == "mint"));

        // The registry is bootstrapped and counts uses.
        let preds = memory.predicates().await.unwrap();
        assert!(preds.len() >= 16);
        let wf = preds.iter().find(|p| p.name == "works_for").unwrap();
        assert_eq!(wf.status, "core");
        assert_eq!(wf.uses, 1);

        // A second document naming Alice joins the same entity (offline exact policy),
        // and its decision says that this departs from D95.
        ingest(
            &memory,
            "notes/alice-2",
            "# More notes\n\nAlice lives in Lisbon.\n",
            "2024-05-01T00:00:00Z",
        )
        .await;
        let alices = entity_ids_named(&memory, "Alice").await;
        assert_eq!(alices.len(), 1, "{}", h.kind);
        let detail = memory.entity("Alice").await.unwrap();
        assert_eq!(detail.entity.mention_count, 2);
        assert!(
            detail
                .facts
                .iter()
                .any(|f| f.predicate.as_deref() == Some("located_in"))
        );
        assert!(
            detail
                .entity
                .profile_summary
                .as_deref()
                .unwrap_or("")
                .contains("Acme")
        );

        // Facts are searchable.
        let envelope = memory.search_facts("Alice employer Acme", 5).await.unwrap();
        assert!(
            envelope
                .results
                .iter()
                .any(|r| r.fact.fact_id == fact.fact_id),
            "{}: {:#?}",
            h.kind,
            envelope.results
        );
    }
}

/// T4: "Jan Novak" the cardiologist is not "Jan Novak" the chess player.
fn t4_judge(request: &ChatRequest, _n: usize) -> Value {
    match request.call_key.as_str() {
        "resolve_t4" => {
            let incoming = request
                .user
                .lines()
                .find(|l| l.starts_with("Claim:"))
                .unwrap_or("");
            if incoming.contains("cardiologist") {
                json!({"choice": "new", "rationale": "a cardiologist in Brno, not the chess player"})
            } else {
                json!({"choice": "C1", "rationale": "the same chess player"})
            }
        }
        other => panic!("unexpected call {other}"),
    }
}

#[tokio::test]
async fn same_name_canary_stays_two_entities_and_a_continuation_joins() {
    for h in stores().await {
        let judge = JudgeModel::new(t4_judge);
        let memory = memory_with(
            &h,
            FactModels {
                resolver: Some(judge.clone()),
                ..FactModels::default()
            },
        )
        .await;
        ingest(
            &memory,
            "chess",
            "# Chess\n\nJan Novak won the Prague Open chess tournament in May 2023.\n",
            "2023-06-01T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "hospital",
            "# Hospital\n\nJan Novak is a cardiologist at the Brno University Hospital.\n",
            "2023-07-01T00:00:00Z",
        )
        .await;
        let jans = entity_ids_named(&memory, "Jan Novak").await;
        assert_eq!(jans.len(), 2, "{}: T4 said new: two entities", h.kind);
        let t4 = judge.calls("resolve_t4");
        assert_eq!(t4.len(), 1, "{}: only the clash reaches T4", h.kind);

        // A third document continues the chess player: it joins the first entity,
        // and its second sentence replays that match without another T4 call (D102).
        ingest(
            &memory,
            "chess-2024",
            "# Chess again\n\nJan Novak defended his Prague Open chess title in May 2024.\n\nJan Novak plans to play in Vienna next year.\n",
            "2024-06-01T00:00:00Z",
        )
        .await;
        assert_eq!(entity_ids_named(&memory, "Jan Novak").await.len(), 2);
        let chess = memory.entity(&jans[0].to_string()).await.unwrap();
        let doctor = memory.entity(&jans[1].to_string()).await.unwrap();
        assert_eq!(chess.entity.mention_count, 3, "{}: {chess:#?}", h.kind);
        assert_eq!(doctor.entity.mention_count, 1);
        let decisions = h
            .store
            .resolution_decisions(chess.entity.namespace_id, &[jans[0]])
            .await
            .unwrap();
        let tiers: Vec<&str> = decisions.iter().map(|d| d.tier.as_str()).collect();
        assert_eq!(tiers, vec!["mint", "T4", "T0"], "{}", h.kind);
        assert_eq!(decisions[2].features["contract"], "document-t0-v1");
        // The new-verdict decision wrote a cannot-link for the candidate it was shown.
        let ex = h
            .store
            .exclusions(chess.entity.namespace_id, &[jans[0]])
            .await
            .unwrap();
        assert_eq!(ex.len(), 1);
        // Candidates shown to T4 carry no UUIDs.
        assert!(!t4[0].user.contains(&jans[0].to_string()));
    }
}

#[tokio::test]
async fn a_stale_t4_answer_is_discarded_and_retried() {
    for h in stores().await {
        let judge = JudgeModel::new(|_, _| json!({"choice": "C1", "rationale": "same"}));
        let memory = memory_with(
            &h,
            FactModels {
                resolver: Some(judge.clone()),
                ..FactModels::default()
            },
        )
        .await;
        ingest(
            &memory,
            "a",
            "# A\n\nMaria Silva founded Lumen.\n",
            "2023-01-01T00:00:00Z",
        )
        .await;
        let ns = memory.entities(false, 10).await.unwrap()[0].namespace_id;
        let first = entity_ids_named(&memory, "Maria Silva").await[0];
        // While the next T4 call is in flight, another writer mints a second Maria Silva.
        let store: Arc<dyn MemoryStore> = h.store.clone();
        let injected = EntityId::new();
        *judge.during_t4.lock().unwrap() = Some(Box::new(move || {
            Box::pin(async move {
                let now = chrono::Utc::now();
                store
                    .commit_resolution(
                        ResolutionCommit {
                            decision: ResolutionDecision {
                                decision_id: DecisionId::new(),
                                namespace_id: ns,
                                claim_id: rememberstack::ClaimId::new(),
                                document_id: rememberstack::DocumentId::new(),
                                ordinal: 0,
                                name: "Maria Silva".into(),
                                lemma: "maria silva".into(),
                                tier: "mint".into(),
                                candidates: vec![],
                                complete: true,
                                t3_score: None,
                                t3_outcome: "no_candidates".into(),
                                verdict: "new".into(),
                                entity_id: injected,
                                rationale: "a concurrent writer".into(),
                                model: None,
                                resolver_version: "test".into(),
                                features: json!({}),
                                created_at: now,
                            },
                            mint: Some(("Maria Silva".into(), "maria silva".into())),
                            aliases: vec![NewAlias::of("Maria Silva")],
                            mention: Mention {
                                claim_id: rememberstack::ClaimId::new(),
                                start: None,
                                end: None,
                                surface: "Maria Silva".into(),
                            },
                            exclusions: vec![],
                            binding: None::<DocumentBinding>,
                        },
                        now,
                    )
                    .await
                    .unwrap();
            }) as BoxFuture
        }));
        ingest(
            &memory,
            "b",
            "# B\n\nMaria Silva moved to Porto.\n",
            "2023-02-01T00:00:00Z",
        )
        .await;
        let t4 = judge.calls("resolve_t4");
        assert_eq!(t4.len(), 2, "{}: the stale answer was retried", h.kind);
        let decisions = h
            .store
            .resolution_decisions(ns, &[first, injected])
            .await
            .unwrap();
        let t4_decisions: Vec<&ResolutionDecision> =
            decisions.iter().filter(|d| d.tier == "T4").collect();
        assert_eq!(
            t4_decisions.len(),
            1,
            "{}: only the fresh answer commits",
            h.kind
        );
        let d = t4_decisions[0];
        assert_eq!(d.candidates.len(), 2, "the retry saw the new candidate");
        assert_eq!(d.features["attempt"], 1);
    }
}

/// An adjudicator scripted by call order.
pub(crate) fn verdicts(list: Vec<Value>) -> impl Fn(&ChatRequest, usize) -> Value + Send + Sync {
    move |request, n| {
        assert_eq!(request.call_key, "adjudicate", "unexpected call");
        list.get(n)
            .cloned()
            .unwrap_or_else(|| json!({"verdict": "new", "fact": "", "valid_from": "", "valid_until": "", "reason": "nothing matches"}))
    }
}

#[tokio::test]
async fn supersession_closes_the_old_employer_at_the_new_start() {
    for h in stores().await {
        let judge = JudgeModel::new(verdicts(vec![json!({
            "verdict": "supersede", "fact": "F1", "valid_from": "", "valid_until": "",
            "reason": "Alice changed employer"
        })]));
        let memory = memory_with(
            &h,
            FactModels {
                adjudicator: Some(judge.clone()),
                ..FactModels::default()
            },
        )
        .await;
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
        let history = all_facts(&memory, true).await;
        let acme = named(&history, "works for Acme");
        let globex = named(&history, "works for Globex");
        assert_eq!(
            (acme.len(), globex.len()),
            (1, 1),
            "{}: {history:#?}",
            h.kind
        );
        assert_eq!(acme[0].window.valid_until, Some(at("2026-02-01T00:00:00Z")));
        assert_eq!(acme[0].superseded_by, Some(globex[0].fact_id));
        assert_eq!(
            globex[0].window.valid_from,
            Some(at("2026-02-01T00:00:00Z"))
        );
        assert_eq!(globex[0].window.valid_until, None);
        let current = all_facts(&memory, false).await;
        assert!(named(&current, "works for Acme").is_empty(), "{}", h.kind);
        assert_eq!(named(&current, "works for Globex").len(), 1);
        // As of mid-2025, Alice worked for Acme.
        let then = memory
            .facts(&FactQuery {
                at: Some(at("2025-06-01T00:00:00Z")),
                ..FactQuery::default()
            })
            .await
            .unwrap();
        assert_eq!(
            named(&then, "works for Acme").len(),
            1,
            "{}: {then:#?}",
            h.kind
        );
        assert!(named(&then, "works for Globex").is_empty());
        // The transcript records the verdict and the model.
        let trace = memory.trace(globex[0].fact_id).await.unwrap();
        let sup = trace
            .adjudications
            .iter()
            .find(|a| a.verdict == "supersede")
            .expect("supersede transcript");
        assert_eq!(sup.model.as_deref(), Some("judge-model"));
        assert_eq!(sup.target_fact, Some(acme[0].fact_id));
    }
}

#[tokio::test]
async fn offline_a_later_value_supersedes_and_the_same_time_contradicts() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "hr-2023",
            "# HR 2023\n\nAlice Moreno works for Acme. Alice Moreno lives in Oslo.\n",
            "2023-01-10T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "hr-2025",
            "# HR 2025\n\nAlice Moreno works for Globex now. Alice Moreno lives in Madrid.\n",
            "2025-06-01T00:00:00Z",
        )
        .await;
        let current = all_facts(&memory, false).await;
        for (gone, kept) in [
            ("works for Acme", "works for Globex"),
            ("in Oslo", "in Madrid"),
        ] {
            assert!(named(&current, gone).is_empty(), "{}: {current:#?}", h.kind);
            assert_eq!(named(&current, kept).len(), 1, "{}: {current:#?}", h.kind);
        }
        // Nothing is deleted: history keeps the old values, closed when the new
        // ones were said (neither claim has a world time), superseded by them.
        let history = all_facts(&memory, true).await;
        let acme = named(&history, "works for Acme");
        let globex = named(&history, "works for Globex");
        assert_eq!((acme.len(), globex.len()), (1, 1), "{}", h.kind);
        assert_eq!(acme[0].window.valid_until, Some(at("2025-06-01T00:00:00Z")));
        assert_eq!(acme[0].superseded_by, Some(globex[0].fact_id));
        let trace = memory.trace(globex[0].fact_id).await.unwrap();
        let verdict = trace
            .adjudications
            .iter()
            .find(|a| a.verdict == "supersede")
            .expect("an offline supersede transcript");
        assert!(verdict.model.is_none());
        assert!(
            verdict.reason.contains("single-valued"),
            "{}",
            verdict.reason
        );
        assert_eq!(verdict.target_fact, Some(acme[0].fact_id));
        // The current scope answers with the new employer only.
        let answer = memory
            .facts_context(rememberstack::FactsContextInput {
                query: "Where does Alice Moreno work now?".into(),
                k: Some(5),
                ..Default::default()
            })
            .await
            .unwrap();
        let statements: Vec<&str> = answer
            .results
            .iter()
            .map(|r| r.fact.statement.as_str())
            .collect();
        assert!(
            statements.iter().any(|s| s.contains("Globex")),
            "{}: {statements:?}",
            h.kind
        );
        assert!(
            !statements.iter().any(|s| s.contains("Acme")),
            "{}: {statements:?}",
            h.kind
        );

        // An older statement arriving later is history at once.
        ingest(
            &memory,
            "hr-2021",
            "# HR 2021\n\nAlice Moreno works for Initech.\n",
            "2021-03-01T00:00:00Z",
        )
        .await;
        let current = all_facts(&memory, false).await;
        assert!(
            named(&current, "works for Initech").is_empty(),
            "{}",
            h.kind
        );
        assert_eq!(named(&current, "works for Globex").len(), 1, "{}", h.kind);

        // Two sources giving two values for the same time contradict.
        for (slug, city) in [("badge-a", "Lyon"), ("badge-b", "Porto")] {
            ingest(
                &memory,
                slug,
                &format!("# Badge\n\nBruno Keller lives in {city}.\n"),
                "2025-09-01T00:00:00Z",
            )
            .await;
        }
        let current = all_facts(&memory, false).await;
        let lyon = named(&current, "in Lyon");
        let porto = named(&current, "in Porto");
        assert_eq!(
            (lyon.len(), porto.len()),
            (1, 1),
            "{}: {current:#?}",
            h.kind
        );
        assert!(lyon[0].contradiction_group.is_some(), "{}", h.kind);
        assert_eq!(lyon[0].contradiction_group, porto[0].contradiction_group);
        assert_eq!(
            (lyon[0].contradict_count, porto[0].contradict_count),
            (1, 1),
            "{}",
            h.kind
        );
    }
}

/// A fact's adjudicated state named by content: statement, window, successor's
/// statement, whether it stands in a contradiction group.
fn chain_digest(facts: &[FactRecord]) -> Vec<String> {
    let mut out: Vec<String> = facts
        .iter()
        .map(|f| {
            let successor = f
                .superseded_by
                .and_then(|s| facts.iter().find(|x| x.fact_id == s))
                .map(|x| x.statement.as_str())
                .unwrap_or("");
            format!(
                "{} | {:?} .. {:?} | superseded by: {successor} | group: {}",
                f.statement,
                f.window.valid_from,
                f.window.valid_until,
                f.contradiction_group.is_some()
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn offline_single_valued_facts_do_not_depend_on_the_order_testimony_arrives() {
    let docs = [
        (
            "hr-2023",
            "# HR 2023\n\nAlice Moreno works for Acme. Alice Moreno lives in Oslo.\n",
            "2023-01-10T00:00:00Z",
        ),
        (
            "hr-2024",
            "# HR 2024\n\nAlice Moreno moved to Bergen in March 2024.\n",
            "2024-04-02T00:00:00Z",
        ),
        (
            "hr-2025",
            "# HR 2025\n\nAlice Moreno works for Globex now. Alice Moreno lives in Madrid.\n",
            "2025-06-01T00:00:00Z",
        ),
        (
            "badge",
            "# Badge\n\nAlice Moreno lives in Seville.\n",
            "2025-06-10T00:00:00Z",
        ),
    ];
    for (h, late) in stores().await.into_iter().zip(stores().await) {
        // In the order things happened, and with the newest first and the
        // oldest last.
        let in_order = memory_with(&h, FactModels::default()).await;
        for (slug, text, time) in docs {
            ingest(&in_order, slug, text, time).await;
        }
        let scrambled = memory_with(&late, FactModels::default()).await;
        for i in [3, 2, 0, 1] {
            let (slug, text, time) = docs[i];
            ingest(&scrambled, slug, text, time).await;
        }
        let expected = chain_digest(&all_facts(&in_order, true).await);
        assert_eq!(
            chain_digest(&all_facts(&scrambled, true).await),
            expected,
            "{}",
            h.kind
        );
        // And the decision itself: Globex replaced Acme; Oslo, then Bergen, then
        // two sources disagreeing about Madrid and Seville.
        let current = all_facts(&scrambled, false).await;
        assert_eq!(
            named(&current, "works for").len(),
            1,
            "{}: {current:#?}",
            h.kind
        );
        assert_eq!(named(&current, "Globex").len(), 1, "{}", h.kind);
        for gone in ["Oslo", "Bergen", "Acme"] {
            assert!(named(&current, gone).is_empty(), "{}: {current:#?}", h.kind);
        }
        let (madrid, seville) = (named(&current, "Madrid"), named(&current, "Seville"));
        assert_eq!(
            (madrid.len(), seville.len()),
            (1, 1),
            "{}: {current:#?}",
            h.kind
        );
        assert!(madrid[0].contradiction_group.is_some(), "{}", h.kind);
        assert_eq!(
            madrid[0].contradiction_group,
            seville[0].contradiction_group
        );
        assert_eq!(
            (madrid[0].contradict_count, seville[0].contradict_count),
            (1, 1),
            "{}",
            h.kind
        );
        let history = all_facts(&scrambled, true).await;
        let oslo = named(&history, "Oslo");
        let bergen = named(&history, "Bergen");
        assert_eq!(
            (oslo.len(), bergen.len()),
            (1, 1),
            "{}: {history:#?}",
            h.kind
        );
        assert_eq!(oslo[0].superseded_by, Some(bergen[0].fact_id), "{}", h.kind);
        assert_eq!(oslo[0].window.valid_until, Some(at("2024-03-01T00:00:00Z")));
    }
}

#[tokio::test]
async fn offline_an_observed_state_changes_like_a_single_valued_relation() {
    let docs = [
        (
            "profile-2023",
            "# Profile 2023\n\nAlice Moreno is single. Alice Moreno works as a staff nurse at Leeds General.\n",
            "2023-01-10T00:00:00Z",
        ),
        (
            "profile-2025",
            "# Profile 2025\n\nAlice Moreno is married now. Alice Moreno works as a ward manager at Leeds General.\n",
            "2025-06-01T00:00:00Z",
        ),
    ];
    for (h, late) in stores().await.into_iter().zip(stores().await) {
        let in_order = memory_with(&h, FactModels::default()).await;
        for (slug, text, time) in docs {
            ingest(&in_order, slug, text, time).await;
        }
        let current = all_facts(&in_order, false).await;
        assert_eq!(
            named(&current, "married").len(),
            1,
            "{}: {current:#?}",
            h.kind
        );
        assert!(
            named(&current, "single").is_empty(),
            "{}: {current:#?}",
            h.kind
        );
        assert_eq!(named(&current, "ward manager").len(), 1, "{}", h.kind);
        assert!(named(&current, "staff nurse").is_empty(), "{}", h.kind);
        let history = all_facts(&in_order, true).await;
        let (single, married) = (named(&history, "single"), named(&history, "married"));
        assert_eq!((single.len(), married.len()), (1, 1), "{}", h.kind);
        assert_eq!(
            single[0].superseded_by,
            Some(married[0].fact_id),
            "{}",
            h.kind
        );
        assert_eq!(
            single[0].window.valid_until,
            Some(at("2025-06-01T00:00:00Z"))
        );
        // Newest first decides the same.
        let scrambled = memory_with(&late, FactModels::default()).await;
        for (slug, text, time) in docs.iter().rev() {
            ingest(&scrambled, slug, text, time).await;
        }
        assert_eq!(
            chain_digest(&all_facts(&scrambled, true).await),
            chain_digest(&history),
            "{}",
            h.kind
        );
    }
}

#[tokio::test]
async fn offline_a_short_form_in_one_document_is_its_longer_name() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "notes/alice",
            "# Team\n\nAlice Moreno works for Acme.\n\nAlice lives in Oslo.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        assert!(
            entity_ids_named(&memory, "Alice").await.is_empty(),
            "{}",
            h.kind
        );
        let alice = entity_ids_named(&memory, "Alice Moreno").await;
        assert_eq!(alice.len(), 1, "{}", h.kind);
        let facts = all_facts(&memory, false).await;
        let oslo = named(&facts, "in Oslo");
        assert_eq!(oslo.len(), 1, "{}: {facts:#?}", h.kind);
        assert_eq!(oslo[0].subject, alice[0], "{}", h.kind);
    }
}

#[tokio::test]
async fn offline_names_across_documents_are_proposed_and_the_unambiguous_merged() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "hr",
            "# HR\n\nMarta Ilves works for Halvard Bank.\n\nKofi Asante lives in Leeds.\n\nLena Vogt lives in Munich.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "kickoff",
            "# Kickoff\n\nThe budget was reviewed by Marta.\n\nThe plan was approved by Asante.\n\nThe venue was booked by Vogt.\n",
            "2024-09-01T00:00:00Z",
        )
        .await;
        // `Marta` is the first word of one name only: merged by the idle pass, an
        // ordinary merge whose event records the rule.
        assert!(
            entity_ids_named(&memory, "Marta").await.is_empty(),
            "{}",
            h.kind
        );
        let marta = memory.entity("Marta Ilves").await.unwrap();
        let merge = marta
            .merges
            .iter()
            .find(|m| m.reverted_at.is_none())
            .unwrap_or_else(|| panic!("{}: no merge into Marta Ilves", h.kind));
        assert_eq!(merge.into, marta.entity.entity_id);
        assert_eq!(merge.snapshot["reason"]["rule"], "short_form_first_word");
        assert_eq!(merge.snapshot["reason"]["by"], "automatic");
        // A family name in another document is only proposed (no shared document).
        let proposals = memory.merge_proposals().await.unwrap();
        let names: Vec<(&str, &str, bool)> = proposals
            .iter()
            .map(|p| (p.from_name.as_str(), p.into_name.as_str(), p.automatic))
            .collect();
        assert_eq!(
            names,
            [
                ("Asante", "Kofi Asante", false),
                ("Vogt", "Lena Vogt", false)
            ],
            "{}",
            h.kind
        );
        let (asante, vogt) = (&proposals[0], &proposals[1]);
        assert_eq!(asante.rule, "short_form_last_word");
        // Accept one: merged, reversibly.
        let event = memory
            .accept_merge_proposal(asante.from, asante.into)
            .await
            .unwrap();
        assert_eq!(event.snapshot["reason"]["by"], "accepted");
        assert!(entity_ids_named(&memory, "Asante").await.is_empty());
        memory.unmerge_entities(event.merge_id).await.unwrap();
        assert_eq!(entity_ids_named(&memory, "Asante").await.len(), 1);
        // Reject the other: never proposed again, and a second decision on it is
        // refused as no longer proposed.
        memory
            .reject_merge_proposal(vogt.from, vogt.into)
            .await
            .unwrap();
        let left: Vec<String> = memory
            .merge_proposals()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.from_name)
            .collect();
        assert_eq!(left, ["Asante"], "{}", h.kind);
        let again = memory
            .accept_merge_proposal(vogt.from, vogt.into)
            .await
            .unwrap_err();
        assert_eq!(again.code(), rememberstack::ErrorCode::NotFound);
        assert!(entity_ids_named(&memory, "Vogt").await.len() == 1);
    }
}

#[tokio::test]
async fn supersession_with_an_unknown_start_caps_nothing() {
    for h in stores().await {
        let judge = JudgeModel::new(verdicts(vec![json!({
            "verdict": "supersede", "fact": "F1", "valid_from": "", "valid_until": "",
            "reason": "a new employer"
        })]));
        let memory = memory_with(
            &h,
            FactModels {
                adjudicator: Some(judge.clone()),
                ..FactModels::default()
            },
        )
        .await;
        ingest(
            &memory,
            "a",
            "# A\n\nAlice has worked for Acme since March 2024.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "b",
            "# B\n\nAlice works for Globex.\n",
            "2026-03-01T00:00:00Z",
        )
        .await;
        assert_eq!(judge.calls("adjudicate").len(), 1, "{}", h.kind);
        let current = all_facts(&memory, false).await;
        let acme = named(&current, "works for Acme");
        assert_eq!(acme.len(), 1, "{}: both stand: {current:#?}", h.kind);
        assert_eq!(acme[0].window.valid_until, None);
        assert_eq!(acme[0].superseded_by, None);
        assert_eq!(named(&current, "works for Globex").len(), 1);
    }
}

#[tokio::test]
async fn contradicting_figures_stand_together_in_one_group() {
    for h in stores().await {
        let judge = JudgeModel::new(verdicts(vec![json!({
            "verdict": "contradict", "fact": "F1", "valid_from": "", "valid_until": "",
            "reason": "same period, different revenue"
        })]));
        let memory = memory_with(
            &h,
            FactModels {
                adjudicator: Some(judge.clone()),
                ..FactModels::default()
            },
        )
        .await;
        ingest(
            &memory,
            "report-a",
            "# Report A\n\nAcme's FY2023 revenue was $5M.\n",
            "2024-02-01T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "report-b",
            "# Report B\n\nAcme's FY2023 revenue was $7M.\n",
            "2024-03-01T00:00:00Z",
        )
        .await;
        let facts = all_facts(&memory, false).await;
        let five = named(&facts, "$5M");
        let seven = named(&facts, "$7M");
        assert_eq!((five.len(), seven.len()), (1, 1), "{}: {facts:#?}", h.kind);
        assert!(five[0].contradiction_group.is_some());
        assert_eq!(five[0].contradiction_group, seven[0].contradiction_group);
        for f in [five[0], seven[0]] {
            assert_eq!(
                (f.evidence_count, f.contradict_count),
                (1, 1),
                "{}: {f:#?}",
                h.kind
            );
            assert_eq!(f.window.valid_until, None, "a measurement is never capped");
        }
    }
}

#[tokio::test]
async fn recurring_dated_events_stay_distinct_facts() {
    for h in stores().await {
        // A normalizer that words both wins identically; the claims' dates differ.
        let normalizer = JudgeModel::new(|request, _| {
            assert_eq!(request.call_key, "normalize");
            json!({
                "entities": [{"name": "Jan", "surface": "Jan"}],
                "relations": [],
                "observations": [{"entity": 0, "statement": "Jan won the Oslo chess tournament."}]
            })
        });
        let memory = memory_with(
            &h,
            FactModels {
                normalizer: Some(normalizer.clone()),
                ..FactModels::default()
            },
        )
        .await;
        ingest(
            &memory,
            "march",
            "# March\n\nJan won the Oslo chess tournament in March 2023.\n",
            "2023-04-01T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "november",
            "# November\n\nJan won the Oslo chess tournament in November 2023.\n",
            "2023-12-01T00:00:00Z",
        )
        .await;
        let facts = all_facts(&memory, false).await;
        let wins = named(&facts, "Oslo chess tournament");
        assert_eq!(wins.len(), 2, "{}: {facts:#?}", h.kind);
        assert!(wins.iter().all(|f| f.evidence_count == 1));
    }
}

#[tokio::test]
async fn evidence_counts_distinct_lineages_with_current_testimony() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        let v1 = "# Notes\n\nAlice lives in Lisbon.\n";
        ingest(&memory, "notes", v1, "2024-01-01T00:00:00Z").await;
        let count = |facts: &[FactRecord]| {
            named(facts, "Lisbon")
                .iter()
                .map(|f| f.evidence_count)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            count(&all_facts(&memory, false).await),
            vec![1],
            "{}",
            h.kind
        );
        // A second version of the same lineage repeating the sentence: still one.
        let v2 = "# Notes\n\nAlice lives in Lisbon.\n\nAlice likes the ocean.\n";
        ingest(&memory, "notes", v2, "2024-02-01T00:00:00Z").await;
        assert_eq!(
            count(&all_facts(&memory, false).await),
            vec![1],
            "{}",
            h.kind
        );
        // Re-extraction under a new extractor generation: still one.
        // The label of the target passage saying it, e.g. `[T2] Alice lives in Lisbon.`
        fn label_of(user: &str) -> Option<String> {
            user.lines()
                .find(|l| l.starts_with("[T") && l.contains("Alice lives in Lisbon."))
                .and_then(|l| l.get(1..l.find(']')?))
                .map(str::to_string)
        }
        let extractor = JudgeModel::new(|request, _| {
            let label = label_of(&request.user);
            match (request.call_key.as_str(), label) {
                ("selection", Some(l)) => {
                    json!({"selections": [{"passage": l, "label": "keep", "reason": null}]})
                }
                ("selection", None) => json!({"selections": []}),
                ("claimify", Some(l)) => json!({"claims": [{
                    "text": "Alice lives in Lisbon.", "passages": [l], "added_context": [],
                    "valid_from": null, "valid_until": null, "precision": "unknown",
                    "kind": "state", "verdict": "entailed"
                }]}),
                ("claimify", None) => json!({"claims": []}),
                (other, _) => panic!("unexpected call {other}"),
            }
        });
        let reextracting = Memory::builder()
            .store(h.store.clone())
            .config(test_config())
            .extractor(rememberstack::ExtractorModels {
                selection: extractor.clone(),
                claimify: extractor.clone(),
            })
            .open()
            .await
            .unwrap();
        reextracting.process_until_idle().await.unwrap();
        assert!(
            !extractor.calls("claimify").is_empty(),
            "{}: re-extraction ran",
            h.kind
        );
        let facts = all_facts(&reextracting, false).await;
        let lisbon = named(&facts, "Lisbon");
        assert_eq!(count(&facts), vec![1], "{}: {lisbon:#?}", h.kind);
        let trace = reextracting.trace(lisbon[0].fact_id).await.unwrap();
        assert!(
            trace.evidence.len() >= 2,
            "{}: both generations are evidence rows",
            h.kind
        );
        // A second independent document: two.
        ingest(
            &reextracting,
            "other",
            "# Other\n\nAlice lives in Lisbon.\n",
            "2024-03-01T00:00:00Z",
        )
        .await;
        assert_eq!(
            count(&all_facts(&reextracting, false).await),
            vec![2],
            "{}",
            h.kind
        );
    }
}

#[tokio::test]
async fn merge_then_unmerge_restores_membership_and_reads_follow_redirects() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "a",
            "# A\n\nRobert Smith lives in Leeds.\n",
            "2024-01-01T00:00:00Z",
        )
        .await;
        ingest(
            &memory,
            "b",
            "# B\n\nBob Smith works for Initech.\n",
            "2024-01-02T00:00:00Z",
        )
        .await;
        let robert = entity_ids_named(&memory, "Robert Smith").await[0];
        let bob = entity_ids_named(&memory, "Bob Smith").await[0];
        let before = memory.entities(true, 100).await.unwrap();

        let merge = memory.merge_entities(bob, robert).await.unwrap();
        // The audit snapshot holds ids, never names (a name would outlive a
        // forget of the document it came from).
        let snapshot = merge.snapshot.to_string();
        assert!(snapshot.contains(&bob.to_string()), "{snapshot}");
        assert!(!snapshot.contains("Smith"), "{}: {snapshot}", h.kind);
        // Reads follow the redirect and disclose it.
        let shown = memory.entity(&bob.to_string()).await.unwrap();
        assert_eq!(shown.entity.entity_id, robert);
        assert_eq!(shown.redirected_from, Some(bob));
        assert_eq!(shown.merged_members, vec![bob]);
        assert!(
            shown.facts.iter().any(|f| f.statement.contains("Initech")),
            "{}",
            h.kind
        );
        assert!(shown.facts.iter().all(|f| f.subject == robert));
        let active = memory.entities(false, 100).await.unwrap();
        assert!(!active.iter().any(|e| e.entity_id == bob));
        let of_robert = memory
            .facts(&FactQuery {
                entity: Some(robert),
                ..FactQuery::default()
            })
            .await
            .unwrap();
        assert_eq!(of_robert.len(), 2, "{}: {of_robert:#?}", h.kind);
        // A merged entity cannot be merged again, nor into itself.
        assert!(memory.merge_entities(bob, robert).await.is_err());
        assert!(memory.merge_entities(robert, robert).await.is_err());

        let undone = memory.unmerge_entities(merge.merge_id).await.unwrap();
        assert!(undone.reverted_at.is_some());
        let after = memory.entities(true, 100).await.unwrap();
        let key = |list: &[rememberstack::EntityRecord]| {
            let mut v: Vec<(EntityId, Option<EntityId>)> =
                list.iter().map(|e| (e.entity_id, e.merged_into)).collect();
            v.sort();
            v
        };
        assert_eq!(
            key(&before),
            key(&after),
            "{}: exact prior membership",
            h.kind
        );
        let shown = memory.entity(&bob.to_string()).await.unwrap();
        assert_eq!(shown.entity.entity_id, bob);
        assert_eq!(shown.redirected_from, None);
        // A second unmerge of the same event is refused.
        assert!(memory.unmerge_entities(merge.merge_id).await.is_err());
    }
}

/// Each resolution decision of a namespace, as the names it speaks of: (claim text,
/// ordinal, name, tier, verdict, the entity's name, the candidates' names and tiers,
/// complete), in claim text then ordinal order.
async fn decision_summary(
    h: &Harness,
    memory: &Memory,
) -> Vec<(
    String,
    u32,
    String,
    String,
    String,
    String,
    Vec<String>,
    bool,
)> {
    let ns = h
        .store
        .namespace(memory.namespace())
        .await
        .unwrap()
        .unwrap()
        .id;
    let entities = memory.entities(true, 1000).await.unwrap();
    let name_of: std::collections::HashMap<EntityId, String> = entities
        .iter()
        .map(|e| (e.entity_id, e.canonical_name.clone()))
        .collect();
    let ids: Vec<EntityId> = entities.iter().map(|e| e.entity_id).collect();
    let decisions = h.store.resolution_decisions(ns, &ids).await.unwrap();
    let claims: std::collections::HashMap<_, _> = h
        .store
        .claims(
            ns,
            &decisions.iter().map(|d| d.claim_id).collect::<Vec<_>>(),
        )
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.claim_id, c.text))
        .collect();
    let mut out: Vec<_> = decisions
        .into_iter()
        .map(|d| {
            (
                claims[&d.claim_id].clone(),
                d.ordinal,
                d.name,
                d.tier,
                d.verdict,
                name_of[&d.entity_id].clone(),
                d.candidates
                    .iter()
                    .map(|c| format!("{} {:?} {:.3}", c.canonical_name, c.via, c.score))
                    .collect(),
                d.complete,
            )
        })
        .collect();
    out.sort();
    out
}

/// A clock that moves one millisecond at every reading, so work enqueued in order
/// is claimed in that order.
#[derive(Debug)]
struct TickingClock(std::sync::Mutex<Timestamp>);

impl rememberstack::Clock for TickingClock {
    fn now(&self) -> Timestamp {
        let mut t = self.0.lock().unwrap();
        *t += chrono::Duration::milliseconds(1);
        *t
    }
}

/// A memory in namespace `slug` whose workers claim `limit` items at a time (provider-
/// free batches too), on a clock that ticks a millisecond a reading from `start`.
async fn claiming(h: &Harness, slug: &str, limit: u32, start: &str) -> Memory {
    let mut config = test_config();
    config.engine.claim_limit = limit;
    config.engine.grouped_claim_limit = limit;
    Memory::builder()
        .store(h.store.clone())
        .config(config)
        .namespace(slug)
        .clock(Arc::new(TickingClock(std::sync::Mutex::new(at(start)))))
        .open()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_batch_of_claims_resolves_exactly_as_claims_one_at_a_time() {
    // Claims that mint names and meet them again, near-namesakes that must see the
    // batch's own mints among their candidates, and new surfaces of known entities.
    let sentences = [
        "Alice Moreno lives in Oslo.",
        "Alice Moreno works for Acme.",
        "Alicia Moreno visited Oslo.",
        "Bob Stone works for Acme.",
        "Alice met Bob Stone in Oslo.",
        "Alicia Moreno works for Globex.",
        "Bob Stone lives in Bergen.",
        "Robert Stone works for Globex.",
        "Alice Moreno knows Robert Stone.",
    ];
    for h in stores().await {
        let mut summaries = Vec::new();
        for (slug, claim_limit) in [("batched", 32), ("one-by-one", 1)] {
            let memory = claiming(&h, slug, claim_limit, "2024-04-01T00:00:00Z").await;
            for (i, s) in sentences.iter().enumerate() {
                memory
                    .ingest_text(
                        &format!("# Note {i}\n\n{s}\n"),
                        IngestOptions::new(format!("n{i}")),
                    )
                    .await
                    .unwrap();
            }
            memory.process_until_idle().await.unwrap();
            for name in ["Alice Moreno", "Alicia Moreno", "Bob Stone", "Acme", "Oslo"] {
                assert_eq!(
                    entity_ids_named(&memory, name).await.len(),
                    1,
                    "{slug}: {name}"
                );
            }
            summaries.push(decision_summary(&h, &memory).await);
        }
        let batched = &summaries[0];
        assert_eq!(batched, &summaries[1], "{}", h.kind);
        // Each name minted once and was matched at its next mention.
        for name in ["Alice Moreno", "Alicia Moreno", "Bob Stone"] {
            let verdicts: Vec<&str> = batched
                .iter()
                .filter(|d| d.2 == name)
                .map(|d| d.4.as_str())
                .collect();
            assert_eq!(
                verdicts.iter().filter(|v| **v == "new").count(),
                1,
                "{name}: {verdicts:?}"
            );
            assert!(verdicts.len() >= 2, "{name}: {verdicts:?}");
        }
        // Alicia Moreno, minted after Alice Moreno, saw her among its candidates.
        assert!(
            batched
                .iter()
                .filter(|d| d.2 == "Alicia Moreno")
                .all(|d| d.6.iter().any(|c| c.starts_with("Alice Moreno"))),
            "{batched:#?}"
        );
    }
}

#[tokio::test]
async fn a_batch_of_units_adjudicates_exactly_as_units_one_at_a_time() {
    // Repeated statements (evidence for one fact), a window revised by a later
    // dated mention, relations naming other entities, and one person asserted by
    // several documents, so that units of one entity from different versions meet
    // in a batch.
    let notes = [
        (
            "2024-01-05T00:00:00Z",
            "Alice Moreno lives in Oslo.\nAlice Moreno works for Acme.",
        ),
        (
            "2024-02-05T00:00:00Z",
            "Bob Stone works for Acme.\nAlice Moreno lives in Oslo.",
        ),
        (
            "2024-03-05T00:00:00Z",
            "Alice Moreno moved to Bergen in March 2024.\nBob Stone lives in Oslo.",
        ),
        (
            "2024-04-05T00:00:00Z",
            "Alice Moreno works for Globex.\nBob Stone works for Acme.",
        ),
        (
            "2024-05-05T00:00:00Z",
            "Carol Diaz married Bob Stone.\nCarol Diaz works for Globex.",
        ),
        (
            "2024-06-05T00:00:00Z",
            "Alice Moreno lives in Oslo.\nCarol Diaz lives in Bergen.",
        ),
    ];
    for h in stores().await {
        let mut runs = Vec::new();
        for (slug, limit) in [("units-batched", 256), ("units-one-by-one", 1)] {
            let memory = claiming(&h, slug, limit, "2024-07-01T00:00:00Z").await;
            for (i, (when, text)) in notes.iter().enumerate() {
                memory
                    .ingest_text(
                        &format!("# Note {i}\n\n{text}\n"),
                        IngestOptions::new(format!("u{i}")).source_time(at(when)),
                    )
                    .await
                    .unwrap();
            }
            let report = memory.process_until_idle().await.unwrap();
            let adjudicate = &report.stages["e3.adjudicate"];
            if slug == "units-one-by-one" {
                assert_eq!(adjudicate.batches, adjudicate.items, "{}", h.kind);
            } else {
                assert!(adjudicate.items > 2, "{}: {adjudicate:?}", h.kind);
            }
            let mut facts: Vec<String> = memory
                .facts(&FactQuery {
                    history: true,
                    limit: 1000,
                    ..FactQuery::default()
                })
                .await
                .unwrap()
                .into_iter()
                .map(|f| {
                    format!(
                        "{} | {:?} | {:?} | {} | {:?} | {:?} | {} | {} | {}",
                        f.subject_name,
                        f.predicate,
                        f.object_name,
                        f.statement,
                        f.window.valid_from,
                        f.window.valid_until,
                        f.evidence_count,
                        f.contradict_count,
                        f.invalidated_at.is_some(),
                    )
                })
                .collect();
            facts.sort();
            let subjects: std::collections::BTreeSet<String> = facts
                .iter()
                .map(|f| f.split(" | ").next().unwrap_or_default().to_string())
                .collect();
            let profiles: std::collections::BTreeMap<String, Option<String>> = memory
                .entities(false, 1000)
                .await
                .unwrap()
                .into_iter()
                .filter(|e| subjects.contains(&e.canonical_name))
                .map(|e| (e.canonical_name, e.profile_summary))
                .collect();
            runs.push((facts, profiles));
        }
        let (batched, one_by_one) = (&runs[0], &runs[1]);
        assert_eq!(batched.0, one_by_one.0, "{}", h.kind);
        // The profiles of the entities units adjudicated are the same, but for one
        // that a later unit names as an object: one unit at a time leaves the profile
        // its own unit wrote (an object's profile is only written while it has
        // none), while a batch writes every profile from the facts as it leaves them.
        for (name, profile) in &batched.1 {
            if name == "Bob Stone" {
                continue;
            }
            assert_eq!(Some(profile), one_by_one.1.get(name), "{}: {name}", h.kind);
        }
        let bob = |run: &(
            Vec<String>,
            std::collections::BTreeMap<String, Option<String>>,
        )| {
            run.1
                .get("Bob Stone")
                .cloned()
                .flatten()
                .unwrap_or_default()
        };
        assert!(
            bob(one_by_one).contains("Bob Stone works for Acme."),
            "{}",
            h.kind
        );
        // Both stores adjudicate a batch together (PostgreSQL holds the batch's
        // entity locks on one session).
        assert!(
            bob(batched).contains("Carol Diaz married Bob Stone."),
            "{}",
            h.kind
        );
        // Repeated testimony became evidence, not a second fact.
        assert!(
            batched.0.iter().any(|f| f.starts_with("Alice Moreno")
                && f.contains("located in Oslo")
                && f.contains(" | 3 | ")),
            "{:#?}",
            batched.0
        );
        assert!(
            batched.1.iter().all(|(_, p)| p.is_some()),
            "{:#?}",
            batched.1
        );
    }
}

#[tokio::test]
async fn claims_of_one_document_resolved_in_one_batch_share_their_entities() {
    // One document: its claims are normalized in one batch, the later ones meeting
    // the names (and the document bindings) the earlier ones made.
    let text = "# Staff\n\nAlice Moreno lives in Oslo. Alice Moreno works for Acme. \
                Alicia Moreno visited Oslo. Bob Stone works for Acme. \
                Alice met Bob Stone in Oslo. Alicia Moreno works for Globex. \
                Bob Stone lives in Bergen.\n";
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(&memory, "staff", text, "2024-04-01T00:00:00Z").await;
        for name in ["Alice Moreno", "Alicia Moreno", "Bob Stone", "Acme", "Oslo"] {
            assert_eq!(
                entity_ids_named(&memory, name).await.len(),
                1,
                "{}: {name}",
                h.kind
            );
        }
        let decisions = decision_summary(&h, &memory).await;
        for name in ["Alice Moreno", "Alicia Moreno", "Bob Stone", "Acme", "Oslo"] {
            let (new, matched): (Vec<_>, Vec<_>) = decisions
                .iter()
                .filter(|d| d.2 == name)
                .partition(|d| d.4 == "new");
            assert_eq!(new.len(), 1, "{}: {name} {decisions:#?}", h.kind);
            assert!(!matched.is_empty(), "{}: {name}", h.kind);
            // A match lists the entity it matched first, found by its exact lemma.
            for d in matched {
                assert_eq!(d.3, "offline_exact");
                assert!(d.6[0].starts_with(&format!("{name} [T0")), "{:?}", d.6);
            }
        }
        // Whichever of the two near-namesakes came second saw the first.
        let firsts: Vec<_> = decisions
            .iter()
            .filter(|d| (d.2 == "Alice Moreno" || d.2 == "Alicia Moreno") && d.4 == "new")
            .collect();
        assert!(
            firsts.iter().any(|d| d
                .6
                .iter()
                .any(|c| c.starts_with("Alice Moreno") || c.starts_with("Alicia Moreno"))),
            "{firsts:#?}"
        );
    }
}

#[tokio::test]
async fn a_units_assertions_meet_the_facts_its_earlier_ones_made() {
    // One unit (Alice, one version) asserts the same relation twice, the second time
    // with a start: the second is evidence for the fact the first made, and fills
    // its window; a third, different relation is a fact of its own.
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "notes/alice",
            "# Notes\n\nAlice works for Acme. Alice has worked for Acme since March 2024. \
             Alice lives in Oslo.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        let facts = all_facts(&memory, false).await;
        let works = named(&facts, "Acme");
        assert_eq!(works.len(), 1, "{}: {facts:#?}", h.kind);
        let fact = works[0];
        assert_eq!(
            fact.window.valid_from,
            Some(at("2024-03-01T00:00:00Z")),
            "{}: the evidence filled the window",
            h.kind
        );
        let trace = memory.trace(fact.fact_id).await.unwrap();
        let verdicts: Vec<&str> = trace
            .adjudications
            .iter()
            .map(|a| a.verdict.as_str())
            .collect();
        assert_eq!(verdicts, vec!["new", "evidence"], "{}", h.kind);
        assert_eq!(trace.evidence.len(), 2, "{}", h.kind);
        // The evidence verdict saw the fact among its candidates.
        assert!(trace.adjudications[1].candidates.contains(&fact.fact_id));
        assert_eq!(named(&facts, "Oslo").len(), 1, "{}", h.kind);
        // Each transcript's result is the fact; every assertion is applied.
        assert!(
            trace
                .adjudications
                .iter()
                .all(|a| a.result_fact == fact.fact_id)
        );
    }
}

#[tokio::test]
async fn fact_listing_pages_with_signed_cursors_and_caps_its_limit() {
    for h in stores().await {
        let memory = memory_with(&h, FactModels::default()).await;
        ingest(
            &memory,
            "notes/team",
            "# Team notes\n\nAlice has worked for Acme since March 2024.\n\n\
             Bob has worked for Globex since May 2023.\n\n\
             Carol has worked for Initech since June 2022.\n\n\
             Dave has worked for Hooli since July 2021.\n\n\
             Alice lives in Lisbon. Bob lives in Porto. Carol lives in Madrid.\n",
            "2024-04-01T00:00:00Z",
        )
        .await;
        let all = all_facts(&memory, false).await;
        assert!(all.len() >= 5, "{}: {all:#?}", h.kind);
        let ids = |facts: &[FactRecord]| facts.iter().map(|f| f.fact_id).collect::<Vec<_>>();

        // Pages of two, each continuing after the last: the same facts in the same
        // order as one listing, and no cursor after the last page.
        let query = FactQuery {
            limit: 2,
            ..FactQuery::default()
        };
        let mut paged = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let page = memory.facts_page(&query, cursor.as_deref()).await.unwrap();
            assert!(page.facts.len() <= 2, "{}", h.kind);
            paged.extend(page.facts);
            pages += 1;
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(ids(&paged), ids(&all), "{}", h.kind);
        assert_eq!(pages, all.len().div_ceil(2), "{}", h.kind);
        // A page that holds everything says there is no more.
        let whole = memory
            .facts_page(&FactQuery::default(), None)
            .await
            .unwrap();
        assert_eq!(ids(&whole.facts), ids(&all), "{}", h.kind);
        assert!(whole.cursor.is_none(), "{}", h.kind);

        // Past the cap, a cursor not issued by this store, one altered, or one of
        // another listing: `invalid_parameter`, and nothing is written.
        let first = memory.facts_page(&query, None).await.unwrap();
        let cursor = first.cursor.clone().unwrap();
        let before = crate::ledger_rows(h.store.as_ref()).await;
        let too_many = FactQuery {
            limit: rememberstack::limits::MAX_FACTS_PAGE + 1,
            ..FactQuery::default()
        };
        let e = memory.facts(&too_many).await.unwrap_err();
        assert_eq!(
            e.code(),
            rememberstack::ErrorCode::InvalidParameter,
            "{}: {e}",
            h.kind
        );
        assert!(e.to_string().contains("1000"), "{e}");
        let mut altered = cursor.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let history = FactQuery {
            history: true,
            ..query.clone()
        };
        for (q, c) in [
            (&query, "garbage".to_string()),
            (&query, String::from_utf8(altered).unwrap()),
            (&query, "x".repeat(20_000)),
            (&history, cursor.clone()),
        ] {
            let e = memory.facts_page(q, Some(&c)).await.unwrap_err();
            assert_eq!(
                e.code(),
                rememberstack::ErrorCode::InvalidParameter,
                "{}: {e}",
                h.kind
            );
        }
        assert_eq!(
            crate::ledger_rows(h.store.as_ref()).await,
            before,
            "{}",
            h.kind
        );
        // The cursor still continues the listing it came from.
        let second = memory.facts_page(&query, Some(&cursor)).await.unwrap();
        assert_eq!(
            ids(&second.facts),
            ids(&all[2..4.min(all.len())]),
            "{}",
            h.kind
        );
    }
}
