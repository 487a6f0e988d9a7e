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
