//! Column decoding for every row mapper of the store: a type mismatch or an
//! unparsable id is a store error.

use crate::{db_err, parse_id};
use rememberstack_core::{Error, Result};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// One column, decoded.
pub(crate) fn get<'r, T>(r: &'r PgRow, col: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    r.try_get(col).map_err(db_err)
}

/// An id column.
pub(crate) fn id<T: std::str::FromStr<Err = Error>>(r: &PgRow, col: &str) -> Result<T> {
    parse_id(&get::<String>(r, col)?)
}

/// A nullable id column.
pub(crate) fn opt_id<T: std::str::FromStr<Err = Error>>(r: &PgRow, col: &str) -> Result<Option<T>> {
    get::<Option<String>>(r, col)?
        .map(|s| parse_id(&s))
        .transpose()
}

/// This store's mark on the shared row decoders (`rememberstack_sql::rows`).
pub(crate) struct Pg;

/// PostgreSQL's own types under the shared decoders: `timestamptz`, `jsonb`,
/// `bool`, and integers of every width.
impl rememberstack_sql::rows::SqlRow<Pg> for PgRow {
    fn opt_text(&self, col: &str) -> Result<Option<String>> {
        get(self, col)
    }

    fn opt_int(&self, col: &str) -> Result<Option<i64>> {
        use sqlx::{Column, TypeInfo};
        match self.try_column(col).map_err(db_err)?.type_info().name() {
            "INT2" => Ok(get::<Option<i16>>(self, col)?.map(i64::from)),
            "INT4" => Ok(get::<Option<i32>>(self, col)?.map(i64::from)),
            _ => get(self, col),
        }
    }

    fn opt_float(&self, col: &str) -> Result<Option<f64>> {
        use sqlx::{Column, TypeInfo};
        match self.try_column(col).map_err(db_err)?.type_info().name() {
            "FLOAT4" => Ok(get::<Option<f32>>(self, col)?.map(f64::from)),
            _ => get(self, col),
        }
    }

    fn opt_bool(&self, col: &str) -> Result<Option<bool>> {
        get(self, col)
    }

    fn opt_time(&self, col: &str) -> Result<Option<rememberstack_core::time::Timestamp>> {
        get(self, col)
    }

    fn opt_json<T: serde::de::DeserializeOwned>(&self, col: &str) -> Result<Option<T>> {
        Ok(get::<Option<sqlx::types::Json<T>>>(self, col)?.map(|j| j.0))
    }
}
