-- An adjudication unit (a version's assertions about one entity) is keyed by the
-- version and the entity. Until this schema, enqueueing a unit that had already run
-- did nothing, so when a version was extracted or normalized again (a new extractor
-- or normalizer generation), the new assertions of an entity the unit had decided
-- before were staged and never decided: its facts lost their current evidence and
-- dropped out of every answer. Enqueueing now runs such a unit again. Here the units
-- of every version with assertions still waiting run again, once: a unit with
-- nothing of its own waiting completes at once.
UPDATE processing_state
   SET status = 'pending', attempts = 0, defer_reason = NULL, lease_owner = NULL,
       lease_expires_at = NULL, lease_process = NULL, last_error = NULL
 WHERE target_kind = 'unit' AND status = 'done'
   AND EXISTS (SELECT 1 FROM staged_assertions s
                WHERE s.namespace_id = processing_state.namespace_id
                  AND s.version_id = processing_state.version_id
                  AND s.applied_at IS NULL);
