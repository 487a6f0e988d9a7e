//! Reciprocal rank fusion (k = 60) over stable ids.

use std::collections::HashMap;
use std::hash::Hash;

/// The RRF constant.
pub const RRF_K: f64 = 60.0;

/// One fused entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Fused<T> {
    /// The id.
    pub id: T,
    /// Σ 1 / (k + rank) over the lists it appears in (rank 1-based).
    pub score: f64,
    /// Its 1-based rank in each input list, `None` where absent.
    pub ranks: Vec<Option<usize>>,
}

/// Fuse ranked lists (best first) by reciprocal rank fusion. Ties break by the best
/// single rank, then by the ranks list by list (the first list — semantic, by
/// convention — decides first; absent ranks last), then by the id's order, so the
/// output is deterministic and content decides before ids do.
pub fn rrf<T: Clone + Eq + Hash + Ord>(lists: &[Vec<T>]) -> Vec<Fused<T>> {
    let mut by_id: HashMap<T, Fused<T>> = HashMap::new();
    for (li, list) in lists.iter().enumerate() {
        for (i, id) in list.iter().enumerate() {
            let rank = i + 1;
            let entry = by_id.entry(id.clone()).or_insert_with(|| Fused {
                id: id.clone(),
                score: 0.0,
                ranks: vec![None; lists.len()],
            });
            if entry.ranks[li].is_none() {
                entry.ranks[li] = Some(rank);
                entry.score += 1.0 / (RRF_K + rank as f64);
            }
        }
    }
    let mut out: Vec<Fused<T>> = by_id.into_values().collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| best(&a.ranks).cmp(&best(&b.ranks)))
            .then_with(|| by_list(&a.ranks).cmp(&by_list(&b.ranks)))
            .then_with(|| a.id.cmp(&b.id))
    });
    out
}

fn best(ranks: &[Option<usize>]) -> usize {
    ranks.iter().flatten().copied().min().unwrap_or(usize::MAX)
}

fn by_list(ranks: &[Option<usize>]) -> Vec<usize> {
    ranks.iter().map(|r| r.unwrap_or(usize::MAX)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn agreement_wins() {
        let fused = rrf(&[vec!["a", "b", "c"], vec!["b", "d"]]);
        assert_eq!(fused[0].id, "b");
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert_eq!(fused[0].ranks, vec![Some(2), Some(1)]);
        assert_eq!(fused[1].id, "a");
    }

    #[test]
    fn equal_scores_break_by_the_first_list_not_by_id() {
        // "z" is 1st semantic / 2nd lexical, "a" 2nd / 1st: equal scores and best ranks.
        let fused = rrf(&[vec!["z", "a"], vec!["a", "z"]]);
        assert_eq!(fused[0].score, fused[1].score);
        assert_eq!(fused[0].id, "z");
    }

    proptest! {
        #[test]
        fn fused_scores_are_sorted_and_complete(a in proptest::collection::vec(0u8..30, 0..20), b in proptest::collection::vec(0u8..30, 0..20)) {
            let dedup = |v: Vec<u8>| { let mut seen = std::collections::HashSet::new(); v.into_iter().filter(|x| seen.insert(*x)).collect::<Vec<_>>() };
            let (a, b) = (dedup(a), dedup(b));
            let fused = rrf(&[a.clone(), b.clone()]);
            let mut ids: Vec<u8> = a.iter().chain(b.iter()).copied().collect();
            ids.sort(); ids.dedup();
            prop_assert_eq!(fused.len(), ids.len());
            for w in fused.windows(2) { prop_assert!(w[0].score >= w[1].score); }
        }
    }
}
