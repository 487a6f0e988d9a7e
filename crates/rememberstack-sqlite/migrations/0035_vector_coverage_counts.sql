-- Vector coverage counted as the records change, not on every read.
--
-- Every read reports its semantic readiness: how many of the namespace's current
-- chunks (or claims, or facts) there are and how many lack a vector of the
-- embedder's generation. Counting them took a pass over the whole table, and the
-- count is cached per change stamp, which every write moves: on a store being
-- written each read paid it (about a microsecond a record). These counters answer
-- it in two lookups.
--
-- `vector_coverage` holds, per namespace and target (`chunks`, `claims`, `facts`):
-- under generation '' the target's current records, and under a generation's name
-- those of them with a vector of that generation. What lacks a vector is the
-- difference. A current record is one a search can find:
--   * a chunk of its document's current version;
--   * a claim with `is_current = 1`;
--   * a fact neither invalidated nor superseded.
-- Triggers keep the counts as records, documents' current versions and vectors
-- change; a migration that rebuilds one of those tables must create its triggers
-- again. `SqliteStore::recount_vector_coverage` counts the old way, for tests.
CREATE TABLE vector_coverage (
    namespace_id TEXT NOT NULL,
    target       TEXT NOT NULL,
    generation   TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, target, generation)
) WITHOUT ROWID;

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
SELECT namespace_id, 'claims', '', COUNT(*) FROM claims WHERE is_current = 1
 GROUP BY namespace_id;
INSERT INTO vector_coverage (namespace_id, target, generation, n)
SELECT c.namespace_id, 'claims', vv.generation, COUNT(*)
  FROM claims c
  JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
 WHERE c.is_current = 1
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

-- Claims. A record counts once under '' and once under each generation it has a
-- vector of; an update of what makes it current (or of its key) takes the old
-- record out and puts the new one in.
CREATE TRIGGER claims_coverage_insert AFTER INSERT ON claims WHEN NEW.is_current = 1 BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    VALUES (NEW.namespace_id, 'claims', '', 1)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'claims', vv.generation, 1 FROM vectors vv
     WHERE vv.namespace_id = NEW.namespace_id AND vv.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER claims_coverage_delete AFTER DELETE ON claims WHEN OLD.is_current = 1 BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    VALUES (OLD.namespace_id, 'claims', '', -1)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'claims', vv.generation, -1 FROM vectors vv
     WHERE vv.namespace_id = OLD.namespace_id AND vv.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER claims_coverage_update AFTER UPDATE OF namespace_id, is_current, embedding_key
ON claims WHEN OLD.is_current = 1 OR NEW.is_current = 1 BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'claims', '', -1 WHERE OLD.is_current = 1
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'claims', vv.generation, -1 FROM vectors vv
     WHERE OLD.is_current = 1
       AND vv.namespace_id = OLD.namespace_id AND vv.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'claims', '', 1 WHERE NEW.is_current = 1
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'claims', vv.generation, 1 FROM vectors vv
     WHERE NEW.is_current = 1
       AND vv.namespace_id = NEW.namespace_id AND vv.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- Facts: current while neither invalidated nor superseded.
CREATE TRIGGER facts_coverage_insert AFTER INSERT ON facts
WHEN NEW.invalidated_at IS NULL AND NEW.superseded_by IS NULL BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    VALUES (NEW.namespace_id, 'facts', '', 1)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'facts', vv.generation, 1 FROM vectors vv
     WHERE vv.namespace_id = NEW.namespace_id AND vv.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER facts_coverage_delete AFTER DELETE ON facts
WHEN OLD.invalidated_at IS NULL AND OLD.superseded_by IS NULL BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    VALUES (OLD.namespace_id, 'facts', '', -1)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'facts', vv.generation, -1 FROM vectors vv
     WHERE vv.namespace_id = OLD.namespace_id AND vv.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER facts_coverage_update
AFTER UPDATE OF namespace_id, invalidated_at, superseded_by, embedding_key ON facts
WHEN (OLD.invalidated_at IS NULL AND OLD.superseded_by IS NULL)
  OR (NEW.invalidated_at IS NULL AND NEW.superseded_by IS NULL) BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'facts', '', -1
     WHERE OLD.invalidated_at IS NULL AND OLD.superseded_by IS NULL
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'facts', vv.generation, -1 FROM vectors vv
     WHERE OLD.invalidated_at IS NULL AND OLD.superseded_by IS NULL
       AND vv.namespace_id = OLD.namespace_id AND vv.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'facts', '', 1
     WHERE NEW.invalidated_at IS NULL AND NEW.superseded_by IS NULL
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'facts', vv.generation, 1 FROM vectors vv
     WHERE NEW.invalidated_at IS NULL AND NEW.superseded_by IS NULL
       AND vv.namespace_id = NEW.namespace_id AND vv.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- Chunks: current while their version is their document's current one. Whichever
-- of a chunk and its document goes first, the chunk is taken out once: a chunk
-- removed after its document no longer finds it current.
CREATE TRIGGER chunks_coverage_insert AFTER INSERT ON chunks
WHEN EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = NEW.namespace_id
                AND d.current_version_id = NEW.version_id) BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    VALUES (NEW.namespace_id, 'chunks', '', 1)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', vv.generation, 1 FROM vectors vv
     WHERE vv.namespace_id = NEW.namespace_id AND vv.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER chunks_coverage_delete AFTER DELETE ON chunks
WHEN EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = OLD.namespace_id
                AND d.current_version_id = OLD.version_id) BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    VALUES (OLD.namespace_id, 'chunks', '', -1)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', vv.generation, -1 FROM vectors vv
     WHERE vv.namespace_id = OLD.namespace_id AND vv.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER chunks_coverage_update AFTER UPDATE OF namespace_id, version_id, embedding_key
ON chunks BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', '', -1
     WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = OLD.namespace_id
                      AND d.current_version_id = OLD.version_id)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', vv.generation, -1 FROM vectors vv
     WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = OLD.namespace_id
                      AND d.current_version_id = OLD.version_id)
       AND vv.namespace_id = OLD.namespace_id AND vv.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', '', 1
     WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = NEW.namespace_id
                      AND d.current_version_id = NEW.version_id)
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', vv.generation, 1 FROM vectors vv
     WHERE EXISTS (SELECT 1 FROM documents d WHERE d.namespace_id = NEW.namespace_id
                      AND d.current_version_id = NEW.version_id)
       AND vv.namespace_id = NEW.namespace_id AND vv.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- A document's current version moving (a new version promoted, a deletion that
-- clears it) takes the old version's chunks out and puts the new one's in.
CREATE TRIGGER documents_coverage_insert AFTER INSERT ON documents
WHEN NEW.current_version_id IS NOT NULL BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', '', COUNT(*) FROM chunks c
     WHERE c.namespace_id = NEW.namespace_id AND c.version_id = NEW.current_version_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', vv.generation, COUNT(*) FROM chunks c
      JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
     WHERE c.namespace_id = NEW.namespace_id AND c.version_id = NEW.current_version_id
     GROUP BY vv.generation
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER documents_coverage_delete AFTER DELETE ON documents
WHEN OLD.current_version_id IS NOT NULL BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', '', -COUNT(*) FROM chunks c
     WHERE c.namespace_id = OLD.namespace_id AND c.version_id = OLD.current_version_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', vv.generation, -COUNT(*) FROM chunks c
      JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
     WHERE c.namespace_id = OLD.namespace_id AND c.version_id = OLD.current_version_id
     GROUP BY vv.generation
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER documents_coverage_update AFTER UPDATE OF namespace_id, current_version_id
ON documents WHEN OLD.current_version_id IS NOT NEW.current_version_id
               OR OLD.namespace_id IS NOT NEW.namespace_id BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', '', -COUNT(*) FROM chunks c
     WHERE c.namespace_id = OLD.namespace_id AND c.version_id = OLD.current_version_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', vv.generation, -COUNT(*) FROM chunks c
      JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
     WHERE c.namespace_id = OLD.namespace_id AND c.version_id = OLD.current_version_id
     GROUP BY vv.generation
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', '', COUNT(*) FROM chunks c
     WHERE c.namespace_id = NEW.namespace_id AND c.version_id = NEW.current_version_id
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', vv.generation, COUNT(*) FROM chunks c
      JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.embedding_key = c.embedding_key
     WHERE c.namespace_id = NEW.namespace_id AND c.version_id = NEW.current_version_id
     GROUP BY vv.generation
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

-- Vectors: a vector written or removed counts for every current record of its key.
CREATE TRIGGER vectors_coverage_insert AFTER INSERT ON vectors BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', NEW.generation, COUNT(*) FROM chunks c
      JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
     WHERE c.namespace_id = NEW.namespace_id AND c.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'claims', NEW.generation, COUNT(*) FROM claims c
     WHERE c.namespace_id = NEW.namespace_id AND c.embedding_key = NEW.embedding_key
       AND c.is_current = 1
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'facts', NEW.generation, COUNT(*) FROM facts f
     WHERE f.namespace_id = NEW.namespace_id AND f.embedding_key = NEW.embedding_key
       AND f.invalidated_at IS NULL AND f.superseded_by IS NULL
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER vectors_coverage_delete AFTER DELETE ON vectors BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', OLD.generation, -COUNT(*) FROM chunks c
      JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
     WHERE c.namespace_id = OLD.namespace_id AND c.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'claims', OLD.generation, -COUNT(*) FROM claims c
     WHERE c.namespace_id = OLD.namespace_id AND c.embedding_key = OLD.embedding_key
       AND c.is_current = 1
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'facts', OLD.generation, -COUNT(*) FROM facts f
     WHERE f.namespace_id = OLD.namespace_id AND f.embedding_key = OLD.embedding_key
       AND f.invalidated_at IS NULL AND f.superseded_by IS NULL
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER vectors_coverage_update AFTER UPDATE OF namespace_id, generation, embedding_key
ON vectors BEGIN
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'chunks', OLD.generation, -COUNT(*) FROM chunks c
      JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
     WHERE c.namespace_id = OLD.namespace_id AND c.embedding_key = OLD.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'claims', OLD.generation, -COUNT(*) FROM claims c
     WHERE c.namespace_id = OLD.namespace_id AND c.embedding_key = OLD.embedding_key
       AND c.is_current = 1
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT OLD.namespace_id, 'facts', OLD.generation, -COUNT(*) FROM facts f
     WHERE f.namespace_id = OLD.namespace_id AND f.embedding_key = OLD.embedding_key
       AND f.invalidated_at IS NULL AND f.superseded_by IS NULL
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'chunks', NEW.generation, COUNT(*) FROM chunks c
      JOIN documents d ON d.namespace_id = c.namespace_id AND d.current_version_id = c.version_id
     WHERE c.namespace_id = NEW.namespace_id AND c.embedding_key = NEW.embedding_key
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'claims', NEW.generation, COUNT(*) FROM claims c
     WHERE c.namespace_id = NEW.namespace_id AND c.embedding_key = NEW.embedding_key
       AND c.is_current = 1
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
    INSERT INTO vector_coverage (namespace_id, target, generation, n)
    SELECT NEW.namespace_id, 'facts', NEW.generation, COUNT(*) FROM facts f
     WHERE f.namespace_id = NEW.namespace_id AND f.embedding_key = NEW.embedding_key
       AND f.invalidated_at IS NULL AND f.superseded_by IS NULL
    ON CONFLICT DO UPDATE SET n = n + excluded.n;
END;
