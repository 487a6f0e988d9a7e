//! Lifecycle writes: document deletion (D135), claim retraction, fact invalidation,
//! fact events, feedback and notes.
//!
//! Ported statement by statement from the SQLite store's `lifecycle.rs`. Where
//! SQLite relies on its single writer, this module serializes with row locks and
//! transaction-scoped advisory locks:
//!
//! - a request id (`lifecycle_requests`) is held under the advisory lock
//!   `request:<ns>:<request id>` for the whole unit of work, so a concurrent replay
//!   waits and then returns the stored result instead of running twice;
//! - the facts a cascade may close are locked (`FOR UPDATE`, in id order) before
//!   any claim stops being current, so two cascades over a shared fact run one
//!   after the other and the second counts the first's retired support;
//! - a document deletion locks its lineage row; a fact invalidation its fact row;
//!   a claim retraction its claim row;
//! - note transitions hold `note:<ns>:<source key>` (at most one promoted revision
//!   per source key) and lock the revision's row (the compare-and-set on
//!   `lifecycle_version`), then the lineage row before its versions (a deletion's
//!   order, so the two never deadlock).

use crate::forget::SqlConn;
use crate::{PgStore, db_err, parse_id};
use chrono::SubsecRound;
use rememberstack_core::facts::closed_reason::{CLAIM_RETRACTED, SOURCE_REMOVAL};
use rememberstack_core::ids::{
    ClaimId, DocumentId, EntityId, FactId, NamespaceId, ReceiptId, VersionId,
};
use rememberstack_core::source::Admission;
use rememberstack_core::store::{
    ClaimRetraction, DeletionOutcome, DocumentDeletion, FactEvent, FactInvalidation,
    FeedbackRecord, NewNote, NoteLookup, NoteRecord, RequestKey,
};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::facts::SUPPORTED;
use rememberstack_sql::rows::note_row;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, PgConnection, Row};
use std::collections::BTreeSet;

/// Which testimony a cascade is about.
#[derive(Clone, Copy)]
enum Scope<'a> {
    /// Every claim of a lineage.
    Document(&'a str),
    /// One claim.
    Claim(&'a str),
}

impl Scope<'_> {
    /// The condition on `e` (fact_evidence) / `c` (claims) selecting the scope's
    /// evidence, and its bound id (`$2`).
    fn condition(self) -> (&'static str, String) {
        match self {
            Scope::Document(doc) => ("c.document_id = $2", doc.to_string()),
            Scope::Claim(claim) => ("e.claim_id = $2", claim.to_string()),
        }
    }
}

/// The instant as the SQLite store keeps it (RFC 3339 with milliseconds), so every
/// answer equals what later reads return on either store.
pub(crate) fn stored(t: Timestamp) -> Timestamp {
    t.trunc_subsecs(3)
}

/// Serialize a unit of work on `key` until its transaction ends.
pub(crate) async fn advisory_lock(conn: &mut PgConnection, key: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(key)
        .execute(conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Lock a lineage's row until the transaction ends: every writer of a lineage's
/// versions (a deletion, a note transition, a chunk commit, a forget) takes it
/// first, before the namespace's change stamp.
pub(crate) async fn lock_lineage(conn: &mut PgConnection, ns: &str, doc: &str) -> Result<()> {
    sqlx::query("SELECT 1 FROM documents WHERE namespace_id = $1 AND id = $2 FOR UPDATE")
        .bind(ns)
        .bind(doc)
        .execute(conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

impl PgStore {
    pub(crate) async fn delete_document_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
        now: Timestamp,
    ) -> Result<DeletionOutcome> {
        let ns_s = ns.to_string();
        let doc_s = doc.to_string();
        let at = stored(now);
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        // The lineage row is the episode's lock: one deletion of it at a time.
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
        let previous: Option<Timestamp> = row.try_get("deleted_at").map_err(db_err)?;
        let first = previous.is_none();
        let deleted_at = previous.unwrap_or(at);
        // The tombstone: no version of the lineage is served any more.
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::DELETE_DOCUMENT,
        ))
        .bind(deleted_at)
        .bind(at)
        .bind(&ns_s)
        .bind(&doc_s)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::DELETE_VERSIONS,
        ))
        .bind(deleted_at)
        .bind(&ns_s)
        .bind(&doc_s)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        lock_facts(&mut tx, &ns_s, Scope::Document(&doc_s)).await?;
        let claims_retired = retire_claims(&mut tx, &ns_s, &doc_s, at, "document_deleted").await?;
        let (closed, relations_closed, observations_closed, touched) =
            close_unsupported(&mut tx, &ns_s, Scope::Document(&doc_s), at).await?;
        if !first && claims_retired == 0 && closed.is_empty() {
            // Nothing changed: the episode was already complete (the transaction
            // rolls back, as in SQLite).
            return Ok(DeletionOutcome::AlreadyDeleted);
        }
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::INSERT_DOCUMENT_DELETION,
        ))
        .bind(&ns_s)
        .bind(&doc_s)
        .bind(deleted_at)
        .bind(claims_retired as i64)
        .bind(relations_closed as i64)
        .bind(observations_closed as i64)
        .bind(at)
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
        let at = stored(now);
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        if let Some(stored) = replay(&mut tx, &ns_s, request).await? {
            return serde_json::from_value(stored)
                .map_err(|e| Error::store(format!("corrupt stored request result: {e}")));
        }
        // Facts first, then the claim: the same lock order as a deletion's cascade.
        lock_facts(&mut tx, &ns_s, Scope::Claim(&claim_s)).await?;
        let Some(row) = sqlx::query(
            "SELECT is_current FROM claims WHERE namespace_id = $1 AND id = $2 FOR UPDATE",
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
        let was_current: bool = row.try_get("is_current").map_err(db_err)?;
        // Read after the claim's lock, so a concurrent first retraction is seen.
        let prior = sqlx::query(
            "SELECT reason, created_at FROM claim_retractions
             WHERE namespace_id = $1 AND claim_id = $2",
        )
        .bind(&ns_s)
        .bind(&claim_s)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let result = if let Some(first) = prior {
            // Already retracted: the first retraction stands.
            ClaimRetraction {
                claim_id: claim,
                retracted_at: first.try_get("created_at").map_err(db_err)?,
                reason: first.try_get("reason").map_err(db_err)?,
                was_current: false,
                facts_recounted: 0,
                relations_closed: 0,
                observations_closed: 0,
                touched_entities: vec![],
            }
        } else {
            let recounted = rememberstack_sql::lifecycle::write_retraction(
                &mut SqlConn(&mut tx),
                &rememberstack_sql::lifecycle::Retraction {
                    ns: &ns_s,
                    claim: &claim_s,
                    reason,
                    request_id: request.map(|r| r.request_id.as_str()),
                    at,
                    was_current,
                },
            )
            .await?;
            let (_, relations_closed, observations_closed, touched) =
                close_unsupported(&mut tx, &ns_s, Scope::Claim(&claim_s), at).await?;
            ClaimRetraction {
                claim_id: claim,
                retracted_at: at,
                reason: reason.to_string(),
                was_current,
                facts_recounted: recounted,
                relations_closed,
                observations_closed,
                touched_entities: touched.into_iter().collect(),
            }
        };
        let json = serde_json::to_value(&result).map_err(|e| Error::internal(e.to_string()))?;
        remember_request(&mut tx, &ns_s, request, json, at).await?;
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
        let at = stored(now);
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        if let Some(stored) = replay(&mut tx, &ns_s, request).await? {
            return serde_json::from_value(stored)
                .map_err(|e| Error::store(format!("corrupt stored request result: {e}")));
        }
        // The fact's row lock: a concurrent close is seen before the check.
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
        if row
            .try_get::<Option<Timestamp>, _>("invalidated_at")
            .map_err(db_err)?
            .is_some()
        {
            let why = row
                .try_get::<Option<String>, _>("closed_reason")
                .map_err(db_err)?
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
                at,
            },
        )
        .await?;
        let mut touched: Vec<EntityId> = vec![parse_id(
            &row.try_get::<String, _>("subject_id").map_err(db_err)?,
        )?];
        if let Some(o) = row
            .try_get::<Option<String>, _>("object_id")
            .map_err(db_err)?
        {
            touched.push(parse_id(&o)?);
        }
        let result = FactInvalidation {
            fact_id: fact,
            invalidated_at: at,
            closed_reason: closed_reason.to_string(),
            reason: reason.to_string(),
            touched_entities: touched,
        };
        let json = serde_json::to_value(&result).map_err(|e| Error::internal(e.to_string()))?;
        remember_request(&mut tx, &ns_s, request, json, at).await?;
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
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(FactEvent {
                    event: r.try_get("event").map_err(db_err)?,
                    reason: r.try_get("reason").map_err(db_err)?,
                    detail: r.try_get("detail_json").map_err(db_err)?,
                    created_at: r.try_get("created_at").map_err(db_err)?,
                })
            })
            .collect()
    }

    pub(crate) async fn put_feedback_impl(
        &self,
        f: FeedbackRecord,
        prune_before: Timestamp,
    ) -> Result<()> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::lifecycle::PRUNE_FEEDBACK))
            .bind(stored(prune_before))
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
        .bind(stored(f.created_at))
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
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(FeedbackRecord {
                    feedback_id: uuid::Uuid::parse_str(
                        &r.try_get::<String, _>("id").map_err(db_err)?,
                    )
                    .map_err(|_| Error::store("corrupt feedback id"))?,
                    namespace_id: ns,
                    receipt_id: parse_id(&r.try_get::<String, _>("receipt_id").map_err(db_err)?)?,
                    item_ref: r.try_get("item_ref").map_err(db_err)?,
                    rating: r.try_get("rating").map_err(db_err)?,
                    comment: r.try_get("comment").map_err(db_err)?,
                    created_at: r.try_get("created_at").map_err(db_err)?,
                })
            })
            .collect()
    }

    pub(crate) async fn prune_feedback_impl(&self, before: Timestamp) -> Result<u64> {
        Ok(
            sqlx::query(crate::shared(&rememberstack_sql::lifecycle::PRUNE_FEEDBACK))
                .bind(stored(before))
                .execute(self.pool())
                .await
                .map_err(db_err)?
                .rows_affected(),
        )
    }
}

/// The stored result of a replayed request id, or `None` for a new request.
/// The same id with another operation or input is `request_conflict`. A request id
/// stays locked (advisory, `request:<ns>:<id>`) until the transaction ends, so a
/// concurrent use of the same id waits and then replays.
async fn replay(
    tx: &mut PgConnection,
    ns: &str,
    request: Option<&RequestKey>,
) -> Result<Option<serde_json::Value>> {
    let Some(request) = request else {
        return Ok(None);
    };
    advisory_lock(tx, &format!("request:{ns}:{}", request.request_id)).await?;
    let Some(row) = sqlx::query(crate::shared(&rememberstack_sql::lifecycle::REQUEST))
        .bind(ns)
        .bind(&request.request_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
    else {
        return Ok(None);
    };
    request.check_replay(
        &row.try_get::<String, _>("operation").map_err(db_err)?,
        &row.try_get::<String, _>("digest").map_err(db_err)?,
    )?;
    Ok(Some(row.try_get("result_json").map_err(db_err)?))
}

/// Store a request's result under its id (in the request's transaction).
async fn remember_request(
    tx: &mut PgConnection,
    ns: &str,
    request: Option<&RequestKey>,
    result: serde_json::Value,
    at: Timestamp,
) -> Result<()> {
    let Some(request) = request else {
        return Ok(());
    };
    sqlx::query(crate::shared(&rememberstack_sql::lifecycle::INSERT_REQUEST))
        .bind(ns)
        .bind(&request.request_id)
        .bind(&request.operation)
        .bind(&request.digest)
        .bind(Json(result))
        .bind(at)
        .execute(tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Retire every current claim of the lineage, recording each transition.
pub(crate) async fn retire_claims(
    tx: &mut PgConnection,
    ns: &str,
    doc: &str,
    at: Timestamp,
    reason: &str,
) -> Result<u64> {
    sqlx::query(
        "INSERT INTO claim_currency_events (namespace_id, claim_id, is_current, reason, version_id, created_at)
         SELECT namespace_id, id, false, $1, NULL, $2
         FROM claims WHERE namespace_id = $3 AND document_id = $4 AND is_current
         ORDER BY seq",
    )
    .bind(reason)
    .bind(at)
    .bind(ns)
    .bind(doc)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    let done = sqlx::query(
        "UPDATE claims SET is_current = false
         WHERE namespace_id = $1 AND document_id = $2 AND is_current",
    )
    .bind(ns)
    .bind(doc)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(done.rows_affected())
}

/// Lock (in id order) every live fact a claim of the scope evidences, before any
/// claim of the scope stops being current: a concurrent cascade over a shared fact
/// waits, then sees this one's retired support when it counts what is left.
async fn lock_facts(tx: &mut PgConnection, ns: &str, scope: Scope<'_>) -> Result<()> {
    let (condition, id) = scope.condition();
    sqlx::query(AssertSqlSafe(format!(
        "SELECT f.id FROM facts f
         WHERE f.namespace_id = $1 AND f.invalidated_at IS NULL
           AND f.id IN (SELECT e.fact_id FROM fact_evidence e
                        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                        WHERE e.namespace_id = $1 AND {condition})
         ORDER BY f.id
         FOR UPDATE OF f"
    )))
    .bind(ns)
    .bind(id)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Close every live fact a claim of the scope evidences (either stance) that has
/// no current supporting testimony left. Returns the closed facts, how many were
/// relations and observations, and the entities they name.
async fn close_unsupported(
    tx: &mut PgConnection,
    ns: &str,
    scope: Scope<'_>,
    at: Timestamp,
) -> Result<(Vec<FactId>, u64, u64, BTreeSet<EntityId>)> {
    let (reason, detail) = match scope {
        Scope::Document(doc) => (SOURCE_REMOVAL, serde_json::json!({ "document_id": doc })),
        Scope::Claim(claim) => (CLAIM_RETRACTED, serde_json::json!({ "claim_id": claim })),
    };
    let (condition, id) = scope.condition();
    let rows = sqlx::query(AssertSqlSafe(format!(
        "SELECT f.id, f.kind, f.subject_id, f.object_id FROM facts f
         WHERE f.namespace_id = $1 AND f.invalidated_at IS NULL
           AND f.id IN (SELECT e.fact_id FROM fact_evidence e
                        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
                        WHERE e.namespace_id = $1 AND {condition})
           AND NOT ({SUPPORTED})
         ORDER BY f.seq"
    )))
    .bind(ns)
    .bind(id)
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err)?;
    let mut closed = Vec::with_capacity(rows.len());
    let (mut relations, mut observations) = (0, 0);
    let mut touched = BTreeSet::new();
    for r in rows {
        let id: String = r.try_get("id").map_err(db_err)?;
        let kind: String = r.try_get("kind").map_err(db_err)?;
        if kind == "relation" {
            relations += 1;
        } else {
            observations += 1;
        }
        touched.insert(parse_id(
            &r.try_get::<String, _>("subject_id").map_err(db_err)?,
        )?);
        if let Some(o) = r
            .try_get::<Option<String>, _>("object_id")
            .map_err(db_err)?
        {
            touched.insert(parse_id(&o)?);
        }
        sqlx::query(crate::shared(&rememberstack_sql::lifecycle::CLOSE_FACT))
            .bind(at)
            .bind(reason)
            .bind(at)
            .bind(ns)
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::INSERT_FACT_CLOSED,
        ))
        .bind(ns)
        .bind(&id)
        .bind(reason)
        .bind(Json(&detail))
        .bind(at)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        closed.push(parse_id(&id)?);
    }
    Ok((closed, relations, observations, touched))
}

/// A note revision read inside a transaction; `lock` takes its row lock (for a
/// compare-and-set on `lifecycle_version`). Shared with `forget` (`revoke_note`).
pub(crate) async fn note_in(
    tx: &mut PgConnection,
    ns: &str,
    version: &str,
    lock: bool,
) -> Result<Option<NoteRecord>> {
    let statement = if lock {
        &rememberstack_sql::lifecycle::NOTE_OF_VERSION_LOCKED
    } else {
        &rememberstack_sql::lifecycle::NOTE_OF_VERSION
    };
    sqlx::query(crate::shared(statement))
        .bind(ns)
        .bind(version)
        .fetch_optional(tx)
        .await
        .map_err(db_err)?
        .as_ref()
        .map(note_row)
        .transpose()
}

/// Archive the source's promoted revisions (other than `keep`): their notes and
/// versions; a lineage served from one of them serves nothing until the next
/// promoted revision is chunked, and its claims stop being current testimony.
/// The caller holds `note:<ns>:<source key>`.
pub(crate) async fn archive_promoted(
    tx: &mut PgConnection,
    ns: &str,
    doc: &str,
    source_key: &str,
    keep: &str,
    at: Timestamp,
) -> Result<()> {
    let versions: Vec<String> = sqlx::query_scalar(
        "SELECT version_id FROM notes WHERE namespace_id = $1 AND source_key = $2
           AND lifecycle = 'promoted' AND version_id <> $3
         ORDER BY seq",
    )
    .bind(ns)
    .bind(source_key)
    .bind(keep)
    .fetch_all(&mut *tx)
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
/// admission. Shared with `forget` (`revoke_note`).
pub(crate) async fn set_lifecycle(
    tx: &mut PgConnection,
    ns: &str,
    version: &str,
    to: Admission,
    at: Timestamp,
) -> Result<()> {
    sqlx::query(crate::shared(
        &rememberstack_sql::lifecycle::SET_NOTE_LIFECYCLE,
    ))
    .bind(to.as_str())
    .bind(at)
    .bind(ns)
    .bind(version)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    sqlx::query(crate::shared(&rememberstack_sql::lifecycle::SET_ADMISSION))
        .bind(to.as_str())
        .bind(ns)
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// The lineage serves nothing: no current version and no current claims, when its
/// current version is no longer promoted. Shared with `forget` (`revoke_note`).
pub(crate) async fn unserve(
    tx: &mut PgConnection,
    ns: &str,
    doc: &str,
    at: Timestamp,
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
    .execute(&mut *tx)
    .await
    .map_err(db_err)?
    .rows_affected();
    if cleared > 0 {
        retire_claims(tx, ns, doc, at, reason).await?;
    }
    Ok(())
}

/// The advisory lock key of a note source: at most one promoted revision per
/// source key, so promotions (a transition or a promoted intake) take turns.
pub(crate) fn note_lock(ns: &str, source_key: &str) -> String {
    format!("note:{ns}:{source_key}")
}

/// Record a note revision with its version (inside `create_version`'s transaction,
/// after the version row). The port of the SQLite store's `lifecycle::insert_note`
/// for the `documents` area, which calls it where SQLite does; it holds the note
/// source's lock like `transition_note`.
pub(crate) async fn insert_note(
    tx: &mut PgConnection,
    ns: &str,
    (doc, version): (DocumentId, VersionId),
    note: &NewNote,
    admission: Admission,
    at: Timestamp,
) -> Result<()> {
    let (doc_s, version_s) = (doc.to_string(), version.to_string());
    let at = stored(at);
    advisory_lock(tx, &note_lock(ns, &note.source_key)).await?;
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
        .bind(Json(&note.metadata))
        .bind(at)
        .bind(at)
        .execute(&mut *tx)
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
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

impl PgStore {
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
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?
        {
            let version: VersionId =
                parse_id(&r.try_get::<String, _>("version_id").map_err(db_err)?)?;
            let note = self
                .note_impl(ns, version)
                .await?
                .ok_or_else(|| Error::store("a note request names a missing revision"))?;
            return Ok(NoteLookup::Request(
                r.try_get("digest").map_err(db_err)?,
                note,
            ));
        }
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::lifecycle::NOTE_BY_REVISION,
        ))
        .bind(&ns_s)
        .bind(source_key)
        .bind(source_revision)
        .fetch_optional(self.pool())
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
        .bind(stored(now))
        .execute(self.pool())
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
        let mut conn = self.pool().acquire().await.map_err(db_err)?;
        note_in(&mut conn, &ns.to_string(), &version.to_string(), false).await
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
        let at = stored(now);
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let not_found = || {
            Error::new(
                ErrorCode::NotFound,
                format!("no note revision {version} in this namespace"),
            )
        };
        // The source key names the lock (at most one promoted revision per key);
        // the revision's row lock makes the compare-and-set exact.
        let Some(peek) = note_in(&mut tx, &ns_s, &version_s, false).await? else {
            return Err(not_found());
        };
        advisory_lock(&mut tx, &note_lock(&ns_s, &peek.source_key)).await?;
        let Some(note) = note_in(&mut tx, &ns_s, &version_s, true).await? else {
            return Err(not_found());
        };
        note.check_transition(expected, to)?;
        let doc_s = note.note_id.to_string();
        // The lineage before its versions, in the order a deletion takes them.
        lock_lineage(&mut tx, &ns_s, &doc_s).await?;
        set_lifecycle(&mut tx, &ns_s, &version_s, to, at).await?;
        match to {
            Admission::Promoted => {
                archive_promoted(&mut tx, &ns_s, &doc_s, &note.source_key, &version_s, at).await?;
                sqlx::query(crate::shared(
                    &rememberstack_sql::lifecycle::SET_CURRENT_VERSION,
                ))
                .bind(&version_s)
                .bind(at)
                .bind(&ns_s)
                .bind(&doc_s)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            _ => unserve(&mut tx, &ns_s, &doc_s, at, "note_archived").await?,
        }
        let fresh = note_in(&mut tx, &ns_s, &version_s, false)
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
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(note_row).collect()
    }
}

#[cfg(test)]
mod tests {
    //! `insert_note` is crate-internal (no trait method of this area calls it), so
    //! it is tested here; needs `DATABASE_URL` like `tests/lifecycle.rs`.
    use super::*;
    use crate::PgStoreConfig;
    use chrono::{TimeZone, Utc};
    use rememberstack_core::store::traits::*;

    fn new_note(revision: &str, request: &str) -> NewNote {
        NewNote {
            source_key: "prefs".into(),
            source_revision: revision.into(),
            content_digest: format!("t-{revision}"),
            request_digest: format!("rd-{request}"),
            request_id: request.into(),
            metadata: serde_json::json!({ "rev": revision }),
        }
    }

    #[tokio::test]
    #[allow(clippy::print_stderr)] // says why it skips, like the integration tests
    async fn pg_insert_note() {
        let Ok(url) = std::env::var("DATABASE_URL") else {
            eprintln!("pg_insert_note: skipped, DATABASE_URL is not set");
            return;
        };
        let schema = format!("rs_ut_note_{}", uuid::Uuid::new_v4().simple());
        let config = PgStoreConfig {
            max_connections: 2,
            schema: Some(schema.clone()),
            ..PgStoreConfig::default()
        };
        let store = PgStore::connect_with(&url, config).await.unwrap();
        let t = Utc.timestamp_opt(1_780_000_000, 987_654_321).unwrap();
        let ns = store.ensure_namespace("default", t).await.unwrap().id;
        let (doc, v1, v2, v3) = (
            DocumentId::new(),
            VersionId::new(),
            VersionId::new(),
            VersionId::new(),
        );
        let ns_s = ns.to_string();
        sqlx::query(
            "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode,
                 current_version_id, latest_version_id, version_count, created_at, updated_at)
             VALUES ($1, $2, 'note', 'prefs', 'living', $3, $3, 3, $4, $4)",
        )
        .bind(&ns_s)
        .bind(doc.to_string())
        .bind(v1.to_string())
        .bind(t)
        .execute(store.pool())
        .await
        .unwrap();
        for (i, v) in [v1, v2, v3].iter().enumerate() {
            sqlx::query(
                "INSERT INTO document_versions (namespace_id, id, document_id, ordinal,
                     content_sha256, size, mime, source_modified_at, origin, metadata_json,
                     created_at, admission)
                 VALUES ($1, $2, $3, $4, 's', 1, 'text/markdown', $5, 'external', '{}', $5,
                     'promoted')",
            )
            .bind(&ns_s)
            .bind(v.to_string())
            .bind(doc.to_string())
            .bind(i as i32 + 1)
            .bind(t)
            .execute(store.pool())
            .await
            .unwrap();
        }
        let mut tx = store.pool().begin().await.unwrap();
        insert_note(
            &mut tx,
            &ns_s,
            (doc, v1),
            &new_note("r1", "q1"),
            Admission::Promoted,
            t,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let n1 = store.note(ns, v1).await.unwrap().unwrap();
        assert_eq!(
            (n1.lifecycle, n1.lifecycle_version),
            (Admission::Promoted, 1)
        );
        assert_eq!(n1.created_at, t.trunc_subsecs(3));
        assert_eq!(n1.metadata, serde_json::json!({ "rev": "r1" }));
        assert_eq!(
            store.note_lookup(ns, "q1", "prefs", "zz").await.unwrap(),
            NoteLookup::Request("rd-q1".into(), n1.clone())
        );
        // A second promoted revision archives the first and unserves the lineage.
        let mut tx = store.pool().begin().await.unwrap();
        insert_note(
            &mut tx,
            &ns_s,
            (doc, v2),
            &new_note("r2", "q2"),
            Admission::Promoted,
            t,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let n1 = store.note(ns, v1).await.unwrap().unwrap();
        assert_eq!(
            (n1.lifecycle, n1.lifecycle_version),
            (Admission::Archived, 2)
        );
        let current: Option<String> =
            sqlx::query_scalar("SELECT current_version_id FROM documents WHERE id = $1")
                .bind(doc.to_string())
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert_eq!(current, None);
        // The same revision again (under another version): `conflict`.
        let mut tx = store.pool().begin().await.unwrap();
        let err = insert_note(
            &mut tx,
            &ns_s,
            (doc, v3),
            &new_note("r2", "q3"),
            Admission::Candidate,
            t,
        )
        .await
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Conflict);
        drop(tx);
        let notes = store.list_notes(ns, 0, 10).await.unwrap();
        assert_eq!(notes.len(), 2);
        sqlx::query(AssertSqlSafe(format!("DROP SCHEMA \"{schema}\" CASCADE")))
            .execute(store.pool())
            .await
            .unwrap();
        store.close().await;
    }
}
