//! Hard forget (D74) and note revocation: the scrub of every record derived from
//! a lineage (or one note revision), the fail-closed episode around it, the
//! compaction that leaves no copy of the bytes in the database files, the
//! verification, and the re-honouring of every manifest when the store opens.

use crate::claims::claim_fts_table;
use crate::facts::fact_fts_table;
use crate::{SqliteStore, db_err, fts_table, parse_id};
use rememberstack_core::forget::{ForgetCheck, ForgetManifest, ForgetReport, PendingForget};
use rememberstack_core::ids::*;
use rememberstack_core::source::Admission;
use rememberstack_core::store::NoteRecord;
use rememberstack_core::time::{Timestamp, to_rfc3339};
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::scrub::{self as sql, Scrubbed};
use rememberstack_sql::{
    Bind, Conn, Dialect, Kind, LexicalIndex, Value, decode_row, exec, strings,
};
use sqlx::{AssertSqlSafe, Row};
use std::collections::BTreeSet;

use crate::conns::Tx;

/// A write transaction as the shared SQL procedures use it.
pub(crate) struct SqlConn<'t, 'c>(pub(crate) &'t mut Tx<'c>);

fn bound<'q>(
    mut q: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    binds: &[Bind<'q>],
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    for b in binds {
        q = match *b {
            Bind::Text(s) => q.bind(s),
            Bind::Int(n) => q.bind(n),
            Bind::Time(t) => q.bind(to_rfc3339(&t)),
            Bind::NullText => q.bind(None::<String>),
        };
    }
    q
}

impl Conn for SqlConn<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn execute_rendered(&mut self, sql: &str, binds: &[Bind<'_>]) -> Result<u64> {
        let q = bound(sqlx::query(AssertSqlSafe(sql.to_string())), binds);
        Ok(q.execute(&mut **self.0)
            .await
            .map_err(db_err)?
            .rows_affected())
    }

    async fn fetch_rendered(
        &mut self,
        sql: &str,
        binds: &[Bind<'_>],
        kinds: &[Kind],
    ) -> Result<Vec<Vec<Value>>> {
        let q = bound(sqlx::query(AssertSqlSafe(sql.to_string())), binds);
        let rows = q.fetch_all(&mut **self.0).await.map_err(db_err)?;
        rows.iter().map(|r| decode_row(r, kinds)).collect()
    }

    /// FTS5 rows are keyed by their record's `seq` (the rowid) and do not go with
    /// the record: they are deleted here.
    async fn delete_lexical(&mut self, ns: &str, index: LexicalIndex, seqs: &[i64]) -> Result<()> {
        let table = match index {
            LexicalIndex::Chunks => fts_table(ns)?,
            LexicalIndex::Claims => claim_fts_table(ns)?,
            LexicalIndex::Facts => fact_fts_table(ns)?,
        };
        delete_fts(self.0, &table, seqs).await
    }
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
    let list = rememberstack_sql::json_ints(seqs);
    sqlx::query(AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))"
    )))
    .bind(list)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// The shared scrub ([`rememberstack_sql::scrub::scrub`]), then the mention
/// counts the scrub's deletions brought to zero (a table only this store keeps).
async fn scrub(
    tx: &mut Tx<'_>,
    ns: &str,
    doc: &str,
    versions: &[String],
    whole: bool,
) -> Result<Scrubbed> {
    let out = sql::scrub(&mut SqlConn(tx), ns, doc, versions, whole).await?;
    sqlx::query("DELETE FROM entity_mention_counts WHERE namespace_id = ? AND n <= 0")
        .bind(ns)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    Ok(out)
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
        for statement in sql::BLANK_NOTE_METADATA {
            exec(
                &mut SqlConn(&mut tx),
                statement,
                &[(&ns_s).into(), (&version_s).into()],
            )
            .await?;
        }
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
        sqlx::query(crate::shared(&rememberstack_sql::forget::INSERT_EPISODE))
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
        let rows = sqlx::query(crate::shared(&rememberstack_sql::forget::OPEN_MANIFESTS))
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
            if let Err(record) =
                sqlx::query(crate::shared(&rememberstack_sql::forget::SET_EPISODE_ERROR))
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
        sqlx::query(crate::shared(&rememberstack_sql::namespaces::RESTORE))
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
                    &mut SqlConn(&mut tx),
                    sql::VERSIONS_OF_LINEAGE,
                    &[(&ns_s).into(), (&doc_s).into()],
                )
                .await?,
            );
            let versions: Vec<String> = versions.into_iter().collect();
            report.versions = versions.len() as u64;
            let scrubbed = scrub(&mut tx, &ns_s, &doc_s, &versions, true).await?;
            for sha in &manifest.content_sha256 {
                sqlx::query(crate::shared(
                    &rememberstack_sql::forget::INSERT_FORGOTTEN_CONTENT,
                ))
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
        let mut checks = {
            let mut tx = self.read.begin().await.map_err(db_err)?;
            sql::verify_records(&mut SqlConn(&mut tx), manifest, shared).await?
        };
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
        for sha in manifest
            .content_sha256
            .iter()
            .filter(|s| !shared.contains(s))
        {
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
        let rows = sqlx::query(crate::shared(&rememberstack_sql::forget::OPEN_EPISODES))
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
        .map(|(table, column)| Dialect::Sqlite.render(&sql::delete_in(table, column)))
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
            .map(|t| Dialect::Sqlite.render(t)),
        );
        statements.push(Dialect::Sqlite.render(&sql::delete_unused_vectors_sql()));
        let bad = crate::entities::tests::plans_without_an_index(&store, &statements).await;
        assert!(
            bad.is_empty(),
            "plans without an index on the ids:\n{}",
            bad.join("\n")
        );
    }
}
