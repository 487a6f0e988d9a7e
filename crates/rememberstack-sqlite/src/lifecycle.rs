//! Lifecycle writes: document deletion (D135).

use crate::conns::Tx;
use crate::forget::SqlConn;
use crate::{SqliteStore, db_err, parse_id, ts};
use rememberstack_core::facts::closed_reason::{CLAIM_RETRACTED, SOURCE_REMOVAL};
use rememberstack_core::ids::*;
use rememberstack_core::source::Admission;
use rememberstack_core::store::{
    ClaimRetraction, DeletionOutcome, DocumentDeletion, FactEvent, FactInvalidation,
    FeedbackRecord, NewNote, NoteLookup, NoteRecord, RequestKey,
};
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::facts::SUPPORTED;
use rememberstack_sql::rows::note_row;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{AssertSqlSafe, Row};
use std::collections::BTreeSet;

/// Which testimony a cascade is about.
#[derive(Clone, Copy)]
enum Scope<'a> {
    /// Every claim of a lineage.
    Document(&'a str),
    /// One claim.
    Claim(&'a str),
}

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
        let Some(row) = sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::DOCUMENT_DELETED_AT,
        ))
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
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::DELETE_DOCUMENT,
        ))
        .bind(&tomb)
        .bind(&at)
        .bind(&ns_s)
        .bind(&doc_s)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::DELETE_VERSIONS,
        ))
        .bind(&tomb)
        .bind(&ns_s)
        .bind(&doc_s)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let claims_retired = retire_claims(&mut tx, &ns_s, &doc_s, &at, "document_deleted").await?;
        let (closed, relations_closed, observations_closed, touched) =
            close_unsupported(&mut tx, &ns_s, Scope::Document(&doc_s), &at).await?;
        if !first && claims_retired == 0 && closed.is_empty() {
            // Nothing changed: the episode was already complete.
            return Ok(DeletionOutcome::AlreadyDeleted);
        }
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::INSERT_DOCUMENT_DELETION,
        ))
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
            touched_entities: touched.into_iter().collect(),
        }))
    }
}

impl SqliteStore {
    pub(crate) async fn retract_claim_impl(
        &self,
        ns: NamespaceId,
        claim: ClaimId,
        reason: &str,
        request: Option<&RequestKey>,
        now: Timestamp,
    ) -> Result<ClaimRetraction> {
        let ns_s = ns.to_string();
        let claim_s = claim.to_string();
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        if let Some(stored) = replay::<ClaimRetraction>(&mut tx, &ns_s, request).await? {
            return Ok(stored);
        }
        let Some(row) = sqlx::query(
            "SELECT c.is_current, r.reason, r.created_at FROM claims c
             LEFT JOIN claim_retractions r ON r.namespace_id = c.namespace_id AND r.claim_id = c.id
             WHERE c.namespace_id = ? AND c.id = ?",
        )
        .bind(&ns_s)
        .bind(&claim_s)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        else {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("claim {claim} not found in this namespace"),
            ));
        };
        let result = if let Some(first) = row.get::<Option<String>, _>("created_at") {
            // Already retracted: the first retraction stands.
            ClaimRetraction {
                claim_id: claim,
                retracted_at: ts(&first)?,
                reason: row.get("reason"),
                was_current: false,
                facts_recounted: 0,
                relations_closed: 0,
                observations_closed: 0,
                touched_entities: vec![],
            }
        } else {
            let was_current = row.get::<i64, _>("is_current") != 0;
            let recounted = rememberstack_sql::lifecycle::write_retraction(
                &mut SqlConn(&mut tx),
                &rememberstack_sql::lifecycle::Retraction {
                    ns: &ns_s,
                    claim: &claim_s,
                    reason,
                    request_id: request.map(|r| r.request_id.as_str()),
                    at: now,
                    was_current,
                },
            )
            .await?;
            let (_, relations_closed, observations_closed, touched) =
                close_unsupported(&mut tx, &ns_s, Scope::Claim(&claim_s), &at).await?;
            ClaimRetraction {
                claim_id: claim,
                retracted_at: ts(&at)?,
                reason: reason.to_string(),
                was_current,
                facts_recounted: recounted,
                relations_closed,
                observations_closed,
                touched_entities: touched.into_iter().collect(),
            }
        };
        remember_request(&mut tx, &ns_s, request, &result, &at).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(result)
    }

    pub(crate) async fn invalidate_fact_impl(
        &self,
        ns: NamespaceId,
        fact: FactId,
        reason: &str,
        correction: Option<&str>,
        request: Option<&RequestKey>,
        now: Timestamp,
    ) -> Result<FactInvalidation> {
        let ns_s = ns.to_string();
        let fact_s = fact.to_string();
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        if let Some(stored) = replay::<FactInvalidation>(&mut tx, &ns_s, request).await? {
            return Ok(stored);
        }
        let Some(row) = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::FACT_TO_CLOSE))
            .bind(&ns_s)
            .bind(&fact_s)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
        else {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("fact {fact} not found in this namespace"),
            ));
        };
        if row.get::<Option<String>, _>("invalidated_at").is_some() {
            let why = row
                .get::<Option<String>, _>("closed_reason")
                .unwrap_or_else(|| "a verdict".into());
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("fact {fact} is already closed ({why})"),
            ));
        }
        let closed_reason = rememberstack_sql::lifecycle::write_fact_closing(
            &mut SqlConn(&mut tx),
            &rememberstack_sql::lifecycle::FactClosing {
                ns: &ns_s,
                fact: &fact_s,
                reason,
                correction,
                request_id: request.map(|r| r.request_id.as_str()),
                at: now,
            },
        )
        .await?;
        let mut touched = vec![parse_id(&row.get::<String, _>("subject_id"))?];
        if let Some(o) = row.get::<Option<String>, _>("object_id") {
            touched.push(parse_id(&o)?);
        }
        let result = FactInvalidation {
            fact_id: fact,
            invalidated_at: ts(&at)?,
            closed_reason: closed_reason.to_string(),
            reason: reason.to_string(),
            touched_entities: touched,
        };
        remember_request(&mut tx, &ns_s, request, &result, &at).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(result)
    }

    pub(crate) async fn fact_events_impl(
        &self,
        ns: NamespaceId,
        fact: FactId,
    ) -> Result<Vec<FactEvent>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::FACT_EVENTS))
            .bind(ns.to_string())
            .bind(fact.to_string())
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(FactEvent {
                    event: r.get("event"),
                    reason: r.get("reason"),
                    detail: serde_json::from_str(&r.get::<String, _>("detail_json"))
                        .map_err(|e| Error::store(format!("corrupt fact event: {e}")))?,
                    created_at: ts(&r.get::<String, _>("created_at"))?,
                })
            })
            .collect()
    }
}

impl SqliteStore {
    pub(crate) async fn put_feedback_impl(
        &self,
        f: FeedbackRecord,
        prune_before: Timestamp,
    ) -> Result<()> {
        let mut tx = self.write.begin().await.map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::lifecycle::PRUNE_FEEDBACK))
            .bind(to_rfc3339(&prune_before))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::INSERT_FEEDBACK,
        ))
        .bind(f.namespace_id.to_string())
        .bind(f.feedback_id.to_string())
        .bind(f.receipt_id.to_string())
        .bind(&f.item_ref)
        .bind(&f.rating)
        .bind(&f.comment)
        .bind(to_rfc3339(&f.created_at))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn list_feedback_impl(
        &self,
        ns: NamespaceId,
        receipt: Option<ReceiptId>,
        limit: u32,
    ) -> Result<Vec<FeedbackRecord>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::FEEDBACK))
            .bind(ns.to_string())
            .bind(receipt.map(|r| r.to_string()))
            .bind(receipt.map(|r| r.to_string()))
            .bind(limit as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(FeedbackRecord {
                    feedback_id: uuid::Uuid::parse_str(&r.get::<String, _>("id"))
                        .map_err(|_| Error::store("corrupt feedback id"))?,
                    namespace_id: ns,
                    receipt_id: parse_id(&r.get::<String, _>("receipt_id"))?,
                    item_ref: r.get("item_ref"),
                    rating: r.get("rating"),
                    comment: r.get("comment"),
                    created_at: ts(&r.get::<String, _>("created_at"))?,
                })
            })
            .collect()
    }

    pub(crate) async fn prune_feedback_impl(&self, before: Timestamp) -> Result<u64> {
        Ok(
            sqlx::query(crate::shared(&rememberstack_sql::lifecycle::PRUNE_FEEDBACK))
                .bind(to_rfc3339(&before))
                .execute(&self.write)
                .await
                .map_err(db_err)?
                .rows_affected(),
        )
    }
}

/// The stored result of a replayed request id, or `None` for a new request.
/// The same id with another operation or input is `request_conflict`.
async fn replay<T: DeserializeOwned>(
    tx: &mut Tx<'_>,
    ns: &str,
    request: Option<&RequestKey>,
) -> Result<Option<T>> {
    let Some(request) = request else {
        return Ok(None);
    };
    let Some(row) = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::REQUEST))
        .bind(ns)
        .bind(&request.request_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
    else {
        return Ok(None);
    };
    request.check_replay(
        &row.get::<String, _>("operation"),
        &row.get::<String, _>("digest"),
    )?;
    serde_json::from_str(&row.get::<String, _>("result_json"))
        .map(Some)
        .map_err(|e| Error::store(format!("corrupt stored request result: {e}")))
}

/// Store a request's result under its id (in the request's transaction).
async fn remember_request<T: Serialize>(
    tx: &mut Tx<'_>,
    ns: &str,
    request: Option<&RequestKey>,
    result: &T,
    at: &str,
) -> Result<()> {
    let Some(request) = request else {
        return Ok(());
    };
    let json = serde_json::to_string(result).map_err(|e| Error::internal(e.to_string()))?;
    sqlx::query(crate::shared(&rememberstack_sql::lifecycle::INSERT_REQUEST))
        .bind(ns)
        .bind(&request.request_id)
        .bind(&request.operation)
        .bind(&request.digest)
        .bind(json)
        .bind(at)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Retire every current claim of the lineage, recording each transition.
async fn retire_claims(
    tx: &mut Tx<'_>,
    ns: &str,
    doc: &str,
    at: &str,
    reason: &str,
) -> Result<u64> {
    sqlx::query(
        "INSERT INTO claim_currency_events (namespace_id, claim_id, is_current, reason, version_id, created_at)
         SELECT namespace_id, id, 0, ?, NULL, ?
         FROM claims WHERE namespace_id = ? AND document_id = ? AND is_current = 1",
    )
    .bind(reason)
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
    tx: &mut Tx<'_>,
    ns: &str,
    scope: Scope<'_>,
    at: &str,
) -> Result<(Vec<FactId>, u64, u64, BTreeSet<EntityId>)> {
    let (condition, id, reason, detail) = match scope {
        Scope::Document(doc) => (
            "c.document_id = ?",
            doc,
            SOURCE_REMOVAL,
            serde_json::json!({ "document_id": doc }),
        ),
        Scope::Claim(claim) => (
            "e.claim_id = ?",
            claim,
            CLAIM_RETRACTED,
            serde_json::json!({ "claim_id": claim }),
        ),
    };
    let rows = sqlx::query(AssertSqlSafe(format!(
        "SELECT f.id, f.kind, f.subject_id, f.object_id FROM facts f
         WHERE f.namespace_id = ? AND f.invalidated_at IS NULL
           AND f.id IN (SELECT e.fact_id FROM fact_evidence e
                        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                        WHERE e.namespace_id = ? AND {condition})
           AND NOT ({SUPPORTED})"
    )))
    .bind(ns)
    .bind(ns)
    .bind(id)
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
        sqlx::query(crate::shared(&rememberstack_sql::lifecycle::CLOSE_FACT))
            .bind(at)
            .bind(reason)
            .bind(at)
            .bind(ns)
            .bind(&id)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::INSERT_FACT_CLOSED,
        ))
        .bind(ns)
        .bind(&id)
        .bind(reason)
        .bind(detail.to_string())
        .bind(at)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        closed.push(parse_id(&id)?);
    }
    Ok((closed, relations, observations, touched))
}

/// A note revision read inside a transaction.
pub(crate) async fn note_in(
    tx: &mut Tx<'_>,
    ns: &str,
    version: &str,
) -> Result<Option<NoteRecord>> {
    sqlx::query(crate::shared(
        &rememberstack_sql::lifecycle::NOTE_OF_VERSION,
    ))
    .bind(ns)
    .bind(version)
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    .as_ref()
    .map(note_row)
    .transpose()
}

/// Archive the source's promoted revisions (other than `keep`): their notes and
/// versions; a lineage served from one of them serves nothing until the next
/// promoted revision is chunked, and its claims stop being current testimony.
async fn archive_promoted(
    tx: &mut Tx<'_>,
    ns: &str,
    doc: &str,
    source_key: &str,
    keep: &str,
    at: &str,
) -> Result<()> {
    let versions: Vec<String> = sqlx::query_scalar(
        "SELECT version_id FROM notes WHERE namespace_id = ? AND source_key = ?
           AND lifecycle = 'promoted' AND version_id <> ?",
    )
    .bind(ns)
    .bind(source_key)
    .bind(keep)
    .fetch_all(&mut **tx)
    .await
    .map_err(db_err)?;
    for version in &versions {
        set_lifecycle(tx, ns, version, Admission::Archived, at).await?;
    }
    if !versions.is_empty() {
        unserve(tx, ns, doc, at, "note_archived").await?;
    }
    Ok(())
}

/// Set a revision's lifecycle (note row, bumping its version) and its version's
/// admission.
pub(crate) async fn set_lifecycle(
    tx: &mut Tx<'_>,
    ns: &str,
    version: &str,
    to: Admission,
    at: &str,
) -> Result<()> {
    sqlx::query(crate::shared(
        &rememberstack_sql::lifecycle::SET_NOTE_LIFECYCLE,
    ))
    .bind(to.as_str())
    .bind(at)
    .bind(ns)
    .bind(version)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    sqlx::query(crate::shared(&rememberstack_sql::lifecycle::SET_ADMISSION))
        .bind(to.as_str())
        .bind(ns)
        .bind(version)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// The lineage serves nothing: no current version and no current claims, when its
/// current version is no longer promoted.
pub(crate) async fn unserve(
    tx: &mut Tx<'_>,
    ns: &str,
    doc: &str,
    at: &str,
    reason: &str,
) -> Result<()> {
    let cleared = sqlx::query(crate::shared(
        &rememberstack_sql::lifecycle::CLEAR_CURRENT_VERSION_OF,
    ))
    .bind(at)
    .bind(ns)
    .bind(doc)
    .bind(ns)
    .bind(doc)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?
    .rows_affected();
    if cleared > 0 {
        retire_claims(tx, ns, doc, at, reason).await?;
    }
    Ok(())
}

/// Record a note revision with its version (inside `create_version`'s transaction).
pub(crate) async fn insert_note(
    tx: &mut Tx<'_>,
    ns: &str,
    (doc, version): (DocumentId, VersionId),
    note: &NewNote,
    admission: Admission,
    at: &str,
) -> Result<()> {
    let (doc_s, version_s) = (doc.to_string(), version.to_string());
    if admission == Admission::Promoted {
        archive_promoted(tx, ns, &doc_s, &note.source_key, &version_s, at).await?;
    }
    let inserted = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::INSERT_NOTE))
        .bind(ns)
        .bind(&doc_s)
        .bind(&version_s)
        .bind(&note.source_key)
        .bind(&note.source_revision)
        .bind(&note.content_digest)
        .bind(admission.as_str())
        .bind(note.metadata.to_string())
        .bind(at)
        .bind(at)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?
        .rows_affected();
    if inserted == 0 {
        return Err(Error::new(
            ErrorCode::Conflict,
            format!(
                "revision `{}` of `{}` was remembered concurrently; retry",
                note.source_revision, note.source_key
            ),
        ));
    }
    sqlx::query(crate::shared(
        &rememberstack_sql::lifecycle::INSERT_NOTE_REQUEST,
    ))
    .bind(ns)
    .bind(&note.request_id)
    .bind(&note.request_digest)
    .bind(&version_s)
    .bind(at)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

impl SqliteStore {
    pub(crate) async fn note_lookup_impl(
        &self,
        ns: NamespaceId,
        request_id: &str,
        source_key: &str,
        source_revision: &str,
    ) -> Result<NoteLookup> {
        let ns_s = ns.to_string();
        if let Some(r) = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::NOTE_REQUEST))
            .bind(&ns_s)
            .bind(request_id)
            .fetch_optional(&self.write)
            .await
            .map_err(db_err)?
        {
            let version: VersionId = parse_id(&r.get::<String, _>("version_id"))?;
            let note = self
                .note_impl(ns, version)
                .await?
                .ok_or_else(|| Error::store("a note request names a missing revision"))?;
            return Ok(NoteLookup::Request(r.get("digest"), note));
        }
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::NOTE_BY_REVISION,
        ))
        .bind(&ns_s)
        .bind(source_key)
        .bind(source_revision)
        .fetch_optional(&self.write)
        .await
        .map_err(db_err)?;
        Ok(match row {
            Some(r) => NoteLookup::Revision(note_row(&r)?),
            None => NoteLookup::New,
        })
    }

    pub(crate) async fn add_note_request_impl(
        &self,
        ns: NamespaceId,
        request_id: &str,
        request_digest: &str,
        version: VersionId,
        now: Timestamp,
    ) -> Result<()> {
        let done = sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::INSERT_NOTE_REQUEST_ONCE,
        ))
        .bind(ns.to_string())
        .bind(request_id)
        .bind(request_digest)
        .bind(version.to_string())
        .bind(to_rfc3339(&now))
        .execute(&self.write)
        .await
        .map_err(db_err)?;
        if done.rows_affected() == 0 {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("request id `{request_id}` was used concurrently; retry"),
            ));
        }
        Ok(())
    }

    pub(crate) async fn note_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Option<NoteRecord>> {
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::NOTE_OF_VERSION,
        ))
        .bind(ns.to_string())
        .bind(version.to_string())
        .fetch_optional(&self.write)
        .await
        .map_err(db_err)?;
        row.as_ref().map(note_row).transpose()
    }

    pub(crate) async fn transition_note_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        to: Admission,
        now: Timestamp,
    ) -> Result<NoteRecord> {
        let ns_s = ns.to_string();
        let version_s = version.to_string();
        let at = to_rfc3339(&now);
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let Some(note) = note_in(&mut tx, &ns_s, &version_s).await? else {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("no note revision {version} in this namespace"),
            ));
        };
        note.check_transition(expected, to)?;
        let doc_s = note.note_id.to_string();
        set_lifecycle(&mut tx, &ns_s, &version_s, to, &at).await?;
        match to {
            Admission::Promoted => {
                archive_promoted(&mut tx, &ns_s, &doc_s, &note.source_key, &version_s, &at).await?;
                sqlx::query(crate::shared(
                    &rememberstack_sql::lifecycle::SET_CURRENT_VERSION,
                ))
                .bind(&version_s)
                .bind(&at)
                .bind(&ns_s)
                .bind(&doc_s)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            _ => unserve(&mut tx, &ns_s, &doc_s, &at, "note_archived").await?,
        }
        let fresh = note_in(&mut tx, &ns_s, &version_s)
            .await?
            .ok_or_else(|| Error::store("the note revision vanished"))?;
        tx.commit().await.map_err(db_err)?;
        Ok(fresh)
    }

    pub(crate) async fn list_notes_impl(
        &self,
        ns: NamespaceId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<NoteRecord>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::NOTES_AFTER))
            .bind(ns.to_string())
            .bind(after)
            .bind(limit as i64)
            .fetch_all(&self.read)
            .await
            .map_err(db_err)?;
        rows.iter().map(note_row).collect()
    }
}
