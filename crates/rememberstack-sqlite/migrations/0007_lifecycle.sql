-- Document deletion (D135) and fact lifecycle events.

-- A tombstoned lineage (and each of its versions) is never served again; bytes that
-- come back later are a new version processed afresh.
ALTER TABLE documents ADD COLUMN deleted_at TEXT;
ALTER TABLE document_versions ADD COLUMN deleted_at TEXT;

-- Why a fact stopped being believed, when a lifecycle operation closed it
-- (`retracted_source_removal`, `invalidated`, `corrected`).
ALTER TABLE facts ADD COLUMN closed_reason TEXT;

-- One row per deletion episode (a first deletion, or a repeat that changed something).
CREATE TABLE document_deletions (
    seq                 INTEGER PRIMARY KEY,
    namespace_id        TEXT NOT NULL,
    document_id         TEXT NOT NULL,
    deleted_at          TEXT NOT NULL,
    claims_retired      INTEGER NOT NULL,
    relations_closed    INTEGER NOT NULL,
    observations_closed INTEGER NOT NULL,
    created_at          TEXT NOT NULL
);
CREATE INDEX document_deletions_by_document ON document_deletions (namespace_id, document_id, seq);

-- Append-only lifecycle events of facts: closed by a source removal, invalidated,
-- corrected. Shown by `trace`.
CREATE TABLE fact_events (
    seq          INTEGER PRIMARY KEY,
    namespace_id TEXT NOT NULL,
    fact_id      TEXT NOT NULL,
    event        TEXT NOT NULL,
    reason       TEXT NOT NULL,
    detail_json  TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX fact_events_by_fact ON fact_events (namespace_id, fact_id, seq);
