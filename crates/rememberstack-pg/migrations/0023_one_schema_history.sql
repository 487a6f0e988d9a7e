-- One schema history. Until here each store numbered its own migrations (SQLite
-- 0001-0022, PostgreSQL 0001-0011) while their tables and columns converged; from
-- here on both stores are at the same numbered version
-- (`rememberstack_sql::SCHEMA_VERSION`): a schema change lands in both stores'
-- migrations under the same number and name, each in its own dialect. The
-- conformance tests check both the numbering and the catalogs.
SELECT 1;
