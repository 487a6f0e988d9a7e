-- Removals of chunks, claims and facts, counted per namespace and table.
--
-- The embedded store keeps, per namespace and embedder generation, every record of
-- each of those tables that has a vector, and brings that set up to date by reading
-- only the rows whose `seq` is above the highest it has read: an insert costs the
-- readers its own rows, not the whole set. A removal can let a later insert take a
-- `seq` already passed (SQLite reuses the highest rowid once it is gone), so a set
-- whose table's count here moved is read again in full. Removals are rare: a hard
-- forget, a version's chunks written again, a compaction.
CREATE TABLE record_removals (
    namespace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, kind)
);

CREATE TRIGGER chunks_removal AFTER DELETE ON chunks BEGIN
    INSERT INTO record_removals (namespace_id, kind, n) VALUES (OLD.namespace_id, 'chunks', 1)
    ON CONFLICT (namespace_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER claims_removal AFTER DELETE ON claims BEGIN
    INSERT INTO record_removals (namespace_id, kind, n) VALUES (OLD.namespace_id, 'claims', 1)
    ON CONFLICT (namespace_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER facts_removal AFTER DELETE ON facts BEGIN
    INSERT INTO record_removals (namespace_id, kind, n) VALUES (OLD.namespace_id, 'facts', 1)
    ON CONFLICT (namespace_id, kind) DO UPDATE SET n = n + 1;
END;

-- A record's embedding key is written once; should one ever change, the set is
-- read again as after a removal.
CREATE TRIGGER chunks_key_change AFTER UPDATE OF embedding_key, seq ON chunks BEGIN
    INSERT INTO record_removals (namespace_id, kind, n) VALUES (OLD.namespace_id, 'chunks', 1)
    ON CONFLICT (namespace_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER claims_key_change AFTER UPDATE OF embedding_key, seq ON claims BEGIN
    INSERT INTO record_removals (namespace_id, kind, n) VALUES (OLD.namespace_id, 'claims', 1)
    ON CONFLICT (namespace_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER facts_key_change AFTER UPDATE OF embedding_key, seq ON facts BEGIN
    INSERT INTO record_removals (namespace_id, kind, n) VALUES (OLD.namespace_id, 'facts', 1)
    ON CONFLICT (namespace_id, kind) DO UPDATE SET n = n + 1;
END;
