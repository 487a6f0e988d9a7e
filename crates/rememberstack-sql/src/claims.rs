//! Claims' statements both stores run as they are: the currency queue, what one
//! extractor version drew from a version's chunks, retractions and extraction
//! decisions.

statements! {
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
