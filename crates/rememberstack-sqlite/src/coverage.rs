//! Semantic readiness from counters: migration 0035's triggers keep each
//! namespace's current chunks, claims and facts and those with a vector of each
//! generation in `vector_coverage`, so a read looks two rows up instead of counting
//! over the table (the statements and the reasons are in
//! `rememberstack_sql::coverage`).

use crate::{SqliteStore, db_err};
use rememberstack_core::Result;
use rememberstack_core::ids::NamespaceId;
use rememberstack_core::store::VectorCoverage;
use rememberstack_sql::coverage::Target;

impl SqliteStore {
    /// The coverage of `target` by vectors of `generation`, from the counters.
    pub(crate) async fn counted_coverage(
        &self,
        ns: NamespaceId,
        target: Target,
        generation: &str,
    ) -> Result<VectorCoverage> {
        let ns = ns.to_string();
        let row = sqlx::query(crate::shared(&rememberstack_sql::coverage::COUNTED))
            .bind(&ns)
            .bind(target.as_str())
            .bind(&ns)
            .bind(target.as_str())
            .bind(generation)
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
        rememberstack_sql::coverage::counted_row(&row)
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
        let row = sqlx::query(crate::shared(target.recount()))
            .bind(generation)
            .bind(ns.to_string())
            .fetch_one(&self.read)
            .await
            .map_err(db_err)?;
        rememberstack_sql::rows::coverage_row(&row)
    }
}
