-- Leasing work (`claim`) changes no aggregate a reader caches under the change
-- stamp: pending, failed and running work count alike in freshness. And it must
-- not take the namespace's `change_stamps` row after the ledger rows it leases: a
-- writer holding the stamp row while it waits for one of those rows (enqueueing
-- the same work item) would deadlock with it. A transaction turns the bump off for
-- such statements with the transaction-local setting `rememberstack.skip_stamp`.
CREATE OR REPLACE FUNCTION rs_stamp_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('rememberstack.skip_stamp', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO change_stamps (namespace_id, n)
        SELECT DISTINCT namespace_id, 1 FROM new_rows
        ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1;
    RETURN NULL;
END
$$;
