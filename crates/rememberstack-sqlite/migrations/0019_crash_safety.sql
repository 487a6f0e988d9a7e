-- After a crash, processing neither waits for dead processes nor loses testimony.
--
-- Each lease names the process that took it (`lease_process`: the token of the
-- lock file that process holds beside the database while it runs). A claim
-- releases the leases of a process whose lock file nobody holds any more, at once,
-- instead of waiting out the lease.
ALTER TABLE processing_state ADD COLUMN lease_process TEXT;

-- A version whose `e2.extract` units are all done owes its lineage a testimony
-- currency refresh (which claims are current). The row is written by the statement
-- that completes the last unit, so it commits with the claims it covers, and the
-- refresh deletes it in the transaction that applies the currency: a process killed
-- between the two leaves the row, and the next worker does the refresh.
CREATE TABLE currency_due (
    namespace_id TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    PRIMARY KEY (namespace_id, version_id)
);

CREATE TRIGGER currency_due_extract_done AFTER UPDATE OF status ON processing_state
WHEN NEW.stage = 'e2.extract' AND NEW.status = 'done' AND OLD.status <> 'done'
  AND NOT EXISTS (SELECT 1 FROM processing_state p
                  WHERE p.namespace_id = NEW.namespace_id AND p.version_id = NEW.version_id
                    AND p.stage = 'e2.extract'
                    AND p.status IN ('pending', 'running', 'failed', 'dead_letter'))
BEGIN
    INSERT OR IGNORE INTO currency_due (namespace_id, version_id)
    VALUES (NEW.namespace_id, NEW.version_id);
END;

-- Stores processed before this change may hold the loss already: a version whose
-- extraction is complete and which has claims no currency refresh ever touched (not
-- current, and no currency event) gets its refresh now. The refresh recomputes the
-- currency rule, so a version it changes nothing for stays as it is.
INSERT OR IGNORE INTO currency_due (namespace_id, version_id)
SELECT DISTINCT cc.namespace_id, cc.version_id
FROM chunk_claims cc
JOIN claims c ON c.namespace_id = cc.namespace_id AND c.id = cc.claim_id
WHERE c.is_current = 0
  AND NOT EXISTS (SELECT 1 FROM claim_currency_events e
                  WHERE e.namespace_id = c.namespace_id AND e.claim_id = c.id)
  AND NOT EXISTS (SELECT 1 FROM processing_state p
                  WHERE p.namespace_id = cc.namespace_id AND p.version_id = cc.version_id
                    AND p.stage = 'e2.extract' AND p.status <> 'done');
