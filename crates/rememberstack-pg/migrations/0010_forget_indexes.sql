-- Hard forget at scale (the same indexes as the embedded store's migration
-- 0021_forget_indexes): every column a forget filters removed ids by has an
-- index, so its cost follows what is removed, not the size of the store.
-- Without them, each removed entity's "does a survivor merge into it" check and
-- each removed vector's "does an entity profile use it" check scanned the
-- namespace's entities (quadratic: a 20,000-fact document took minutes).
CREATE INDEX entities_by_merge ON entities (namespace_id, merged_into) WHERE merged_into IS NOT NULL;
CREATE INDEX entities_by_profile_key ON entities (namespace_id, profile_key) WHERE profile_key IS NOT NULL;
CREATE INDEX entity_keys_by_entity ON entity_keys (namespace_id, entity_id);
CREATE INDEX mentions_by_claim ON entity_mentions (namespace_id, claim_id);
CREATE INDEX extraction_decisions_by_claim ON claim_extraction_decisions (namespace_id, claim_id)
    WHERE claim_id IS NOT NULL;
CREATE INDEX staged_by_fact ON staged_assertions (namespace_id, fact_id) WHERE fact_id IS NOT NULL;
CREATE INDEX adjudications_by_claim ON adjudications (namespace_id, claim_id);
CREATE INDEX exclusions_by_decision ON resolution_exclusions (namespace_id, decision_id);
CREATE INDEX bindings_by_entity ON document_entity_bindings (namespace_id, entity_id);
CREATE INDEX bindings_by_anchor ON document_entity_bindings (namespace_id, anchor_decision_id)
    WHERE anchor_decision_id IS NOT NULL;
CREATE INDEX facts_by_successor ON facts (namespace_id, superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX processing_state_target ON processing_state (namespace_id, target_id);
CREATE INDEX vectors_by_key ON vectors (namespace_id, embedding_key);
CREATE INDEX feedback_by_item ON feedback (namespace_id, item_ref);
CREATE INDEX note_requests_by_version ON note_requests (namespace_id, version_id);
-- The facts a claim evidences, read from the index alone (the primary key,
-- ordered by fact, was the cheaper plan otherwise: a scan of the namespace).
DROP INDEX evidence_by_claim;
CREATE INDEX evidence_by_claim ON fact_evidence (namespace_id, claim_id, fact_id);
