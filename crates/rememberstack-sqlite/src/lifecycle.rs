//! Lifecycle writes: document deletion (D135).

use crate::{SqliteStore, db_err, parse_id, ts};
use rememberstack_core::Result;
use rememberstack_core::ids::*;
use rememberstack_core::store::{DeletionOutcome, DocumentDeletion};
use rememberstack_core::time::{Timestamp, to_rfc3339};
use sqlx::{Row, Sqlite, Transaction};
use std::collections::BTreeSet;

/// The reason recorded on a fact closed because its only current support was removed.
pub(crate) const SOURCE_REMOVAL: &str = "retracted_source_removal";

impl SqliteStore {
    pub(crate) async fn delete_document_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<DeletionOutcome> {
        let ns_s = ns.to_string();
        let doc_s = doc.to_string();
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let Some(row) =
            sqlx::query("SELECT deleted_at FROM documents WHERE namespace_id = ? AND id = ?")
                .bind(&ns_s)
                .bind(&doc_s)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?
        else {
            return Ok(DeletionOutcome::NotFound);
        };
        let first = row.get::<Option<String>, _>("deleted_at").is_none();
        // As stored (milliseconds), so the answer equals what later reads return.
        let deleted_at = match row.get::<Option<String>, _>("deleted_at") {
            Some(s) => ts(&s)?,
            None => ts(&at)?,
        };
        let tomb = to_rfc3339(&deleted_at);
        // The tombstone: no version of the lineage is served any more.
        sqlx::query(
            "UPDATE documents SET deleted_at = COALESCE(deleted_at, ?), current_version_id = NULL,
                 updated_at = ?
             WHERE namespace_id = ? AND id = ?",
        )
        .bind(&tomb)
        .bind(&at)
        .bind(&ns_s)
        .bind(&doc_s)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(
            "UPDATE document_versions SET deleted_at = ?
             WHERE namespace_id = ? AND document_id = ? AND deleted_at IS NULL",
        )
        .bind(&tomb)
        .bind(&ns_s)
        .bind(&doc_s)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let claims_retired = retire_claims(&mut tx, &ns_s, &doc_s, &at).await?;
        let (closed, relations_closed, observations_closed, touched) =
            close_unsupported(&mut tx, &ns_s, &doc_s, &at).await?;
        if !first && claims_retired == 0 && closed.is_empty() {
            // Nothing changed: the episode was already complete.
            return Ok(DeletionOutcome::AlreadyDeleted);
        }
        sqlx::query(
            "INSERT INTO document_deletions (namespace_id, document_id, deleted_at, claims_retired,
                 relations_closed, observations_closed, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&ns_s)
        .bind(&doc_s)
        .bind(&tomb)
        .bind(claims_retired as i64)
        .bind(relations_closed as i64)
        .bind(observations_closed as i64)
        .bind(&at)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(DeletionOutcome::Deleted(DocumentDeletion {
            doc_id: doc,
            deleted_at,
            claims_retired,
            relations_closed,
            observations_closed,
            closed_facts: closed,
            touched_entities: touched.into_iter().collect(),
        }))
    }
}

/// Retire every current claim of the lineage, recording each transition.
async fn retire_claims(
    tx: &mut Transaction<'_, Sqlite>,
    ns: &str,
    doc: &str,
    at: &str,
) -> Result<u64> {
    sqlx::query(
        "INSERT INTO claim_currency_events (namespace_id, claim_id, is_current, reason, version_id, created_at)
         SELECT namespace_id, id, 0, 'document_deleted', NULL, ?
         FROM claims WHERE namespace_id = ? AND document_id = ? AND is_current = 1",
    )
    .bind(at)
    .bind(ns)
    .bind(doc)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    let done = sqlx::query(
        "UPDATE claims SET is_current = 0
         WHERE namespace_id = ? AND document_id = ? AND is_current = 1",
    )
    .bind(ns)
    .bind(doc)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(done.rows_affected())
}

/// Close every live fact a claim of the lineage evidences (either stance) that has
/// no current supporting testimony left. Returns the closed facts, how many were
/// relations and observations, and the entities they name.
async fn close_unsupported(
    tx: &mut Transaction<'_, Sqlite>,
    ns: &str,
    doc: &str,
    at: &str,
) -> Result<(Vec<FactId>, u64, u64, BTreeSet<EntityId>)> {
    let rows = sqlx::query(
        "SELECT f.id, f.kind, f.subject_id, f.object_id FROM facts f
         WHERE f.namespace_id = ? AND f.invalidated_at IS NULL
           AND f.id IN (SELECT e.fact_id FROM fact_evidence e
                        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                        WHERE e.namespace_id = ? AND c.document_id = ?)
           AND NOT EXISTS (SELECT 1 FROM fact_evidence e
                           JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                           WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id
                             AND e.stance = 'support' AND c.is_current = 1)",
    )
    .bind(ns)
    .bind(ns)
    .bind(doc)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    let mut closed = Vec::with_capacity(rows.len());
    let (mut relations, mut observations) = (0, 0);
    let mut touched = BTreeSet::new();
    for r in rows {
        let id: String = r.get("id");
        let kind: String = r.get("kind");
        if kind == "relation" {
            relations += 1;
        } else {
            observations += 1;
        }
        touched.insert(parse_id(&r.get::<String, _>("subject_id"))?);
        if let Some(o) = r.get::<Option<String>, _>("object_id") {
            touched.insert(parse_id(&o)?);
        }
        sqlx::query(
            "UPDATE facts SET invalidated_at = ?, closed_reason = ?, updated_at = ?
             WHERE namespace_id = ? AND id = ?",
        )
        .bind(at)
        .bind(SOURCE_REMOVAL)
        .bind(at)
        .bind(ns)
        .bind(&id)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        sqlx::query(
            "INSERT INTO fact_events (namespace_id, fact_id, event, reason, detail_json, created_at)
             VALUES (?, ?, 'closed', ?, ?, ?)",
        )
        .bind(ns)
        .bind(&id)
        .bind(SOURCE_REMOVAL)
        .bind(serde_json::json!({ "document_id": doc }).to_string())
        .bind(at)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        closed.push(parse_id(&id)?);
    }
    Ok((closed, relations, observations, touched))
}
