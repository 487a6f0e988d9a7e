//! Compaction of superseded conversation versions: an append makes a new version
//! holding every message, so the bytes and derived rows of the versions before it
//! go once they can no longer be needed (the rules are on
//! `MemoryStore::compact_conversation`). The SQLite store's compaction, statement
//! for statement (`rememberstack-sqlite/src/compact.rs`); lexical rows go with their
//! chunks (`ON DELETE CASCADE`) and originals are rows of `content_objects`.

use crate::forget::{IN_LIST, Tx, delete_unused_vectors, exec, json_list, records, strings};
use crate::{PgStore, db_err};
use rememberstack_core::Result;
use rememberstack_core::ids::*;
use rememberstack_core::time::Timestamp;
use sqlx::{AssertSqlSafe, Row};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Stages whose work reads earlier versions' extractions (reuse): the current
/// version must be past them before anything older is compacted.
const EXTRACTION_STAGES: &str = "('e0.prepare', 'e1.chunk', 'e2.extract')";

/// One version chosen for compaction.
struct Candidate {
    id: String,
    sha256: String,
    /// Its processing never began: its pending items are withdrawn.
    unstarted: bool,
}

impl PgStore {
    pub(crate) async fn compact_conversation_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<u64> {
        let (ns_s, doc_s) = (ns.to_string(), doc.to_string());
        let mut skip: HashSet<String> = HashSet::new();
        let mut compacted = 0;
        loop {
            // One version per write transaction: a crash leaves each version whole
            // or compacted, and the next call finishes the rest.
            let mut tx = self.pool().begin().await.map_err(db_err)?;
            let Some(c) = next_candidate(&mut tx, &ns_s, &doc_s, &mut skip).await? else {
                return Ok(compacted);
            };
            compact_version(&mut tx, &ns_s, &c, now).await?;
            // The original goes unless a retained version holds the same bytes.
            let shared = sqlx::query(
                "SELECT 1 FROM document_versions WHERE namespace_id = $1 AND content_sha256 = $2
                   AND compacted_at IS NULL AND admission <> 'revoked' LIMIT 1",
            )
            .bind(&ns_s)
            .bind(&c.sha256)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
            .is_some();
            if !shared {
                exec(
                    &mut tx,
                    "DELETE FROM content_objects WHERE namespace_id = ? AND sha256 = ?",
                    &[&ns_s, &c.sha256],
                )
                .await?;
            }
            tx.commit().await.map_err(db_err)?;
            compacted += 1;
        }
    }
}

/// The oldest version of the lineage that may be compacted now, if any.
async fn next_candidate(
    tx: &mut Tx<'_>,
    ns: &str,
    doc: &str,
    skip: &mut HashSet<String>,
) -> Result<Option<Candidate>> {
    // The lineage row is locked: compactions of one lineage, and appends to it,
    // take turns.
    let Some(d) = sqlx::query(
        "SELECT d.source_kind, d.deleted_at,
                (SELECT ordinal FROM document_versions WHERE namespace_id = d.namespace_id
                   AND id = d.current_version_id) AS current_ordinal,
                d.current_version_id,
                (SELECT ordinal FROM document_versions WHERE namespace_id = d.namespace_id
                   AND id = d.latest_version_id) AS latest_ordinal
         FROM documents d WHERE d.namespace_id = $1 AND d.id = $2
         FOR UPDATE",
    )
    .bind(ns)
    .bind(doc)
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    else {
        return Ok(None);
    };
    if d.get::<String, _>("source_kind") != "conversation"
        || d.get::<Option<String>, _>("deleted_at").is_some()
    {
        return Ok(None);
    }
    let latest: i32 = d.get::<Option<i32>, _>("latest_ordinal").unwrap_or(0);
    let current: Option<i32> = d.get("current_ordinal");
    let current_id: Option<String> = d.get("current_version_id");
    // Reuse reads the extractions of earlier versions: nothing older than the
    // current version goes before the current version's extraction is complete.
    let current_extracted = match &current_id {
        Some(v) => sqlx::query(AssertSqlSafe(format!(
            "SELECT 1 FROM processing_state WHERE namespace_id = $1 AND version_id = $2
               AND stage IN {EXTRACTION_STAGES} AND status NOT IN ('done', 'dead_letter') LIMIT 1"
        )))
        .bind(ns)
        .bind(v)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .is_none(),
        None => false,
    };
    let versions = sqlx::query(
        "SELECT v.id, v.ordinal, v.content_sha256,
                EXISTS (SELECT 1 FROM representations r
                        WHERE r.namespace_id = v.namespace_id AND r.version_id = v.id) AS prepared
         FROM document_versions v
         WHERE v.namespace_id = $1 AND v.document_id = $2 AND v.compacted_at IS NULL AND v.ordinal < $3
         ORDER BY v.ordinal",
    )
    .bind(ns)
    .bind(doc)
    .bind(latest)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    for v in versions {
        let id: String = v.get("id");
        if skip.contains(&id) {
            continue;
        }
        // Locked, so a worker cannot lease one of them between this look and the
        // withdrawal below; rows another transaction holds are skipped, not waited
        // for (a worker committing one of them may be waiting for the lineage row
        // held here), and the version then waits for the next call.
        let open: Vec<String> = sqlx::query_scalar(
            "SELECT status FROM processing_state WHERE namespace_id = $1 AND version_id = $2
               AND status NOT IN ('done', 'dead_letter') FOR UPDATE SKIP LOCKED",
        )
        .bind(ns)
        .bind(&id)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?;
        let all_open: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM processing_state WHERE namespace_id = $1 AND version_id = $2
               AND status NOT IN ('done', 'dead_letter')",
        )
        .bind(ns)
        .bind(&id)
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)?;
        if all_open != open.len() as i64 {
            skip.insert(id);
            continue;
        }
        let prepared: bool = v.get("prepared");
        // Never started: no prepared structure and nothing leased (a worker that
        // holds an item is never raced; its version waits for the next call).
        let unstarted = !prepared && open.iter().all(|s| s == "pending");
        let processed = prepared
            && open.is_empty()
            && current_extracted
            && current.is_some_and(|c| v.get::<i32, _>("ordinal") < c);
        if unstarted || processed {
            return Ok(Some(Candidate {
                id,
                sha256: v.get("content_sha256"),
                unstarted,
            }));
        }
        skip.insert(id);
    }
    Ok(None)
}

/// Remove one version's bytes-derived rows, keeping what receipts, audit and reuse
/// need (see `MemoryStore::compact_conversation`).
async fn compact_version(tx: &mut Tx<'_>, ns: &str, c: &Candidate, now: Timestamp) -> Result<()> {
    let v = c.id.as_str();
    if c.unstarted {
        exec(
            tx,
            "DELETE FROM processing_state WHERE namespace_id = ? AND version_id = ? AND status = 'pending'",
            &[ns, v],
        )
        .await?;
    }
    let chunks = records(
        tx,
        "SELECT id, embedding_key FROM chunks WHERE namespace_id = ? AND version_id = ?",
        &[ns, v],
    )
    .await?;
    // (a) Sources of fresh extractions whose input a retained version still uses:
    // the next version reuses them instead of extracting again.
    let mut keep: BTreeSet<String> = strings(
        tx,
        "SELECT DISTINCT d.chunk_id FROM claim_extraction_decisions d
         WHERE d.namespace_id = ? AND d.version_id = ? AND d.kind <> 'reused'
           AND EXISTS (SELECT 1 FROM claim_extraction_decisions r
               JOIN document_versions rv ON rv.namespace_id = r.namespace_id AND rv.id = r.version_id
               WHERE r.namespace_id = d.namespace_id AND r.document_id = d.document_id
                 AND r.extraction_input_hash = d.extraction_input_hash
                 AND r.version_id <> d.version_id AND rv.compacted_at IS NULL)",
        &[ns, v],
    )
    .await?
    .into_iter()
    .collect();
    // (b) Every claim keeps at least one occurrence: a claim found nowhere outside
    // this version keeps one of its chunks here.
    let mut only_here: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in sqlx::query(
        "SELECT cc.claim_id, cc.chunk_id FROM chunk_claims cc
         WHERE cc.namespace_id = $1 AND cc.version_id = $2
           AND NOT EXISTS (SELECT 1 FROM chunk_claims o WHERE o.namespace_id = cc.namespace_id
               AND o.claim_id = cc.claim_id AND o.version_id <> cc.version_id)
         ORDER BY cc.claim_id, cc.chunk_id",
    )
    .bind(ns)
    .bind(v)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?
    {
        only_here
            .entry(r.get("claim_id"))
            .or_default()
            .push(r.get("chunk_id"));
    }
    for chunks_of_claim in only_here.values() {
        if !chunks_of_claim.iter().any(|c| keep.contains(c)) {
            keep.insert(chunks_of_claim[0].clone());
        }
    }
    let mut ids = Vec::new();
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for (id, key) in chunks.ids.iter().zip(&chunks.keys) {
        if !keep.contains(id) {
            ids.push(id.clone());
            keys.insert(key.clone());
        }
    }
    let idlist = json_list(&ids);
    exec(
        tx,
        &format!("DELETE FROM chunk_claims WHERE namespace_id = ? AND chunk_id {IN_LIST}"),
        &[ns, &idlist],
    )
    .await?;
    exec(
        tx,
        &format!("DELETE FROM chunks WHERE namespace_id = ? AND id {IN_LIST}"),
        &[ns, &idlist],
    )
    .await?;
    // Reuse decisions only point at another chunk's extraction; the fresh ones stay
    // (the extraction ledger of what was decided).
    exec(
        tx,
        "DELETE FROM claim_extraction_decisions
         WHERE namespace_id = ? AND version_id = ? AND kind = 'reused'",
        &[ns, v],
    )
    .await?;
    exec(
        tx,
        "DELETE FROM blocks WHERE namespace_id = ? AND version_id = ?",
        &[ns, v],
    )
    .await?;
    // Sections and the representation's title stay: the kept chunks are read with them.
    exec(
        tx,
        "UPDATE representations SET markdown = '', turns_json = '[]'::jsonb
         WHERE namespace_id = ? AND version_id = ?",
        &[ns, v],
    )
    .await?;
    // Done work goes, unless a transcript or a cost row names it; dead letters stay
    // for `status` and `retry`.
    exec(
        tx,
        "DELETE FROM processing_state WHERE namespace_id = ? AND version_id = ? AND status = 'done'
           AND NOT EXISTS (SELECT 1 FROM llm_transcripts t
               WHERE t.namespace_id = processing_state.namespace_id AND t.processing_id = processing_state.id)
           AND NOT EXISTS (SELECT 1 FROM cost_ledger l
               WHERE l.namespace_id = processing_state.namespace_id AND l.processing_id = processing_state.id)",
        &[ns, v],
    )
    .await?;
    delete_unused_vectors(tx, ns, &keys).await?;
    sqlx::query(
        "UPDATE document_versions SET compacted_at = $1 WHERE namespace_id = $2 AND id = $3",
    )
    .bind(now)
    .bind(ns)
    .bind(v)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}
