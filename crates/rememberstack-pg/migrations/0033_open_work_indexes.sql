-- The work ledger keeps a row for every finished item (a replayed enqueue of it is
-- then a no-op), but only unfinished work is ever looked up by stage, status or
-- lease: claiming, waking, retrying and lease checks. Those indexes now hold the
-- unfinished rows alone (partial indexes), so finished work costs them nothing.
--
-- The claim reads a stage's due work oldest first (`not_before`, `created_at`,
-- `id` in bytes) and stops at its batch: `processing_state_due` is in that order,
-- so the claim walks it under `FOR UPDATE SKIP LOCKED` instead of sorting every
-- due row of the stage. Dead letters and work parked for want of a model route
-- are never due and stay out of it, so the walk does not step over them. The
-- claim repeats the index's condition as a conjunct, so the planner need not
-- prove it.
--
-- Work on a record (a chunk, claim or fact) is found for a forget through the
-- ledger's unique key, which begins (namespace, target kind, target id), so the
-- separate (namespace, target id) index goes.
DROP INDEX processing_state_due;
DROP INDEX processing_state_status;
DROP INDEX processing_state_leases;
DROP INDEX processing_state_target;
CREATE INDEX processing_state_due
    ON processing_state (stage, not_before, created_at, id COLLATE "C")
    WHERE status IN ('pending', 'failed', 'running')
      AND (defer_reason IS NULL OR defer_reason <> 'no_route');
CREATE INDEX processing_state_status ON processing_state (status, not_before)
    WHERE status <> 'done';
CREATE INDEX processing_state_leases ON processing_state (lease_expires_at)
    WHERE status = 'running';
