//! Time expressions in claim text (D41 and its amendments).
//!
//! [`find_time_mentions`] finds relative expressions ("yesterday", "last
//! Friday", "two weeks ago") and absolute ones ("in 2022", "May 7, 2023",
//! "2023-05-07") in one sentence and resolves each to a [`Validity`] window.
//! Relative expressions resolve only against an anchor (the document's source
//! time); without one they are not returned — nothing is guessed.
//! [`resolve_claim_text`] writes the resolved dates into claim text in ISO form
//! (`on 2022-01-21`, `in 2022`, `in 2022-03`, `from 2023-05-01 to 2023-05-07`),
//! and [`iso_renderings`] lists the exact strings D32's own-valid-time exemption
//! admits for a validity.
//!
//! Everything here is pure: no clock is read, the same input gives the same
//! output.
//!
//! Resolution rules (all calendar arithmetic in UTC, on the anchor's date):
//!
//! | expression | window | precision |
//! |---|---|---|
//! | `today`, `tonight`, `this morning/afternoon/evening` | the anchor day | day |
//! | `yesterday`, `last night` / `tomorrow` | the day before / after | day |
//! | `the day before yesterday` / `the day after tomorrow` | two days before / after | day |
//! | `last/this/next week` | Monday..Sunday of the previous / anchor's / next ISO week, a 7-day window | day (both bounds) |
//! | `last/this/next weekend` | Saturday..Sunday of the previous / anchor's / next ISO week | day (both bounds) |
//! | `last/this/next month`, `… year` | the calendar month / year | month / year |
//! | `last <weekday>` | the most recent such day strictly before the anchor date | day |
//! | `this <weekday>` | that day of the anchor's ISO week (Monday..Sunday) | day |
//! | `next <weekday>` | the first such day strictly after the anchor date | day |
//! | `N days ago`, `N weeks ago` | the day `N` (×7) days before | day |
//! | `N months ago`, `N years ago` | the calendar month / year `N` before | month / year |
//! | `May 7` / `7 May` (no year) | that day in the anchor's year | day |
//! | `last/next <month>` | the most recent such month before / the first after the anchor's month | month |
//! | `this <month>` | that month of the anchor's year | month |
//! | `in/since/during/by/until/of <month>` (no year) | by the sentence's tense: past → the most recent such month up to the anchor's, future → the first from it on; no clear tense → not resolved | month |
//!
//! A month named without a year is rewritten with its year kept beside the name
//! (`in January` → `in January 2024`), so the word stays searchable. The tense of
//! a sentence is read from its words: future when it has `will`, `'ll`, `shall`,
//! `gonna`, `going to`, `plan(s|ning)`, `next` or `soon`; past when it has a
//! common irregular past (`was`, `went`, `left`, …) or a verb ending in `-ed` that
//! does not follow a form of *be* or an intensifier ("I'm excited" is present);
//! both, or neither, is no clear tense.
//!
//! `N` is a number in digits or `a`, `an`, `one` … `twelve`; vague counts
//! ("a few days ago", "several weeks ago") are not resolved. Absolute forms
//! need no anchor: `2023-05-07`, `2023-05`, `May 7, 2023`, `May 7 2023`,
//! `7 May 2023`, `May 2023`, and a year 1900–2099 right after `in`, `since`,
//! `by`, `during`, `until` or `of` (the mention is the year alone). Month names
//! match in any case, except `May`, `March` and `August`, which need a capital
//! initial so the verbs "may", "march" and the adjective "august" are not dates.

use super::{Precision, Validity, ValidityKind};
use crate::time::Timestamp;
use chrono::{Datelike, Days, NaiveDate, NaiveTime, SecondsFormat, Weekday};
use serde::{Deserialize, Serialize};

/// One time expression found in a sentence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeMention {
    /// Byte offset of the expression in the input sentence.
    pub start: usize,
    /// Byte offset one past the end.
    pub end: usize,
    /// The expression as written: `sentence[start..end]`.
    pub text: String,
    /// The resolved window (kind [`ValidityKind::Event`]; callers may override).
    pub validity: Validity,
    /// The ISO rendering: `2023-05-05` (day), `2023-04` (month), `2022` (year),
    /// or `2023-05-01/2023-05-07` (a multi-day window such as a week).
    pub iso: String,
    /// The replacement phrase written into claim text: `on 2023-05-05`,
    /// `in 2023-04`, `in 2022`, `from 2023-05-01 to 2023-05-07`. When the
    /// expression follows a preposition (`since last year`) or carries a
    /// possessive (`yesterday's`), the phrase is the bare form (`2022`,
    /// `2023-05-07`, or `the week of 2023-05-01` for a week).
    pub phrase: String,
    /// Whether the expression is relative (needed the anchor). Only relative
    /// mentions are rewritten by [`resolve_claim_text`].
    pub relative: bool,
}

/// Find the time expressions of `sentence`, left to right, non-overlapping,
/// case-insensitive and word-bounded (see the module docs for the forms).
/// Relative expressions are returned only when `anchor` is given.
pub fn find_time_mentions(sentence: &str, anchor: Option<Timestamp>) -> Vec<TimeMention> {
    let scan = Scan::new(sentence, anchor.map(|t| t.date_naive()));
    let mut out = Vec::new();
    let mut i = 0;
    while i < scan.words.len() {
        match scan.match_at(i) {
            Some(m) => {
                if let Some(mention) = scan.mention(&m) {
                    out.push(mention);
                }
                i = m.next.max(i + 1);
            }
            None => i += 1,
        }
    }
    out
}

/// Replace every relative mention of `sentence` with its `phrase` (absolute
/// mentions stay as written). Returns the new text and all mentions.
pub fn resolve_claim_text(sentence: &str, anchor: Option<Timestamp>) -> (String, Vec<TimeMention>) {
    let mentions = find_time_mentions(sentence, anchor);
    let text = replace_mentions(sentence, mentions.iter().filter(|m| m.relative));
    (text, mentions)
}

/// `sentence` with each given mention (ordered, non-overlapping, from
/// [`find_time_mentions`] on the same sentence) replaced by its phrase.
pub(crate) fn replace_mentions<'a>(
    sentence: &str,
    mentions: impl Iterator<Item = &'a TimeMention>,
) -> String {
    let mut out = String::with_capacity(sentence.len() + 16);
    let mut at = 0;
    for m in mentions {
        let (Some(before), true) = (sentence.get(at..m.start), m.end >= m.start) else {
            continue;
        };
        if sentence.get(m.start..m.end).is_none() {
            continue;
        }
        out.push_str(before);
        out.push_str(&m.phrase);
        at = m.end;
    }
    out.push_str(sentence.get(at..).unwrap_or(""));
    out
}

/// The validity of a set of mentions: the first mention's, or unknown
/// ([`ValidityKind::Event`]) when there is none.
pub fn combined_validity(mentions: &[TimeMention]) -> Validity {
    mentions
        .first()
        .map(|m| m.validity.clone())
        .unwrap_or_else(|| Validity::unknown(ValidityKind::Event))
}

/// The exact strings D32's own-valid-time exemption admits for `v`:
///
/// - day → `YYYY-MM-DD` (a multi-day window, rendered "from A to B", gives both
///   day strings: the first day and the last day, `until − 1 day`);
/// - month → `YYYY-MM` and its year `YYYY` (a month named without a year is
///   rewritten `January 2024`); year → `YYYY`;
/// - quarter → both calendar bounds (first and last day) as `YYYY-MM-DD` and `YYYY-MM`;
/// - open → the start as `YYYY-MM-DD`, `YYYY-MM` and `YYYY`;
/// - instant → its RFC 3339 forms (`Z` and `+00:00`, whole seconds, milliseconds
///   and automatic fraction);
/// - unknown, or no `from` → nothing.
pub fn iso_renderings(v: &Validity) -> Vec<String> {
    let Some(from) = v.from else {
        return Vec::new();
    };
    let start = from.date_naive();
    let last_day = v
        .until
        .and_then(|u| u.date_naive().checked_sub_days(Days::new(1)))
        .filter(|d| *d >= start);
    let mut out: Vec<String> = Vec::new();
    match v.precision {
        Precision::Unknown => {}
        Precision::Day => {
            out.push(iso_day(start));
            if let Some(last) = last_day.filter(|d| *d > start) {
                out.push(iso_day(last));
            }
        }
        Precision::Month => {
            out.push(iso_month(start.year(), start.month()));
            // A month named without a year is rewritten `January 2024`.
            out.push(iso_year(start.year()));
        }
        Precision::Year => out.push(iso_year(start.year())),
        Precision::Quarter => {
            out.push(iso_day(start));
            out.push(iso_month(start.year(), start.month()));
            if let Some(last) = last_day {
                out.push(iso_day(last));
                out.push(iso_month(last.year(), last.month()));
            }
        }
        Precision::Open => {
            out.push(iso_day(start));
            out.push(iso_month(start.year(), start.month()));
            out.push(iso_year(start.year()));
        }
        Precision::Instant => {
            for format in [
                SecondsFormat::Secs,
                SecondsFormat::Millis,
                SecondsFormat::AutoSi,
            ] {
                out.push(from.to_rfc3339_opts(format, true));
                out.push(from.to_rfc3339_opts(format, false));
            }
        }
    }
    let mut unique: Vec<String> = Vec::with_capacity(out.len());
    for s in out {
        if !unique.contains(&s) {
            unique.push(s);
        }
    }
    unique
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

fn iso_day(d: NaiveDate) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
}

fn iso_month(year: i32, month: u32) -> String {
    format!("{year:04}-{month:02}")
}

fn iso_year(year: i32) -> String {
    format!("{year:04}")
}

fn midnight(d: NaiveDate) -> Timestamp {
    d.and_time(NaiveTime::MIN).and_utc()
}

/// A resolved calendar window.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Window {
    /// One day.
    Day(NaiveDate),
    /// `len` days from a start; `unit` names the window ("week", "weekend").
    Days(NaiveDate, u32, &'static str),
    /// A calendar month.
    Month(i32, u32),
    /// A calendar year.
    Year(i32),
}

impl Window {
    fn validity(&self) -> Option<Validity> {
        let (from, until, precision) = match *self {
            Window::Day(d) => (d, d.checked_add_days(Days::new(1))?, Precision::Day),
            Window::Days(d, len, _) => (
                d,
                d.checked_add_days(Days::new(u64::from(len)))?,
                Precision::Day,
            ),
            Window::Month(y, m) => {
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                (
                    NaiveDate::from_ymd_opt(y, m, 1)?,
                    NaiveDate::from_ymd_opt(ny, nm, 1)?,
                    Precision::Month,
                )
            }
            Window::Year(y) => (
                NaiveDate::from_ymd_opt(y, 1, 1)?,
                NaiveDate::from_ymd_opt(y + 1, 1, 1)?,
                Precision::Year,
            ),
        };
        Some(Validity {
            from: Some(midnight(from)),
            until: Some(midnight(until)),
            precision,
            kind: ValidityKind::Event,
        })
    }

    fn year(&self) -> i32 {
        match *self {
            Window::Day(d) | Window::Days(d, _, _) => d.year(),
            Window::Month(y, _) | Window::Year(y) => y,
        }
    }

    fn iso(&self) -> Option<String> {
        Some(match *self {
            Window::Day(d) => iso_day(d),
            Window::Days(d, len, _) => {
                let last = d.checked_add_days(Days::new(u64::from(len.saturating_sub(1))))?;
                format!("{}/{}", iso_day(d), iso_day(last))
            }
            Window::Month(y, m) => iso_month(y, m),
            Window::Year(y) => iso_year(y),
        })
    }

    /// The replacement phrase; `bare` after a preposition or before a possessive.
    fn phrase(&self, bare: bool) -> Option<String> {
        Some(match (*self, bare) {
            (Window::Day(d), true) => iso_day(d),
            (Window::Day(d), false) => format!("on {}", iso_day(d)),
            (Window::Days(d, _, unit), true) => format!("the {unit} of {}", iso_day(d)),
            (Window::Days(d, len, _), false) => {
                let last = d.checked_add_days(Days::new(u64::from(len.saturating_sub(1))))?;
                format!("from {} to {}", iso_day(d), iso_day(last))
            }
            (Window::Month(y, m), true) => iso_month(y, m),
            (Window::Month(y, m), false) => format!("in {}", iso_month(y, m)),
            (Window::Year(y), true) => iso_year(y),
            (Window::Year(y), false) => format!("in {}", iso_year(y)),
        })
    }
}

// ---------------------------------------------------------------------------
// Word lists
// ---------------------------------------------------------------------------

/// `w` lowercased into `buf` when it is ASCII and at most 16 bytes long
/// (every keyword is), else `""`: keyword matching without allocation.
fn ascii_lower<'b>(w: &str, buf: &'b mut [u8; 16]) -> &'b str {
    if w.len() > buf.len() || !w.is_ascii() {
        return "";
    }
    let out = &mut buf[..w.len()];
    out.copy_from_slice(w.as_bytes());
    out.make_ascii_lowercase();
    std::str::from_utf8(out).unwrap_or("")
}

fn weekday(w: &str) -> Option<Weekday> {
    let mut buf = [0u8; 16];
    Some(match ascii_lower(w, &mut buf) {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        _ => return None,
    })
}

/// The month a word names (1–12) and whether it is an abbreviation.
fn month(w: &str) -> Option<(u32, bool)> {
    // Ambiguous with common words: require a capital initial.
    let capital = w.chars().next().is_some_and(char::is_uppercase);
    let mut buf = [0u8; 16];
    Some(match ascii_lower(w, &mut buf) {
        "january" => (1, false),
        "february" => (2, false),
        "march" if capital => (3, false),
        "april" => (4, false),
        "may" if capital => (5, false),
        "june" => (6, false),
        "july" => (7, false),
        "august" if capital => (8, false),
        "september" => (9, false),
        "october" => (10, false),
        "november" => (11, false),
        "december" => (12, false),
        "jan" => (1, true),
        "feb" => (2, true),
        "mar" if capital => (3, true),
        "apr" => (4, true),
        "jun" => (6, true),
        "jul" => (7, true),
        "aug" => (8, true),
        "sep" | "sept" => (9, true),
        "oct" => (10, true),
        "nov" => (11, true),
        "dec" => (12, true),
        _ => return None,
    })
}

/// A small count: digits (up to 100 000) or a number word.
fn count(w: &str) -> Option<u32> {
    if !w.is_empty() && w.len() <= 6 && w.bytes().all(|b| b.is_ascii_digit()) {
        return w.parse().ok().filter(|n| *n <= 100_000);
    }
    let mut buf = [0u8; 16];
    Some(match ascii_lower(w, &mut buf) {
        "a" | "an" | "one" => 1,
        "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

fn unit(w: &str) -> Option<Unit> {
    let mut buf = [0u8; 16];
    Some(match ascii_lower(w, &mut buf) {
        "day" | "days" => Unit::Day,
        "week" | "weeks" => Unit::Week,
        "month" | "months" => Unit::Month,
        "year" | "years" => Unit::Year,
        _ => return None,
    })
}

/// Prepositions after which a resolved date is written bare (`since 2022`).
const BARE_AFTER: &[&str] = &[
    "after", "around", "at", "before", "between", "by", "during", "from", "in", "of", "on",
    "since", "through", "till", "to", "until",
];

/// Prepositions that make a bare 4-digit year a date.
const YEAR_CONTEXT: &[&str] = &["by", "during", "in", "of", "since", "until"];

/// Words that put a sentence in the future (`ll` is the end of `I'll`).
const FUTURE: &[&str] = &[
    "will", "ll", "shall", "gonna", "plan", "plans", "planning", "next", "soon",
];

/// Common irregular past forms that are not also present forms.
const IRREGULAR_PAST: &[&str] = &[
    "was", "were", "did", "had", "went", "came", "left", "got", "made", "took", "saw", "met",
    "began", "bought", "found", "gave", "told", "felt", "kept", "ran", "won", "lost", "sold",
    "spent", "built", "became", "brought", "wrote", "heard", "paid", "sent", "flew", "drove",
    "ate", "grew", "knew", "thought", "taught", "caught", "fell", "broke", "chose", "held", "sat",
    "stood", "slept", "swam", "sang", "gotten", "done", "been",
];

/// Words ending in `-ed` that are not past forms.
const NOT_PAST_ED: &[&str] = &[
    "indeed", "speed", "seed", "feed", "bed", "red", "shed", "hundred", "proceed", "exceed",
    "succeed", "breed", "weed", "greed", "embed", "bleed", "deed", "steed", "creed", "reed",
    "tweed", "sled", "naked", "wicked", "sacred", "kindred", "rugged", "ragged", "beloved", "aged",
];

/// Words after which an `-ed` word is an adjective or a passive, not a past:
/// forms of *be*, *get*, *feel*, and intensifiers ("I'm so excited").
const BEFORE_ADJECTIVE: &[&str] = &[
    "am", "is", "are", "m", "re", "s", "be", "being", "so", "very", "really", "too", "quite",
    "pretty", "super", "more", "most", "get", "gets", "getting", "feel", "feels", "feeling",
    "seem", "seems", "look", "looks", "stay", "staying", "always", "still", "not",
];

/// A sentence's tense for [`Scan::context_month`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tense {
    Past,
    Future,
    Unclear,
}

fn in_list(list: &[&str], w: &str) -> bool {
    list.iter().any(|x| x.eq_ignore_ascii_case(w))
}

/// A day of the month: `7`, `07`, `7th`, `21st` → 1–31.
fn day_of_month(w: &str) -> Option<u32> {
    let mut buf = [0u8; 16];
    let lower = ascii_lower(w, &mut buf);
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|s| lower.strip_suffix(s))
        .unwrap_or(lower);
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

/// A 4-digit year within `range`.
fn year4(w: &str, lo: i32, hi: i32) -> Option<i32> {
    if w.len() != 4 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok().filter(|y| (lo..=hi).contains(y))
}

fn two_digits(w: &str) -> Option<u32> {
    if w.len() != 2 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok()
}

// ---------------------------------------------------------------------------
// Scanning
// ---------------------------------------------------------------------------

/// A candidate match: words `first..next`, the window, whether it is relative.
struct Match {
    first: usize,
    next: usize,
    window: Window,
    relative: bool,
    /// The month word to keep in the phrase (`January 2024`), for a month
    /// named without its year.
    named: Option<usize>,
}

struct Scan<'a> {
    s: &'a str,
    /// Maximal alphanumeric runs (byte spans).
    words: Vec<(usize, usize)>,
    anchor: Option<NaiveDate>,
}

fn month_add(year: i32, month: u32, delta: i64) -> Option<(i32, u32)> {
    let index = i64::from(year) * 12 + i64::from(month) - 1 + delta;
    let y = i32::try_from(index.div_euclid(12)).ok()?;
    let m = u32::try_from(index.rem_euclid(12)).ok()? + 1;
    Some((y, m))
}

fn monday_of(d: NaiveDate) -> Option<NaiveDate> {
    d.checked_sub_days(Days::new(u64::from(d.weekday().num_days_from_monday())))
}

fn shift_days(d: NaiveDate, delta: i64) -> Option<NaiveDate> {
    if delta >= 0 {
        d.checked_add_days(Days::new(delta.unsigned_abs()))
    } else {
        d.checked_sub_days(Days::new(delta.unsigned_abs()))
    }
}

impl<'a> Scan<'a> {
    fn new(s: &'a str, anchor: Option<NaiveDate>) -> Self {
        let mut words = Vec::new();
        let mut start: Option<usize> = None;
        for (i, c) in s.char_indices() {
            if c.is_alphanumeric() {
                if start.is_none() {
                    start = Some(i);
                }
            } else if let Some(st) = start.take() {
                words.push((st, i));
            }
        }
        if let Some(st) = start {
            words.push((st, s.len()));
        }
        Scan { s, words, anchor }
    }

    fn word(&self, i: usize) -> Option<&'a str> {
        let (a, b) = *self.words.get(i)?;
        self.s.get(a..b)
    }

    fn is(&self, i: usize, lit: &str) -> bool {
        self.word(i).is_some_and(|w| w.eq_ignore_ascii_case(lit))
    }

    /// The text between word `i` and word `i + 1`.
    fn gap(&self, i: usize) -> Option<&'a str> {
        let (_, a) = *self.words.get(i)?;
        let (b, _) = *self.words.get(i + 1)?;
        self.s.get(a..b)
    }

    /// Words `i` and `i + 1` are separated by whitespace only.
    fn spaced(&self, i: usize) -> bool {
        self.gap(i)
            .is_some_and(|g| !g.is_empty() && g.chars().all(char::is_whitespace))
    }

    /// Whitespace with at most one of `punct` (and at least something).
    fn spaced_or(&self, i: usize, punct: &[char]) -> bool {
        self.gap(i).is_some_and(|g| {
            let marks = g.chars().filter(|c| punct.contains(c)).count();
            !g.is_empty()
                && marks <= 1
                && g.chars().all(|c| c.is_whitespace() || punct.contains(&c))
        })
    }

    /// The character right after word `i`, and the one after that.
    fn after(&self, i: usize) -> (Option<char>, Option<char>) {
        let Some(&(_, e)) = self.words.get(i) else {
            return (None, None);
        };
        let mut it = self.s.get(e..).unwrap_or("").chars();
        (it.next(), it.next())
    }

    /// Word `i` is not glued to a following `-`/`/`/`.` + digit or `-` + word
    /// (so `2023` in `2023-24` or `2022.5` is not a year).
    fn free_after(&self, i: usize) -> bool {
        match self.after(i) {
            (Some('-' | '/' | '.' | ':'), Some(c)) => !c.is_ascii_digit(),
            _ => true,
        }
    }

    /// Word `i` is not glued to a preceding digit + `-`/`/`/`.`.
    fn free_before(&self, i: usize) -> bool {
        let Some(&(a, _)) = self.words.get(i) else {
            return true;
        };
        let mut it = self.s.get(..a).unwrap_or("").chars().rev();
        !matches!((it.next(), it.next()), (Some('-' | '/' | '.' | ':'), Some(c)) if c.is_ascii_digit())
    }

    fn match_at(&self, i: usize) -> Option<Match> {
        // Every expression starts with a digit or an ASCII letter.
        let first = *self.word(i)?.as_bytes().first()?;
        if !first.is_ascii_alphanumeric() {
            return None;
        }
        self.iso_date(i)
            .or_else(|| self.on_month_day(i))
            .or_else(|| self.fixed_relative(i))
            .or_else(|| self.last_this_next(i))
            .or_else(|| self.ago(i))
            .or_else(|| self.month_first(i))
            .or_else(|| self.day_first(i))
            .or_else(|| self.context_year(i))
            .or_else(|| self.context_month(i))
    }

    fn mention(&self, m: &Match) -> Option<TimeMention> {
        let start = self.words.get(m.first)?.0;
        let end = self.words.get(m.next.checked_sub(1)?)?.1;
        let text = self.s.get(start..end)?.to_string();
        let validity = m.window.validity()?;
        if !(0..=9999).contains(&m.window.year()) {
            return None;
        }
        let starts_with_on = self.is(m.first, "on") && m.next > m.first + 1;
        let after_prep = m.first > 0
            && self.spaced(m.first - 1)
            && self
                .word(m.first - 1)
                .is_some_and(|w| in_list(BARE_AFTER, w));
        let rest = self.s.get(end..).unwrap_or("");
        let possessive = {
            let mut it = rest.chars();
            matches!(
                (it.next(), it.next(), it.next()),
                (Some('\'' | '\u{2019}'), Some('s' | 'S'), next) if !next.is_some_and(char::is_alphanumeric)
            )
        };
        let bare = !starts_with_on && (after_prep || possessive);
        let phrase = match (m.named.and_then(|i| self.word(i)), m.window) {
            (Some(name), Window::Month(y, _)) if bare => format!("{name} {}", iso_year(y)),
            (Some(name), Window::Month(y, _)) => format!("in {name} {}", iso_year(y)),
            _ => m.window.phrase(bare)?,
        };
        Some(TimeMention {
            start,
            end,
            text,
            validity,
            iso: m.window.iso()?,
            phrase,
            relative: m.relative,
        })
    }

    /// `2023-05-07` or `2023-05`.
    fn iso_date(&self, i: usize) -> Option<Match> {
        let year = year4(self.word(i)?, 1000, 2999)?;
        if !self.free_before(i) || self.gap(i)? != "-" {
            return None;
        }
        let month = two_digits(self.word(i + 1)?).filter(|m| (1..=12).contains(m))?;
        if self.gap(i + 1) == Some("-")
            && let Some(day) = self.word(i + 2).and_then(two_digits)
            && self.free_after(i + 2)
            && !self.after(i + 2).0.is_some_and(char::is_alphanumeric)
        {
            let d = NaiveDate::from_ymd_opt(year, month, day)?;
            return Some(Match {
                first: i,
                next: i + 3,
                window: Window::Day(d),
                relative: false,
                named: None,
            });
        }
        if !self.free_after(i + 1) {
            return None;
        }
        Some(Match {
            first: i,
            next: i + 2,
            window: Window::Month(year, month),
            relative: false,
            named: None,
        })
    }

    /// `on May 7` / `on 7 May` without a year: the mention includes `on`.
    fn on_month_day(&self, i: usize) -> Option<Match> {
        if !self.is(i, "on") || !self.spaced(i) {
            return None;
        }
        let m = self.month_first(i + 1).or_else(|| self.day_first(i + 1))?;
        m.relative.then_some(Match { first: i, ..m })
    }

    fn fixed_relative(&self, i: usize) -> Option<Match> {
        let anchor = self.anchor?;
        let mut buf = [0u8; 16];
        let w = ascii_lower(self.word(i)?, &mut buf);
        let day = |delta: i64, next: usize| {
            Some(Match {
                first: i,
                next,
                window: Window::Day(shift_days(anchor, delta)?),
                relative: true,
                named: None,
            })
        };
        match w {
            "today" | "tonight" => day(0, i + 1),
            "yesterday" => day(-1, i + 1),
            "tomorrow" => day(1, i + 1),
            "the"
                if self.is(i + 1, "day")
                    && self.spaced(i)
                    && self.spaced(i + 1)
                    && self.spaced(i + 2) =>
            {
                if self.is(i + 2, "before") && self.is(i + 3, "yesterday") {
                    day(-2, i + 4)
                } else if self.is(i + 2, "after") && self.is(i + 3, "tomorrow") {
                    day(2, i + 4)
                } else {
                    None
                }
            }
            "last" if self.is(i + 1, "night") && self.spaced(i) => day(-1, i + 2),
            "this"
                if self.spaced(i)
                    && (self.is(i + 1, "morning")
                        || self.is(i + 1, "afternoon")
                        || self.is(i + 1, "evening")) =>
            {
                day(0, i + 2)
            }
            _ => None,
        }
    }

    /// `last/this/next week|weekend|month|year|<weekday>`.
    fn last_this_next(&self, i: usize) -> Option<Match> {
        let anchor = self.anchor?;
        if self.word(i)?.len() != 4 {
            return None;
        }
        let mut buf = [0u8; 16];
        let dir: i64 = match ascii_lower(self.word(i)?, &mut buf) {
            "last" => -1,
            "this" => 0,
            "next" => 1,
            _ => return None,
        };
        if !self.spaced(i) {
            return None;
        }
        let target = self.word(i + 1)?;
        // A month written out (`last March`); an abbreviation is as often a name.
        let named_month = month(target).filter(|(_, abbr)| !abbr);
        let mut buf = [0u8; 16];
        let monday = monday_of(anchor)?;
        let window = match ascii_lower(target, &mut buf) {
            "week" => Window::Days(shift_days(monday, 7 * dir)?, 7, "week"),
            "weekend" => Window::Days(shift_days(monday, 7 * dir + 5)?, 2, "weekend"),
            "month" => {
                let (y, m) = month_add(anchor.year(), anchor.month(), dir)?;
                Window::Month(y, m)
            }
            "year" => Window::Year(anchor.year().checked_add(i32::try_from(dir).ok()?)?),
            _ if named_month.is_some() => {
                let (m, _) = named_month?;
                let year = match dir {
                    -1 if m >= anchor.month() => anchor.year().checked_sub(1)?,
                    1 if m <= anchor.month() => anchor.year().checked_add(1)?,
                    _ => anchor.year(),
                };
                return Some(Match {
                    first: i,
                    next: i + 2,
                    window: Window::Month(year, m),
                    relative: true,
                    named: Some(i + 1),
                });
            }
            _ => {
                let wd = weekday(target)?;
                let target_n = i64::from(wd.num_days_from_monday());
                let anchor_n = i64::from(anchor.weekday().num_days_from_monday());
                let delta = match dir {
                    -1 => -((anchor_n - target_n - 1).rem_euclid(7) + 1),
                    0 => target_n - anchor_n,
                    _ => (target_n - anchor_n - 1).rem_euclid(7) + 1,
                };
                Window::Day(shift_days(anchor, delta)?)
            }
        };
        Some(Match {
            first: i,
            next: i + 2,
            window,
            relative: true,
            named: None,
        })
    }

    /// `<N> days|weeks|months|years ago`.
    fn ago(&self, i: usize) -> Option<Match> {
        let anchor = self.anchor?;
        if !self.is(i + 2, "ago") {
            return None;
        }
        let n = i64::from(count(self.word(i)?)?);
        let u = unit(self.word(i + 1)?)?;
        if !self.is(i + 2, "ago") || !self.spaced(i) || !self.spaced(i + 1) {
            return None;
        }
        let window = match u {
            Unit::Day => Window::Day(shift_days(anchor, -n)?),
            Unit::Week => Window::Day(shift_days(anchor, -7 * n)?),
            Unit::Month => {
                let (y, m) = month_add(anchor.year(), anchor.month(), -n)?;
                Window::Month(y, m)
            }
            Unit::Year => Window::Year(anchor.year().checked_sub(i32::try_from(n).ok()?)?),
        };
        Some(Match {
            first: i,
            next: i + 3,
            window,
            relative: true,
            named: None,
        })
    }

    fn month_gap(&self, i: usize, abbreviation: bool) -> bool {
        if abbreviation {
            self.spaced_or(i, &['.'])
        } else {
            self.spaced(i)
        }
    }

    /// `May 7, 2023`, `May 7th 2023`, `May 2023`, `May 7` (anchor year).
    fn month_first(&self, i: usize) -> Option<Match> {
        let w = self.word(i)?;
        if !(3..=9).contains(&w.len()) || !w.as_bytes()[0].is_ascii_alphabetic() {
            return None;
        }
        let (m, abbr) = month(w)?;
        if !self.month_gap(i, abbr) {
            return None;
        }
        if let Some(y) = self.word(i + 1).and_then(|w| year4(w, 1000, 2999))
            && self.free_after(i + 1)
        {
            return Some(Match {
                first: i,
                next: i + 2,
                window: Window::Month(y, m),
                relative: false,
                named: None,
            });
        }
        let d = day_of_month(self.word(i + 1)?)?;
        if !self.free_after(i + 1) {
            return None;
        }
        if self.spaced_or(i + 1, &[','])
            && let Some(y) = self.word(i + 2).and_then(|w| year4(w, 1000, 2999))
            && self.free_after(i + 2)
        {
            let date = NaiveDate::from_ymd_opt(y, m, d)?;
            return Some(Match {
                first: i,
                next: i + 3,
                window: Window::Day(date),
                relative: false,
                named: None,
            });
        }
        let date = NaiveDate::from_ymd_opt(self.anchor?.year(), m, d)?;
        Some(Match {
            first: i,
            next: i + 2,
            window: Window::Day(date),
            relative: true,
            named: None,
        })
    }

    /// `7 May 2023`, `7th May, 2023`, `7 May` (anchor year).
    fn day_first(&self, i: usize) -> Option<Match> {
        if !self.word(i)?.as_bytes().first()?.is_ascii_digit() {
            return None;
        }
        let d = day_of_month(self.word(i)?)?;
        if !self.spaced(i) || !self.free_before(i) {
            return None;
        }
        let (m, abbr) = month(self.word(i + 1)?)?;
        let gap_ok = self.month_gap(i + 1, abbr) || self.spaced_or(i + 1, &[',']);
        if gap_ok
            && let Some(y) = self.word(i + 2).and_then(|w| year4(w, 1000, 2999))
            && self.free_after(i + 2)
        {
            let date = NaiveDate::from_ymd_opt(y, m, d)?;
            return Some(Match {
                first: i,
                next: i + 3,
                window: Window::Day(date),
                relative: false,
                named: None,
            });
        }
        let date = NaiveDate::from_ymd_opt(self.anchor?.year(), m, d)?;
        Some(Match {
            first: i,
            next: i + 2,
            window: Window::Day(date),
            relative: true,
            named: None,
        })
    }

    /// `in January`, `since March`, …, a month named without a day or year: the
    /// mention is the month alone, placed by the sentence's [`Tense`] (`since`
    /// looks back unless the sentence speaks of the future).
    fn context_month(&self, i: usize) -> Option<Match> {
        let anchor = self.anchor?;
        if !in_list(YEAR_CONTEXT, self.word(i)?) || !self.spaced(i) {
            return None;
        }
        let (m, abbr) = month(self.word(i + 1)?)?;
        // `Jan`, `Dec`, … are names as often as months.
        if abbr || !self.free_after(i + 1) {
            return None;
        }
        // `in May 7`, `in May 2023`: a day or a year after the month is not this form.
        if self.spaced_or(i + 1, &[','])
            && self
                .word(i + 2)
                .is_some_and(|w| w.as_bytes()[0].is_ascii_digit())
        {
            return None;
        }
        let tense = match self.tense() {
            Tense::Unclear if self.is(i, "since") => Tense::Past,
            t => t,
        };
        let year = match tense {
            Tense::Past if m > anchor.month() => anchor.year().checked_sub(1)?,
            Tense::Future if m < anchor.month() => anchor.year().checked_add(1)?,
            Tense::Past | Tense::Future => anchor.year(),
            Tense::Unclear => return None,
        };
        Some(Match {
            first: i + 1,
            next: i + 2,
            window: Window::Month(year, m),
            relative: true,
            named: Some(i + 1),
        })
    }

    /// The sentence's tense, as far as a month without a year needs it (see the
    /// module docs).
    fn tense(&self) -> Tense {
        let (mut past, mut future) = (false, false);
        let mut prev = "";
        for i in 0..self.words.len() {
            let w = self.word(i).unwrap_or("");
            if in_list(FUTURE, w)
                || (w.eq_ignore_ascii_case("to") && prev.eq_ignore_ascii_case("going"))
            {
                future = true;
            } else if in_list(IRREGULAR_PAST, w)
                || (w.len() >= 4
                    && w.as_bytes()[w.len() - 2..].eq_ignore_ascii_case(b"ed")
                    && !in_list(NOT_PAST_ED, w)
                    && !in_list(BEFORE_ADJECTIVE, prev))
            {
                past = true;
            }
            prev = w;
        }
        match (past, future) {
            (true, false) => Tense::Past,
            (false, true) => Tense::Future,
            _ => Tense::Unclear,
        }
    }

    /// `in 2022`, `since 2019`, …: the mention is the year alone.
    fn context_year(&self, i: usize) -> Option<Match> {
        if !in_list(YEAR_CONTEXT, self.word(i)?) || !self.spaced(i) {
            return None;
        }
        let y = year4(self.word(i + 1)?, 1900, 2099)?;
        if !self.free_after(i + 1) {
            return None;
        }
        Some(Match {
            first: i + 1,
            next: i + 2,
            window: Window::Year(y),
            relative: false,
            named: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339;

    fn ts(s: &str) -> Timestamp {
        parse_rfc3339(s).unwrap()
    }

    /// 2023-05-08 is a Monday.
    const MONDAY: &str = "2023-05-08T14:00:00Z";
    /// 2023-05-12 is a Friday.
    const FRIDAY: &str = "2023-05-12T09:30:00Z";

    /// (sentence, anchor, expected [(mention text, iso, phrase, precision)])
    #[rustfmt::skip]
    #[allow(clippy::type_complexity)]
    const CASES: &[(&str, Option<&str>, &[(&str, &str, &str, Precision)])] = &[
        ("I went yesterday.", Some(MONDAY), &[("yesterday", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("Today I rest.", Some(MONDAY), &[("Today", "2023-05-08", "on 2023-05-08", Precision::Day)]),
        ("I printed it last Friday.", Some(MONDAY), &[("last Friday", "2023-05-05", "on 2023-05-05", Precision::Day)]),
        ("I printed it last Friday.", Some(FRIDAY), &[("last Friday", "2023-05-05", "on 2023-05-05", Precision::Day)]),
        ("See you this Friday!", Some(MONDAY), &[("this Friday", "2023-05-12", "on 2023-05-12", Precision::Day)]),
        ("See you this Friday!", Some(FRIDAY), &[("this Friday", "2023-05-12", "on 2023-05-12", Precision::Day)]),
        ("See you next Friday!", Some(FRIDAY), &[("next Friday", "2023-05-19", "on 2023-05-19", Precision::Day)]),
        ("We met two weeks ago.", Some(MONDAY), &[("two weeks ago", "2023-04-24", "on 2023-04-24", Precision::Day)]),
        ("It broke 3 days ago.", Some(MONDAY), &[("3 days ago", "2023-05-05", "on 2023-05-05", Precision::Day)]),
        ("She left 2 months ago.", Some(MONDAY), &[("2 months ago", "2023-03", "in 2023-03", Precision::Month)]),
        ("She left a year ago.", Some(MONDAY), &[("a year ago", "2022", "in 2022", Precision::Year)]),
        ("It was cold last month.", Some("2023-01-15T00:00:00Z"), &[("last month", "2022-12", "in 2022-12", Precision::Month)]),
        ("I painted it last year!", Some(MONDAY), &[("last year", "2022", "in 2022", Precision::Year)]),
        ("We move next year.", Some(MONDAY), &[("next year", "2024", "in 2024", Precision::Year)]),
        ("I was busy last week.", Some(MONDAY), &[("last week", "2023-05-01/2023-05-07", "from 2023-05-01 to 2023-05-07", Precision::Day)]),
        ("Busy since last week.", Some(MONDAY), &[("last week", "2023-05-01/2023-05-07", "the week of 2023-05-01", Precision::Day)]),
        ("Camping last weekend.", Some(FRIDAY), &[("last weekend", "2023-05-06/2023-05-07", "from 2023-05-06 to 2023-05-07", Precision::Day)]),
        ("I moved in 2022.", None, &[("2022", "2022", "2022", Precision::Year)]),
        ("Vegan since 2019.", None, &[("2019", "2019", "2019", Precision::Year)]),
        ("Back by 1999, then during 2001.", None, &[("1999", "1999", "1999", Precision::Year), ("2001", "2001", "2001", Precision::Year)]),
        ("The 2022 plan had 1850 items.", None, &[]),
        ("It shipped in May 2023.", None, &[("May 2023", "2023-05", "2023-05", Precision::Month)]),
        ("May 2023 was busy.", None, &[("May 2023", "2023-05", "in 2023-05", Precision::Month)]),
        ("It shipped May 7, 2023.", None, &[("May 7, 2023", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("It shipped 7 May 2023.", None, &[("7 May 2023", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("It shipped 2023-05-07.", None, &[("2023-05-07", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("It shipped on May 7.", Some(MONDAY), &[("on May 7", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("It shipped on May 7.", None, &[]),
        ("I saw her a few days ago.", Some(MONDAY), &[]),
        ("I went yesterday and last Friday.", None, &[]),
        ("Old yesterdays and Fridays.", Some(MONDAY), &[]),
        ("Last Friday's game was fun.", Some(MONDAY), &[("Last Friday", "2023-05-05", "2023-05-05", Precision::Day)]),
        ("Friday's game was fun.", Some(MONDAY), &[]),
        ("Café ☕ hier — yesterday — 東京へ.", Some(MONDAY), &[("yesterday", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("Dépôt 🎉 le 7 May 2023 à Zürich.", None, &[("7 May 2023", "2023-05-07", "on 2023-05-07", Precision::Day)]),
        ("The day before yesterday it rained.", Some(MONDAY), &[("The day before yesterday", "2023-05-06", "on 2023-05-06", Precision::Day)]),
        ("YESTERDAY and TOMORROW.", Some(MONDAY), &[("YESTERDAY", "2023-05-07", "on 2023-05-07", Precision::Day), ("TOMORROW", "2023-05-09", "on 2023-05-09", Precision::Day)]),
        ("You may 2 go, march 3 miles.", Some(MONDAY), &[]),
        ("Budget in 2023-24 and in 2022.5 and 12 2022 items.", None, &[]),
        ("FY 2023-05-07-01 code.", None, &[]),
        ("I moved to Porto in January.", Some(MONDAY), &[("January", "2023-01", "January 2023", Precision::Month)]),
        ("I moved to Lisbon in December.", Some(MONDAY), &[("December", "2022-12", "December 2022", Precision::Month)]),
        ("We started it in May.", Some(MONDAY), &[("May", "2023-05", "May 2023", Precision::Month)]),
        ("We will fly to Rome in April.", Some(MONDAY), &[("April", "2024-04", "April 2024", Precision::Month)]),
        ("I'll fly to Rome in June.", Some(MONDAY), &[("June", "2023-06", "June 2023", Precision::Month)]),
        ("Vegan since November.", Some(MONDAY), &[("November", "2022-11", "November 2022", Precision::Month)]),
        ("I saw her last March.", Some(MONDAY), &[("last March", "2023-03", "in March 2023", Precision::Month)]),
        ("I saw her last May.", Some(MONDAY), &[("last May", "2022-05", "in May 2022", Precision::Month)]),
        ("I saw her last January.", Some(MONDAY), &[("last January", "2023-01", "in January 2023", Precision::Month)]),
        ("See you next May!", Some(MONDAY), &[("next May", "2024-05", "in May 2024", Precision::Month)]),
        ("I moved in January 2020.", Some(MONDAY), &[("January 2020", "2020-01", "2020-01", Precision::Month)]),
        ("I'm so excited about the trip in December.", Some(MONDAY), &[]),
        ("The trip in December is fun.", Some(MONDAY), &[]),
        ("I moved and will move again in July.", Some(MONDAY), &[]),
        ("I moved in Jan.", Some(MONDAY), &[]),
        ("He left in may.", Some(MONDAY), &[]),
        ("I moved to Porto in January.", None, &[]),
    ];

    #[test]
    fn table() {
        for (sentence, anchor, expected) in CASES {
            let got = find_time_mentions(sentence, anchor.map(ts));
            let got: Vec<(&str, &str, &str, Precision)> = got
                .iter()
                .map(|m| {
                    (
                        m.text.as_str(),
                        m.iso.as_str(),
                        m.phrase.as_str(),
                        m.validity.precision,
                    )
                })
                .collect();
            assert_eq!(&got, expected, "{sentence:?} @ {anchor:?}");
            for m in find_time_mentions(sentence, anchor.map(ts)) {
                assert_eq!(&sentence[m.start..m.end], m.text);
                assert_eq!(m.validity.kind, ValidityKind::Event);
            }
        }
    }

    #[test]
    fn windows_are_half_open() {
        let m = &find_time_mentions("in May 2023", None)[0];
        assert_eq!(m.validity.from, Some(ts("2023-05-01T00:00:00Z")));
        assert_eq!(m.validity.until, Some(ts("2023-06-01T00:00:00Z")));
        let m = &find_time_mentions("last year", Some(ts("2023-01-01T00:00:00Z")))[0];
        assert_eq!(m.validity.from, Some(ts("2022-01-01T00:00:00Z")));
        assert_eq!(m.validity.until, Some(ts("2023-01-01T00:00:00Z")));
        let m = &find_time_mentions("yesterday", Some(ts(MONDAY)))[0];
        assert_eq!(m.validity.from, Some(ts("2023-05-07T00:00:00Z")));
        assert_eq!(m.validity.until, Some(ts("2023-05-08T00:00:00Z")));
        let m = &find_time_mentions("next week", Some(ts(FRIDAY)))[0];
        assert_eq!(m.validity.from, Some(ts("2023-05-15T00:00:00Z")));
        assert_eq!(m.validity.until, Some(ts("2023-05-22T00:00:00Z")));
        assert!(m.relative);
        assert!(!find_time_mentions("in 2022", None)[0].relative);
    }

    #[test]
    fn resolves_relative_only() {
        let (text, mentions) = resolve_claim_text(
            "I painted that lake sunrise last year, not in 2019!",
            Some(ts(MONDAY)),
        );
        assert_eq!(text, "I painted that lake sunrise in 2022, not in 2019!");
        assert_eq!(mentions.len(), 2);
        assert_eq!(combined_validity(&mentions).precision, Precision::Year);
        let (text, _) = resolve_claim_text("Since yesterday's storm, ok.", Some(ts(MONDAY)));
        assert_eq!(text, "Since 2023-05-07's storm, ok.");
        let (text, mentions) = resolve_claim_text("I went yesterday.", None);
        assert_eq!(text, "I went yesterday.");
        assert!(mentions.is_empty());
        assert_eq!(
            combined_validity(&mentions),
            Validity::unknown(ValidityKind::Event)
        );
    }

    #[test]
    fn renderings() {
        let day = find_time_mentions("2023-05-07", None)[0].validity.clone();
        assert_eq!(iso_renderings(&day), vec!["2023-05-07"]);
        let week = find_time_mentions("last week", Some(ts(MONDAY)))[0]
            .validity
            .clone();
        assert_eq!(iso_renderings(&week), vec!["2023-05-01", "2023-05-07"]);
        let month = find_time_mentions("May 2023", None)[0].validity.clone();
        assert_eq!(iso_renderings(&month), vec!["2023-05", "2023"]);
        let year = find_time_mentions("in 2022", None)[0].validity.clone();
        assert_eq!(iso_renderings(&year), vec!["2022"]);
        let quarter = Validity {
            from: Some(ts("2024-01-01T00:00:00Z")),
            until: Some(ts("2024-04-01T00:00:00Z")),
            precision: Precision::Quarter,
            kind: ValidityKind::State,
        };
        assert_eq!(
            iso_renderings(&quarter),
            vec!["2024-01-01", "2024-01", "2024-03-31", "2024-03"]
        );
        let open = Validity {
            from: Some(ts("2019-03-04T00:00:00Z")),
            until: None,
            precision: Precision::Open,
            kind: ValidityKind::State,
        };
        assert_eq!(iso_renderings(&open), vec!["2019-03-04", "2019-03", "2019"]);
        let instant = Validity {
            from: Some(ts("2023-05-07T10:11:12Z")),
            until: Some(ts("2023-05-07T10:11:12Z")),
            precision: Precision::Instant,
            kind: ValidityKind::Event,
        };
        let forms = iso_renderings(&instant);
        assert!(forms.contains(&"2023-05-07T10:11:12Z".to_string()));
        assert!(forms.contains(&"2023-05-07T10:11:12.000Z".to_string()));
        assert!(forms.contains(&"2023-05-07T10:11:12+00:00".to_string()));
        assert!(iso_renderings(&Validity::unknown(ValidityKind::Event)).is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn arbitrary_text_is_safe(
            s in "(\\PC|yesterday|last year|May 7|2023-05-07| in 2022| ago| 3 days){0,40}",
        ) {
            let (text, mentions) = resolve_claim_text(&s, Some(ts(MONDAY)));
            let mut last = 0;
            for m in &mentions {
                proptest::prop_assert!(m.start >= last && m.start < m.end);
                proptest::prop_assert_eq!(&s[m.start..m.end], m.text.as_str());
                last = m.end;
            }
            if mentions.iter().all(|m| !m.relative) {
                proptest::prop_assert_eq!(text, s);
            }
        }
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "",
            "last",
            "the day before",
            "on",
            "May",
            "31 February 2023",
            "999999 years ago",
            "12 days ago",
            "in 2023-",
            "2023-13-01",
            "é9999-99-99é",
            "last 🎉 year",
        ] {
            let _ = resolve_claim_text(s, Some(ts(MONDAY)));
        }
        // No 31 February: only the month is found.
        let m = find_time_mentions("31 February 2023", None);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].text, "February 2023");
        assert!(find_time_mentions("last 🎉 year", Some(ts(MONDAY))).is_empty());
    }
}
