-- The embedded store's migration 0035 counts each namespace's current chunks,
-- claims and facts and those with a vector of each generation (`vector_coverage`,
-- kept by triggers), so that a read's semantic readiness costs two lookups instead
-- of a pass over the table. PostgreSQL still counts with one joined statement per
-- read; the number keeps the two schema histories at the same version.
SELECT 1;
