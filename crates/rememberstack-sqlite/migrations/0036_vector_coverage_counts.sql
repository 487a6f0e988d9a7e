-- PostgreSQL's migration 0036 keeps the vector coverage counters this store has
-- kept since migration 0035 (`vector_coverage`); nothing changes here. The number
-- keeps the two schema histories at the same version.
SELECT 1;
