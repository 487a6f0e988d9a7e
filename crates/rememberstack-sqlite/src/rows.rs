//! Row decoding.

use crate::{parse_id, ts};
use rememberstack_core::ids::*;
use rememberstack_core::ledger::*;
use rememberstack_core::source::{
    DocumentMetadata, IngestPrincipal, Origin, PrincipalKind, VersioningMode,
};
use rememberstack_core::store::*;
use rememberstack_core::text::{Block, Section, SectionRole, SourceFormat};
use rememberstack_core::{Error, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

pub(crate) const VERSION_SELECT: &str = "
    SELECT v.id, v.document_id, v.namespace_id, v.ordinal, v.content_sha256, v.size, v.mime, v.format,
           v.source_modified_at, v.origin, v.metadata_json, v.created_at, v.compacted_at,
           d.source_kind, d.source_ref, d.mode, d.current_version_id,
           ip.kind AS principal_kind, ip.external_ref AS principal_ref
    FROM document_versions v
    JOIN documents d ON d.namespace_id = v.namespace_id AND d.id = v.document_id
    LEFT JOIN ingest_principals ip ON ip.id = v.ingested_by_principal_id";

pub(crate) const DOCUMENT_SELECT: &str = "
    SELECT d.id, d.source_kind, d.source_ref, d.mode, d.current_version_id, d.latest_version_id,
           d.version_count, d.created_at, d.deleted_at, v.metadata_json,
           (SELECT COUNT(*) FROM processing_state p WHERE p.namespace_id = d.namespace_id
                AND p.version_id = d.latest_version_id AND p.status IN ('pending', 'running', 'failed')
                AND (p.defer_reason IS NULL OR p.defer_reason <> 'no_route')) AS open_work,
           (SELECT COUNT(*) FROM processing_state p WHERE p.namespace_id = d.namespace_id
                AND p.version_id = d.latest_version_id AND p.status = 'pending'
                AND p.defer_reason = 'no_route') AS parked_work,
           (SELECT COUNT(*) FROM processing_state p WHERE p.namespace_id = d.namespace_id
                AND p.version_id = d.latest_version_id AND p.status = 'dead_letter') AS dead_work
    FROM documents d
    JOIN document_versions v ON v.namespace_id = d.namespace_id AND v.id = d.latest_version_id";

pub(crate) fn json<T: Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::internal(e.to_string()))
}

pub(crate) fn from_json<T: DeserializeOwned>(s: &str) -> Result<T> {
    serde_json::from_str(s).map_err(|e| Error::store(format!("corrupt JSON column: {e}")))
}

/// The serde name of a unit enum variant (e.g. `BlockKind::ListItem` → `list_item`).
pub(crate) fn enum_str<T: Serialize>(v: &T) -> Result<String> {
    match serde_json::to_value(v).map_err(|e| Error::internal(e.to_string()))? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(Error::internal(format!("not a unit variant: {other}"))),
    }
}

pub(crate) fn enum_from<T: DeserializeOwned>(s: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|e| Error::store(format!("corrupt enum value `{s}`: {e}")))
}

/// `n` bound placeholders for an `IN (…)` list: `?,?,?`.
/// An optional id column.
pub(crate) fn opt_id<T: std::str::FromStr<Err = Error>>(
    r: &SqliteRow,
    col: &str,
) -> Result<Option<T>> {
    r.get::<Option<String>, _>(col)
        .map(|s| parse_id(&s))
        .transpose()
}

/// An optional timestamp column.
pub(crate) fn opt_ts(
    r: &SqliteRow,
    col: &str,
) -> Result<Option<rememberstack_core::time::Timestamp>> {
    r.get::<Option<String>, _>(col).map(|s| ts(&s)).transpose()
}

pub(crate) fn in_list(n: usize) -> String {
    vec!["?"; n].join(",")
}

/// Insert `rows` in multi-row statements of at most 64 rows, one round trip to the
/// connection's worker each: `head` names the table and columns
/// (`INSERT INTO t (a, b) `), `push` binds one row's values in column order, and
/// `tail` follows the values (e.g. ` ON CONFLICT DO NOTHING`). Returns the rows
/// inserted.
pub(crate) async fn insert_rows<T>(
    conn: &mut sqlx::SqliteConnection,
    head: &str,
    tail: &str,
    rows: &[T],
    mut push: impl FnMut(sqlx::query_builder::Separated<'_, sqlx::Sqlite, &'static str>, &T),
) -> Result<u64> {
    let mut n = 0;
    for batch in rows.chunks(64) {
        let mut q = sqlx::QueryBuilder::<sqlx::Sqlite>::new(head);
        q.push_values(batch, &mut push);
        q.push(tail);
        n += q
            .build()
            .execute(&mut *conn)
            .await
            .map_err(crate::db_err)?
            .rows_affected();
    }
    Ok(n)
}

/// `sql` for one batch of an IN-list, its values bound: `{list}` marks where the
/// IN-list goes (each occurrence gets the batch) and the `leading` values bind first,
/// in order. Only placeholders are generated.
fn batch_query<'q>(
    sql: &str,
    leading: &[&'q str],
    batch: &'q [String],
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    let occurrences = sql.matches("{list}").count();
    let text = sql.replace("{list}", &in_list(batch.len()));
    let mut q = sqlx::query(sqlx::AssertSqlSafe(text));
    for v in leading {
        q = q.bind(*v);
    }
    for _ in 0..occurrences {
        for v in batch {
            q = q.bind(v.as_str());
        }
    }
    q
}

/// Run `sql` once per batch of `list` (at most 400 values) and return every row;
/// `sql` and `leading` as for [`execute_in_batches`].
pub(crate) async fn fetch_in_batches(
    pool: &crate::conns::Conns,
    sql: &str,
    leading: &[&str],
    list: &[String],
) -> Result<Vec<SqliteRow>> {
    let mut out = Vec::new();
    for batch in list.chunks(400) {
        let q = batch_query(sql, leading, batch);
        out.extend(q.fetch_all(pool).await.map_err(crate::db_err)?);
    }
    Ok(out)
}

/// Run the statement `sql` once per batch of `list` (at most 400 values) on `conn`;
/// returns the rows it affected. `sql` writes `{list}` where the IN-list goes (each
/// occurrence gets the batch); the `leading` values bind first, in order.
pub(crate) async fn execute_in_batches(
    conn: &mut sqlx::SqliteConnection,
    sql: &str,
    leading: &[&str],
    list: &[String],
) -> Result<u64> {
    let mut n = 0;
    for batch in list.chunks(400) {
        let q = batch_query(sql, leading, batch);
        n += q
            .execute(&mut *conn)
            .await
            .map_err(crate::db_err)?
            .rows_affected();
    }
    Ok(n)
}

/// Ids as their stored strings.
pub(crate) fn id_strings<T: ToString>(ids: &[T]) -> Vec<String> {
    ids.iter().map(ToString::to_string).collect()
}

/// A vector's stored form: half-precision floats, two bytes a component (half the
/// disk and read bandwidth of `f32`), after core's
/// [`vector_for_half_precision`](rememberstack_core::store::vector_for_half_precision)
/// rule, as the PostgreSQL store keeps them (`halfvec`); a vector with a non-finite
/// component keeps `f32`. [`decode_vector`] tells the two forms apart by the
/// blob's length.
pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    let v = rememberstack_core::store::vector_for_half_precision(v);
    if v.iter().all(|x| x.is_finite()) {
        v.iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect()
    } else {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

/// A stored vector of `dimension` components: `f16` (two bytes each) or `f32`
/// (four bytes each, as vectors written before half precision, or ones
/// [`encode_vector`] kept whole).
pub(crate) fn decode_vector(b: &[u8], dimension: i64) -> Result<Vec<f32>> {
    let dimension = usize::try_from(dimension).unwrap_or(usize::MAX);
    if dimension.checked_mul(2) == Some(b.len()) {
        Ok(b.chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect())
    } else if dimension.checked_mul(4) == Some(b.len()) {
        Ok(b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    } else {
        Err(Error::store(format!(
            "corrupt vector blob: {} bytes for {dimension} components",
            b.len()
        )))
    }
}

pub(crate) fn namespace_row(r: &SqliteRow) -> Result<Namespace> {
    Ok(Namespace {
        id: parse_id(&r.get::<String, _>("id"))?,
        slug: r.get("slug"),
        created_at: ts(&r.get::<String, _>("created_at"))?,
    })
}

pub(crate) fn version_row(r: &SqliteRow) -> Result<VersionRecord> {
    let id: String = r.get("id");
    Ok(VersionRecord {
        version_id: parse_id(&id)?,
        document_id: parse_id(&r.get::<String, _>("document_id"))?,
        namespace_id: parse_id(&r.get::<String, _>("namespace_id"))?,
        ordinal: r.get::<i64, _>("ordinal") as u32,
        source_kind: r.get("source_kind"),
        source_ref: r.get("source_ref"),
        mode: VersioningMode::parse(&r.get::<String, _>("mode"))?,
        content_sha256: r.get("content_sha256"),
        size: r.get::<i64, _>("size") as u64,
        mime: r.get("mime"),
        format: r
            .get::<Option<String>, _>("format")
            .and_then(|f| SourceFormat::parse(&f)),
        source_modified_at: ts(&r.get::<String, _>("source_modified_at"))?,
        origin: Origin::parse(&r.get::<String, _>("origin"))?,
        metadata: from_json(&r.get::<String, _>("metadata_json"))?,
        created_at: ts(&r.get::<String, _>("created_at"))?,
        is_current: r.get::<Option<String>, _>("current_version_id").as_deref()
            == Some(id.as_str()),
        ingested_by: match (
            r.get::<Option<String>, _>("principal_kind"),
            r.get::<Option<String>, _>("principal_ref"),
        ) {
            (Some(kind), Some(external_ref)) => Some(IngestPrincipal {
                kind: PrincipalKind::parse(&kind)?,
                external_ref,
            }),
            _ => None,
        },
        compacted_at: r
            .get::<Option<String>, _>("compacted_at")
            .map(|t| ts(&t))
            .transpose()?,
    })
}

pub(crate) fn document_row(r: &SqliteRow) -> Result<DocumentRow> {
    let metadata: DocumentMetadata = from_json(&r.get::<String, _>("metadata_json"))?;
    Ok(DocumentRow {
        document_id: parse_id(&r.get::<String, _>("id"))?,
        source_kind: r.get("source_kind"),
        source_ref: r.get("source_ref"),
        mode: VersioningMode::parse(&r.get::<String, _>("mode"))?,
        current_version_id: r
            .get::<Option<String>, _>("current_version_id")
            .map(|s| parse_id(&s))
            .transpose()?,
        latest_version_id: parse_id(&r.get::<String, _>("latest_version_id"))?,
        metadata,
        latest_work: WorkSummary {
            open: r.get::<i64, _>("open_work") as u64,
            parked: r.get::<i64, _>("parked_work") as u64,
            dead_letter: r.get::<i64, _>("dead_work") as u64,
        },
        version_count: r.get::<i64, _>("version_count") as u32,
        created_at: ts(&r.get::<String, _>("created_at"))?,
        deleted_at: r
            .get::<Option<String>, _>("deleted_at")
            .map(|s| ts(&s))
            .transpose()?,
    })
}

pub(crate) fn block_row(r: &SqliteRow) -> Result<Block> {
    Ok(Block {
        ordinal: r.get::<i64, _>("ordinal") as u32,
        kind: enum_from(&r.get::<String, _>("kind"))?,
        level: r.get::<Option<i64>, _>("level").map(|l| l as u8),
        start: r.get::<i64, _>("start_byte") as usize,
        end: r.get::<i64, _>("end_byte") as usize,
        hash: r.get("hash"),
        turn: r
            .get::<Option<String>, _>("turn_json")
            .map(|s| from_json(&s))
            .transpose()?,
    })
}

pub(crate) fn section_row(r: &SqliteRow) -> Result<Section> {
    Ok(Section {
        ordinal: r.get::<i64, _>("ordinal") as u32,
        block_start: r.get::<i64, _>("block_start") as u32,
        block_end: r.get::<i64, _>("block_end") as u32,
        level: r.get::<i64, _>("level") as u8,
        title: r.get("title"),
        path: from_json(&r.get::<String, _>("path_json"))?,
        role: SectionRole::parse(&r.get::<String, _>("role"))
            .ok_or_else(|| Error::store("corrupt section role"))?,
        parent: r.get::<Option<i64>, _>("parent").map(|p| p as u32),
    })
}

pub(crate) fn chunk_row(r: &SqliteRow) -> Result<ChunkRecord> {
    let version_id: String = r.get("version_id");
    Ok(ChunkRecord {
        chunk_id: parse_id(&r.get::<String, _>("id"))?,
        document_id: parse_id(&r.get::<String, _>("document_id"))?,
        version_id: parse_id(&version_id)?,
        ordinal: r.get::<i64, _>("ordinal") as u32,
        section_ordinal: r.get::<i64, _>("section_ordinal") as u32,
        block_start: r.get::<i64, _>("block_start") as u32,
        block_end: r.get::<i64, _>("block_end") as u32,
        start: r.get::<i64, _>("start_byte") as u64,
        end: r.get::<i64, _>("end_byte") as u64,
        document_title: r.get("document_title"),
        source_kind: r.get("source_kind"),
        source_ref: r.get("source_ref"),
        section_path: from_json(&r.get::<String, _>("path_json"))?,
        section_title: r.get("section_title"),
        section_role: SectionRole::parse(&r.get::<String, _>("role"))
            .ok_or_else(|| Error::store("corrupt section role"))?,
        text: r.get("text"),
        char_start: r.get::<i64, _>("char_start") as u64,
        char_end: r.get::<i64, _>("char_end") as u64,
        event_ids: from_json(&r.get::<String, _>("event_ids_json"))?,
        source_modified_at: ts(&r.get::<String, _>("source_modified_at"))?,
        content_hash: r.get("content_hash"),
        embedding_key: r.get("embedding_key"),
        is_current: r.get::<Option<String>, _>("current_version_id").as_deref()
            == Some(version_id.as_str()),
        format: r
            .get::<Option<String>, _>("format")
            .and_then(|f| SourceFormat::parse(&f)),
    })
}

pub(crate) fn work_row(r: &SqliteRow) -> Result<WorkItem> {
    let millis = |name: &str| -> Result<rememberstack_core::time::Timestamp> {
        chrono::DateTime::from_timestamp_millis(r.get::<i64, _>(name))
            .ok_or_else(|| Error::store(format!("corrupt time in {name}")))
    };
    Ok(WorkItem {
        id: parse_id::<WorkId>(&r.get::<String, _>("id"))?,
        namespace_id: parse_id(&r.get::<String, _>("namespace_id"))?,
        target_kind: TargetKind::parse(&r.get::<String, _>("target_kind"))?,
        target_id: uuid::Uuid::parse_str(&r.get::<String, _>("target_id"))
            .map_err(|e| Error::store(e.to_string()))?,
        version_id: parse_id(&r.get::<String, _>("version_id"))?,
        stage: Stage::parse(&r.get::<String, _>("stage")).map_err(Error::store)?,
        component_version: r.get("component_version"),
        status: WorkStatus::parse(&r.get::<String, _>("status"))?,
        attempts: r.get::<i64, _>("attempts") as u32,
        max_attempts: r.get::<i64, _>("max_attempts") as u32,
        not_before: millis("not_before")?,
        defer_reason: r
            .get::<Option<String>, _>("defer_reason")
            .map(|d| DeferReason::parse(&d))
            .transpose()?,
        lease_owner: r.get("lease_owner"),
        lease_expires_at: r
            .get::<Option<i64>, _>("lease_expires_at")
            .and_then(chrono::DateTime::from_timestamp_millis),
        last_error: r.get("last_error"),
        created_at: millis("created_at")?,
        updated_at: millis("updated_at")?,
    })
}

/// Decode `(id, rank)` rows of a `bm25()` ranking. `bm25()` is lower-is-better; the
/// channel reports higher-is-better, so the score is the negated rank.
pub(crate) fn bm25_hits<Id: std::str::FromStr<Err = Error>>(
    rows: &[SqliteRow],
) -> Result<Vec<(Id, f64)>> {
    rows.iter()
        .map(|r| {
            Ok((
                parse_id::<Id>(&r.get::<String, _>("id"))?,
                -r.get::<f64, _>("rank"),
            ))
        })
        .collect()
}
