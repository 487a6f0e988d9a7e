-- Hard forget (D74). An episode per manifest: while one is incomplete its
-- namespace fails closed. The guards outlive it: forgotten bytes are refused at
-- ingest.

CREATE TABLE forget_episodes (
    namespace_id  TEXT NOT NULL,
    manifest_id   TEXT NOT NULL,
    document_id   TEXT NOT NULL,
    manifest_json TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    completed_at  TEXT,
    report_json   TEXT,
    PRIMARY KEY (namespace_id, manifest_id)
);
CREATE INDEX forget_episodes_open ON forget_episodes (namespace_id) WHERE completed_at IS NULL;

CREATE TABLE forgotten_content (
    namespace_id           TEXT NOT NULL,
    sha256                 TEXT NOT NULL,
    manifest_id            TEXT NOT NULL,
    document_id            TEXT NOT NULL,
    source_identity_sha256 TEXT NOT NULL,
    forgotten_at           TEXT NOT NULL,
    PRIMARY KEY (namespace_id, sha256)
);
