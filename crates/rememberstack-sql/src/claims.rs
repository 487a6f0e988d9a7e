//! Claims' statements both stores run as they are: the currency queue, what one
//! extractor version drew from a version's chunks, retractions and extraction
//! decisions, and the reads of claims and their occurrences by id.

statements! {
    /// How many current claims a namespace has and how many lack a vector of one
    /// generation. Binds: generation, namespace.
    VECTOR_COVERAGE = "SELECT COUNT(*) AS n,
        COALESCE(SUM(CASE WHEN vv.embedding_key IS NULL THEN 1 ELSE 0 END), 0){BIGINT}
            AS missing
 FROM claims c
 LEFT JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.generation = ?
                      AND vv.embedding_key = c.embedding_key
 WHERE c.namespace_id = ? AND c.is_current{IS_TRUE}";

    /// A namespace's claims, newest first, of one document or all, current only or
    /// not. Binds: namespace, document (or NULL), the same again, whether retired
    /// claims are included, limit.
    LIST_CLAIMS = concat!(claim_select!(), "
 WHERE c.namespace_id = ? AND (?{TEXT} IS NULL OR c.document_id = ?)
   AND (? OR c.is_current{IS_TRUE})
 ORDER BY c.seq DESC LIMIT ?");

    /// A namespace's current claims without a vector of one generation, in order.
    /// Binds: generation, namespace.
    CLAIMS_MISSING_VECTORS = "SELECT c.id, c.origin_version_id FROM claims c
 LEFT JOIN vectors vv ON vv.namespace_id = c.namespace_id AND vv.generation = ?
                      AND vv.embedding_key = c.embedding_key
 WHERE c.namespace_id = ? AND c.is_current{IS_TRUE} AND vv.embedding_key IS NULL
 ORDER BY c.seq";

    /// Claims by id, in no order. Binds: namespace, the ids (`{ANY}`).
    CLAIMS_BY_ID = concat!(claim_select!(), "
 WHERE c.namespace_id = ? AND c.id {ANY}");

    /// The occurrences of claims, each with its version's ordinal. Binds: namespace,
    /// the claim ids (`{ANY}`).
    OCCURRENCES_OF_CLAIMS = "SELECT cc.*, v.ordinal AS version_ordinal FROM chunk_claims cc
 JOIN document_versions v ON v.namespace_id = cc.namespace_id AND v.id = cc.version_id
 WHERE cc.namespace_id = ? AND cc.claim_id {ANY}";

    /// The occurrences drawn from chunks, by chunk and ordinal. Binds: namespace, the
    /// chunk ids (`{ANY}`).
    OCCURRENCES_OF_CHUNKS = "SELECT * FROM chunk_claims WHERE namespace_id = ? AND chunk_id {ANY}
 ORDER BY chunk_id, ordinal";

    /// Forget the occurrences drawn from chunks (they are written again). Binds:
    /// namespace, the chunk ids (`{ANY}`).
    DELETE_OCCURRENCES_OF_CHUNKS = "DELETE FROM chunk_claims WHERE namespace_id = ? AND chunk_id {ANY}";

    /// A document's claims by key, outside deleted versions, in order. Binds: namespace,
    /// document, the keys (`{ANY}`).
    CLAIMS_BY_KEY = "SELECT claim_key, id FROM claims c WHERE namespace_id = ? AND document_id = ?
   AND claim_key {ANY} AND NOT EXISTS
       (SELECT 1 FROM document_versions v WHERE v.namespace_id = c.namespace_id
          AND v.id = c.origin_version_id AND v.deleted_at IS NOT NULL)
 ORDER BY seq";

    /// The claims one extractor version drew from a version's chunks. Binds: each `?` in
    /// turn.
    CLAIMS_OF_VERSION = "SELECT DISTINCT claim_id FROM chunk_claims
 WHERE namespace_id = ? AND version_id = ? AND extractor_version = ?";

    /// A version's currency is recomputed. Binds: namespace, version.
    CURRENCY_DONE = "DELETE FROM currency_due WHERE namespace_id = ? AND version_id = ?";

    /// Versions whose claims' currency must be recomputed.
    CURRENCY_DUE = "SELECT namespace_id, version_id FROM currency_due ORDER BY namespace_id, version_id";

    /// A document's extraction decisions in order. Binds: namespace, document.
    EXTRACTION_DECISIONS = "SELECT * FROM claim_extraction_decisions WHERE namespace_id = ? AND document_id = ? ORDER BY seq";

    /// The retracted claims of a document. Binds: each `?` in turn.
    RETRACTED_CLAIMS_OF_DOCUMENT = "SELECT r.claim_id FROM claim_retractions r
 JOIN claims c ON c.namespace_id = r.namespace_id AND c.id = r.claim_id
 WHERE r.namespace_id = ? AND c.document_id = ?";
}
