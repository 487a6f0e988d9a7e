//! The lexical tokenizer (for full-text queries) and the token estimator.
//!
//! [`lexical_terms`] turns free text into query terms the way SQLite FTS5's
//! `unicode61` tokenizer splits indexed text (the index also applies Porter
//! stemming to both sides, so terms stay unstemmed here): a term is a maximal run of
//! alphanumeric characters, lowercased. Common English function words are
//! dropped unless the query consists of nothing else.
//!
//! [`estimate_tokens`] is a cheap, deterministic stand-in for a model
//! tokenizer, used to size chunks.

use std::collections::BTreeSet;

/// English stopwords dropped from queries (lowercase, sorted).
///
/// A query made only of stopwords keeps them (see [`lexical_terms`]).
#[rustfmt::skip]
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him",
    "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me",
    "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only",
    "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so",
    "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was",
    "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yours", "yourself", "yourselves",
];

/// Whether `term` (already lowercased) is in [`STOPWORDS`].
pub fn is_stopword(term: &str) -> bool {
    STOPWORDS.binary_search(&term).is_ok()
}

/// The maximal runs of alphanumeric characters of `text`, in order.
fn alnum_runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|s| !s.is_empty())
}

/// The query terms of `text`.
///
/// A term is a maximal run of characters for which [`char::is_alphanumeric`]
/// holds, lowercased with [`str::to_lowercase`] (close to FTS5 `unicode61`,
/// without its diacritic folding). Stopwords ([`STOPWORDS`]) are dropped
/// unless every term is a stopword, in which case all are kept. Duplicates are
/// removed, keeping first-occurrence order. Empty or term-less input gives an
/// empty vector.
pub fn lexical_terms(text: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for run in alnum_runs(text) {
        let term = run.to_lowercase();
        if seen.insert(term.clone()) {
            all.push(term);
        }
    }
    let content: Vec<String> = all.iter().filter(|t| !is_stopword(t)).cloned().collect();
    if content.is_empty() { all } else { content }
}

/// A deterministic **estimate** of how many model tokens `text` costs.
///
/// It is not any real tokenizer: each maximal alphanumeric run counts
/// `ceil(chars / 4)` (at least 1) and every other non-whitespace character
/// counts 1. Whitespace is free. It is only used to size chunks, so it must be
/// stable, not exact.
pub fn estimate_tokens(text: &str) -> usize {
    let mut total = 0usize;
    let mut run = 0usize;
    for c in text.chars() {
        if c.is_alphanumeric() {
            run += 1;
            continue;
        }
        if run > 0 {
            total += run.div_ceil(4);
            run = 0;
        }
        if !c.is_whitespace() {
            total += 1;
        }
    }
    if run > 0 {
        total += run.div_ceil(4);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stopwords_are_sorted_lowercase_and_unique() {
        for w in STOPWORDS.windows(2) {
            assert!(w[0] < w[1], "{} !< {}", w[0], w[1]);
        }
        for w in STOPWORDS {
            assert_eq!(*w, w.to_lowercase());
        }
        assert!(STOPWORDS.len() >= 100);
    }

    #[test]
    fn drops_stopwords() {
        assert_eq!(
            lexical_terms("What is the capital of France?"),
            vec!["capital", "france"]
        );
    }

    #[test]
    fn all_stopword_query_keeps_them() {
        assert_eq!(
            lexical_terms("to be or not to be"),
            vec!["to", "be", "or", "not"]
        );
    }

    #[test]
    fn dedupes_in_first_occurrence_order() {
        assert_eq!(
            lexical_terms("Rust rust RUST cargo Rust"),
            vec!["rust", "cargo"]
        );
    }

    #[test]
    fn unicode_lowercasing_and_splitting() {
        assert_eq!(
            lexical_terms("ÉCOLE Straße—Δέλτα 東京タワー 🎉 x2"),
            vec!["école", "straße", "δέλτα", "東京タワー", "x2"]
        );
        assert_eq!(lexical_terms("don't"), vec!["don", "t"]);
    }

    #[test]
    fn empty_input() {
        assert!(lexical_terms("").is_empty());
        assert!(lexical_terms("  ,;! 🎉 ").is_empty());
    }

    #[test]
    fn estimate_tokens_counts() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("   \n\t"), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("hello, world!"), 2 + 1 + 2 + 1);
        assert_eq!(estimate_tokens("ééééé"), 2);
        assert_eq!(estimate_tokens("🎉🎉"), 2);
        assert_eq!(estimate_tokens("a-b"), 3);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn terms_are_lowercase_alnum_and_unique(s in "\\PC{0,60}") {
            let terms = lexical_terms(&s);
            let set: BTreeSet<&String> = terms.iter().collect();
            prop_assert_eq!(set.len(), terms.len());
            for t in &terms {
                prop_assert!(!t.is_empty());
                prop_assert_eq!(t, &t.to_lowercase());
            }
        }

        #[test]
        fn estimate_is_additive_over_whitespace(a in "\\PC{0,40}", b in "\\PC{0,40}") {
            let joined = format!("{a} {b}");
            prop_assert_eq!(estimate_tokens(&joined), estimate_tokens(&a) + estimate_tokens(&b));
        }
    }
}
