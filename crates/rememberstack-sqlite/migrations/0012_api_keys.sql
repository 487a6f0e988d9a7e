-- API keys (D50): deployment-wide credentials, not namespace data (forget and
-- delete never touch them). Only the SHA-256 of a secret is stored; `prefix` is
-- its first characters, to tell keys apart in listings.

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    name        TEXT,
    namespaces  TEXT NOT NULL,            -- JSON array of namespace slugs
    scopes      TEXT NOT NULL,            -- JSON array of scopes
    prefix      TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
