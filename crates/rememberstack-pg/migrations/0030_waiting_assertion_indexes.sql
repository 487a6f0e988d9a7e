-- Staged assertions are looked up by subject and by version only while they wait
-- to be applied (`applied_at IS NULL`: the apply order of an entity's assertions,
-- a version's subjects still to adjudicate). Once applied, a row is read by its id
-- (the adjudication record's `assertion_id`), its claim or its fact, and the two
-- indexes carried it for nothing: about 350 bytes a claim of a processed store.
-- They now hold the waiting rows only; the statements that use them name the same
-- condition.
DROP INDEX staged_by_subject;
DROP INDEX staged_by_version;
CREATE INDEX staged_by_subject ON staged_assertions (namespace_id, subject_id)
    WHERE applied_at IS NULL;
CREATE INDEX staged_by_version ON staged_assertions (namespace_id, version_id, normalizer_version)
    WHERE applied_at IS NULL;
