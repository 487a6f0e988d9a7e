//! Turn-level evidence scoring of ranked results.
//!
//! A result touches the conversation turns (event ids) it covers: a claim its
//! occurrence's turns, a chunk every turn it holds, a fact the turns of its
//! supporting claims. Metrics walk the results in rank order.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The k values recall is reported at.
pub const KS: [usize; 3] = [5, 10, 20];

/// The context budgets recall is reported at, in estimated tokens.
pub const BUDGETS: [usize; 4] = [500, 1000, 2000, 4000];

/// Characters per estimated token (the harness's estimate everywhere).
pub const CHARS_PER_TOKEN: usize = 4;

/// One ranked result, reduced to what scoring needs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Touched {
    /// The turns it covers, in order.
    pub turns: Vec<String>,
    /// Its text length in characters.
    pub chars: usize,
    /// Its semantic and lexical channel scores, where it was in the channel.
    pub channels: [Option<f64>; 2],
    /// Its calibrated relevance, where the system gives one.
    pub relevance: Option<f64>,
    /// Its fused score, for the dump.
    pub fused: Option<f64>,
    /// What it is (`claim`, `chunk`, `relation`, `observation`, `turn`), for the dump.
    pub kind: &'static str,
    /// Its text, for the dump (empty where the scorer does not need it).
    pub text: String,
}

/// The scores of one question.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QuestionScore {
    /// recall@k at equal budget: the first k distinct turns the results touch.
    pub recall: BTreeMap<usize, f64>,
    /// recall over every turn the top-k results touch, however many.
    pub result_recall: BTreeMap<usize, f64>,
    /// Whether a gold turn is among the first 10 turns.
    pub hit10: f64,
    /// Reciprocal rank of the first result touching a gold turn (0 if none).
    pub mrr: f64,
    /// Share of the gold sessions among the sessions of the first 10 turns.
    pub session_recall10: f64,
    /// Characters of all returned results.
    pub context_chars: usize,
    /// recall@budget: the share of gold turns touched by the results that fit a
    /// context of that many estimated tokens, whole results in rank order (the
    /// first that does not fit ends the context, as the operations' `budget` does).
    pub budget_recall: BTreeMap<usize, f64>,
}

/// The session of a LoCoMo turn id (`D3:7` → `D3`).
pub fn session_of(turn: &str) -> &str {
    turn.split(':').next().unwrap_or(turn)
}

/// The first `k` distinct turns the results touch, in order (an n-turn result
/// uses n slots).
pub fn first_turns(results: &[Touched], k: usize) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for r in results {
        for t in &r.turns {
            if out.len() == k {
                return out;
            }
            if seen.insert(t.as_str()) {
                out.push(t.as_str());
            }
        }
    }
    out
}

fn share<'a>(gold: &BTreeSet<&'a str>, found: impl IntoIterator<Item = &'a str>) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let found: BTreeSet<&str> = found.into_iter().collect();
    gold.intersection(&found).count() as f64 / gold.len() as f64
}

/// Score one question's ranked results against its gold turns.
pub fn score(results: &[Touched], gold: &[String]) -> QuestionScore {
    let gold_set: BTreeSet<&str> = gold.iter().map(String::as_str).collect();
    let mut s = QuestionScore::default();
    for k in KS {
        s.recall
            .insert(k, share(&gold_set, first_turns(results, k)));
        let touched = results
            .iter()
            .take(k)
            .flat_map(|r| r.turns.iter().map(String::as_str));
        s.result_recall.insert(k, share(&gold_set, touched));
    }
    let first10 = first_turns(results, 10);
    s.hit10 = f64::from(u8::from(first10.iter().any(|t| gold_set.contains(t))));
    s.mrr = results
        .iter()
        .position(|r| r.turns.iter().any(|t| gold_set.contains(t.as_str())))
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0));
    let gold_sessions: BTreeSet<&str> = gold_set.iter().map(|t| session_of(t)).collect();
    s.session_recall10 = share(&gold_sessions, first10.iter().map(|t| session_of(t)));
    s.context_chars = results.iter().map(|r| r.chars).sum();
    s
}

/// Set `budget_recall` from `ranked`, a ranked list long enough to fill the
/// largest budget (or everything the system has).
pub fn score_budgets(s: &mut QuestionScore, ranked: &[Touched], gold: &[String]) {
    let gold_set: BTreeSet<&str> = gold.iter().map(String::as_str).collect();
    for budget in BUDGETS {
        let limit = budget * CHARS_PER_TOKEN;
        let mut used = 0;
        let mut fits = Vec::new();
        for r in ranked {
            if used + r.chars > limit {
                break;
            }
            used += r.chars;
            fits.extend(r.turns.iter().map(String::as_str));
        }
        s.budget_recall.insert(budget, share(&gold_set, fits));
    }
}

/// Characters the largest budget holds: rank lists are filled at least this far.
pub fn largest_budget_chars() -> usize {
    BUDGETS[BUDGETS.len() - 1] * CHARS_PER_TOKEN
}

/// Means of many question scores.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Questions scored.
    pub questions: usize,
    /// Mean of each metric, by name (`recall@10`, `hit@10`, `mrr`, …).
    #[serde(flatten)]
    pub means: BTreeMap<String, f64>,
}

/// Average question scores.
pub fn summarize<'a>(scores: impl IntoIterator<Item = &'a QuestionScore>) -> Summary {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut n = 0usize;
    for s in scores {
        n += 1;
        for (k, v) in &s.recall {
            *sums.entry(format!("recall@{k}")).or_default() += v;
        }
        for (k, v) in &s.result_recall {
            *sums.entry(format!("result_recall@{k}")).or_default() += v;
        }
        for (b, v) in &s.budget_recall {
            *sums.entry(format!("recall@{b}tok")).or_default() += v;
        }
        *sums.entry("hit@10".into()).or_default() += s.hit10;
        *sums.entry("mrr".into()).or_default() += s.mrr;
        *sums.entry("session_recall@10".into()).or_default() += s.session_recall10;
        *sums.entry("context_chars".into()).or_default() += s.context_chars as f64;
    }
    if n > 0 {
        for v in sums.values_mut() {
            *v /= n as f64;
        }
        let tokens = sums.get("context_chars").copied().unwrap_or(0.0) / CHARS_PER_TOKEN as f64;
        sums.insert("context_tokens_est".into(), tokens);
    }
    Summary {
        questions: n,
        means: sums,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(turns: &[&str], chars: usize) -> Touched {
        Touched {
            turns: turns.iter().map(|s| s.to_string()).collect(),
            chars,
            channels: [None, None],
            relevance: None,
            ..Default::default()
        }
    }

    #[test]
    fn an_n_turn_result_uses_n_slots_and_repeats_are_free() {
        let results = vec![
            t(&["D1:1", "D1:2", "D1:3"], 30),
            t(&["D1:2"], 5),
            t(&["D2:4"], 5),
        ];
        assert_eq!(first_turns(&results, 3), vec!["D1:1", "D1:2", "D1:3"]);
        assert_eq!(
            first_turns(&results, 4),
            vec!["D1:1", "D1:2", "D1:3", "D2:4"]
        );
        let gold = vec!["D2:4".to_string(), "D1:9".to_string()];
        let s = score(&results, &gold);
        // Within 5 turns: D2:4 is the 4th distinct turn.
        assert_eq!(s.recall[&5], 0.5);
        // The top-5 results touch it too; the top result alone does not.
        assert_eq!(s.result_recall[&5], 0.5);
        assert_eq!(s.hit10, 1.0);
        assert!((s.mrr - 1.0 / 3.0).abs() < 1e-9);
        // Gold sessions D2 and D1 both appear among the first turns.
        assert_eq!(s.session_recall10, 1.0);
        assert_eq!(s.context_chars, 40);
    }

    #[test]
    fn a_budget_holds_whole_results_in_rank_order() {
        // 500 tokens = 2,000 characters: the first two results fit (1,900), the
        // third (200 more) ends the context though a smaller fourth would fit.
        let ranked = vec![
            t(&["D1:1"], 1_000),
            t(&["D1:2"], 900),
            t(&["D1:3"], 200),
            t(&["D1:4"], 50),
        ];
        let gold = vec!["D1:2".to_string(), "D1:3".to_string(), "D1:4".to_string()];
        let mut s = score(&ranked, &gold);
        score_budgets(&mut s, &ranked, &gold);
        assert!((s.budget_recall[&500] - 1.0 / 3.0).abs() < 1e-9);
        // 1,000 tokens hold all four.
        assert_eq!(s.budget_recall[&1000], 1.0);
        let sum = summarize([&s]);
        assert!((sum.means["recall@500tok"] - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(largest_budget_chars(), 16_000);
    }

    #[test]
    fn nothing_found_scores_zero_and_summaries_average() {
        let miss = score(&[t(&["D1:1"], 3)], &["D9:9".to_string()]);
        assert_eq!((miss.recall[&10], miss.hit10, miss.mrr), (0.0, 0.0, 0.0));
        let hit = score(&[t(&["D9:9"], 3)], &["D9:9".to_string()]);
        let sum = summarize([&miss, &hit]);
        assert_eq!(sum.questions, 2);
        assert_eq!(sum.means["recall@10"], 0.5);
        assert_eq!(sum.means["mrr"], 0.5);
        assert_eq!(sum.means["context_tokens_est"], 0.75);
    }
}
