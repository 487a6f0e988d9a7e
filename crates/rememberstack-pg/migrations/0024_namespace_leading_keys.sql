-- Every key begins with the namespace, so that each namespace's rows can live on
-- one node of a distributed PostgreSQL (Citus: `create_distributed_table(…,
-- 'namespace_id')`, the tables colocated): a primary key or unique constraint of a
-- distributed table must contain its distribution column. Rows kept in insertion
-- order by an identity `seq` were keyed by `seq` alone; they are keyed by
-- (namespace_id, seq) now, with an index on `seq` for the joins and orderings
-- that use it. The lexical rows follow their base rows through the same pair.
-- The work ledger's index on the work id alone stops being unique (ids are
-- UUIDv7s; the key is (namespace_id, id)). Deployment-wide tables (namespaces,
-- settings, API keys, ingest principals, embedder generations) are reference
-- tables in such a deployment and keep their keys.

ALTER TABLE chunk_lexical DROP CONSTRAINT chunk_lexical_seq_fkey;
ALTER TABLE claim_lexical DROP CONSTRAINT claim_lexical_seq_fkey;
ALTER TABLE fact_lexical DROP CONSTRAINT fact_lexical_seq_fkey;

ALTER TABLE adjudications DROP CONSTRAINT adjudications_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX adjudications_by_seq ON adjudications (seq);
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX chunks_by_seq ON chunks (seq);
ALTER TABLE claim_currency_events DROP CONSTRAINT claim_currency_events_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX claim_currency_events_by_seq ON claim_currency_events (seq);
ALTER TABLE claim_extraction_decisions DROP CONSTRAINT claim_extraction_decisions_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX claim_extraction_decisions_by_seq ON claim_extraction_decisions (seq);
ALTER TABLE claims DROP CONSTRAINT claims_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX claims_by_seq ON claims (seq);
ALTER TABLE document_deletions DROP CONSTRAINT document_deletions_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX document_deletions_by_seq ON document_deletions (seq);
ALTER TABLE entities DROP CONSTRAINT entities_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX entities_by_seq ON entities (seq);
ALTER TABLE entity_mentions DROP CONSTRAINT entity_mentions_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX entity_mentions_by_seq ON entity_mentions (seq);
ALTER TABLE fact_events DROP CONSTRAINT fact_events_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX fact_events_by_seq ON fact_events (seq);
ALTER TABLE facts DROP CONSTRAINT facts_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX facts_by_seq ON facts (seq);
ALTER TABLE feedback DROP CONSTRAINT feedback_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX feedback_by_seq ON feedback (seq);
ALTER TABLE llm_transcripts DROP CONSTRAINT llm_transcripts_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX llm_transcripts_by_seq ON llm_transcripts (seq);
ALTER TABLE merge_events DROP CONSTRAINT merge_events_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX merge_events_by_seq ON merge_events (seq);
ALTER TABLE notes DROP CONSTRAINT notes_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX notes_by_seq ON notes (seq);
ALTER TABLE recall_receipts DROP CONSTRAINT recall_receipts_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX recall_receipts_by_seq ON recall_receipts (seq);
ALTER TABLE resolution_decisions DROP CONSTRAINT resolution_decisions_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX resolution_decisions_by_seq ON resolution_decisions (seq);
ALTER TABLE staged_assertions DROP CONSTRAINT staged_assertions_pkey, ADD PRIMARY KEY (namespace_id, seq);
CREATE INDEX staged_assertions_by_seq ON staged_assertions (seq);

ALTER TABLE chunk_lexical ADD FOREIGN KEY (namespace_id, seq)
    REFERENCES chunks (namespace_id, seq) ON DELETE CASCADE;
ALTER TABLE claim_lexical ADD FOREIGN KEY (namespace_id, seq)
    REFERENCES claims (namespace_id, seq) ON DELETE CASCADE;
ALTER TABLE fact_lexical ADD FOREIGN KEY (namespace_id, seq)
    REFERENCES facts (namespace_id, seq) ON DELETE CASCADE;

DROP INDEX processing_state_id;
CREATE INDEX processing_state_by_id ON processing_state (id);
