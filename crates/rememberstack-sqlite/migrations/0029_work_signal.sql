-- PostgreSQL's migration 0029 notifies listening workers when the ledger changes
-- (LISTEN/NOTIFY), so workers in other processes wake at once. The embedded store
-- has one writing process, whose workers run in it; nothing changes here. The
-- number keeps the two schema histories at the same version.
SELECT 1;
