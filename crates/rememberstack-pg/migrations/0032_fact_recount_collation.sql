-- The recount of a fact's evidence (migration 0025) compared its arguments with
-- the columns as passed: a trigger passes `namespace_id` (the database's collation)
-- and `fact_id` (bytewise, "C"), so the function's arguments took conflicting
-- collations, the comparisons lost the indexes' collations, and every recount
-- scanned all the facts and all the evidence of the store (1 ms at 10k facts, and
-- growing with it, for each evidence row written). Each comparison now names the
-- collation of its column, so the recount reads by index whatever the caller
-- passes.
CREATE OR REPLACE FUNCTION rs_fact_recount(ns text, fact text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM facts
      WHERE namespace_id = ns COLLATE "default" AND id = fact COLLATE "C"
      FOR UPDATE;
    UPDATE facts SET (evidence_count, contradict_count) = (
        SELECT COUNT(DISTINCT c.document_id) FILTER (WHERE e.stance = 'support'),
               COUNT(DISTINCT c.document_id) FILTER (WHERE e.stance = 'contradict')
        FROM fact_evidence e
        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
        WHERE e.namespace_id = ns COLLATE "default" AND e.fact_id = fact COLLATE "C"
          AND c.is_current)
    WHERE namespace_id = ns COLLATE "default" AND id = fact COLLATE "C";
END
$$;
