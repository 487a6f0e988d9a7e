-- A forget that could not finish says why (`last_error`; its namespace stays
-- closed while every other namespace serves). `rewrite_pending` mirrors the
-- embedded store's schema; PostgreSQL reclaims space with VACUUM, which never
-- holds a table in memory, so its forgets leave it empty.
ALTER TABLE forget_episodes ADD COLUMN last_error text;
ALTER TABLE forget_episodes ADD COLUMN rewrite_pending text;
