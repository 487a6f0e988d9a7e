//! The statements of conversation compaction (the rules are on
//! `MemoryStore::compact_conversation`), shared by both stores: each runs them
//! through its `?`-placeholder helpers, adding only what its SQL needs beyond them
//! (PostgreSQL's row locks, SQLite's FTS rows and blob files).

/// The lineage's kind, tombstone, and current and latest versions.
pub const LINEAGE: &str = "SELECT d.source_kind, d.deleted_at,
        (SELECT ordinal FROM document_versions WHERE namespace_id = d.namespace_id
           AND id = d.current_version_id) AS current_ordinal,
        d.current_version_id,
        (SELECT ordinal FROM document_versions WHERE namespace_id = d.namespace_id
           AND id = d.latest_version_id) AS latest_ordinal
 FROM documents d WHERE d.namespace_id = ? AND d.id = ?";

/// A row when the version still has unfinished work of a stage that reads earlier
/// versions' extractions (reuse): nothing older goes before it is past them.
pub const EXTRACTION_OPEN: &str = "SELECT 1 FROM processing_state
 WHERE namespace_id = ? AND version_id = ?
   AND stage IN ('e0.prepare', 'e1.chunk', 'e2.extract')
   AND status NOT IN ('done', 'dead_letter') LIMIT 1";

/// The lineage's uncompacted versions before the latest, oldest first, with
/// whether each was prepared.
pub const SUPERSEDED: &str = "SELECT v.id, v.ordinal, v.content_sha256,
        EXISTS (SELECT 1 FROM representations r
                WHERE r.namespace_id = v.namespace_id AND r.version_id = v.id) AS prepared
 FROM document_versions v
 WHERE v.namespace_id = ? AND v.document_id = ? AND v.compacted_at IS NULL AND v.ordinal < ?
 ORDER BY v.ordinal";

/// The statuses of a version's unfinished work.
pub const OPEN_WORK: &str = "SELECT status FROM processing_state
 WHERE namespace_id = ? AND version_id = ? AND status NOT IN ('done', 'dead_letter')";

/// Withdraw the pending work of a version whose processing never began.
pub const WITHDRAW_UNSTARTED: &str = "DELETE FROM processing_state
 WHERE namespace_id = ? AND version_id = ? AND status = 'pending'";

/// A version's chunks: `seq, id, embedding_key`.
pub const VERSION_CHUNKS: &str =
    "SELECT seq, id, embedding_key FROM chunks WHERE namespace_id = ? AND version_id = ?";

/// Sources of the version's fresh extractions whose input a retained version still
/// uses: the next version reuses them instead of extracting again.
pub const REUSE_SOURCES: &str = "SELECT DISTINCT d.chunk_id FROM claim_extraction_decisions d
 WHERE d.namespace_id = ? AND d.version_id = ? AND d.kind <> 'reused'
   AND EXISTS (SELECT 1 FROM claim_extraction_decisions r
       JOIN document_versions rv ON rv.namespace_id = r.namespace_id AND rv.id = r.version_id
       WHERE r.namespace_id = d.namespace_id AND r.document_id = d.document_id
         AND r.extraction_input_hash = d.extraction_input_hash
         AND r.version_id <> d.version_id AND rv.compacted_at IS NULL)";

/// `claim_id, chunk_id` of the version's occurrences of claims found in no other
/// version: each such claim keeps one of these chunks as its evidence.
pub const ONLY_HERE: &str = "SELECT cc.claim_id, cc.chunk_id FROM chunk_claims cc
 WHERE cc.namespace_id = ? AND cc.version_id = ?
   AND NOT EXISTS (SELECT 1 FROM chunk_claims o WHERE o.namespace_id = cc.namespace_id
       AND o.claim_id = cc.claim_id AND o.version_id <> cc.version_id)
 ORDER BY cc.claim_id, cc.chunk_id";

/// Remove the occurrences of the chunks in a list (`in_list`: the store's
/// `IN (…)` over one JSON array parameter).
pub fn delete_occurrences(in_list: &str) -> String {
    format!("DELETE FROM chunk_claims WHERE namespace_id = ? AND chunk_id {in_list}")
}

/// Remove the chunks in a list (as [`delete_occurrences`]).
pub fn delete_chunks(in_list: &str) -> String {
    format!("DELETE FROM chunks WHERE namespace_id = ? AND id {in_list}")
}

/// Reuse decisions only point at another chunk's extraction; the fresh ones stay
/// (the extraction ledger of what was decided).
pub const DELETE_REUSED_DECISIONS: &str = "DELETE FROM claim_extraction_decisions
 WHERE namespace_id = ? AND version_id = ? AND kind = 'reused'";

/// Remove the version's blocks.
pub const DELETE_BLOCKS: &str = "DELETE FROM blocks WHERE namespace_id = ? AND version_id = ?";

/// Empty the version's representation; sections and the title stay (the kept
/// chunks are read with them).
pub const BLANK_REPRESENTATION: &str = "UPDATE representations SET markdown = '', turns_json = '[]'
 WHERE namespace_id = ? AND version_id = ?";

/// Done work goes, unless a transcript or a cost row names it; dead letters stay
/// for `status` and `retry`.
pub const DELETE_DONE_WORK: &str = "DELETE FROM processing_state
 WHERE namespace_id = ? AND version_id = ? AND status = 'done'
   AND NOT EXISTS (SELECT 1 FROM llm_transcripts t
       WHERE t.namespace_id = processing_state.namespace_id AND t.processing_id = processing_state.id)
   AND NOT EXISTS (SELECT 1 FROM cost_ledger l
       WHERE l.namespace_id = processing_state.namespace_id AND l.processing_id = processing_state.id)";

/// Mark the version compacted (binds: the time, namespace, version).
pub const MARK_COMPACTED: &str =
    "UPDATE document_versions SET compacted_at = ? WHERE namespace_id = ? AND id = ?";

/// A row when a retained version holds the same bytes (the original stays).
pub const BYTES_RETAINED: &str = "SELECT 1 FROM document_versions
 WHERE namespace_id = ? AND content_sha256 = ?
   AND compacted_at IS NULL AND admission <> 'revoked' LIMIT 1";

/// Remove an original's row.
pub const DELETE_CONTENT: &str =
    "DELETE FROM content_objects WHERE namespace_id = ? AND sha256 = ?";
