-- A forget that could not finish says why (`last_error`; its namespace stays
-- closed while every other namespace serves), and a forget whose rows are erased
-- but whose file rewrite (VACUUM) could not run says that instead
-- (`rewrite_pending`), to be retried when the store next opens or forgets.
ALTER TABLE forget_episodes ADD COLUMN last_error TEXT;
ALTER TABLE forget_episodes ADD COLUMN rewrite_pending TEXT;
