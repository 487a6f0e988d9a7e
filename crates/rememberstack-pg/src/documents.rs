//! Sources: versions, originals, prepared representations, chunks and lineages; store-
//! wide settings.
//!
//! Ported statement by statement from the SQLite store (`rememberstack-sqlite/src/lib.rs`,
//! `rows.rs`, and the note helpers of `lifecycle.rs`). Originals live in
//! `content_objects.bytes` instead of a blob directory; chunk full text goes to
//! `chunk_lexical` (generated `tsvector` and length, its BM25 statistics kept by
//! triggers) instead of a per-namespace FTS5 table.

use crate::ledger::{fence, insert_work};
use crate::lifecycle::{insert_note, stored};
use crate::rows::get;
use crate::{PgStore, column, db_err, parse_id};
use rememberstack_core::ids::{ChunkId, DocumentId, NamespaceId, VersionId};
use rememberstack_core::ledger::NewWork;
use rememberstack_core::source::VersioningMode;
use rememberstack_core::store::{
    ChunkRecord, DocumentRow, ExtractionCommit, Lease, NewChunk, NewVersion, PreparedVersion,
    SectionRow, VersionOutcome, VersionRecord,
};
use rememberstack_core::text::{BlockKind, TurnSpan};
use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_sql::rows::{block_row, chunk_row, document_row, section_row, version_row};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, PgConnection};
use std::collections::HashMap;

/// Serialize the leased writers of one version's derived rows (representation,
/// blocks, sections; chunks). SQLite's single writer does this implicitly; here two
/// work items of one version (two component versions) may commit at once, and each
/// must replace the other's rows, not collide with or add to them.
async fn lock_version(tx: &mut PgConnection, ns: &str, version: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("version:{ns}:{version}"))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    Ok(())
}

fn corrupt_json(e: serde_json::Error) -> Error {
    Error::store(format!("corrupt JSON column: {e}"))
}

fn block_kind_str(kind: BlockKind) -> Result<String> {
    match serde_json::to_value(kind).map_err(|e| Error::internal(e.to_string()))? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(Error::internal(format!("not a unit variant: {other}"))),
    }
}

// --- note helpers (the SQLite store's lifecycle::insert_note and what it calls)

impl PgStore {
    pub(crate) async fn create_version_impl(&self, nv: NewVersion) -> Result<VersionOutcome> {
        let ns = nv.namespace_id.to_string();
        let now = stored(nv.now);
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let forgotten = sqlx::query(
            "SELECT 1 AS one FROM forgotten_content WHERE namespace_id = $1 AND sha256 = $2",
        )
        .bind(&ns)
        .bind(&nv.content.sha256)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        if forgotten.is_some() {
            return Err(Error::new(
                ErrorCode::ForgottenContent,
                format!(
                    "these bytes (sha256 {}) were forgotten in this namespace and can never be ingested again",
                    nv.content.sha256
                ),
            ));
        }
        // SQLite reads the lineage and then writes under its single writer. Here two
        // processes may admit the same lineage at once: the lineage is claimed by
        // inserting it (the unique lineage key makes the loser wait for the winner's
        // commit and then do nothing), and an existing lineage is row-locked before
        // it is read, so the latest-version checks and the version ordinal are
        // decided by one transaction at a time.
        let inserted = sqlx::query(
            "INSERT INTO documents (namespace_id, id, source_kind, source_ref, mode,
                 current_version_id, latest_version_id, version_count, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, NULL, $6, 1, $7, $8)
             ON CONFLICT (namespace_id, source_kind, source_ref) DO NOTHING",
        )
        .bind(&ns)
        .bind(nv.document_id.to_string())
        .bind(&nv.source_kind)
        .bind(&nv.source_ref)
        .bind(nv.mode.unwrap_or_default().as_str())
        .bind(nv.version_id.to_string())
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected();
        let (document_id, ordinal, new_lineage) = if inserted == 1 {
            (nv.document_id, 1_i32, true)
        } else {
            // Lock the lineage row on its own first: a locking read of the join would
            // re-check a concurrently updated row against its old snapshot, where the
            // new latest version is not visible yet, and return nothing. The read
            // after the lock takes a fresh snapshot (READ COMMITTED).
            sqlx::query(
                "SELECT id FROM documents
                 WHERE namespace_id = $1 AND source_kind = $2 AND source_ref = $3 FOR UPDATE",
            )
            .bind(&ns)
            .bind(&nv.source_kind)
            .bind(&nv.source_ref)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            let row = sqlx::query(crate::shared(
                &rememberstack_sql::documents::DOCUMENT_WITH_LATEST_DIGEST,
            ))
            .bind(&ns)
            .bind(&nv.source_kind)
            .bind(&nv.source_ref)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            let doc_id: DocumentId = parse_id(&get::<String>(&row, "id")?)?;
            let mode = VersioningMode::parse(&get::<String>(&row, "mode")?)?;
            let latest: String = get(&row, "latest_version_id")?;
            if let Some(expected) = nv.expected_latest
                && latest != expected.to_string()
            {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "lineage ({}, {}) moved past version {expected} during the request; retry",
                        nv.source_kind, nv.source_ref
                    ),
                ));
            }
            if let Some(requested) = nv.mode
                && requested != mode
            {
                return Err(Error::new(
                    ErrorCode::Conflict,
                    format!(
                        "lineage ({}, {}) is {}; a lineage's versioning mode cannot change to {}",
                        nv.source_kind,
                        nv.source_ref,
                        mode.as_str(),
                        requested.as_str()
                    ),
                ));
            }
            // Bytes that come back after a deletion are a new version processed
            // afresh (D135): the identical-byte no-op never matches a deleted one.
            let deleted = get::<Option<Timestamp>>(&row, "deleted_at")?.is_some();
            if !deleted
                && !nv.distinct
                && get::<String>(&row, "content_sha256")? == nv.content.sha256
            {
                return Ok(VersionOutcome::Unchanged {
                    document_id: doc_id,
                    version_id: parse_id(&latest)?,
                });
            }
            let count: i32 = get(&row, "version_count")?;
            sqlx::query(crate::shared(
                &rememberstack_sql::documents::SET_LATEST_VERSION,
            ))
            .bind(nv.version_id.to_string())
            .bind(now)
            .bind(&ns)
            .bind(doc_id.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            (doc_id, count + 1, false)
        };
        // The original goes in with the version, in the same transaction.
        sqlx::query(
            "INSERT INTO content_objects (namespace_id, sha256, size, mime, bytes, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (namespace_id, sha256) DO NOTHING",
        )
        .bind(&ns)
        .bind(&nv.content.sha256)
        .bind(nv.content.bytes.len() as i64)
        .bind(&nv.content.mime)
        .bind(&nv.content.bytes)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let principal_id: Option<String> = match &nv.principal {
            None => None,
            Some(p) => Some(
                sqlx::query_scalar(
                    "INSERT INTO ingest_principals (id, namespace_id, kind, external_ref, created_at)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (namespace_id, kind, external_ref)
                     DO UPDATE SET kind = EXCLUDED.kind
                     RETURNING id",
                )
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(&ns)
                .bind(p.kind.as_str())
                .bind(&p.external_ref)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?,
            ),
        };
        sqlx::query(crate::shared(&rememberstack_sql::documents::INSERT_VERSION))
            .bind(&ns)
            .bind(nv.version_id.to_string())
            .bind(document_id.to_string())
            .bind(ordinal)
            .bind(&nv.content.sha256)
            .bind(nv.content.bytes.len() as i64)
            .bind(&nv.content.mime)
            .bind(nv.format.map(|f| f.as_str()))
            .bind(stored(nv.source_modified_at))
            .bind(nv.origin.as_str())
            .bind(Json(&nv.metadata))
            .bind(now)
            .bind(nv.admission.as_str())
            .bind(principal_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        if let Some(note) = &nv.note {
            insert_note(
                &mut tx,
                &ns,
                (document_id, nv.version_id),
                note,
                nv.admission,
                now,
            )
            .await?;
        }
        let mut names: Vec<&str> = Vec::new();
        if let Some(f) = &nv.metadata.file_name {
            names.push(&f.value);
        }
        if let Some(t) = &nv.metadata.title {
            names.push(&t.value);
        }
        for name in names {
            sqlx::query(crate::shared(&rememberstack_sql::documents::INSERT_NAME))
                .bind(&ns)
                .bind(document_id.to_string())
                .bind(name)
                .bind(nv.version_id.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let mut work = nv.work.clone();
        work.target_id = nv.version_id.uuid();
        work.version_id = nv.version_id;
        insert_work(&mut tx, &[work], now).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(VersionOutcome::Created {
            document_id,
            version_id: nv.version_id,
            new_lineage,
        })
    }

    pub(crate) async fn version_impl(
        &self,
        ns: NamespaceId,
        id: VersionId,
    ) -> Result<Option<VersionRecord>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::documents::VERSION_BY_ID))
            .bind(ns.to_string())
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.map(|r| version_row(&r)).transpose()
    }

    pub(crate) async fn versions_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<VersionRecord>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::VERSIONS_OF_DOCUMENT,
        ))
        .bind(ns.to_string())
        .bind(doc.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(version_row).collect()
    }

    pub(crate) async fn content_impl(&self, ns: NamespaceId, sha256: &str) -> Result<Vec<u8>> {
        let bytes: Option<Vec<u8>> = sqlx::query_scalar(
            "SELECT bytes FROM content_objects WHERE namespace_id = $1 AND sha256 = $2",
        )
        .bind(ns.to_string())
        .bind(sha256)
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        bytes.ok_or_else(|| Error::not_found(format!("content object {sha256} not found")))
    }

    pub(crate) async fn commit_prepared_impl(
        &self,
        lease: &Lease,
        prepared: PreparedVersion,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let ns = fence(&mut tx, lease, now).await?;
        let vid = prepared.version_id.to_string();
        lock_version(&mut tx, &ns, &vid).await?;
        let now = stored(now);
        for table in ["representations", "blocks", "sections"] {
            sqlx::query(AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE namespace_id = $1 AND version_id = $2"
            )))
            .bind(&ns)
            .bind(&vid)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        sqlx::query(crate::shared(
            &rememberstack_sql::documents::INSERT_REPRESENTATION,
        ))
        .bind(&ns)
        .bind(&vid)
        .bind(&prepared.representation.markdown)
        .bind(Json(&prepared.representation.turns))
        .bind(&prepared.title)
        .bind(&prepared.component_version)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        // A version's blocks and sections go in with one statement each.
        let blocks = &prepared.blocks;
        sqlx::query(
            "INSERT INTO blocks (namespace_id, version_id, ordinal, kind, level, start_byte,
                 end_byte, hash, turn_json)
             SELECT $1, $2, b.ordinal, b.kind, b.level, b.start_byte, b.end_byte, b.hash, b.turn
               FROM unnest($3::int4[], $4::text[], $5::int4[], $6::int8[], $7::int8[],
                           $8::text[], $9::jsonb[])
                    AS b(ordinal, kind, level, start_byte, end_byte, hash, turn)",
        )
        .bind(&ns)
        .bind(&vid)
        .bind(column(blocks, |b| b.ordinal as i32))
        .bind(
            blocks
                .iter()
                .map(|b| block_kind_str(b.kind))
                .collect::<Result<Vec<_>>>()?,
        )
        .bind(column(blocks, |b| b.level.map(i32::from)))
        .bind(column(blocks, |b| b.start as i64))
        .bind(column(blocks, |b| b.end as i64))
        .bind(column(blocks, |b| b.hash.as_str()))
        .bind(column(blocks, |b| b.turn.as_ref().map(Json)))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        let sections = &prepared.sections;
        sqlx::query(
            "INSERT INTO sections (namespace_id, version_id, ordinal, block_start, block_end,
                 level, title, path_json, role, parent)
             SELECT $1, $2, s.ordinal, s.block_start, s.block_end, s.level, s.title, s.path,
                    s.role, s.parent
               FROM unnest($3::int4[], $4::int4[], $5::int4[], $6::int4[], $7::text[],
                           $8::jsonb[], $9::text[], $10::int4[])
                    AS s(ordinal, block_start, block_end, level, title, path, role, parent)",
        )
        .bind(&ns)
        .bind(&vid)
        .bind(column(sections, |s| s.ordinal as i32))
        .bind(column(sections, |s| s.block_start as i32))
        .bind(column(sections, |s| s.block_end as i32))
        .bind(column(sections, |s| i32::from(s.level)))
        .bind(column(sections, |s| s.title.as_str()))
        .bind(column(sections, |s| Json(&s.path)))
        .bind(column(sections, |s| s.role.as_str()))
        .bind(column(sections, |s| s.parent.map(|p| p as i32)))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn prepared_impl(
        &self,
        ns: NamespaceId,
        id: VersionId,
    ) -> Result<Option<PreparedVersion>> {
        let ns_s = ns.to_string();
        let vid = id.to_string();
        // One snapshot for the three reads (SQLite reads them from one WAL reader
        // connection without a transaction; a repeatable-read transaction is the
        // stricter equivalent against a concurrent re-prepare).
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // A compacted version keeps only its representation's title.
        let Some(rep) = sqlx::query(
            "SELECT r.markdown, r.turns_json, r.title, r.component_version FROM representations r
             JOIN document_versions v ON v.namespace_id = r.namespace_id AND v.id = r.version_id
             WHERE r.namespace_id = $1 AND r.version_id = $2 AND v.compacted_at IS NULL",
        )
        .bind(&ns_s)
        .bind(&vid)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?
        else {
            return Ok(None);
        };
        let blocks = sqlx::query(crate::shared(&rememberstack_sql::documents::BLOCKS))
            .bind(&ns_s)
            .bind(&vid)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?
            .iter()
            .map(block_row)
            .collect::<Result<Vec<_>>>()?;
        let sections = sqlx::query(crate::shared(&rememberstack_sql::documents::SECTIONS))
            .bind(&ns_s)
            .bind(&vid)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?
            .iter()
            .map(section_row)
            .collect::<Result<Vec<_>>>()?;
        tx.commit().await.map_err(db_err)?;
        let turns: Vec<TurnSpan> =
            serde_json::from_value(get::<serde_json::Value>(&rep, "turns_json")?)
                .map_err(corrupt_json)?;
        Ok(Some(PreparedVersion {
            version_id: id,
            representation: rememberstack_core::text::Representation {
                markdown: get(&rep, "markdown")?,
                turns,
            },
            blocks,
            sections,
            title: get(&rep, "title")?,
            component_version: get(&rep, "component_version")?,
        }))
    }

    pub(crate) async fn commit_chunks_impl(
        &self,
        lease: &Lease,
        version_id: VersionId,
        chunks: Vec<NewChunk>,
        carried: Vec<ExtractionCommit>,
        follow_up: Vec<NewWork>,
        now: Timestamp,
    ) -> Result<()> {
        let mut tx = self.pool().begin().await.map_err(db_err)?;
        let vid = version_id.to_string();
        // Lock the lineage row before anything else. The currency update below
        // needs it (SQLite's single writer decides "which version is current" for
        // one lineage at a time; here two workers may commit chunks of two
        // versions at once), and `create_version` locks the lineage row before its
        // first write: every write to a stamped table (the fence is one) takes the
        // namespace's `change_stamps` row lock until commit, so taking the lineage
        // row after it here while `create_version` takes them the other way round
        // would deadlock. Looked up before the fence; an unknown work item falls
        // through to the fence's `LeaseLost`.
        sqlx::query(
            "SELECT 1 AS one FROM documents d
             WHERE (d.namespace_id, d.id) = (
                 SELECT v.namespace_id, v.document_id FROM processing_state p
                 JOIN document_versions v ON v.namespace_id = p.namespace_id AND v.id = $2
                 WHERE p.id = $1)
             FOR UPDATE",
        )
        .bind(lease.work_id.to_string())
        .bind(&vid)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        let ns = fence(&mut tx, lease, now).await?;
        lock_version(&mut tx, &ns, &vid).await?;
        let now = stored(now);
        let row = sqlx::query(crate::shared(&rememberstack_sql::documents::VERSION_PLACE))
            .bind(&ns)
            .bind(&vid)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        let document_id: String = get(&row, "document_id")?;
        let ordinal: i32 = get(&row, "ordinal")?;
        // The lexical rows go with their chunks (the foreign key would cascade too).
        sqlx::query(
            "DELETE FROM chunk_lexical WHERE namespace_id = $1
               AND seq IN (SELECT seq FROM chunks WHERE namespace_id = $1 AND version_id = $2)",
        )
        .bind(&ns)
        .bind(&vid)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query(crate::shared(&rememberstack_sql::documents::DELETE_CHUNKS))
            .bind(&ns)
            .bind(&vid)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        // The chunks go in with one statement, in order (`seq` follows the ordinals),
        // and answer their `seq`s for the lexical rows.
        let plans = column(&chunks, |c| &c.plan);
        let ids = column(&chunks, |c| c.id.to_string());
        let rows = sqlx::query(
            "INSERT INTO chunks (namespace_id, id, version_id, document_id, ordinal, section_ordinal,
                 block_start, block_end, start_byte, end_byte, char_start, char_end, text,
                 content_hash, token_estimate, embedding_key, event_ids_json)
             SELECT $1, c.id, $2, $3, c.ordinal, c.section_ordinal, c.block_start, c.block_end,
                    c.start_byte, c.end_byte, c.char_start, c.char_end, c.text, c.content_hash,
                    c.token_estimate, c.embedding_key, c.event_ids
               FROM unnest($4::text[], $5::int4[], $6::int4[], $7::int4[], $8::int4[],
                           $9::int8[], $10::int8[], $11::int8[], $12::int8[], $13::text[],
                           $14::text[], $15::int4[], $16::text[], $17::jsonb[])
                    WITH ORDINALITY AS c(id, ordinal, section_ordinal, block_start, block_end,
                        start_byte, end_byte, char_start, char_end, text, content_hash,
                        token_estimate, embedding_key, event_ids, i)
              ORDER BY c.i
             RETURNING id, seq",
        )
        .bind(&ns)
        .bind(&vid)
        .bind(&document_id)
        .bind(&ids)
        .bind(column(&plans, |p| p.ordinal as i32))
        .bind(column(&plans, |p| p.section_ordinal as i32))
        .bind(column(&plans, |p| p.block_start as i32))
        .bind(column(&plans, |p| p.block_end as i32))
        .bind(column(&plans, |p| p.start as i64))
        .bind(column(&plans, |p| p.end as i64))
        .bind(column(&plans, |p| p.char_start as i64))
        .bind(column(&plans, |p| p.char_end as i64))
        .bind(column(&plans, |p| p.text.as_str()))
        .bind(column(&plans, |p| p.content_hash.as_str()))
        .bind(column(&plans, |p| p.token_estimate as i32))
        .bind(column(&chunks, |c| c.embedding_key.as_str()))
        .bind(column(&chunks, |c| Json(&c.event_ids)))
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
        let mut seq_of: HashMap<String, i64> = HashMap::with_capacity(rows.len());
        for r in &rows {
            seq_of.insert(get(r, "id")?, get(r, "seq")?);
        }
        let seqs: Vec<i64> = ids
            .iter()
            .map(|id| {
                seq_of.get(id).copied().ok_or_else(|| {
                    Error::new(ErrorCode::Internal, format!("chunk {id} was not written"))
                })
            })
            .collect::<Result<_>>()?;
        let texts: Vec<String> = plans.iter().map(|p| p.text.clone()).collect();
        crate::insert_lexical(
            &mut tx,
            rememberstack_sql::LexicalIndex::Chunks,
            &ns,
            &seqs,
            &texts,
        )
        .await?;
        // The version becomes current unless a newer version already is.
        sqlx::query(crate::shared(
            &rememberstack_sql::documents::ADVANCE_CURRENT_VERSION,
        ))
        .bind(&vid)
        .bind(now)
        .bind(&ns)
        .bind(&document_id)
        .bind(ordinal)
        .bind(&vid)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if !carried.is_empty() {
            crate::claims::write_carried(&mut tx, &ns, &carried, now).await?;
            sqlx::query(
                "INSERT INTO currency_due (namespace_id, version_id) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
            )
            .bind(&ns)
            .bind(&vid)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        insert_work(&mut tx, &follow_up, now).await?;
        tx.commit().await.map_err(db_err)
    }

    pub(crate) async fn documents_impl(&self, ns: NamespaceId) -> Result<Vec<DocumentRow>> {
        let rows = sqlx::query(crate::shared(&rememberstack_sql::documents::LIVE_DOCUMENTS))
            .bind(ns.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(document_row).collect()
    }

    pub(crate) async fn document_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Option<DocumentRow>> {
        let row = sqlx::query(crate::shared(&rememberstack_sql::documents::DOCUMENT_BY_ID))
            .bind(ns.to_string())
            .bind(doc.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
        row.as_ref().map(document_row).transpose()
    }

    pub(crate) async fn document_by_ref_impl(
        &self,
        ns: NamespaceId,
        source_kind: &str,
        source_ref: &str,
    ) -> Result<Option<DocumentRow>> {
        let row = sqlx::query(crate::shared(
            &rememberstack_sql::documents::DOCUMENT_BY_NAME,
        ))
        .bind(ns.to_string())
        .bind(source_kind)
        .bind(source_ref)
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        row.as_ref().map(document_row).transpose()
    }

    pub(crate) async fn document_names_impl(
        &self,
        ns: NamespaceId,
        doc: DocumentId,
    ) -> Result<Vec<String>> {
        // SQLite orders names by its default BINARY collation: bytewise here too.
        let rows = sqlx::query(crate::shared(&rememberstack_sql::documents::NAMES))
            .bind(ns.to_string())
            .bind(doc.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        rows.iter().map(|r| get(r, "name")).collect()
    }

    pub(crate) async fn sections_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Vec<SectionRow>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::SECTIONS_WITH_CHUNK_COUNTS,
        ))
        .bind(ns.to_string())
        .bind(version.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(SectionRow {
                    section: section_row(r)?,
                    chunk_count: get::<i64>(r, "chunk_count")? as u32,
                })
            })
            .collect()
    }

    pub(crate) async fn chunks_impl(
        &self,
        ns: NamespaceId,
        ids: &[ChunkId],
    ) -> Result<Vec<ChunkRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(crate::shared(&rememberstack_sql::documents::CHUNKS_BY_ID))
            .bind(ns.to_string())
            .bind(crate::any_list(ids))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
        let mut by_id: HashMap<ChunkId, ChunkRecord> = HashMap::new();
        for r in &rows {
            let rec = chunk_row(r)?;
            by_id.insert(rec.chunk_id, rec);
        }
        // In the order asked for; a repeated id comes back once, unknown ids not at all.
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    pub(crate) async fn version_chunks_impl(
        &self,
        ns: NamespaceId,
        version: VersionId,
    ) -> Result<Vec<ChunkRecord>> {
        let rows = sqlx::query(crate::shared(
            &rememberstack_sql::documents::CHUNKS_OF_VERSION,
        ))
        .bind(ns.to_string())
        .bind(version.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        rows.iter().map(chunk_row).collect()
    }

    pub(crate) async fn setting_impl(&self, key: &str) -> Result<Option<String>> {
        sqlx::query_scalar(crate::shared(&rememberstack_sql::namespaces::SETTING))
            .bind(key)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)
    }

    pub(crate) async fn set_setting_impl(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query(crate::shared(&rememberstack_sql::namespaces::SET_SETTING))
            .bind(key)
            .bind(value)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(())
    }
}
