-- API keys (D50): deployment-wide credentials shared by every server process on
-- this database, not namespace data (forget and delete never touch them). Only
-- the SHA-256 of a secret is stored; `prefix` is its first characters, to tell
-- keys apart in listings. `seq` orders keys created in the same millisecond.

CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    seq         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    name        text,
    namespaces  jsonb NOT NULL,
    scopes      jsonb NOT NULL,
    prefix      text NOT NULL,
    secret_hash text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
