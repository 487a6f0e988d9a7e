//! The statements of conversation compaction (the rules are on
//! `MemoryStore::compact_conversation`), shared by both stores: each renders them
//! for its dialect and adds only what its SQL needs beyond them (PostgreSQL's row
//! locks, SQLite's FTS rows and blob files).

use crate::scrub::delete_unused_vectors;
use crate::{Bind, Conn, LexicalIndex, exec, json_list, records, strings, text_pairs};
use rememberstack_core::Result;
use rememberstack_core::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet};

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

/// Remove the occurrences of the chunks in a JSON list.
pub const DELETE_OCCURRENCES: &str =
    "DELETE FROM chunk_claims WHERE namespace_id = ? AND chunk_id {IN}";

/// Remove the chunks in a JSON list.
pub const DELETE_CHUNKS: &str = "DELETE FROM chunks WHERE namespace_id = ? AND id {IN}";

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
pub use crate::scrub::DELETE_CONTENT;

/// Remove one version's bytes-derived rows, keeping what receipts, audit and
/// reuse need (see `MemoryStore::compact_conversation`): the chunks no retained
/// version reuses and no claim needs as its last occurrence, their occurrences
/// and lexical rows, blocks, the representation's text, done work, vectors
/// nothing uses any more; then the version is marked compacted. `unstarted`: its
/// processing never began, and its pending work is withdrawn.
pub async fn compact_version<C: Conn>(
    c: &mut C,
    ns: &str,
    version: &str,
    unstarted: bool,
    now: Timestamp,
) -> Result<()> {
    let binds: [Bind<'_>; 2] = [ns.into(), version.into()];
    if unstarted {
        exec(c, WITHDRAW_UNSTARTED, &binds).await?;
    }
    let chunks = records(c, VERSION_CHUNKS, &binds).await?;
    // (a) Sources of fresh extractions whose input a retained version still uses:
    // the next version reuses them instead of extracting again.
    let mut keep: BTreeSet<String> = strings(c, REUSE_SOURCES, &binds)
        .await?
        .into_iter()
        .collect();
    // (b) Every claim keeps at least one occurrence: a claim found nowhere outside
    // this version keeps one of its chunks here.
    let mut only_here: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (claim, chunk) in text_pairs(c, ONLY_HERE, &binds).await? {
        only_here.entry(claim).or_default().push(chunk);
    }
    for chunks_of_claim in only_here.values() {
        if !chunks_of_claim.iter().any(|c| keep.contains(c)) {
            keep.insert(chunks_of_claim[0].clone());
        }
    }
    let mut seqs = Vec::new();
    let mut ids = Vec::new();
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for ((seq, id), key) in chunks.seqs.iter().zip(&chunks.ids).zip(&chunks.keys) {
        if !keep.contains(id) {
            seqs.push(*seq);
            ids.push(id.clone());
            keys.insert(key.clone());
        }
    }
    let idlist = json_list(&ids);
    c.delete_lexical(ns, LexicalIndex::Chunks, &seqs).await?;
    exec(c, DELETE_OCCURRENCES, &[ns.into(), (&idlist).into()]).await?;
    exec(c, DELETE_CHUNKS, &[ns.into(), (&idlist).into()]).await?;
    for statement in [
        DELETE_REUSED_DECISIONS,
        DELETE_BLOCKS,
        BLANK_REPRESENTATION,
        DELETE_DONE_WORK,
    ] {
        exec(c, statement, &binds).await?;
    }
    delete_unused_vectors(c, ns, &keys).await?;
    exec(c, MARK_COMPACTED, &[now.into(), ns.into(), version.into()]).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dialect;

    fn rendered(d: Dialect) -> String {
        [
            ("LINEAGE", LINEAGE),
            ("EXTRACTION_OPEN", EXTRACTION_OPEN),
            ("SUPERSEDED", SUPERSEDED),
            ("OPEN_WORK", OPEN_WORK),
            ("WITHDRAW_UNSTARTED", WITHDRAW_UNSTARTED),
            ("VERSION_CHUNKS", VERSION_CHUNKS),
            ("REUSE_SOURCES", REUSE_SOURCES),
            ("ONLY_HERE", ONLY_HERE),
            ("DELETE_OCCURRENCES", DELETE_OCCURRENCES),
            ("DELETE_CHUNKS", DELETE_CHUNKS),
            ("DELETE_REUSED_DECISIONS", DELETE_REUSED_DECISIONS),
            ("DELETE_BLOCKS", DELETE_BLOCKS),
            ("BLANK_REPRESENTATION", BLANK_REPRESENTATION),
            ("DELETE_DONE_WORK", DELETE_DONE_WORK),
            ("MARK_COMPACTED", MARK_COMPACTED),
            ("BYTES_RETAINED", BYTES_RETAINED),
        ]
        .iter()
        .map(|(name, t)| format!("-- {name}\n{};\n", d.render(t)))
        .collect::<Vec<_>>()
        .join("\n")
    }

    #[test]
    fn compact_statements_sqlite() {
        insta::assert_snapshot!(rendered(Dialect::Sqlite));
    }

    #[test]
    fn compact_statements_postgres() {
        insta::assert_snapshot!(rendered(Dialect::Postgres));
    }
}
