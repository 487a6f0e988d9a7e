-- PostgreSQL's migration 0032 makes its recount of a fact's evidence (a trigger
-- function) compare by its columns' collations, so it reads by index. The
-- embedded store's triggers compare text bytewise already; nothing changes here.
-- The number keeps the two schema histories at the same version.
SELECT 1;
