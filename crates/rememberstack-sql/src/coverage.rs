//! Semantic readiness from counters: how many of a namespace's current chunks,
//! claims or facts there are, and how many have a vector of a generation.
//!
//! Every read reports it, and on a store being written (each write moves the change
//! stamp its cache is keyed by) every read asks again. Counting is a pass over the
//! table, so both stores keep the counts in `vector_coverage` with triggers as
//! records, documents' current versions and vectors change (SQLite's migration
//! 0035, PostgreSQL's 0036), and a read looks two rows up. [`Target::recount`]
//! names the statement that counts the old way: the tests hold the counters to it.

use crate::rows::SqlRow;
use rememberstack_core::Result;
use rememberstack_core::store::VectorCoverage;

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
    /// The target's name in `vector_coverage`.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Chunks => "chunks",
            Target::Claims => "claims",
            Target::Facts => "facts",
        }
    }

    /// The statement that counts the target's coverage over its table, as the
    /// counters must give it. Binds: generation, namespace.
    pub fn recount(self) -> &'static crate::Statement {
        match self {
            Target::Chunks => &crate::documents::CHUNK_VECTOR_COVERAGE,
            Target::Claims => &crate::claims::VECTOR_COVERAGE,
            Target::Facts => &crate::facts::VECTOR_COVERAGE,
        }
    }
}

statements! {
    /// A target's counters: its current records (generation '') and those with a
    /// vector of one generation. Binds: namespace, target, namespace, target,
    /// generation.
    COUNTED = "SELECT
    COALESCE((SELECT n FROM vector_coverage
               WHERE namespace_id = ? AND target = ? AND generation = ''), 0){BIGINT} AS n,
    COALESCE((SELECT n FROM vector_coverage
               WHERE namespace_id = ? AND target = ? AND generation = ?), 0){BIGINT} AS covered";
}

/// The coverage a [`COUNTED`] row gives: what lacks a vector is the difference.
pub fn counted_row<S>(r: &impl SqlRow<S>) -> Result<VectorCoverage> {
    let (n, covered) = (r.count("n")?, r.count("covered")?);
    Ok(VectorCoverage {
        chunks: n,
        missing: n.saturating_sub(covered),
    })
}
