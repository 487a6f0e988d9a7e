//! Hard forget (D74) on PostgreSQL: the scrub of every record derived from a
//! lineage, the fail-closed episode around it, the vacuum that drops the dead
//! rows' tuples and index entries, the verification, and the re-honouring of
//! every manifest when the store connects. The scrub is the SQLite store's,
//! statement for statement (`rememberstack-sqlite/src/forget.rs`); lexical rows
//! go with their base rows (`ON DELETE CASCADE`), and originals live in
//! `content_objects`, so no blob directory is involved.
//!
//! Note revocation scrubs one revision the same way, inside the transaction
//! that revokes it.

use crate::{PgStore, db_err, parse_id};
use rememberstack_core::forget::scrub_sql as sql;
use rememberstack_core::forget::{ForgetCheck, ForgetManifest, ForgetReport, PendingForget};
use rememberstack_core::ids::*;
use rememberstack_core::source::Admission;
use rememberstack_core::store::{NoteRecord, Receipt};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use sqlx::{AssertSqlSafe, Postgres, Row, Transaction};
use std::collections::{BTreeSet, HashSet};

pub(crate) type Tx<'a> = Transaction<'a, Postgres>;

/// The scrub's SQL is written with `?` placeholders (as in the SQLite store);
/// PostgreSQL numbers them: each `?` becomes `$1`, `$2`, … in order. No statement
/// here has a `?` inside a string literal.
pub(crate) fn pg_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// A list bound as one JSON array parameter.
pub(crate) fn json_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    serde_json::Value::Array(
        items
            .into_iter()
            .map(|s| serde_json::Value::String(s.as_ref().to_string()))
            .collect(),
    )
    .to_string()
}

/// `IN` over a JSON array parameter.
pub(crate) const IN_LIST: &str = "IN (SELECT jsonb_array_elements_text(?::jsonb))";

/// What a scrub removed.
#[derive(Default)]
pub(crate) struct Scrubbed {
    pub(crate) chunks: u64,
    pub(crate) claims: u64,
    pub(crate) facts: u64,
    pub(crate) entities: u64,
    pub(crate) vectors: u64,
    pub(crate) receipts_rewritten: u64,
    /// Content hashes no remaining version holds: their originals went.
    pub(crate) unreferenced_blobs: Vec<String>,
    /// Content hashes another live version still holds.
    pub(crate) shared_blobs: Vec<String>,
    /// Surviving entities whose facts, aliases or mentions changed.
    pub(crate) touched: Vec<EntityId>,
}

pub(crate) async fn strings(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<Vec<String>> {
    let mut q = sqlx::query(AssertSqlSafe(pg_sql(sql)));
    for b in binds {
        q = q.bind(*b);
    }
    Ok(q.fetch_all(&mut **tx)
        .await
        .map_err(db_err)?
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect())
}

/// Records selected as `(id, embedding_key)`.
#[derive(Default)]
pub(crate) struct Records {
    pub(crate) ids: Vec<String>,
    pub(crate) keys: Vec<String>,
}

pub(crate) async fn records(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<Records> {
    let mut q = sqlx::query(AssertSqlSafe(pg_sql(sql)));
    for b in binds {
        q = q.bind(*b);
    }
    let mut out = Records::default();
    for r in q.fetch_all(&mut **tx).await.map_err(db_err)? {
        out.ids.push(r.get("id"));
        out.keys.push(r.get("embedding_key"));
    }
    Ok(out)
}

/// Remove the vectors among `keys` that nothing uses any more.
pub(crate) async fn delete_unused_vectors(
    tx: &mut Tx<'_>,
    ns: &str,
    keys: &BTreeSet<String>,
) -> Result<u64> {
    let sql = format!(
        "DELETE FROM vectors WHERE namespace_id = ? AND embedding_key {IN_LIST} AND {}",
        rememberstack_core::forget::VECTOR_UNUSED
    );
    exec(tx, &sql, &[ns, &json_list(keys)]).await
}

/// A shared scrub statement with this store's `IN` list.
fn q(template: &str) -> String {
    sql::with_in(template, IN_LIST)
}

/// Delete the namespace's rows of `table` whose `column` is in the JSON `list`.
async fn delete_in(
    tx: &mut Tx<'_>,
    ns: &str,
    table: &str,
    column: &str,
    list: &str,
) -> Result<u64> {
    exec(tx, &sql::delete_in(table, column, IN_LIST), &[ns, list]).await
}

/// Whether the query returns a row.
async fn exists(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<bool> {
    let mut q = sqlx::query(AssertSqlSafe(pg_sql(sql)));
    for b in binds {
        q = q.bind(*b);
    }
    Ok(q.fetch_optional(&mut **tx).await.map_err(db_err)?.is_some())
}

pub(crate) async fn exec(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<u64> {
    let mut q = sqlx::query(AssertSqlSafe(pg_sql(sql)));
    for b in binds {
        q = q.bind(*b);
    }
    Ok(q.execute(&mut **tx).await.map_err(db_err)?.rows_affected())
}

/// How many rows a paged pass over a namespace's JSON columns reads at a time.
const PAGE: i64 = 500;

/// `seq` and `text` of the namespace's rows of `table` whose `text` (an SQL
/// expression over its JSON columns) names any of `ids`, read a page at a time
/// so that neither the statement nor the memory grows with the store.
async fn rows_naming(
    tx: &mut Tx<'_>,
    table: &str,
    text: &str,
    ns: &str,
    ids: &HashSet<String>,
) -> Result<Vec<(i64, String)>> {
    let mut out = Vec::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT seq, {text} AS text FROM {table} WHERE namespace_id = $1 AND seq > $2
         ORDER BY seq LIMIT $3"
    );
    let mut after = 0i64;
    loop {
        let rows = sqlx::query(AssertSqlSafe(sql.clone()))
            .bind(ns)
            .bind(after)
            .bind(PAGE)
            .fetch_all(&mut **tx)
            .await
            .map_err(db_err)?;
        let Some(last) = rows.last() else { break };
        after = last.get("seq");
        for r in &rows {
            let body: String = r.get("text");
            if names_any(&body, ids) {
                out.push((r.get("seq"), body));
            }
        }
        if (rows.len() as i64) < PAGE {
            break;
        }
    }
    Ok(out)
}

/// Remove every record derived from `versions` of lineage `doc` (all of its
/// versions and the lineage rows themselves when `whole`): representations,
/// chunks, claims that occur nowhere else, their mentions, decisions, evidence,
/// normalizations and staged assertions, facts and entities left without
/// support, vectors no record uses any more, ledger rows and transcripts of the
/// versions' work, and the forgotten records' traces in receipts and feedback.
pub(crate) async fn scrub(
    tx: &mut Tx<'_>,
    ns: &str,
    doc: &str,
    versions: &[String],
    whole: bool,
) -> Result<Scrubbed> {
    let mut out = Scrubbed::default();
    let vlist = json_list(versions);

    // Chunks of the versions.
    let chunks = records(tx, &q(sql::CHUNKS_OF_VERSIONS), &[ns, &vlist]).await?;
    let chunk_ids = chunks.ids;
    let mut keys: BTreeSet<String> = chunks.keys.into_iter().collect();

    // Claims: every claim of the lineage, or those occurring only in the versions.
    let claims = if whole {
        records(tx, sql::CLAIMS_OF_LINEAGE, &[ns, doc]).await?
    } else {
        records(tx, &q(sql::CLAIMS_ONLY_IN_VERSIONS), &[ns, doc, &vlist]).await?
    };
    let claim_ids = claims.ids;
    keys.extend(claims.keys);
    let clist = json_list(&claim_ids);

    // Facts the claims evidence; those left with no evidence at all go.
    let affected_facts: BTreeSet<String> = strings(tx, &q(sql::FACTS_OF_CLAIMS), &[ns, &clist])
        .await?
        .into_iter()
        .collect();
    delete_in(tx, ns, "fact_evidence", "claim_id", &clist).await?;
    let flist_affected = json_list(&affected_facts);
    let facts = records(tx, &q(sql::FACTS_WITHOUT_EVIDENCE), &[ns, &flist_affected]).await?;
    let fact_ids = facts.ids;
    keys.extend(facts.keys);
    let flist = json_list(&fact_ids);
    // Entities of every affected fact, removed or surviving.
    let mut entity_candidates: BTreeSet<String> = strings(
        tx,
        &q(sql::ENTITIES_OF_FACTS),
        &[ns, &flist_affected, ns, &flist_affected],
    )
    .await?
    .into_iter()
    .collect();

    // Removed facts: their events, transcripts, staged assertions (lexical rows
    // go with their base rows).
    // A correction's statement lives in its system note (`corrections/<fact id>`)
    // and was also recorded on the corrected fact's `corrected` event: scrubbing
    // that note's versions blanks the statement there too, so forgetting or
    // revoking the correction leaves no copy of its text.
    for key in strings(tx, &q(sql::CORRECTION_NOTES), &[ns, &vlist]).await? {
        let fact = key.trim_start_matches("corrections/");
        exec(
            tx,
            "UPDATE fact_events SET detail_json = jsonb_set(detail_json, '{corrected_statement}', 'null'::jsonb)
             WHERE namespace_id = ? AND fact_id = ? AND event = 'corrected'",
            &[ns, fact],
        )
        .await?;
    }
    for (table, column) in sql::BY_FACT {
        delete_in(tx, ns, table, column, &flist).await?;
    }
    // Adjudication transcripts naming a removed fact anywhere (inside the
    // candidates and input too): the JSON columns are read a page at a time and
    // searched for the removed ids in Rust, so the statement's size does not grow
    // with the number of facts removed.
    let removed_facts: HashSet<String> = fact_ids.iter().cloned().collect();
    let naming: Vec<i64> = rows_naming(
        tx,
        "adjudications",
        "candidates_json::text || input_json::text",
        ns,
        &removed_facts,
    )
    .await?
    .into_iter()
    .map(|(seq, _)| seq)
    .collect();
    sqlx::query("DELETE FROM adjudications WHERE seq = ANY($1)")
        .bind(&naming)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    exec(tx, &q(sql::UNSUPERSEDE), &[ns, &flist]).await?;
    out.facts = delete_in(tx, ns, "facts", "id", &flist).await?;

    // Claims and everything keyed by them.
    entity_candidates
        .extend(strings(tx, &q(sql::ENTITIES_OF_CLAIMS), &[ns, &clist, ns, &clist]).await?);
    let decisions = strings(tx, &q(sql::DECISIONS_OF_CLAIMS), &[ns, &clist]).await?;
    let dlist = json_list(&decisions);
    for (table, column) in sql::BY_CLAIM {
        delete_in(tx, ns, table, column, &clist).await?;
    }
    for (table, column) in sql::BY_DECISION {
        delete_in(tx, ns, table, column, &dlist).await?;
    }
    for (table, column) in sql::BY_VERSION_BEFORE_CHUNKS {
        delete_in(tx, ns, table, column, &vlist).await?;
    }
    out.claims = delete_in(tx, ns, "claims", "id", &clist).await?;

    // Chunks and the versions' representations.
    out.chunks = delete_in(tx, ns, "chunks", "version_id", &vlist).await?;
    for (table, column) in sql::BY_VERSION {
        delete_in(tx, ns, table, column, &vlist).await?;
    }

    // Ledger rows of the versions' work (and of the removed records), with their
    // transcripts and accounting.
    let mut work: BTreeSet<String> = strings(tx, &q(sql::WORK_OF_VERSIONS), &[ns, &vlist])
        .await?
        .into_iter()
        .collect();
    let targets = json_list(chunk_ids.iter().chain(&claim_ids).chain(&fact_ids));
    work.extend(strings(tx, &q(sql::WORK_ON_RECORDS), &[ns, &targets]).await?);
    let wlist = json_list(&work);
    for (table, column) in sql::BY_WORK {
        delete_in(tx, ns, table, column, &wlist).await?;
    }

    // Entities: those nothing mentions, no fact names and no survivor redirects
    // into go, with their aliases, keys, bindings, exclusions and merges.
    let elist_candidates = json_list(&entity_candidates);
    let doomed = strings(tx, &q(sql::UNSUPPORTED_ENTITIES), &[ns, &elist_candidates]).await?;
    let elist = json_list(&doomed);
    for (table, column) in sql::BY_ENTITY {
        delete_in(tx, ns, table, column, &elist).await?;
    }
    // Merge snapshots written before they held only ids carried entity names,
    // which may be the forgotten document's words: they go.
    exec(
        tx,
        "UPDATE merge_events
           SET snapshot_json = snapshot_json #- '{from,canonical_name}' #- '{into,canonical_name}'
         WHERE namespace_id = ? AND snapshot_json::text LIKE '%canonical_name%'",
        &[ns],
    )
    .await?;
    keys.extend(strings(tx, &q(sql::PROFILE_KEYS), &[ns, &elist_candidates]).await?);
    out.entities = delete_in(tx, ns, "entities", "id", &elist).await?;
    // Surviving decisions no longer list removed entities among their candidates
    // (one paged pass over the namespace's decisions, whatever the number removed).
    let doomed_set: HashSet<String> = doomed.iter().cloned().collect();
    for (seq, candidates) in rows_naming(
        tx,
        "resolution_decisions",
        "candidates_json::text",
        ns,
        &doomed_set,
    )
    .await?
    {
        let mut candidates: Vec<serde_json::Value> = serde_json::from_str(&candidates)
            .map_err(|e| Error::store(format!("corrupt candidates: {e}")))?;
        candidates.retain(|c| {
            !c.get("entity_id")
                .and_then(|v| v.as_str())
                .is_some_and(|id| doomed_set.contains(id))
        });
        sqlx::query("UPDATE resolution_decisions SET candidates_json = $1 WHERE seq = $2")
            .bind(serde_json::Value::Array(candidates))
            .bind(seq)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    // Surviving entities: aliases only the removed mentions carried go; a
    // canonical name they alone carried yields to a remaining surface; the profile
    // is cleared (the engine rebuilds it from the surviving facts).
    for e in entity_candidates
        .iter()
        .filter(|e| !doomed_set.contains(*e))
    {
        let surfaces = strings(tx, sql::SURFACES, &[ns, e]).await?;
        if let Some(first) = surfaces.first() {
            let slist = json_list(&surfaces);
            exec(tx, &q(sql::STALE_ALIASES), &[ns, e, &slist]).await?;
            exec(tx, sql::STALE_KEYS, &[ns, e, ns, e]).await?;
            exec(tx, &q(sql::RENAME), &[first, first, ns, e, &slist, first]).await?;
        }
        exec(tx, sql::CLEAR_PROFILE, &[ns, e]).await?;
        if let Ok(id) = parse_id(e) {
            out.touched.push(id);
        }
    }
    exec(tx, sql::EMPTY_KEY_COUNTS, &[ns]).await?;
    exec(tx, sql::UNUSED_PREDICATES, &[ns]).await?;

    // Vectors no remaining record uses.
    out.vectors = delete_unused_vectors(tx, ns, &keys).await?;

    // The versions' bytes: a hash no other version of the namespace still serves
    // from goes with them.
    for sha in strings(tx, &q(sql::SHAS_OF_VERSIONS), &[ns, &vlist]).await? {
        if !exists(tx, &q(sql::SHA_HELD_ELSEWHERE), &[ns, &sha, &vlist]).await? {
            exec(
                tx,
                "DELETE FROM content_objects WHERE namespace_id = ? AND sha256 = ?",
                &[ns, &sha],
            )
            .await?;
            out.unreferenced_blobs.push(sha);
        } else {
            out.shared_blobs.push(sha);
        }
    }

    if whole {
        delete_in(tx, ns, "note_requests", "version_id", &vlist).await?;
        for statement in sql::LINEAGE_ROWS {
            exec(tx, statement, &[ns, doc]).await?;
        }
    }

    // Receipts and feedback: the removed records were never selected.
    let mut removed: HashSet<String> = HashSet::new();
    removed.extend(chunk_ids);
    removed.extend(claim_ids);
    removed.extend(fact_ids);
    out.receipts_rewritten = rewrite_receipts(tx, ns, &removed).await?;
    delete_in(tx, ns, "feedback", "item_ref", &json_list(&removed)).await?;
    Ok(out)
}

/// Drop `removed` records from every receipt of the namespace that selected them
/// (the receipts are read a page at a time).
async fn rewrite_receipts(tx: &mut Tx<'_>, ns: &str, removed: &HashSet<String>) -> Result<u64> {
    let mut n = 0;
    for (seq, body) in rows_naming(tx, "recall_receipts", "body_json::text", ns, removed).await? {
        let mut receipt: Receipt = serde_json::from_str(&body)
            .map_err(|e| Error::store(format!("corrupt receipt: {e}")))?;
        let before = receipt.selections.len();
        receipt.selections.retain(|s| !removed.contains(&s.id));
        if receipt.selections.len() == before {
            continue;
        }
        let body = serde_json::to_value(&receipt).map_err(|e| Error::internal(e.to_string()))?;
        sqlx::query("UPDATE recall_receipts SET body_json = $1 WHERE seq = $2")
            .bind(body)
            .bind(seq)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        n += 1;
    }
    Ok(n)
}

/// The tables a scrub deletes from: vacuumed after a forget so that the dead
/// tuples and their index entries are reclaimed, not left for autovacuum.
const SCRUBBED_TABLES: &[&str] = &[
    "fact_evidence",
    "fact_events",
    "adjudications",
    "staged_assertions",
    "facts",
    "fact_lexical",
    "entity_mentions",
    "normalizations",
    "claim_currency_events",
    "claim_retractions",
    "resolution_decisions",
    "resolution_exclusions",
    "document_entity_bindings",
    "chunk_claims",
    "claim_extraction_decisions",
    "claims",
    "claim_lexical",
    "chunks",
    "chunk_lexical",
    // The lexical statistics: a forgotten row's words leave `lexical_terms`.
    "lexical_terms",
    "lexical_totals",
    "representations",
    "blocks",
    "sections",
    "currency_due",
    "llm_transcripts",
    "cost_ledger",
    "processing_state",
    "entity_aliases",
    "entity_keys",
    "entity_key_counts",
    "merge_events",
    "entities",
    "predicates",
    "vectors",
    "content_objects",
    "note_requests",
    "document_names",
    "document_deletions",
    "notes",
    "document_versions",
    "documents",
    "recall_receipts",
    "feedback",
];

impl PgStore {
    pub(crate) async fn revoke_note_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        now: Timestamp,
    ) -> Result<(NoteRecord, Vec<EntityId>)> {
        use crate::lifecycle::{advisory_lock, note_in, note_lock, set_lifecycle, stored, unserve};
        let (ns_s, version_s, at) = (ns.to_string(), version.to_string(), stored(now));
        let not_found = || {
            Error::new(
                ErrorCode::NotFound,
                format!("no note revision {version} in this namespace"),
            )
        };
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        // The same locks, in the same order, as every other note transition.
        let Some(peek) = note_in(&mut tx, &ns_s, &version_s, false).await? else {
            return Err(not_found());
        };
        advisory_lock(&mut tx, &note_lock(&ns_s, &peek.source_key)).await?;
        let Some(note) = note_in(&mut tx, &ns_s, &version_s, true).await? else {
            return Err(not_found());
        };
        note.check_transition(expected, Admission::Revoked)?;
        let doc_s = note.note_id.to_string();
        sqlx::query("SELECT 1 FROM documents WHERE namespace_id = $1 AND id = $2 FOR UPDATE")
            .bind(&ns_s)
            .bind(&doc_s)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        set_lifecycle(&mut tx, &ns_s, &version_s, Admission::Revoked, at).await?;
        unserve(&mut tx, &ns_s, &doc_s, at, "note_revoked").await?;
        let scrubbed = scrub(
            &mut tx,
            &ns_s,
            &doc_s,
            std::slice::from_ref(&version_s),
            false,
        )
        .await?;
        // The tombstone keeps ids, digests and times; the metadata goes with the text.
        exec(
            &mut tx,
            "UPDATE notes SET metadata_json = '{}'::jsonb WHERE namespace_id = ? AND version_id = ?",
            &[&ns_s, &version_s],
        )
        .await?;
        exec(
            &mut tx,
            "UPDATE document_versions SET metadata_json = '{}'::jsonb WHERE namespace_id = ? AND id = ?",
            &[&ns_s, &version_s],
        )
        .await?;
        let fresh = note_in(&mut tx, &ns_s, &version_s, false)
            .await?
            .ok_or_else(|| Error::store("the revoked note vanished"))?;
        tx.commit().await.map_err(db_err)?;
        Ok((fresh, scrubbed.touched))
    }

    pub(crate) async fn begin_forget_impl(
        &self,
        manifest: &ForgetManifest,
        now: Timestamp,
    ) -> Result<()> {
        // The manifest is durable before anything changes (append-first).
        self.manifests.append(manifest)?;
        let json = serde_json::to_value(manifest).map_err(|e| Error::internal(e.to_string()))?;
        sqlx::query(
            "INSERT INTO forget_episodes (namespace_id, manifest_id, document_id, manifest_json, started_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (namespace_id, manifest_id) DO UPDATE SET completed_at = NULL, report_json = NULL",
        )
        .bind(manifest.namespace_id.to_string())
        .bind(manifest.manifest_id.to_string())
        .bind(manifest.document_id.to_string())
        .bind(sqlx::types::Json(json))
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    pub(crate) async fn incomplete_forgets_impl(
        &self,
        ns: NamespaceId,
    ) -> Result<Vec<ForgetManifest>> {
        let rows = sqlx::query(
            "SELECT manifest_json FROM forget_episodes
             WHERE namespace_id = $1 AND completed_at IS NULL ORDER BY started_at, manifest_id",
        )
        .bind(ns.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                serde_json::from_value(r.get::<serde_json::Value, _>("manifest_json"))
                    .map_err(|e| Error::store(format!("corrupt forget manifest: {e}")))
            })
            .collect()
    }

    pub(crate) async fn forget_impl(
        &self,
        manifest: &ForgetManifest,
        now: Timestamp,
    ) -> Result<(ForgetReport, Vec<EntityId>)> {
        self.begin_forget_impl(manifest, now).await?;
        self.finish_forget(manifest, now).await
    }

    /// Everything of a forget after its episode is open. A failure is recorded on
    /// the episode (`last_error`) for `status` and `doctor`; the namespace stays
    /// closed until a later attempt finishes.
    pub(crate) async fn finish_forget(
        &self,
        manifest: &ForgetManifest,
        now: Timestamp,
    ) -> Result<(ForgetReport, Vec<EntityId>)> {
        let outcome = self.run_forget(manifest, now).await;
        if let Err(e) = &outcome {
            tracing::error!(manifest = %manifest.manifest_id, error = %e, "a forget stopped");
            if let Err(record) = sqlx::query(
                "UPDATE forget_episodes SET last_error = $1 WHERE namespace_id = $2 AND manifest_id = $3",
            )
            .bind(e.to_string())
            .bind(manifest.namespace_id.to_string())
            .bind(manifest.manifest_id.to_string())
            .execute(&self.pool)
            .await
            {
                tracing::error!(error = %record, "the reason a forget stopped could not be recorded");
            }
        }
        outcome
    }

    async fn run_forget(
        &self,
        manifest: &ForgetManifest,
        now: Timestamp,
    ) -> Result<(ForgetReport, Vec<EntityId>)> {
        let ns_s = manifest.namespace_id.to_string();
        // A restored database may predate the namespace: it comes back under its id,
        // so the guards below apply to the namespace users reach by its slug.
        sqlx::query(
            "INSERT INTO namespaces (id, slug, created_at) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(&ns_s)
        .bind(&manifest.namespace)
        .bind(manifest.requested_at)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        let doc_s = manifest.document_id.to_string();
        let mut report = ForgetReport {
            manifest_id: manifest.manifest_id,
            doc_id: manifest.document_id,
            ..ForgetReport::default()
        };
        let scrubbed = {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            // One forget of a lineage at a time, across processes.
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(format!("forget:{ns_s}:{doc_s}"))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let mut versions: BTreeSet<String> =
                manifest.version_ids.iter().map(|v| v.to_string()).collect();
            versions.extend(
                strings(
                    &mut tx,
                    "SELECT id FROM document_versions WHERE namespace_id = ? AND document_id = ?",
                    &[&ns_s, &doc_s],
                )
                .await?,
            );
            let versions: Vec<String> = versions.into_iter().collect();
            report.versions = versions.len() as u64;
            let scrubbed = scrub(&mut tx, &ns_s, &doc_s, &versions, true).await?;
            for sha in &manifest.content_sha256 {
                sqlx::query(
                    "INSERT INTO forgotten_content (namespace_id, sha256, manifest_id, document_id,
                         source_identity_sha256, forgotten_at)
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (namespace_id, sha256) DO NOTHING",
                )
                .bind(&ns_s)
                .bind(sha)
                .bind(manifest.manifest_id.to_string())
                .bind(&doc_s)
                .bind(&manifest.source_identity_sha256)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            tx.commit().await.map_err(db_err)?;
            scrubbed
        };
        report.chunks = scrubbed.chunks;
        report.claims = scrubbed.claims;
        report.facts = scrubbed.facts;
        report.entities = scrubbed.entities;
        report.vectors = scrubbed.vectors;
        report.receipts_rewritten = scrubbed.receipts_rewritten;
        report.shared_blobs_kept = scrubbed.shared_blobs.len() as u64;
        // Originals are rows of `content_objects`, removed inside the transaction.
        report.blobs = scrubbed.unreferenced_blobs.len() as u64;
        self.vacuum_scrubbed().await?;
        report.verification = self.verify_forget(manifest, &scrubbed.shared_blobs).await?;
        if let Some(dirty) = report.verification.iter().find(|c| c.remaining > 0) {
            return Err(Error::store(format!(
                "forget {} is not verified: {} row(s) remain in `{}`; the namespace stays closed",
                manifest.manifest_id, dirty.remaining, dirty.check
            )));
        }
        report.forgotten_at = Some(now);
        let json = serde_json::to_value(&report).map_err(|e| Error::internal(e.to_string()))?;
        sqlx::query(
            "UPDATE forget_episodes SET completed_at = $1, report_json = $2, last_error = NULL
             WHERE namespace_id = $3 AND manifest_id = $4",
        )
        .bind(now)
        .bind(sqlx::types::Json(json))
        .bind(&ns_s)
        .bind(manifest.manifest_id.to_string())
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok((report, scrubbed.touched))
    }

    /// Reclaim the scrubbed tables' dead tuples and index entries now (VACUUM runs
    /// outside a transaction), and refresh their statistics, whose samples hold
    /// column values. PostgreSQL may still hold old page images in its write-ahead
    /// log until the next checkpoints recycle it; the operator's retention of WAL
    /// archives and base backups is outside the store (README, "Outgrowing one
    /// machine").
    async fn vacuum_scrubbed(&self) -> Result<()> {
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        let sql = format!("VACUUM (ANALYZE) {}", SCRUBBED_TABLES.join(", "));
        sqlx::query(AssertSqlSafe(sql))
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// The verification queries of a forget: every count must be 0.
    async fn verify_forget(
        &self,
        manifest: &ForgetManifest,
        shared: &[String],
    ) -> Result<Vec<ForgetCheck>> {
        let ns = manifest.namespace_id.to_string();
        let doc = manifest.document_id.to_string();
        let vlist = json_list(manifest.version_ids.iter().map(|v| v.to_string()));
        let owned: Vec<&String> = manifest
            .content_sha256
            .iter()
            .filter(|s| !shared.contains(s))
            .collect();
        let slist = json_list(&owned);
        let mut checks = Vec::new();
        for &(name, table, column) in sql::VERIFY_BY_LINEAGE {
            let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM {table} WHERE namespace_id = $1 AND {column} = $2"
            )))
            .bind(&ns)
            .bind(&doc)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
            checks.push(ForgetCheck {
                check: name.into(),
                remaining: n as u64,
            });
        }
        for &(name, table) in sql::VERIFY_BY_VERSION {
            let n: i64 = sqlx::query_scalar(AssertSqlSafe(pg_sql(&format!(
                "SELECT COUNT(*) FROM {table} WHERE namespace_id = ? AND version_id {IN_LIST}"
            ))))
            .bind(&ns)
            .bind(&vlist)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
            checks.push(ForgetCheck {
                check: name.into(),
                remaining: n as u64,
            });
        }
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(pg_sql(&format!(
            "SELECT COUNT(*) FROM content_objects WHERE namespace_id = ? AND sha256 {IN_LIST}"
        ))))
        .bind(&ns)
        .bind(&slist)
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        checks.push(ForgetCheck {
            check: "content_objects".into(),
            remaining: n as u64,
        });
        let guards: i64 = sqlx::query_scalar(AssertSqlSafe(pg_sql(&format!(
            "SELECT COUNT(*) FROM forgotten_content WHERE namespace_id = ? AND sha256 {IN_LIST}"
        ))))
        .bind(&ns)
        .bind(json_list(&manifest.content_sha256))
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        checks.push(ForgetCheck {
            check: "missing_guards".into(),
            remaining: (manifest.content_sha256.len() as u64).saturating_sub(guards as u64),
        });
        // Lexical rows whose record is gone (a forgotten row's tokens).
        for (name, lexical, base) in [
            ("chunk_index", "chunk_lexical", "chunks"),
            ("claim_index", "claim_lexical", "claims"),
            ("fact_index", "fact_lexical", "facts"),
        ] {
            let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM {lexical} l WHERE l.namespace_id = $1
                   AND NOT EXISTS (SELECT 1 FROM {base} b WHERE b.seq = l.seq)"
            )))
            .bind(&ns)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
            checks.push(ForgetCheck {
                check: name.into(),
                remaining: n as u64,
            });
        }
        Ok(checks)
    }

    /// Re-honour every manifest of the root before the store serves: a manifest
    /// whose episode is not complete, or whose records are back (an older copy of
    /// the database was restored), runs again.
    pub(crate) async fn rehonour_manifests(&self) -> Result<()> {
        let manifests = self.manifests.list()?;
        for m in manifests {
            let completed = sqlx::query_scalar::<_, Option<Timestamp>>(
                "SELECT completed_at FROM forget_episodes WHERE namespace_id = $1 AND manifest_id = $2",
            )
            .bind(m.namespace_id.to_string())
            .bind(m.manifest_id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .flatten()
            .is_some();
            let clean = completed
                && self
                    .verify_forget(&m, &[])
                    .await?
                    .iter()
                    .filter(|c| c.check != "content_objects")
                    .all(|c| c.remaining == 0);
            if !clean {
                tracing::info!(manifest = %m.manifest_id, "re-honouring a forget manifest");
                self.begin_forget_impl(&m, m.requested_at).await?;
                if let Err(e) = self.finish_forget(&m, m.requested_at).await {
                    tracing::error!(
                        manifest = %m.manifest_id,
                        namespace = %m.namespace,
                        error = %e,
                        "a forget could not finish: its namespace stays closed, the others serve"
                    );
                }
            }
        }
        Ok(())
    }

    pub(crate) async fn pending_forgets_impl(&self) -> Result<Vec<PendingForget>> {
        let rows = sqlx::query(
            "SELECT n.slug, e.manifest_id, e.document_id, e.started_at, e.last_error
             FROM forget_episodes e JOIN namespaces n ON n.id = e.namespace_id
             WHERE e.completed_at IS NULL ORDER BY e.started_at, e.manifest_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(PendingForget::new(
                    r.get("slug"),
                    uuid::Uuid::parse_str(&r.get::<String, _>("manifest_id"))
                        .map_err(|e| Error::store(format!("corrupt manifest id: {e}")))?,
                    parse_id(&r.get::<String, _>("document_id"))?,
                    r.get("started_at"),
                    r.get("last_error"),
                ))
            })
            .collect()
    }
}
