-- The work ledger keeps a row for every finished item (a replayed enqueue of it is
-- then a no-op), but only unfinished work is ever looked up by stage, status or
-- lease: claiming, waking, retrying and lease checks. Those indexes now hold the
-- unfinished rows alone (partial indexes), so finished work costs them nothing.
-- A statement meant to use one repeats its condition (`status <> 'done'`,
-- `status = 'running'`) as a conjunct: SQLite uses a partial index only when the
-- query's WHERE names the index's condition.
--
-- Work on a record (a chunk, claim or fact) is found for a forget through the
-- ledger's unique key, which begins (namespace, target kind, target id), so the
-- separate (namespace, target id) index goes.
DROP INDEX processing_state_due;
DROP INDEX processing_state_status;
DROP INDEX processing_state_leases;
DROP INDEX processing_state_target;
CREATE INDEX processing_state_due ON processing_state (stage, status, not_before)
    WHERE status <> 'done';
CREATE INDEX processing_state_status ON processing_state (status, not_before)
    WHERE status <> 'done';
CREATE INDEX processing_state_leases ON processing_state (lease_expires_at)
    WHERE status = 'running';
