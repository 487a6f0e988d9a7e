//! The work ledger: crash/resume, exactly-once completion, retries, dead letters
//! and replay.

use crate::count;
use async_trait::async_trait;
use rememberstack::internals::chat::ChatModel;
use rememberstack::internals::embed::EmbedPurpose;
use rememberstack::internals::ledger::{ClaimRequest, NewWork};
use rememberstack::store::Lease;
use rememberstack::{
    Clock, Embedder, EmbedderIdentity, ErrorCode, ExtractorModels, FactModels, FactQuery,
    HashingEmbedder, IngestOptions, Memory, ProviderError, ScriptedChatModel, Stage, WorkStatus,
};
use rememberstack_conformance::{ManualClock, stores, test_config};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

#[tokio::test]
async fn a_crashed_worker_loses_no_work_and_nothing_runs_twice() {
    for h in stores().await {
        let clock = ManualClock::new();
        let memory = h
            .memory_with(test_config(), None, Some(clock.clone() as Arc<dyn Clock>))
            .await;
        let receipt = memory
            .ingest_text(
                "# Crash\n\nThe worker vanished mid-stage.",
                IngestOptions::new("crash"),
            )
            .await
            .unwrap();

        // Worker A claims the prepare stage and disappears without releasing its lease.
        let now = clock.now();
        let claimed = h
            .store
            .claim(&ClaimRequest {
                owner: "worker-a".into(),
                stages: vec![Stage::Prepare],
                limit: 10,
                stage_limits: vec![],
                lease_until: now + chrono::Duration::seconds(30),
                now,
            })
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        let lease_a = Lease::of(&claimed[0]);

        // While A's lease holds, nobody else can take the item.
        let report = memory.engine().drain().await.unwrap();
        assert_eq!(report.completed, 0);
        assert!(report.next_wakeup.is_some());

        // The lease expires; worker B (the engine) reclaims and finishes everything.
        clock.advance(Duration::from_secs(31));
        let report = memory.engine().drain().await.unwrap();
        assert!(report.completed >= 3, "{report:?}");
        let item = h.store.work_item(claimed[0].id).await.unwrap().unwrap();
        assert_eq!(item.status, WorkStatus::Done);
        assert_eq!(item.attempts, 2, "A's start and B's start both count");

        // A comes back and tries to commit: refused, nothing written twice.
        let err = h
            .store
            .complete(&lease_a, vec![], clock.now())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::LeaseLost);
        let detail = memory.document(receipt.document_id).await.unwrap();
        assert_eq!(detail.chunk_count, 1);
        assert_eq!(count(&memory, Stage::Chunk, WorkStatus::Done).await, 1);
        assert_eq!(memory.documents().await.unwrap()[0].status, "ready");
        let env = memory.search("worker vanished", 5).await.unwrap();
        assert_eq!(env.results.len(), 1);
    }
}

#[tokio::test]
async fn enqueue_is_idempotent_per_component_version() {
    for h in stores().await {
        let memory = h.memory().await;
        let receipt = memory
            .ingest_text("Idempotent.", IngestOptions::new("idem"))
            .await
            .unwrap();
        let ns = h.store.namespace("default").await.unwrap().unwrap().id;
        let now = chrono::Utc::now();
        let work = |cv: &str| {
            NewWork::now(
                ns,
                Stage::Prepare,
                receipt.version_id.uuid(),
                receipt.version_id,
                cv,
                now,
            )
        };
        let same = memory.engine().component_version(Stage::Prepare);
        assert_eq!(h.store.enqueue(vec![work(&same)], now).await.unwrap(), 0);
        assert_eq!(
            h.store
                .enqueue(vec![work("prepare-v999")], now)
                .await
                .unwrap(),
            1
        );
    }
}

/// An embedder that fails while `broken` is set, with the hashing embedder's identity.
#[derive(Debug)]
struct Flaky {
    inner: HashingEmbedder,
    broken: AtomicBool,
    calls: AtomicU32,
}

#[async_trait]
impl Embedder for Flaky {
    fn identity(&self) -> &EmbedderIdentity {
        self.inner.identity()
    }
    async fn embed(
        &self,
        texts: &[String],
        purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        if purpose == EmbedPurpose::Document {
            self.calls.fetch_add(1, Ordering::SeqCst);
        }
        if self.broken.load(Ordering::SeqCst) && purpose == EmbedPurpose::Document {
            return Err(ProviderError::Status {
                status: 503,
                message: "upstream overloaded".into(),
                retry_after: None,
            });
        }
        self.inner.embed(texts, purpose).await
    }
}

#[tokio::test]
async fn failures_back_off_then_dead_letter_and_replay_moves_the_version_again() {
    for h in stores().await {
        let flaky = Arc::new(Flaky {
            inner: HashingEmbedder::default(),
            broken: AtomicBool::new(true),
            calls: AtomicU32::new(0),
        });
        let memory = h
            .memory_with(
                test_config(),
                Some(flaky.clone() as Arc<dyn Embedder>),
                None,
            )
            .await;
        let receipt = memory
            .ingest_text("Is the embedder down today?", IngestOptions::new("down"))
            .await
            .unwrap();
        let report = memory.process_until_idle().await.unwrap();
        assert_eq!(report.dead_lettered, 1);
        assert_eq!(report.retried, 2);
        assert_eq!(
            flaky.calls.load(Ordering::SeqCst),
            3,
            "one attempt plus two retries"
        );

        let status = memory.status().await.unwrap();
        assert_eq!(status.dead_letters.len(), 1);
        let dead = &status.dead_letters[0];
        assert_eq!(dead.stage, Stage::Embed);
        assert_eq!((dead.attempts, dead.max_attempts), (3, 3));
        assert!(dead.last_error.as_deref().unwrap().contains("503"));
        // The barrier never skips a dead letter: the version is stalled.
        assert_eq!(memory.documents().await.unwrap()[0].status, "stalled");
        let ns = h.store.namespace("default").await.unwrap().unwrap().id;
        let barrier = h
            .store
            .barrier(ns, receipt.version_id, Stage::Embed)
            .await
            .unwrap();
        assert!(!barrier.is_complete() && barrier.is_stalled());

        // The provider recovers; an explicit replay moves the version again.
        flaky.broken.store(false, Ordering::SeqCst);
        assert_eq!(memory.retry(Some(Stage::Embed), true).await.unwrap(), 1);
        let item = h.store.work_item(dead.work_id).await.unwrap().unwrap();
        assert_eq!(item.status, WorkStatus::Pending);
        assert_eq!(item.attempts, 3, "attempts are kept");
        assert!(item.max_attempts > 3, "max_attempts is raised");
        memory.process_until_idle().await.unwrap();
        assert_eq!(memory.documents().await.unwrap()[0].status, "ready");
        assert!(memory.status().await.unwrap().dead_letters.is_empty());
    }
}

#[tokio::test]
async fn a_non_retryable_failure_dead_letters_at_once() {
    #[derive(Debug)]
    struct WrongDimension(HashingEmbedder);
    #[async_trait]
    impl Embedder for WrongDimension {
        fn identity(&self) -> &EmbedderIdentity {
            self.0.identity()
        }
        async fn embed(
            &self,
            texts: &[String],
            _: EmbedPurpose,
        ) -> Result<Vec<Vec<f32>>, ProviderError> {
            Ok(texts.iter().map(|_| vec![0.5; 3]).collect())
        }
    }
    for h in stores().await {
        let memory = h
            .memory_with(
                test_config(),
                Some(Arc::new(WrongDimension(HashingEmbedder::default()))),
                None,
            )
            .await;
        memory
            .ingest_text("Dimensions matter.", IngestOptions::new("dim"))
            .await
            .unwrap();
        let report = memory.process_until_idle().await.unwrap();
        assert_eq!((report.dead_lettered, report.retried), (1, 0));
        let status = memory.status().await.unwrap();
        assert!(
            status.dead_letters[0]
                .last_error
                .as_deref()
                .unwrap()
                .contains("dimension")
        );
        // Search still answers lexically and says why the semantic channel is thin.
        let env = memory.search("dimensions", 3).await.unwrap();
        assert_eq!(env.results.len(), 1);
        assert_eq!(env.freshness.dead_letters, 1);
        assert!(!env.freshness.semantic.ready);
    }
}

#[tokio::test]
async fn a_changed_component_version_reruns_its_stage_on_open() {
    for h in stores().await {
        let memory = h.memory().await;
        let receipt = memory
            .ingest_text(
                "# Old\n\nStructured by an older blockizer.",
                IngestOptions::new("old"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let before = count(&memory, Stage::Chunk, WorkStatus::Done).await;

        // Reopen with other chunking parameters: the e1.chunk component version changes.
        let mut config = test_config();
        config.engine.chunk.token_budget = 128;
        let reopened = h.memory_with(config.clone(), None, None).await;
        assert_eq!(count(&reopened, Stage::Chunk, WorkStatus::Pending).await, 1);
        assert_eq!(
            count(&reopened, Stage::Prepare, WorkStatus::Pending).await,
            0
        );
        reopened.process_until_idle().await.unwrap();
        assert_eq!(
            count(&reopened, Stage::Chunk, WorkStatus::Done).await,
            before + 1
        );
        let detail = reopened.document(receipt.document_id).await.unwrap();
        assert_eq!(
            detail.chunk_count, 1,
            "re-chunking replaced the chunks, never doubled them"
        );
        assert_eq!(
            reopened
                .search("older blockizer", 5)
                .await
                .unwrap()
                .results
                .len(),
            1
        );

        // Opening again with unchanged components enqueues nothing.
        let again = h.memory_with(config, None, None).await;
        assert_eq!(count(&again, Stage::Chunk, WorkStatus::Pending).await, 0);
    }
}

#[tokio::test]
async fn offline_stages_run_as_write_groups_and_a_provider_call_keeps_its_stage_out() {
    for h in stores().await {
        // Everything offline with the in-process hashing embedder: every stage's
        // batches are write groups.
        let memory = h.memory().await;
        for stage in Stage::ALL {
            assert!(memory.engine().runs_grouped(stage), "{stage:?}");
        }
        // An embedder that calls out keeps the embedding stages (and adjudication,
        // which embeds profiles) out; a chat seat keeps its own stage out.
        let remote = Arc::new(Flaky {
            inner: HashingEmbedder::default(),
            broken: AtomicBool::new(false),
            calls: AtomicU32::new(0),
        });
        let memory = Memory::builder()
            .store(h.store.clone())
            .config(test_config())
            .embedder(remote)
            .fact_models(FactModels {
                normalizer: Some(Arc::new(ScriptedChatModel::new("normalizer"))),
                ..FactModels::default()
            })
            .open()
            .await
            .unwrap();
        let grouped: Vec<Stage> = Stage::ALL
            .into_iter()
            .filter(|s| memory.engine().runs_grouped(*s))
            .collect();
        assert_eq!(
            grouped,
            vec![Stage::Prepare, Stage::Chunk, Stage::Extract],
            "{}",
            h.kind
        );

        // The store's side of the contract: a group reads its own writes, and once it
        // ends, everyone reads them.
        let now = chrono::Utc::now();
        let mut inside = None;
        h.store
            .grouped(Box::pin(async {
                h.store.ensure_namespace("grouped", now).await.unwrap();
                inside = h.store.namespace("grouped").await.unwrap();
            }))
            .await
            .unwrap();
        assert!(inside.is_some(), "{}: the group read its own write", h.kind);
        assert!(h.store.namespace("grouped").await.unwrap().is_some());
        // Processing in groups finishes the work as before.
        let memory = h.memory().await;
        memory
            .ingest_text(
                "# Groups\n\nAlice works for Acme. Alice lives in Lisbon.",
                IngestOptions::new("groups"),
            )
            .await
            .unwrap();
        let report = memory.process_until_idle().await.unwrap();
        assert!(report.completed >= 5, "{report:?}");
        let alices = memory
            .entities(false, 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.canonical_name == "Alice")
            .count();
        assert_eq!(alices, 1, "{}: one entity for both claims", h.kind);
        assert!(
            !memory
                .facts(&FactQuery {
                    limit: 100,
                    ..FactQuery::default()
                })
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn a_batch_of_normalizations_commits_those_whose_lease_held() {
    for h in stores().await {
        let now = chrono::Utc::now();
        let ns = h.store.ensure_namespace("batch", now).await.unwrap().id;
        let version = rememberstack::VersionId::new();
        let claims = [rememberstack::ClaimId::new(), rememberstack::ClaimId::new()];
        let work = claims
            .iter()
            .map(|c| NewWork::now(ns, Stage::Normalize, c.uuid(), version, "n1", now))
            .collect();
        h.store.enqueue(work, now).await.unwrap();
        let items = h
            .store
            .claim(&ClaimRequest {
                owner: "worker".into(),
                stages: vec![Stage::Normalize],
                limit: 10,
                stage_limits: vec![],
                lease_until: now + chrono::Duration::seconds(60),
                now,
            })
            .await
            .unwrap();
        assert_eq!(items.len(), 2);
        let commit = |item: &rememberstack::internals::ledger::WorkItem, owner: &str| {
            rememberstack::store::NormalizationCommit {
                lease: Lease {
                    work_id: item.id,
                    owner: owner.into(),
                },
                claim: rememberstack::ClaimId(item.target_id),
                normalizer_version: "n1".into(),
                output: serde_json::json!({"n": item.target_id}),
                assertions: vec![],
                follow_up: vec![NewWork::now(
                    ns,
                    Stage::Adjudicate,
                    item.target_id,
                    version,
                    "a1",
                    now,
                )],
            }
        };
        // The first commit holds its lease; the second names a worker that does not.
        let results = h
            .store
            .commit_normalizations(
                vec![
                    commit(&items[0], "worker"),
                    commit(&items[1], "someone-else"),
                ],
                now,
            )
            .await
            .unwrap();
        assert!(results[0].is_ok(), "{}: {:?}", h.kind, results[0]);
        assert_eq!(
            results[1].as_ref().unwrap_err().code(),
            ErrorCode::LeaseLost,
            "{}",
            h.kind
        );
        let first = rememberstack::ClaimId(items[0].target_id);
        let second = rememberstack::ClaimId(items[1].target_id);
        assert!(
            h.store
                .normalization(ns, first, "n1")
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            h.store
                .normalization(ns, second, "n1")
                .await
                .unwrap()
                .is_none()
        );
        let done = h.store.work_item(items[0].id).await.unwrap().unwrap();
        let running = h.store.work_item(items[1].id).await.unwrap().unwrap();
        assert_eq!(done.status, WorkStatus::Done);
        assert_eq!(running.status, WorkStatus::Running);
        // Only the committed one's follow-up was enqueued.
        let adjudications = h
            .store
            .claim(&ClaimRequest {
                owner: "worker".into(),
                stages: vec![Stage::Adjudicate],
                limit: 10,
                stage_limits: vec![],
                lease_until: now + chrono::Duration::seconds(60),
                now,
            })
            .await
            .unwrap();
        assert_eq!(adjudications.len(), 1, "{}", h.kind);
        assert_eq!(adjudications[0].target_id, items[0].target_id);
    }
}

/// Ingest `n` one-line notes under source refs `{prefix}-{i}`.
async fn ingest_notes(memory: &Memory, prefix: &str, n: usize) {
    for i in 0..n {
        memory
            .ingest_text(
                format!("# Note {i}\n\nA line about item {i}."),
                IngestOptions::new(format!("{prefix}-{i}")),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_claim_takes_a_stage_limit_for_its_stage_and_the_limit_for_others() {
    for h in stores().await {
        let memory = h.memory_with(test_config(), None, None).await;
        ingest_notes(&memory, "limit", 5).await;
        let now = chrono::Utc::now();
        let request = |limit: u32, stage_limits: Vec<(Stage, u32)>| ClaimRequest {
            owner: "worker".into(),
            stages: vec![Stage::Prepare],
            limit,
            stage_limits,
            lease_until: now + chrono::Duration::seconds(30),
            now,
        };
        // Prepare has a limit of its own: it wins over `limit`.
        let first = h
            .store
            .claim(&request(1, vec![(Stage::Prepare, 3)]))
            .await
            .unwrap();
        assert_eq!(first.len(), 3, "{}", h.kind);
        // Another stage's limit leaves prepare at `limit`.
        let second = h
            .store
            .claim(&request(1, vec![(Stage::Chunk, 9)]))
            .await
            .unwrap();
        assert_eq!(second.len(), 1, "{}", h.kind);
        let rest = h.store.claim(&request(10, vec![])).await.unwrap();
        assert_eq!(rest.len(), 1, "{}", h.kind);
    }
}

#[tokio::test]
async fn provider_free_batches_on_the_embedded_store_are_claimed_in_larger_batches() {
    for h in stores().await {
        let config = test_config();
        let (limit, grouped) = (config.engine.claim_limit, config.engine.grouped_claim_limit);
        assert!(grouped > limit);
        let memory = h.memory_with(config, None, None).await;
        let n = limit as usize + 8;
        ingest_notes(&memory, "batch", n).await;
        let report = memory.engine().drain().await.unwrap();
        let prepare = &report.stages["e0.prepare"];
        assert_eq!(prepare.items, n as u64, "{}", h.kind);
        // The embedded store is written by this process alone: one batch. A shared
        // store keeps the ordinary claim size, so that workers share the work.
        let expected = if h.kind == "sqlite" { 1 } else { 2 };
        assert_eq!(prepare.batches, expected, "{}", h.kind);
        // A claim size of zero is a configuration error, found when the engine opens.
        let mut zero = test_config();
        zero.engine.grouped_claim_limit = 0;
        let err = Memory::builder()
            .store(h.store.clone())
            .config(zero)
            .namespace("zero-claims")
            .open()
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Config, "{}", h.kind);
    }
}

/// Extracting a version again under another extractor (new claims, so new
/// assertions for the same version and the same entities) must adjudicate the new
/// assertions: the facts move their support to the new claims and stay answerable.
/// An adjudication unit is keyed by version and entity, so its earlier, finished run
/// must not keep the new one from running.
#[tokio::test]
async fn facts_keep_current_evidence_when_their_version_is_extracted_again() {
    for h in stores().await {
        let text = "# Staff\n\nAlice Moreno works for Acme. Bruno Keller lives in Lyon.\n";
        // First extracted by a (scripted) model extractor.
        let model = Arc::new(
            ScriptedChatModel::new("scripted-model")
                .answer(
                    "selection",
                    ScriptedChatModel::ANY,
                    serde_json::json!({"selections": [
                        {"passage": "T1", "label": "keep", "reason": null}
                    ]}),
                )
                .answer(
                    "claimify",
                    ScriptedChatModel::ANY,
                    serde_json::json!({"claims": [
                        {
                            "text": "Alice Moreno works for Acme.",
                            "passages": ["T1"], "added_context": [],
                            "valid_from": null, "valid_until": null,
                            "precision": "unknown", "kind": "state", "verdict": "entailed"
                        },
                        {
                            "text": "Bruno Keller lives in Lyon.",
                            "passages": ["T1"], "added_context": [],
                            "valid_from": null, "valid_until": null,
                            "precision": "unknown", "kind": "state", "verdict": "entailed"
                        }
                    ]}),
                ),
        );
        let first = Memory::builder()
            .store(h.store.clone())
            .config(test_config())
            .extractor(ExtractorModels {
                selection: model.clone() as Arc<dyn ChatModel>,
                claimify: model as Arc<dyn ChatModel>,
            })
            .open()
            .await
            .unwrap();
        first
            .ingest_text(text, IngestOptions::new("staff"))
            .await
            .unwrap();
        first.process_until_idle().await.unwrap();
        let before = crate::facts::all_facts(&first, false).await;
        let statements = |facts: &[rememberstack::FactRecord]| {
            let mut s: Vec<String> = facts.iter().map(|f| f.statement.clone()).collect();
            s.sort();
            s
        };
        assert_eq!(before.len(), 2, "{}: {:?}", h.kind, statements(&before));

        // Reopened with the offline extractor: the version is extracted again.
        let reopened = h.memory().await;
        reopened.process_until_idle().await.unwrap();
        let after = crate::facts::all_facts(&reopened, false).await;
        assert_eq!(statements(&after), statements(&before), "{}", h.kind);
        for fact in &after {
            let trace = reopened.trace(fact.fact_id).await.unwrap();
            assert!(
                trace
                    .evidence
                    .iter()
                    .any(|e| e.claim.as_ref().is_some_and(|c| c.is_current)),
                "{}: {} kept no current evidence",
                h.kind,
                fact.statement
            );
        }
        let answer = reopened
            .facts_context(rememberstack::FactsContextInput {
                query: "Where does Alice Moreno work?".into(),
                k: Some(5),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            answer
                .results
                .iter()
                .any(|r| r.fact.statement.contains("Acme")),
            "{}: {:?}",
            h.kind,
            answer.negative
        );
    }
}

/// Assertions left waiting with no unit to decide them (as a re-extraction before
/// schema 31 left them) are decided once the store is opened again.
#[tokio::test]
async fn opening_the_store_decides_assertions_left_waiting() {
    for h in stores().await {
        let memory = h.memory().await;
        let receipt = memory
            .ingest_text(
                "# Staff\n\nAlice Moreno works for Acme.\n",
                IngestOptions::new("staff"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let ns = h.store.namespaces().await.unwrap()[0].id;
        let facts = crate::facts::all_facts(&memory, false).await;
        let acme = crate::facts::named(&facts, "works for Acme")[0].clone();
        let trace = memory.trace(acme.fact_id).await.unwrap();
        let claim = trace.evidence[0].evidence.claim_id;
        // An assertion of that version about Alice, staged with no unit.
        let mut restated = crate::store_fixtures::observation(
            ns,
            claim,
            receipt.version_id,
            acme.subject,
            &acme.statement,
            7,
            chrono::Utc::now(),
        );
        restated.document_id = receipt.document_id;
        crate::store_fixtures::stage(
            h.store.as_ref(),
            ns,
            claim,
            vec![restated],
            chrono::Utc::now(),
        )
        .await;
        memory.process_until_idle().await.unwrap();
        assert_eq!(
            h.store
                .pending_subjects(ns, receipt.version_id)
                .await
                .unwrap(),
            vec![acme.subject],
            "{}: nothing decides it in this process",
            h.kind
        );

        let reopened = h.memory().await;
        reopened.process_until_idle().await.unwrap();
        assert!(
            h.store
                .pending_subjects(ns, receipt.version_id)
                .await
                .unwrap()
                .is_empty(),
            "{}: decided once the store opened again",
            h.kind
        );
    }
}
