//! Row decoding.

use crate::{parse_id, ts};
use rememberstack_core::{Error, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

pub(crate) use rememberstack_sql::rows::{
    block_row, chunk_row, document_row, namespace_row, section_row, version_row, work_count_row,
    work_row,
};

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

/// This store's mark on the shared row decoders (`rememberstack_sql::rows`).
pub(crate) struct Lite;

/// SQLite's own types under the shared decoders: times as RFC 3339 text, JSON as
/// text, booleans as 0 and 1.
impl rememberstack_sql::rows::SqlRow<Lite> for SqliteRow {
    fn opt_text(&self, col: &str) -> Result<Option<String>> {
        self.try_get(col).map_err(crate::db_err)
    }

    fn opt_int(&self, col: &str) -> Result<Option<i64>> {
        self.try_get(col).map_err(crate::db_err)
    }

    fn opt_float(&self, col: &str) -> Result<Option<f64>> {
        self.try_get(col).map_err(crate::db_err)
    }

    fn opt_bool(&self, col: &str) -> Result<Option<bool>> {
        Ok(self.opt_int(col)?.map(|n| n != 0))
    }

    fn opt_time(&self, col: &str) -> Result<Option<rememberstack_core::time::Timestamp>> {
        self.opt_text(col)?.map(|s| ts(&s)).transpose()
    }

    fn opt_json<T: DeserializeOwned>(&self, col: &str) -> Result<Option<T>> {
        self.opt_text(col)?.map(|s| from_json(&s)).transpose()
    }
}
