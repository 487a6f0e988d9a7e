-- D101: who created a document version, as a typed principal, recorded when the
-- version is created and never changed. Deleting a principal keeps the version
-- (its attribution becomes NULL).
CREATE TABLE ingest_principals (
    id           TEXT PRIMARY KEY,
    namespace_id TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('user', 'api_credential', 'service')),
    external_ref TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (namespace_id, kind, external_ref)
);

ALTER TABLE document_versions ADD COLUMN ingested_by_principal_id TEXT
    REFERENCES ingest_principals (id) ON DELETE SET NULL;
