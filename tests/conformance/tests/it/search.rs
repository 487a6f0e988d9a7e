//! Hybrid chunk search: the right chunk in a mixed corpus, roles, pagination,
//! embedder generations and reuse.

use crate::conversation_json;
use rememberstack::{
    ChunkResult, Envelope, HashingEmbedder, IngestOptions, SearchRequest, SectionRole, Stage,
};
use rememberstack_conformance::{stores, test_config};
use std::sync::Arc;

const GUIDE: &str = "# Gardening guide\n\nTomatoes need six hours of direct sunlight and deep watering twice a week.\n\n## Pests\n\nAphids on the roses can be washed off with soapy water.\n\n## References\n\n- The Royal Horticultural Society, tomato growing notes\n- Aphid control leaflet\n";

const HTML: &str = "<html><head><title>Volcano facts</title></head><body><h1>Volcano facts</h1><p>Mount Etna in Sicily is the most active volcano in Europe.</p><p>Its eruptions are monitored by the INGV observatory in Catania.</p></body></html>";

fn top_title(env: &Envelope<ChunkResult>) -> &str {
    env.results
        .first()
        .map(|r| r.document_title.as_str())
        .unwrap_or("")
}

#[tokio::test]
async fn finds_the_right_chunk_in_a_mixed_corpus() {
    for h in stores().await {
        let memory = h.memory().await;
        memory
            .ingest_file(h.write("guide.md", GUIDE), Default::default())
            .await
            .unwrap();
        memory
            .ingest_file(h.write("volcano.html", HTML), Default::default())
            .await
            .unwrap();
        memory
            .ingest_file(
                h.write("chat.json", conversation_json(0, 8)),
                Default::default(),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();

        let env = memory
            .search("most active volcano in Europe", 3)
            .await
            .unwrap();
        assert_eq!(top_title(&env), "Volcano facts", "{}", h.kind);
        assert!(env.results[0].text.contains("Mount Etna"));
        assert!(env.results[0].scores.lexical.is_some());
        // The claims' full-text rows are written with the extraction: a claim
        // about Etna is found through the lexical channel too.
        let claims = memory.search_claims("Etna volcano", 5).await.unwrap();
        assert!(
            claims
                .results
                .iter()
                .any(|c| c.text.contains("Etna") && c.scores.lexical.is_some()),
            "{}",
            h.kind
        );

        let env = memory
            .search("how much sunlight do tomatoes need", 3)
            .await
            .unwrap();
        assert_eq!(top_title(&env), "Gardening guide");
        assert!(env.results[0].text.contains("six hours"));
        assert_eq!(
            env.results[0].section_path,
            vec!["Gardening guide".to_string()]
        );

        let env = memory.search("chess tournament Oslo", 3).await.unwrap();
        assert!(env.results[0].text.contains("chess tournament"));
        assert!(!env.results[0].event_ids.is_empty());

        // The envelope is honest about its state.
        assert_eq!(env.contract, "rememberstack.envelope/v1");
        assert!(env.freshness.semantic.ready);
        assert!(env.freshness.pending_work.is_empty());
        assert_eq!(env.channels["semantic"].status, "ok");
    }
}

#[tokio::test]
async fn reference_sections_are_dropped_unless_asked_for() {
    for h in stores().await {
        let memory = h.memory().await;
        memory
            .ingest_text(GUIDE, IngestOptions::new("guide"))
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let default = memory
            .search("Royal Horticultural Society leaflet", 10)
            .await
            .unwrap();
        assert!(
            default
                .results
                .iter()
                .all(|r| r.section_role == SectionRole::Body)
        );
        let mut req = SearchRequest::new("ignored", "Royal Horticultural Society leaflet", 10);
        req.roles = Some(vec![SectionRole::Body, SectionRole::References]);
        let with_refs = memory.search_with(req).await.unwrap();
        assert_eq!(with_refs.results[0].section_role, SectionRole::References);
    }
}

#[tokio::test]
async fn pages_continue_without_repeats() {
    for h in stores().await {
        let memory = h.memory().await;
        for i in 0..12 {
            memory
                .ingest_text(
                    format!("Report {i}: the quarterly numbers for region {i} look steady."),
                    IngestOptions::new(format!("report-{i}")),
                )
                .await
                .unwrap();
        }
        memory.process_until_idle().await.unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let mut req = SearchRequest::new("ignored", "quarterly numbers region", 5);
            req.cursor = cursor.clone();
            let env = memory.search_with(req).await.unwrap();
            pages += 1;
            for r in &env.results {
                assert!(seen.insert(r.chunk_id), "repeated result across pages");
            }
            assert_eq!(env.truncation.returned, env.results.len());
            if !env.truncation.more_available {
                break;
            }
            cursor = env.truncation.continuation.clone();
            assert!(pages < 10);
        }
        assert_eq!(seen.len(), 12);
        assert_eq!(pages, 3);
        // A cursor is bound to its query.
        let mut req = SearchRequest::new("ignored", "something else", 5);
        req.cursor = Some(
            memory
                .search("quarterly numbers region", 5)
                .await
                .unwrap()
                .truncation
                .continuation
                .unwrap(),
        );
        assert!(memory.search_with(req).await.is_err());
    }
}

#[tokio::test]
async fn changing_the_embedder_makes_semantic_unready_until_reembedded() {
    for h in stores().await {
        let memory = h.memory().await;
        memory
            .ingest_text(GUIDE, IngestOptions::new("guide"))
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        assert!(memory.status().await.unwrap().semantic.ready);

        // Reopen with another embedder generation: the open enqueues re-embedding.
        let other = h
            .memory_with(
                test_config(),
                Some(Arc::new(HashingEmbedder::new(64))),
                None,
            )
            .await;
        let status = other.status().await.unwrap();
        assert_eq!(status.embedder, "hashing/feature-hash-v1/d64/v1");
        assert!(!status.semantic.ready);
        assert_eq!(status.semantic.missing_vectors, status.semantic.chunks);
        assert!(status.ledger["e1.embed"]["pending"] > 0);
        let env = other.search("tomatoes sunlight", 3).await.unwrap();
        assert_eq!(env.channels["semantic"].status, "partial");
        assert_eq!(
            env.channels["semantic"].candidates, 0,
            "generations never mix"
        );
        assert!(!env.results.is_empty(), "lexical still answers");

        other.process_until_idle().await.unwrap();
        let env = other.search("tomatoes sunlight", 3).await.unwrap();
        assert!(env.freshness.semantic.ready);
        assert_eq!(env.channels["semantic"].status, "ok");
        assert!(env.channels["semantic"].candidates > 0);
    }
}

#[tokio::test]
async fn appended_conversation_reuses_unchanged_chunks() {
    for h in stores().await {
        let memory = h.memory().await;
        let path = h.write("long.json", conversation_json(0, 60));
        let v1 = memory.ingest_file(&path, Default::default()).await.unwrap();
        memory.process_until_idle().await.unwrap();
        let ns = h.store.namespace("default").await.unwrap().unwrap().id;
        let v1_embedded = h
            .store
            .barrier(ns, v1.version_id, Stage::Embed)
            .await
            .unwrap();

        // Append five turns: a new version of the same lineage.
        let mut all: serde_json::Value = serde_json::from_str(&conversation_json(0, 65)).unwrap();
        all["session_time"] = serde_json::json!("2023-05-08T13:56:00Z");
        std::fs::write(&path, all.to_string()).unwrap();
        let v2 = memory.ingest_file(&path, Default::default()).await.unwrap();
        assert_eq!(v2.document_id, v1.document_id);
        memory.process_until_idle().await.unwrap();
        let detail = memory.document(v2.document_id).await.unwrap();
        let v2_embedded = h
            .store
            .barrier(ns, v2.version_id, Stage::Embed)
            .await
            .unwrap();
        assert!(v2_embedded.is_complete());
        // Only the chunks at the end were embedded again.
        let chunks = detail.chunk_count as u64;
        assert!(chunks >= 4, "{chunks} chunks");
        assert!(
            v2_embedded.total * 2 <= chunks,
            "re-embedded {} of {} chunks (first version embedded {})",
            v2_embedded.total,
            chunks,
            v1_embedded.total
        );
        let env = memory.search("Turn 63", 3).await.unwrap();
        assert!(
            env.results
                .iter()
                .any(|r| r.event_ids.contains(&"D1:63".to_string()))
        );
    }
}

#[tokio::test]
async fn lexical_scores_do_not_depend_on_other_namespaces() {
    for h in stores().await {
        let a = h.memory().await.with_namespace("orchard").unwrap();
        a.ingest_text(
            "Apples and pears grow in the orchard.",
            IngestOptions::new("o"),
        )
        .await
        .unwrap();
        a.ingest_text("Bananas ripen in the sun.", IngestOptions::new("b"))
            .await
            .unwrap();
        a.process_until_idle().await.unwrap();
        let lexical = |env: &Envelope<ChunkResult>| {
            env.results
                .iter()
                .map(|r| r.scores.lexical.as_ref().map(|s| s.score))
                .collect::<Vec<_>>()
        };
        let before = lexical(&a.search("apples orchard", 5).await.unwrap());
        assert!(before[0].is_some());

        let b = a.with_namespace("elsewhere").unwrap();
        for i in 0..30 {
            b.ingest_text(
                format!("Apples, apples and more apples: orchard report {i}."),
                IngestOptions::new(format!("r{i}")),
            )
            .await
            .unwrap();
        }
        b.process_until_idle().await.unwrap();
        let after = lexical(&a.search("apples orchard", 5).await.unwrap());
        assert_eq!(
            before, after,
            "another namespace's corpus changed this one's BM25"
        );
    }
}

#[tokio::test]
async fn the_semantic_channel_sees_every_write_after_a_cached_read() {
    for h in stores().await {
        let memory = h.memory().await;
        memory
            .ingest_text(
                "# Tides\n\nThe harbour floods at spring tide.\n",
                IngestOptions::new("a"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let semantic_ids = |env: &Envelope<ChunkResult>| -> Vec<String> {
            env.results
                .iter()
                .filter(|r| r.scores.semantic.is_some())
                .map(|r| r.source_ref.clone())
                .collect()
        };
        let query = "volcanic eruption lava";
        let first = memory.search(query, 5).await.unwrap();
        // The same read again is answered from the cached candidates, identically.
        assert_eq!(memory.search(query, 5).await.unwrap(), first, "{}", h.kind);
        assert_eq!(semantic_ids(&first), vec!["a".to_string()]);
        // A new document becomes a semantic candidate at once: the write moved the
        // namespace's change stamp.
        memory
            .ingest_text(
                "# Etna\n\nA volcanic eruption sent lava down the slope.\n",
                IngestOptions::new("b"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let after = memory.search(query, 5).await.unwrap();
        let ids = semantic_ids(&after);
        assert_eq!(ids.len(), 2, "{}: {ids:?}", h.kind);
        assert_eq!(ids[0], "b");
        // Claims and facts too.
        let claims = memory.search_claims(query, 5).await.unwrap();
        assert!(
            claims.results.iter().any(|c| c.source_ref == "b"),
            "{}",
            h.kind
        );
    }
}

/// The lexical channel ranks the full-text index first and checks eligibility for
/// the best rows only: when the best matches are all ineligible (deleted
/// documents), the pass widens until an eligible row is found, so the answer is
/// the one ranking every eligible match would give.
#[tokio::test]
async fn lexical_ranking_reaches_past_many_better_ineligible_matches() {
    for h in stores().await {
        let memory = h.memory().await;
        // More better-ranked ineligible matches than the first pass ranks (twice
        // the channel depth of 50).
        let mut stripes = Vec::new();
        for i in 0..120 {
            let r = memory
                .ingest_text(
                    &format!("# Stripes {i}\n\nZebra zebra zebra crossing number {i}.\n"),
                    IngestOptions::new(format!("stripes/{i}")),
                )
                .await
                .unwrap();
            stripes.push(r.document_id);
        }
        memory.process_until_idle().await.unwrap();
        for d in stripes {
            memory.delete_document(d).await.unwrap();
        }
        let kept = memory
            .ingest_text(
                "# Savanna\n\nA long walk across the plains, past acacia trees and dry \
                 riverbeds, where at dusk a single zebra appeared near the water hole.\n",
                IngestOptions::new("savanna"),
            )
            .await
            .unwrap();
        memory.process_until_idle().await.unwrap();
        let hits = memory.search("zebra", 1).await.unwrap();
        assert_eq!(hits.results.len(), 1, "{}", h.kind);
        assert_eq!(hits.results[0].document_id, kept.document_id, "{}", h.kind);
        assert!(
            hits.results[0].scores.lexical.is_some(),
            "{}: found by the lexical channel: {:?}",
            h.kind,
            hits.results[0].scores
        );
    }
}
