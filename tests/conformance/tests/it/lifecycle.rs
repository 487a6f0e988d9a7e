//! Lifecycle: deleting a document (D135) — counts, the closing reason, a fact with
//! independent support surviving, repeats, work landing after the tombstone,
//! receipts, and delete-then-re-add.

use crate::facts::{all_facts as facts, at, named as about};
use rememberstack::{ClaimsAndSourcesInput, DocumentId, IngestOptions, Memory};
use rememberstack_conformance::stores;

const ALPHA: &str = "# Alpha notes\n\nAlice lives in Lisbon.\n\nBob works for Acme.\n";
const BETA: &str = "# Beta notes\n\nAlice lives in Lisbon.\n";

pub(crate) async fn add(memory: &Memory, source_ref: &str, text: &str) -> DocumentId {
    let r = memory
        .ingest_text(
            text,
            IngestOptions::new(source_ref).source_time(at("2024-05-01T00:00:00Z")),
        )
        .await
        .unwrap();
    memory.process_until_idle().await.unwrap();
    r.document_id
}

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

async fn current_claims(memory: &Memory, doc: DocumentId) -> usize {
    memory
        .claims(Some(doc), false)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.is_current)
        .count()
}

#[tokio::test]
async fn deletion_retires_testimony_closes_sole_support_and_keeps_independent_facts() {
    for h in stores().await {
        let memory = h.memory().await;
        let alpha = add(&memory, "notes/alpha", ALPHA).await;
        add(&memory, "notes/beta", BETA).await;
        let live = facts(&memory, false).await;
        let lisbon = about(&live, "Lisbon");
        let acme = about(&live, "Acme");
        assert_eq!(lisbon.len(), 1, "{}: {live:#?}", h.kind);
        assert_eq!(lisbon[0].evidence_count, 2, "{}", h.kind);
        assert_eq!(acme.len(), 1, "{}: {live:#?}", h.kind);
        let (lisbon_id, acme_fact) = (lisbon[0].fact_id, acme[0].clone());
        let alpha_claims = current_claims(&memory, alpha).await;
        assert!(alpha_claims >= 2, "{}: {alpha_claims}", h.kind);

        // A receipt that selects Alpha's chunk or claims, recorded before the delete.
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "where does Bob work".into(),
                k: Some(3),
                record_receipt: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            env.results.iter().any(|r| r.text().contains("Acme")),
            "{}",
            h.kind
        );
        let receipt = env.receipt_id.expect("receipt recorded");

        let alpha_chunk = memory
            .search("Bob works for Acme", 5)
            .await
            .unwrap()
            .results
            .iter()
            .find(|c| c.document_id == alpha)
            .expect("Alpha's chunk is found before the delete")
            .chunk_id;
        let deletion = memory.delete_document(alpha).await.unwrap();
        assert_eq!(deletion.doc_id, alpha);
        assert_eq!(deletion.claims_retired as usize, alpha_claims, "{}", h.kind);
        // Only the Acme fact lost all its support; the Lisbon fact keeps Beta's.
        let closed_kind = (acme_fact.kind == rememberstack::FactKind::Relation) as u64;
        assert_eq!(
            (deletion.relations_closed, deletion.observations_closed),
            (closed_kind, 1 - closed_kind),
            "{}: {deletion:?}",
            h.kind
        );
        assert_eq!(current_claims(&memory, alpha).await, 0, "{}", h.kind);

        let live = facts(&memory, false).await;
        assert!(about(&live, "Acme").is_empty(), "{}: {live:#?}", h.kind);
        let lisbon = about(&live, "Lisbon");
        assert_eq!(lisbon.len(), 1, "{}", h.kind);
        assert_eq!(lisbon[0].fact_id, lisbon_id);
        assert_eq!(lisbon[0].evidence_count, 1, "{}: recounted", h.kind);
        let history = facts(&memory, true).await;
        let closed = history
            .iter()
            .find(|f| f.fact_id == acme_fact.fact_id)
            .expect("the closed fact stays in history");
        assert_eq!(
            closed.closed_reason.as_deref(),
            Some("retracted_source_removal")
        );
        assert_eq!(closed.invalidated_at, Some(deletion.deleted_at));

        // Nothing of Alpha is served: search, evidence, listings.
        let hits = memory.search("Bob works for Acme", 10).await.unwrap();
        assert!(
            hits.results.iter().all(|c| c.document_id != alpha),
            "{}: {:?}",
            h.kind,
            hits.results
        );
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "where does Bob work".into(),
                k: Some(5),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            env.results.iter().all(|r| !r.text().contains("Acme")),
            "{}",
            h.kind
        );
        let listed: Vec<DocumentId> = memory
            .documents()
            .await
            .unwrap()
            .iter()
            .map(|d| d.doc_id)
            .collect();
        assert!(!listed.contains(&alpha), "{}", h.kind);
        let detail = memory.document(alpha).await.unwrap();
        assert_eq!(detail.summary.status, "deleted");
        assert_eq!(detail.summary.deleted_at, Some(deletion.deleted_at));

        // A remembered chunk id serves nothing either.
        let env = memory.adjacent_chunks(alpha_chunk, 1).await.unwrap();
        assert!(env.results.is_empty(), "{}", h.kind);
        assert_eq!(
            env.negative.unwrap().limitation.as_deref(),
            Some("deleted_document")
        );

        // The receipt refuses, naming the deletion.
        let resolved = memory.resolve_receipt(receipt).await.unwrap();
        assert_eq!(resolved.status, "refused", "{}", h.kind);
        assert_eq!(resolved.reason.as_deref(), Some("deleted"), "{}", h.kind);

        // A repeat after completion, and an unknown id, are document_not_found and
        // change nothing.
        for id in [alpha, DocumentId::new()] {
            let err = memory.delete_document(id).await.unwrap_err();
            assert_eq!(err.code().as_str(), "document_not_found", "{}", h.kind);
        }
        assert_eq!(facts(&memory, false).await.len(), live.len());

        // The same bytes again: a new version processed afresh, contributing again.
        let again = memory
            .ingest_text(
                ALPHA,
                IngestOptions::new("notes/alpha").source_time(at("2024-05-01T00:00:00Z")),
            )
            .await
            .unwrap();
        assert_eq!(again.document_id, alpha);
        assert_eq!(again.outcome, "created", "{}", h.kind);
        memory.process_until_idle().await.unwrap();
        assert!(current_claims(&memory, alpha).await >= 2, "{}", h.kind);
        let live = facts(&memory, false).await;
        let acme = about(&live, "Acme");
        assert_eq!(acme.len(), 1, "{}: {live:#?}", h.kind);
        assert_ne!(
            acme[0].fact_id, acme_fact.fact_id,
            "a new fact, not a revival"
        );
        assert_eq!(acme[0].evidence_count, 1);
        assert_eq!(about(&live, "Lisbon")[0].evidence_count, 2, "{}", h.kind);
        let detail = memory.document(alpha).await.unwrap();
        assert_eq!(detail.summary.deleted_at, None);
        assert_eq!(detail.versions.len(), 2, "{}", h.kind);
        assert!(
            memory
                .documents()
                .await
                .unwrap()
                .iter()
                .any(|d| d.doc_id == alpha)
        );
    }
}

#[tokio::test]
async fn work_landing_after_the_tombstone_is_retired_by_the_cascade() {
    for h in stores().await {
        let memory = h.memory().await;
        add(&memory, "notes/beta", BETA).await;
        // Deleted before any stage ran: nothing to retire yet, the tombstone stands.
        let gamma = memory
            .ingest_text(
                "# Gamma\n\nCarol works for Globex.\n\nAlice lives in Lisbon.\n",
                IngestOptions::new("notes/gamma").source_time(at("2024-06-01T00:00:00Z")),
            )
            .await
            .unwrap()
            .document_id;
        let deletion = memory.delete_document(gamma).await.unwrap();
        assert_eq!(
            (
                deletion.claims_retired,
                deletion.relations_closed,
                deletion.observations_closed
            ),
            (0, 0, 0)
        );
        // The queued work still runs once; it publishes no testimony, and the facts
        // it produced close through the same cascade.
        memory.process_until_idle().await.unwrap();
        assert_eq!(current_claims(&memory, gamma).await, 0, "{}", h.kind);
        let live = facts(&memory, false).await;
        assert!(about(&live, "Globex").is_empty(), "{}: {live:#?}", h.kind);
        let history = facts(&memory, true).await;
        let globex = about(&history, "Globex");
        assert_eq!(globex.len(), 1, "{}: the late work did adjudicate", h.kind);
        assert_eq!(
            globex[0].closed_reason.as_deref(),
            Some("retracted_source_removal")
        );
        assert_eq!(about(&live, "Lisbon")[0].evidence_count, 1, "{}", h.kind);
        let hits = memory.search("Carol works for Globex", 10).await.unwrap();
        assert!(
            hits.results.iter().all(|c| c.document_id != gamma),
            "{}",
            h.kind
        );
        assert_eq!(
            memory
                .delete_document(gamma)
                .await
                .unwrap_err()
                .code()
                .as_str(),
            "document_not_found"
        );
    }
}

fn claim_saying<'a>(
    claims: &'a [rememberstack::ClaimRecord],
    needle: &str,
) -> &'a rememberstack::ClaimRecord {
    claims
        .iter()
        .find(|c| c.text.contains(needle))
        .unwrap_or_else(|| panic!("no claim saying {needle}: {claims:#?}"))
}

#[tokio::test]
async fn retraction_ends_currency_recounts_support_and_shows_in_trace() {
    for h in stores().await {
        let memory = h.memory().await;
        let alpha = add(&memory, "notes/alpha", ALPHA).await;
        add(&memory, "notes/beta", BETA).await;
        let claims = memory.claims(Some(alpha), false).await.unwrap();
        let acme_claim = claim_saying(&claims, "Acme").claim_id;
        let lisbon_claim = claim_saying(&claims, "Lisbon").claim_id;
        let live = facts(&memory, false).await;
        let acme_fact = about(&live, "Acme")[0].fact_id;
        let lisbon_fact = about(&live, "Lisbon")[0].fact_id;

        let r = memory
            .retract_claim(acme_claim, "misheard in the meeting", Some("r-1"))
            .await
            .unwrap();
        assert!(r.was_current, "{}", h.kind);
        assert_eq!(r.facts_recounted, 1, "{}: {r:?}", h.kind);
        assert_eq!(r.relations_closed + r.observations_closed, 1, "{r:?}");
        // Exact replay returns the stored result; the same id with another input is
        // refused; a repeat without an id returns the first retraction.
        let replay = memory
            .retract_claim(acme_claim, "misheard in the meeting", Some("r-1"))
            .await
            .unwrap();
        // (Compared as the public answer: internal bookkeeping is not replayed.)
        assert_eq!(json(&replay), json(&r));
        let err = memory
            .retract_claim(acme_claim, "another reason", Some("r-1"))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "request_conflict", "{}", h.kind);
        let again = memory
            .retract_claim(acme_claim, "another reason", None)
            .await
            .unwrap();
        assert_eq!(
            (again.retracted_at, again.reason.as_str()),
            (r.retracted_at, "misheard in the meeting")
        );

        let history = facts(&memory, true).await;
        let closed = history.iter().find(|f| f.fact_id == acme_fact).unwrap();
        assert_eq!(closed.closed_reason.as_deref(), Some("retracted_claim"));
        assert!(about(&facts(&memory, false).await, "Acme").is_empty());
        let trace = memory.trace(acme_fact).await.unwrap();
        let events: Vec<(&str, &str)> = trace
            .events
            .iter()
            .map(|e| (e.event.as_str(), e.reason.as_str()))
            .collect();
        assert_eq!(
            events,
            vec![
                ("support_retracted", "misheard in the meeting"),
                ("closed", "retracted_claim")
            ],
            "{}",
            h.kind
        );

        // A fact with other support survives, recounted, and shows the retraction.
        memory
            .retract_claim(lisbon_claim, "wrong person", None)
            .await
            .unwrap();
        let live = facts(&memory, false).await;
        let lisbon = about(&live, "Lisbon");
        assert_eq!(lisbon.len(), 1, "{}", h.kind);
        assert_eq!(lisbon[0].fact_id, lisbon_fact);
        assert_eq!(
            lisbon[0].evidence_count, 1,
            "{}: Beta still says it",
            h.kind
        );
        let trace = memory.trace(lisbon_fact).await.unwrap();
        assert_eq!(trace.events.len(), 1);
        assert_eq!(trace.events[0].reason, "wrong person");

        // A new version of the lineage repeating the sentence does not revive it.
        add(
            &memory,
            "notes/alpha",
            &format!("{ALPHA}\nCarol enjoys hiking.\n"),
        )
        .await;
        let claims = memory.claims(Some(alpha), true).await.unwrap();
        let acme = claim_saying(&claims, "Acme");
        assert_eq!(acme.claim_id, acme_claim, "{}: the same testimony", h.kind);
        assert!(
            !acme.is_current,
            "{}: a retracted claim stays retired",
            h.kind
        );
        assert!(about(&facts(&memory, false).await, "Acme").is_empty());

        // Bad input changes nothing.
        let unknown = memory
            .retract_claim(rememberstack::ClaimId::new(), "x", None)
            .await
            .unwrap_err();
        assert_eq!(unknown.code().as_str(), "not_found");
        let empty = memory
            .retract_claim(lisbon_claim, "  ", None)
            .await
            .unwrap_err();
        assert_eq!(empty.code().as_str(), "invalid_input");
    }
}

#[tokio::test]
async fn invalidating_a_fact_ends_the_belief_with_its_reason() {
    for h in stores().await {
        let memory = h.memory().await;
        add(
            &memory,
            "notes/dana",
            "# Staff\n\nDana works for Initech.\n",
        )
        .await;
        let fact = about(&facts(&memory, false).await, "Initech")[0].clone();
        let r = memory
            .invalidate_fact(fact.fact_id, "Dana left in May", Some("i-1"))
            .await
            .unwrap();
        assert_eq!(r.closed_reason, "invalidated");
        assert!(about(&facts(&memory, false).await, "Initech").is_empty());
        let closed = facts(&memory, true)
            .await
            .into_iter()
            .find(|f| f.fact_id == fact.fact_id)
            .unwrap();
        assert_eq!(closed.invalidated_at, Some(r.invalidated_at));
        assert_eq!(closed.closed_reason.as_deref(), Some("invalidated"));
        assert_eq!(closed.evidence_count, 1, "{}: the evidence stays", h.kind);
        let trace = memory.trace(fact.fact_id).await.unwrap();
        assert_eq!(trace.events.len(), 1);
        assert_eq!(
            (
                trace.events[0].event.as_str(),
                trace.events[0].reason.as_str()
            ),
            ("invalidated", "Dana left in May")
        );
        let replay = memory
            .invalidate_fact(fact.fact_id, "Dana left in May", Some("i-1"))
            .await
            .unwrap();
        assert_eq!(json(&replay), json(&r));
        for (reason, request, code) in [
            ("another", Some("i-1"), "request_conflict"),
            ("again", None, "conflict"),
        ] {
            let err = memory
                .invalidate_fact(fact.fact_id, reason, request)
                .await
                .unwrap_err();
            assert_eq!(err.code().as_str(), code, "{}", h.kind);
        }
        let err = memory
            .invalidate_fact(rememberstack::FactId::new(), "x", None)
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "not_found");
        assert_eq!(memory.trace(fact.fact_id).await.unwrap().events.len(), 1);
    }
}

fn turns(range: std::ops::Range<usize>) -> Vec<rememberstack::Message> {
    let said = [
        "Caroline adopted a rescue dog named Biscuit last weekend.",
        "Melanie started pottery classes at the community centre.",
        "Caroline is training for the Lisbon half marathon in October.",
        "Melanie painted a sunrise over the lake for her sister.",
        "Caroline moved to a flat near the old harbour in Porto.",
        "Melanie booked a camping trip to the Dolomites for August.",
        "Caroline joined a choir that rehearses on Thursday evenings.",
    ];
    range
        .map(|i| rememberstack::Message {
            event_id: Some(format!("D1:{i}")),
            speaker: if i % 2 == 0 { "Caroline" } else { "Melanie" }.into(),
            text: format!("On day {i}: {}", said[i % said.len()]),
            timestamp: None,
        })
        .collect()
}

#[tokio::test]
async fn conversation_appends_are_idempotent_versions_that_reuse_claims() {
    for h in stores().await {
        let memory = h.memory().await;
        let first = memory
            .append_messages_at("chat/cm", turns(0..40), at("2023-05-08T13:56:00Z"))
            .await
            .unwrap();
        assert_eq!(
            (first.outcome.as_str(), first.new_lineage, first.appended),
            ("created", true, 40)
        );
        memory.process_until_idle().await.unwrap();
        let doc = first.document_id;
        let before: Vec<_> = memory
            .claims(Some(doc), false)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.claim_id)
            .collect();
        assert!(!before.is_empty(), "{}", h.kind);

        // A replayed append changes nothing.
        let replay = memory
            .append_messages("chat/cm", turns(0..40))
            .await
            .unwrap();
        assert_eq!(
            (
                replay.outcome.as_str(),
                replay.appended,
                replay.already_present
            ),
            ("unchanged", 0, 40)
        );
        assert_eq!(replay.version_id, first.version_id);

        // New turns plus a repeated one: a new version holding all 42.
        let mut more = turns(39..42);
        more.rotate_left(1);
        let second = memory
            .append_messages_at("chat/cm", more, at("2023-05-09T10:00:00Z"))
            .await
            .unwrap();
        assert_eq!(
            (
                second.outcome.as_str(),
                second.appended,
                second.already_present
            ),
            ("created", 2, 1)
        );
        assert_eq!(second.document_id, doc);
        memory.process_until_idle().await.unwrap();
        let detail = memory.document(doc).await.unwrap();
        assert_eq!(detail.versions.len(), 2, "{}", h.kind);
        // Unchanged chunks reused their claims: the earlier claims are still current
        // and the second version's extraction ledger shows reuse.
        let now: Vec<_> = memory
            .claims(Some(doc), false)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.claim_id)
            .collect();
        assert!(before.iter().all(|c| now.contains(c)), "{}", h.kind);
        assert!(
            now.len() > before.len(),
            "{}: the new turns added claims",
            h.kind
        );
        let decisions = memory.claim_decisions(doc).await.unwrap();
        assert!(
            decisions
                .iter()
                .any(|d| d.version_id == second.version_id && d.row.kind == "reused"),
            "{}: {:?}",
            h.kind,
            decisions
                .iter()
                .map(|d| (&d.row.kind, d.version_id))
                .collect::<Vec<_>>()
        );
        // The append costs what it adds: fewer fresh extractions than the first version.
        let fresh = |v| {
            decisions
                .iter()
                .filter(|d| d.version_id == v && d.row.kind == "accepted")
                .count()
        };
        assert!(
            fresh(second.version_id) < fresh(first.version_id),
            "{}: {} fresh claims after the append, {} at first",
            h.kind,
            fresh(second.version_id),
            fresh(first.version_id)
        );
        // The new message keeps its event id into search results.
        let hits = memory.search("On day 41", 3).await.unwrap();
        assert!(
            hits.results
                .iter()
                .any(|c| c.event_ids.contains(&"D1:41".to_string())),
            "{}: {:?}",
            h.kind,
            hits.results
        );

        // A repeated event id with different text is refused and changes nothing;
        // so is a message without an event id.
        let mut changed = turns(1..2);
        changed[0].text = "Melanie quit pottery.".into();
        let err = memory
            .append_messages("chat/cm", changed)
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "conflict", "{}", h.kind);
        let mut anonymous = turns(9..10);
        anonymous[0].event_id = None;
        let err = memory
            .append_messages("chat/cm", anonymous)
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_conversation");
        let err = memory.append_messages("chat/cm", vec![]).await.unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_conversation");
        assert_eq!(memory.document(doc).await.unwrap().versions.len(), 2);
    }
}

#[tokio::test]
async fn feedback_is_checked_against_the_receipt_listed_and_pruned_after_retention() {
    for h in stores().await {
        let clock = rememberstack_conformance::ManualClock::new();
        let mut config = rememberstack_conformance::test_config();
        config.engine.feedback_retention = std::time::Duration::from_secs(24 * 3600);
        let memory = h.memory_with(config, None, Some(clock.clone())).await;
        add(&memory, "notes/alpha", ALPHA).await;
        let env = memory
            .claims_and_sources_context(ClaimsAndSourcesInput {
                query: "where does Bob work".into(),
                record_receipt: Some(true),
                ..Default::default()
            })
            .await
            .unwrap();
        let receipt_id = env.receipt_id.unwrap();
        let receipt = memory.inspect_receipt(receipt_id).await.unwrap();
        let item = format!(
            "{}:{}",
            receipt.selections[0].kind, receipt.selections[0].id
        );
        let input = |item_ref: &str, rating: &str| rememberstack::FeedbackInput {
            receipt_id,
            item_ref: item_ref.into(),
            rating: rating.into(),
            comment: Some("exactly what I needed".into()),
        };
        let first = memory.feedback(input(&item, "useful")).await.unwrap();
        assert_eq!(first.rating, "useful");
        // Bad input is refused and stores nothing.
        for (item_ref, rating, code) in [
            (
                "claim:00000000-0000-0000-0000-000000000000",
                "useful",
                "invalid_parameter",
            ),
            (item.as_str(), "great", "invalid_parameter"),
        ] {
            let err = memory.feedback(input(item_ref, rating)).await.unwrap_err();
            assert_eq!(err.code().as_str(), code, "{}", h.kind);
        }
        let mut unknown = input(&item, "wrong");
        unknown.receipt_id = rememberstack::ReceiptId::new();
        assert_eq!(
            memory.feedback(unknown).await.unwrap_err().code().as_str(),
            "not_found"
        );
        let listed = memory.list_feedback(Some(receipt_id), 100).await.unwrap();
        assert_eq!(listed, vec![first.clone()], "{}", h.kind);

        // Two days later, new feedback prunes the expired row.
        clock.advance(std::time::Duration::from_secs(2 * 24 * 3600));
        let second = memory.feedback(input(&item, "not_useful")).await.unwrap();
        let listed = memory.list_feedback(None, 100).await.unwrap();
        assert_eq!(listed, vec![second], "{}", h.kind);
        clock.advance(std::time::Duration::from_secs(2 * 24 * 3600));
        assert_eq!(memory.prune_feedback().await.unwrap(), 1);
        assert!(memory.list_feedback(None, 100).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn export_pack_holds_facts_evidence_sources_entities_and_omissions() {
    for h in stores().await {
        let memory = h.memory().await;
        let alpha = add(&memory, "notes/alpha", ALPHA).await;
        add(&memory, "notes/beta", BETA).await;
        let pack = memory
            .export_pack(&rememberstack::ExportSelection::default())
            .await
            .unwrap();
        assert_eq!(pack["format"], rememberstack::PACK_FORMAT);
        let live = facts(&memory, false).await;
        let packed = pack["facts"].as_array().unwrap();
        assert_eq!(packed.len(), live.len(), "{}", h.kind);
        let claim_ids: Vec<&str> = pack["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["claim_id"].as_str().unwrap())
            .collect();
        for f in packed {
            let evidence = f["evidence"].as_array().unwrap();
            assert!(!evidence.is_empty(), "{f}");
            for e in evidence {
                assert!(claim_ids.contains(&e["claim_id"].as_str().unwrap()), "{e}");
            }
        }
        for c in pack["claims"].as_array().unwrap() {
            let spans = &c["occurrences"][0]["spans"];
            assert!(
                spans.as_array().is_some_and(|s| !s.is_empty()),
                "{}: {c}",
                h.kind
            );
        }
        let docs = pack["documents"].as_array().unwrap();
        assert_eq!(docs.len(), 2, "{}", h.kind);
        assert!(
            docs.iter()
                .all(|d| d["versions"][0]["content_sha256"].as_str().unwrap().len() == 64)
        );
        let names: Vec<&str> = pack["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["canonical_name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"Bob") && names.contains(&"Acme"),
            "{names:?}"
        );
        assert_eq!(pack["omissions"], serde_json::json!([]));
        // The digest covers the canonical form of everything else.
        let mut rest = pack.clone();
        let digest = rest.as_object_mut().unwrap().remove("digest").unwrap();
        assert_eq!(
            digest.as_str().unwrap(),
            rememberstack::internals::hash::sha256_hex(
                rememberstack::canonical_json(&rest).as_bytes()
            )
        );

        // After a deletion, history still lists the closed fact, and its retired
        // evidence is named as an omission.
        memory.delete_document(alpha).await.unwrap();
        let pack = memory
            .export_pack(&rememberstack::ExportSelection {
                history: true,
                ..Default::default()
            })
            .await
            .unwrap();
        let acme = pack["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["statement"].as_str().unwrap().contains("Acme"))
            .expect("history keeps the closed fact");
        assert_eq!(acme["closed_reason"], "retracted_source_removal");
        let omitted: Vec<&serde_json::Value> = pack["omissions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["fact_id"] == acme["fact_id"])
            .collect();
        assert_eq!(omitted.len(), 1, "{}", h.kind);
        assert_eq!(omitted[0]["reason"], "not_current_testimony");
        let bad = memory
            .export_pack(&rememberstack::ExportSelection {
                limit: 0,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(bad.code().as_str(), "invalid_parameter");
    }
}

fn note(request: &str, key: &str, revision: &str, text: &str) -> rememberstack::NoteInput {
    rememberstack::NoteInput {
        request_id: request.into(),
        source_key: key.into(),
        source_revision: revision.into(),
        text: text.into(),
        metadata: Some(serde_json::json!({"author": "agent-3"})),
    }
}

#[tokio::test]
async fn note_intake_idempotency_matrix() {
    for h in stores().await {
        let memory = h.memory().await;
        let text = "Erin leads the Atlas project.";
        let first = memory
            .remember_note(note("r1", "notes/erin", "1", text))
            .await
            .unwrap();
        assert_eq!(first.lifecycle, rememberstack::Admission::Promoted);
        assert_eq!(first.lifecycle_version, 1);
        // Exact replay: the same note.
        let replay = memory
            .remember_note(note("r1", "notes/erin", "1", text))
            .await
            .unwrap();
        assert_eq!(replay, first);
        // The same request id with different content.
        let err = memory
            .remember_note(note("r1", "notes/erin", "1", "Erin left."))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "request_conflict", "{}", h.kind);
        // Another request id naming the same exact revision: the same note.
        let same = memory
            .remember_note(note("r2", "notes/erin", "1", text))
            .await
            .unwrap();
        assert_eq!(same.version_id, first.version_id);
        // Different bytes under an existing key and revision.
        let err = memory
            .remember_note(note("r3", "notes/erin", "1", "Erin leads Borealis."))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "revision_conflict", "{}", h.kind);
        // Bad input changes nothing.
        let err = memory
            .remember_note(note(" ", "notes/erin", "2", text))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_parameter");
        let err = memory
            .remember_note(note("r4", "notes/erin", "2", "  "))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "empty_input");
        // The listing: metadata, never text.
        let page = memory.list_notes(None, 10).await.unwrap();
        assert_eq!(page.notes.len(), 1, "{}", h.kind);
        assert_eq!(page.notes[0].digest, first.digest);
        assert_eq!(page.notes[0].metadata["author"], "agent-3");
        let listed = serde_json::to_string(&page).unwrap();
        assert!(!listed.contains("Atlas"), "{listed}");
    }
}

#[tokio::test]
async fn note_lifecycle_is_compare_and_set_and_only_promoted_is_served() {
    for h in stores().await {
        let memory = h.memory().await;
        memory
            .set_note_policy(rememberstack::Admission::Candidate)
            .await
            .unwrap();
        let served = |memory: Memory, needle: &'static str| async move {
            let chunks = memory.search(needle, 10).await.unwrap();
            let claims = memory
                .claims_and_sources_context(ClaimsAndSourcesInput {
                    query: format!("which project does Erin lead {needle}"),
                    ..Default::default()
                })
                .await
                .unwrap();
            let live = facts(&memory, false).await;
            // The fact and combined operations, asked without naming the project.
            let facts_env = memory
                .facts_context(rememberstack::FactsContextInput {
                    query: "which project does Erin lead".into(),
                    ..Default::default()
                })
                .await
                .unwrap();
            let bundle = memory
                .combined_context(rememberstack::CombinedContextInput {
                    query: "which project does Erin lead".into(),
                    entity_ids: None,
                    temporal_scope: None,
                })
                .await
                .unwrap();
            chunks.results.iter().any(|c| c.text.contains(needle))
                || claims.results.iter().any(|r| r.text().contains(needle))
                || !about(&live, needle).is_empty()
                || serde_json::to_string(&facts_env).unwrap().contains(needle)
                || serde_json::to_string(&bundle).unwrap().contains(needle)
        };
        let v1 = memory
            .remember_note(note(
                "r1",
                "notes/erin",
                "1",
                "Erin leads the Atlas project.",
            ))
            .await
            .unwrap();
        assert_eq!(v1.lifecycle, rememberstack::Admission::Candidate);
        memory.process_until_idle().await.unwrap();
        assert!(
            !served(memory.clone(), "Atlas").await,
            "{}: a candidate",
            h.kind
        );

        // A stale lifecycle version is refused, never guessed.
        let err = memory.promote_note(v1.version_id, 2).await.unwrap_err();
        assert_eq!(err.code().as_str(), "conflict", "{}", h.kind);
        let v1 = memory.promote_note(v1.version_id, 1).await.unwrap();
        assert_eq!(
            (v1.lifecycle, v1.lifecycle_version),
            (rememberstack::Admission::Promoted, 2)
        );
        assert!(
            served(memory.clone(), "Atlas").await,
            "{}: promoted",
            h.kind
        );

        // Promoting the next revision archives the first in the same step.
        let v2 = memory
            .remember_note(note(
                "r2",
                "notes/erin",
                "2",
                "Erin leads the Borealis project.",
            ))
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        assert!(!served(memory.clone(), "Borealis").await, "{}", h.kind);
        let v2 = memory.promote_note(v2.version_id, 1).await.unwrap();
        memory.process_until_idle().await.unwrap();
        let page = memory.list_notes(None, 10).await.unwrap();
        let states: Vec<(&str, u32)> = page
            .notes
            .iter()
            .map(|n| (n.lifecycle.as_str(), n.lifecycle_version))
            .collect();
        assert_eq!(states, vec![("archived", 3), ("promoted", 2)], "{}", h.kind);
        assert!(served(memory.clone(), "Borealis").await, "{}", h.kind);
        assert!(
            !served(memory.clone(), "Atlas").await,
            "{}: archived",
            h.kind
        );

        // Archive: stale refused; then nothing of the note is served.
        let err = memory.archive_note(v2.version_id, 1).await.unwrap_err();
        assert_eq!(err.code().as_str(), "conflict");
        memory.archive_note(v2.version_id, 2).await.unwrap();
        assert!(!served(memory.clone(), "Borealis").await, "{}", h.kind);
        let err = memory.archive_note(v2.version_id, 3).await.unwrap_err();
        assert_eq!(err.code().as_str(), "conflict", "archived is final");

        // Paging: a stable keyset cursor.
        let first = memory.list_notes(None, 1).await.unwrap();
        let cursor = first.cursor.expect("a second page");
        let second = memory.list_notes(Some(&cursor), 1).await.unwrap();
        assert_eq!(second.notes.len(), 1);
        assert_ne!(second.notes[0].version_id, first.notes[0].version_id);
        assert!(second.cursor.is_none());
    }
}

#[tokio::test]
async fn correcting_a_fact_invalidates_it_and_the_correction_has_evidence() {
    for h in stores().await {
        let memory = h.memory().await;
        add(
            &memory,
            "notes/dana",
            "# Staff\n\nDana works for Initech.\n",
        )
        .await;
        let wrong = about(&facts(&memory, false).await, "Initech")[0].clone();
        let c = memory
            .correct_fact(
                wrong.fact_id,
                "Dana works for Globex.",
                "HR records say Globex",
                Some("c-1"),
            )
            .await
            .unwrap();
        assert_eq!(c.note.source_key, format!("corrections/{}", wrong.fact_id));
        memory.process_until_idle().await.unwrap();
        let live = facts(&memory, false).await;
        assert!(about(&live, "Initech").is_empty(), "{}", h.kind);
        let right = about(&live, "Globex");
        assert_eq!(right.len(), 1, "{}: {live:#?}", h.kind);
        // The correction's evidence is the system-origin note.
        let trace = memory.trace(right[0].fact_id).await.unwrap();
        let doc = trace.evidence[0].evidence.document_id;
        assert_eq!(doc, c.note.note_id, "{}", h.kind);
        let detail = memory.document(doc).await.unwrap();
        assert_eq!(detail.versions[0].origin, rememberstack::Origin::System);
        // The wrong fact's trace names the correction.
        let trace = memory.trace(wrong.fact_id).await.unwrap();
        assert_eq!(trace.fact.closed_reason.as_deref(), Some("corrected"));
        assert_eq!(trace.events[0].event, "corrected");
        assert_eq!(trace.events[0].reason, "HR records say Globex");
        assert_eq!(
            trace.events[0].detail["corrected_statement"],
            "Dana works for Globex."
        );
        // Replay, and a reused request id.
        let again = memory
            .correct_fact(
                wrong.fact_id,
                "Dana works for Globex.",
                "HR records say Globex",
                Some("c-1"),
            )
            .await
            .unwrap();
        assert_eq!(json(&again), json(&c));
        let err = memory
            .correct_fact(wrong.fact_id, "Dana works for Umbrella.", "x", Some("c-1"))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "request_conflict", "{}", h.kind);
        // Forgetting the correction note leaves no copy of its statement: the
        // wrong fact's event keeps its reason, the statement is blanked.
        memory.forget_note(c.note.note_id).await.unwrap();
        let trace = memory.trace(wrong.fact_id).await.unwrap();
        assert_eq!(trace.events[0].event, "corrected");
        assert!(
            trace.events[0].detail["corrected_statement"].is_null(),
            "{}: {:?}",
            h.kind,
            trace.events[0].detail
        );
        let events = h
            .query_texts("SELECT CAST(detail_json AS TEXT) FROM fact_events")
            .await;
        assert!(
            events.iter().all(|e| !e.contains("Globex")),
            "{}: {events:?}",
            h.kind
        );
    }
}
