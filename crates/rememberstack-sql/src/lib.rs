//! The SQL both stores share, written once.
//!
//! A statement is written here as a *template*: `?` for each parameter, in bind
//! order, and a few tokens where the two dialects spell the same thing
//! differently ([`Dialect::render`]):
//!
//! | token | SQLite | PostgreSQL |
//! |---|---|---|
//! | `?` | `?` | `$1`, `$2`, … in order |
//! | `{IN}` | `IN (SELECT value FROM json_each(?))` | `IN (SELECT jsonb_array_elements_text(?::jsonb))` |
//! | `{IN_INT}` | as `{IN}` | `IN (SELECT (jsonb_array_elements_text(?::jsonb))::bigint)` |
//! | `{ANY}` | as `{IN}` | `= ANY(?::text[])` (bound as an array: the planner sees its values) |
//! | `{JSON}` | `?` | `?::jsonb` |
//! | `{TEXT}` | (nothing) | `::text` (a parameter that may be NULL, typed) |
//! | `{BIGINT}` | (nothing) | `::bigint` (widen an `integer` column before adding) |
//! | `{GREATEST}` | `MAX` | `GREATEST` (of its arguments) |
//! | `{LEAST}` | `MIN` | `LEAST` (of its arguments) |
//! | `{SEQ}` | `rowid` | `seq` (a table's insertion order) |
//! | `{FOR_UPDATE}` | (nothing: one writer) | ` FOR UPDATE` (the rows read are locked) |
//! | `{COLLATE_C}` | (nothing: text compares bytewise) | ` COLLATE "C"` (bytewise, not the locale's order) |
//! | `{IS_TRUE}` | ` = 1` (after a boolean column: what a partial index `WHERE col = 1` is proven from) | (nothing) |
//! | `{NOT_INDEXED}` | `+` (before a column: the term is tested, never used to choose an index) | (nothing: the planner weighs indexes by their statistics) |
//!
//! Both dialects read `false`/`true` (SQLite as 0 and 1) and `excluded.` in an
//! upsert, so templates write those one way.
//!
//! A list is bound as one JSON array parameter ([`json_list`]), so a statement's
//! text never grows with the list; under `{ANY}` PostgreSQL binds it as a `text[]`
//! instead (each store's `any_list`), for the reads and writes its planner should
//! see through. No template holds a `?` that is not a
//! parameter (a snapshot test renders every one in both dialects).
//!
//! Each concern's fixed statements (`documents`, `claims`, `coverage`, `entities`, `facts`,
//! `lifecycle`, `forget`, `keys`, `namespaces`, `receipts`, `ledger`) are declared in
//! one `statements!` block: documented statics, rendered once per dialect on first
//! use. A store binds and decodes the values itself (timestamps are text in SQLite
//! and `timestamptz` in PostgreSQL), so a template never repeats a placeholder: a
//! value needed twice is bound twice.
//!
//! Procedures that only run statements (the hard-forget [`scrub`]) are written
//! once too, over [`Conn`]: each store implements it for its own transaction.
//! What a store cannot express the same way — ranking, locks, pools, the
//! migration runner, SQLite's FTS5 tables — stays in the store.

#[macro_use]
mod macros;

pub mod claims;
pub mod compact;
pub mod coverage;
pub mod documents;
pub mod entities;
pub mod facts;
pub mod forget;
pub mod keys;
pub mod ledger;
pub mod lifecycle;
pub mod manifests;
pub mod namespaces;
pub mod receipts;
pub mod rows;
pub mod scrub;

/// The schema version both stores are at: the number of their latest migration.
/// From version 23 on, every schema change is a migration of this number and name in
/// both stores (`crates/rememberstack-sqlite/migrations` and
/// `crates/rememberstack-pg/migrations`), written in each dialect; the conformance
/// tests check the pairing, and the catalogs column by column.
pub const SCHEMA_VERSION: i64 = 36;

use rememberstack_core::time::Timestamp;
use rememberstack_core::{Error, Result};
use std::future::Future;

/// The SQL dialect a statement is rendered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `IN` over one JSON array parameter of strings.
    pub fn in_list(self) -> &'static str {
        match self {
            Dialect::Sqlite => "IN (SELECT value FROM json_each(?))",
            Dialect::Postgres => "IN (SELECT jsonb_array_elements_text(?::jsonb))",
        }
    }

    /// `{ANY}`: a list the planner sees, bound as a PostgreSQL `text[]` (on SQLite,
    /// as `{IN}`, a JSON array).
    pub fn any_list(self) -> &'static str {
        match self {
            Dialect::Sqlite => self.in_list(),
            Dialect::Postgres => "= ANY(?::text[])",
        }
    }

    /// `IN` over one JSON array parameter of integers.
    pub fn in_int_list(self) -> &'static str {
        match self {
            Dialect::Sqlite => "IN (SELECT value FROM json_each(?))",
            Dialect::Postgres => "IN (SELECT (jsonb_array_elements_text(?::jsonb))::bigint)",
        }
    }

    /// A parameter stored into a JSON column (bound as its text).
    pub fn json_param(self) -> &'static str {
        match self {
            Dialect::Sqlite => "?",
            Dialect::Postgres => "?::jsonb",
        }
    }

    /// A boolean column as a condition (SQLite keeps booleans as 0 and 1).
    pub fn truthy(self, column: &str) -> String {
        match self {
            Dialect::Sqlite => format!("{column} = 1"),
            Dialect::Postgres => column.to_string(),
        }
    }

    /// A JSON column read as text (SQLite keeps JSON as text already).
    pub fn json_text(self, column: &str) -> String {
        match self {
            Dialect::Sqlite => column.to_string(),
            Dialect::Postgres => format!("{column}::text"),
        }
    }

    /// `column` with the member at `path` (object keys) set to JSON null.
    pub fn json_set_null(self, column: &str, path: &[&str]) -> String {
        match self {
            Dialect::Sqlite => format!("json_set({column}, '$.{}', NULL)", path.join(".")),
            Dialect::Postgres => {
                format!(
                    "jsonb_set({column}, '{{{}}}', 'null'::jsonb)",
                    path.join(",")
                )
            }
        }
    }

    /// `column` without the members at `paths` (each a list of object keys).
    pub fn json_remove(self, column: &str, paths: &[&[&str]]) -> String {
        match self {
            Dialect::Sqlite => {
                let paths: Vec<String> = paths
                    .iter()
                    .map(|p| format!("'$.{}'", p.join(".")))
                    .collect();
                format!("json_remove({column}, {})", paths.join(", "))
            }
            Dialect::Postgres => {
                let mut out = column.to_string();
                for p in paths {
                    out.push_str(&format!(" #- '{{{}}}'", p.join(",")));
                }
                out
            }
        }
    }

    /// The statement this dialect runs for `template` (see the crate's table).
    pub fn render(self, template: &str) -> String {
        let (text, bigint, greatest, least, seq, for_update, collate_c, is_true, not_indexed) =
            match self {
                Dialect::Sqlite => ("", "", "MAX", "MIN", "rowid", "", "", " = 1", "+"),
                Dialect::Postgres => (
                    "::text",
                    "::bigint",
                    "GREATEST",
                    "LEAST",
                    "seq",
                    " FOR UPDATE",
                    " COLLATE \"C\"",
                    "",
                    "",
                ),
            };
        let sql = template
            .replace("{ANY}", self.any_list())
            .replace("{IN_INT}", self.in_int_list())
            .replace("{IN}", self.in_list())
            .replace("{JSON}", self.json_param())
            .replace("{TEXT}", text)
            .replace("{BIGINT}", bigint)
            .replace("{GREATEST}", greatest)
            .replace("{LEAST}", least)
            .replace("{SEQ}", seq)
            .replace("{FOR_UPDATE}", for_update)
            .replace("{COLLATE_C}", collate_c)
            .replace("{IS_TRUE}", is_true)
            .replace("{NOT_INDEXED}", not_indexed);
        match self {
            Dialect::Sqlite => sql,
            Dialect::Postgres => number_placeholders(&sql),
        }
    }
}

/// A template rendered once per dialect, on first use: for statements a store runs
/// often, so the rendering is not repeated on every call.
#[derive(Debug)]
pub struct Statement {
    template: &'static str,
    sqlite: std::sync::OnceLock<String>,
    postgres: std::sync::OnceLock<String>,
}

impl Statement {
    /// A statement from its template.
    pub const fn new(template: &'static str) -> Self {
        Self {
            template,
            sqlite: std::sync::OnceLock::new(),
            postgres: std::sync::OnceLock::new(),
        }
    }

    /// The statement as `dialect` runs it.
    pub fn sql(&'static self, dialect: Dialect) -> &'static str {
        let cell = match dialect {
            Dialect::Sqlite => &self.sqlite,
            Dialect::Postgres => &self.postgres,
        };
        cell.get_or_init(|| dialect.render(self.template))
    }
}

/// Each `?` becomes `$1`, `$2`, … in order.
fn number_placeholders(sql: &str) -> String {
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

/// A list bound as one JSON array parameter (read by `{IN}`).
pub fn json_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    serde_json::Value::Array(
        items
            .into_iter()
            .map(|s| serde_json::Value::String(s.as_ref().to_string()))
            .collect(),
    )
    .to_string()
}

/// Integers bound as one JSON array parameter (read by `{IN_INT}`).
pub fn json_ints(items: &[i64]) -> String {
    serde_json::Value::Array(items.iter().map(|&n| n.into()).collect()).to_string()
}

/// One parameter of a statement. A NULL carries its type, because PostgreSQL
/// types every parameter (text is the only one a shared procedure binds NULL).
#[derive(Debug, Clone, Copy)]
pub enum Bind<'a> {
    Text(&'a str),
    Int(i64),
    /// A point in time: RFC 3339 text on SQLite, `timestamptz` on PostgreSQL.
    Time(Timestamp),
    NullText,
}

impl<'a> From<Option<&'a str>> for Bind<'a> {
    fn from(s: Option<&'a str>) -> Self {
        s.map_or(Bind::NullText, Bind::Text)
    }
}

impl<'a> From<&'a str> for Bind<'a> {
    fn from(s: &'a str) -> Self {
        Bind::Text(s)
    }
}

impl<'a> From<&'a String> for Bind<'a> {
    fn from(s: &'a String) -> Self {
        Bind::Text(s)
    }
}

impl From<Timestamp> for Bind<'_> {
    fn from(t: Timestamp) -> Self {
        Bind::Time(t)
    }
}

impl From<i64> for Bind<'_> {
    fn from(n: i64) -> Self {
        Bind::Int(n)
    }
}

/// An owned value of a statement built at run time ([`Params`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Text(String),
    Int(i64),
    Time(Timestamp),
    /// A list: a PostgreSQL `text[]`; SQLite binds it as a JSON array.
    Texts(Vec<String>),
}

/// The values of a statement built at run time, each pushed where its
/// placeholder goes (the shape of sqlx's `QueryBuilder`): `?` on SQLite, `$n` on
/// PostgreSQL, numbered after `offset` values the caller binds first.
#[derive(Debug, Clone)]
pub struct Params {
    dialect: Dialect,
    args: Vec<Arg>,
    offset: usize,
}

impl Params {
    pub fn new(dialect: Dialect) -> Self {
        Self::after(dialect, 0)
    }

    /// Values bound after `offset` leading ones.
    pub fn after(dialect: Dialect, offset: usize) -> Self {
        Params {
            dialect,
            args: Vec::new(),
            offset,
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Bind `a`; its placeholder.
    pub fn push(&mut self, a: Arg) -> String {
        self.args.push(a);
        match self.dialect {
            Dialect::Sqlite => "?".to_string(),
            Dialect::Postgres => format!("${}", self.offset + self.args.len()),
        }
    }

    /// The placeholder the next value pushed will have (for a value the caller
    /// binds itself after these).
    pub fn next(&self) -> String {
        match self.dialect {
            Dialect::Sqlite => "?".to_string(),
            Dialect::Postgres => format!("${}", self.offset + self.args.len() + 1),
        }
    }

    /// `{ANY}` over `items`: a `text[]` PostgreSQL's planner sees through (a
    /// subquery over a JSON array is guessed at 100 rows, and the guess chose a scan
    /// of every fact of the namespace over the index); SQLite binds a JSON array.
    pub fn any_list(&mut self, items: &[String]) -> String {
        let p = self.push(Arg::Texts(items.to_vec()));
        self.dialect.any_list().replace('?', &p)
    }

    /// The values, in placeholder order.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }
}

/// The type a selected column is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Text,
}

/// A value read from a row ([`Kind`] says which; `Null` for SQL NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Text(String),
    Null,
}

impl Value {
    pub(crate) fn int(&self) -> Result<i64> {
        match self {
            Value::Int(n) => Ok(*n),
            other => Err(Error::store(format!("expected an integer, read {other:?}"))),
        }
    }

    pub(crate) fn text(self) -> Result<String> {
        match self {
            Value::Text(s) => Ok(s),
            other => Err(Error::store(format!("expected text, read {other:?}"))),
        }
    }
}

/// Lexical index rows a store keeps apart from their records (SQLite's FTS5
/// tables, keyed by the record's `seq`). PostgreSQL's lexical rows go with their
/// records (`ON DELETE CASCADE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexicalIndex {
    Chunks,
    Claims,
    Facts,
}

/// One open transaction of a store, as the shared procedures use it. A store
/// implements the two statement runners and the lexical hook; statements reach
/// them already rendered for [`Conn::dialect`].
pub trait Conn: Send {
    fn dialect(&self) -> Dialect;

    /// Run a rendered statement; the number of rows it changed.
    fn execute_rendered(
        &mut self,
        sql: &str,
        binds: &[Bind<'_>],
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Run a rendered query; each row's columns read as `kinds` says, in order.
    fn fetch_rendered(
        &mut self,
        sql: &str,
        binds: &[Bind<'_>],
        kinds: &[Kind],
    ) -> impl Future<Output = Result<Vec<Vec<Value>>>> + Send;

    /// Remove the lexical rows of removed records (`seqs`) where the store keeps
    /// them apart from the records.
    fn delete_lexical(
        &mut self,
        ns: &str,
        index: LexicalIndex,
        seqs: &[i64],
    ) -> impl Future<Output = Result<()>> + Send;
}

/// A row's columns read as `kinds` says, in order: the one decoding both stores'
/// [`Conn::fetch_rendered`] use.
pub fn decode_row<'r, R>(r: &'r R, kinds: &[Kind]) -> Result<Vec<Value>>
where
    R: sqlx_core::row::Row,
    usize: sqlx_core::column::ColumnIndex<R>,
    i64: sqlx_core::decode::Decode<'r, R::Database> + sqlx_core::types::Type<R::Database>,
    String: sqlx_core::decode::Decode<'r, R::Database> + sqlx_core::types::Type<R::Database>,
{
    kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            Ok(match k {
                Kind::Int => r
                    .try_get::<Option<i64>, _>(i)
                    .map_err(Error::store)?
                    .map_or(Value::Null, Value::Int),
                Kind::Text => r
                    .try_get::<Option<String>, _>(i)
                    .map_err(Error::store)?
                    .map_or(Value::Null, Value::Text),
            })
        })
        .collect()
}

/// Run `template`; the number of rows it changed.
pub async fn exec<C: Conn>(c: &mut C, template: &str, binds: &[Bind<'_>]) -> Result<u64> {
    let sql = c.dialect().render(template);
    c.execute_rendered(&sql, binds).await
}

/// The first column of every row of `template`, as text.
pub async fn strings<C: Conn>(
    c: &mut C,
    template: &str,
    binds: &[Bind<'_>],
) -> Result<Vec<String>> {
    let sql = c.dialect().render(template);
    c.fetch_rendered(&sql, binds, &[Kind::Text])
        .await?
        .into_iter()
        .map(|mut r| r.swap_remove(0).text())
        .collect()
}

/// Whether `template` returns a row.
pub async fn exists<C: Conn>(c: &mut C, template: &str, binds: &[Bind<'_>]) -> Result<bool> {
    let sql = c.dialect().render(template);
    Ok(!c.fetch_rendered(&sql, binds, &[]).await?.is_empty())
}

/// Records selected as `seq, id, embedding_key`.
#[derive(Debug, Default)]
pub struct Records {
    pub seqs: Vec<i64>,
    pub ids: Vec<String>,
    pub keys: Vec<String>,
}

/// The `seq, id, embedding_key` rows of `template`.
pub async fn records<C: Conn>(c: &mut C, template: &str, binds: &[Bind<'_>]) -> Result<Records> {
    let sql = c.dialect().render(template);
    let mut out = Records::default();
    for r in c
        .fetch_rendered(&sql, binds, &[Kind::Int, Kind::Text, Kind::Text])
        .await?
    {
        let mut r = r.into_iter();
        let (Some(seq), Some(id), Some(key)) = (r.next(), r.next(), r.next()) else {
            return Err(Error::store("a record row lacks a column"));
        };
        out.seqs.push(seq.int()?);
        out.ids.push(id.text()?);
        out.keys.push(key.text()?);
    }
    Ok(out)
}

/// `(seq, text)` rows of `template`.
pub async fn seq_texts<C: Conn>(
    c: &mut C,
    template: &str,
    binds: &[Bind<'_>],
) -> Result<Vec<(i64, String)>> {
    let sql = c.dialect().render(template);
    let mut out = Vec::new();
    for r in c
        .fetch_rendered(&sql, binds, &[Kind::Int, Kind::Text])
        .await?
    {
        let mut r = r.into_iter();
        let (Some(seq), Some(text)) = (r.next(), r.next()) else {
            return Err(Error::store("a row lacks a column"));
        };
        out.push((seq.int()?, text.text()?));
    }
    Ok(out)
}

/// The first two columns of every row of `template`, as text.
pub async fn text_pairs<C: Conn>(
    c: &mut C,
    template: &str,
    binds: &[Bind<'_>],
) -> Result<Vec<(String, String)>> {
    let sql = c.dialect().render(template);
    let mut out = Vec::new();
    for r in c
        .fetch_rendered(&sql, binds, &[Kind::Text, Kind::Text])
        .await?
    {
        let mut r = r.into_iter();
        let (Some(a), Some(b)) = (r.next(), r.next()) else {
            return Err(Error::store("a row lacks a column"));
        };
        out.push((a.text()?, b.text()?));
    }
    Ok(out)
}

/// Every statement of `all` rendered in `dialect`, one after another (the
/// modules' snapshot tests).
#[cfg(test)]
pub(crate) fn render_all(all: &[(&str, &'static Statement)], dialect: Dialect) -> String {
    all.iter()
        .map(|(name, s)| format!("-- {name}\n{};\n", s.sql(dialect)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_numbers_placeholders_after_expanding_tokens() {
        let t = "SELECT a FROM t WHERE ns = ? AND id {IN} AND seq {IN_INT} AND j = {JSON}";
        assert_eq!(
            Dialect::Postgres.render(t),
            "SELECT a FROM t WHERE ns = $1 AND id IN (SELECT jsonb_array_elements_text($2::jsonb)) \
             AND seq IN (SELECT (jsonb_array_elements_text($3::jsonb))::bigint) AND j = $4::jsonb"
        );
        assert_eq!(
            Dialect::Sqlite.render(t),
            "SELECT a FROM t WHERE ns = ? AND id IN (SELECT value FROM json_each(?)) \
             AND seq IN (SELECT value FROM json_each(?)) AND j = ?"
        );
    }

    #[test]
    fn an_array_list_is_any_on_postgres_and_json_on_sqlite() {
        let t = "SELECT a FROM t WHERE ns = ? AND (x {ANY} OR y {ANY})";
        assert_eq!(
            Dialect::Postgres.render(t),
            "SELECT a FROM t WHERE ns = $1 AND (x = ANY($2::text[]) OR y = ANY($3::text[]))"
        );
        assert_eq!(
            Dialect::Sqlite.render(t),
            "SELECT a FROM t WHERE ns = ? AND (x IN (SELECT value FROM json_each(?)) \
             OR y IN (SELECT value FROM json_each(?)))"
        );
    }

    #[test]
    fn json_paths_are_spelled_per_dialect() {
        assert_eq!(
            Dialect::Sqlite.json_remove("s", &[&["from", "name"], &["into", "name"]]),
            "json_remove(s, '$.from.name', '$.into.name')"
        );
        assert_eq!(
            Dialect::Postgres.json_remove("s", &[&["from", "name"], &["into", "name"]]),
            "s #- '{from,name}' #- '{into,name}'"
        );
        assert_eq!(
            Dialect::Postgres.json_set_null("d", &["k"]),
            "jsonb_set(d, '{k}', 'null'::jsonb)"
        );
        assert_eq!(
            Dialect::Sqlite.json_set_null("d", &["k"]),
            "json_set(d, '$.k', NULL)"
        );
    }

    #[test]
    fn lists_are_json_arrays() {
        assert_eq!(json_list(["a", "b\"c"]), r#"["a","b\"c"]"#);
        assert_eq!(json_ints(&[3, -1]), "[3,-1]");
    }
}
