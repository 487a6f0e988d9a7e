//! The deterministic offline extractor: the default claim extractor when no
//! chat model is configured.
//!
//! It runs Selection over every target passage of a [`ContextBundle`] with
//! closed word lists (D34, D35), then writes one claim per kept passage,
//! decontextualized only in ways the grounding gates can verify (D32): the
//! speaker of a conversation turn is named, relative dates are resolved against
//! the anchor and written in ISO form (D41), and a bare affirmation answering
//! the previous turn's question becomes a claim citing both turns (D131).
//! Every claim it emits passes [`ground`](super::grounding::ground) on its own
//! bundle: each candidate text is checked against the bundle's union, falling
//! back to a more literal form when an addition would not be traceable.
//!
//! # Selection
//!
//! Per target passage, first match wins:
//!
//! 1. A heading → drop `meta`; a code block → drop `no_info` (nothing the
//!    offline extractor can state).
//! 2. A question (its final punctuation holds `?`, or it opens with an
//!    interrogative — `what`, `who`, `how`, `do`, `is`, … — and has no final
//!    `.` `!` `…`) → drop `question`.
//! 3. Filler (only greeting, thanks, acknowledgement and interjection words,
//!    optionally with a vocative name; or fewer than 3 words with no digit and
//!    no capitalized name), advice (opens with `you should`, `make sure`,
//!    `try to`, `don't forget`, `remember to`, `let's`, …), a hypothetical
//!    (opens with `if`, `what if`, `imagine`, `suppose`) or generic (no name,
//!    number, date or first person, and fewer than 6 words) → drop with that
//!    reason — unless the passage is protected (D35: a number, a date, a
//!    change-of-state verb, or — except for filler — a name in a passage of 3
//!    words or more), which makes it `keep_flagged`.
//! 4. `keep` when it has a name (a capitalized word not opening the sentence,
//!    not `I`, not a pronoun; or an opening capitalized word with a possessive,
//!    or an acronym), a number, a date, or — in a conversation turn — a first
//!    person (`I`, `my`, `we`, `our`, …); otherwise `keep_flagged`.
//!
//! Leading interjections of a turn sentence (`Yeah, `, `Oh, `, `Wow! `) are
//! left out of the claim text.
//!
//! # Claim text
//!
//! Relative dates are resolved against the passage's turn timestamp, else the
//! header's source time; only mentions whose window equals the claim's
//! validity (the first mention's, [`combined_validity`]) are rewritten, since
//! D32's exemption admits the ISO forms of the claim's own validity only.
//! For a conversation turn with speaker `S`, the first candidate whose
//! additions all pass layer 2 wins:
//!
//! 1. First-person singular without `we`/`our`/`us`: `I`/`me`/`myself` → `S`,
//!    `my`/`mine` → `S's`, `I'm` → `S is`, `I've` → `S has`, `I'd` → `S would`
//!    (`S had` before `been`), `I'll` → `S will`, `I am` → `S is`, `I have` →
//!    `S has`, `I do` → `S does`, `I don't` → `S doesn't`, `I haven't` →
//!    `S hasn't`; `I` before any other verb only when that verb does not
//!    change with the person (a past tense, a modal: `I painted`, `I can`).
//!    Otherwise this candidate does not apply (`I love it` would need `loves`).
//! 2. `S said: <sentence>`.
//! 3. The sentence with its dates resolved; 4. the passage verbatim.
//!
//! Passages outside turns use 3, then 4; a document sentence that opens with
//! `He`, `She`, `His`, `Her`, `It`, `Its`, `They` or `Their` first tries that
//! pronoun replaced by its antecedent: the nearest earlier passage of the same
//! section (at most three back) that names anything compatible decides, and only
//! when it names exactly one — a person's name (two or more words, not an
//! organisation's) for `he`/`she`, an organisation, place or one-word name for
//! `it`/`they` (`they` only where no person is named). `It` before a form of
//! *be*, a modal or a weather verb is taken as referring to nothing. Otherwise
//! the claim keeps the pronoun. `added_context` lists each inserted
//! substring exactly as it stands in the claim text (`Melanie`, `Melanie's`,
//! `Melanie is`, `has`, `Melanie said:`, `in 2022`), deduplicated.
//!
//! Validity kind: `state` when the sentence has a form of *be* or *have*
//! (`am is are was were has have`, `I'm`, `we're`, …) and no change-of-state
//! verb; otherwise `event`.
//!
//! # Question affirmation (D131)
//!
//! When the first sentence of a turn is a bare affirmation (`yes`, `yep`,
//! `yeah`, `yup`, `sure`, `exactly`, `right`, `definitely`, `absolutely`,
//! `correct`, `indeed`, `totally` first, at most 4 words, no negation or
//! hedge) and the immediately preceding turn, by another speaker, ends with a
//! question (a target passage or the last neighbour before the chunk), the
//! affirmation is kept and its claim is `Q asked "<question>" and A said
//! "<affirmation>"`, citing both passages. (The wording "A answered yes to …"
//! would add `answered` and `yes`, which D32's closed allowlist lacks; `asked`,
//! `and` and `said` are on it.) Without such a question a bare affirmation is
//! ordinary filler.

use super::grounding::Union;
use super::temporal::{TimeMention, combined_validity, find_time_mentions, iso_renderings};
use super::{
    ClaimDraft, ContextBundle, DropReason, Extraction, Passage, Selection, SelectionLabel,
    Validity, ValidityKind, Verdict,
};
use crate::time::Timestamp;
use std::borrow::Cow;
use std::sync::OnceLock;

/// The offline extractor's component version: bump it when its output changes.
pub const OFFLINE_EXTRACTOR_VERSION: &str = "offline-extractor-v3";

// ---------------------------------------------------------------------------
// Word lists (lowercase, `’` folded to `'`, sorted for binary search)
// ---------------------------------------------------------------------------

#[rustfmt::skip]
const FILLER: &[&str] = &[
    "afternoon", "ah", "amazing", "aw", "awesome", "aww", "bye", "care", "cheers", "congrats",
    "congratulations", "cool", "day", "evening", "fantastic", "for", "glad", "good", "goodbye",
    "great", "ha", "haha", "hahaha", "hear", "hello", "hey", "hi", "hmm", "hooray", "is", "later",
    "lol", "love", "morning", "much", "nice", "night", "oh", "ok", "okay", "omg", "see", "so",
    "sounds", "sure", "take", "thank", "thanks", "that", "that's", "thing", "this", "to", "too",
    "totally", "true", "uh", "um", "very", "welcome", "wonderful", "wow", "yay", "yeah", "yep",
    "you", "yup",
];

#[rustfmt::skip]
const LEAD_FILLER: &[&str] = &[
    "absolutely", "ah", "aw", "aww", "definitely", "haha", "hahaha", "hey", "hi", "hmm", "lol",
    "oh", "ok", "okay", "omg", "so", "sure", "uh", "um", "well", "wow", "yay", "yeah", "yep", "yes",
    "yup",
];

#[rustfmt::skip]
const AFFIRM: &[&str] = &[
    "absolutely", "correct", "definitely", "exactly", "indeed", "right", "sure", "totally", "yeah",
    "yep", "yes", "yup",
];

#[rustfmt::skip]
const HEDGE: &[&str] = &[
    "but", "didn't", "don't", "guess", "hmm", "idk", "isn't", "kinda", "maybe", "nah", "never",
    "no", "nope", "not", "perhaps", "probably", "sort", "think", "unsure", "wasn't", "well",
];

#[rustfmt::skip]
const INTERROGATIVES: &[&str] = &[
    "am", "are", "can", "could", "did", "do", "does", "has", "have", "how", "is", "shall",
    "should", "was", "were", "what", "when", "where", "which", "who", "whom", "whose", "why",
    "will", "would",
];

#[rustfmt::skip]
const CHANGE_VERBS: &[&str] = &[
    "adopted", "became", "bought", "closed", "died", "finished", "founded", "graduated", "hired",
    "joined", "launched", "left", "lost", "married", "moved", "opened", "quit", "retired", "sold",
    "started", "won",
];

#[rustfmt::skip]
const NUMBER_WORDS: &[&str] = &[
    "billion", "dozen", "eight", "eighth", "eleven", "fifth", "fifty", "first", "five", "forty",
    "four", "fourth", "hundred", "million", "nine", "ninth", "second", "seven", "seventh", "six",
    "sixth", "ten", "tenth", "third", "thirty", "thousand", "three", "twelve", "twenty", "two",
];

#[rustfmt::skip]
const TEMPORAL_WORDS: &[&str] = &[
    "ago", "april", "december", "february", "friday", "january", "july", "june", "monday",
    "november", "october", "saturday", "september", "sunday", "thursday", "today", "tomorrow",
    "tonight", "tuesday", "wednesday", "yesterday",
];

/// Month names that are also common words: dates only when capitalized.
const CAPITAL_MONTHS: &[&str] = &["august", "march", "may"];

#[rustfmt::skip]
const FP_SINGULAR: &[&str] = &["i", "i'd", "i'll", "i'm", "i've", "me", "mine", "my", "myself"];

#[rustfmt::skip]
const FP_PLURAL: &[&str] = &[
    "our", "ours", "ourselves", "us", "we", "we'd", "we'll", "we're", "we've",
];

#[rustfmt::skip]
const PRONOUNS: &[&str] = &[
    "he", "her", "him", "his", "i", "it", "its", "me", "my", "our", "she", "that", "their",
    "them", "these", "they", "this", "those", "us", "we", "you", "your",
];

#[rustfmt::skip]
const STATE_VERBS: &[&str] = &[
    "am", "are", "aren't", "has", "hasn't", "have", "haven't", "i'm", "i've", "is", "isn't",
    "they're", "was", "wasn't", "we're", "we've", "were", "weren't", "you're",
];

#[rustfmt::skip]
const ADVERBS: &[&str] = &[
    "actually", "already", "also", "always", "definitely", "even", "ever", "finally", "just",
    "literally", "never", "often", "once", "only", "probably", "really", "recently", "sometimes",
    "still", "then", "totally", "usually",
];

/// Verb forms that are the same for `I` and a named third person.
#[rustfmt::skip]
const NEUTRAL_VERBS: &[&str] = &[
    "ate", "began", "bought", "brought", "built", "came", "can", "can't", "cannot", "caught",
    "chose", "could", "couldn't", "did", "didn't", "drank", "drew", "drove", "fell", "felt",
    "flew", "forgot", "found", "gave", "got", "grew", "had", "hadn't", "heard", "held", "hid",
    "kept", "knew", "led", "left", "lost", "made", "may", "meant", "met", "might", "must",
    "paid", "ran", "rode", "sang", "sat", "saw", "sent", "shall", "shot", "should", "shouldn't",
    "slept", "sold", "spent", "spoke", "stood", "swam", "taught", "thought", "threw", "told",
    "took", "understood", "was", "wasn't", "went", "will", "woke", "won", "won't", "wore",
    "would", "wouldn't", "wrote",
];

/// Openers of advice, as word sequences.
const ADVICE: &[&[&str]] = &[
    &["you", "should"],
    &["you", "must"],
    &["you", "need", "to"],
    &["you", "have", "to"],
    &["you", "gotta"],
    &["make", "sure"],
    &["try", "to"],
    &["don't", "forget"],
    &["do", "not", "forget"],
    &["remember", "to"],
    &["let's"],
    &["let", "us"],
    &["be", "sure", "to"],
];

/// Openers of hypotheticals.
const HYPOTHETICAL: &[&[&str]] = &[
    &["if"],
    &["what", "if"],
    &["imagine"],
    &["suppose"],
    &["supposing"],
];

fn has(list: &[&str], key: &str) -> bool {
    list.binary_search(&key).is_ok()
}

// Word classes, as bit flags, so each word is looked up once.
const F_FILLER: u16 = 1;
const F_LEAD: u16 = 1 << 1;
const F_AFFIRM: u16 = 1 << 2;
const F_HEDGE: u16 = 1 << 3;
const F_INTERROGATIVE: u16 = 1 << 4;
const F_CHANGE: u16 = 1 << 5;
const F_NUMBER: u16 = 1 << 6;
const F_TEMPORAL: u16 = 1 << 7;
const F_CAPITAL_MONTH: u16 = 1 << 8;
const F_FP_SINGULAR: u16 = 1 << 9;
const F_FP_PLURAL: u16 = 1 << 10;
const F_PRONOUN: u16 = 1 << 11;
const F_STATE: u16 = 1 << 12;
const F_ADVERB: u16 = 1 << 13;
const F_NEUTRAL: u16 = 1 << 14;

const CLASSES: &[(&[&str], u16)] = &[
    (FILLER, F_FILLER),
    (LEAD_FILLER, F_LEAD),
    (AFFIRM, F_AFFIRM),
    (HEDGE, F_HEDGE),
    (INTERROGATIVES, F_INTERROGATIVE),
    (CHANGE_VERBS, F_CHANGE),
    (NUMBER_WORDS, F_NUMBER),
    (TEMPORAL_WORDS, F_TEMPORAL),
    (CAPITAL_MONTHS, F_CAPITAL_MONTH),
    (FP_SINGULAR, F_FP_SINGULAR),
    (FP_PLURAL, F_FP_PLURAL),
    (PRONOUNS, F_PRONOUN),
    (STATE_VERBS, F_STATE),
    (ADVERBS, F_ADVERB),
    (NEUTRAL_VERBS, F_NEUTRAL),
];

/// Every listed word with the union of its classes, sorted: built once.
fn lexicon() -> &'static [(&'static str, u16)] {
    static LEXICON: OnceLock<Vec<(&'static str, u16)>> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let mut all: Vec<(&'static str, u16)> = CLASSES
            .iter()
            .flat_map(|(list, flag)| list.iter().map(move |w| (*w, *flag)))
            .collect();
        all.sort_unstable();
        let mut merged: Vec<(&'static str, u16)> = Vec::with_capacity(all.len());
        for (w, f) in all {
            match merged.last_mut() {
                Some(last) if last.0 == w => last.1 |= f,
                _ => merged.push((w, f)),
            }
        }
        merged
    })
}

/// The classes of a word key.
fn flags_of(key: &str) -> u16 {
    let lex = lexicon();
    lex.binary_search_by(|(w, _)| (*w).cmp(key))
        .map_or(0, |i| lex[i].1)
}

// ---------------------------------------------------------------------------
// Analysis of one sentence
// ---------------------------------------------------------------------------

fn is_apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// Word spans: alphanumeric runs, joined across an apostrophe between letters.
fn word_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut prev = ' ';
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c.is_alphanumeric() {
            if start.is_none() {
                start = Some(i);
            }
        } else if let Some(s) = start {
            let joins = is_apostrophe(c)
                && prev.is_alphabetic()
                && it.peek().is_some_and(|(_, n)| n.is_alphabetic());
            if !joins {
                out.push((s, i));
                start = None;
            }
        }
        prev = c;
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// The word's key: lowercase, `’` folded to `'`; borrowed when already so.
fn key_of(word: &str) -> Cow<'_, str> {
    if word
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        return Cow::Borrowed(word);
    }
    let mut k = String::with_capacity(word.len());
    for c in word.chars() {
        if c == '\u{2019}' {
            k.push('\'');
        } else if c.is_ascii() {
            k.push(c.to_ascii_lowercase());
        } else {
            k.extend(c.to_lowercase());
        }
    }
    Cow::Owned(k)
}

struct Analysis<'a> {
    text: &'a str,
    words: Vec<(usize, usize)>,
    keys: Vec<Cow<'a, str>>,
    flags: Vec<u16>,
}

impl<'a> Analysis<'a> {
    fn new(text: &'a str) -> Self {
        let words = word_spans(text);
        let keys: Vec<Cow<'a, str>> = words.iter().map(|&(a, b)| key_of(&text[a..b])).collect();
        let flags = keys.iter().map(|k| flags_of(k)).collect();
        Analysis {
            text,
            words,
            keys,
            flags,
        }
    }

    fn n(&self) -> usize {
        self.words.len()
    }

    fn word(&self, i: usize) -> &'a str {
        let (a, b) = self.words[i];
        &self.text[a..b]
    }

    fn any(&self, flag: u16) -> bool {
        self.flags.iter().any(|f| f & flag != 0)
    }

    fn is(&self, i: usize, flag: u16) -> bool {
        self.flags.get(i).is_some_and(|f| f & flag != 0)
    }

    fn capitalized(&self, i: usize) -> bool {
        self.word(i).chars().next().is_some_and(char::is_uppercase)
    }

    /// The last non-space character before word `i`.
    fn before(&self, i: usize) -> Option<char> {
        self.text[..self.words[i].0]
            .chars()
            .rev()
            .find(|c| !c.is_whitespace())
    }

    fn is_acronym(&self, i: usize) -> bool {
        let w = self.word(i);
        w.chars().count() >= 2 && w.chars().all(|c| c.is_uppercase() || c.is_ascii_digit())
    }

    /// A capitalized word that is not `I`, a pronoun or a filler word.
    fn capitalized_name(&self, i: usize) -> bool {
        self.capitalized(i) && !self.is(i, F_PRONOUN | F_FILLER | F_FP_SINGULAR | F_FP_PLURAL)
    }

    fn is_name(&self, i: usize) -> bool {
        if !self.capitalized_name(i) {
            return false;
        }
        if i == 0 {
            let rest = &self.text[self.words[0].1..];
            let possessive = {
                let mut c = rest.chars();
                matches!((c.next(), c.next()), (Some(a), Some('s')) if is_apostrophe(a))
            };
            return possessive || self.is_acronym(0);
        }
        // A capital after sentence punctuation or an opening quote starts a sentence.
        !matches!(
            self.before(i),
            Some('.' | '!' | '?' | '\u{2026}' | '"' | '\u{201C}' | '(' | ':')
        )
    }

    fn has_name(&self) -> bool {
        (0..self.n()).any(|i| self.is_name(i))
    }

    fn has_digit(&self) -> bool {
        self.text.chars().any(|c| c.is_ascii_digit())
    }

    fn has_number(&self) -> bool {
        self.has_digit() || self.any(F_NUMBER)
    }

    fn has_temporal_word(&self) -> bool {
        (0..self.n())
            .any(|i| self.is(i, F_TEMPORAL) || (self.is(i, F_CAPITAL_MONTH) && self.capitalized(i)))
    }

    fn fp_singular(&self) -> bool {
        self.any(F_FP_SINGULAR)
    }

    fn fp_plural(&self) -> bool {
        (0..self.n()).any(|i| self.is(i, F_FP_PLURAL) && self.word(i) != "US")
    }

    fn change_of_state(&self) -> bool {
        self.any(F_CHANGE)
    }

    /// The characters after the last alphanumeric one.
    fn tail(&self) -> &'a str {
        let end = self
            .text
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_alphanumeric())
            .map_or(0, |(i, c)| i + c.len_utf8());
        &self.text[end..]
    }

    fn is_question(&self) -> bool {
        let tail = self.tail();
        tail.contains('?')
            || (self.is(0, F_INTERROGATIVE) && !tail.contains(['.', '!', '\u{2026}']))
    }

    /// Index of the first word after leading interjections.
    fn after_lead(&self) -> usize {
        let mut i = 0;
        while i < self.n() && self.is(i, F_LEAD) {
            i += 1;
        }
        if i == self.n() { 0 } else { i }
    }

    fn opens_with(&self, seqs: &[&[&str]]) -> bool {
        let start = self.after_lead();
        seqs.iter().any(|seq| {
            seq.len() <= self.n() - start
                && seq.iter().zip(&self.keys[start..]).all(|(s, k)| *s == &**k)
        })
    }

    fn is_filler(&self) -> bool {
        if self.n() == 0 {
            return true;
        }
        let all_filler = self.any(F_FILLER)
            && (0..self.n()).all(|i| self.is(i, F_FILLER) || (i > 0 && self.capitalized(i)));
        let short =
            self.n() < 3 && !self.has_digit() && !(0..self.n()).any(|i| self.capitalized_name(i));
        all_filler || short
    }

    fn is_bare_affirmation(&self) -> bool {
        self.is(0, F_AFFIRM)
            && self.n() <= 4
            && !self.any(F_HEDGE)
            && !self.is_question()
            && !self.has_number()
            && !self.change_of_state()
            && !(1..self.n()).any(|i| self.is_name(i))
    }

    fn kind(&self) -> ValidityKind {
        if self.any(F_STATE) && !self.change_of_state() {
            ValidityKind::State
        } else {
            ValidityKind::Event
        }
    }
}

fn is_heading(text: &str) -> bool {
    let hashes = text.bytes().take_while(|b| *b == b'#').count();
    if (1..=6).contains(&hashes)
        && text[hashes..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
    {
        return true;
    }
    text.contains('\n')
        && text.lines().last().is_some_and(|l| {
            let l = l.trim();
            !l.is_empty() && (l.bytes().all(|b| b == b'=') || l.bytes().all(|b| b == b'-'))
        })
}

fn is_code(text: &str) -> bool {
    text.starts_with("```") || text.starts_with("~~~")
}

/// The heading's text without its Markdown markers.
fn heading_text(text: &str) -> &str {
    if text.starts_with('#') {
        text.trim_start_matches('#').trim_end_matches('#').trim()
    } else {
        text.lines().next().unwrap_or("").trim()
    }
}

// ---------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------

fn select(a: &Analysis<'_>, in_turn: bool, has_date: bool) -> (SelectionLabel, Option<DropReason>) {
    if !in_turn && is_code(a.text) {
        return (SelectionLabel::Drop, Some(DropReason::NoInfo));
    }
    if !in_turn && is_heading(a.text) {
        return if a.change_of_state() {
            (SelectionLabel::KeepFlagged, None)
        } else {
            (SelectionLabel::Drop, Some(DropReason::Meta))
        };
    }
    if a.is_question() {
        return (SelectionLabel::Drop, Some(DropReason::Question));
    }
    let has_name = a.has_name();
    let has_number = a.has_number();
    let first_person = a.fp_singular() || a.fp_plural();
    let protected = has_number || has_date || a.change_of_state();
    let drop = if a.is_filler() {
        Some((DropReason::Filler, protected))
    } else if a.opens_with(ADVICE) {
        Some((DropReason::Advice, protected || (has_name && a.n() >= 3)))
    } else if a.opens_with(HYPOTHETICAL) {
        Some((
            DropReason::Hypothetical,
            protected || (has_name && a.n() >= 3),
        ))
    } else if !has_name && !has_number && !has_date && !first_person && a.n() < 6 {
        Some((DropReason::Generic, protected))
    } else {
        None
    };
    match drop {
        Some((_, true)) => (SelectionLabel::KeepFlagged, None),
        Some((reason, false)) => (SelectionLabel::Drop, Some(reason)),
        None if has_name || has_number || has_date || (in_turn && first_person) => {
            (SelectionLabel::Keep, None)
        }
        None => (SelectionLabel::KeepFlagged, None),
    }
}

// ---------------------------------------------------------------------------
// Claim text
// ---------------------------------------------------------------------------

/// Claim text under construction, recording where additions were inserted.
#[derive(Default)]
struct Builder {
    out: String,
    adds: Vec<(usize, usize)>,
}

impl Builder {
    fn src(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn add(&mut self, s: &str) {
        let start = self.out.len();
        self.out.push_str(s);
        if !s.trim().is_empty() {
            self.adds.push((start, self.out.len()));
        }
    }

    /// `text` with the given mentions (ordered, from `find_time_mentions(text)`) resolved.
    fn resolved(&mut self, text: &str, mentions: &[&TimeMention]) {
        let mut at = 0;
        for m in mentions {
            let (Some(gap), true) = (text.get(at..m.start), text.get(m.start..m.end).is_some())
            else {
                continue;
            };
            self.src(gap);
            self.add(&m.phrase);
            at = m.end;
        }
        self.src(text.get(at..).unwrap_or(""));
    }

    /// The text (first letter capitalized if `capitalize` and ASCII) and the
    /// additions as they stand in it, trimmed and deduplicated.
    fn finish(mut self, capitalize: bool) -> (String, Vec<String>) {
        if capitalize
            && self
                .out
                .as_bytes()
                .first()
                .is_some_and(u8::is_ascii_lowercase)
        {
            let upper = self.out[..1].to_ascii_uppercase();
            self.out.replace_range(..1, &upper);
        }
        let mut adds: Vec<String> = Vec::with_capacity(self.adds.len());
        for (s, e) in self.adds {
            let a = self.out.get(s..e).unwrap_or("").trim();
            if !a.is_empty() && !adds.iter().any(|x| x == a) {
                adds.push(a.to_string());
            }
        }
        (self.out, adds)
    }
}

fn same_window(a: &Validity, b: &Validity) -> bool {
    a.from == b.from && a.until == b.until && a.precision == b.precision
}

/// The relative mentions to rewrite: those whose window is the claim's own.
fn chosen<'m>(mentions: &'m [TimeMention], validity: &Validity) -> Vec<&'m TimeMention> {
    mentions
        .iter()
        .filter(|m| m.relative && same_window(&m.validity, validity))
        .collect()
}

/// `text` without leading interjections (`Yeah, `, `Oh! `); `text` if nothing would remain.
fn strip_lead(text: &str) -> &str {
    let mut rest = text;
    loop {
        let Some((a, b)) = word_spans(rest).first().copied() else {
            return rest;
        };
        if a != 0 || !has(LEAD_FILLER, &key_of(&rest[a..b])) {
            return rest;
        }
        let after = &rest[b..];
        let Some(p) = after
            .chars()
            .next()
            .filter(|c| matches!(c, ',' | '!' | '.' | '\u{2026}'))
        else {
            return rest;
        };
        let next = after[p.len_utf8()..].trim_start_matches(|c: char| {
            c.is_whitespace() || matches!(c, ',' | '!' | '.' | '\u{2026}')
        });
        if word_spans(next).is_empty() {
            return rest;
        }
        rest = next;
    }
}

/// One edit of the first-person rewrite: replace `start..end` with `with`.
struct Edit {
    start: usize,
    end: usize,
    with: String,
}

/// The next verb index after word `i`, skipping adverbs.
fn next_verb(a: &Analysis<'_>, i: usize) -> Option<usize> {
    (i + 1..a.n()).find(|&j| !a.is(j, F_ADVERB))
}

fn is_neutral_verb(a: &Analysis<'_>, j: usize) -> bool {
    let k = &a.keys[j];
    a.is(j, F_NEUTRAL) || (k.len() > 3 && k.ends_with("ed"))
}

/// The first-person singular rewrite edits of `a`, or `None` when an `I`
/// cannot be rewritten without changing a verb the gate cannot verify.
fn first_person_edits(a: &Analysis<'_>, speaker: &str, skip: &[&TimeMention]) -> Option<Vec<Edit>> {
    let inside = |i: usize| {
        let (s, e) = a.words[i];
        skip.iter().any(|m| s < m.end && e > m.start)
    };
    let mut edits: Vec<Edit> = Vec::new();
    let mut replaced_verb: Option<usize> = None;
    let possessive = format!("{speaker}'s");
    for i in 0..a.n() {
        if inside(i) || replaced_verb == Some(i) {
            continue;
        }
        let (s, e) = a.words[i];
        let with = match &*a.keys[i] {
            "i" => {
                let verb = next_verb(a, i);
                let new_verb = verb.and_then(|j| match &*a.keys[j] {
                    "am" => Some("is"),
                    "have" => Some("has"),
                    "do" => Some("does"),
                    "don't" => Some("doesn't"),
                    "haven't" => Some("hasn't"),
                    _ => None,
                });
                match (verb, new_verb) {
                    (Some(j), Some(v)) => {
                        if inside(j) {
                            return None;
                        }
                        let (vs, ve) = a.words[j];
                        edits.push(Edit {
                            start: s,
                            end: e,
                            with: speaker.to_string(),
                        });
                        edits.push(Edit {
                            start: vs,
                            end: ve,
                            with: v.to_string(),
                        });
                        replaced_verb = Some(j);
                        continue;
                    }
                    (Some(j), None) if is_neutral_verb(a, j) => speaker.to_string(),
                    _ => return None,
                }
            }
            "i'm" => format!("{speaker} is"),
            "i've" => format!("{speaker} has"),
            "i'll" => format!("{speaker} will"),
            "i'd" => {
                if a.keys.get(i + 1).is_some_and(|k| k == "been") {
                    format!("{speaker} had")
                } else {
                    format!("{speaker} would")
                }
            }
            "me" | "myself" => speaker.to_string(),
            "my" | "mine" => possessive.clone(),
            _ => continue,
        };
        edits.push(Edit {
            start: s,
            end: e,
            with,
        });
    }
    Some(edits)
}

/// The candidate texts of a passage, best first.
struct Candidate {
    text: String,
    adds: Vec<String>,
}

fn rewrite_candidate(
    a: &Analysis<'_>,
    mentions: &[&TimeMention],
    speaker: &str,
) -> Option<Candidate> {
    let body = a.text;
    if !a.fp_singular() || a.fp_plural() {
        return None;
    }
    let edits = first_person_edits(a, speaker, mentions)?;
    // Merge date and pronoun edits in order.
    let mut all: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| (e.start, e.end, e.with.as_str()))
        .chain(mentions.iter().map(|m| (m.start, m.end, m.phrase.as_str())))
        .collect();
    all.sort_by_key(|e| e.0);
    let mut b = Builder::default();
    let mut at = 0;
    for (s, e, with) in all {
        let Some(gap) = body.get(at..s) else { continue };
        b.src(gap);
        b.add(with);
        at = e;
    }
    b.src(body.get(at..).unwrap_or(""));
    let (text, adds) = b.finish(true);
    Some(Candidate { text, adds })
}

fn said_candidate(body: &str, mentions: &[&TimeMention], speaker: &str) -> Candidate {
    let mut b = Builder::default();
    b.add(&format!("{speaker} said: "));
    b.resolved(body, mentions);
    let (text, adds) = b.finish(false);
    Candidate { text, adds }
}

fn resolved_candidate(body: &str, mentions: &[&TimeMention]) -> Candidate {
    let mut b = Builder::default();
    b.resolved(body, mentions);
    let (text, adds) = b.finish(true);
    Candidate { text, adds }
}

fn passes(union: &Union, c: &Candidate, renderings: &[String]) -> bool {
    !c.text.trim().is_empty()
        && c.adds
            .iter()
            .all(|a| union.failed_tokens_except(a, renderings).is_empty())
}

fn draft(text: String, passages: Vec<String>, adds: Vec<String>, validity: Validity) -> ClaimDraft {
    ClaimDraft {
        text,
        passages,
        added_context: adds,
        validity,
        verdict: Verdict::Entailed,
    }
}

fn speaker_of(p: &Passage) -> Option<&str> {
    p.turn
        .as_ref()
        .map(|t| t.speaker.trim())
        .filter(|s| !s.is_empty())
}

/// Whether `mention` follows "since" (or "ever since"): the window it opens has no
/// known end.
fn opens_window(body: &str, mention: &TimeMention) -> bool {
    let before = body.get(..mention.start).unwrap_or("").trim_end();
    let word = before
        .rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    word.eq_ignore_ascii_case("since")
}

// ---------------------------------------------------------------------------
// Third-person pronouns in documents
// ---------------------------------------------------------------------------

/// What a sentence-initial pronoun can refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Referent {
    /// `He`, `She`, `His`, `Her`: a person's name (two or more words, not an
    /// organisation's).
    Person,
    /// `It`, `Its`: an organisation, a place or a thing (an institutional name,
    /// or a one-word name).
    Thing,
    /// `They`, `Their`: a thing as for `it`, where no person is named.
    Group,
}

/// The pronouns resolved: (lowercase word, referent, possessive).
const THIRD_PERSON: &[(&str, Referent, bool)] = &[
    ("he", Referent::Person, false),
    ("she", Referent::Person, false),
    ("his", Referent::Person, true),
    ("her", Referent::Person, true),
    ("it", Referent::Thing, false),
    ("its", Referent::Thing, true),
    ("they", Referent::Group, false),
    ("their", Referent::Group, true),
];

/// Words after which a sentence-initial `It` refers to nothing (`It is raining`,
/// `It seems that …`).
const EXPLETIVE_NEXT: &[&str] = &[
    "is", "was", "seems", "seemed", "appears", "appeared", "looks", "looked", "feels", "felt",
    "sounds", "rains", "rained", "snows", "snowed", "takes", "took", "makes", "made", "turns",
    "turned", "would", "will", "might", "may", "could", "should", "can", "must", "has", "had",
];

/// Time and sequence adverbs that may stand before a sentence's subject
/// (`Previously she lived in Lyon.`): the pronoun after one is still the subject.
const LEADING_ADVERBS: &[&str] = &[
    "previously",
    "formerly",
    "earlier",
    "later",
    "then",
    "afterwards",
    "afterward",
    "eventually",
    "finally",
    "meanwhile",
    "now",
    "today",
    "currently",
    "recently",
    "still",
    "also",
];

/// A sentence-initial third-person pronoun of `text`, or one right after a leading
/// time adverb: its byte range, what it can refer to and whether it is possessive.
/// A contraction (`She's`) is none.
fn leading_pronoun(text: &str) -> Option<(usize, usize, Referent, bool)> {
    let spans = word_spans(text);
    let &(a0, b0) = spans.first()?;
    if !text[..a0]
        .chars()
        .all(|c| c.is_whitespace() || matches!(c, '"' | '\u{201C}' | '(' | '*' | '-'))
    {
        return None;
    }
    let adverb = LEADING_ADVERBS.contains(&text[a0..b0].to_lowercase().as_str())
        && text[a0..b0].starts_with(char::is_uppercase);
    let (a, b) = match spans.get(1) {
        Some(&(a1, b1))
            if adverb && text[b0..a1].chars().all(|c| c.is_whitespace() || c == ',') =>
        {
            (a1, b1)
        }
        _ => (a0, b0),
    };
    let word = &text[a..b];
    if (a == a0 && !word.chars().next().is_some_and(char::is_uppercase))
        || (a != a0 && !word.chars().all(char::is_lowercase))
        || word.contains(is_apostrophe)
        || text[b..].starts_with(is_apostrophe)
    {
        return None;
    }
    let key = word.to_lowercase();
    let &(_, referent, possessive) = THIRD_PERSON.iter().find(|(w, _, _)| *w == key)?;
    if key == "it" {
        let next = word_spans(&text[b..])
            .first()
            .map(|&(x, y)| text[b + x..b + y].to_lowercase());
        if next.is_none_or(|n| EXPLETIVE_NEXT.contains(&n.as_str())) {
            return None;
        }
    }
    Some((a, b, referent, possessive))
}

/// Whether a claim opens with a third-person pronoun (one the extractor would
/// have resolved had exactly one antecedent fitted): the claim needs its source's
/// context to be read.
pub fn needs_context(text: &str) -> bool {
    leading_pronoun(text).is_some()
}

/// What a leading pronoun resolves to.
#[derive(Debug, PartialEq)]
enum Antecedent {
    /// Exactly one compatible name in the nearest passage that names any.
    Name(String),
    /// None or several: the claim keeps the pronoun.
    Unresolved,
}

/// The antecedent of a leading pronoun of `referent` kind in the passage before
/// target `k`: the nearest earlier passage of the same section (at most three
/// back; a heading ends the search) that holds a compatible name decides. A
/// passage that itself opens with a pronoun of the same kind continues the same
/// referent and is passed over (`Nadia Petrescu finished … She joined Tidewell
/// Energy … Her team …`: `Her` is Nadia's). In the deciding passage, one compatible
/// name is the antecedent; of several, the one that opens the passage (its
/// subject) is; otherwise there is none. `They` also needs no person named there.
fn antecedent(bundle: &ContextBundle, k: usize, referent: Referent) -> Antecedent {
    let earlier = bundle.target[..k]
        .iter()
        .rev()
        .chain(bundle.before.iter().rev())
        .take(3);
    for p in earlier {
        if p.turn.is_some() || is_heading(&p.text) {
            break;
        }
        if leading_pronoun(&p.text).is_some_and(|(_, _, r, _)| r == referent) {
            continue;
        }
        let mut people: Vec<(usize, &str)> = Vec::new();
        let mut things: Vec<(usize, &str)> = Vec::new();
        for (s, e) in crate::facts::offline::names_in(&p.text) {
            let name = &p.text[s..e];
            let words = word_spans(name).len();
            let list = if !crate::facts::offline::is_institutional(name) && words >= 2 {
                &mut people
            } else {
                &mut things
            };
            if !list.iter().any(|(_, n)| n.eq_ignore_ascii_case(name)) {
                list.push((s, name));
            }
        }
        let compatible = match referent {
            Referent::Person => &people,
            Referent::Thing | Referent::Group => &things,
        };
        if compatible.is_empty() {
            continue;
        }
        if referent == Referent::Group && !people.is_empty() {
            return Antecedent::Unresolved;
        }
        let opens = |at: usize| {
            word_spans(&p.text)
                .first()
                .is_some_and(|&(first, _)| first == at)
        };
        return match compatible.as_slice() {
            [(_, one)] => Antecedent::Name((*one).to_string()),
            [(at, subject), ..] if opens(*at) => Antecedent::Name((*subject).to_string()),
            _ => Antecedent::Unresolved,
        };
    }
    Antecedent::Unresolved
}

/// The claim text with a leading pronoun at `a..b` replaced by `name` (`S's` for
/// a possessive) and its dates resolved.
fn pronoun_candidate(
    body: &str,
    mentions: &[&TimeMention],
    (a, b): (usize, usize),
    name: &str,
    possessive: bool,
) -> Candidate {
    let mut bld = Builder::default();
    bld.src(&body[..a]);
    if possessive {
        bld.add(&format!("{name}'s"));
    } else {
        bld.add(name);
    }
    let rest = &body[b..];
    let shifted: Vec<TimeMention> = mentions
        .iter()
        .filter(|m| m.start >= b)
        .map(|m| TimeMention {
            start: m.start - b,
            end: m.end - b,
            ..(*m).clone()
        })
        .collect();
    let refs: Vec<&TimeMention> = shifted.iter().collect();
    bld.resolved(rest, &refs);
    let (text, adds) = bld.finish(false);
    Candidate { text, adds }
}

/// The claim for one kept passage.
fn passage_claim(
    union: &Union,
    p: &Passage,
    anchor: Option<Timestamp>,
    pronoun: Option<(usize, usize, String, bool)>,
) -> ClaimDraft {
    let speaker = speaker_of(p);
    let in_turn = speaker.is_some();
    let source = if !in_turn && is_heading(&p.text) {
        heading_text(&p.text)
    } else {
        &p.text
    };
    let body = if in_turn { strip_lead(source) } else { source };
    let mentions = find_time_mentions(body, anchor);
    let mut validity = combined_validity(&mentions);
    if let Some(first) = mentions.first()
        && opens_window(body, first)
    {
        // "since March 2024": the state starts then and has no known end.
        validity.until = None;
        validity.precision = super::Precision::Open;
    }
    let analysis = Analysis::new(body);
    validity.kind = analysis.kind();
    let picked = chosen(&mentions, &validity);
    let mut candidates: Vec<Candidate> = Vec::with_capacity(4);
    if let Some(s) = speaker {
        if let Some(c) = rewrite_candidate(&analysis, &picked, s) {
            candidates.push(c);
        }
        candidates.push(said_candidate(body, &picked, s));
    }
    if let Some((a, b, name, possessive)) = &pronoun
        && speaker.is_none()
    {
        candidates.push(pronoun_candidate(
            body,
            &picked,
            (*a, *b),
            name,
            *possessive,
        ));
    }
    candidates.push(resolved_candidate(body, &picked));
    let renderings = iso_renderings(&validity);
    let chosen_one = candidates
        .into_iter()
        .find(|c| passes(union, c, &renderings))
        .unwrap_or(Candidate {
            text: p.text.clone(),
            adds: Vec::new(),
        });
    draft(
        chosen_one.text,
        vec![p.label.clone()],
        chosen_one.adds,
        validity,
    )
}

/// The question a bare affirmation at target `k` answers: (label, question
/// sentence, asker, anchor).
fn preceding_question<'b>(
    bundle: &'b ContextBundle,
    k: usize,
    turns: &[usize],
) -> Option<(&'b str, &'b str, &'b str, Option<Timestamp>)> {
    let answerer = speaker_of(&bundle.target[k])?;
    let anchor_of = |p: &Passage| {
        p.turn
            .as_ref()
            .and_then(|t| t.timestamp)
            .or(bundle.header.source_time)
    };
    if turns[k] > 0 {
        // The previous turn is in the target: its last passage.
        let prev = bundle.target[..k].last()?;
        let asker = speaker_of(prev)?;
        if asker == answerer || !Analysis::new(&prev.text).is_question() {
            return None;
        }
        return Some((&prev.label, &prev.text, asker, anchor_of(prev)));
    }
    let prev = bundle.before.last()?;
    let asker = speaker_of(prev)?;
    if asker == answerer {
        return None;
    }
    let text = prev
        .text
        .strip_prefix(asker)
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or(&prev.text);
    let (a, b) = *super::bundle::sentences(text).last()?;
    let question = &text[a..b];
    if !Analysis::new(question).is_question() {
        return None;
    }
    Some((&prev.label, question, asker, anchor_of(prev)))
}

/// The D131 claim for the bare affirmation at target `k`, if it grounds.
fn affirmation_claim(
    bundle: &ContextBundle,
    union: &Union,
    k: usize,
    turns: &[usize],
    anchor: Option<Timestamp>,
) -> Option<ClaimDraft> {
    let p = &bundle.target[k];
    let answerer = speaker_of(p)?;
    let (q_label, question, asker, q_anchor) = preceding_question(bundle, k, turns)?;
    let q_mentions = find_time_mentions(question, q_anchor);
    let a_mentions = find_time_mentions(&p.text, anchor);
    let validity = combined_validity(
        &q_mentions
            .iter()
            .chain(&a_mentions)
            .take(1)
            .cloned()
            .collect::<Vec<_>>(),
    );
    let mut b = Builder::default();
    b.add(&format!("{asker} asked \""));
    b.resolved(question, &chosen(&q_mentions, &validity));
    b.add(&format!("\" and {answerer} said \""));
    b.resolved(&p.text, &chosen(&a_mentions, &validity));
    b.add("\"");
    let (text, adds) = b.finish(false);
    let c = Candidate { text, adds };
    if !passes(union, &c, &iso_renderings(&validity)) {
        return None;
    }
    let mut passages = vec![q_label.to_string(), p.label.clone()];
    if passages[0] == passages[1] {
        passages.pop();
    }
    Some(draft(c.text, passages, c.adds, validity))
}

/// The start of the target chunk in `document.md`, recovered from the passages.
fn target_base(bundle: &ContextBundle) -> Option<usize> {
    let first = bundle.target.first()?;
    bundle
        .target_text
        .match_indices(first.text.as_str())
        .take(8)
        .filter_map(|(i, _)| first.start.checked_sub(i))
        .find(|&base| {
            bundle.target.iter().all(|p| {
                p.start >= base
                    && bundle
                        .target_text
                        .get(p.start - base..p.end.saturating_sub(base))
                        == Some(p.text.as_str())
            })
        })
}

/// A turn index per target passage: a new turn starts when the turn metadata
/// changes or non-whitespace text (a `Speaker:` label) separates two passages.
fn turn_ids(bundle: &ContextBundle) -> Vec<usize> {
    let base = target_base(bundle);
    let mut ids = Vec::with_capacity(bundle.target.len());
    let mut id = 0;
    for (k, p) in bundle.target.iter().enumerate() {
        if k > 0 {
            let prev = &bundle.target[k - 1];
            let gap_has_text = base.is_some_and(|base| {
                bundle
                    .target_text
                    .get(prev.end.saturating_sub(base)..p.start.saturating_sub(base))
                    .is_some_and(|g| g.chars().any(|c| !c.is_whitespace()))
            });
            if prev.turn != p.turn || gap_has_text {
                id += 1;
            }
        }
        ids.push(id);
    }
    ids
}

/// Run Selection and claim writing over `bundle` (see the module docs).
/// Deterministic; one [`Selection`] per target passage, one claim per kept
/// passage, every claim passing the grounding gates on `bundle`.
pub fn extract(bundle: &ContextBundle) -> Extraction {
    let union = Union::from_bundle(bundle);
    let turns = turn_ids(bundle);
    let mut out = Extraction {
        selections: Vec::with_capacity(bundle.target.len()),
        claims: Vec::new(),
    };
    for (k, p) in bundle.target.iter().enumerate() {
        let anchor = p
            .turn
            .as_ref()
            .and_then(|t| t.timestamp)
            .or(bundle.header.source_time);
        let in_turn = speaker_of(p).is_some();
        let a = Analysis::new(&p.text);
        let first_in_turn = k == 0 || turns[k] != turns[k - 1];
        if in_turn
            && first_in_turn
            && a.is_bare_affirmation()
            && let Some(claim) = affirmation_claim(bundle, &union, k, &turns, anchor)
        {
            out.selections.push(Selection {
                passage: p.label.clone(),
                label: SelectionLabel::Keep,
                reason: None,
            });
            out.claims.push(claim);
            continue;
        }
        let has_date = a.has_temporal_word() || !find_time_mentions(&p.text, anchor).is_empty();
        let (label, reason) = select(&a, in_turn, has_date);
        out.selections.push(Selection {
            passage: p.label.clone(),
            label,
            reason,
        });
        if label != SelectionLabel::Drop {
            // A document sentence opening with he/she/it/they (not a turn: a
            // conversation's pronouns are its speakers').
            let pronoun = (!in_turn && !bundle.is_conversation)
                .then(|| leading_pronoun(&p.text))
                .flatten()
                .and_then(
                    |(a, b, referent, possessive)| match antecedent(bundle, k, referent) {
                        Antecedent::Name(n) => Some((a, b, n, possessive)),
                        Antecedent::Unresolved => None,
                    },
                );
            out.claims.push(passage_claim(&union, p, anchor, pronoun));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::bundle::tests::{chunks_of, conversation, header};
    use crate::claims::bundle::{ChunkSpan, build_bundle};
    use crate::claims::grounding::ground;
    use crate::claims::{DocumentHeader, Precision};
    use crate::text::{Block, BlockKind};
    use crate::time::parse_rfc3339;
    use proptest::prelude::*;

    fn ts(s: &str) -> Timestamp {
        parse_rfc3339(s).unwrap()
    }

    const MONDAY: &str = "2023-05-08T10:00:00Z";

    #[test]
    fn lists_are_sorted_and_lowercase() {
        for list in [
            FILLER,
            LEAD_FILLER,
            AFFIRM,
            HEDGE,
            INTERROGATIVES,
            CHANGE_VERBS,
            NUMBER_WORDS,
            TEMPORAL_WORDS,
            CAPITAL_MONTHS,
            FP_SINGULAR,
            FP_PLURAL,
            PRONOUNS,
            STATE_VERBS,
            ADVERBS,
            NEUTRAL_VERBS,
        ] {
            for w in list.windows(2) {
                assert!(w[0] < w[1], "{} !< {}", w[0], w[1]);
            }
            for w in list {
                assert_eq!(*w, w.to_lowercase());
            }
        }
    }

    /// Extract from a conversation, chunked `per` turns, and ground every claim.
    fn run(
        turns: &[(&str, &str)],
        time: Option<Timestamp>,
        per: usize,
    ) -> Vec<(ContextBundle, Extraction)> {
        let (md, blocks) = conversation(turns, time);
        let chunks = chunks_of(&blocks, per);
        (0..chunks.len())
            .map(|i| {
                let b = build_bundle(&md, &blocks, &chunks, i, header(time), vec![], 1);
                let x = extract(&b);
                assert_grounded(&md, &b, &x);
                (b, x)
            })
            .collect()
    }

    fn assert_grounded(md: &str, b: &ContextBundle, x: &Extraction) {
        assert_eq!(x.selections.len(), b.target.len());
        let kept = x
            .selections
            .iter()
            .filter(|s| s.label != SelectionLabel::Drop)
            .count();
        assert_eq!(x.claims.len(), kept);
        for s in &x.selections {
            assert_eq!(s.reason.is_some(), s.label == SelectionLabel::Drop);
        }
        for c in &x.claims {
            if let Err(e) = ground(b, md, c) {
                panic!("claim {:?} failed: {e:?}", c.text);
            }
            for a in &c.added_context {
                assert!(c.text.contains(a.as_str()), "{a:?} not in {:?}", c.text);
            }
        }
    }

    /// One passage's selection and claim text, alone in its turn.
    fn one(speaker: &str, text: &str) -> (Selection, Option<ClaimDraft>) {
        let mut v = run(&[(speaker, text)], Some(ts(MONDAY)), 1);
        let (b, x) = v.remove(0);
        assert_eq!(b.target.len(), 1, "{text:?} is one sentence");
        (x.selections[0].clone(), x.claims.first().cloned())
    }

    #[test]
    fn selection_table() {
        use DropReason::*;
        use SelectionLabel::*;
        let cases: &[(&str, SelectionLabel, Option<DropReason>)] = &[
            ("How are you?", Drop, Some(Question)),
            ("What did you paint", Drop, Some(Question)),
            ("Did you move in 2022?", Drop, Some(Question)),
            ("Hi Caroline!", Drop, Some(Filler)),
            ("Thanks so much!", Drop, Some(Filler)),
            ("Good morning!", Drop, Some(Filler)),
            ("Wow, that's amazing!", Drop, Some(Filler)),
            ("Me too!", Drop, Some(Filler)),
            ("Lol", Drop, Some(Filler)),
            ("🎉🎉", Drop, Some(Filler)),
            ("You should try painting sometime.", Drop, Some(Advice)),
            ("Oh, make sure to bring snacks.", Drop, Some(Advice)),
            ("Don't forget the tickets.", Drop, Some(Advice)),
            ("Let's go out.", Drop, Some(Advice)),
            ("If it rains we stay home.", Drop, Some(Hypothetical)),
            ("Imagine a world without art.", Drop, Some(Hypothetical)),
            ("That sounds really hard.", Drop, Some(Generic)),
            ("It was a long drive.", Drop, Some(Generic)),
            ("You should call Caroline about it.", KeepFlagged, None),
            ("Make sure you bring 3 chairs.", KeepFlagged, None),
            ("If I win I get 500 dollars.", KeepFlagged, None),
            ("ok, moved!", KeepFlagged, None),
            ("Thanks, I moved!", Keep, None),
            (
                "Painting helps people express feelings they cannot say aloud.",
                KeepFlagged,
                None,
            ),
            ("I painted a lake sunrise.", Keep, None),
            ("We went camping with the kids.", Keep, None),
            ("The kids loved Yellowstone.", Keep, None),
            ("It cost 40 dollars.", Keep, None),
            ("It was cold yesterday.", Keep, None),
            ("The recital is on Friday.", Keep, None),
        ];
        for (text, label, reason) in cases {
            let (s, claim) = one("Melanie", text);
            assert_eq!((s.label, s.reason), (*label, *reason), "{text:?}");
            assert_eq!(claim.is_some(), *label != Drop, "{text:?}");
        }
    }

    #[test]
    fn speaker_attribution() {
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "Yeah, I painted that lake sunrise last year!",
                "Melanie painted that lake sunrise in 2022!",
                &["Melanie", "in 2022"],
            ),
            (
                "I'm a counselor now.",
                "Melanie is a counselor now.",
                &["Melanie is"],
            ),
            // "has", "will", "had" are not on D32's allowlist nor in this union.
            (
                "I've got two kids.",
                "Melanie said: I've got two kids.",
                &["Melanie said:"],
            ),
            (
                "I'll run a marathon in May 2024.",
                "Melanie said: I'll run a marathon in May 2024.",
                &["Melanie said:"],
            ),
            (
                "I'd been there 3 times.",
                "Melanie said: I'd been there 3 times.",
                &["Melanie said:"],
            ),
            (
                "My sister gave me 2 books.",
                "Melanie's sister gave Melanie 2 books.",
                &["Melanie's", "Melanie"],
            ),
            (
                "I was at the park yesterday.",
                "Melanie was at the park on 2023-05-07.",
                &["Melanie", "on 2023-05-07"],
            ),
            (
                "I also went to Paris.",
                "Melanie also went to Paris.",
                &["Melanie"],
            ),
            // "I love" would need "loves": attributed instead.
            (
                "I love painting with Caroline.",
                "Melanie said: I love painting with Caroline.",
                &["Melanie said:"],
            ),
            // "I have" → "has" is not in this union: attributed instead.
            (
                "I have 3 cats.",
                "Melanie said: I have 3 cats.",
                &["Melanie said:"],
            ),
            // First-person plural: attributed, we/our kept.
            (
                "We adopted our dog in 2021.",
                "Melanie said: We adopted our dog in 2021.",
                &["Melanie said:"],
            ),
            // No first person.
            (
                "The kids loved Yellowstone last week.",
                "Melanie said: The kids loved Yellowstone from 2023-05-01 to 2023-05-07.",
                &["Melanie said:", "from 2023-05-01 to 2023-05-07"],
            ),
        ];
        for (source, expected, adds) in cases {
            let (_, claim) = one("Melanie", source);
            let claim = claim.unwrap_or_else(|| panic!("no claim for {source:?}"));
            assert_eq!(claim.text, *expected, "{source:?}");
            assert_eq!(claim.added_context, *adds, "{source:?}");
            assert_eq!(claim.verdict, Verdict::Entailed);
        }
        // "has" in the union makes the agreement rewrite traceable.
        let v = run(
            &[
                ("Caroline", "She has a dog."),
                ("Melanie", "I have 3 cats."),
            ],
            Some(ts(MONDAY)),
            2,
        );
        let texts: Vec<&str> = v[0].1.claims.iter().map(|c| c.text.as_str()).collect();
        assert!(texts.contains(&"Melanie has 3 cats."), "{texts:?}");
        let v = run(
            &[
                ("Caroline", "It will rain, she has said."),
                ("Melanie", "I'll run and I've run."),
            ],
            Some(ts(MONDAY)),
            2,
        );
        let texts: Vec<&str> = v[0].1.claims.iter().map(|c| c.text.as_str()).collect();
        assert!(
            texts.contains(&"Melanie will run and Melanie has run."),
            "{texts:?}"
        );
    }

    #[test]
    fn relative_date_validity() {
        let (_, claim) = one("Melanie", "Yeah, I painted that lake sunrise last year!");
        let c = claim.unwrap();
        assert_eq!(c.validity.precision, Precision::Year);
        assert_eq!(c.validity.from, Some(ts("2022-01-01T00:00:00Z")));
        assert_eq!(c.validity.until, Some(ts("2023-01-01T00:00:00Z")));
        assert_eq!(c.validity.kind, ValidityKind::Event);
        let (_, claim) = one("Melanie", "I was at the park yesterday.");
        assert_eq!(claim.unwrap().validity.kind, ValidityKind::State);
        // Two different windows: only the claim's own is rewritten.
        let (_, claim) = one(
            "Melanie",
            "I moved last year and I started a job last month.",
        );
        let c = claim.unwrap();
        assert_eq!(
            c.text,
            "Melanie moved in 2022 and Melanie started a job last month."
        );
        assert_eq!(c.validity.kind, ValidityKind::Event);
        // No anchor: nothing guessed.
        let v = run(&[("Melanie", "I painted it last year!")], None, 1);
        let c = &v[0].1.claims[0];
        assert_eq!(c.text, "Melanie painted it last year!");
        assert_eq!(c.validity.precision, Precision::Unknown);
        // A turn timestamp wins over the header's source time.
        let (md, mut blocks) = conversation(&[("Melanie", "I went there yesterday.")], None);
        blocks[0].turn.as_mut().unwrap().timestamp = Some(ts("2022-02-02T08:00:00Z"));
        let chunks = chunks_of(&blocks, 1);
        let b = build_bundle(
            &md,
            &blocks,
            &chunks,
            0,
            header(Some(ts(MONDAY))),
            vec![],
            1,
        );
        let x = extract(&b);
        assert_grounded(&md, &b, &x);
        assert_eq!(x.claims[0].text, "Melanie went there on 2022-02-01.");
    }

    #[test]
    fn question_affirmation() {
        let turns = [
            (
                "Nate",
                "Congrats on finishing the script! Is that your third one?",
            ),
            (
                "Joanna",
                "Yep! I chose to write about this because it's really personal.",
            ),
            ("Nate", "Did you like it?"),
            ("Joanna", "Not really, no."),
        ];
        // Question and answer in the same chunk.
        let v = run(&turns, Some(ts(MONDAY)), 4);
        let (b, x) = &v[0];
        let yep = b.target.iter().position(|p| p.text == "Yep!").unwrap();
        assert_eq!(x.selections[yep].label, SelectionLabel::Keep);
        let c = x.claims.iter().find(|c| c.text.contains("asked")).unwrap();
        assert_eq!(
            c.text,
            "Nate asked \"Is that your third one?\" and Joanna said \"Yep!\""
        );
        assert_eq!(c.passages, vec!["T2", "T3"]);
        assert_eq!(
            c.added_context,
            vec!["Nate asked \"", "\" and Joanna said \"", "\""]
        );
        // The question itself is dropped; the negative answer binds nothing.
        assert_eq!(x.selections[1].reason, Some(DropReason::Question));
        assert_eq!(
            x.claims.iter().filter(|c| c.text.contains("asked")).count(),
            1
        );
        let rest = x.claims.iter().find(|c| c.text.contains("chose")).unwrap();
        assert_eq!(
            rest.text,
            "Joanna chose to write about this because it's really personal."
        );
        // Question in the neighbour chunk before.
        let v = run(&turns, Some(ts(MONDAY)), 1);
        let (b, x) = &v[1];
        let c = x.claims.iter().find(|c| c.text.contains("asked")).unwrap();
        assert_eq!(
            c.text,
            "Nate asked \"Is that your third one?\" and Joanna said \"Yep!\""
        );
        assert_eq!(c.passages, vec!["N1", "T1"]);
        assert_eq!(
            b.passage("N1").unwrap().text,
            format!("Nate: {}", turns[0].1)
        );
        // Without a preceding question a bare "Yep!" is filler.
        let v = run(&[("Joanna", "Yep! I did it.")], Some(ts(MONDAY)), 1);
        assert_eq!(v[0].1.selections[0].reason, Some(DropReason::Filler));
    }

    const DOC: &str = "# Acme history\n\nAcme was founded in 2019 by Ana Ruiz. It moved to Lyon last year.\n\n- The team has 40 people.\n- Culture matters.\n\n```\ncode();\n```";

    fn doc_bundle() -> ContextBundle {
        let find = |t: &str| DOC.find(t).unwrap();
        let mk = |o: u32, kind: BlockKind, t: &str| Block {
            ordinal: o,
            kind,
            level: None,
            start: find(t),
            end: find(t) + t.len(),
            hash: format!("h{o}"),
            turn: None,
        };
        let blocks = vec![
            mk(0, BlockKind::Heading, "# Acme history"),
            mk(
                1,
                BlockKind::Paragraph,
                "Acme was founded in 2019 by Ana Ruiz. It moved to Lyon last year.",
            ),
            mk(2, BlockKind::ListItem, "- The team has 40 people."),
            mk(3, BlockKind::ListItem, "- Culture matters."),
            mk(4, BlockKind::Code, "```\ncode();\n```"),
        ];
        let chunks = vec![ChunkSpan {
            ordinal: 0,
            section_ordinal: 0,
            block_start: 0,
            block_end: 5,
            start: 0,
            end: DOC.len(),
        }];
        let h = DocumentHeader {
            title: "Acme".into(),
            source_kind: "markdown".into(),
            source_time: Some(ts(MONDAY)),
            file_name: Some("acme.md".into()),
        };
        build_bundle(DOC, &blocks, &chunks, 0, h, vec!["Acme history".into()], 1)
    }

    #[test]
    fn document_bundle() {
        let b = doc_bundle();
        let x = extract(&b);
        assert_grounded(DOC, &b, &x);
        let sel: Vec<(&str, SelectionLabel, Option<DropReason>)> = x
            .selections
            .iter()
            .map(|s| {
                (
                    b.passage(&s.passage).unwrap().text.as_str(),
                    s.label,
                    s.reason,
                )
            })
            .collect();
        assert_eq!(
            sel,
            vec![
                (
                    "# Acme history",
                    SelectionLabel::Drop,
                    Some(DropReason::Meta)
                ),
                (
                    "Acme was founded in 2019 by Ana Ruiz.",
                    SelectionLabel::Keep,
                    None
                ),
                ("It moved to Lyon last year.", SelectionLabel::Keep, None),
                ("The team has 40 people.", SelectionLabel::Keep, None),
                (
                    "Culture matters.",
                    SelectionLabel::Drop,
                    Some(DropReason::Generic)
                ),
                (
                    "```\ncode();\n```",
                    SelectionLabel::Drop,
                    Some(DropReason::NoInfo)
                ),
            ]
        );
        let texts: Vec<&str> = x.claims.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Acme was founded in 2019 by Ana Ruiz.",
                // The one organisation of the sentence before.
                "Acme moved to Lyon in 2022.",
                "The team has 40 people.",
            ]
        );
        assert_eq!(x.claims[1].added_context, ["Acme", "in 2022"]);
        assert_eq!(x.claims[0].validity.precision, Precision::Year);
        assert_eq!(x.claims[2].validity.kind, ValidityKind::State);
    }

    /// The claims of a one-paragraph document, one chunk.
    fn document_claims(paragraphs: &[&str]) -> Vec<String> {
        let md = format!("# Notes\n\n{}\n", paragraphs.join("\n\n"));
        let mut blocks = vec![Block {
            ordinal: 0,
            kind: BlockKind::Heading,
            level: None,
            start: 0,
            end: "# Notes".len(),
            hash: "h0".into(),
            turn: None,
        }];
        for (i, p) in paragraphs.iter().enumerate() {
            let start = md.find(p).unwrap();
            blocks.push(Block {
                ordinal: i as u32 + 1,
                kind: BlockKind::Paragraph,
                level: None,
                start,
                end: start + p.len(),
                hash: format!("h{}", i + 1),
                turn: None,
            });
        }
        let chunks = vec![ChunkSpan {
            ordinal: 0,
            section_ordinal: 0,
            block_start: 0,
            block_end: blocks.len() as u32,
            start: 0,
            end: md.len(),
        }];
        let h = DocumentHeader {
            title: "Notes".into(),
            source_kind: "markdown".into(),
            source_time: Some(ts(MONDAY)),
            file_name: None,
        };
        let b = build_bundle(&md, &blocks, &chunks, 0, h, vec!["Notes".into()], 1);
        let x = extract(&b);
        assert_grounded(&md, &b, &x);
        x.claims.into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn document_pronouns_resolve_to_the_one_compatible_name() {
        assert_eq!(
            document_claims(&[
                "Alice Moreno joined Acme in March 2024. She moved to Oslo in 2025."
            ]),
            [
                "Alice Moreno joined Acme in March 2024.",
                "Alice Moreno moved to Oslo in 2025."
            ]
        );
        // Possessives, and a paragraph further back when the nearest names nobody.
        assert_eq!(
            document_claims(&[
                "Bruno Keller leads the data team.",
                "The team grew last year. His office is in Lyon."
            ])
            .last()
            .unwrap(),
            "Bruno Keller's office is in Lyon."
        );
        // Two people: the subject of the sentence before, when it opens it; else the
        // pronoun stays.
        assert_eq!(
            document_claims(&["Alice Moreno met Bruno Keller. She moved to Lyon in 2024."])[1],
            "Alice Moreno moved to Lyon in 2024."
        );
        assert_eq!(
            document_claims(&["In 2023 Alice Moreno met Bruno Keller. She moved to Lyon in 2024."])
                [1],
            "She moved to Lyon in 2024."
        );
        // A pronoun chain: the sentence before opens with a pronoun of the same kind,
        // so its referent carries on (the organisation it names is passed over).
        assert_eq!(
            document_claims(&[
                "Nadia Petrescu studied in Cluj until 2023. She joined Tidewell Energy in 2024. Her team is based in Bucharest."
            ])
            .last()
            .unwrap(),
            "Nadia Petrescu's team is based in Bucharest."
        );
        // `They` where a person is named stays; `It` before `is` refers to nothing.
        assert_eq!(
            document_claims(&["Bruno Keller visited Globex. They signed a lease in 2024."])[1],
            "They signed a lease in 2024."
        );
        assert_eq!(
            document_claims(&["Globex opened in Lyon. It is 40 degrees there in July 2024."])[1],
            "It is 40 degrees there in July 2024."
        );
        // A contraction is not resolved.
        assert_eq!(
            document_claims(&["Alice Moreno joined Acme. She's based in Lyon since 2024."])[1],
            "She's based in Lyon since 2024."
        );
        // A pronoun after a leading time adverb is still the subject.
        assert_eq!(
            document_claims(&[
                "Odile Marchetti moved to Marseille in August 2025.",
                "Previously she lived in Lyon."
            ])[1],
            "Previously Odile Marchetti lived in Lyon."
        );
        assert_eq!(
            document_claims(&[
                "Odile Marchetti moved to Marseille.",
                "Previously, Lyon was home."
            ])[1],
            "Previously, Lyon was home."
        );
        // What stays is flagged as needing its source's context.
        assert!(needs_context("She liked the plan."));
        assert!(needs_context("Later, they sold it."));
        assert!(!needs_context("Previously Lyon was home."));
        assert!(needs_context("Their office moved."));
        assert!(!needs_context("Alice Moreno liked the plan."));
        assert!(!needs_context("It is raining there."));
    }

    #[test]
    fn snapshots() {
        let turns = [
            (
                "Caroline",
                "Hey Mel! I went to a LGBTQ support group yesterday.",
            ),
            ("Melanie", "Wow, that's cool! Did you paint that?"),
            (
                "Caroline",
                "Yes, I did! My friends loved it. You should come next Friday.",
            ),
            (
                "Melanie",
                "Yeah, I painted that lake sunrise last year! We went camping in June.",
            ),
        ];
        let (md, blocks) = conversation(&turns, Some(ts(MONDAY)));
        let chunks = chunks_of(&blocks, 4);
        let b = build_bundle(
            &md,
            &blocks,
            &chunks,
            0,
            header(Some(ts(MONDAY))),
            vec![],
            1,
        );
        let x = extract(&b);
        assert_grounded(&md, &b, &x);
        insta::assert_json_snapshot!("offline_conversation", x);
        let b = doc_bundle();
        let x = extract(&b);
        insta::assert_json_snapshot!("offline_document", x);
    }

    #[test]
    fn odd_bundles_do_not_panic() {
        let mut b = doc_bundle();
        b.target_text.clear();
        b.target[1].start = 10_000;
        let _ = extract(&b);
        let (md, blocks) = conversation(&[("", "I went."), ("Ann", "’s ’ ' \" …?! 🎉 I")], None);
        let chunks = chunks_of(&blocks, 1);
        for i in 0..chunks.len() {
            let b = build_bundle(&md, &blocks, &chunks, i, header(None), vec![], 1);
            let x = extract(&b);
            assert_grounded(&md, &b, &x);
        }
    }

    /// A rough throughput check (correctness only, no timing assertion):
    /// many six-turn chunks extract and ground.
    #[test]
    fn many_chunks() {
        let turns: Vec<(&str, &str)> = (0..60)
            .map(|i| {
                if i % 2 == 0 {
                    ("Caroline", "Hey! I went to the support group yesterday and it was great. Did you go?")
                } else {
                    ("Melanie", "Yes! My kids and I painted a lake sunrise last week. We had 3 hours of fun.")
                }
            })
            .collect();
        let v = run(&turns, Some(ts(MONDAY)), 6);
        assert_eq!(v.len(), 10);
        assert!(v.iter().all(|(_, x)| !x.claims.is_empty()));
    }

    fn sentence() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("I".to_string()),
            Just("I'm".to_string()),
            Just("I’ve".to_string()),
            Just("I'd".to_string()),
            Just("my".to_string()),
            Just("me".to_string()),
            Just("we".to_string()),
            Just("our".to_string()),
            Just("have".to_string()),
            Just("am".to_string()),
            Just("painted".to_string()),
            Just("love".to_string()),
            Just("yesterday".to_string()),
            Just("last year".to_string()),
            Just("last Friday".to_string()),
            Just("two weeks ago".to_string()),
            Just("on May 7".to_string()),
            Just("in 2021".to_string()),
            Just("Caroline".to_string()),
            Just("Paris".to_string()),
            Just("3".to_string()),
            Just("café".to_string()),
            Just("東京".to_string()),
            Just("🎉".to_string()),
            "[a-z]{1,7}",
        ];
        (
            prop::collection::vec(piece, 1..9),
            prop_oneof![Just("."), Just("!"), Just("?"), Just("")],
            prop_oneof![Just(""), Just("Yeah, "), Just("Yep! "), Just("Wow. ")],
        )
            .prop_map(|(words, end, lead)| format!("{lead}{}{end}", words.join(" ")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn generated_conversations_ground(
            turns in prop::collection::vec(
                (prop::sample::select(vec!["Melanie", "Caroline", "Nate", "Jo Ann"]),
                 prop::collection::vec(sentence(), 1..4)),
                1..8),
            per in 1usize..4,
            anchored in any::<bool>(),
        ) {
            let texts: Vec<(String, String)> = turns
                .iter()
                .map(|(s, sentences)| (s.to_string(), sentences.join(" ")))
                .collect();
            let refs: Vec<(&str, &str)> = texts.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
            let time = anchored.then(|| ts(MONDAY));
            let (md, blocks) = conversation(&refs, time);
            let chunks = chunks_of(&blocks, per);
            for i in 0..chunks.len() {
                let b = build_bundle(&md, &blocks, &chunks, i, header(time), vec![], 1);
                let x = extract(&b);
                prop_assert_eq!(x.selections.len(), b.target.len());
                prop_assert_eq!(
                    x.claims.len(),
                    x.selections.iter().filter(|s| s.label != SelectionLabel::Drop).count()
                );
                for c in &x.claims {
                    let g = ground(&b, &md, c);
                    prop_assert!(g.is_ok(), "{:?} -> {:?}", c, g);
                }
                prop_assert_eq!(extract(&b), x);
            }
        }
    }
}
