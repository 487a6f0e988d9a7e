-- Durable recall receipts (Archive ADR): what a context operation selected, with no
-- query or source text. One per (namespace, request id) when a request id is given.

CREATE TABLE recall_receipts (
    seq           INTEGER PRIMARY KEY,
    namespace_id  TEXT NOT NULL,
    id            TEXT NOT NULL,
    request_id    TEXT,
    operation     TEXT NOT NULL,
    body_json     TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE UNIQUE INDEX recall_receipts_by_request ON recall_receipts (namespace_id, request_id)
    WHERE request_id IS NOT NULL;
