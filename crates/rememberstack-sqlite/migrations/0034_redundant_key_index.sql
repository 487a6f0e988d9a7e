-- The blocking keys' primary key (namespace, kind, key, entity, alias lemma)
-- begins with the columns of `entity_keys_lookup`, so it answers every lookup of a
-- key (on SQLite it covers the lookup's columns too); the second index only cost
-- every alias's keys a second index entry each.
DROP INDEX entity_keys_lookup;
