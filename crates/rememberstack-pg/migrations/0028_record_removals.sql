-- The embedded store's migration 0028 counts removals of chunks, claims and facts
-- (`record_removals`), which tell its in-process vector sets to read a table again
-- in full. PostgreSQL keeps no vector sets in process (its searches run in the
-- database), so nothing changes here; the number keeps the two schema histories at
-- the same version.
SELECT 1;
