//! Deleting documents, retracting claims, closing facts, notes, feedback and the
//! replay of lifecycle requests: the statements both stores run as they are.

use crate::{Bind, Conn};
use rememberstack_core::Result;
use rememberstack_core::time::Timestamp;

statements! {
    /// A note revision by version. Binds: namespace, version.
    NOTE_OF_VERSION = concat!(note_select!(), " WHERE namespace_id = ? AND version_id = ?");

    /// A note revision by version, its row locked (a compare-and-set on
    /// `lifecycle_version`). Binds: namespace, version.
    NOTE_OF_VERSION_LOCKED = concat!(note_select!(), " WHERE namespace_id = ? AND version_id = ?{FOR_UPDATE}");

    /// A note revision by its key and revision. Binds: namespace, key, revision.
    NOTE_BY_REVISION = concat!(note_select!(), " WHERE namespace_id = ? AND source_key = ? AND source_revision = ?");

    /// Note revisions after a sequence number, in order. Binds: namespace, after, limit.
    NOTES_AFTER = concat!(note_select!(), " WHERE namespace_id = ? AND seq > ? ORDER BY seq LIMIT ?");

    /// Close a fact with a reason. Binds: now, reason, now, namespace, fact.
    CLOSE_FACT = "UPDATE facts SET invalidated_at = ?, closed_reason = ?, updated_at = ?
 WHERE namespace_id = ? AND id = ?";

    /// Soft-delete a document (the first deletion time stays). Binds: each `?` in turn.
    DELETE_DOCUMENT = "UPDATE documents SET deleted_at = COALESCE(deleted_at, ?), current_version_id = NULL,
     updated_at = ?
 WHERE namespace_id = ? AND id = ?";

    /// Soft-delete a document's live versions. Binds: each `?` in turn.
    DELETE_VERSIONS = "UPDATE document_versions SET deleted_at = ?
 WHERE namespace_id = ? AND document_id = ? AND deleted_at IS NULL";

    /// A fact's events in order. Binds: namespace, fact.
    FACT_EVENTS = "SELECT event, reason, detail_json, created_at FROM fact_events
 WHERE namespace_id = ? AND fact_id = ? ORDER BY seq";

    /// The record of a document's soft deletion. Binds: the listed columns in order.
    INSERT_DOCUMENT_DELETION = "INSERT INTO document_deletions (namespace_id, document_id, deleted_at, claims_retired,
     relations_closed, observations_closed, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)";

    /// A fact closed, with its reason. Binds: each `?` in turn.
    INSERT_FACT_CLOSED = "INSERT INTO fact_events (namespace_id, fact_id, event, reason, detail_json, created_at)
 VALUES (?, ?, 'closed', ?, ?, ?)";

    /// An event in a fact's history. Binds: the listed columns in order.
    INSERT_FACT_EVENT = "INSERT INTO fact_events (namespace_id, fact_id, event, reason, detail_json, created_at)
 VALUES (?, ?, ?, ?, {JSON}, ?)";

    /// A `support_retracted` event on every fact a claim evidences, closed or not, in
    /// fact order. Binds: reason, detail (JSON), now, namespace, claim.
    INSERT_SUPPORT_RETRACTED = "INSERT INTO fact_events (namespace_id, fact_id, event, reason, detail_json, created_at)
 SELECT namespace_id, fact_id, 'support_retracted', ?, {JSON}, ?
 FROM (SELECT DISTINCT namespace_id, fact_id FROM fact_evidence
       WHERE namespace_id = ? AND claim_id = ?) d
 ORDER BY fact_id";

    /// A rating of a recalled item. Binds: the listed columns in order.
    INSERT_FEEDBACK = "INSERT INTO feedback (namespace_id, id, receipt_id, item_ref, rating, comment, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?)";

    /// A note request's outcome. Binds: the listed columns in order.
    INSERT_NOTE_REQUEST = "INSERT INTO note_requests (namespace_id, request_id, digest, version_id, created_at)
 VALUES (?, ?, ?, ?, ?)";

    /// A note request's outcome, kept once. Binds: the listed columns in order.
    INSERT_NOTE_REQUEST_ONCE = "INSERT INTO note_requests (namespace_id, request_id, digest, version_id, created_at)
 VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace_id, request_id) DO NOTHING";

    /// A lifecycle request's result, for replay. Binds: the listed columns in order.
    INSERT_REQUEST = "INSERT INTO lifecycle_requests (namespace_id, request_id, operation, digest, result_json, created_at)
 VALUES (?, ?, ?, ?, ?, ?)";

    /// A retraction of a claim. Binds: the listed columns in order.
    INSERT_RETRACTION = "INSERT INTO claim_retractions (namespace_id, claim_id, reason, request_id, created_at)
 VALUES (?, ?, ?, ?, ?)";

    /// A note request's stored outcome. Binds: namespace, request.
    NOTE_REQUEST = "SELECT digest, version_id FROM note_requests WHERE namespace_id = ? AND request_id = ?";

    /// Feedback older than a time. Binds: cutoff.
    PRUNE_FEEDBACK = "DELETE FROM feedback WHERE created_at < ?";

    /// A lifecycle request's stored result. Binds: namespace, request.
    REQUEST = "SELECT operation, digest, result_json FROM lifecycle_requests
 WHERE namespace_id = ? AND request_id = ?";

    /// A version's admission. Binds: admission, namespace, version.
    SET_ADMISSION = "UPDATE document_versions SET admission = ? WHERE namespace_id = ? AND id = ?";

    /// A live document's current version. Binds: each `?` in turn.
    SET_CURRENT_VERSION = "UPDATE documents SET current_version_id = ?, updated_at = ?
 WHERE namespace_id = ? AND id = ? AND deleted_at IS NULL";

    /// A note's lifecycle state, versioned. Binds: each `?` in turn.
    SET_NOTE_LIFECYCLE = "UPDATE notes SET lifecycle = ?, lifecycle_version = lifecycle_version + 1, updated_at = ?
 WHERE namespace_id = ? AND version_id = ?";

    /// A document has no current version when its current one is among the given. Binds:
    /// each `?` in turn.
    CLEAR_CURRENT_VERSION_OF = "UPDATE documents SET current_version_id = NULL, updated_at = ?
 WHERE namespace_id = ? AND id = ? AND current_version_id IN
     (SELECT id FROM document_versions WHERE namespace_id = ? AND document_id = ?
        AND admission <> 'promoted')";

    /// A note's lifecycle row. Binds: the listed columns in order.
    INSERT_NOTE = "INSERT INTO notes (namespace_id, document_id, version_id, source_key, source_revision, digest,
     lifecycle, lifecycle_version, metadata_json, created_at, updated_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
 ON CONFLICT (namespace_id, source_key, source_revision) DO NOTHING";

    /// When a document was deleted, if it was (its row locked on PostgreSQL). Binds:
    /// namespace, document.
    DOCUMENT_DELETED_AT = "SELECT deleted_at FROM documents WHERE namespace_id = ? AND id = ?{FOR_UPDATE}";

    /// A fact's state before it is closed (its row locked on PostgreSQL: a concurrent close
    /// is seen before the check). Binds: namespace, fact.
    FACT_TO_CLOSE = "SELECT invalidated_at, closed_reason, subject_id, object_id FROM facts
 WHERE namespace_id = ? AND id = ?{FOR_UPDATE}";

    /// Feedback, optionally of one receipt, in order. Binds: namespace, receipt, receipt,
    /// limit.
    FEEDBACK = "SELECT id, receipt_id, item_ref, rating, comment, created_at FROM feedback
 WHERE namespace_id = ? AND (?{TEXT} IS NULL OR receipt_id = ?)
 ORDER BY seq LIMIT ?";

    /// A claim stops being current testimony. Binds: namespace, claim.
    RETIRE_CLAIM = "UPDATE claims SET is_current = false WHERE namespace_id = ? AND id = ?";

    /// A claim's currency event for a retraction. Binds: namespace, claim, now.
    INSERT_RETRACTED_EVENT = "INSERT INTO claim_currency_events (namespace_id, claim_id, is_current, reason, version_id, created_at)
 VALUES (?, ?, false, 'retracted', NULL, ?)";
}

/// What retracting a claim writes once the store has read it, taken its locks and
/// found no earlier retraction: the retraction row; the claim retired, with its
/// currency event, when it was current; and a `support_retracted` event on every
/// fact it evidences. Returns how many facts recorded the retraction.
pub async fn write_retraction<C: Conn>(c: &mut C, retraction: &Retraction<'_>) -> Result<u64> {
    let r = retraction;
    let at = Bind::Time(r.at);
    let (ns, claim) = (Bind::Text(r.ns), Bind::Text(r.claim));
    c.execute_rendered(
        INSERT_RETRACTION.sql(c.dialect()),
        &[ns, claim, Bind::Text(r.reason), r.request_id.into(), at],
    )
    .await?;
    if r.was_current {
        c.execute_rendered(RETIRE_CLAIM.sql(c.dialect()), &[ns, claim])
            .await?;
        c.execute_rendered(INSERT_RETRACTED_EVENT.sql(c.dialect()), &[ns, claim, at])
            .await?;
    }
    let detail = serde_json::json!({ "claim_id": r.claim }).to_string();
    c.execute_rendered(
        INSERT_SUPPORT_RETRACTED.sql(c.dialect()),
        &[Bind::Text(r.reason), Bind::Text(&detail), at, ns, claim],
    )
    .await
}

/// A claim's retraction, as [`write_retraction`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct Retraction<'a> {
    pub ns: &'a str,
    pub claim: &'a str,
    pub reason: &'a str,
    /// The request that retracted it, when it came with a request id.
    pub request_id: Option<&'a str>,
    pub at: Timestamp,
    /// Whether the claim was current (then it is retired).
    pub was_current: bool,
}

/// Close a fact by hand and record it in the fact's history: a correction (it
/// names the corrected statement) closes it `corrected`, anything else
/// `invalidated`; the event carries the request id and the correction. Returns the
/// closed reason written.
pub async fn write_fact_closing<C: Conn>(
    c: &mut C,
    closing: &FactClosing<'_>,
) -> Result<&'static str> {
    use rememberstack_core::facts::closed_reason::{CORRECTED, INVALIDATED};
    let closed_reason = match closing.correction {
        Some(_) => CORRECTED,
        None => INVALIDATED,
    };
    let at = Bind::Time(closing.at);
    let (ns, fact) = (Bind::Text(closing.ns), Bind::Text(closing.fact));
    c.execute_rendered(
        CLOSE_FACT.sql(c.dialect()),
        &[at, Bind::Text(closed_reason), at, ns, fact],
    )
    .await?;
    let detail = serde_json::json!({
        "request_id": closing.request_id,
        "corrected_statement": closing.correction,
    })
    .to_string();
    c.execute_rendered(
        INSERT_FACT_EVENT.sql(c.dialect()),
        &[
            ns,
            fact,
            // The event is named as the reason it closes with.
            Bind::Text(closed_reason),
            Bind::Text(closing.reason),
            Bind::Text(&detail),
            at,
        ],
    )
    .await?;
    Ok(closed_reason)
}

/// A fact closed by hand, as [`write_fact_closing`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct FactClosing<'a> {
    pub ns: &'a str,
    pub fact: &'a str,
    /// Why, in the caller's words.
    pub reason: &'a str,
    /// The corrected statement, when this closing is a correction.
    pub correction: Option<&'a str>,
    /// The request that closed it, when it came with a request id.
    pub request_id: Option<&'a str>,
    pub at: Timestamp,
}
