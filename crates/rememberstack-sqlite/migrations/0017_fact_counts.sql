-- Each fact's D54 counts on its own row: the distinct lineages (documents) with
-- current testimony for it (`evidence_count`) and against it (`contradict_count`).
-- Every fact read counted them with two correlated subqueries over its evidence and
-- the claims' currency; an entity's facts are read whole by every adjudication
-- batch, and an entity of a large store has hundreds of them. Triggers recount a
-- fact whenever one of its inputs changes, in the statement that changes it, so no
-- code path can leave a count stale: evidence added, removed or changed, a claim's
-- currency or lineage changed or the claim removed, a fact written after its evidence.

ALTER TABLE facts ADD COLUMN evidence_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE facts ADD COLUMN contradict_count INTEGER NOT NULL DEFAULT 0;

-- The one recount: inserting (namespace_id, fact_id) here recounts that fact. The
-- row itself is never kept (`RAISE(IGNORE)` drops it after the recount), so the
-- triggers below only name the facts whose inputs changed.
CREATE TABLE fact_recounts (
    namespace_id TEXT NOT NULL,
    fact_id      TEXT NOT NULL
);

CREATE TRIGGER fact_recounts_recount BEFORE INSERT ON fact_recounts BEGIN
    UPDATE facts SET (evidence_count, contradict_count) = (
        SELECT COUNT(DISTINCT CASE WHEN e.stance = 'support' THEN c.document_id END),
               COUNT(DISTINCT CASE WHEN e.stance = 'contradict' THEN c.document_id END)
        FROM fact_evidence e
        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
        WHERE e.namespace_id = NEW.namespace_id AND e.fact_id = NEW.fact_id
          AND c.is_current = 1)
    WHERE namespace_id = NEW.namespace_id AND id = NEW.fact_id;
    SELECT RAISE(IGNORE);
END;

-- Facts without evidence keep the default 0.
INSERT INTO fact_recounts (namespace_id, fact_id)
    SELECT DISTINCT namespace_id, fact_id FROM fact_evidence;

CREATE TRIGGER fact_counts_evidence_insert AFTER INSERT ON fact_evidence BEGIN
    INSERT INTO fact_recounts VALUES (NEW.namespace_id, NEW.fact_id);
END;

CREATE TRIGGER fact_counts_evidence_delete AFTER DELETE ON fact_evidence BEGIN
    INSERT INTO fact_recounts VALUES (OLD.namespace_id, OLD.fact_id);
END;

CREATE TRIGGER fact_counts_evidence_update AFTER UPDATE ON fact_evidence BEGIN
    INSERT INTO fact_recounts VALUES (OLD.namespace_id, OLD.fact_id),
                                     (NEW.namespace_id, NEW.fact_id);
END;

CREATE TRIGGER fact_counts_claim_update AFTER UPDATE OF is_current, document_id ON claims
WHEN OLD.is_current IS NOT NEW.is_current OR OLD.document_id IS NOT NEW.document_id BEGIN
    INSERT INTO fact_recounts
        SELECT namespace_id, fact_id FROM fact_evidence
        WHERE namespace_id = NEW.namespace_id AND claim_id = NEW.id;
END;

CREATE TRIGGER fact_counts_claim_delete AFTER DELETE ON claims BEGIN
    INSERT INTO fact_recounts
        SELECT namespace_id, fact_id FROM fact_evidence
        WHERE namespace_id = OLD.namespace_id AND claim_id = OLD.id;
END;

-- A fact written after evidence naming it (no path does so today) counts it too.
CREATE TRIGGER fact_counts_fact_insert AFTER INSERT ON facts
WHEN EXISTS (SELECT 1 FROM fact_evidence
             WHERE namespace_id = NEW.namespace_id AND fact_id = NEW.id) BEGIN
    INSERT INTO fact_recounts VALUES (NEW.namespace_id, NEW.id);
END;
