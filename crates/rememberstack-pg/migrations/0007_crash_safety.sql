-- After a crash, processing does not lose testimony.
--
-- A version whose `e2.extract` units are all done owes its lineage a testimony
-- currency refresh (which claims are current). The row is written by the statement
-- that completes the last unit, so it commits with the claims it covers, and the
-- refresh deletes it in the transaction that applies the currency: a process killed
-- between the two leaves the row, and the next worker does the refresh.
CREATE TABLE currency_due (
    namespace_id text NOT NULL,
    version_id   text COLLATE "C" NOT NULL,
    PRIMARY KEY (namespace_id, version_id)
);

CREATE FUNCTION rs_currency_due() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT DISTINCT n.namespace_id, n.version_id FROM new_rows n
             WHERE n.stage = 'e2.extract' AND n.status = 'done'
             ORDER BY 1, 2
    LOOP
        -- Transactions completing the last units of one version take turns here,
        -- so the later one sees the earlier one's units done and writes the row.
        PERFORM pg_advisory_xact_lock(
            hashtextextended('currency-due:' || v.namespace_id || ':' || v.version_id, 0));
        IF NOT EXISTS (SELECT 1 FROM processing_state p
                       WHERE p.namespace_id = v.namespace_id AND p.version_id = v.version_id
                         AND p.stage = 'e2.extract' AND p.status <> 'done') THEN
            INSERT INTO currency_due (namespace_id, version_id)
                VALUES (v.namespace_id, v.version_id) ON CONFLICT DO NOTHING;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER processing_state_currency_due AFTER UPDATE ON processing_state
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rs_currency_due();

-- Stores processed before this change may hold the loss already: a version whose
-- extraction is complete and which has claims no currency refresh ever touched (not
-- current, and no currency event) gets its refresh now. The refresh recomputes the
-- currency rule, so a version it changes nothing for stays as it is.
INSERT INTO currency_due (namespace_id, version_id)
SELECT DISTINCT cc.namespace_id, cc.version_id
FROM chunk_claims cc
JOIN claims c ON c.namespace_id = cc.namespace_id AND c.id = cc.claim_id
WHERE NOT c.is_current
  AND NOT EXISTS (SELECT 1 FROM claim_currency_events e
                  WHERE e.namespace_id = c.namespace_id AND e.claim_id = c.id)
  AND NOT EXISTS (SELECT 1 FROM processing_state p
                  WHERE p.namespace_id = cc.namespace_id AND p.version_id = cc.version_id
                    AND p.stage = 'e2.extract' AND p.status <> 'done')
ON CONFLICT DO NOTHING;
