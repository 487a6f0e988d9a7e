//! Semantic readiness from counters: how many of a namespace's current chunks,
//! claims or facts there are, and how many have a vector of a generation.
//!
//! Every read reports it, and on a store being written (each write moves the change
//! stamp its cache is keyed by) every read asked again. Counting took a pass over
//! the table; migration 0035's triggers keep the counts in `vector_coverage` as
//! records, documents' current versions and vectors change, so a read looks two
//! rows up. [`SqliteStore::recount_vector_coverage`] counts the old way, with the
//! statements PostgreSQL reads with: the tests hold the counters to it.

use crate::{SqliteStore, db_err};
use rememberstack_core::Result;
use rememberstack_core::ids::NamespaceId;
use rememberstack_core::store::VectorCoverage;
use rememberstack_sql::rows::SqlRow;

/// The records whose coverage is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Chunks of their document's current version.
    Chunks,
    /// Current claims.
    Claims,
    /// Facts neither invalidated nor superseded.
    Facts,
}

impl Target {
    fn as_str(self) -> &'static str {
        match self {
            Target::Chunks => "chunks",
            Target::Claims => "claims",
            Target::Facts => "facts",
        }
    }
}

/// The counters of a target: its current records (generation '') and those with a
/// vector of the generation asked.
const COUNTED: &str = "SELECT
    COALESCE((SELECT n FROM vector_coverage
               WHERE namespace_id = ?1 AND target = ?2 AND generation = ''), 0) AS n,
    COALESCE((SELECT n FROM vector_coverage
               WHERE namespace_id = ?1 AND target = ?2 AND generation = ?3), 0) AS covered";

impl SqliteStore {
    /// The coverage of `target` by vectors of `generation`, from the counters.
    pub(crate) async fn counted_coverage(
        &self,
        ns: NamespaceId,
        target: Target,
        generation: &str,
    ) -> Result<VectorCoverage> {
        let row = sqlx::query(COUNTED)
            .bind(ns.to_string())
            .bind(target.as_str())
            .bind(generation)
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
        let (n, covered) = (row.count("n")?, row.count("covered")?);
        Ok(VectorCoverage {
            chunks: n,
            missing: n.saturating_sub(covered),
        })
    }

    /// The coverage of `target` counted over its table, as the counters must
    /// give it (for tests and checks; reads use the counters).
    #[doc(hidden)]
    pub async fn recount_vector_coverage(
        &self,
        ns: NamespaceId,
        target: Target,
        generation: &str,
    ) -> Result<VectorCoverage> {
        // The statements PostgreSQL reads with, shared by both stores.
        let sql = match target {
            Target::Chunks => &rememberstack_sql::documents::CHUNK_VECTOR_COVERAGE,
            Target::Claims => &rememberstack_sql::claims::VECTOR_COVERAGE,
            Target::Facts => &rememberstack_sql::facts::VECTOR_COVERAGE,
        };
        let row = sqlx::query(crate::shared(sql))
            .bind(generation)
            .bind(ns.to_string())
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
        rememberstack_sql::rows::coverage_row(&row)
    }
}
