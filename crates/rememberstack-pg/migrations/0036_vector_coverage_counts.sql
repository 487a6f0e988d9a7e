-- Vector coverage counted as the records change, not on every read, as the
-- embedded store has counted it since its migration 0035.
--
-- Every read reports its semantic readiness: how many of the namespace's current
-- chunks (or claims, or facts) there are and how many lack a vector of the
-- embedder's generation. Counting them was a joined pass over each table on every
-- read of a store being written (the cached count is keyed by the change stamp),
-- growing with the store.
--
-- `vector_coverage` holds, per namespace and target (`chunks`, `claims`, `facts`):
-- under generation '' the target's current records, and under a generation's name
-- those of them with a vector of that generation. What lacks a vector is the
-- difference. A current record is one a search can find:
--   * a chunk of its document's current version;
--   * a claim with `is_current`;
--   * a fact neither invalidated nor superseded.
--
-- Triggers keep the counts, whatever writes the rows (the store's statements, a
-- forget's scrub): an insert into or a delete from `chunks`, `claims`, `facts`,
-- `documents` or `vectors` adds what its new rows count or takes away what its old
-- rows counted, and an update that changes a counted column (a claim retired, a
-- fact invalidated, a document's current version moving) does both: one upsert
-- per statement (statement-level triggers with transition tables).
-- `PgStore::recount_vector_coverage` counts the old way, for tests.
--
-- Concurrency. The counts read other tables (a record's vectors, a vector's
-- records, a chunk's document), so two writers of a namespace must not both miss
-- each other's uncommitted rows. They cannot: every write to these tables takes
-- the namespace's `change_stamps` row and holds it until commit, and the counting
-- functions take it before they read, so their queries, each with a fresh
-- snapshot under READ COMMITTED, see every earlier writer's commit. Lock
-- order, as the BM25 statistics': the stamp row, then the counter rows in key
-- order.

CREATE TABLE vector_coverage (
    namespace_id text NOT NULL,
    target       text NOT NULL,
    generation   text NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (namespace_id, target, generation)
);

INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT c.namespace_id, 'chunks', '', COUNT(*)
  FROM chunks c
  JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
 GROUP BY c.namespace_id;
INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT c.namespace_id, 'chunks', vv.generation, COUNT(*)
  FROM chunks c
  JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
  JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
 GROUP BY c.namespace_id, vv.generation;
INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT namespace_id, 'claims', '', COUNT(*) FROM claims WHERE is_current
 GROUP BY namespace_id;
INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT c.namespace_id, 'claims', vv.generation, COUNT(*)
  FROM claims c
  JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
 WHERE c.is_current
 GROUP BY c.namespace_id, vv.generation;
INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT namespace_id, 'facts', '', COUNT(*) FROM facts
 WHERE invalidated_at IS NULL AND superseded_by IS NULL
 GROUP BY namespace_id;
INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT f.namespace_id, 'facts', vv.generation, COUNT(*)
  FROM facts f
  JOIN vectors vv ON vv.namespace_id = f.namespace_id AND vv.embedding_key = f.embedding_key
 WHERE f.invalidated_at IS NULL AND f.superseded_by IS NULL
 GROUP BY f.namespace_id, vv.generation;

-- A statement counting what the rows of `source` (a transition table's name, or a
-- subquery of one row) count, each with `sign` (1 for rows a statement added, -1
-- for rows it took away): (namespace_id, target, generation, n) rows, a record once
-- under '' and once under each generation it has a vector of; a vector once for
-- each current record of its key.
CREATE FUNCTION rs_coverage_counted(tbl text, source text, sign integer) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN tbl = 'vectors' THEN format($q$
        SELECT r.namespace_id, 'chunks' AS target, r.generation, %2$s AS n FROM %1$s r
          JOIN chunks c ON c.namespace_id = r.namespace_id AND c.embedding_key = r.embedding_key
          JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
        UNION ALL
        SELECT r.namespace_id, 'claims', r.generation, %2$s FROM %1$s r
          JOIN claims c ON c.namespace_id = r.namespace_id AND c.embedding_key = r.embedding_key
         WHERE c.is_current
        UNION ALL
        SELECT r.namespace_id, 'facts', r.generation, %2$s FROM %1$s r
          JOIN facts f ON f.namespace_id = r.namespace_id AND f.embedding_key = r.embedding_key
         WHERE f.invalidated_at IS NULL AND f.superseded_by IS NULL$q$, source, sign)
    ELSE format($q$
        SELECT x.namespace_id, x.target, g.generation, %2$s AS n FROM (%1$s) x
         CROSS JOIN LATERAL (SELECT ''::text AS generation
                             UNION ALL
                             SELECT vv.generation FROM vectors vv
                              WHERE vv.namespace_id = x.namespace_id
                                AND vv.embedding_key = x.embedding_key) g$q$,
        CASE tbl
            WHEN 'claims' THEN format($q$SELECT r.namespace_id, 'claims'::text AS target,
                r.embedding_key FROM %s r WHERE r.is_current$q$, source)
            WHEN 'facts' THEN format($q$SELECT r.namespace_id, 'facts'::text AS target,
                r.embedding_key FROM %s r
                WHERE r.invalidated_at IS NULL AND r.superseded_by IS NULL$q$, source)
            -- A chunk counts while its version is its document's current one.
            -- Whichever of a chunk and its document a writer removes first, the
            -- chunk is taken out once: a chunk removed after its document no
            -- longer finds it current.
            WHEN 'chunks' THEN format($q$SELECT r.namespace_id, 'chunks'::text AS target,
                r.embedding_key FROM %s r
                WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = r.namespace_id
                                AND d.current_version_id = r.version_id)$q$, source)
            -- A document counts the chunks of its current version.
            WHEN 'documents' THEN format($q$SELECT c.namespace_id, 'chunks'::text AS target,
                c.embedding_key FROM %s r
                JOIN chunks c ON c.namespace_id = r.namespace_id
                             AND c.version_id = r.current_version_id$q$, source)
        END, sign)
    END;

-- The statement that adds up what `parts` (statements of `rs_coverage_counted`)
-- count and applies it to `vector_coverage`, in key order. Counts that net to
-- nothing write nothing.
CREATE FUNCTION rs_coverage_upsert(parts text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN format($q$
        INSERT INTO vector_coverage (namespace_id, target, generation, n)
        SELECT d.namespace_id, d.target, d.generation, SUM(d.n) FROM (%s) d
         GROUP BY 1, 2, 3 HAVING SUM(d.n) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (namespace_id, target, generation) DO UPDATE
           SET n = vector_coverage.n + EXCLUDED.n$q$,
        array_to_string(parts, ' UNION ALL '));

-- Inserts and deletes, once per statement: what its new rows count is added, what
-- its old rows counted is taken away. (The transition tables are visible to this
-- function's own statements only, so it runs the upsert itself.)
CREATE FUNCTION rs_vector_coverage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
            RETURN NULL; -- a statement that touched no row
        END IF;
        PERFORM 1 FROM change_stamps
          WHERE namespace_id IN (SELECT namespace_id FROM old_rows)
          ORDER BY namespace_id FOR NO KEY UPDATE;
        EXECUTE rs_coverage_upsert(ARRAY[rs_coverage_counted(TG_TABLE_NAME, 'old_rows', -1)]);
    ELSE
        -- (Its own branch: an expression naming `new_rows` fails to parse in a DELETE.)
        IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
            RETURN NULL;
        END IF;
        PERFORM 1 FROM change_stamps
          WHERE namespace_id IN (SELECT namespace_id FROM new_rows)
          ORDER BY namespace_id FOR NO KEY UPDATE;
        EXECUTE rs_coverage_upsert(ARRAY[rs_coverage_counted(TG_TABLE_NAME, 'new_rows', 1)]);
    END IF;
    RETURN NULL;
END
$$;

-- Updates, once per statement, and only when it changed what its rows count: most
-- updates of these tables (a fact's evidence counts, one statement per fact, a
-- document's times) change nothing counted, and end after one cached query. An
-- update keeps its row count, so when the old rows' counted columns, as a
-- multiset, are all among the new rows', the two are equal and nothing changed.
CREATE FUNCTION rs_vector_coverage_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed boolean;
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'chunks' THEN
        changed := EXISTS (SELECT namespace_id, version_id, embedding_key FROM old_rows
                           EXCEPT ALL
                           SELECT namespace_id, version_id, embedding_key FROM new_rows);
    WHEN 'claims' THEN
        changed := EXISTS (SELECT namespace_id, is_current, embedding_key FROM old_rows
                           EXCEPT ALL
                           SELECT namespace_id, is_current, embedding_key FROM new_rows);
    WHEN 'facts' THEN
        changed := EXISTS (SELECT namespace_id, invalidated_at IS NULL AND superseded_by IS NULL,
                                  embedding_key FROM old_rows
                           EXCEPT ALL
                           SELECT namespace_id, invalidated_at IS NULL AND superseded_by IS NULL,
                                  embedding_key FROM new_rows);
    WHEN 'documents' THEN
        changed := EXISTS (SELECT namespace_id, current_version_id FROM old_rows
                           EXCEPT ALL
                           SELECT namespace_id, current_version_id FROM new_rows);
    WHEN 'vectors' THEN
        changed := EXISTS (SELECT namespace_id, generation, embedding_key FROM old_rows
                           EXCEPT ALL
                           SELECT namespace_id, generation, embedding_key FROM new_rows);
    END CASE;
    IF NOT changed THEN
        RETURN NULL;
    END IF;
    PERFORM 1 FROM change_stamps
      WHERE namespace_id IN (SELECT namespace_id FROM old_rows
                             UNION SELECT namespace_id FROM new_rows)
      ORDER BY namespace_id FOR NO KEY UPDATE;
    EXECUTE rs_coverage_upsert(ARRAY[rs_coverage_counted(TG_TABLE_NAME, 'old_rows', -1),
                                     rs_coverage_counted(TG_TABLE_NAME, 'new_rows', 1)]);
    RETURN NULL;
END
$$;

-- Named `<table>_vector_coverage_<op>`: triggers of one event fire in name order,
-- so each table's `<table>_stamp_<op>` has taken the stamp row before these read.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['chunks', 'claims', 'facts', 'documents', 'vectors']
    LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_vector_coverage()',
                       t || '_vector_coverage_insert', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_vector_coverage()',
                       t || '_vector_coverage_delete', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I
                        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_vector_coverage_update()',
                       t || '_vector_coverage_update', t);
    END LOOP;
END
$$;
