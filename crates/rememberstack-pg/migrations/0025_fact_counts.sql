-- Each fact's counts on its own row, kept by the same rule as the embedded store
-- (its migration 0017): the distinct lineages (documents) with current testimony
-- for the fact (`evidence_count`) and against it (`contradict_count`). Every fact
-- read counted them with two correlated subqueries over its evidence and the
-- claims' currency, and every adjudication batch reads its entities' facts whole.
-- Triggers recount a fact whenever one of its inputs changes, in the statement that
-- changes it: evidence added, removed or changed, a claim's currency or lineage
-- changed or the claim removed, a fact written after its evidence.

ALTER TABLE facts ADD COLUMN evidence_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE facts ADD COLUMN contradict_count BIGINT NOT NULL DEFAULT 0;

-- The one recount. The fact's row is locked first, and the count is taken by a
-- later statement, whose snapshot (READ COMMITTED) then includes the evidence of a
-- transaction that held the row before: two writers adding evidence to one fact at
-- once never leave a count that misses the other's.
CREATE FUNCTION rs_fact_recount(ns text, fact text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM facts WHERE namespace_id = ns AND id = fact FOR UPDATE;
    UPDATE facts SET (evidence_count, contradict_count) = (
        SELECT COUNT(DISTINCT c.document_id) FILTER (WHERE e.stance = 'support'),
               COUNT(DISTINCT c.document_id) FILTER (WHERE e.stance = 'contradict')
        FROM fact_evidence e
        JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
        WHERE e.namespace_id = ns AND e.fact_id = fact AND c.is_current)
    WHERE namespace_id = ns AND id = fact;
END
$$;

CREATE FUNCTION rs_fact_counts_evidence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM rs_fact_recount(OLD.namespace_id, OLD.fact_id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM rs_fact_recount(NEW.namespace_id, NEW.fact_id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER fact_counts_evidence AFTER INSERT OR UPDATE OR DELETE ON fact_evidence
    FOR EACH ROW EXECUTE FUNCTION rs_fact_counts_evidence();

-- A claim's currency or lineage changed, or the claim removed: the facts it
-- testifies to, in fact order (two such statements lock facts in the same order).
CREATE FUNCTION rs_fact_counts_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM rs_fact_recount(e.namespace_id, e.fact_id)
       FROM (SELECT DISTINCT namespace_id, fact_id FROM fact_evidence
              WHERE namespace_id = OLD.namespace_id AND claim_id = OLD.id
              ORDER BY fact_id) e;
    RETURN NULL;
END
$$;

CREATE TRIGGER fact_counts_claim_update AFTER UPDATE OF is_current, document_id ON claims
    FOR EACH ROW
    WHEN (OLD.is_current IS DISTINCT FROM NEW.is_current
          OR OLD.document_id IS DISTINCT FROM NEW.document_id)
    EXECUTE FUNCTION rs_fact_counts_claim();

CREATE TRIGGER fact_counts_claim_delete AFTER DELETE ON claims
    FOR EACH ROW EXECUTE FUNCTION rs_fact_counts_claim();

-- A fact written after evidence naming it (no path does so today) counts it too.
CREATE FUNCTION rs_fact_counts_fact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM fact_evidence
               WHERE namespace_id = NEW.namespace_id AND fact_id = NEW.id) THEN
        PERFORM rs_fact_recount(NEW.namespace_id, NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER fact_counts_fact_insert AFTER INSERT ON facts
    FOR EACH ROW EXECUTE FUNCTION rs_fact_counts_fact();

-- The facts already stored; facts without evidence keep the default 0.
UPDATE facts f SET (evidence_count, contradict_count) = (
    SELECT COUNT(DISTINCT c.document_id) FILTER (WHERE e.stance = 'support'),
           COUNT(DISTINCT c.document_id) FILTER (WHERE e.stance = 'contradict')
    FROM fact_evidence e
    JOIN claims c ON c.namespace_id = e.namespace_id AND c.id = e.claim_id
    WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id AND c.is_current)
WHERE EXISTS (SELECT 1 FROM fact_evidence e
              WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id);
