//! Compaction of superseded conversation versions: an append makes a new version
//! holding every message, so the bytes and derived rows of the versions before it
//! go once they can no longer be needed (the rules are on
//! `MemoryStore::compact_conversation`). The statements and the compaction of
//! one version are shared with the PostgreSQL store (`rememberstack_sql::compact`);
//! here go the choice of the next version, the transaction and the blob files.

use crate::conns::Tx;
use crate::forget::SqlConn;
use crate::{SqliteStore, db_err};
use rememberstack_core::Result;
use rememberstack_core::ids::*;
use rememberstack_core::time::Timestamp;
use rememberstack_sql::compact::{self as sql, compact_version};
use rememberstack_sql::exec;
use sqlx::Row;
use std::collections::HashSet;

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
            compact_version(&mut SqlConn(&mut tx), &ns_s, &c.id, c.unstarted, now).await?;
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
                exec(
                    &mut SqlConn(&mut tx),
                    sql::DELETE_CONTENT,
                    &[(&ns_s).into(), (&c.sha256).into()],
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
