-- A claim's currency and lineage beside its id. Every evidence count (a fact's
-- support and contradiction, counted per current lineage on each fact read) and
-- every currency check of a retrieval looks a claim up by id for `is_current` and
-- `document_id`: through the unique (namespace_id, id) index alone each lookup
-- also read the claim's table row, a random page of the largest table. This index
-- answers them by itself, from pages a few times denser.
CREATE INDEX claims_currency ON claims (namespace_id, id, is_current, document_id);
