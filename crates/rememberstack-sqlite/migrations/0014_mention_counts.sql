-- How many mentions each entity has. Counting them on every read of an entity made
-- each read as dear as the entity's mentions (a city named in thousands of claims),
-- and the pipeline reads entities for every reference it resolves.
CREATE TABLE entity_mention_counts (
    namespace_id TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, entity_id)
);

INSERT INTO entity_mention_counts (namespace_id, entity_id, n)
    SELECT namespace_id, entity_id, COUNT(*) FROM entity_mentions
    GROUP BY namespace_id, entity_id;

CREATE TRIGGER entity_mentions_count_insert AFTER INSERT ON entity_mentions BEGIN
    INSERT INTO entity_mention_counts (namespace_id, entity_id, n)
        VALUES (NEW.namespace_id, NEW.entity_id, 1)
        ON CONFLICT (namespace_id, entity_id) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER entity_mentions_count_delete AFTER DELETE ON entity_mentions BEGIN
    UPDATE entity_mention_counts SET n = n - 1
     WHERE namespace_id = OLD.namespace_id AND entity_id = OLD.entity_id;
END;
