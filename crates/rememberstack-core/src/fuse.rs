//! Fusion of ranked channel lists over stable ids: a convex combination of
//! normalized scores ([`Fusion::Scores`], the default), or reciprocal rank fusion
//! (k = 60).

use std::collections::HashMap;
use std::hash::Hash;

/// The RRF constant.
pub const RRF_K: f64 = 60.0;

/// How the semantic and lexical lists of one search become one ranking
/// (`[engine.fusion]`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fusion {
    /// Reciprocal rank fusion, k = 60: ranks only, scores ignored.
    Rrf,
    /// `semantic_weight · cosine + (1 − semantic_weight) · lexical / best lexical`
    /// (the default, weight 0.5): how strongly each channel matches counts, not
    /// only the order (a weak lexical hit no longer ranks with a strong one).
    /// Cosines below 0 count as 0; an id absent from a list scores 0 there.
    Scores {
        /// The semantic channel's weight, in [0, 1].
        #[serde(default = "default_semantic_weight")]
        semantic_weight: f64,
        /// How a cosine enters the sum (default: [`SemanticScale::Cosine`]).
        #[serde(default)]
        semantic_scale: SemanticScale,
    },
}

/// How [`Fusion::Scores`] puts a hit's cosine on the scale of the lexical score
/// (which is always relative to the list's best, so in [0, 1] with the best at 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SemanticScale {
    /// The raw cosine, negatives as 0. A model's cosines crowd into a narrow band
    /// (MiniLM's hits for one query lie within about 0.3 of each other), so the
    /// lexical score, spread over [0, 1], decides most of the order.
    #[default]
    Cosine,
    /// `(cosine − lowest) / (best − lowest)` over the semantic list: the best hit 1,
    /// the list's last 0, as spread as the lexical score. A list whose cosines are
    /// all equal keeps the raw cosine.
    MinMax,
}

fn default_semantic_weight() -> f64 {
    0.5
}

/// Score fusion at equal weights: on LoCoMo it finds more evidence than RRF in every
/// category and for every operation (the measurements are in the changelog).
impl Default for Fusion {
    fn default() -> Self {
        Fusion::Scores {
            semantic_weight: default_semantic_weight(),
            semantic_scale: SemanticScale::default(),
        }
    }
}

impl Fusion {
    /// Whether the weights are usable (a weight outside [0, 1] is refused at open).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Fusion::Rrf => Ok(()),
            Fusion::Scores {
                semantic_weight, ..
            } if (0.0..=1.0).contains(semantic_weight) => Ok(()),
            Fusion::Scores {
                semantic_weight, ..
            } => Err(format!(
                "[engine.fusion] semantic_weight must be between 0 and 1, not {semantic_weight}"
            )),
        }
    }

    /// Fuse a semantic list and a lexical list of `(id, score)`, best first, each
    /// id once per list. Returns the fused entries with their 1-based ranks in
    /// each list (`[semantic, lexical]`), best first.
    pub fn fuse<T: Clone + Eq + Hash + Ord>(
        &self,
        semantic: &[(T, f64)],
        lexical: &[(T, f64)],
    ) -> Vec<Fused<T>> {
        let lists = [
            semantic.iter().map(|h| h.0.clone()).collect::<Vec<_>>(),
            lexical.iter().map(|h| h.0.clone()).collect::<Vec<_>>(),
        ];
        let mut fused = rrf(&lists);
        let Fusion::Scores {
            semantic_weight,
            semantic_scale,
        } = *self
        else {
            return fused;
        };
        let best_lexical = lexical.iter().map(|h| h.1).fold(0.0f64, f64::max);
        let cosines = semantic.iter().map(|h| h.1);
        let (low, high) = (
            cosines.clone().fold(f64::INFINITY, f64::min),
            cosines.fold(f64::NEG_INFINITY, f64::max),
        );
        let scale = |cosine: f64| match semantic_scale {
            SemanticScale::MinMax if high - low > 1e-9 => (cosine - low) / (high - low),
            _ => cosine.max(0.0),
        };
        let sem: HashMap<&T, f64> = semantic.iter().map(|(id, s)| (id, *s)).collect();
        let lex: HashMap<&T, f64> = lexical.iter().map(|(id, s)| (id, *s)).collect();
        for f in &mut fused {
            let cosine = sem.get(&f.id).map_or(0.0, |c| scale(*c));
            let lexical = match lex.get(&f.id) {
                Some(s) if best_lexical > 0.0 => (s / best_lexical).max(0.0),
                _ => 0.0,
            };
            f.score = semantic_weight * cosine + (1.0 - semantic_weight) * lexical;
        }
        fused.sort_by(order);
        fused
    }
}

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
    out.sort_by(order);
    out
}

/// Best score first; ties by the best single rank, then list by list, then id.
fn order<T: Ord>(a: &Fused<T>, b: &Fused<T>) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| best(&a.ranks).cmp(&best(&b.ranks)))
        .then_with(|| by_list(&a.ranks).cmp(&by_list(&b.ranks)))
        .then_with(|| a.id.cmp(&b.id))
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

    #[test]
    fn score_fusion_counts_how_strong_a_match_is() {
        // "weak" is 1st lexically but barely; "strong" is 2nd lexically with a far
        // better cosine: ranks alone tie them, scores do not.
        let semantic = [("strong", 0.9), ("weak", 0.1)];
        let lexical = [("weak", 10.0), ("strong", 9.5)];
        let rrf = Fusion::Rrf.fuse(&semantic, &lexical);
        assert_eq!(rrf[0].score, rrf[1].score);
        let scores = Fusion::Scores {
            semantic_weight: 0.5,
            semantic_scale: SemanticScale::Cosine,
        }
        .fuse(&semantic, &lexical);
        assert_eq!(scores[0].id, "strong");
        assert!((scores[0].score - (0.45 + 0.5 * 0.95)).abs() < 1e-12);
        assert_eq!(scores[0].ranks, vec![Some(1), Some(2)]);
        // Weight 0 is the lexical order, weight 1 the semantic one.
        let lexical_only = Fusion::Scores {
            semantic_weight: 0.0,
            semantic_scale: SemanticScale::Cosine,
        }
        .fuse(&semantic, &lexical);
        assert_eq!(lexical_only[0].id, "weak");
        assert!(
            Fusion::Scores {
                semantic_weight: 1.5,
                semantic_scale: SemanticScale::Cosine,
            }
            .validate()
            .is_err()
        );
        // Negative cosines and a lexical list without scores count as nothing.
        let odd = Fusion::Scores {
            semantic_weight: 0.5,
            semantic_scale: SemanticScale::Cosine,
        }
        .fuse(&[("a", -0.4)], &[("b", 0.0)]);
        assert!(odd.iter().all(|f| f.score == 0.0));
    }

    #[test]
    fn min_max_spreads_the_cosines_as_the_lexical_scores_are_spread() {
        // Cosines 0.62 and 0.50 barely differ raw; min-max makes them 1 and 0, so the
        // semantic channel weighs as much as the lexical one.
        let semantic = [("sem", 0.62), ("lex", 0.50)];
        let lexical = [("lex", 10.0), ("sem", 6.0)];
        let fuse = |semantic_scale| {
            Fusion::Scores {
                semantic_weight: 0.5,
                semantic_scale,
            }
            .fuse(&semantic, &lexical)
        };
        let raw = fuse(SemanticScale::Cosine);
        assert_eq!(raw[0].id, "lex");
        assert!((raw[0].score - (0.25 + 0.5)).abs() < 1e-12);
        let spread = fuse(SemanticScale::MinMax);
        assert_eq!(spread[0].id, "sem");
        assert!((spread[0].score - (0.5 + 0.3)).abs() < 1e-12);
        assert!((spread[1].score - 0.5).abs() < 1e-12);
        // One cosine (or all equal): nothing to spread, the raw cosine counts.
        let one = Fusion::Scores {
            semantic_weight: 1.0,
            semantic_scale: SemanticScale::MinMax,
        }
        .fuse(&[("a", 0.4)], &[]);
        assert!((one[0].score - 0.4).abs() < 1e-12);
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
