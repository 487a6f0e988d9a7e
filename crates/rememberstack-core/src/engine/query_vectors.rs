//! Query vectors, embedded once per distinct query.
//!
//! One context operation searches several targets (claims, chunks, facts), and
//! `combined_context` runs two operations: each search used to embed the same query
//! again, which on a CPU model is most of an operation's time. The cache holds the
//! last [`QueryVectors::CAPACITY`] queries' vectors; callers asking for a query that
//! is being embedded wait for that one embedding instead of starting another. A
//! failed embedding is not kept: the next caller tries again.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

type Slot = Arc<OnceCell<Arc<Vec<f32>>>>;

/// A bounded map from query text to its vector, oldest entry evicted first.
#[derive(Default)]
pub(crate) struct QueryVectors {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    slots: HashMap<String, Slot>,
    order: VecDeque<String>,
}

impl std::fmt::Debug for QueryVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.inner.lock().map_or(0, |i| i.slots.len());
        f.debug_struct("QueryVectors").field("held", &held).finish()
    }
}

impl QueryVectors {
    /// Queries kept (a 384-dimension vector is 1.5 KB: about 1.5 MB in all).
    pub(crate) const CAPACITY: usize = 1024;

    /// The vector of `query`, from the cache or from `embed` (called at most once
    /// at a time per query).
    pub(crate) async fn get_or_embed<F, Fut>(
        &self,
        query: &str,
        embed: F,
    ) -> Result<Arc<Vec<f32>>, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<f32>, String>>,
    {
        let slot = self.slot(query);
        slot.get_or_try_init(|| async { embed().await.map(Arc::new) })
            .await
            .cloned()
    }

    /// Forget every kept vector (queries being embedded finish for their waiters).
    pub(crate) fn clear(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.slots.clear();
        inner.order.clear();
    }

    fn slot(&self, query: &str) -> Slot {
        // A poisoned lock only means another caller panicked mid-insert: the map
        // itself is always consistent, so keep using it.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = inner.slots.get(query) {
            return slot.clone();
        }
        while inner.order.len() >= Self::CAPACITY {
            if let Some(old) = inner.order.pop_front() {
                inner.slots.remove(&old);
            }
        }
        let slot = Slot::default();
        inner.slots.insert(query.to_owned(), slot.clone());
        inner.order.push_back(query.to_owned());
        slot
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.slots.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_query_is_embedded_once_even_when_asked_concurrently() {
        let cache = Arc::new(QueryVectors::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (cache, calls) = (cache.clone(), calls.clone());
            tasks.spawn(async move {
                cache
                    .get_or_embed("who is Marta?", || async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        Ok(vec![1.0, 0.0])
                    })
                    .await
            });
        }
        while let Some(done) = tasks.join_next().await {
            assert_eq!(*done.unwrap().unwrap(), vec![1.0, 0.0]);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Another query is another embedding.
        let v = cache
            .get_or_embed("where is the boat?", || async { Ok(vec![0.0, 1.0]) })
            .await
            .unwrap();
        assert_eq!(*v, vec![0.0, 1.0]);
    }

    #[tokio::test]
    async fn a_failure_is_not_kept_and_the_oldest_query_goes_first() {
        let cache = QueryVectors::default();
        let err = cache
            .get_or_embed("q", || async { Err("model down".to_string()) })
            .await
            .unwrap_err();
        assert_eq!(err, "model down");
        let v = cache
            .get_or_embed("q", || async { Ok(vec![0.5]) })
            .await
            .unwrap();
        assert_eq!(*v, vec![0.5]);
        for i in 0..QueryVectors::CAPACITY + 10 {
            cache
                .get_or_embed(&format!("q{i}"), || async { Ok(vec![0.0]) })
                .await
                .unwrap();
        }
        assert_eq!(cache.len(), QueryVectors::CAPACITY);
        // "q" was the oldest: it is embedded again.
        let again = cache
            .get_or_embed("q", || async { Ok(vec![0.25]) })
            .await
            .unwrap();
        assert_eq!(*again, vec![0.25]);
        cache.clear();
        assert_eq!(cache.len(), 0);
        let fresh = cache
            .get_or_embed("q", || async { Ok(vec![0.75]) })
            .await
            .unwrap();
        assert_eq!(*fresh, vec![0.75]);
    }
}
