-- D101: who created a document version, as a typed principal, recorded when the
-- version is created and never changed. Deleting a principal keeps the version
-- (its attribution becomes NULL). The foreign key is NOT VALID: every existing row
-- is NULL, and later writes are still checked.
CREATE TABLE ingest_principals (
    id           text PRIMARY KEY,
    namespace_id text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('user', 'api_credential', 'service')),
    external_ref text NOT NULL,
    created_at   timestamptz NOT NULL,
    UNIQUE (namespace_id, kind, external_ref)
);

ALTER TABLE document_versions ADD COLUMN ingested_by_principal_id text;
ALTER TABLE document_versions ADD CONSTRAINT document_versions_ingested_by_fk
    FOREIGN KEY (ingested_by_principal_id) REFERENCES ingest_principals (id)
    ON DELETE SET NULL NOT VALID;
