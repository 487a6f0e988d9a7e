-- Search joins each chunk to its lineage's current version: without this index the
-- join walks every document of the namespace per chunk.
CREATE INDEX documents_by_current ON documents (namespace_id, current_version_id);

-- A per-namespace change stamp: every write to the tables that decide read-side
-- freshness and vector coverage bumps it (in the writing transaction, whichever
-- process writes), so a reader can reuse those aggregates while it is unchanged.
CREATE TABLE change_stamps (
    namespace_id TEXT PRIMARY KEY,
    n            INTEGER NOT NULL
);

CREATE TRIGGER processing_state_stamp_insert AFTER INSERT ON processing_state BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER processing_state_stamp_update AFTER UPDATE ON processing_state BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER processing_state_stamp_delete AFTER DELETE ON processing_state BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER documents_stamp_insert AFTER INSERT ON documents BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER documents_stamp_update AFTER UPDATE ON documents BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER documents_stamp_delete AFTER DELETE ON documents BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER chunks_stamp_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER chunks_stamp_update AFTER UPDATE ON chunks BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER chunks_stamp_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER claims_stamp_insert AFTER INSERT ON claims BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER claims_stamp_update AFTER UPDATE ON claims BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER claims_stamp_delete AFTER DELETE ON claims BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER vectors_stamp_insert AFTER INSERT ON vectors BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER vectors_stamp_update AFTER UPDATE ON vectors BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER vectors_stamp_delete AFTER DELETE ON vectors BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER facts_stamp_insert AFTER INSERT ON facts BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER facts_stamp_update AFTER UPDATE ON facts BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER facts_stamp_delete AFTER DELETE ON facts BEGIN
    INSERT INTO change_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

-- Contradiction co-members are read by group.
CREATE INDEX facts_by_group ON facts (namespace_id, contradiction_group);
