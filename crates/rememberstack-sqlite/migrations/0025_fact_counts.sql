-- PostgreSQL's migration 0025 puts each fact's evidence counts on its row, kept by
-- triggers, as this store has since its migration 0017: both stores now read the
-- counts by one rule. Nothing changes here; the number keeps the two schema
-- histories at the same version.
SELECT 1;
