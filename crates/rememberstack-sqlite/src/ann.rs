//! The approximate index of a large record set (see `vector_cache`).
//!
//! Scoring a whole record set costs a dot product per record and search, so it
//! grows with the store. Past a size (`SqliteStore::set_approximate_from`), a
//! record set keeps an HNSW graph (the `hnsw_rs` crate) over its vectors, keyed by
//! their position in the set. A walk then takes its candidates from the graph and
//! from the records appended since the graph last grew (scored exactly), instead of
//! scoring every record. A candidate's score is the exact cosine of its stored unit
//! vector, so the graph decides only which records are looked at, never their order.
//!
//! The graph is built off the request path on a thread of its own: searches scan
//! exactly until it is ready, and a set read again in full (after a removal) drops
//! its graph and builds a new one the same way. Records appended later join the
//! graph in small batches, also off the request path.

use super::vector_cache::Candidates;
use hnsw_rs::anndists::dist::distances::Distance;
use hnsw_rs::hnsw::Hnsw;
use rememberstack_core::embed::dot;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Record sets keep no graph unless configured: the graph's recall against the
/// exact scan falls short of 0.98 on large stores of the hashing embedder, and the
/// exact scan is nearly as fast at 300k records (the changelog has the figures).
/// An exact scan costs a dot product per record, a walk of the graph a few
/// milliseconds whatever the size, so a graph pays off on much larger tables.
pub const DEFAULT_APPROXIMATE_FROM: usize = 0;

/// Links per node and layer (the graph's `M`).
const LINKS: usize = 16;
/// Candidates kept while a node's links are chosen.
const EF_CONSTRUCTION: usize = 128;
/// Layers at most.
const LAYERS: usize = 16;
/// A search explores at least this many candidates, and at least twice what it asks:
/// the hashing embedder's sparse vectors need a wide search to find what the exact
/// scan finds (the changelog has the recall at each width).
const EF_SEARCH_MIN: usize = 600;
/// Records a graph takes in at once while it grows (searches wait meanwhile, a few
/// milliseconds).
const GROW_BATCH: usize = 32;

/// Cosine distance of unit vectors: one minus their dot product.
#[derive(Debug, Clone, Copy, Default)]
struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// An HNSW graph over the first `indexed` positions of one record set.
pub(crate) struct Graph {
    hnsw: RwLock<Hnsw<'static, f32, UnitDot>>,
    /// The vectors' dimension; records of another are left out.
    dimension: usize,
    /// Positions `0..indexed` of the set are in the graph.
    indexed: AtomicUsize,
    /// Whether a thread is adding records.
    growing: AtomicBool,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("dimension", &self.dimension)
            .field("indexed", &self.indexed())
            .finish()
    }
}

/// The record at `position` of `segments` (positions count records across the
/// segments in order).
pub(crate) struct Positions {
    starts: Vec<usize>,
    total: usize,
}

impl Positions {
    pub(crate) fn of(segments: &[Candidates]) -> Positions {
        let mut starts = Vec::with_capacity(segments.len());
        let mut total = 0;
        for s in segments {
            starts.push(total);
            total += s.len();
        }
        Positions { starts, total }
    }

    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// The id and vector at `position`, if there is one.
    pub(crate) fn at<'a>(
        &self,
        segments: &'a [Candidates],
        position: usize,
    ) -> Option<(&'a str, &'a [f32])> {
        if position >= self.total {
            return None;
        }
        let segment = self.starts.partition_point(|s| *s <= position) - 1;
        segments[segment].get(position - self.starts[segment])
    }
}

impl Graph {
    /// A graph of the records of `segments` (the dimension of the first record).
    pub(crate) fn build(segments: &[Candidates]) -> Option<Graph> {
        let positions = Positions::of(segments);
        let dimension = segments.iter().flat_map(|s| s.iter()).next()?.1.len();
        let hnsw = Hnsw::new(LINKS, positions.total(), LAYERS, EF_CONSTRUCTION, UnitDot);
        let records: Vec<(&[f32], usize)> = segments
            .iter()
            .flat_map(|s| s.iter())
            .enumerate()
            .filter(|(_, (_, v))| v.len() == dimension)
            .map(|(p, (_, v))| (v, p))
            .collect();
        hnsw.parallel_insert_slice(&records);
        Some(Graph {
            hnsw: RwLock::new(hnsw),
            dimension,
            indexed: AtomicUsize::new(positions.total()),
            growing: AtomicBool::new(false),
        })
    }

    /// Positions `0..indexed()` are in the graph.
    pub(crate) fn indexed(&self) -> usize {
        self.indexed.load(Ordering::Acquire)
    }

    pub(crate) fn dimension(&self) -> usize {
        self.dimension
    }

    /// Marks the graph as growing; false when another thread already is.
    pub(crate) fn start_growing(&self) -> bool {
        !self.growing.swap(true, Ordering::AcqRel)
    }

    /// Ends the growing mark of a thread that could not start.
    pub(crate) fn stop_growing(&self) {
        self.growing.store(false, Ordering::Release);
    }

    /// Whether a thread is adding records.
    pub(crate) fn is_growing(&self) -> bool {
        self.growing.load(Ordering::Acquire)
    }

    /// Adds the records of `segments` from [`Graph::indexed`] to the end, a batch at
    /// a time, then ends the growing mark (also when an insertion panics: the
    /// records left out are then scored exactly by every walk).
    pub(crate) fn grow(&self, segments: &[Candidates]) {
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _done = Done(&self.growing);
        let positions = Positions::of(segments);
        let mut next = self.indexed();
        while next < positions.total() {
            let end = (next + GROW_BATCH).min(positions.total());
            {
                let hnsw = self.hnsw.write().unwrap_or_else(|p| p.into_inner());
                for p in next..end {
                    if let Some((_, v)) = positions.at(segments, p)
                        && v.len() == self.dimension
                    {
                        hnsw.insert_slice((v, p));
                    }
                }
            }
            self.indexed.store(end, Ordering::Release);
            next = end;
        }
    }

    /// About `want` positions nearest to the unit `query`, with their cosines.
    pub(crate) fn nearest(&self, query: &[f32], want: usize) -> Vec<(usize, f32)> {
        if query.len() != self.dimension || want == 0 {
            return Vec::new();
        }
        let hnsw = self.hnsw.read().unwrap_or_else(|p| p.into_inner());
        hnsw.search(query, want, want.saturating_mul(2).max(EF_SEARCH_MIN))
            .into_iter()
            .map(|n| (n.d_id, 1.0 - n.distance))
            .collect()
    }
}

/// A set this small builds its graph on the request that finds it missing (a
/// few milliseconds); a larger one builds on a thread of its own.
pub(crate) const BUILD_INLINE_MAX: usize = 2_048;

/// `job`'s value, or `None` (reported) when it panicked: a failed build leaves its
/// set to exact scans.
pub(crate) fn guarded<T>(job: impl FnOnce() -> Option<T>) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)) {
        Ok(value) => value,
        Err(_) => {
            tracing::warn!("an approximate vector index could not be built; searches stay exact");
            None
        }
    }
}

/// Runs `job` on a thread of its own, detached: a process that ends meanwhile ends
/// it too (a runtime's blocking pool would hold the runtime's shutdown until an
/// index of a million records is built). False when no thread could be started.
#[must_use]
pub(crate) fn detached(job: impl FnOnce() + Send + 'static) -> bool {
    match std::thread::Builder::new()
        .name("rememberstack-ann".to_string())
        .spawn(job)
    {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("cannot start an approximate index thread: {e}");
            false
        }
    }
}
