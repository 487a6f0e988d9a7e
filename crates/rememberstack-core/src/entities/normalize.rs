//! Entity name normalization (E3): the exact-name lemma (T0), padded character
//! trigrams and their Jaccard similarity, Daitch–Mokotoff Soundex codes, and the
//! D103 candidate ordering.
//!
//! Everything here is pure, deterministic and total: no input panics.

use std::cmp::Ordering;

use crate::time::Timestamp;

/// Folds one already-lowercased Latin letter from Latin-1 Supplement or Latin
/// Extended-A to its ASCII spelling. Returns `None` for characters the table
/// does not cover (they pass through unchanged).
fn fold_latin(c: char) -> Option<&'static str> {
    let s = match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' | 'ª' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => "c",
        'ð' | 'ď' | 'đ' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => "g",
        'ĥ' | 'ħ' => "h",
        'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => "i",
        'ĳ' => "ij",
        'ĵ' => "j",
        'ķ' | 'ĸ' => "k",
        'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => "l",
        'ñ' | 'ń' | 'ņ' | 'ň' | 'ŉ' | 'ŋ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' | 'º' => "o",
        'œ' => "oe",
        'ŕ' | 'ŗ' | 'ř' => "r",
        'ś' | 'ŝ' | 'ş' | 'š' | 'ſ' => "s",
        'ß' => "ss",
        'ţ' | 'ť' | 'ŧ' => "t",
        'þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => "u",
        'ŵ' => "w",
        'ý' | 'ÿ' | 'ŷ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => return None,
    };
    Some(s)
}

/// Whether the one-word lemma `short` abbreviates the lemma `long` within one
/// document: `long` has two or more words and `short` is its first or last
/// (`alice` → `alice moreno`, `moreno` → `alice moreno`), or `long` is one word
/// that `short`, three letters or more, begins (`mel` → `melanie`).
pub fn abbreviates(short: &str, long: &str) -> bool {
    if short.is_empty() || short.contains(' ') || short == long {
        return false;
    }
    let words: Vec<&str> = long.split(' ').filter(|w| !w.is_empty()).collect();
    match words.as_slice() {
        [one] => short.chars().count() >= 3 && one.starts_with(short),
        [first, .., last] => *first == short || *last == short,
        [] => false,
    }
}

/// The one entity a one-word name abbreviates among a document's `bindings`
/// (each bound entity's active root from `root`): `None` unless exactly one.
pub fn short_form_of<'b>(
    name_lemma: &str,
    bindings: impl IntoIterator<Item = &'b crate::entities::DocumentBinding>,
    root: impl Fn(crate::ids::EntityId) -> crate::ids::EntityId,
) -> Option<(crate::ids::EntityId, String)> {
    let mut found: Option<(crate::ids::EntityId, String)> = None;
    for b in bindings {
        if !abbreviates(name_lemma, &b.lemma) {
            continue;
        }
        let r = root(b.entity_id);
        match &found {
            Some((e, _)) if *e == r => {}
            Some(_) => return None,
            None => found = Some((r, b.lemma.clone())),
        }
    }
    found
}

/// Unicode-lowercases `s` and folds Latin diacritics (see [`lemma`]); no other
/// change. Shared with the predicate normalizer.
pub(crate) fn fold_lower(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        for l in c.to_lowercase() {
            match fold_latin(l) {
                Some(f) => out.push_str(f),
                None => out.push(l),
            }
        }
    }
    out
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{02BC}')
}

fn is_hyphen(c: char) -> bool {
    matches!(c, '-' | '\u{2010}' | '\u{2011}')
}

/// The normalized lemma used for exact-name (T0) entity candidates.
///
/// Steps: Unicode lowercase; Latin diacritics folded (`á`→`a`, `ø`→`o`,
/// `ß`→`ss`, `æ`→`ae`, `þ`→`th`, …); punctuation removed except apostrophes and
/// hyphens between two letters or digits (typographic variants become `'` and
/// `-`); whitespace collapsed to single spaces and trimmed; leading `"the "`
/// dropped. Non-Latin scripts pass through lowercased. Idempotent.
pub fn lemma(name: &str) -> String {
    // Pass 1: lowercase, fold, unify apostrophes/hyphens, drop other punctuation.
    let mut chars: Vec<char> = Vec::with_capacity(name.len());
    for c in fold_lower(name).chars() {
        if c.is_alphanumeric() || c.is_whitespace() {
            chars.push(c);
        } else if is_apostrophe(c) {
            chars.push('\'');
        } else if is_hyphen(c) {
            chars.push('-');
        }
    }
    // Pass 2: keep only inner apostrophes/hyphens, collapse whitespace.
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == '\'' || c == '-' {
            let inner = i > 0
                && chars[i - 1].is_alphanumeric()
                && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
            if inner {
                out.push(c);
            }
        } else if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    while out.ends_with(' ') {
        out.pop();
    }
    let mut rest = out.as_str();
    while let Some(r) = rest.strip_prefix("the ") {
        rest = r;
    }
    rest.to_string()
}

/// Padded character trigrams of a lemma, like `pg_trgm`: each word (maximal run
/// of letters and digits) is padded with two leading spaces and one trailing
/// space, and every 3-character window is taken. Sorted and deduplicated.
pub fn trigrams(lemma: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in lemma
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let padded: Vec<char> = "  ".chars().chain(word.chars()).chain([' ']).collect();
        for w in padded.windows(3) {
            out.push(w.iter().collect::<String>());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Trigram similarity `|A∩B| / |A∪B|` over `trigrams(lemma(a))` and
/// `trigrams(lemma(b))`; 0 when both sets are empty. Symmetric, in `[0, 1]`,
/// and 1 for names with the same non-empty lemma.
pub fn trigram_similarity(a: &str, b: &str) -> f32 {
    trigram_code_similarity(&trigram_codes(a), &trigram_codes(b))
}

/// The trigram set of `text`'s [`lemma`], each trigram packed into a `u64` (three
/// 21-bit code points), sorted and deduplicated: the same set as [`trigrams`]
/// without a string per trigram. Compute it once for a text compared many times.
pub fn trigram_codes(text: &str) -> Vec<u64> {
    let lemma = lemma(text);
    let mut out = Vec::with_capacity(lemma.len() + 2);
    for word in lemma
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let (mut a, mut b) = (' ' as u64, ' ' as u64);
        for c in word.chars().chain([' ']) {
            let c = c as u64;
            out.push((a << 42) | (b << 21) | c);
            (a, b) = (b, c);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// [`trigram_similarity`] of two [`trigram_codes`] sets (Jaccard).
pub fn trigram_code_similarity(a: &[u64], b: &[u64]) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut inter) = (0usize, 0usize, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.len() + b.len() - inter;
    inter as f32 / union as f32
}

/// The Daitch–Mokotoff coding table: pattern, code at the start of a word,
/// code before a vowel, code elsewhere. `|` separates alternative branches; an
/// empty code means "not coded".
const DM_RULES: &[(&str, &str, &str, &str)] = &[
    // Vowels and vowel groups.
    ("a", "0", "", ""),
    ("e", "0", "", ""),
    ("i", "0", "", ""),
    ("o", "0", "", ""),
    ("u", "0", "", ""),
    ("y", "1", "", ""),
    ("ai", "0", "1", ""),
    ("aj", "0", "1", ""),
    ("ay", "0", "1", ""),
    ("au", "0", "7", ""),
    ("ei", "0", "1", ""),
    ("ej", "0", "1", ""),
    ("ey", "0", "1", ""),
    ("eu", "1", "1", ""),
    ("ia", "1", "", ""),
    ("ie", "1", "", ""),
    ("io", "1", "", ""),
    ("iu", "1", "", ""),
    ("oi", "0", "1", ""),
    ("oj", "0", "1", ""),
    ("oy", "0", "1", ""),
    ("ui", "0", "1", ""),
    ("uj", "0", "1", ""),
    ("uy", "0", "1", ""),
    ("ue", "0", "1", ""),
    // Single consonants.
    ("b", "7", "7", "7"),
    ("c", "4|5", "4|5", "4|5"),
    ("d", "3", "3", "3"),
    ("f", "7", "7", "7"),
    ("g", "5", "5", "5"),
    ("h", "5", "5", ""),
    ("j", "1|4", "|4", "|4"),
    ("k", "5", "5", "5"),
    ("l", "8", "8", "8"),
    ("m", "6", "6", "6"),
    ("n", "6", "6", "6"),
    ("p", "7", "7", "7"),
    ("q", "5", "5", "5"),
    ("r", "9", "9", "9"),
    ("s", "4", "4", "4"),
    ("t", "3", "3", "3"),
    ("v", "7", "7", "7"),
    ("w", "7", "7", "7"),
    ("x", "5", "54", "54"),
    ("z", "4", "4", "4"),
    // Consonant groups.
    ("schtsch", "2", "4", "4"),
    ("schtsh", "2", "4", "4"),
    ("schtch", "2", "4", "4"),
    ("shtch", "2", "4", "4"),
    ("shtsh", "2", "4", "4"),
    ("stsch", "2", "4", "4"),
    ("ttsch", "4", "4", "4"),
    ("zhdzh", "2", "4", "4"),
    ("shch", "2", "4", "4"),
    ("scht", "2", "43", "43"),
    ("schd", "2", "43", "43"),
    ("stch", "2", "4", "4"),
    ("strz", "2", "4", "4"),
    ("strs", "2", "4", "4"),
    ("stsh", "2", "4", "4"),
    ("szcz", "2", "4", "4"),
    ("szcs", "2", "4", "4"),
    ("ttch", "4", "4", "4"),
    ("tsch", "4", "4", "4"),
    ("ttsz", "4", "4", "4"),
    ("zdzh", "2", "4", "4"),
    ("zsch", "4", "4", "4"),
    ("chs", "5", "54", "54"),
    ("csz", "4", "4", "4"),
    ("czs", "4", "4", "4"),
    ("drz", "4", "4", "4"),
    ("drs", "4", "4", "4"),
    ("dsh", "4", "4", "4"),
    ("dsz", "4", "4", "4"),
    ("dzh", "4", "4", "4"),
    ("dzs", "4", "4", "4"),
    ("sch", "4", "4", "4"),
    ("sht", "2", "43", "43"),
    ("szt", "2", "43", "43"),
    ("shd", "2", "43", "43"),
    ("szd", "2", "43", "43"),
    ("tch", "4", "4", "4"),
    ("trz", "4", "4", "4"),
    ("trs", "4", "4", "4"),
    ("tsh", "4", "4", "4"),
    ("tts", "4", "4", "4"),
    ("ttz", "4", "4", "4"),
    ("tzs", "4", "4", "4"),
    ("tsz", "4", "4", "4"),
    ("zdz", "2", "4", "4"),
    ("zhd", "2", "43", "43"),
    ("zsh", "4", "4", "4"),
    ("ch", "4|5", "4|5", "4|5"),
    ("ck", "5|45", "5|45", "5|45"),
    ("cz", "4", "4", "4"),
    ("cs", "4", "4", "4"),
    ("ds", "4", "4", "4"),
    ("dz", "4", "4", "4"),
    ("dt", "3", "3", "3"),
    ("fb", "7", "7", "7"),
    ("ks", "5", "54", "54"),
    ("kh", "5", "5", "5"),
    ("mn", "66", "66", "66"),
    ("nm", "66", "66", "66"),
    ("pf", "7", "7", "7"),
    ("ph", "7", "7", "7"),
    ("rs", "4|94", "4|94", "4|94"),
    ("rz", "4|94", "4|94", "4|94"),
    ("sh", "4", "4", "4"),
    ("sc", "2", "4", "4"),
    ("st", "2", "43", "43"),
    ("sd", "2", "43", "43"),
    ("sz", "4", "4", "4"),
    ("th", "3", "3", "3"),
    ("ts", "4", "4", "4"),
    ("tc", "4", "4", "4"),
    ("tz", "4", "4", "4"),
    ("zd", "2", "43", "43"),
    ("zh", "4", "4", "4"),
    ("zs", "4", "4", "4"),
];

/// Longest words coded; longer words are truncated (codes are 6 digits anyway).
const DM_MAX_WORD: usize = 64;
const DM_LEN: usize = 6;

fn is_dm_vowel(b: &u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Daitch–Mokotoff codes of one word of ASCII lowercase letters.
fn dm_word(w: &[u8]) -> Vec<String> {
    // Each branch: (code so far, last replacement appended or skipped).
    let mut branches: Vec<(String, &'static str)> = vec![(String::new(), "")];
    let mut i = 0;
    let mut first = true;
    let mut prev: u8 = 0;
    while i < w.len() {
        let rest = &w[i..];
        let Some(&(pat, at_start, before_vowel, other)) = DM_RULES
            .iter()
            .filter(|r| rest.starts_with(r.0.as_bytes()))
            .max_by_key(|r| r.0.len())
        else {
            i += 1;
            continue;
        };
        let len = pat.len();
        let code = if first {
            at_start
        } else if w.get(i + len).is_some_and(is_dm_vowel) {
            before_vowel
        } else {
            other
        };
        let force = matches!((prev, w[i]), (b'm', b'n') | (b'n', b'm'));
        let mut next = Vec::with_capacity(branches.len() * 2);
        for (built, last) in &branches {
            for alt in code.split('|') {
                let mut b = built.clone();
                if (!last.ends_with(alt) || force) && b.len() < DM_LEN {
                    b.push_str(alt);
                    b.truncate(DM_LEN);
                }
                next.push((b, alt));
            }
        }
        next.sort();
        next.dedup();
        branches = next;
        first = false;
        prev = w[i + len - 1];
        i += len;
    }
    let mut out: Vec<String> = branches
        .into_iter()
        .map(|(mut b, _)| {
            while b.len() < DM_LEN {
                b.push('0');
            }
            b
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Daitch–Mokotoff Soundex codes (6 digits each) of a name: the union of the
/// codes of its first and last words, taken from the Latin-folded [`lemma`].
///
/// All branches of ambiguous letter groups (`CH`, `CK`, `C`, `J`, `RS`, `RZ`)
/// are kept; the result is sorted and deduplicated. Only ASCII letters of a
/// word are coded; a word without any (e.g. non-Latin script) contributes no
/// codes, so the result may be empty.
pub fn daitch_mokotoff(name: &str) -> Vec<String> {
    let lem = lemma(name);
    let words: Vec<Vec<u8>> = lem
        .split(' ')
        .map(|w| {
            w.bytes()
                .filter(u8::is_ascii_lowercase)
                .take(DM_MAX_WORD)
                .collect::<Vec<u8>>()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = Vec::new();
    if let Some(f) = words.first() {
        out.extend(dm_word(f));
    }
    if words.len() > 1
        && let Some(l) = words.last()
    {
        out.extend(dm_word(l));
    }
    out.sort();
    out.dedup();
    out
}

/// An entity resolution candidate, as ranked by [`rank_candidates`].
pub trait Candidate {
    /// The candidate's match score (higher is better).
    fn score(&self) -> f32;
    /// The candidate entity's canonical name.
    fn canonical_name(&self) -> &str;
    /// When the candidate entity was created.
    fn created_at(&self) -> Timestamp;
    /// The candidate entity's id.
    fn id(&self) -> uuid::Uuid;
}

/// Sorts candidates into the D103 order: score descending, then trigram
/// similarity of the canonical name to `query_lemma` descending, then older
/// first (`created_at` ascending), then id ascending. Floats compare with
/// `total_cmp`, so the order is total and deterministic.
pub fn rank_candidates<T: Candidate>(query_lemma: &str, candidates: &mut [T]) {
    let query = trigram_codes(query_lemma);
    let mut keyed: Vec<(f32, usize)> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = trigram_codes(c.canonical_name());
            (trigram_code_similarity(&query, &name), i)
        })
        .collect();
    keyed.sort_by(|(sa, ia), (sb, ib)| {
        let (a, b) = (&candidates[*ia], &candidates[*ib]);
        b.score()
            .total_cmp(&a.score())
            .then_with(|| sb.total_cmp(sa))
            .then_with(|| a.created_at().cmp(&b.created_at()))
            .then_with(|| a.id().cmp(&b.id()))
    });
    // Apply the permutation in place: position `dst` takes candidate `order[dst]`.
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    let mut pos: Vec<usize> = (0..candidates.len()).collect(); // where each original now lives
    let mut at: Vec<usize> = (0..candidates.len()).collect(); // which original is at each slot
    for (dst, &orig) in order.iter().enumerate() {
        let src = pos[orig];
        if src != dst {
            candidates.swap(src, dst);
            let displaced = at[dst];
            at[src] = displaced;
            pos[displaced] = src;
            at[dst] = orig;
            pos[orig] = dst;
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn packed_trigrams_match_string_trigrams() {
        /// Jaccard over the string trigram sets, the definition the codes must keep.
        fn jaccard(a: &[String], b: &[String]) -> f32 {
            if a.is_empty() && b.is_empty() {
                return 0.0;
            }
            let inter = a.iter().filter(|t| b.contains(t)).count();
            inter as f32 / (a.len() + b.len() - inter) as f32
        }
        let names = [
            "Caroline",
            "caroline's art",
            "Jean-Luc Picard",
            "Zoë Ångström",
            "",
            "a",
            "Melanie went to the park on 3 May",
            "東京 タワー",
        ];
        for a in names {
            assert_eq!(
                trigram_codes(a).len(),
                trigrams(&lemma(a)).len(),
                "same set size for {a:?}"
            );
            for b in names {
                let want = jaccard(&trigrams(&lemma(a)), &trigrams(&lemma(b)));
                assert_eq!(trigram_similarity(a, b), want, "{a:?} vs {b:?}");
            }
        }
    }
    use super::*;

    #[test]
    fn short_forms_abbreviate_one_longer_name() {
        assert!(abbreviates("alice", "alice moreno"));
        assert!(abbreviates("moreno", "alice moreno"));
        assert!(abbreviates("mel", "melanie"));
        assert!(!abbreviates("al", "alan"));
        assert!(!abbreviates("bob", "alice moreno"));
        assert!(!abbreviates("alice", "alice"));
        assert!(!abbreviates("alice moreno", "alice moreno keller"));
        let id = |n: u128| crate::ids::EntityId(uuid::Uuid::from_u128(n));
        let bind = |lemma: &str, e: u128| crate::entities::DocumentBinding {
            document_id: crate::ids::DocumentId(uuid::Uuid::from_u128(9)),
            lemma: lemma.into(),
            entity_id: id(e),
            anchor: None,
        };
        let one = [
            bind("alice moreno", 1),
            bind("acme", 2),
            bind("alice moreno", 1),
        ];
        assert_eq!(
            short_form_of("alice", &one, |e| e),
            Some((id(1), "alice moreno".into()))
        );
        // Two Alices in the document: no short form.
        let two = [bind("alice moreno", 1), bind("alice keller", 3)];
        assert_eq!(short_form_of("alice", &two, |e| e), None);
        // Unless they were merged into one.
        assert_eq!(
            short_form_of("alice", &two, |_| id(1)),
            Some((id(1), "alice moreno".into()))
        );
    }
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[test]
    fn lemma_table() {
        let cases = [
            ("Hello World", "hello world"),
            ("  Árvíztűrő   Tükörfúrógép ", "arvizturo tukorfurogep"),
            ("Søren Kierkegaard", "soren kierkegaard"),
            ("Straße", "strasse"),
            ("Æsir Œuvre", "aesir oeuvre"),
            ("Łódź", "lodz"),
            ("Đorđe", "dorde"),
            ("Þór", "thor"),
            ("The Beatles", "beatles"),
            ("the the band", "band"),
            ("Theatre", "theatre"),
            ("The", "the"),
            ("O'Brien", "o'brien"),
            ("O’Brien", "o'brien"),
            ("Jean-Luc Picard", "jean-luc picard"),
            ("- leading -dash- ", "leading dash"),
            ("rock 'n' roll", "rock n roll"),
            ("AT&T, Inc.", "att inc"),
            ("Москва", "москва"),
            ("東京", "東京"),
            ("İstanbul", "istanbul"),
            ("", ""),
            ("!!!", ""),
            ("a\tb\nc", "a b c"),
        ];
        for (input, want) in cases {
            assert_eq!(lemma(input), want, "lemma({input:?})");
        }
    }

    #[test]
    fn trigrams_like_pg_trgm() {
        assert_eq!(trigrams("cat"), vec!["  c", " ca", "at ", "cat"]);
        assert_eq!(trigrams("a b"), vec!["  a", "  b", " a ", " b "]);
        assert!(trigrams("").is_empty());
        assert_eq!(trigrams("aa aa"), trigrams("aa"));
    }

    #[test]
    fn similarity_values() {
        assert_eq!(trigram_similarity("", ""), 0.0);
        assert_eq!(trigram_similarity("Ada", ""), 0.0);
        assert_eq!(trigram_similarity("Ada Lovelace", "ada  lovelace!"), 1.0);
        let s = trigram_similarity("Lovelace", "Lovelase");
        assert!(s > 0.3 && s < 1.0, "{s}");
        assert!(trigram_similarity("Lovelace", "Turing") < 0.1);
    }

    #[test]
    fn daitch_mokotoff_known_values() {
        let cases: &[(&str, &[&str])] = &[
            ("Moskowitz", &["645740"]),
            ("Moskovitz", &["645740"]),
            ("Auerbach", &["097400", "097500"]),
            ("Ohrbach", &["097400", "097500"]),
            ("Uhrbach", &["097400", "097500"]),
            ("Lipshitz", &["874400"]),
            ("Lippszyc", &["874400", "874500"]),
            ("Lewinsky", &["876450"]),
            ("Levinsky", &["876450"]),
            ("Szlachter", &["484390", "485390"]),
            ("Peters", &["734000", "739400"]),
            ("Peterson", &["734600", "739460"]),
            ("Alpert", &["087930"]),
            ("Breuer", &["791900"]),
            ("Golden", &["583600"]),
            ("Haber", &["579000"]),
            ("Manheim", &["665600"]),
            ("Mannheim", &["665600"]),
            ("Topf", &["370000"]),
            ("Kleinman", &["586660"]),
            ("Szlamawicz", &["486740"]),
            ("Shlamovitz", &["486740"]),
            ("Jackson", &["145460", "154600", "445460", "454600"]),
            (
                "Jackson-Jackson",
                &[
                    "145464", "145465", "154644", "154645", "154654", "445464", "445465", "454644",
                    "454645", "454654",
                ],
            ),
            ("Augsburg", &["054795"]),
            ("Halberstadt", &["587433", "587943"]),
            ("Chernowitz", &["496740", "596740"]),
            ("Eisenstadt", &["046433"]),
            ("Izenstadt", &["046433"]),
            ("Levine", &["876000"]),
            ("Chelm", &["486000", "586000"]),
            ("Helm", &["586000"]),
            ("Daitch", &["340000"]),
            ("Mokotoff", &["653700"]),
            (
                "Chajackachac",
                &[
                    "414544", "414545", "414554", "414555", "415440", "415450", "415540", "415550",
                    "514544", "514545", "514554", "514555", "515440", "515450", "515540", "515550",
                ],
            ),
        ];
        for (name, want) in cases {
            let got = daitch_mokotoff(name);
            assert_eq!(got, want.to_vec(), "daitch_mokotoff({name:?})");
        }
    }

    #[test]
    fn daitch_mokotoff_first_and_last_words() {
        // "Paul Moskowitz Lewinsky": first word and last word only.
        let mut want = daitch_mokotoff("Paul");
        want.extend(daitch_mokotoff("Lewinsky"));
        want.sort();
        want.dedup();
        assert_eq!(daitch_mokotoff("Paul Moskowitz Lewinsky"), want);
        assert!(!daitch_mokotoff("Paul Moskowitz Lewinsky").contains(&"645740".to_string()));
        // Folding applies before coding.
        assert_eq!(daitch_mokotoff("Mošković"), daitch_mokotoff("Moskovic"));
        assert!(daitch_mokotoff("Москва").is_empty());
        assert!(daitch_mokotoff("").is_empty());
    }

    struct C {
        score: f32,
        name: &'static str,
        created: i64,
        id: u128,
    }

    impl Candidate for C {
        fn score(&self) -> f32 {
            self.score
        }
        fn canonical_name(&self) -> &str {
            self.name
        }
        fn created_at(&self) -> Timestamp {
            chrono::Utc
                .timestamp_opt(self.created, 0)
                .single()
                .unwrap_or_default()
        }
        fn id(&self) -> uuid::Uuid {
            uuid::Uuid::from_u128(self.id)
        }
    }

    #[test]
    fn rank_candidates_d103_order() {
        let mut cs = vec![
            C {
                score: 0.5,
                name: "Ada Lovelace",
                created: 10,
                id: 9,
            },
            C {
                score: 0.9,
                name: "Zzz",
                created: 10,
                id: 1,
            },
            C {
                score: 0.5,
                name: "Ada Lovelase",
                created: 10,
                id: 8,
            },
            C {
                score: 0.5,
                name: "Ada Lovelace",
                created: 5,
                id: 7,
            },
            C {
                score: 0.5,
                name: "Ada Lovelace",
                created: 5,
                id: 3,
            },
            C {
                score: f32::NAN,
                name: "x",
                created: 0,
                id: 0,
            },
            C {
                score: 0.1,
                name: "Ada Lovelace",
                created: 0,
                id: 2,
            },
        ];
        rank_candidates("ada lovelace", &mut cs);
        let ids: Vec<u128> = cs.iter().map(|c| c.id).collect();
        // NaN sorts first under total_cmp descending (positive NaN is greatest).
        assert_eq!(ids, vec![0, 1, 3, 7, 9, 8, 2]);
        let mut empty: Vec<C> = Vec::new();
        rank_candidates("x", &mut empty);
    }

    proptest! {
        #[test]
        fn lemma_idempotent(s in "\\PC{0,40}") {
            let once = lemma(&s);
            prop_assert_eq!(lemma(&once), once.clone());
        }

        #[test]
        fn lemma_idempotent_latin(s in "[ A-Za-z'\\-.,À-ſ]{0,30}") {
            let once = lemma(&s);
            prop_assert_eq!(lemma(&once), once.clone());
        }

        #[test]
        fn similarity_properties(a in "\\PC{0,20}", b in "\\PC{0,20}") {
            let ab = trigram_similarity(&a, &b);
            let ba = trigram_similarity(&b, &a);
            prop_assert_eq!(ab.to_bits(), ba.to_bits());
            prop_assert!((0.0..=1.0).contains(&ab));
            if !lemma(&a).is_empty() {
                prop_assert_eq!(trigram_similarity(&a, &lemma(&a)), 1.0);
            }
        }

        #[test]
        fn daitch_mokotoff_total(s in "\\PC{0,40}") {
            for code in daitch_mokotoff(&s) {
                prop_assert_eq!(code.len(), 6);
                prop_assert!(code.bytes().all(|b| b.is_ascii_digit()));
            }
        }

        #[test]
        fn rank_is_permutation(scores in proptest::collection::vec(0u8..4, 0..12)) {
            let mut cs: Vec<C> = scores
                .iter()
                .enumerate()
                .map(|(i, s)| C { score: f32::from(*s), name: "n", created: 0, id: i as u128 })
                .collect();
            rank_candidates("n", &mut cs);
            let mut ids: Vec<u128> = cs.iter().map(|c| c.id).collect();
            for w in cs.windows(2) {
                prop_assert!(w[0].score > w[1].score || (w[0].score == w[1].score && w[0].id < w[1].id));
            }
            ids.sort();
            prop_assert_eq!(ids, (0..scores.len() as u128).collect::<Vec<_>>());
        }
    }
}
