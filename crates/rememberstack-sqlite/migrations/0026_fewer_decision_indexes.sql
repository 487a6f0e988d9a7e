-- Two indexes of the extraction decisions that no statement needs: nothing reads
-- decisions by chunk, and a document's decisions (forget, listing) are found by
-- the prefix of decisions_by_input (namespace, document, input hash) and sorted.
-- Together they were about 2% of a store's bytes.
DROP INDEX IF EXISTS decisions_by_chunk;
DROP INDEX IF EXISTS decisions_by_document;
