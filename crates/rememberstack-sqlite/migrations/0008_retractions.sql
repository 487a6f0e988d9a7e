-- Claim retraction and request-id replay of lifecycle writes.

-- A retracted claim is never current testimony again (a currency refresh skips it).
CREATE TABLE claim_retractions (
    namespace_id TEXT NOT NULL,
    claim_id     TEXT NOT NULL,
    reason       TEXT NOT NULL,
    request_id   TEXT,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (namespace_id, claim_id)
);

-- The result of every lifecycle write made under a caller's request id: an exact
-- replay returns it; the same id with another input is refused.
CREATE TABLE lifecycle_requests (
    namespace_id TEXT NOT NULL,
    request_id   TEXT NOT NULL,
    operation    TEXT NOT NULL,
    digest       TEXT NOT NULL,
    result_json  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (namespace_id, request_id)
);
