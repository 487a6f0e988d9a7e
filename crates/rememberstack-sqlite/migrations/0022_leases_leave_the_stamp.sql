-- Leasing work (`claim`: a row becomes, or stays, `running`) changes no aggregate a
-- reader caches under the change stamp: pending, failed and running work count
-- alike in freshness. Bumping the stamp on every lease threw those caches away for
-- nothing; the PostgreSQL store already skipped it (its migration 0004), and the
-- ledger's conformance test now holds both stores to it.
DROP TRIGGER processing_state_stamp_update;

CREATE TRIGGER processing_state_stamp_update AFTER UPDATE ON processing_state
WHEN NEW.status <> 'running' BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;
