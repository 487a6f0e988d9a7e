//! Compaction of superseded conversation versions: an append makes a new version
//! holding every message, so the bytes and derived rows of the versions before it
//! go once they can no longer be needed (the rules are on
//! `MemoryStore::compact_conversation`).

use crate::conns::Tx;
use crate::forget::{
    IN_LIST, delete_fts, delete_unused_vectors, exec, json_list, records, strings,
};
use crate::{SqliteStore, db_err, fts_table};
use rememberstack_core::Result;
use rememberstack_core::ids::*;
use rememberstack_core::time::{Timestamp, to_rfc3339};
use sqlx::Row;
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

impl SqliteStore {
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
            let mut tx = self.write.begin().await.map_err(db_err)?;
            let Some(c) = next_candidate(&mut tx, &ns_s, &doc_s, &mut skip).await? else {
                return Ok(compacted);
            };
            compact_version(&mut tx, &ns_s, &c, now).await?;
            // The bytes go last, under the write lock: an ingest writes its blob
            // inside its own write transaction, so no ingest of the same bytes can
            // slip between this check and the commit. A commit that fails after the
            // removal leaves a superseded version without bytes nobody reads, and the
            // next call compacts it.
            let shared = sqlx::query(
                "SELECT 1 FROM document_versions WHERE namespace_id = ? AND content_sha256 = ?
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
                self.blobs.remove(&ns_s, &c.sha256).await?;
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
    let Some(d) = sqlx::query(
        "SELECT d.source_kind, d.deleted_at,
                (SELECT ordinal FROM document_versions WHERE namespace_id = d.namespace_id
                   AND id = d.current_version_id) AS current_ordinal,
                d.current_version_id,
                (SELECT ordinal FROM document_versions WHERE namespace_id = d.namespace_id
                   AND id = d.latest_version_id) AS latest_ordinal
         FROM documents d WHERE d.namespace_id = ? AND d.id = ?",
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
    let latest: i64 = d.get::<Option<i64>, _>("latest_ordinal").unwrap_or(0);
    let current: Option<i64> = d.get("current_ordinal");
    let current_id: Option<String> = d.get("current_version_id");
    // Reuse reads the extractions of earlier versions: nothing older than the
    // current version goes before the current version's extraction is complete.
    let current_extracted = match &current_id {
        Some(v) => sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT 1 FROM processing_state WHERE namespace_id = ? AND version_id = ?
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
         WHERE v.namespace_id = ? AND v.document_id = ? AND v.compacted_at IS NULL AND v.ordinal < ?
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
        let open: Vec<String> = sqlx::query_scalar(
            "SELECT status FROM processing_state WHERE namespace_id = ? AND version_id = ?
               AND status NOT IN ('done', 'dead_letter')",
        )
        .bind(ns)
        .bind(&id)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?;
        let prepared = v.get::<i64, _>("prepared") != 0;
        // Never started: no prepared structure and nothing leased (a worker that
        // holds an item is never raced; its version waits for the next call).
        let unstarted = !prepared && open.iter().all(|s| s == "pending");
        let processed = prepared
            && open.is_empty()
            && current_extracted
            && current.is_some_and(|c| v.get::<i64, _>("ordinal") < c);
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
        "SELECT seq, id, embedding_key FROM chunks WHERE namespace_id = ? AND version_id = ?",
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
         WHERE cc.namespace_id = ? AND cc.version_id = ?
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
    let mut seqs = Vec::new();
    let mut ids = Vec::new();
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for ((seq, id), key) in chunks.seqs.iter().zip(&chunks.ids).zip(&chunks.keys) {
        if !keep.contains(id) {
            seqs.push(*seq);
            ids.push(id.clone());
            keys.insert(key.clone());
        }
    }
    let idlist = json_list(&ids);
    delete_fts(tx, &fts_table(ns)?, &seqs).await?;
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
        "UPDATE representations SET markdown = '', turns_json = '[]'
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
    exec(
        tx,
        "UPDATE document_versions SET compacted_at = ? WHERE namespace_id = ? AND id = ?",
        &[&to_rfc3339(&now), ns, v],
    )
    .await?;
    Ok(())
}
