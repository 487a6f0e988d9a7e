//! Compaction of superseded conversation versions: an append makes a new version
//! holding every message, so the bytes and derived rows of the versions before it
//! go once they can no longer be needed (the rules are on
//! `MemoryStore::compact_conversation`). The statements and the compaction of
//! one version are shared with the SQLite store (`rememberstack_sql::compact`);
//! here go the row locks. Lexical rows go with their chunks (`ON DELETE CASCADE`)
//! and originals are rows of `content_objects`.

use crate::forget::{SqlConn, Tx};
use crate::{PgStore, db_err};
use rememberstack_core::Result;
use rememberstack_core::ids::*;
use rememberstack_core::time::Timestamp;
use rememberstack_sql::compact::{self as sql, compact_version};
use rememberstack_sql::{Dialect, exec};
use sqlx::{AssertSqlSafe, Row};
use std::collections::HashSet;

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
            compact_version(&mut SqlConn(&mut tx), &ns_s, &c.id, c.unstarted, now).await?;
            // The original goes unless a retained version holds the same bytes.
            let shared = sqlx::query(AssertSqlSafe(Dialect::Postgres.render(sql::BYTES_RETAINED)))
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
    let Some(d) = sqlx::query(AssertSqlSafe(
        Dialect::Postgres.render(&format!("{} FOR UPDATE", sql::LINEAGE)),
    ))
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
        Some(v) => sqlx::query(AssertSqlSafe(
            Dialect::Postgres.render(sql::EXTRACTION_OPEN),
        ))
        .bind(ns)
        .bind(v)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .is_none(),
        None => false,
    };
    let versions = sqlx::query(AssertSqlSafe(Dialect::Postgres.render(sql::SUPERSEDED)))
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
        let open: Vec<String> = sqlx::query_scalar(AssertSqlSafe(
            Dialect::Postgres.render(&format!("{} FOR UPDATE SKIP LOCKED", sql::OPEN_WORK)),
        ))
        .bind(ns)
        .bind(&id)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err)?;
        let all_open: i64 = sqlx::query_scalar(AssertSqlSafe(
            Dialect::Postgres.render(&format!("SELECT COUNT(*) FROM ({}) open", sql::OPEN_WORK)),
        ))
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
