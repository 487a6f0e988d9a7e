//! The work ledger's statements that both stores run as they are: moving a leased
//! item on (fail, park, defer), giving dead letters and failures another go, and
//! the next instant a worker has reason to wake. Claiming and completing stay in
//! each store: they choose what to lock and in which order (PostgreSQL takes the
//! namespace's change stamp first and skips rows another transaction holds; SQLite
//! has one writer). Each is rendered once per dialect, on first use: they run
//! for every work item.
//!
//! The ledger's status and lease indexes hold unfinished work only (partial
//! indexes, migration 0033). A statement that reads by status repeats the
//! index's condition (`status <> 'done'`) as a conjunct, even where its own
//! status test implies it: SQLite uses a partial index only when the WHERE
//! clause names the index's condition.

use crate::Statement;

/// A leased item failed: `failed` until `not_before` (a retry) or `dead_letter`.
/// Binds: status, not_before (or NULL to keep it), defer reason, error, now, id,
/// lease owner. No row changed means the lease was lost.
pub static FAIL: Statement = Statement::new("UPDATE processing_state SET status = ?, not_before = COALESCE(?, not_before), defer_reason = ?,
     last_error = ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
 WHERE id = ? AND status = 'running' AND lease_owner = ?");

/// A leased item waits (a reason, until `not_before`) and gives its attempt back,
/// never below zero. Binds: reason, not_before, now, id, lease owner. No row
/// changed means the lease was lost.
pub static PARK: Statement = Statement::new("UPDATE processing_state SET status = 'pending', attempts = {GREATEST}(attempts - 1, 0), defer_reason = ?,
     not_before = ?, lease_owner = NULL, lease_expires_at = NULL, updated_at = ?
 WHERE id = ? AND status = 'running' AND lease_owner = ?");

/// A fenced item (its lease checked in the same transaction) back to pending, its
/// attempt given back. Binds: not_before, reason, now, id.
pub static DEFER: Statement = Statement::new(
    "UPDATE processing_state SET status = 'pending', attempts = {GREATEST}(attempts - 1, 0),
     not_before = ?, defer_reason = ?, lease_owner = NULL, lease_expires_at = NULL,
     updated_at = ?
 WHERE id = ?",
);

/// Dead letters back to pending with `allowance` more attempts (capped where a
/// 32-bit count ends), optionally of one namespace and one stage. Binds:
/// allowance, now, now, namespace, namespace, stage, stage.
pub static REPLAY_DEAD_LETTERS: Statement = Statement::new(
    "UPDATE processing_state
 SET status = 'pending', max_attempts = {LEAST}(attempts{BIGINT} + ?, 2147483647),
     not_before = ?, defer_reason = NULL, updated_at = ?
 WHERE status = 'dead_letter' AND status <> 'done' AND (?{TEXT} IS NULL OR namespace_id = ?)
   AND (?{TEXT} IS NULL OR stage = ?)",
);

/// Failed items waiting out a backoff become due now, optionally of one namespace
/// and one stage. Binds: now, now, now, namespace, namespace, stage, stage.
pub static EXPEDITE_FAILED: Statement = Statement::new(
    "UPDATE processing_state SET not_before = ?, updated_at = ?
 WHERE status = 'failed' AND status <> 'done' AND not_before > ?
   AND (?{TEXT} IS NULL OR namespace_id = ?)
   AND (?{TEXT} IS NULL OR stage = ?)",
);

/// The next instant work falls due or a lease expires (`t`, NULL when neither);
/// parked rows without a route never fall due.
pub static NEXT_WAKEUP: Statement = Statement::new(
    "SELECT MIN(t) AS t FROM (
     SELECT not_before AS t FROM processing_state
     WHERE status IN ('pending', 'failed') AND status <> 'done'
       AND (defer_reason IS NULL OR defer_reason <> 'no_route')
     UNION ALL
     SELECT lease_expires_at AS t FROM processing_state WHERE status = 'running') w",
);

statements! {
    /// A leased item is done. Binds: each `?` in turn.
    COMPLETE = "UPDATE processing_state SET status = 'done', lease_owner = NULL, lease_expires_at = NULL,
     defer_reason = NULL, last_error = NULL, updated_at = ?
 WHERE id = ? AND status = 'running' AND lease_owner = ?";

    /// A model call's token cost. Binds: the listed columns in order.
    INSERT_COST = "INSERT INTO cost_ledger (namespace_id, processing_id, attempt, call_key, stage, model,
     prompt_tokens, completion_tokens, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";

    /// A model call's transcript. Binds: the listed columns in order.
    INSERT_TRANSCRIPT = "INSERT INTO llm_transcripts (namespace_id, processing_id, attempt, call_key, request_hash, model,
     prompt_version, raw_output, verdict, reason, created_at)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

    /// The tail of every enqueue: an item already in the ledger (same namespace,
    /// target, stage and component version) is left as it is, which makes a replayed
    /// enqueue a no-op, except an adjudication unit that has run or is running. A
    /// unit decides whatever its entity has waiting in its version, and the enqueue
    /// comes with new assertions (a version extracted or normalized again), so it
    /// runs again: a running one loses its lease, its completion is refused and it
    /// is taken again. No binds.
    ENQUEUE_CONFLICT = " ON CONFLICT (namespace_id, target_kind, target_id, stage, component_version) DO UPDATE
 SET status = 'pending', attempts = 0, not_before = excluded.not_before,
     defer_reason = excluded.defer_reason, lease_owner = NULL, lease_expires_at = NULL,
     lease_process = NULL, last_error = NULL, updated_at = excluded.updated_at
 WHERE processing_state.target_kind = 'unit' AND processing_state.status IN ('done', 'running')";

    /// Finished units of versions with assertions waiting, pending again (what
    /// `LedgerStore::rearm_stranded_units` runs whenever an engine opens the store).
    /// Binds: now, now.
    REARM_STRANDED_UNITS = "UPDATE processing_state
 SET status = 'pending', attempts = 0, not_before = ?, defer_reason = NULL, lease_owner = NULL,
     lease_expires_at = NULL, lease_process = NULL, last_error = NULL, updated_at = ?
 WHERE target_kind = 'unit' AND status = 'done'
   AND EXISTS (SELECT 1 FROM staged_assertions s
                WHERE s.namespace_id = processing_state.namespace_id
                  AND s.version_id = processing_state.version_id
                  AND s.applied_at IS NULL)";

    /// A namespace's (or every) work items of a finished status, oldest first.
    /// Binds: namespace, namespace, status, limit.
    FINISHED_WORK = "SELECT namespace_id, id, target_kind, target_id, version_id, stage,
     component_version, status, attempts, max_attempts, not_before, defer_reason, lease_owner,
     lease_expires_at, last_error, created_at, updated_at FROM processing_state
 WHERE (?{TEXT} IS NULL OR namespace_id = ?) AND status = ?
 ORDER BY created_at, id{COLLATE_C} LIMIT ?";

    /// A namespace's (or every) work items of an unfinished status, oldest first,
    /// through the status index (it holds unfinished work only, and the statement
    /// names its condition). Binds: namespace, namespace, status, limit.
    UNFINISHED_WORK = "SELECT namespace_id, id, target_kind, target_id, version_id, stage,
     component_version, status, attempts, max_attempts, not_before, defer_reason, lease_owner,
     lease_expires_at, last_error, created_at, updated_at FROM processing_state
 WHERE (?{TEXT} IS NULL OR namespace_id = ?) AND status = ? AND status <> 'done'
 ORDER BY created_at, id{COLLATE_C} LIMIT ?";

    /// A namespace's (or every) work counted by stage and status, with the items
    /// parked for want of a route. Binds: namespace, namespace.
    WORK_COUNTS = "SELECT stage, status, COUNT(*) AS n,
     COALESCE(SUM(CASE WHEN defer_reason = 'no_route' THEN 1 ELSE 0 END), 0) AS parked
 FROM processing_state WHERE (?{TEXT} IS NULL OR namespace_id = ?)
 GROUP BY stage, status ORDER BY stage{COLLATE_C}, status{COLLATE_C}";

    /// A namespace's unfinished work counted by stage and status, with the items
    /// parked for want of a route: what a read's freshness reports. Finished rows
    /// are not counted, so the count walks an index of unfinished work instead of
    /// every item the namespace ever had (on SQLite the namespace is kept from
    /// choosing the ledger's unique key, which begins with it and holds them all).
    /// Binds: namespace.
    UNFINISHED_WORK_COUNTS = "SELECT stage, status, COUNT(*) AS n,
     COALESCE(SUM(CASE WHEN defer_reason = 'no_route' THEN 1 ELSE 0 END), 0) AS parked
 FROM processing_state WHERE {NOT_INDEXED}namespace_id = ? AND status <> 'done'
 GROUP BY stage, status ORDER BY stage{COLLATE_C}, status{COLLATE_C}";

    /// The namespace of a work item. Binds: id.
    NAMESPACE_OF_ITEM = "SELECT namespace_id FROM processing_state WHERE id = ?";

    /// A namespace's model-call costs, in order. Binds: namespace.
    COSTS = "SELECT call_key, model, prompt_tokens, completion_tokens FROM cost_ledger
 WHERE namespace_id = ? ORDER BY {SEQ}";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    fn rendered(d: Dialect) -> String {
        let statements: [(&str, &'static Statement); 6] = [
            ("FAIL", &FAIL),
            ("PARK", &PARK),
            ("DEFER", &DEFER),
            ("REPLAY_DEAD_LETTERS", &REPLAY_DEAD_LETTERS),
            ("EXPEDITE_FAILED", &EXPEDITE_FAILED),
            ("NEXT_WAKEUP", &NEXT_WAKEUP),
        ];
        statements
            .iter()
            .map(|(name, t)| format!("-- {name}\n{};\n", t.sql(d)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn ledger_statements_in_sqlite() {
        insta::assert_snapshot!(rendered(Dialect::Sqlite));
    }

    #[test]
    fn ledger_statements_in_postgres() {
        insta::assert_snapshot!(rendered(Dialect::Postgres));
    }
}
