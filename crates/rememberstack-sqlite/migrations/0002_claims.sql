-- Claims (E2): immutable testimony, occurrences per version-chunk, the append-only
-- extraction ledger, the currency ledger, and provider-call accounting.

CREATE TABLE claims (
    seq                   INTEGER PRIMARY KEY,  -- stable rowid: the FTS5 rowid of the claim
    namespace_id          TEXT NOT NULL,
    id                    TEXT NOT NULL,
    document_id           TEXT NOT NULL,
    text                  TEXT NOT NULL,
    added_context_json    TEXT NOT NULL,
    valid_from            TEXT,
    valid_until           TEXT,
    valid_precision       TEXT NOT NULL,
    valid_kind            TEXT NOT NULL,
    asserted_at           TEXT NOT NULL,
    extractor_version     TEXT NOT NULL,
    extraction_input_hash TEXT NOT NULL,
    origin_version_id     TEXT NOT NULL,
    origin_chunk_id       TEXT NOT NULL,
    embedding_key         TEXT NOT NULL,
    claim_key             TEXT NOT NULL,  -- extractor + text + evidence text: same testimony, same claim
    is_current            INTEGER NOT NULL DEFAULT 0,
    created_at            TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX claims_by_document ON claims (namespace_id, document_id, is_current);
CREATE INDEX claims_by_key ON claims (namespace_id, embedding_key);
CREATE INDEX claims_by_claim_key ON claims (namespace_id, document_id, claim_key);

-- Where a claim occurs: one row per (version chunk, claim), written on fresh
-- extraction and on reuse, with the spans remapped into that version.
CREATE TABLE chunk_claims (
    namespace_id          TEXT NOT NULL,
    chunk_id              TEXT NOT NULL,
    claim_id              TEXT NOT NULL,
    version_id            TEXT NOT NULL,
    document_id           TEXT NOT NULL,
    extractor_version     TEXT NOT NULL,
    extraction_input_hash TEXT NOT NULL,
    ordinal               INTEGER NOT NULL,
    spans_json            TEXT NOT NULL,
    passages_json         TEXT NOT NULL,
    event_ids_json        TEXT NOT NULL,
    reused                INTEGER NOT NULL,
    created_at            TEXT NOT NULL,
    PRIMARY KEY (namespace_id, chunk_id, claim_id)
);
CREATE INDEX chunk_claims_by_claim ON chunk_claims (namespace_id, claim_id);
CREATE INDEX chunk_claims_by_version ON chunk_claims (namespace_id, version_id);
CREATE INDEX chunk_claims_by_input ON chunk_claims (namespace_id, document_id, extraction_input_hash);

-- The append-only extraction ledger (D33).
CREATE TABLE claim_extraction_decisions (
    seq                   INTEGER PRIMARY KEY,
    namespace_id          TEXT NOT NULL,
    document_id           TEXT NOT NULL,
    version_id            TEXT NOT NULL,
    chunk_id              TEXT NOT NULL,
    extraction_input_hash TEXT NOT NULL,
    extractor_version     TEXT NOT NULL,
    kind                  TEXT NOT NULL,
    passage               TEXT,
    reason                TEXT,
    claim_id              TEXT,
    detail_json           TEXT NOT NULL,
    created_at            TEXT NOT NULL
);
CREATE INDEX decisions_by_version ON claim_extraction_decisions (namespace_id, version_id, seq);
CREATE INDEX decisions_by_chunk ON claim_extraction_decisions (namespace_id, chunk_id, seq);
CREATE INDEX decisions_by_document ON claim_extraction_decisions (namespace_id, document_id, seq);
-- The newest fresh (non-reuse) extraction of an input: the reuse lookup.
CREATE INDEX decisions_fresh ON claim_extraction_decisions (namespace_id, document_id, extraction_input_hash, seq)
    WHERE kind <> 'reused';

-- Testimony currency transitions (D54), append-only.
CREATE TABLE claim_currency_events (
    seq          INTEGER PRIMARY KEY,
    namespace_id TEXT NOT NULL,
    claim_id     TEXT NOT NULL,
    is_current   INTEGER NOT NULL,
    reason       TEXT NOT NULL,
    version_id   TEXT,
    created_at   TEXT NOT NULL
);
CREATE INDEX currency_by_claim ON claim_currency_events (namespace_id, claim_id, seq);

-- One row per provider call (D67): unique on work item + attempt + call key.
CREATE TABLE cost_ledger (
    namespace_id      TEXT NOT NULL,
    processing_id     TEXT NOT NULL,
    attempt           INTEGER NOT NULL,
    call_key          TEXT NOT NULL,
    stage             TEXT NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at        TEXT NOT NULL,
    PRIMARY KEY (namespace_id, processing_id, attempt, call_key)
);

-- Every model call's transcript (invariant: append-only; rebuilds replay from here).
CREATE TABLE llm_transcripts (
    seq            INTEGER PRIMARY KEY,
    namespace_id   TEXT NOT NULL,
    processing_id  TEXT NOT NULL,
    attempt        INTEGER NOT NULL,
    call_key       TEXT NOT NULL,
    request_hash   TEXT NOT NULL,
    model          TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    raw_output     TEXT NOT NULL,
    verdict        TEXT NOT NULL,
    reason         TEXT,
    created_at     TEXT NOT NULL
);
CREATE INDEX transcripts_by_work ON llm_transcripts (namespace_id, processing_id, attempt);
