-- A crashed worker's leases are taken at once, not when they expire.
--
-- Each lease names the liveness key of the process that took it: the key of a
-- session-level advisory lock that process holds on a connection of its own while
-- it runs. A claimer that finds running leases whose key no session holds (the
-- server ended the dead process's session, and the lock with it) releases them.
ALTER TABLE processing_state ADD COLUMN lease_process bigint;
