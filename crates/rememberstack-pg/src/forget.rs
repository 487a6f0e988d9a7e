//! Hard forget (D74) on PostgreSQL: the scrub of every record derived from a
//! lineage, the fail-closed episode around it, the vacuum that drops the dead
//! rows' tuples and index entries, the verification, and the re-honouring of
//! every manifest when the store connects. The scrub is shared with the SQLite
//! store (`rememberstack_sql::scrub`); lexical rows go with their base rows
//! (`ON DELETE CASCADE`), and originals live in `content_objects`, so no blob
//! directory is involved.
//!
//! Note revocation scrubs one revision the same way, inside the transaction
//! that revokes it.

use crate::{PgStore, db_err, parse_id};
use rememberstack_core::forget::{ForgetCheck, ForgetManifest, ForgetReport, PendingForget};
use rememberstack_core::ids::*;
use rememberstack_core::source::Admission;
use rememberstack_core::store::NoteRecord;
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::scrub::{self as sql, scrub};
use rememberstack_sql::{
    Bind, Conn, Dialect, Kind, LexicalIndex, Value, decode_row, exec, strings,
};
use sqlx::{AssertSqlSafe, Postgres, Row, Transaction};
use std::collections::BTreeSet;

pub(crate) type Tx<'a> = Transaction<'a, Postgres>;

/// A transaction as the shared SQL procedures use it.
pub(crate) struct SqlConn<'t, 'c>(pub(crate) &'t mut Tx<'c>);

fn bound<'q>(
    mut q: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    binds: &[Bind<'q>],
) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
    for b in binds {
        q = match *b {
            Bind::Text(s) => q.bind(s),
            Bind::Int(n) => q.bind(n),
            Bind::Time(t) => q.bind(t),
            Bind::NullText => q.bind(None::<String>),
        };
    }
    q
}

impl Conn for SqlConn<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
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

    /// Lexical rows reference their records (`ON DELETE CASCADE`): nothing to do.
    async fn delete_lexical(&mut self, _: &str, _: LexicalIndex, _: &[i64]) -> Result<()> {
        Ok(())
    }
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
        use crate::lifecycle::{
            advisory_lock, lock_lineage, note_in, note_lock, set_lifecycle, stored, unserve,
        };
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
        lock_lineage(&mut tx, &ns_s, &doc_s).await?;
        set_lifecycle(&mut tx, &ns_s, &version_s, Admission::Revoked, at).await?;
        unserve(&mut tx, &ns_s, &doc_s, at, "note_revoked").await?;
        let scrubbed = scrub(
            &mut SqlConn(&mut tx),
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
        sqlx::query(crate::shared(&rememberstack_sql::forget::INSERT_EPISODE))
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
        let rows = sqlx::query(crate::shared(&rememberstack_sql::forget::OPEN_MANIFESTS))
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
            if let Err(record) =
                sqlx::query(crate::shared(&rememberstack_sql::forget::SET_EPISODE_ERROR))
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
        sqlx::query(crate::shared(&rememberstack_sql::namespaces::RESTORE))
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
            // Fence out pipeline commits of the lineage that were leased before the
            // forget began (new leases skip a namespace under forget): take the
            // lineage row, then the namespace's change stamp, in the order a chunk
            // commit takes them and before any row is read. A commit that already
            // holds either finishes first and its rows are scrubbed with the rest;
            // one that comes after finds its work item gone and rolls back. Without
            // this, chunks a worker committed while the scrub ran survived it and
            // the forget failed verification, leaving the namespace closed.
            crate::lifecycle::lock_lineage(&mut tx, &ns_s, &doc_s).await?;
            sqlx::query(
                "INSERT INTO change_stamps (namespace_id, n) VALUES ($1, 1)
                 ON CONFLICT (namespace_id) DO UPDATE SET n = change_stamps.n + 1",
            )
            .bind(&ns_s)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
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
            let scrubbed = scrub(&mut SqlConn(&mut tx), &ns_s, &doc_s, &versions, true).await?;
            for sha in &manifest.content_sha256 {
                sqlx::query(crate::shared(
                    &rememberstack_sql::forget::INSERT_FORGOTTEN_CONTENT,
                ))
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
        // Over large tables it runs long: without the pool's statement bounds.
        let mut conn = self.maintenance.acquire().await.map_err(db_err)?;
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
        let mut checks = {
            let mut tx = self.pool().begin().await.map_err(db_err)?;
            sql::verify_records(&mut SqlConn(&mut tx), manifest, shared).await?
        };
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
        let rows = sqlx::query(crate::shared(&rememberstack_sql::forget::OPEN_EPISODES))
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
