//! Compaction of superseded conversation versions: an append makes a new version
//! holding every message, so the bytes and derived rows of the versions before it
//! go once they can no longer be needed (the rules are on
//! `MemoryStore::compact_conversation`). The statements are shared with the
//! PostgreSQL store (`rememberstack_core::compact`); here go the FTS rows and blob
//! files.

use crate::conns::Tx;
use crate::forget::{
    IN_LIST, delete_fts, delete_unused_vectors, exec, json_list, records, strings,
};
use crate::{SqliteStore, db_err, fts_table};
use rememberstack_core::Result;
use rememberstack_core::compact as sql;
use rememberstack_core::ids::*;
use rememberstack_core::time::{Timestamp, to_rfc3339};
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet, HashSet};

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
            let shared = sqlx::query(sql::BYTES_RETAINED)
                .bind(&ns_s)
                .bind(&c.sha256)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?
                .is_some();
            if !shared {
                exec(&mut tx, sql::DELETE_CONTENT, &[&ns_s, &c.sha256]).await?;
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
    let Some(d) = sqlx::query(sql::LINEAGE)
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
        Some(v) => sqlx::query(sql::EXTRACTION_OPEN)
            .bind(ns)
            .bind(v)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_err)?
            .is_none(),
        None => false,
    };
    let versions = sqlx::query(sql::SUPERSEDED)
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
        let open: Vec<String> = sqlx::query_scalar(sql::OPEN_WORK)
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
        exec(tx, sql::WITHDRAW_UNSTARTED, &[ns, v]).await?;
    }
    let chunks = records(tx, sql::VERSION_CHUNKS, &[ns, v]).await?;
    // (a) Sources of fresh extractions whose input a retained version still uses:
    // the next version reuses them instead of extracting again.
    let mut keep: BTreeSet<String> = strings(tx, sql::REUSE_SOURCES, &[ns, v])
        .await?
        .into_iter()
        .collect();
    // (b) Every claim keeps at least one occurrence: a claim found nowhere outside
    // this version keeps one of its chunks here.
    let mut only_here: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in sqlx::query(sql::ONLY_HERE)
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
    exec(tx, &sql::delete_occurrences(IN_LIST), &[ns, &idlist]).await?;
    exec(tx, &sql::delete_chunks(IN_LIST), &[ns, &idlist]).await?;
    for statement in [
        sql::DELETE_REUSED_DECISIONS,
        sql::DELETE_BLOCKS,
        sql::BLANK_REPRESENTATION,
        sql::DELETE_DONE_WORK,
    ] {
        exec(tx, statement, &[ns, v]).await?;
    }
    delete_unused_vectors(tx, ns, &keys).await?;
    exec(tx, sql::MARK_COMPACTED, &[&to_rfc3339(&now), ns, v]).await?;
    Ok(())
}
