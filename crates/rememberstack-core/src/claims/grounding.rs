//! The grounding gates every claim draft must pass (D32 with its amendments).
//!
//! - **Shape**: a draft needs non-blank text and at least one cited passage.
//! - **Layer 1 (span)**: every cited label names a passage of the bundle whose
//!   text is the exact slice `document_md[start..end]`; the engine computes the
//!   claim's evidence spans from the cited passages.
//! - **Layer 2 (added context)**: every token of every `added_context` item
//!   occurs, case-insensitively at a word boundary, in the source-derived union
//!   (header + target chunk + neighbour passages), or belongs to the closed
//!   [`ALLOWLIST`]. Exact ISO renderings of the claim's own validity are removed
//!   first ([`iso_renderings`]); every other number needs a union match.
//! - **Layer 3 (verdict)**: the extractor's self-verdict must be `entailed`.

use super::temporal::iso_renderings;
use super::{
    ClaimDraft, ContextBundle, EvidenceSpan, Gate, GateFailure, GroundedClaim, Validity, Verdict,
};
use std::borrow::Cow;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: a fast, deterministic hasher for the short tokens of a union.
#[derive(Clone, Copy, Debug)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type TokenSet = HashSet<String, BuildHasherDefault<Fnv>>;

/// D32's closed functional allowlist, exactly as its amendments list it:
/// attribution scaffolding, pure function words, the temporal connectives of
/// the own-valid-time amendment, and the punctuation tokens (`,` `.` `:` `;`,
/// straight and curly single and double quotes, and the possessive `'s`, which
/// [`gate_tokens`] emits for both apostrophes). Entries are lowercase tokens
/// as [`gate_tokens`] produces them. No entry is numeric.
#[rustfmt::skip]
pub const ALLOWLIST: &[&str] = &[
    // attribution scaffolding
    "said", "says", "saying", "asked", "asks", "told", "tells", "mentioned", "mentions", "wrote",
    "writes", "according",
    // pure function words
    "that", "the", "a", "an", "of", "to", "in", "on", "at", "and", "or", "is", "was", "were", "be",
    "been", "she", "he", "they", "her", "his", "their", "it", "its", "this", "these", "those",
    "with", "for", "as", "by", "from",
    // temporal connectives (own-valid-time amendment)
    "since", "until", "between", "during",
    // punctuation
    ",", ".", ":", ";", "'", "\"", "\u{2018}", "\u{2019}", "\u{201C}", "\u{201D}", "'s",
];

/// Whether `token` (as [`gate_tokens`] emits it) is in [`ALLOWLIST`].
pub fn is_allowlisted(token: &str) -> bool {
    ALLOWLIST.contains(&token)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// One token: a word slice (not yet lowercased), a punctuation slice, or the
/// possessive `'s`.
enum Tok<'a> {
    Word(&'a str),
    Punct(&'a str),
    Possessive,
}

/// Walk the D32 tokens of `text`.
///
/// A word is a maximal run of alphanumeric characters, joined across an
/// apostrophe between two letters (`don't`) and across `.` or `,` between two
/// digits (`3.5`, `1,000`). An apostrophe (straight or curly) followed by `s`
/// and then a non-word character ends the word and is the possessive token
/// (`Caroline's` → `Caroline`, `'s`). Every other non-whitespace character is
/// a punctuation token of its own, except that an apostrophe + `s` standing
/// alone (the addition `'s`) is the possessive token too.
fn for_each_token<'a>(text: &'a str, mut f: impl FnMut(Tok<'a>)) {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if !is_word_char(c) {
            let end = i + c.len_utf8();
            let mut rest = text[end..].chars();
            if is_apostrophe(c)
                && matches!(rest.next(), Some('s' | 'S'))
                && !rest.next().is_some_and(is_word_char)
            {
                // A standalone possessive, e.g. an addition that is just `'s`.
                chars.next();
                f(Tok::Possessive);
                continue;
            }
            f(Tok::Punct(&text[i..end]));
            continue;
        }
        let mut end = i + c.len_utf8();
        let mut prev = c;
        let mut possessive = false;
        loop {
            let rest = &text[end..];
            let mut it = rest.chars();
            let Some(n) = it.next() else { break };
            if is_word_char(n) {
                end += n.len_utf8();
                prev = n;
                continue;
            }
            let after = it.next();
            let after2 = it.next();
            if is_apostrophe(n)
                && matches!(after, Some('s' | 'S'))
                && !after2.is_some_and(is_word_char)
            {
                possessive = true;
                break;
            }
            let joins = match after {
                Some(a) if is_apostrophe(n) => prev.is_alphabetic() && a.is_alphabetic(),
                Some(a) if n == '.' || n == ',' => prev.is_ascii_digit() && a.is_ascii_digit(),
                _ => false,
            };
            if let (true, Some(a)) = (joins, after) {
                end += n.len_utf8() + a.len_utf8();
                prev = a;
                continue;
            }
            break;
        }
        f(Tok::Word(&text[i..end]));
        // Skip the characters consumed into the word.
        while chars.peek().is_some_and(|(j, _)| *j < end) {
            chars.next();
        }
        if possessive {
            // The apostrophe and the `s`.
            chars.next();
            chars.next();
            f(Tok::Possessive);
        }
    }
}

fn lower(word: &str) -> String {
    if word.is_ascii() {
        word.to_ascii_lowercase()
    } else {
        word.to_lowercase()
    }
}

fn token_string(t: Tok<'_>) -> String {
    match t {
        Tok::Word(w) => lower(w),
        Tok::Punct(p) => p.to_string(),
        Tok::Possessive => "'s".to_string(),
    }
}

/// D32's token grain: Unicode word tokens lowercased, punctuation tokens one
/// character each, and the possessive split off as `'s` (for `'` and `’`):
/// `Caroline’s book.` → `caroline`, `'s`, `book`, `.`.
pub fn gate_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(token_string(t)));
    out
}

/// The source-derived union of a bundle, tokenized once.
#[derive(Clone, Debug, Default)]
pub struct Union {
    tokens: TokenSet,
}

impl Union {
    /// Tokenize `text` ([`gate_tokens`]) into a set.
    pub fn new(text: &str) -> Self {
        let mut tokens = TokenSet::default();
        for_each_token(text, |t| {
            match t {
                Tok::Word(w) if w.is_ascii() && !w.bytes().any(|b| b.is_ascii_uppercase()) => {
                    if !tokens.contains(w) {
                        tokens.insert(w.to_string());
                    }
                }
                other => {
                    tokens.insert(token_string(other));
                }
            };
        });
        Union { tokens }
    }

    /// The union of `bundle` ([`union_text`]).
    pub fn from_bundle(bundle: &ContextBundle) -> Self {
        Union::new(&union_text(bundle))
    }

    /// Whether the union holds `token` (a token as [`gate_tokens`] emits it).
    pub fn contains(&self, token: &str) -> bool {
        self.tokens.contains(token)
    }

    /// The tokens of `addition` that fail layer 2 against this union, in order,
    /// deduplicated. See [`failed_addition_tokens`].
    pub fn failed_tokens(&self, addition: &str, own: &Validity) -> Vec<String> {
        if addition.trim().is_empty() {
            return Vec::new();
        }
        self.failed_tokens_except(addition, &iso_renderings(own))
    }

    /// [`Union::failed_tokens`] with the exempt renderings given
    /// (`iso_renderings(own)`, computed once for many additions of one claim).
    pub fn failed_tokens_except(&self, addition: &str, renderings: &[String]) -> Vec<String> {
        let mut failed: Vec<String> = Vec::new();
        if addition.trim().is_empty() {
            return failed;
        }
        let stripped: Cow<'_, str> =
            if renderings.is_empty() || !addition.bytes().any(|b| b.is_ascii_digit()) {
                Cow::Borrowed(addition)
            } else {
                Cow::Owned(strip_renderings(addition, renderings))
            };
        for_each_token(&stripped, |t| {
            let token: Cow<'_, str> = match t {
                Tok::Word(w) if w.is_ascii() && !w.bytes().any(|b| b.is_ascii_uppercase()) => {
                    Cow::Borrowed(w)
                }
                Tok::Punct(p) => Cow::Borrowed(p),
                Tok::Possessive => Cow::Borrowed("'s"),
                other => Cow::Owned(token_string(other)),
            };
            if !is_allowlisted(&token)
                && !self.contains(&token)
                && !failed.iter().any(|f| *f == *token)
            {
                failed.push(token.into_owned());
            }
        });
        failed
    }
}

/// A character that, next to a digit, glues a date to more digits (`2023-05` + `-07`).
fn is_date_joiner(c: char) -> bool {
    matches!(c, '-' | '/' | '.' | ':')
}

/// Whether `s[at..at + len]` stands alone: not inside a longer word or number.
fn standalone(s: &str, at: usize, len: usize) -> bool {
    let mut before = s[..at].chars().rev();
    let ok_before = match (before.next(), before.next()) {
        (Some(c), _) if c.is_alphanumeric() => false,
        (Some(c), Some(d)) if is_date_joiner(c) && d.is_ascii_digit() => false,
        _ => true,
    };
    let mut after = s[at + len..].chars();
    let ok_after = match (after.next(), after.next()) {
        (Some(c), _) if c.is_alphanumeric() => false,
        (Some(c), Some(d)) if is_date_joiner(c) && d.is_ascii_digit() => false,
        _ => true,
    };
    ok_before && ok_after
}

/// `text` with every standalone, exact occurrence of one of `forms` (longest
/// first) replaced by a space.
fn strip_renderings(text: &str, forms: &[String]) -> String {
    if forms.is_empty() {
        return text.to_string();
    }
    let mut forms: Vec<&str> = forms
        .iter()
        .map(String::as_str)
        .filter(|f| !f.is_empty())
        .collect();
    forms.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        if let Some(f) = forms
            .iter()
            .find(|f| rest.starts_with(**f) && standalone(text, at, f.len()))
        {
            out.push(' ');
            at += f.len();
            continue;
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        at += c.len_utf8();
    }
    out
}

/// Layer 2 for one addition: the tokens of `addition` that are neither in the
/// tokens of `union` nor in [`ALLOWLIST`], in order and deduplicated.
///
/// Exact standalone occurrences of [`iso_renderings`]`(own)` are removed from
/// the addition first (the own-valid-time exemption). Numbers are never
/// allowlisted; punctuation outside the allowlist (`!`, `-`, `$`, `%`, …) needs
/// a union match like any other token. An empty or whitespace-only addition
/// passes. Builds the union's token set on every call: for many additions
/// against one bundle, build a [`Union`] once.
pub fn failed_addition_tokens(addition: &str, union: &str, own: &Validity) -> Vec<String> {
    if addition.trim().is_empty() {
        return Vec::new();
    }
    Union::new(union).failed_tokens(addition, own)
}

/// The source-derived union of a bundle (D32 union amendment): the rendered
/// header, the target chunk text, and every neighbour passage's text, joined
/// with newlines. Section summaries are never part of it.
pub fn union_text(bundle: &ContextBundle) -> String {
    let mut s = bundle.header.render();
    s.push('\n');
    s.push_str(&bundle.target_text);
    for p in bundle.before.iter().chain(&bundle.after) {
        s.push('\n');
        s.push_str(&p.text);
    }
    s
}

fn failure(gate: Gate, tokens: Vec<String>, message: String) -> GateFailure {
    GateFailure {
        gate,
        tokens,
        message,
    }
}

/// Run every gate on `draft` (see the module docs), building the bundle's
/// [`Union`] once. `document_md` is the version's `document.md`.
pub fn ground(
    bundle: &ContextBundle,
    document_md: &str,
    draft: &ClaimDraft,
) -> Result<GroundedClaim, GateFailure> {
    ground_with_union(bundle, &Union::from_bundle(bundle), document_md, draft)
}

/// [`ground`] with a prebuilt union (`Union::from_bundle(bundle)`), for
/// grounding many drafts of one bundle.
pub fn ground_with_union(
    bundle: &ContextBundle,
    union: &Union,
    document_md: &str,
    draft: &ClaimDraft,
) -> Result<GroundedClaim, GateFailure> {
    // Shape.
    if draft.text.trim().is_empty() || draft.passages.is_empty() {
        let what = if draft.text.trim().is_empty() {
            "the claim text is empty"
        } else {
            "the claim cites no passage"
        };
        return Err(failure(
            Gate::Shape,
            Vec::new(),
            format!("malformed draft: {what}"),
        ));
    }

    // Layer 1: cited passages exist and are exact slices.
    let mut labels: Vec<String> = Vec::with_capacity(draft.passages.len());
    for l in &draft.passages {
        if !labels.contains(l) {
            labels.push(l.clone());
        }
    }
    let mut bad: Vec<String> = Vec::new();
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(labels.len());
    for label in &labels {
        match bundle.passage(label) {
            Some(p)
                if p.start <= p.end && document_md.get(p.start..p.end) == Some(p.text.as_str()) =>
            {
                ranges.push((p.start, p.end));
            }
            _ => bad.push(label.clone()),
        }
    }
    if !bad.is_empty() {
        let message = format!(
            "layer 1 (span): cited passage(s) {} are not in the bundle or not exact slices of document.md",
            bad.join(", ")
        );
        return Err(failure(Gate::Span, bad, message));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut spans = Vec::with_capacity(merged.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    let mut char_at = |target: usize| {
        chars += document_md
            .get(byte..target)
            .map_or(0, |s| s.chars().count());
        byte = target;
        chars
    };
    for (s, e) in merged {
        let char_start = char_at(s);
        let char_end = char_at(e);
        spans.push(EvidenceSpan {
            start: s,
            end: e,
            char_start,
            char_end,
        });
    }

    // Layer 2: added context is traceable to the union.
    let mut failed: Vec<String> = Vec::new();
    for addition in &draft.added_context {
        for t in union.failed_tokens(addition, &draft.validity) {
            if !failed.contains(&t) {
                failed.push(t);
            }
        }
    }
    if !failed.is_empty() {
        let message = format!(
            "layer 2 (added context): token(s) {} occur neither in the source-derived union nor in the functional allowlist",
            failed
                .iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Err(failure(Gate::AddedContext, failed, message));
    }

    // Layer 3: the self-verdict.
    if draft.verdict != Verdict::Entailed {
        let verdict = match draft.verdict {
            Verdict::NotEntailed => "not_entailed",
            _ => "uncertain",
        };
        return Err(failure(
            Gate::Verdict,
            Vec::new(),
            format!("layer 3 (verdict): the extractor's self-verdict is {verdict}, not entailed"),
        ));
    }

    Ok(GroundedClaim {
        text: draft.text.clone(),
        spans,
        passages: labels,
        added_context: draft.added_context.clone(),
        validity: draft.validity.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{
        DocumentHeader, Passage, PassageRole, Precision, ValidityKind, temporal::find_time_mentions,
    };
    use crate::time::parse_rfc3339;
    use proptest::prelude::*;

    fn unknown() -> Validity {
        Validity::unknown(ValidityKind::Event)
    }

    fn day(y: i32, m: u32, d: u32) -> Validity {
        let iso = format!("{y:04}-{m:02}-{d:02}");
        find_time_mentions(&iso, None)[0].validity.clone()
    }

    #[test]
    fn allowlist_is_lowercase_unique_and_not_numeric() {
        for (i, w) in ALLOWLIST.iter().enumerate() {
            assert_eq!(*w, w.to_lowercase());
            assert!(!w.chars().any(|c| c.is_ascii_digit()));
            assert!(!ALLOWLIST[..i].contains(w), "duplicate {w}");
        }
        assert_eq!(ALLOWLIST.len(), 12 + 32 + 4 + 11);
        for w in [
            "said",
            "according",
            "from",
            "since",
            "until",
            "between",
            "during",
            "'s",
            "\u{201C}",
        ] {
            assert!(is_allowlisted(w), "{w}");
        }
        for w in ["has", "answered", "yes", "!", "-", "2022", "we", "i"] {
            assert!(!is_allowlisted(w), "{w}");
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(
            gate_tokens("Caroline's book."),
            vec!["caroline", "'s", "book", "."]
        );
        assert_eq!(gate_tokens("Caroline\u{2019}s"), vec!["caroline", "'s"]);
        assert_eq!(
            gate_tokens("I don't know, it's 3.5 or 1,000!"),
            vec![
                "i", "don't", "know", ",", "it", "'s", "3.5", "or", "1,000", "!"
            ]
        );
        assert_eq!(
            gate_tokens("“Hi”, ‘x’ — ÉCOLE 東京"),
            vec![
                "\u{201C}", "hi", "\u{201D}", ",", "\u{2018}", "x", "\u{2019}", "\u{2014}",
                "école", "東京"
            ]
        );
        assert_eq!(gate_tokens("James' cat's"), vec!["james", "'", "cat", "'s"]);
        assert_eq!(gate_tokens("Melanie: hi"), vec!["melanie", ":", "hi"]);
        assert_eq!(
            gate_tokens("2023-05-07"),
            vec!["2023", "-", "05", "-", "07"]
        );
        assert!(gate_tokens("  \n\t").is_empty());
        assert_eq!(gate_tokens("'s"), vec!["'s"]);
        assert_eq!(gate_tokens("'sup"), vec!["'", "sup"]);
    }

    #[test]
    fn speaker_label_case() {
        let union = "Melanie: Yeah, I painted that lake sunrise last year!";
        assert!(failed_addition_tokens("Melanie said, ", union, &unknown()).is_empty());
        assert!(failed_addition_tokens("Melanie said", union, &unknown()).is_empty());
        assert!(failed_addition_tokens("MELANIE’s", union, &unknown()).is_empty());
        assert_eq!(
            failed_addition_tokens(
                "Melanie said in Paris at the pride parade",
                union,
                &unknown()
            ),
            vec!["paris", "pride", "parade"]
        );
        assert!(failed_addition_tokens("", union, &unknown()).is_empty());
        assert!(failed_addition_tokens("  \n ", union, &unknown()).is_empty());
    }

    #[test]
    fn possessives_and_curly_quotes() {
        let union = "Caroline: My sister’s dog is cute.";
        for ok in [
            "Caroline's",
            "Caroline’s sister",
            "“Caroline”",
            "‘sister’",
            "\"dog\"",
        ] {
            assert!(
                failed_addition_tokens(ok, union, &unknown()).is_empty(),
                "{ok}"
            );
        }
        assert_eq!(
            failed_addition_tokens("Caroline!", union, &unknown()),
            vec!["!"]
        );
        assert_eq!(
            failed_addition_tokens("dogs", union, &unknown()),
            vec!["dogs"]
        );
    }

    #[test]
    fn numbers_and_own_dates() {
        let union = "Melanie: I painted that lake sunrise last year!";
        let y2022 = find_time_mentions("in 2022", None)[0].validity.clone();
        assert!(failed_addition_tokens("in 2022", union, &y2022).is_empty());
        assert_eq!(
            failed_addition_tokens("in 2022", union, &unknown()),
            vec!["2022"]
        );
        assert_eq!(
            failed_addition_tokens("in 2021", union, &y2022),
            vec!["2021"]
        );
        // A day written against a year-precise bound is rejected.
        assert_eq!(
            failed_addition_tokens("on 2022-05-07", union, &y2022),
            vec!["2022", "-", "05", "07"]
        );
        let d = day(2023, 5, 7);
        assert!(failed_addition_tokens("on 2023-05-07", union, &d).is_empty());
        assert!(failed_addition_tokens("since 2023-05-07.", union, &d).is_empty());
        assert_eq!(
            failed_addition_tokens("on 2023-05-08", union, &d),
            vec!["2023", "-", "05", "08"]
        );
        assert_eq!(
            failed_addition_tokens("on 2023-05-07T10", union, &d),
            vec!["2023", "-", "05", "07t10"]
        );
        assert_eq!(
            failed_addition_tokens("May 7, 2023", union, &d),
            vec!["may", "7", "2023"]
        );
        // The union itself can supply numbers.
        assert!(failed_addition_tokens("3 cats", "She has 3 cats", &unknown()).is_empty());
    }

    fn ts(s: &str) -> crate::time::Timestamp {
        parse_rfc3339(s).unwrap()
    }

    /// A two-turn conversation bundle over `DOC`.
    const DOC: &str =
        "Caroline: Did you paint that?\n\nMelanie: Yeah, I painted that lake sunrise last year!";

    fn bundle() -> ContextBundle {
        let p = |label: &str, role, start: usize, end: usize| Passage {
            label: label.into(),
            role,
            start,
            end,
            text: DOC[start..end].into(),
            turn: None,
        };
        let second = DOC.find("Melanie").unwrap();
        ContextBundle {
            header: DocumentHeader {
                title: "Chat".into(),
                source_kind: "conversation".into(),
                source_time: Some(ts("2023-05-08T10:00:00Z")),
                file_name: None,
            },
            section_path: vec![],
            is_conversation: true,
            target: vec![p("T1", PassageRole::Target, second + 9, DOC.len())],
            before: vec![p("N1", PassageRole::Neighbour, 0, second - 2)],
            after: vec![],
            target_text: DOC[second..].into(),
        }
    }

    fn draft(text: &str, passages: &[&str], added: &[&str]) -> ClaimDraft {
        ClaimDraft {
            text: text.into(),
            passages: passages.iter().map(|s| s.to_string()).collect(),
            added_context: added.iter().map(|s| s.to_string()).collect(),
            validity: find_time_mentions("last year", Some(ts("2023-05-08T10:00:00Z")))[0]
                .validity
                .clone(),
            verdict: Verdict::Entailed,
        }
    }

    #[test]
    fn union_holds_header_target_and_neighbours() {
        let b = bundle();
        let u = union_text(&b);
        assert!(u.starts_with("Title: Chat\n"));
        assert!(u.contains("Source time: 2023-05-08 10:00 UTC"));
        assert!(u.contains("Melanie: Yeah"));
        assert!(u.contains("Caroline: Did you paint that?"));
        let union = Union::from_bundle(&b);
        assert!(
            union.contains("caroline") && union.contains("conversation") && union.contains("?")
        );
    }

    #[test]
    fn grounds_a_good_draft() {
        let b = bundle();
        let g = ground(
            &b,
            DOC,
            &draft(
                "Melanie painted that lake sunrise in 2022!",
                &["T1", "N1", "T1"],
                &["Melanie", "in 2022"],
            ),
        )
        .unwrap();
        assert_eq!(g.passages, vec!["T1", "N1"]);
        assert_eq!(g.spans.len(), 2);
        assert_eq!(g.spans[0].start, 0);
        assert_eq!(g.spans[1].end, DOC.len());
        assert_eq!(g.spans[1].char_end, DOC.chars().count());
        assert_eq!(g.validity.precision, Precision::Year);
    }

    #[test]
    fn char_offsets_and_merging() {
        let doc = "Ünïcødé: 🎉 one. Two.";
        let first = doc.find("🎉").unwrap();
        let mid = doc.find(" Two").unwrap();
        let p = |label: &str, start: usize, end: usize| Passage {
            label: label.into(),
            role: PassageRole::Target,
            start,
            end,
            text: doc[start..end].into(),
            turn: None,
        };
        let mut b = bundle();
        b.target = vec![
            p("T1", first, mid),
            p("T2", mid, doc.len()),
            p("T3", first + 4, mid),
        ];
        b.before.clear();
        b.target_text = doc.into();
        let g = ground(&b, doc, &draft("One and two.", &["T2", "T1", "T3"], &[])).unwrap();
        assert_eq!(g.spans.len(), 1);
        assert_eq!(g.spans[0].start, first);
        assert_eq!(g.spans[0].char_start, doc[..first].chars().count());
        assert_eq!(g.spans[0].char_end, doc.chars().count());
    }

    #[test]
    fn each_gate_fails() {
        let b = bundle();
        let e = ground(&b, DOC, &draft("  ", &["T1"], &[])).unwrap_err();
        assert_eq!(e.gate, Gate::Shape);
        let e = ground(&b, DOC, &draft("x", &[], &[])).unwrap_err();
        assert_eq!(e.gate, Gate::Shape);

        let e = ground(&b, DOC, &draft("x", &["T1", "T9", "N4"], &[])).unwrap_err();
        assert_eq!(e.gate, Gate::Span);
        assert_eq!(e.tokens, vec!["T9", "N4"]);
        assert!(e.message.contains("T9"));
        // A passage that is not the exact slice.
        let mut shifted = b.clone();
        shifted.target[0].start += 1;
        let e = ground(&shifted, DOC, &draft("x", &["T1"], &[])).unwrap_err();
        assert_eq!((e.gate, e.tokens), (Gate::Span, vec!["T1".to_string()]));
        // Not on a char boundary / out of range: no panic.
        let mut odd = b.clone();
        odd.target[0].end = DOC.len() + 10;
        assert_eq!(
            ground(&odd, DOC, &draft("x", &["T1"], &[]))
                .unwrap_err()
                .gate,
            Gate::Span
        );

        let e = ground(
            &b,
            DOC,
            &draft("x", &["T1"], &["Melanie said in Paris", "2021"]),
        )
        .unwrap_err();
        assert_eq!(e.gate, Gate::AddedContext);
        assert_eq!(e.tokens, vec!["paris", "2021"]);
        assert!(e.message.contains("`paris`"));

        let mut d = draft("x", &["T1"], &["Melanie"]);
        d.verdict = Verdict::Uncertain;
        assert_eq!(ground(&b, DOC, &d).unwrap_err().gate, Gate::Verdict);
        d.verdict = Verdict::NotEntailed;
        let e = ground(&b, DOC, &d).unwrap_err();
        assert_eq!(e.gate, Gate::Verdict);
        assert!(e.message.contains("not_entailed"));
    }

    fn words(re: &'static str) -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(re, 1..12)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn union_and_allowlist_tokens_pass(
            union_words in words("[a-m]{3,8}"),
            picks in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>(), any::<bool>()), 0..10),
            allow in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let union = format!("Speaker: {}.", union_words.join(" "));
            let mut parts: Vec<String> = Vec::new();
            for (i, upper, possessive) in picks {
                let mut w = i.get(&union_words).clone();
                if upper { w = w.to_uppercase(); }
                if possessive { w.push_str("'s"); }
                parts.push(w);
            }
            for i in allow {
                parts.push(i.get(ALLOWLIST).to_string());
            }
            let addition = parts.join(" ");
            prop_assert!(failed_addition_tokens(&addition, &union, &unknown()).is_empty(), "{}", addition);
        }

        #[test]
        fn foreign_words_and_numbers_fail(
            union_words in words("[a-m]{3,8}"),
            foreign in "[n-y]{3,8}",
            number in 0u32..1_000_000,
            pos in any::<prop::sample::Index>(),
            as_number in any::<bool>(),
        ) {
            prop_assume!(!is_allowlisted(&foreign));
            let union = format!("Speaker: {}.", union_words.join(" "));
            let mut parts: Vec<String> = union_words.clone();
            let inserted = if as_number { number.to_string() } else { foreign.clone() };
            parts.insert(pos.index(parts.len() + 1), inserted.clone());
            let addition = format!("Speaker said, {}", parts.join(" "));
            let failed = failed_addition_tokens(&addition, &union, &unknown());
            prop_assert_eq!(failed, vec![inserted]);
        }

        #[test]
        fn own_date_exemption_is_exact(
            y in 1900i32..2100, m in 1u32..13, d in 1u32..29, other in 1u32..29,
            union_words in words("[a-m]{3,8}"),
        ) {
            let union = format!("Speaker: {}.", union_words.join(" "));
            let v = day(y, m, d);
            let iso = format!("{y:04}-{m:02}-{d:02}");
            let passes = |a: &str, v: &Validity| failed_addition_tokens(a, &union, v).is_empty();
            let (on_day, since_day) = (format!("on {iso}"), format!("since {iso},"));
            prop_assert!(passes(&on_day, &v));
            prop_assert!(passes(&since_day, &v));
            // A different day fails.
            let other_day = format!("on {y:04}-{m:02}-{other:02}");
            prop_assert_eq!(passes(&other_day, &v), other == d);
            // The same date spelled differently fails.
            for spelled in [
                format!("{y:04}/{m:02}/{d:02}"),
                format!("{d:02}.{m:02}.{y:04}"),
                format!("{y:04}{m:02}{d:02}"),
                format!("on {y:04}-{m}-{d}x"),
            ] {
                prop_assert!(!passes(&spelled, &v), "{}", spelled);
            }
            // A year admits the bare year only; a day does not admit the bare year.
            let in_year = format!("in {y}");
            let year = find_time_mentions(&in_year, None)[0].validity.clone();
            prop_assert!(passes(&in_year, &year));
            prop_assert!(!passes(&on_day, &year));
            prop_assert!(!passes(&in_year, &v));
        }
    }
}
