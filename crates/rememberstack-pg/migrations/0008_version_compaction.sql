-- Superseded conversation versions are compacted (their bytes and derived rows
-- go, the version row stays for receipts and audit).
ALTER TABLE document_versions ADD COLUMN compacted_at timestamptz;
-- Whether a retained version still uses an extraction input (compaction keeps
-- the chunk of its fresh extraction then).
CREATE INDEX decisions_by_input ON claim_extraction_decisions (namespace_id, document_id, extraction_input_hash);
