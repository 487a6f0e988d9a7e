-- Every key begins with the namespace (PostgreSQL's migration of the same number
-- rekeys its `seq` tables for a distributed deployment; here `seq` is the rowid,
-- the table's storage order, and stays). The work ledger's index on the work id
-- alone stops being unique, as there (ids are UUIDv7s; the key is
-- (namespace_id, id)).
DROP INDEX processing_state_id;
CREATE INDEX processing_state_by_id ON processing_state (id);
