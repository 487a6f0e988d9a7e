-- Notes (explicit memory writes) and version admission: only promoted versions
-- are eligible for recall.

ALTER TABLE document_versions ADD COLUMN admission TEXT NOT NULL DEFAULT 'promoted'
    CHECK (admission IN ('candidate', 'promoted', 'archived', 'revoked'));

-- One row per note revision; its version holds the text.
CREATE TABLE notes (
    seq               INTEGER PRIMARY KEY,
    namespace_id      TEXT NOT NULL,
    document_id       TEXT NOT NULL,
    version_id        TEXT NOT NULL,
    source_key        TEXT NOT NULL,
    source_revision   TEXT NOT NULL,
    digest            TEXT NOT NULL,
    lifecycle         TEXT NOT NULL CHECK (lifecycle IN ('candidate', 'promoted', 'archived', 'revoked')),
    lifecycle_version INTEGER NOT NULL,
    metadata_json     TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (namespace_id, source_key, source_revision),
    UNIQUE (namespace_id, version_id)
);

-- Every request id that named a note revision, with its request digest.
CREATE TABLE note_requests (
    namespace_id TEXT NOT NULL,
    request_id   TEXT NOT NULL,
    digest       TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (namespace_id, request_id)
);
