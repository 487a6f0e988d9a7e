-- Every column that holds an id compares bytewise, like the id it names.
-- 0001 declared the primary ids `COLLATE "C"` (ordered bytewise, as in SQLite) but
-- left the columns that refer to them (`fact_evidence.fact_id`,
-- `entity_mentions.entity_id`, `facts.subject_id`, …) in the database's default
-- collation. A join such as `e.fact_id = f.id` then compares in `C` (a non-default
-- collation wins over the default one), and PostgreSQL cannot use an index built in
-- another collation: every fact read counted its evidence, and every entity read
-- counted its mentions, by scanning the whole table, so processing slowed as the
-- store grew.
--
-- Here every id column and every column that holds an id (`*_id`, `merged_into`,
-- `superseded_by`, `target_fact`, `result_fact`) becomes `COLLATE "C"`, so each
-- family of ids compares in one collation and its indexes serve its joins (they are
-- rebuilt). Namespace ids keep the default collation: they are compared only with
-- one another, and all of them keep it.

ALTER TABLE adjudications
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN assertion_id TYPE text COLLATE "C",
    ALTER COLUMN claim_id TYPE text COLLATE "C",
    ALTER COLUMN target_fact TYPE text COLLATE "C",
    ALTER COLUMN result_fact TYPE text COLLATE "C";
ALTER TABLE api_keys
    ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE blocks
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE chunk_claims
    ALTER COLUMN chunk_id TYPE text COLLATE "C",
    ALTER COLUMN claim_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C",
    ALTER COLUMN document_id TYPE text COLLATE "C";
ALTER TABLE chunks
    ALTER COLUMN version_id TYPE text COLLATE "C",
    ALTER COLUMN document_id TYPE text COLLATE "C";
ALTER TABLE claim_currency_events
    ALTER COLUMN claim_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE claim_extraction_decisions
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C",
    ALTER COLUMN chunk_id TYPE text COLLATE "C",
    ALTER COLUMN claim_id TYPE text COLLATE "C";
ALTER TABLE claim_retractions
    ALTER COLUMN claim_id TYPE text COLLATE "C",
    ALTER COLUMN request_id TYPE text COLLATE "C";
ALTER TABLE claims
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN origin_version_id TYPE text COLLATE "C",
    ALTER COLUMN origin_chunk_id TYPE text COLLATE "C";
ALTER TABLE cost_ledger
    ALTER COLUMN processing_id TYPE text COLLATE "C";
ALTER TABLE document_deletions
    ALTER COLUMN document_id TYPE text COLLATE "C";
ALTER TABLE document_entity_bindings
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN entity_id TYPE text COLLATE "C",
    ALTER COLUMN anchor_decision_id TYPE text COLLATE "C";
ALTER TABLE document_names
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN first_version_id TYPE text COLLATE "C";
ALTER TABLE document_versions
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN ingested_by_principal_id TYPE text COLLATE "C";
ALTER TABLE documents
    ALTER COLUMN current_version_id TYPE text COLLATE "C",
    ALTER COLUMN latest_version_id TYPE text COLLATE "C";
ALTER TABLE entities
    ALTER COLUMN merged_into TYPE text COLLATE "C";
ALTER TABLE entity_aliases
    ALTER COLUMN entity_id TYPE text COLLATE "C";
ALTER TABLE entity_keys
    ALTER COLUMN entity_id TYPE text COLLATE "C";
ALTER TABLE entity_mentions
    ALTER COLUMN entity_id TYPE text COLLATE "C",
    ALTER COLUMN claim_id TYPE text COLLATE "C",
    ALTER COLUMN decision_id TYPE text COLLATE "C";
ALTER TABLE fact_events
    ALTER COLUMN fact_id TYPE text COLLATE "C";
ALTER TABLE fact_evidence
    ALTER COLUMN fact_id TYPE text COLLATE "C",
    ALTER COLUMN claim_id TYPE text COLLATE "C";
ALTER TABLE facts
    ALTER COLUMN subject_id TYPE text COLLATE "C",
    ALTER COLUMN object_id TYPE text COLLATE "C",
    ALTER COLUMN superseded_by TYPE text COLLATE "C";
ALTER TABLE feedback
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN receipt_id TYPE text COLLATE "C";
ALTER TABLE forget_episodes
    ALTER COLUMN manifest_id TYPE text COLLATE "C",
    ALTER COLUMN document_id TYPE text COLLATE "C";
ALTER TABLE forgotten_content
    ALTER COLUMN manifest_id TYPE text COLLATE "C",
    ALTER COLUMN document_id TYPE text COLLATE "C";
ALTER TABLE ingest_principals
    ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE lifecycle_requests
    ALTER COLUMN request_id TYPE text COLLATE "C";
ALTER TABLE llm_transcripts
    ALTER COLUMN processing_id TYPE text COLLATE "C";
ALTER TABLE merge_events
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN from_id TYPE text COLLATE "C",
    ALTER COLUMN into_id TYPE text COLLATE "C";
ALTER TABLE normalizations
    ALTER COLUMN claim_id TYPE text COLLATE "C";
ALTER TABLE note_requests
    ALTER COLUMN request_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE notes
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE processing_state
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN target_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE recall_receipts
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN request_id TYPE text COLLATE "C";
ALTER TABLE representations
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE resolution_decisions
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN claim_id TYPE text COLLATE "C",
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN entity_id TYPE text COLLATE "C";
ALTER TABLE resolution_exclusions
    ALTER COLUMN decision_id TYPE text COLLATE "C";
ALTER TABLE sections
    ALTER COLUMN version_id TYPE text COLLATE "C";
ALTER TABLE staged_assertions
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN document_id TYPE text COLLATE "C",
    ALTER COLUMN version_id TYPE text COLLATE "C",
    ALTER COLUMN object_id TYPE text COLLATE "C",
    ALTER COLUMN fact_id TYPE text COLLATE "C";
