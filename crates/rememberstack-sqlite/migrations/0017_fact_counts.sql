-- Each fact's D54 counts on its own row: the distinct lineages (documents) with
-- current testimony for it (`evidence_count`) and against it (`contradict_count`).
-- Every fact read counted them with two correlated subqueries over its evidence and
-- the claims' currency; an entity's facts are read whole by every adjudication
-- batch, and an entity of a large store has hundreds of them. The triggers below
-- recount a fact whenever one of its inputs changes, in the statement that changes
-- it, so no code path can leave a count stale: evidence added, removed or changed,
-- and a claim's currency or lineage changed or the claim removed.

ALTER TABLE facts ADD COLUMN evidence_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE facts ADD COLUMN contradict_count INTEGER NOT NULL DEFAULT 0;

UPDATE facts SET
    evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
        WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
          AND e.stance = 'support' AND c.is_current = 1),
    contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
        WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
          AND e.stance = 'contradict' AND c.is_current = 1);

CREATE TRIGGER fact_counts_evidence_insert AFTER INSERT ON fact_evidence BEGIN
    UPDATE facts SET
        evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'support' AND c.is_current = 1),
        contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'contradict' AND c.is_current = 1)
    WHERE namespace_id = NEW.namespace_id AND id = NEW.fact_id;
END;

CREATE TRIGGER fact_counts_evidence_delete AFTER DELETE ON fact_evidence BEGIN
    UPDATE facts SET
        evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'support' AND c.is_current = 1),
        contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'contradict' AND c.is_current = 1)
    WHERE namespace_id = OLD.namespace_id AND id = OLD.fact_id;
END;

CREATE TRIGGER fact_counts_evidence_update AFTER UPDATE ON fact_evidence BEGIN
    UPDATE facts SET
        evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'support' AND c.is_current = 1),
        contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'contradict' AND c.is_current = 1)
    WHERE (namespace_id = OLD.namespace_id AND id = OLD.fact_id)
       OR (namespace_id = NEW.namespace_id AND id = NEW.fact_id);
END;

CREATE TRIGGER fact_counts_claim_update AFTER UPDATE OF is_current, document_id ON claims
WHEN OLD.is_current IS NOT NEW.is_current OR OLD.document_id IS NOT NEW.document_id BEGIN
    UPDATE facts SET
        evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'support' AND c.is_current = 1),
        contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'contradict' AND c.is_current = 1)
    WHERE namespace_id = NEW.namespace_id
      AND id IN (SELECT fact_id FROM fact_evidence
                 WHERE namespace_id = NEW.namespace_id AND claim_id = NEW.id);
END;

CREATE TRIGGER fact_counts_claim_delete AFTER DELETE ON claims BEGIN
    UPDATE facts SET
        evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'support' AND c.is_current = 1),
        contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'contradict' AND c.is_current = 1)
    WHERE namespace_id = OLD.namespace_id
      AND id IN (SELECT fact_id FROM fact_evidence
                 WHERE namespace_id = OLD.namespace_id AND claim_id = OLD.id);
END;

-- A fact written after evidence naming it (no path does so today) counts it too.
CREATE TRIGGER fact_counts_fact_insert AFTER INSERT ON facts
WHEN EXISTS (SELECT 1 FROM fact_evidence
             WHERE namespace_id = NEW.namespace_id AND fact_id = NEW.id) BEGIN
    UPDATE facts SET
        evidence_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'support' AND c.is_current = 1),
        contradict_count = (SELECT COUNT(DISTINCT c.document_id) FROM fact_evidence e
            JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
            WHERE e.namespace_id = facts.namespace_id AND e.fact_id = facts.id
              AND e.stance = 'contradict' AND c.is_current = 1)
    WHERE seq = NEW.seq;
END;
