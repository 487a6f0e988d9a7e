-- Idle workers wake when the ledger changes, whichever process changed it.
--
-- Every process running workers on this store listens on the channel
-- `rememberstack_work`; the payload is the schema that holds the store, so stores in
-- other schemas of the same database do not wake each other. A notification goes
-- out when work is inserted, when an item comes back to pending (a park, a replay),
-- and when a lease ends (done, failed, dead letter: a worker waiting on another's
-- lease looks again). Claims (pending to running) send nothing. PostgreSQL delivers
-- notifications at commit and folds identical ones of one transaction into one, so
-- a batch of completions costs one. Without a listener nothing is queued.
CREATE FUNCTION rs_work_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('rememberstack_work', current_schema());
    RETURN NULL;
END
$$;

CREATE TRIGGER processing_state_work_inserted AFTER INSERT ON processing_state
    FOR EACH STATEMENT EXECUTE FUNCTION rs_work_notify();

CREATE TRIGGER processing_state_work_released AFTER UPDATE OF status ON processing_state
    FOR EACH ROW WHEN (OLD.status = 'running' OR (NEW.status = 'pending' AND OLD.status <> 'pending'))
    EXECUTE FUNCTION rs_work_notify();
