-- RememberStack embedded store, schema version 1.
-- Every table's key starts with the namespace id (except store-wide settings
-- and the namespace registry itself).

CREATE TABLE settings (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);

CREATE TABLE namespaces (
    id         TEXT PRIMARY KEY NOT NULL,
    slug       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE content_objects (
    namespace_id TEXT NOT NULL,
    sha256       TEXT NOT NULL,
    size         INTEGER NOT NULL,
    mime         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (namespace_id, sha256)
);

CREATE TABLE documents (
    namespace_id       TEXT NOT NULL,
    id                 TEXT NOT NULL,
    source_kind        TEXT NOT NULL,
    source_ref         TEXT NOT NULL,
    mode               TEXT NOT NULL CHECK (mode IN ('snapshot', 'living')),
    current_version_id TEXT,
    latest_version_id  TEXT NOT NULL,
    version_count      INTEGER NOT NULL,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, source_kind, source_ref)
);

CREATE TABLE document_versions (
    namespace_id       TEXT NOT NULL,
    id                 TEXT NOT NULL,
    document_id        TEXT NOT NULL,
    ordinal            INTEGER NOT NULL,
    content_sha256     TEXT NOT NULL,
    size               INTEGER NOT NULL,
    mime               TEXT NOT NULL,
    format             TEXT,
    source_modified_at TEXT NOT NULL,
    origin             TEXT NOT NULL CHECK (origin IN ('external', 'system')),
    metadata_json      TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, document_id, ordinal)
);

-- Every name a lineage was observed under (D134).
CREATE TABLE document_names (
    namespace_id     TEXT NOT NULL,
    document_id      TEXT NOT NULL,
    name             TEXT NOT NULL,
    first_version_id TEXT NOT NULL,
    PRIMARY KEY (namespace_id, document_id, name)
);

CREATE TABLE representations (
    namespace_id      TEXT NOT NULL,
    version_id        TEXT NOT NULL,
    markdown          TEXT NOT NULL,
    turns_json        TEXT NOT NULL,
    title             TEXT NOT NULL,
    component_version TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    PRIMARY KEY (namespace_id, version_id)
);

CREATE TABLE blocks (
    namespace_id TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    ordinal      INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    level        INTEGER,
    start_byte   INTEGER NOT NULL,
    end_byte     INTEGER NOT NULL,
    hash         TEXT NOT NULL,
    turn_json    TEXT,
    PRIMARY KEY (namespace_id, version_id, ordinal)
);

CREATE TABLE sections (
    namespace_id TEXT NOT NULL,
    version_id   TEXT NOT NULL,
    ordinal      INTEGER NOT NULL,
    block_start  INTEGER NOT NULL,
    block_end    INTEGER NOT NULL,
    level        INTEGER NOT NULL,
    title        TEXT NOT NULL,
    path_json    TEXT NOT NULL,
    role         TEXT NOT NULL,
    parent       INTEGER,
    PRIMARY KEY (namespace_id, version_id, ordinal)
);

CREATE TABLE chunks (
    seq             INTEGER PRIMARY KEY,  -- stable rowid: the FTS5 rowid of the chunk
    namespace_id    TEXT NOT NULL,
    id              TEXT NOT NULL,
    version_id      TEXT NOT NULL,
    document_id     TEXT NOT NULL,
    ordinal         INTEGER NOT NULL,
    section_ordinal INTEGER NOT NULL,
    block_start     INTEGER NOT NULL,
    block_end       INTEGER NOT NULL,
    start_byte      INTEGER NOT NULL,
    end_byte        INTEGER NOT NULL,
    char_start      INTEGER NOT NULL,
    char_end        INTEGER NOT NULL,
    text            TEXT NOT NULL,
    content_hash    TEXT NOT NULL,
    token_estimate  INTEGER NOT NULL,
    embedding_key   TEXT NOT NULL,
    event_ids_json  TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX chunks_by_version ON chunks (namespace_id, version_id, ordinal);
CREATE INDEX chunks_by_key ON chunks (namespace_id, embedding_key);

-- BM25 over chunk text lives in one FTS5 table per namespace
-- (`chunk_fts_<namespace uuid, simple form>`, rowid = chunks.seq), created on the
-- namespace's first chunk, so one namespace's term statistics never shape another's
-- ranking.

CREATE TABLE vectors (
    namespace_id  TEXT NOT NULL,
    generation    TEXT NOT NULL,
    embedding_key TEXT NOT NULL,
    dimension     INTEGER NOT NULL,
    vector        BLOB NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (namespace_id, generation, embedding_key)
);

CREATE TABLE embedder_generations (
    generation TEXT PRIMARY KEY NOT NULL,
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    dimension  INTEGER NOT NULL,
    version    TEXT NOT NULL,
    first_seen TEXT NOT NULL
);

-- The work ledger (D12, D67). Times are Unix milliseconds.
CREATE TABLE processing_state (
    namespace_id      TEXT NOT NULL,
    id                TEXT NOT NULL,
    target_kind       TEXT NOT NULL,
    target_id         TEXT NOT NULL,
    version_id        TEXT NOT NULL,
    stage             TEXT NOT NULL,
    component_version TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed', 'dead_letter')),
    attempts          INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL DEFAULT 3,
    not_before        INTEGER NOT NULL,
    defer_reason      TEXT CHECK (defer_reason IN ('scheduled', 'retry_backoff', 'budget', 'no_route')),
    lease_owner       TEXT,
    lease_expires_at  INTEGER,
    last_error        TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, target_kind, target_id, stage, component_version)
);
CREATE UNIQUE INDEX processing_state_id ON processing_state (id);
CREATE INDEX processing_state_due ON processing_state (stage, status, not_before);
CREATE INDEX processing_state_status ON processing_state (status, not_before);
CREATE INDEX processing_state_leases ON processing_state (status, lease_expires_at);
CREATE INDEX processing_state_version ON processing_state (namespace_id, version_id, stage, status);
