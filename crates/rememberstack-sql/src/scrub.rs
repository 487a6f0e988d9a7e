//! The hard-forget scrub (design: "Forgetting"): every record derived from a
//! lineage, or from some of its versions, goes in one transaction, and the
//! surviving records lose every trace of it. The statements and the procedure
//! are the same on both stores; a store adds only its lexical hook
//! ([`Conn::delete_lexical`]).
//!
//! A filter over two columns is two statements, each served by its column's
//! index: an `OR` of two id lists left the planner a scan of the namespace.

use crate::{
    Bind, Conn, Dialect, Kind, LexicalIndex, exec, exists, json_ints, json_list, records,
    seq_texts, strings,
};
use rememberstack_core::forget::{ForgetCheck, ForgetManifest};
use rememberstack_core::ids::{EntityId, names_any};
use rememberstack_core::store::Receipt;
use rememberstack_core::{Error, Result};
use std::collections::{BTreeSet, HashSet};

/// A vector row no chunk, claim, fact or entity profile uses any more (both
/// stores' SQL; forget and conversation compaction remove such rows).
pub const VECTOR_UNUSED: &str =
    "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.namespace_id = vectors.namespace_id
                   AND c.embedding_key = vectors.embedding_key)
               AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.namespace_id = vectors.namespace_id
                   AND c.embedding_key = vectors.embedding_key)
               AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.namespace_id = vectors.namespace_id
                   AND f.embedding_key = vectors.embedding_key)
               AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.namespace_id = vectors.namespace_id
                   AND e.profile_key = vectors.embedding_key)";

/// `DELETE FROM table WHERE namespace_id = ? AND column {IN}`.
pub fn delete_in(table: &str, column: &str) -> String {
    format!("DELETE FROM {table} WHERE namespace_id = ? AND {column} {{IN}}")
}

/// Chunks of the versions: `seq, id, embedding_key`.
pub const CHUNKS_OF_VERSIONS: &str =
    "SELECT seq, id, embedding_key FROM chunks WHERE namespace_id = ? AND version_id {IN}";
/// Every claim of the lineage.
pub const CLAIMS_OF_LINEAGE: &str =
    "SELECT seq, id, embedding_key FROM claims WHERE namespace_id = ? AND document_id = ?";
/// The lineage's claims that occur in no version but the listed ones.
pub const CLAIMS_ONLY_IN_VERSIONS: &str = "SELECT c.seq, c.id, c.embedding_key FROM claims c
     WHERE c.namespace_id = ? AND c.document_id = ?
       AND NOT EXISTS (SELECT 1 FROM chunk_claims cc
           WHERE cc.namespace_id = c.namespace_id AND cc.claim_id = c.id
             AND cc.version_id NOT {IN})";
/// Facts the listed claims evidence, with repeats (`DISTINCT` made SQLite
/// read the namespace's evidence in fact order instead of by claim).
pub const FACTS_OF_CLAIMS: &str =
    "SELECT fact_id FROM fact_evidence WHERE namespace_id = ? AND claim_id {IN}";
/// The listed facts that no evidence supports any more.
pub const FACTS_WITHOUT_EVIDENCE: &str = "SELECT f.seq, f.id, f.embedding_key FROM facts f
     WHERE f.namespace_id = ? AND f.id {IN}
       AND NOT EXISTS (SELECT 1 FROM fact_evidence e
           WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id)";
/// Subjects and objects of the listed facts (binds: ns, list, ns, list).
pub const ENTITIES_OF_FACTS: &str =
    "SELECT subject_id FROM facts WHERE namespace_id = ? AND id {IN}
     UNION SELECT object_id FROM facts WHERE namespace_id = ? AND id {IN}
       AND object_id IS NOT NULL";
/// Correction notes among the versions (`corrections/<fact id>`).
pub const CORRECTION_NOTES: &str =
    "SELECT DISTINCT source_key FROM notes WHERE namespace_id = ? AND version_id {IN}
       AND source_key LIKE 'corrections/%'";
/// A surviving fact superseded by a removed one was never superseded.
pub const UNSUPERSEDE: &str =
    "UPDATE facts SET superseded_by = NULL WHERE namespace_id = ? AND superseded_by {IN}";
/// Entities the listed claims mention or resolved (binds: ns, list, ns, list).
pub const ENTITIES_OF_CLAIMS: &str =
    "SELECT DISTINCT entity_id FROM entity_mentions WHERE namespace_id = ? AND claim_id {IN}
     UNION SELECT DISTINCT entity_id FROM resolution_decisions WHERE namespace_id = ? AND claim_id {IN}";
/// Resolution decisions of the listed claims.
pub const DECISIONS_OF_CLAIMS: &str =
    "SELECT id FROM resolution_decisions WHERE namespace_id = ? AND claim_id {IN}";
/// Work of the listed versions.
pub const WORK_OF_VERSIONS: &str =
    "SELECT id FROM processing_state WHERE namespace_id = ? AND version_id {IN}";
/// Work on the listed records (chunks, claims, facts), read through the ledger's
/// unique key (namespace, target kind, target id, …).
pub const WORK_ON_RECORDS: &str = "SELECT id FROM processing_state
     WHERE namespace_id = ? AND target_kind IN ('chunk', 'claim', 'fact') AND target_id {IN}";
/// The listed entities nothing mentions, no fact names and no survivor
/// redirects into.
pub const UNSUPPORTED_ENTITIES: &str = "SELECT e.id FROM entities e
     WHERE e.namespace_id = ? AND e.id {IN}
       AND NOT EXISTS (SELECT 1 FROM entity_mentions m
           WHERE m.namespace_id = e.namespace_id AND m.entity_id = e.id)
       AND NOT EXISTS (SELECT 1 FROM facts f
           WHERE f.namespace_id = e.namespace_id AND f.subject_id = e.id)
       AND NOT EXISTS (SELECT 1 FROM facts f
           WHERE f.namespace_id = e.namespace_id AND f.object_id = e.id)
       AND NOT EXISTS (SELECT 1 FROM entities s
           WHERE s.namespace_id = e.namespace_id AND s.merged_into = e.id)";
/// Profile vector keys of the listed entities.
pub const PROFILE_KEYS: &str = "SELECT profile_key FROM entities
     WHERE namespace_id = ? AND profile_key IS NOT NULL AND id {IN}";
/// A surviving entity's remaining surfaces, most frequent first.
pub const SURFACES: &str =
    "SELECT surface FROM entity_mentions WHERE namespace_id = ? AND entity_id = ?
     GROUP BY surface ORDER BY COUNT(*) DESC, MIN(seq)";
/// A surviving entity's aliases no remaining surface carries.
pub const STALE_ALIASES: &str =
    "DELETE FROM entity_aliases WHERE namespace_id = ? AND entity_id = ?
       AND surface NOT {IN}";
/// A surviving entity's keys no remaining alias derives (binds: ns, e, ns, e).
pub const STALE_KEYS: &str = "DELETE FROM entity_keys WHERE namespace_id = ? AND entity_id = ?
       AND alias_lemma NOT IN (SELECT lemma FROM entity_aliases
           WHERE namespace_id = ? AND entity_id = ?)";
/// A canonical name only removed mentions carried yields to the first
/// remaining surface (binds: surface, surface, ns, e, surfaces, surface).
pub const RENAME: &str = "UPDATE entities SET
       canonical_name = (SELECT surface FROM entity_aliases a
           WHERE a.namespace_id = entities.namespace_id AND a.entity_id = entities.id
             AND a.surface = ?),
       lemma = (SELECT lemma FROM entity_aliases a
           WHERE a.namespace_id = entities.namespace_id AND a.entity_id = entities.id
             AND a.surface = ?)
     WHERE namespace_id = ? AND id = ? AND canonical_name NOT {IN}
       AND EXISTS (SELECT 1 FROM entity_aliases a
           WHERE a.namespace_id = entities.namespace_id AND a.entity_id = entities.id
             AND a.surface = ?)";
/// The profile goes (the engine rebuilds it from the surviving facts).
pub const CLEAR_PROFILE: &str = "UPDATE entities
     SET profile_summary = NULL, profile_key = NULL, profile_updated_at = NULL
     WHERE namespace_id = ? AND id = ?";
/// Key counts of keys no entity carries any more.
pub const EMPTY_KEY_COUNTS: &str =
    "DELETE FROM entity_key_counts WHERE namespace_id = ? AND n <= 0";
/// Open-vocabulary predicates nothing uses any more.
pub const UNUSED_PREDICATES: &str =
    "DELETE FROM predicates WHERE namespace_id = ? AND status = 'other'
       AND NOT EXISTS (SELECT 1 FROM staged_assertions s
           WHERE s.namespace_id = predicates.namespace_id AND s.predicate = predicates.name)
       AND NOT EXISTS (SELECT 1 FROM facts f
           WHERE f.namespace_id = predicates.namespace_id AND f.predicate = predicates.name)";
/// Content hashes of the listed versions.
pub const SHAS_OF_VERSIONS: &str = "SELECT DISTINCT content_sha256 FROM document_versions
     WHERE namespace_id = ? AND id {IN}";
/// Whether a version other than the listed ones still serves from a hash
/// (binds: ns, sha, versions).
pub const SHA_HELD_ELSEWHERE: &str = "SELECT 1 FROM document_versions
     WHERE namespace_id = ? AND content_sha256 = ? AND id NOT {IN} AND admission <> 'revoked'
     LIMIT 1";

/// Rows keyed by a removed fact: `(table, column)`, deleted after the facts'
/// ids are known and before the facts.
pub const BY_FACT: &[(&str, &str)] = &[
    ("fact_events", "fact_id"),
    ("adjudications", "target_fact"),
    ("adjudications", "result_fact"),
    ("staged_assertions", "fact_id"),
];
/// Rows keyed by a removed claim (`fact_evidence` goes first, on its own).
pub const BY_CLAIM: &[(&str, &str)] = &[
    ("adjudications", "claim_id"),
    ("staged_assertions", "claim_id"),
    ("entity_mentions", "claim_id"),
    ("normalizations", "claim_id"),
    ("claim_currency_events", "claim_id"),
    ("claim_retractions", "claim_id"),
    ("resolution_decisions", "claim_id"),
    ("chunk_claims", "claim_id"),
    ("claim_extraction_decisions", "claim_id"),
];
/// Rows keyed by a removed resolution decision.
pub const BY_DECISION: &[(&str, &str)] = &[
    ("resolution_exclusions", "decision_id"),
    ("document_entity_bindings", "anchor_decision_id"),
];
/// Rows keyed by a removed version that name its chunks: they go before the
/// chunks (whose deletion the store runs itself, to count them).
pub const BY_VERSION_BEFORE_CHUNKS: &[(&str, &str)] = &[
    ("chunk_claims", "version_id"),
    ("claim_extraction_decisions", "version_id"),
];
/// The rest of a removed version's derived rows, after its chunks.
pub const BY_VERSION: &[(&str, &str)] = &[
    ("representations", "version_id"),
    ("blocks", "version_id"),
    ("sections", "version_id"),
    ("currency_due", "version_id"),
];
/// Rows of removed work items, before the items themselves.
pub const BY_WORK: &[(&str, &str)] = &[
    ("llm_transcripts", "processing_id"),
    ("cost_ledger", "processing_id"),
    ("processing_state", "id"),
];
/// Rows keyed by a removed entity, before the entities.
pub const BY_ENTITY: &[(&str, &str)] = &[
    ("entity_aliases", "entity_id"),
    ("entity_keys", "entity_id"),
    ("document_entity_bindings", "entity_id"),
    ("resolution_decisions", "entity_id"),
    ("resolution_exclusions", "a"),
    ("resolution_exclusions", "b"),
    ("merge_events", "from_id"),
    ("merge_events", "into_id"),
];
/// The verification of a forget, by lineage: `(check, table, column)`, each
/// `SELECT COUNT(*) FROM table WHERE namespace_id = ? AND column = ?` (binds:
/// ns, doc) must be 0.
pub const VERIFY_BY_LINEAGE: &[(&str, &str, &str)] = &[
    ("documents", "documents", "id"),
    ("document_versions", "document_versions", "document_id"),
    ("document_names", "document_names", "document_id"),
    ("claims", "claims", "document_id"),
    ("chunks", "chunks", "document_id"),
    ("chunk_claims", "chunk_claims", "document_id"),
    (
        "extraction_decisions",
        "claim_extraction_decisions",
        "document_id",
    ),
    ("staged_assertions", "staged_assertions", "document_id"),
    (
        "resolution_decisions",
        "resolution_decisions",
        "document_id",
    ),
    ("notes", "notes", "document_id"),
    ("entity_bindings", "document_entity_bindings", "document_id"),
];
/// The verification by version: `(check, table)`, rows of the versions left.
pub const VERIFY_BY_VERSION: &[(&str, &str)] = &[
    ("representations", "representations"),
    ("blocks", "blocks"),
    ("sections", "sections"),
    ("work_items", "processing_state"),
];
/// The lineage's own rows when the whole lineage goes (binds: ns, doc), after
/// `note_requests` of its versions.
pub const LINEAGE_ROWS: &[&str] = &[
    "DELETE FROM document_names WHERE namespace_id = ? AND document_id = ?",
    "DELETE FROM document_deletions WHERE namespace_id = ? AND document_id = ?",
    "DELETE FROM document_entity_bindings WHERE namespace_id = ? AND document_id = ?",
    "DELETE FROM notes WHERE namespace_id = ? AND document_id = ?",
    "DELETE FROM document_versions WHERE namespace_id = ? AND document_id = ?",
    "DELETE FROM documents WHERE namespace_id = ? AND id = ?",
];
/// Remove the vectors among a JSON list of keys that nothing uses any more
/// (binds: ns, keys).
pub fn delete_unused_vectors_sql() -> String {
    format!(
        "DELETE FROM vectors WHERE namespace_id = ? AND embedding_key {{IN}} AND {VECTOR_UNUSED}"
    )
}

/// Every version of a lineage (binds: ns, doc).
pub const VERSIONS_OF_LINEAGE: &str =
    "SELECT id FROM document_versions WHERE namespace_id = ? AND document_id = ?";

/// A revoked note keeps ids, digests and times; its metadata goes with the text
/// (binds: ns, version).
pub const BLANK_NOTE_METADATA: &[&str] = &[
    "UPDATE notes SET metadata_json = '{}' WHERE namespace_id = ? AND version_id = ?",
    "UPDATE document_versions SET metadata_json = '{}' WHERE namespace_id = ? AND id = ?",
];

/// Remove an original's row (binds: ns, sha).
pub const DELETE_CONTENT: &str =
    "DELETE FROM content_objects WHERE namespace_id = ? AND sha256 = ?";

/// Blank the statement a correction recorded on the corrected fact's `corrected`
/// event (binds: ns, fact).
pub fn clear_corrected_statement(d: Dialect) -> String {
    format!(
        "UPDATE fact_events SET detail_json = {}
         WHERE namespace_id = ? AND fact_id = ? AND event = 'corrected'",
        d.json_set_null("detail_json", &["corrected_statement"])
    )
}

/// Merge snapshots written before they held only ids carried entity names
/// (binds: ns).
pub fn strip_merge_snapshot_names(d: Dialect) -> String {
    format!(
        "UPDATE merge_events SET snapshot_json = {}
         WHERE namespace_id = ? AND {} LIKE '%canonical_name%'",
        d.json_remove(
            "snapshot_json",
            &[&["from", "canonical_name"], &["into", "canonical_name"]]
        ),
        d.json_text("snapshot_json")
    )
}

/// One page of `seq, <text>` of a namespace's rows of `table`, after a `seq`
/// (binds: ns, after, page size).
pub fn page_sql(table: &str, text: &str) -> String {
    format!(
        "SELECT seq, {text} AS text FROM {table} WHERE namespace_id = ? AND seq > ?
         ORDER BY seq LIMIT ?"
    )
}

/// Remove adjudication transcripts by `seq` (binds: ns, JSON list of seqs).
pub const ADJUDICATIONS_BY_SEQ: &str =
    "DELETE FROM adjudications WHERE namespace_id = ? AND seq {IN_INT}";

/// Replace a decision's candidates (binds: JSON, seq).
pub const SET_CANDIDATES: &str =
    "UPDATE resolution_decisions SET candidates_json = {JSON} WHERE seq = ?";

/// Replace a receipt's body (binds: JSON, seq).
pub const SET_RECEIPT: &str = "UPDATE recall_receipts SET body_json = {JSON} WHERE seq = ?";

/// What a scrub removed.
#[derive(Debug, Default)]
pub struct Scrubbed {
    pub chunks: u64,
    pub claims: u64,
    pub facts: u64,
    pub entities: u64,
    pub vectors: u64,
    pub receipts_rewritten: u64,
    /// Content hashes no remaining version holds: their originals go.
    pub unreferenced_blobs: Vec<String>,
    /// Content hashes another live version still holds.
    pub shared_blobs: Vec<String>,
    /// Surviving entities whose facts, aliases or mentions changed.
    pub touched: Vec<EntityId>,
}

/// Remove the vectors among `keys` that nothing uses any more.
pub async fn delete_unused_vectors<C: Conn>(
    c: &mut C,
    ns: &str,
    keys: &BTreeSet<String>,
) -> Result<u64> {
    let keys = json_list(keys);
    exec(
        c,
        &delete_unused_vectors_sql(),
        &[ns.into(), (&keys).into()],
    )
    .await
}

/// Delete the namespace's rows of `table` whose `column` is in the JSON `list`.
async fn delete_in_list<C: Conn>(
    c: &mut C,
    ns: &str,
    table: &str,
    column: &str,
    list: &str,
) -> Result<u64> {
    exec(c, &delete_in(table, column), &[ns.into(), list.into()]).await
}

/// How many rows a paged pass over a namespace's JSON columns reads at a time.
const PAGE: i64 = 500;

/// `seq` and `text` of the namespace's rows of `table` whose `text` (an SQL
/// expression over its JSON columns) names any of `ids`, read a page at a time
/// so that neither the statement nor the memory grows with the store.
async fn rows_naming<C: Conn>(
    c: &mut C,
    table: &str,
    text: &str,
    ns: &str,
    ids: &HashSet<String>,
) -> Result<Vec<(i64, String)>> {
    let mut out = Vec::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let sql = page_sql(table, text);
    let mut after = 0i64;
    loop {
        let rows = seq_texts(c, &sql, &[ns.into(), after.into(), PAGE.into()]).await?;
        let Some(&(last, _)) = rows.last() else { break };
        after = last;
        let full = rows.len() as i64 == PAGE;
        out.extend(rows.into_iter().filter(|(_, body)| names_any(body, ids)));
        if !full {
            break;
        }
    }
    Ok(out)
}

/// A decision's candidates without the entities in `removed`.
fn without_candidates(candidates_json: &str, removed: &HashSet<String>) -> Result<String> {
    let mut candidates: Vec<serde_json::Value> = serde_json::from_str(candidates_json)
        .map_err(|e| Error::store(format!("corrupt candidates: {e}")))?;
    candidates.retain(|c| {
        !c.get("entity_id")
            .and_then(|v| v.as_str())
            .is_some_and(|id| removed.contains(id))
    });
    Ok(serde_json::Value::Array(candidates).to_string())
}

/// Remove every record derived from `versions` of lineage `doc` (all of its
/// versions and the lineage rows themselves when `whole`): representations,
/// chunks, claims that occur nowhere else, their mentions, decisions, evidence,
/// normalizations and staged assertions, facts and entities left without
/// support, vectors no record uses any more, ledger rows and transcripts of the
/// versions' work, and the forgotten records' traces in receipts and feedback.
pub async fn scrub<C: Conn>(
    c: &mut C,
    ns: &str,
    doc: &str,
    versions: &[String],
    whole: bool,
) -> Result<Scrubbed> {
    let d = c.dialect();
    let mut out = Scrubbed::default();
    let vlist = json_list(versions);
    let (nsb, vb): (Bind<'_>, Bind<'_>) = (ns.into(), (&vlist).into());

    // Chunks of the versions.
    let chunks = records(c, CHUNKS_OF_VERSIONS, &[nsb, vb]).await?;
    let (chunk_seqs, chunk_ids) = (chunks.seqs, chunks.ids);
    let mut keys: BTreeSet<String> = chunks.keys.into_iter().collect();

    // Claims: every claim of the lineage, or those occurring only in the versions.
    let claims = if whole {
        records(c, CLAIMS_OF_LINEAGE, &[nsb, doc.into()]).await?
    } else {
        records(c, CLAIMS_ONLY_IN_VERSIONS, &[nsb, doc.into(), vb]).await?
    };
    let (claim_seqs, claim_ids) = (claims.seqs, claims.ids);
    keys.extend(claims.keys);
    let clist = json_list(&claim_ids);
    let cb: Bind<'_> = (&clist).into();

    // Facts the claims evidence; those left with no evidence at all go.
    let affected_facts: BTreeSet<String> = strings(c, FACTS_OF_CLAIMS, &[nsb, cb])
        .await?
        .into_iter()
        .collect();
    delete_in_list(c, ns, "fact_evidence", "claim_id", &clist).await?;
    let flist_affected = json_list(&affected_facts);
    let fab: Bind<'_> = (&flist_affected).into();
    let facts = records(c, FACTS_WITHOUT_EVIDENCE, &[nsb, fab]).await?;
    let (fact_seqs, fact_ids) = (facts.seqs, facts.ids);
    keys.extend(facts.keys);
    let flist = json_list(&fact_ids);
    // Entities of every affected fact, removed or surviving.
    let mut entity_candidates: BTreeSet<String> =
        strings(c, ENTITIES_OF_FACTS, &[nsb, fab, nsb, fab])
            .await?
            .into_iter()
            .collect();

    // Removed facts: their lexical rows, events, transcripts, staged assertions.
    c.delete_lexical(ns, LexicalIndex::Facts, &fact_seqs)
        .await?;
    // A correction's statement lives in its system note (`corrections/<fact id>`)
    // and was also recorded on the corrected fact's `corrected` event: scrubbing
    // that note's versions blanks the statement there too, so forgetting or
    // revoking the correction leaves no copy of its text.
    for key in strings(c, CORRECTION_NOTES, &[nsb, vb]).await? {
        let fact = key.trim_start_matches("corrections/");
        exec(c, &clear_corrected_statement(d), &[nsb, fact.into()]).await?;
    }
    for (table, column) in BY_FACT {
        delete_in_list(c, ns, table, column, &flist).await?;
    }
    // Adjudication transcripts naming a removed fact anywhere (inside the
    // candidates and input too): the JSON columns are read a page at a time and
    // searched for the removed ids in Rust, so the statement's size does not grow
    // with the number of facts removed.
    let removed_facts: HashSet<String> = fact_ids.iter().cloned().collect();
    let text = format!(
        "{} || {}",
        d.json_text("candidates_json"),
        d.json_text("input_json")
    );
    let naming: Vec<i64> = rows_naming(c, "adjudications", &text, ns, &removed_facts)
        .await?
        .into_iter()
        .map(|(seq, _)| seq)
        .collect();
    let naming = json_ints(&naming);
    exec(c, ADJUDICATIONS_BY_SEQ, &[nsb, (&naming).into()]).await?;
    exec(c, UNSUPERSEDE, &[nsb, (&flist).into()]).await?;
    out.facts = delete_in_list(c, ns, "facts", "id", &flist).await?;

    // Claims and everything keyed by them.
    c.delete_lexical(ns, LexicalIndex::Claims, &claim_seqs)
        .await?;
    entity_candidates.extend(strings(c, ENTITIES_OF_CLAIMS, &[nsb, cb, nsb, cb]).await?);
    let decisions = strings(c, DECISIONS_OF_CLAIMS, &[nsb, cb]).await?;
    let dlist = json_list(&decisions);
    for (table, column) in BY_CLAIM {
        delete_in_list(c, ns, table, column, &clist).await?;
    }
    for (table, column) in BY_DECISION {
        delete_in_list(c, ns, table, column, &dlist).await?;
    }
    for (table, column) in BY_VERSION_BEFORE_CHUNKS {
        delete_in_list(c, ns, table, column, &vlist).await?;
    }
    out.claims = delete_in_list(c, ns, "claims", "id", &clist).await?;

    // Chunks and the versions' representations.
    c.delete_lexical(ns, LexicalIndex::Chunks, &chunk_seqs)
        .await?;
    out.chunks = delete_in_list(c, ns, "chunks", "version_id", &vlist).await?;
    for (table, column) in BY_VERSION {
        delete_in_list(c, ns, table, column, &vlist).await?;
    }

    // Ledger rows of the versions' work (and of the removed records), with their
    // transcripts and accounting.
    let mut work: BTreeSet<String> = strings(c, WORK_OF_VERSIONS, &[nsb, vb])
        .await?
        .into_iter()
        .collect();
    let targets = json_list(chunk_ids.iter().chain(&claim_ids).chain(&fact_ids));
    work.extend(strings(c, WORK_ON_RECORDS, &[nsb, (&targets).into()]).await?);
    let wlist = json_list(&work);
    for (table, column) in BY_WORK {
        delete_in_list(c, ns, table, column, &wlist).await?;
    }

    // Entities: those nothing mentions, no fact names and no survivor redirects
    // into go, with their aliases, keys, bindings, exclusions and merges.
    let elist_candidates = json_list(&entity_candidates);
    let ecb: Bind<'_> = (&elist_candidates).into();
    let doomed = strings(c, UNSUPPORTED_ENTITIES, &[nsb, ecb]).await?;
    let elist = json_list(&doomed);
    for (table, column) in BY_ENTITY {
        delete_in_list(c, ns, table, column, &elist).await?;
    }
    // Merge snapshots written before they held only ids carried entity names,
    // which may be the forgotten document's words: they go.
    exec(c, &strip_merge_snapshot_names(d), &[nsb]).await?;
    keys.extend(strings(c, PROFILE_KEYS, &[nsb, ecb]).await?);
    out.entities = delete_in_list(c, ns, "entities", "id", &elist).await?;
    // Surviving decisions no longer list removed entities among their candidates
    // (one paged pass over the namespace's decisions, whatever the number removed).
    let doomed_set: HashSet<String> = doomed.iter().cloned().collect();
    let candidates_text = d.json_text("candidates_json");
    for (seq, candidates) in
        rows_naming(c, "resolution_decisions", &candidates_text, ns, &doomed_set).await?
    {
        let json = without_candidates(&candidates, &doomed_set)?;
        exec(c, SET_CANDIDATES, &[(&json).into(), seq.into()]).await?;
    }
    // Surviving entities: aliases only the removed mentions carried go; a
    // canonical name they alone carried yields to a remaining surface; the profile
    // is cleared (the engine rebuilds it from the surviving facts).
    for e in entity_candidates
        .iter()
        .filter(|e| !doomed_set.contains(*e))
    {
        let eb: Bind<'_> = e.into();
        let surfaces = strings(c, SURFACES, &[nsb, eb]).await?;
        if let Some(first) = surfaces.first() {
            let slist = json_list(&surfaces);
            let (fb, sb): (Bind<'_>, Bind<'_>) = (first.into(), (&slist).into());
            exec(c, STALE_ALIASES, &[nsb, eb, sb]).await?;
            exec(c, STALE_KEYS, &[nsb, eb, nsb, eb]).await?;
            exec(c, RENAME, &[fb, fb, nsb, eb, sb, fb]).await?;
        }
        exec(c, CLEAR_PROFILE, &[nsb, eb]).await?;
        if let Ok(id) = e.parse() {
            out.touched.push(id);
        }
    }
    exec(c, EMPTY_KEY_COUNTS, &[nsb]).await?;
    exec(c, UNUSED_PREDICATES, &[nsb]).await?;

    // Vectors no remaining record uses.
    out.vectors = delete_unused_vectors(c, ns, &keys).await?;

    // The versions' bytes: a hash no other version of the namespace still serves
    // from goes with them.
    for sha in strings(c, SHAS_OF_VERSIONS, &[nsb, vb]).await? {
        if exists(c, SHA_HELD_ELSEWHERE, &[nsb, (&sha).into(), vb]).await? {
            out.shared_blobs.push(sha);
        } else {
            exec(c, DELETE_CONTENT, &[nsb, (&sha).into()]).await?;
            out.unreferenced_blobs.push(sha);
        }
    }

    if whole {
        delete_in_list(c, ns, "note_requests", "version_id", &vlist).await?;
        for statement in LINEAGE_ROWS {
            exec(c, statement, &[nsb, doc.into()]).await?;
        }
    }

    // Receipts and feedback: the removed records were never selected.
    let mut removed: HashSet<String> = HashSet::new();
    removed.extend(chunk_ids);
    removed.extend(claim_ids);
    removed.extend(fact_ids);
    out.receipts_rewritten = rewrite_receipts(c, ns, &removed).await?;
    delete_in_list(c, ns, "feedback", "item_ref", &json_list(&removed)).await?;
    Ok(out)
}

/// The verification of a forget that every store runs alike: the rows left of
/// the lineage and of its versions, the originals left of the hashes the
/// forget owned (`manifest` hashes not in `shared`), and the ingest guards
/// missing for the manifest's hashes. Every `remaining` must be 0.
pub async fn verify_records<C: Conn>(
    c: &mut C,
    manifest: &ForgetManifest,
    shared: &[String],
) -> Result<Vec<ForgetCheck>> {
    let ns = manifest.namespace_id.to_string();
    let doc = manifest.document_id.to_string();
    let vlist = json_list(manifest.version_ids.iter().map(|v| v.to_string()));
    let owned = json_list(
        manifest
            .content_sha256
            .iter()
            .filter(|s| !shared.contains(s)),
    );
    let all = json_list(&manifest.content_sha256);
    let mut checks = Vec::new();
    let mut check = |name: &str, n: i64| {
        checks.push(ForgetCheck {
            check: name.into(),
            remaining: n.max(0) as u64,
        })
    };
    for &(name, table, column) in VERIFY_BY_LINEAGE {
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE namespace_id = ? AND {column} = ?");
        check(name, count(c, &sql, &[(&ns).into(), (&doc).into()]).await?);
    }
    for &(name, table) in VERIFY_BY_VERSION {
        let sql =
            format!("SELECT COUNT(*) FROM {table} WHERE namespace_id = ? AND version_id {{IN}}");
        check(
            name,
            count(c, &sql, &[(&ns).into(), (&vlist).into()]).await?,
        );
    }
    check(
        "content_objects",
        count(c, ORIGINALS_LEFT, &[(&ns).into(), (&owned).into()]).await?,
    );
    let guards = count(c, GUARDS_KEPT, &[(&ns).into(), (&all).into()]).await?;
    check(
        "missing_guards",
        manifest.content_sha256.len() as i64 - guards,
    );
    Ok(checks)
}

/// Originals left among a JSON list of hashes (binds: ns, hashes).
pub const ORIGINALS_LEFT: &str =
    "SELECT COUNT(*) FROM content_objects WHERE namespace_id = ? AND sha256 {IN}";

/// Ingest guards kept for a JSON list of hashes (binds: ns, hashes).
pub const GUARDS_KEPT: &str =
    "SELECT COUNT(*) FROM forgotten_content WHERE namespace_id = ? AND sha256 {IN}";

/// The single integer `template` selects.
async fn count<C: Conn>(c: &mut C, template: &str, binds: &[Bind<'_>]) -> Result<i64> {
    let sql = c.dialect().render(template);
    match c.fetch_rendered(&sql, binds, &[Kind::Int]).await?.pop() {
        Some(mut row) => row.swap_remove(0).int(),
        None => Err(Error::store("a count returned no row")),
    }
}

/// Drop `removed` records from every receipt of the namespace that selected them
/// (the receipts are read a page at a time).
async fn rewrite_receipts<C: Conn>(c: &mut C, ns: &str, removed: &HashSet<String>) -> Result<u64> {
    let text = c.dialect().json_text("body_json");
    let mut n = 0;
    for (seq, body) in rows_naming(c, "recall_receipts", &text, ns, removed).await? {
        let mut receipt: Receipt = serde_json::from_str(&body)
            .map_err(|e| Error::store(format!("corrupt receipt: {e}")))?;
        let before = receipt.selections.len();
        receipt.selections.retain(|s| !removed.contains(&s.id));
        if receipt.selections.len() == before {
            continue;
        }
        let body = serde_json::to_string(&receipt).map_err(|e| Error::internal(e.to_string()))?;
        exec(c, SET_RECEIPT, &[(&body).into(), seq.into()]).await?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement of the scrub, as each dialect runs it.
    fn rendered(d: Dialect) -> String {
        let mut all: Vec<(String, String)> = vec![
            ("CHUNKS_OF_VERSIONS".into(), CHUNKS_OF_VERSIONS.into()),
            ("CLAIMS_OF_LINEAGE".into(), CLAIMS_OF_LINEAGE.into()),
            (
                "CLAIMS_ONLY_IN_VERSIONS".into(),
                CLAIMS_ONLY_IN_VERSIONS.into(),
            ),
            ("FACTS_OF_CLAIMS".into(), FACTS_OF_CLAIMS.into()),
            (
                "FACTS_WITHOUT_EVIDENCE".into(),
                FACTS_WITHOUT_EVIDENCE.into(),
            ),
            ("ENTITIES_OF_FACTS".into(), ENTITIES_OF_FACTS.into()),
            ("CORRECTION_NOTES".into(), CORRECTION_NOTES.into()),
            ("UNSUPERSEDE".into(), UNSUPERSEDE.into()),
            ("ENTITIES_OF_CLAIMS".into(), ENTITIES_OF_CLAIMS.into()),
            ("DECISIONS_OF_CLAIMS".into(), DECISIONS_OF_CLAIMS.into()),
            ("WORK_OF_VERSIONS".into(), WORK_OF_VERSIONS.into()),
            ("WORK_ON_RECORDS".into(), WORK_ON_RECORDS.into()),
            ("UNSUPPORTED_ENTITIES".into(), UNSUPPORTED_ENTITIES.into()),
            ("PROFILE_KEYS".into(), PROFILE_KEYS.into()),
            ("SURFACES".into(), SURFACES.into()),
            ("STALE_ALIASES".into(), STALE_ALIASES.into()),
            ("STALE_KEYS".into(), STALE_KEYS.into()),
            ("RENAME".into(), RENAME.into()),
            ("CLEAR_PROFILE".into(), CLEAR_PROFILE.into()),
            ("EMPTY_KEY_COUNTS".into(), EMPTY_KEY_COUNTS.into()),
            ("UNUSED_PREDICATES".into(), UNUSED_PREDICATES.into()),
            ("SHAS_OF_VERSIONS".into(), SHAS_OF_VERSIONS.into()),
            ("SHA_HELD_ELSEWHERE".into(), SHA_HELD_ELSEWHERE.into()),
            ("DELETE_CONTENT".into(), DELETE_CONTENT.into()),
            ("VERSIONS_OF_LINEAGE".into(), VERSIONS_OF_LINEAGE.into()),
            (
                "BLANK_NOTE_METADATA[0]".into(),
                BLANK_NOTE_METADATA[0].into(),
            ),
            (
                "BLANK_NOTE_METADATA[1]".into(),
                BLANK_NOTE_METADATA[1].into(),
            ),
            ("ADJUDICATIONS_BY_SEQ".into(), ADJUDICATIONS_BY_SEQ.into()),
            ("ORIGINALS_LEFT".into(), ORIGINALS_LEFT.into()),
            ("GUARDS_KEPT".into(), GUARDS_KEPT.into()),
            ("SET_CANDIDATES".into(), SET_CANDIDATES.into()),
            ("SET_RECEIPT".into(), SET_RECEIPT.into()),
            ("delete_unused_vectors".into(), delete_unused_vectors_sql()),
            (
                "clear_corrected_statement".into(),
                clear_corrected_statement(d),
            ),
            (
                "strip_merge_snapshot_names".into(),
                strip_merge_snapshot_names(d),
            ),
            (
                "page_sql(adjudications)".into(),
                page_sql("adjudications", "input_json"),
            ),
        ];
        for (table, column) in BY_FACT
            .iter()
            .chain(BY_CLAIM)
            .chain(BY_DECISION)
            .chain(BY_VERSION_BEFORE_CHUNKS)
            .chain(BY_VERSION)
            .chain(BY_WORK)
            .chain(BY_ENTITY)
        {
            all.push((
                format!("delete_in({table}, {column})"),
                delete_in(table, column),
            ));
        }
        for (i, s) in LINEAGE_ROWS.iter().enumerate() {
            all.push((format!("LINEAGE_ROWS[{i}]"), s.to_string()));
        }
        all.iter()
            .map(|(name, t)| format!("-- {name}\n{};\n", d.render(t)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn scrub_statements_sqlite() {
        insta::assert_snapshot!(rendered(Dialect::Sqlite));
    }

    #[test]
    fn scrub_statements_postgres() {
        insta::assert_snapshot!(rendered(Dialect::Postgres));
    }

    #[test]
    fn a_decision_loses_only_removed_candidates() {
        let removed: HashSet<String> = ["e1".to_string()].into();
        let json = without_candidates(
            r#"[{"entity_id":"e1","score":1},{"entity_id":"e2","score":0.5}]"#,
            &removed,
        )
        .unwrap();
        assert_eq!(json, r#"[{"entity_id":"e2","score":0.5}]"#);
        assert!(without_candidates("not json", &removed).is_err());
    }
}
