-- E3: normalization, the predicate registry, entities (resolution, aliases,
-- blocking keys, mentions, bindings, merges) and facts (staged assertions,
-- facts, evidence, adjudication transcripts).
-- Timestamps are RFC 3339 strings in one fixed format (milliseconds, `Z`), so they
-- compare correctly as text.

-- The work ledger learns the `barrier` defer reason (an item waiting for its
-- version's barrier). SQLite cannot alter a CHECK constraint: the table is rebuilt
-- with the same columns, in the same order, and its indexes are recreated.
CREATE TABLE processing_state_new (
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
    defer_reason      TEXT CHECK (defer_reason IN ('scheduled', 'retry_backoff', 'budget', 'no_route', 'barrier')),
    lease_owner       TEXT,
    lease_expires_at  INTEGER,
    last_error        TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, target_kind, target_id, stage, component_version)
);
INSERT INTO processing_state_new
    (namespace_id, id, target_kind, target_id, version_id, stage, component_version, status,
     attempts, max_attempts, not_before, defer_reason, lease_owner, lease_expires_at, last_error,
     created_at, updated_at)
SELECT namespace_id, id, target_kind, target_id, version_id, stage, component_version, status,
       attempts, max_attempts, not_before, defer_reason, lease_owner, lease_expires_at, last_error,
       created_at, updated_at
FROM processing_state;
DROP TABLE processing_state;
ALTER TABLE processing_state_new RENAME TO processing_state;
CREATE UNIQUE INDEX processing_state_id ON processing_state (id);
CREATE INDEX processing_state_due ON processing_state (stage, status, not_before);
CREATE INDEX processing_state_status ON processing_state (status, not_before);
CREATE INDEX processing_state_leases ON processing_state (status, lease_expires_at);
CREATE INDEX processing_state_version ON processing_state (namespace_id, version_id, stage, status);

-- The predicate registry (D5): core predicates, then `other:` values awaiting review.
CREATE TABLE predicates (
    namespace_id  TEXT NOT NULL,
    name          TEXT NOT NULL,
    description   TEXT NOT NULL,
    synonyms_json TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('core', 'other')),
    core_ordinal  INTEGER,            -- position in the core list (core rows)
    uses          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace_id, name)
);

-- A claim's normalizer output, kept for audit (one per normalizer generation).
CREATE TABLE normalizations (
    namespace_id       TEXT NOT NULL,
    claim_id           TEXT NOT NULL,
    normalizer_version TEXT NOT NULL,
    output_json        TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    PRIMARY KEY (namespace_id, claim_id, normalizer_version)
);

-- Fact assertions staged by normalization, applied later in order (D90).
CREATE TABLE staged_assertions (
    seq                INTEGER PRIMARY KEY,
    namespace_id       TEXT NOT NULL,
    id                 TEXT NOT NULL,
    claim_id           TEXT NOT NULL,
    document_id        TEXT NOT NULL,
    version_id         TEXT NOT NULL,
    normalizer_version TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('relation', 'observation')),
    subject_id         TEXT NOT NULL,
    predicate          TEXT,
    object_id          TEXT,
    statement          TEXT NOT NULL,
    valid_from         TEXT,
    valid_until        TEXT,
    valid_precision    TEXT NOT NULL,
    validity_kind      TEXT NOT NULL,
    asserted_at        TEXT NOT NULL,
    ordinal            INTEGER NOT NULL,
    created_at         TEXT NOT NULL,
    applied_at         TEXT,
    fact_id            TEXT,
    verdict            TEXT,
    UNIQUE (namespace_id, id),
    UNIQUE (namespace_id, claim_id, normalizer_version, ordinal)
);
CREATE INDEX staged_by_subject ON staged_assertions (namespace_id, subject_id, applied_at);
CREATE INDEX staged_by_version ON staged_assertions (namespace_id, version_id, normalizer_version, applied_at);

-- Entities (D95, D96): untyped referents; `merged_into` is a reversible redirect.
CREATE TABLE entities (
    seq                INTEGER PRIMARY KEY,
    namespace_id       TEXT NOT NULL,
    id                 TEXT NOT NULL,
    canonical_name     TEXT NOT NULL,
    lemma              TEXT NOT NULL,
    merged_into        TEXT,
    profile_summary    TEXT,
    profile_key        TEXT,
    profile_updated_at TEXT,
    created_at         TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX entities_by_lemma ON entities (namespace_id, lemma);
CREATE INDEX entities_by_age ON entities (namespace_id, created_at, seq);

CREATE TABLE entity_aliases (
    namespace_id TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    surface      TEXT NOT NULL,
    lemma        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (namespace_id, entity_id, surface)
);
CREATE INDEX entity_aliases_by_lemma ON entity_aliases (namespace_id, lemma);

-- Blocking keys of aliases: `lemma` (T0), `tri` (T1 trigrams), `dm` (T2 Daitch–Mokotoff).
CREATE TABLE entity_keys (
    namespace_id TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('lemma', 'tri', 'dm')),
    key          TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    alias_lemma  TEXT NOT NULL,
    PRIMARY KEY (namespace_id, kind, key, entity_id, alias_lemma)
);
CREATE INDEX entity_keys_lookup ON entity_keys (namespace_id, kind, key);

-- Where a claim names an entity (a naming transcript, D96).
CREATE TABLE entity_mentions (
    seq          INTEGER PRIMARY KEY,
    namespace_id TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    claim_id     TEXT NOT NULL,
    start_byte   INTEGER,
    end_byte     INTEGER,
    surface      TEXT NOT NULL,
    decision_id  TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX mentions_by_entity ON entity_mentions (namespace_id, entity_id, seq);

-- Append-only resolution decisions (D21, D99, D100).
CREATE TABLE resolution_decisions (
    seq              INTEGER PRIMARY KEY,
    namespace_id     TEXT NOT NULL,
    id               TEXT NOT NULL,
    claim_id         TEXT NOT NULL,
    document_id      TEXT NOT NULL,
    ordinal          INTEGER NOT NULL,
    name             TEXT NOT NULL,
    lemma            TEXT NOT NULL,
    tier             TEXT NOT NULL,
    candidates_json  TEXT NOT NULL,
    complete         INTEGER NOT NULL,
    t3_score         REAL,
    t3_outcome       TEXT NOT NULL,
    verdict          TEXT NOT NULL,
    entity_id        TEXT NOT NULL,
    rationale        TEXT NOT NULL,
    model            TEXT,
    resolver_version TEXT NOT NULL,
    features_json    TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    UNIQUE (namespace_id, id),
    UNIQUE (namespace_id, claim_id, ordinal, resolver_version)
);
CREATE INDEX decisions_by_entity ON resolution_decisions (namespace_id, entity_id, seq);

-- Cannot-link pairs, stored ordered (a < b).
CREATE TABLE resolution_exclusions (
    namespace_id TEXT NOT NULL,
    a            TEXT NOT NULL,
    b            TEXT NOT NULL,
    decision_id  TEXT NOT NULL,
    PRIMARY KEY (namespace_id, a, b)
);
CREATE INDEX exclusions_by_b ON resolution_exclusions (namespace_id, b);

-- D102 document-local bindings.
CREATE TABLE document_entity_bindings (
    namespace_id       TEXT NOT NULL,
    document_id        TEXT NOT NULL,
    lemma              TEXT NOT NULL,
    entity_id          TEXT NOT NULL,
    anchor_decision_id TEXT,
    PRIMARY KEY (namespace_id, document_id, lemma, entity_id)
);

-- Merge events (D21) with the membership snapshot; an unmerge sets `reverted_at`.
CREATE TABLE merge_events (
    seq           INTEGER PRIMARY KEY,
    namespace_id  TEXT NOT NULL,
    id            TEXT NOT NULL,
    from_id       TEXT NOT NULL,
    into_id       TEXT NOT NULL,
    snapshot_json TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    reverted_at   TEXT,
    UNIQUE (namespace_id, id)
);
CREATE INDEX merges_by_from ON merge_events (namespace_id, from_id);
CREATE INDEX merges_by_into ON merge_events (namespace_id, into_id);

-- Facts (D2, D43, D118). BM25 over statements lives in one FTS5 table per namespace
-- (`fact_fts_<namespace uuid, simple form>`, rowid = facts.seq), created on the
-- namespace's first fact.
CREATE TABLE facts (
    seq                 INTEGER PRIMARY KEY,
    namespace_id        TEXT NOT NULL,
    id                  TEXT NOT NULL,
    kind                TEXT NOT NULL CHECK (kind IN ('relation', 'observation')),
    subject_id          TEXT NOT NULL,
    predicate           TEXT,
    object_id           TEXT,
    statement           TEXT NOT NULL,
    valid_from          TEXT,
    valid_until         TEXT,
    valid_precision     TEXT NOT NULL,
    validity_kind       TEXT NOT NULL,
    recorded_at         TEXT NOT NULL,
    invalidated_at      TEXT,
    contradiction_group TEXT,
    superseded_by       TEXT,
    embedding_key       TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX facts_by_subject ON facts (namespace_id, subject_id);
CREATE INDEX facts_by_object ON facts (namespace_id, object_id);
CREATE INDEX facts_by_key ON facts (namespace_id, embedding_key);

CREATE TABLE fact_evidence (
    namespace_id TEXT NOT NULL,
    fact_id      TEXT NOT NULL,
    claim_id     TEXT NOT NULL,
    stance       TEXT NOT NULL CHECK (stance IN ('support', 'contradict')),
    added_at     TEXT NOT NULL,
    PRIMARY KEY (namespace_id, fact_id, claim_id, stance)
);
CREATE INDEX evidence_by_claim ON fact_evidence (namespace_id, claim_id);

-- Append-only adjudication transcripts.
CREATE TABLE adjudications (
    seq                 INTEGER PRIMARY KEY,
    namespace_id        TEXT NOT NULL,
    id                  TEXT NOT NULL,
    assertion_id        TEXT NOT NULL,
    claim_id            TEXT NOT NULL,
    verdict             TEXT NOT NULL,
    target_fact         TEXT,
    result_fact         TEXT NOT NULL,
    candidates_json     TEXT NOT NULL,
    reason              TEXT NOT NULL,
    input_json          TEXT NOT NULL,
    model               TEXT,
    adjudicator_version TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX adjudications_by_target ON adjudications (namespace_id, target_fact, seq);
CREATE INDEX adjudications_by_result ON adjudications (namespace_id, result_fact, seq);
