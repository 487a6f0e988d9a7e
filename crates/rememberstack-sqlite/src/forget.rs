//! Hard forget (D74) and note revocation: the scrub of every record derived from
//! a lineage (or one note revision), the fail-closed episode around it, the
//! compaction that leaves no copy of the bytes in the database files, the
//! verification, and the re-honouring of every manifest when the store opens.

use crate::claims::claim_fts_table;
use crate::facts::fact_fts_table;
use crate::{SqliteStore, db_err, fts_table, parse_id};
use rememberstack_core::forget::scrub_sql as sql;
use rememberstack_core::forget::{ForgetCheck, ForgetManifest, ForgetReport, PendingForget};
use rememberstack_core::ids::*;
use rememberstack_core::source::Admission;
use rememberstack_core::store::{NoteRecord, Receipt};
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_core::{Error, ErrorCode, Result};
use sqlx::{AssertSqlSafe, Row};
use std::collections::{BTreeSet, HashSet};

use crate::conns::Tx;

/// A list bound as one JSON array parameter, read with `json_each`.
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
pub(crate) const IN_LIST: &str = "IN (SELECT value FROM json_each(?))";

/// What a scrub removed.
#[derive(Default)]
pub(crate) struct Scrubbed {
    pub(crate) chunks: u64,
    pub(crate) claims: u64,
    pub(crate) facts: u64,
    pub(crate) entities: u64,
    pub(crate) vectors: u64,
    pub(crate) receipts_rewritten: u64,
    /// Content hashes no remaining version holds: their blobs go.
    pub(crate) unreferenced_blobs: Vec<String>,
    /// Content hashes another live version still holds.
    pub(crate) shared_blobs: Vec<String>,
    /// Surviving entities whose facts, aliases or mentions changed.
    pub(crate) touched: Vec<EntityId>,
}

pub(crate) async fn strings(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<Vec<String>> {
    let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
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

/// Records selected as `(seq, id, embedding_key)`.
#[derive(Default)]
pub(crate) struct Records {
    pub(crate) seqs: Vec<i64>,
    pub(crate) ids: Vec<String>,
    pub(crate) keys: Vec<String>,
}

pub(crate) async fn records(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<Records> {
    let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
    for b in binds {
        q = q.bind(*b);
    }
    let mut out = Records::default();
    for r in q.fetch_all(&mut **tx).await.map_err(db_err)? {
        out.seqs.push(r.get("seq"));
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
    let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
    for b in binds {
        q = q.bind(*b);
    }
    Ok(q.fetch_optional(&mut **tx).await.map_err(db_err)?.is_some())
}

pub(crate) async fn exec(tx: &mut Tx<'_>, sql: &str, binds: &[&str]) -> Result<u64> {
    let mut q = sqlx::query(AssertSqlSafe(sql.to_string()));
    for b in binds {
        q = q.bind(*b);
    }
    Ok(q.execute(&mut **tx).await.map_err(db_err)?.rows_affected())
}

async fn table_exists(tx: &mut Tx<'_>, name: &str) -> Result<bool> {
    Ok(
        sqlx::query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
            .bind(name)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_err)?
            .is_some(),
    )
}

/// Delete FTS rows by rowid (the base table's `seq`).
pub(crate) async fn delete_fts(tx: &mut Tx<'_>, table: &str, seqs: &[i64]) -> Result<()> {
    if seqs.is_empty() || !table_exists(tx, table).await? {
        return Ok(());
    }
    let list = serde_json::to_string(seqs).map_err(|e| Error::internal(e.to_string()))?;
    exec(
        tx,
        &format!("DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))"),
        &[&list],
    )
    .await?;
    Ok(())
}

/// How many rows a paged pass over a namespace's JSON columns reads at a time.
const PAGE: i64 = 500;

/// `seq` and `text` of the namespace's rows of `table` whose `text` (an SQL
/// expression over its JSON columns) names any of `ids`, read a page at a time
/// so that neither the statement nor the memory grows with the store.
async fn rows_naming_with_text(
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
        "SELECT seq, {text} AS text FROM {table} WHERE namespace_id = ? AND seq > ?
         ORDER BY seq LIMIT ?"
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

/// The `seq` of the rows [`rows_naming_with_text`] finds.
async fn rows_naming(
    tx: &mut Tx<'_>,
    table: &str,
    text: &str,
    ns: &str,
    ids: &HashSet<String>,
) -> Result<Vec<i64>> {
    Ok(rows_naming_with_text(tx, table, text, ns, ids)
        .await?
        .into_iter()
        .map(|(seq, _)| seq)
        .collect())
}

fn json_seqs(seqs: &[i64]) -> Result<String> {
    serde_json::to_string(seqs).map_err(|e| Error::internal(e.to_string()))
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
    let (chunk_seqs, chunk_ids) = (chunks.seqs, chunks.ids);
    let mut keys: BTreeSet<String> = chunks.keys.into_iter().collect();

    // Claims: every claim of the lineage, or those occurring only in the versions.
    let claims = if whole {
        records(tx, sql::CLAIMS_OF_LINEAGE, &[ns, doc]).await?
    } else {
        records(tx, &q(sql::CLAIMS_ONLY_IN_VERSIONS), &[ns, doc, &vlist]).await?
    };
    let (claim_seqs, claim_ids) = (claims.seqs, claims.ids);
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
    let (fact_seqs, fact_ids) = (facts.seqs, facts.ids);
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

    // Removed facts: their lexical rows, events, transcripts, staged assertions.
    let fts = fact_fts_table(ns)?;
    delete_fts(tx, &fts, &fact_seqs).await?;
    // A correction's statement lives in its system note (`corrections/<fact id>`)
    // and was also recorded on the corrected fact's `corrected` event: scrubbing
    // that note's versions blanks the statement there too, so forgetting or
    // revoking the correction leaves no copy of its text.
    for key in strings(tx, &q(sql::CORRECTION_NOTES), &[ns, &vlist]).await? {
        let fact = key.trim_start_matches("corrections/");
        exec(
            tx,
            "UPDATE fact_events SET detail_json = json_set(detail_json, '$.corrected_statement', NULL)
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
    let naming = rows_naming(
        tx,
        "adjudications",
        "candidates_json || input_json",
        ns,
        &removed_facts,
    )
    .await?;
    delete_in(tx, ns, "adjudications", "seq", &json_seqs(&naming)?).await?;
    exec(tx, &q(sql::UNSUPERSEDE), &[ns, &flist]).await?;
    out.facts = delete_in(tx, ns, "facts", "id", &flist).await?;

    // Claims and everything keyed by them.
    let cfts = claim_fts_table(ns)?;
    delete_fts(tx, &cfts, &claim_seqs).await?;
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
    delete_fts(tx, &fts_table(ns)?, &chunk_seqs).await?;
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
           SET snapshot_json = json_remove(snapshot_json, '$.from.canonical_name', '$.into.canonical_name')
         WHERE namespace_id = ? AND instr(snapshot_json, 'canonical_name') > 0",
        &[ns],
    )
    .await?;
    keys.extend(strings(tx, &q(sql::PROFILE_KEYS), &[ns, &elist_candidates]).await?);
    out.entities = delete_in(tx, ns, "entities", "id", &elist).await?;
    // Surviving decisions no longer list removed entities among their candidates
    // (one paged pass over the namespace's decisions, whatever the number removed).
    let doomed_set: HashSet<String> = doomed.iter().cloned().collect();
    for (seq, candidates) in rows_naming_with_text(
        tx,
        "resolution_decisions",
        "candidates_json",
        ns,
        &doomed_set,
    )
    .await?
    {
        let json = without_candidates(&candidates, &doomed_set)?;
        sqlx::query("UPDATE resolution_decisions SET candidates_json = ? WHERE seq = ?")
            .bind(json)
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
    exec(
        tx,
        "DELETE FROM entity_mention_counts WHERE namespace_id = ? AND n <= 0",
        &[ns],
    )
    .await?;
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
    for (seq, body) in
        rows_naming_with_text(tx, "recall_receipts", "body_json", ns, removed).await?
    {
        let mut receipt: Receipt = serde_json::from_str(&body)
            .map_err(|e| Error::store(format!("corrupt receipt: {e}")))?;
        let before = receipt.selections.len();
        receipt.selections.retain(|s| !removed.contains(&s.id));
        if receipt.selections.len() == before {
            continue;
        }
        let body = serde_json::to_string(&receipt).map_err(|e| Error::internal(e.to_string()))?;
        sqlx::query("UPDATE recall_receipts SET body_json = ? WHERE seq = ?")
            .bind(body)
            .bind(seq)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        n += 1;
    }
    Ok(n)
}

impl SqliteStore {
    pub(crate) async fn revoke_note_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
        expected: u32,
        now: Timestamp,
    ) -> Result<(NoteRecord, Vec<EntityId>)> {
        let (ns_s, version_s, at) = (ns.to_string(), version.to_string(), to_rfc3339(&now));
        let mut tx = self.write.begin().await.map_err(db_err)?;
        let Some(note) = crate::lifecycle::note_in(&mut tx, &ns_s, &version_s).await? else {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!("no note revision {version} in this namespace"),
            ));
        };
        note.check_transition(expected, Admission::Revoked)?;
        let doc_s = note.note_id.to_string();
        crate::lifecycle::set_lifecycle(&mut tx, &ns_s, &version_s, Admission::Revoked, &at)
            .await?;
        crate::lifecycle::unserve(&mut tx, &ns_s, &doc_s, &at, "note_revoked").await?;
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
            "UPDATE notes SET metadata_json = '{}' WHERE namespace_id = ? AND version_id = ?",
            &[&ns_s, &version_s],
        )
        .await?;
        exec(
            &mut tx,
            "UPDATE document_versions SET metadata_json = '{}' WHERE namespace_id = ? AND id = ?",
            &[&ns_s, &version_s],
        )
        .await?;
        let fresh = crate::lifecycle::note_in(&mut tx, &ns_s, &version_s)
            .await?
            .ok_or_else(|| Error::store("the revoked note vanished"))?;
        tx.commit().await.map_err(db_err)?;
        self.remove_unreferenced_blobs(&ns_s, &scrubbed.unreferenced_blobs)
            .await?;
        Ok((fresh, scrubbed.touched))
    }

    /// Remove the blobs of `shas` that no version of namespace `ns` holds, under the
    /// write lock: an ingest writes its blob inside its own write transaction, so a
    /// concurrent ingest of the same bytes either committed first (its version is
    /// seen here and the blob stays) or runs after (and writes the blob again).
    async fn remove_unreferenced_blobs(&self, ns: &str, shas: &[String]) -> Result<()> {
        if shas.is_empty() {
            return Ok(());
        }
        let mut tx = self.write.begin().await.map_err(db_err)?;
        for sha in shas {
            let held = sqlx::query(
                "SELECT 1 FROM document_versions WHERE namespace_id = ? AND content_sha256 = ?
                   AND admission <> 'revoked' LIMIT 1",
            )
            .bind(ns)
            .bind(sha)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
            .is_some();
            if !held {
                self.blobs.remove(ns, sha).await?;
            }
        }
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn begin_forget_impl(
        &self,
        manifest: &ForgetManifest,
        now: Timestamp,
    ) -> Result<()> {
        // The manifest is durable before anything changes (append-first).
        self.manifests.append(manifest)?;
        let json = serde_json::to_string(manifest).map_err(|e| Error::internal(e.to_string()))?;
        sqlx::query(
            "INSERT INTO forget_episodes (namespace_id, manifest_id, document_id, manifest_json, started_at)
             VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (namespace_id, manifest_id) DO UPDATE SET completed_at = NULL, report_json = NULL",
        )
        .bind(manifest.namespace_id.to_string())
        .bind(manifest.manifest_id.to_string())
        .bind(manifest.document_id.to_string())
        .bind(&json)
        .bind(to_rfc3339(&now))
        .execute(&self.write)
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
             WHERE namespace_id = ? AND completed_at IS NULL ORDER BY started_at, manifest_id",
        )
        .bind(ns.to_string())
        .fetch_all(&self.write)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                serde_json::from_str(&r.get::<String, _>("manifest_json"))
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
        // Freed pages are zeroed only while a forget runs: whatever happened, the
        // writer goes back to ordinary deletes.
        let reset = sqlx::raw_sql("PRAGMA secure_delete = OFF; PRAGMA temp_store = MEMORY")
            .execute(&self.write)
            .await
            .map_err(db_err);
        if let Err(e) = &outcome {
            tracing::error!(manifest = %manifest.manifest_id, error = %e, "a forget stopped");
            if let Err(record) = sqlx::query(
                "UPDATE forget_episodes SET last_error = ? WHERE namespace_id = ? AND manifest_id = ?",
            )
            .bind(e.to_string())
            .bind(manifest.namespace_id.to_string())
            .bind(manifest.manifest_id.to_string())
            .execute(&self.write)
            .await
            {
                tracing::error!(error = %record, "the reason a forget stopped could not be recorded");
            }
        }
        let out = outcome?;
        reset?;
        Ok(out)
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
            "INSERT INTO namespaces (id, slug, created_at) VALUES (?, ?, ?)
             ON CONFLICT DO NOTHING",
        )
        .bind(&ns_s)
        .bind(&manifest.namespace)
        .bind(to_rfc3339(&manifest.requested_at))
        .execute(&self.write)
        .await
        .map_err(db_err)?;
        let doc_s = manifest.document_id.to_string();
        let mut report = ForgetReport {
            manifest_id: manifest.manifest_id,
            doc_id: manifest.document_id,
            ..ForgetReport::default()
        };
        // Secure delete: freed pages and cells are overwritten with zeros. The
        // scrub's statement journals (the prior content of every page a statement
        // changes) go to temporary files: in memory they grew with the document
        // (hundreds of MB for 20,000 facts).
        let mut conn = self.write.acquire().await.map_err(db_err)?;
        sqlx::raw_sql("PRAGMA secure_delete = ON; PRAGMA temp_store = FILE")
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        drop(conn);
        let scrubbed = {
            let mut tx = self.write.begin().await.map_err(db_err)?;
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
                     VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (namespace_id, sha256) DO NOTHING",
                )
                .bind(&ns_s)
                .bind(sha)
                .bind(manifest.manifest_id.to_string())
                .bind(&doc_s)
                .bind(&manifest.source_identity_sha256)
                .bind(to_rfc3339(&now))
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
        // A hash the manifest names that no live version holds any more is gone
        // from the blob directory too (also after a restore re-honours it).
        let mut blob_shas: BTreeSet<String> = scrubbed.unreferenced_blobs.into_iter().collect();
        for sha in &manifest.content_sha256 {
            if !scrubbed.shared_blobs.contains(sha) {
                blob_shas.insert(sha.clone());
            }
        }
        for sha in &blob_shas {
            if self.blobs.remove(&ns_s, sha).await? {
                report.blobs += 1;
            }
        }
        report.file_rewrite_pending = self.compact(&ns_s).await?;
        report.verification = self.verify_forget(manifest, &scrubbed.shared_blobs).await?;
        if let Some(dirty) = report.verification.iter().find(|c| c.remaining > 0) {
            return Err(Error::store(format!(
                "forget {} is not verified: {} row(s) remain in `{}`; the namespace stays closed",
                manifest.manifest_id, dirty.remaining, dirty.check
            )));
        }
        report.forgotten_at = Some(now);
        let json = serde_json::to_string(&report).map_err(|e| Error::internal(e.to_string()))?;
        sqlx::query(
            "UPDATE forget_episodes SET completed_at = ?, report_json = ?, last_error = NULL,
                 rewrite_pending = ?
             WHERE namespace_id = ? AND manifest_id = ?",
        )
        .bind(to_rfc3339(&now))
        .bind(&json)
        .bind(&report.file_rewrite_pending)
        .bind(&ns_s)
        .bind(manifest.manifest_id.to_string())
        .execute(&self.write)
        .await
        .map_err(db_err)?;
        // Completion itself is a write: checkpoint it out of the WAL.
        self.checkpoint_truncate().await?;
        Ok((report, scrubbed.touched))
    }

    /// Leave no copy of removed bytes in the database files: merge the lexical
    /// indexes (a deleted row's tokens survive in old FTS5 segments until then),
    /// refresh the planner statistics (their samples hold index keys), and rewrite
    /// the file between WAL checkpoints that truncate the log. Returns why the
    /// rewrite is still pending, when it could not run.
    async fn compact(&self, ns: &str) -> Result<Option<String>> {
        let mut conn = self.write.acquire().await.map_err(db_err)?;
        for table in [fts_table(ns)?, claim_fts_table(ns)?, fact_fts_table(ns)?] {
            if self.table_exists(&table).await? {
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO {table} ({table}) VALUES ('optimize')"
                )))
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
            }
        }
        sqlx::raw_sql("ANALYZE")
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        drop(conn);
        self.checkpoint_truncate().await?;
        let pending = self.rewrite_file().await?;
        self.checkpoint_truncate().await?;
        Ok(pending)
    }

    /// Rewrite the database file (VACUUM), or say why it cannot run now. The copy
    /// VACUUM builds goes to a temporary file, never to memory (every connection
    /// keeps its statement journals in memory, which would hold a whole copy of
    /// the database), and only when the disks have room for it and the write-ahead
    /// log it grows; a VACUUM that fails all the same leaves the file as it was.
    pub(crate) async fn rewrite_file(&self) -> Result<Option<String>> {
        if let Some(reason) = crate::disk::rewrite_shortfall(&self.path, self.disk_reserve())? {
            tracing::warn!(%reason, "the database file rewrite is pending");
            return Ok(Some(reason));
        }
        let mut conn = self.write.acquire().await.map_err(db_err)?;
        sqlx::query("PRAGMA temp_store = FILE")
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        let vacuum = sqlx::raw_sql("VACUUM").execute(&mut *conn).await;
        sqlx::query("PRAGMA temp_store = MEMORY")
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        drop(conn);
        match vacuum {
            Ok(_) => Ok(None),
            Err(e) => {
                let reason = format!("the database file could not be rewritten (VACUUM): {e}");
                tracing::warn!(%reason, "the database file rewrite is pending");
                Ok(Some(reason))
            }
        }
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`, retried while readers hold old snapshots.
    async fn checkpoint_truncate(&self) -> Result<()> {
        for attempt in 0..50 {
            let row = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .fetch_one(&self.write)
                .await
                .map_err(db_err)?;
            let busy: i64 = row.get(0);
            if busy == 0 {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(20 * (attempt + 1))).await;
        }
        Err(Error::store(
            "the write-ahead log could not be truncated: readers kept it busy",
        ))
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
                "SELECT COUNT(*) FROM {table} WHERE namespace_id = ? AND {column} = ?"
            )))
            .bind(&ns)
            .bind(&doc)
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
            checks.push(ForgetCheck {
                check: name.into(),
                remaining: n as u64,
            });
        }
        for &(name, table) in sql::VERIFY_BY_VERSION {
            let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM {table} WHERE namespace_id = ? AND version_id {IN_LIST}"
            )))
            .bind(&ns)
            .bind(&vlist)
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
            checks.push(ForgetCheck {
                check: name.into(),
                remaining: n as u64,
            });
        }
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM content_objects WHERE namespace_id = ? AND sha256 {IN_LIST}"
        )))
        .bind(&ns)
        .bind(&slist)
        .fetch_one(&self.read)
        .await
        .map_err(db_err)?;
        checks.push(ForgetCheck {
            check: "content_objects".into(),
            remaining: n as u64,
        });
        let guards: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM forgotten_content WHERE namespace_id = ? AND sha256 {IN_LIST}"
        )))
        .bind(&ns)
        .bind(json_list(&manifest.content_sha256))
        .fetch_one(&self.read)
        .await
        .map_err(db_err)?;
        checks.push(ForgetCheck {
            check: "missing_guards".into(),
            remaining: (manifest.content_sha256.len() as u64).saturating_sub(guards as u64),
        });
        // Lexical rows whose record is gone (a forgotten row's tokens).
        for (name, fts, base) in [
            ("chunk_index", fts_table(&ns)?, "chunks"),
            ("claim_index", claim_fts_table(&ns)?, "claims"),
            ("fact_index", fact_fts_table(&ns)?, "facts"),
        ] {
            let n: i64 = if self.table_exists(&fts).await? {
                sqlx::query_scalar(AssertSqlSafe(format!(
                    "SELECT COUNT(*) FROM {fts} WHERE rowid NOT IN (SELECT seq FROM {base})"
                )))
                .fetch_one(&self.read)
                .await
                .map_err(db_err)?
            } else {
                0
            };
            checks.push(ForgetCheck {
                check: name.into(),
                remaining: n as u64,
            });
        }
        let mut blobs = 0;
        for sha in owned {
            if self.blobs.exists(&ns, sha).await? {
                blobs += 1;
            }
        }
        checks.push(ForgetCheck {
            check: "blobs".into(),
            remaining: blobs,
        });
        Ok(checks)
    }

    /// Re-honour every manifest of the root before the store serves: a manifest
    /// whose episode is not complete, or whose records are back (an older copy of
    /// the database was restored), runs again. A forget that cannot finish keeps
    /// its namespace closed (its episode stays open, with the reason) and every
    /// other namespace opens; only what concerns the whole store (an unreadable
    /// manifest root, a database that cannot record the episode) fails the open.
    /// A file rewrite left pending by an earlier forget is tried again.
    pub(crate) async fn rehonour_manifests(&self) -> Result<()> {
        let manifests = self.manifests.list()?;
        for m in manifests {
            let completed = sqlx::query_scalar::<_, Option<String>>(
                "SELECT completed_at FROM forget_episodes WHERE namespace_id = ? AND manifest_id = ?",
            )
            .bind(m.namespace_id.to_string())
            .bind(m.manifest_id.to_string())
            .fetch_optional(&self.write)
            .await
            .map_err(db_err)?
            .flatten()
            .is_some();
            let clean = completed
                && self
                    .verify_forget(&m, &[])
                    .await?
                    .iter()
                    .filter(|c| c.check != "content_objects" && c.check != "blobs")
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
        if self.file_rewrite_pending_impl().await?.is_some() && self.rewrite_file().await?.is_none()
        {
            self.checkpoint_truncate().await?;
            sqlx::query(
                "UPDATE forget_episodes SET rewrite_pending = NULL WHERE rewrite_pending IS NOT NULL",
            )
            .execute(&self.write)
            .await
            .map_err(db_err)?;
        }
        Ok(())
    }

    pub(crate) async fn pending_forgets_impl(&self) -> Result<Vec<PendingForget>> {
        let rows = sqlx::query(
            "SELECT n.slug, e.manifest_id, e.document_id, e.started_at, e.last_error
             FROM forget_episodes e JOIN namespaces n ON n.id = e.namespace_id
             WHERE e.completed_at IS NULL ORDER BY e.started_at, e.manifest_id",
        )
        .fetch_all(&self.write)
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(PendingForget::new(
                    r.get("slug"),
                    uuid::Uuid::parse_str(&r.get::<String, _>("manifest_id"))
                        .map_err(|e| Error::store(format!("corrupt manifest id: {e}")))?,
                    parse_id(&r.get::<String, _>("document_id"))?,
                    crate::ts(&r.get::<String, _>("started_at"))?,
                    r.get("last_error"),
                ))
            })
            .collect()
    }

    pub(crate) async fn file_rewrite_pending_impl(&self) -> Result<Option<String>> {
        sqlx::query_scalar(
            "SELECT rewrite_pending FROM forget_episodes WHERE rewrite_pending IS NOT NULL
             ORDER BY completed_at DESC LIMIT 1",
        )
        .fetch_optional(&self.write)
        .await
        .map_err(db_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement by which a forget reaches removed ids finds its rows
    /// through an index on the id column: a plan that only narrows to the
    /// namespace (or scans) runs once per removed id inside a correlated check, or
    /// reads the whole namespace per statement, and a large document's forget
    /// became quadratic.
    #[tokio::test]
    async fn every_scrub_statement_reaches_its_ids_through_an_index() {
        let (_dir, store, _ns) = crate::entities::tests::open().await;
        let mut statements: Vec<String> = [
            sql::BY_FACT,
            sql::BY_CLAIM,
            sql::BY_DECISION,
            sql::BY_VERSION_BEFORE_CHUNKS,
            sql::BY_VERSION,
            sql::BY_WORK,
            sql::BY_ENTITY,
            &[
                ("fact_evidence", "claim_id"),
                ("facts", "id"),
                ("claims", "id"),
                ("chunks", "version_id"),
                ("entities", "id"),
                ("note_requests", "version_id"),
                ("feedback", "item_ref"),
            ],
        ]
        .iter()
        .flat_map(|list| list.iter())
        .map(|(table, column)| sql::delete_in(table, column, IN_LIST))
        .collect();
        statements.extend(
            [
                sql::CHUNKS_OF_VERSIONS,
                sql::FACTS_OF_CLAIMS,
                sql::FACTS_WITHOUT_EVIDENCE,
                sql::ENTITIES_OF_FACTS,
                sql::UNSUPERSEDE,
                sql::ENTITIES_OF_CLAIMS,
                sql::DECISIONS_OF_CLAIMS,
                sql::WORK_OF_VERSIONS,
                sql::WORK_ON_RECORDS,
                sql::UNSUPPORTED_ENTITIES,
                sql::PROFILE_KEYS,
            ]
            .map(q),
        );
        statements.push(format!(
            "DELETE FROM vectors WHERE namespace_id = ? AND embedding_key {IN_LIST} AND {}",
            rememberstack_core::forget::VECTOR_UNUSED
        ));
        let mut bad = Vec::new();
        for statement in &statements {
            let plan = sqlx::query(AssertSqlSafe(format!("EXPLAIN QUERY PLAN {statement}")))
                .fetch_all(&store.write)
                .await
                .expect("plan");
            for row in plan {
                let detail: String = row.get("detail");
                let scan = detail.starts_with("SCAN ") && !detail.starts_with("SCAN json_each");
                if scan || detail.ends_with("(namespace_id=?)") {
                    bad.push(format!("{detail}  <-  {statement}"));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "plans without an index on the ids:\n{}",
            bad.join("\n")
        );
    }
}
