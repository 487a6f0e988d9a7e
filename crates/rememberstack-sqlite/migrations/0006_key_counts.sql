-- How many alias rows carry each blocking key. A key most entities share (a
-- common trigram) names no candidate in particular and makes blocking walk every
-- entity; blocking skips such keys and records its block as incomplete.
CREATE TABLE entity_key_counts (
    namespace_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    key          TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, kind, key)
);

INSERT INTO entity_key_counts (namespace_id, kind, key, n)
    SELECT namespace_id, kind, key, COUNT(*) FROM entity_keys
    GROUP BY namespace_id, kind, key;

CREATE TRIGGER entity_keys_count_insert AFTER INSERT ON entity_keys BEGIN
    INSERT INTO entity_key_counts (namespace_id, kind, key, n)
        VALUES (NEW.namespace_id, NEW.kind, NEW.key, 1)
        ON CONFLICT (namespace_id, kind, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER entity_keys_count_delete AFTER DELETE ON entity_keys BEGIN
    UPDATE entity_key_counts SET n = n - 1
     WHERE namespace_id = OLD.namespace_id AND kind = OLD.kind AND key = OLD.key;
END;
