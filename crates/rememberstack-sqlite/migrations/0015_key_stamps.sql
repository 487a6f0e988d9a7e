-- A per-namespace stamp of the blocking keys: every alias key row written or removed
-- moves it, so a process may keep the keys it read while the stamp stands.
CREATE TABLE entity_key_stamps (
    namespace_id TEXT PRIMARY KEY,
    n            INTEGER NOT NULL
);

CREATE TRIGGER entity_keys_stamp_insert AFTER INSERT ON entity_keys BEGIN
    INSERT INTO entity_key_stamps (namespace_id, n) VALUES (NEW.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER entity_keys_stamp_delete AFTER DELETE ON entity_keys BEGIN
    INSERT INTO entity_key_stamps (namespace_id, n) VALUES (OLD.namespace_id, 1)
        ON CONFLICT (namespace_id) DO UPDATE SET n = n + 1;
END;
