-- Feedback on recall receipts: which selected item was useful, not useful or wrong.
-- Pruned after the configured retention.
CREATE TABLE feedback (
    seq          INTEGER PRIMARY KEY,
    namespace_id TEXT NOT NULL,
    id           TEXT NOT NULL,
    receipt_id   TEXT NOT NULL,
    item_ref     TEXT NOT NULL,
    rating       TEXT NOT NULL CHECK (rating IN ('useful', 'not_useful', 'wrong')),
    comment      TEXT,
    created_at   TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX feedback_by_receipt ON feedback (namespace_id, receipt_id, seq);
CREATE INDEX feedback_by_time ON feedback (created_at);
