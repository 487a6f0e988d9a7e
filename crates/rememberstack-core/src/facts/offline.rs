//! The deterministic offline normalizer (E3 without a chat model).
//!
//! [`normalize_offline`] turns one claim into entity references, relations and
//! observations with plain heuristics. It is deterministic and total: any UTF-8
//! input gives an answer and nothing panics.
//!
//! * **Entities** are maximal runs of capitalized words (`Jan Novak`,
//!   `J. R. R. Tolkien`, `O'Neil`, `Jean-Luc Picard`, `GPT-4`, `NASA`), joined
//!   across name particles (`Ludwig van Beethoven`), across `of`/`for` after an
//!   institutional head word (`University of Oslo`, `Bank of the West`), across
//!   `and` once such an `of` joined (`Department of Health and Human Services`)
//!   and across `&`. A possessive `'s` ends a run and is not part of the name.
//!   Leading function words, pronouns and honorifics (`The`, `In`, `He`, `Dr`)
//!   and leading full month/weekday/season names are stripped; a run that is
//!   only a month, weekday or season (or one of their abbreviations) is dropped.
//!   Period tokens (`FY2023`, `Q1`, `H2`), role acronyms (`CEO`), time markers
//!   (`PM`, `UTC`) and numbers are never part of a name. A run whose lemma is the
//!   document title's lemma is skipped; references are deduplicated by lemma
//!   (the first occurrence wins).
//! * **Stance** (D59): when the first entity is directly followed by a stance
//!   verb (`said`, `believes`, `opposes`, … optionally after one of `has`, `had`,
//!   `also`, `strongly`, `publicly`, `firmly`, `repeatedly`, `still`), or the claim
//!   reads "According to <Holder>, …", the output is the holder alone with one
//!   observation whose statement is the claim text. A conversation turn that
//!   claim extraction kept as `Speaker said: …` (its added context holds
//!   `Speaker said:`) is not a stance: the speaker holds the observation, every
//!   name in the turn is a reference, and the words said give relations as below,
//!   with a standalone `I` standing for the speaker.
//! * **Relations** come from the words between two consecutive entity mentions:
//!   after leading auxiliaries/adverbs (`has`, `is`, `been`, `now`, …) and
//!   trailing determiners are dropped, a table of verb phrases gives the core
//!   predicate (and, for passives such as `founded by` or verbs such as
//!   `employs`, the reversed direction). Gaps with negation, modals, stance or
//!   reporting verbs, relative pronouns or punctuation yield nothing. Leaving
//!   verbs (`left`, `quit`, `resigned`, …) yield no relation (a change is an
//!   observation). An unknown gap yields an `other:` relation only when it is a
//!   past-tense verb (`-ed` or a short irregular list) plus at most two
//!   particles. Coordination is followed: "Alice and Bob founded Acme" (both
//!   subjects), "Alice founded Acme and Globex" (both objects), "Alice left Acme
//!   and joined Globex" (the second verb keeps the subject Alice).
//! * **Observations**: one observation on the first entity with the claim text
//!   as its statement, unless the claim says nothing more than its relations:
//!   every gap between consecutive mentions produced a relation (or a
//!   coordination feeding one) and the text before the first and after the last
//!   mention holds only date words, numbers and punctuation ("Alice has worked
//!   for Acme since March 2024." gives the relation alone).
//!
//! Known limits: no coreference or pronoun resolution; a capitalized common word
//! starting a sentence ("Revenue grew …") becomes an entity unless it is in the
//! stop list; names written in lowercase or in scripts without case (CJK) are
//! not found; "Alice Smith of Acme" splits into two names only because `Smith`
//! is not an institutional head word; relations are found only between adjacent
//! mentions with a short plain gap, and only in active or simple passive voice;
//! the observation always goes to the first entity, even when the sentence's
//! grammatical subject is a later one.

use crate::entities::normalize::lemma;
use crate::facts::english;
use crate::facts::normalization::{
    EntityRef, NormalizeInput, NormalizedClaim, ObservationDraft, RelationDraft,
};
use crate::facts::predicates::{self, Predicate};

/// Normalize one claim without a chat model (see the module documentation for
/// the heuristics and their limits).
pub fn normalize_offline(input: &NormalizeInput) -> NormalizedClaim {
    let text = input.claim_text.as_str();
    let tokens = tokenize(text);
    let title = lemma(&input.document_title);

    let mut entities: Vec<EntityRef> = Vec::new();
    let mut lemmas: Vec<String> = Vec::new();
    let mut mentions: Vec<Mention> = Vec::new();
    let known = known_names(&input.added_context);
    let turn = turn_prefix(text, &input.added_context);
    for (start, mut end) in name_runs(text, &tokens, &known) {
        // In what a speaker said, `I` after a name and before a lowercase word is
        // the speaker, not a regnal number ("Tell Vera I said hi").
        if turn.is_some_and(|said| start >= said)
            && text.get(..end).is_some_and(|t| t.ends_with(" I"))
            && end - 2 > start
            && text.get(end..).is_some_and(|rest| {
                rest.starts_with(' ') && rest[1..].starts_with(|c: char| c.is_lowercase())
            })
        {
            end -= 2;
        }
        let Some(surface) = text.get(start..end) else {
            continue;
        };
        if !surface.contains(char::is_whitespace) && english::is_function_word(surface) {
            continue;
        }
        let l = lemma(surface);
        if l.is_empty() || l == title {
            continue;
        }
        let entity = match lemmas.iter().position(|x| *x == l) {
            Some(i) => i,
            None => {
                lemmas.push(l);
                entities.push(EntityRef {
                    name: surface.to_string(),
                    surface: surface.to_string(),
                    start: Some(start),
                    end: Some(end),
                });
                entities.len() - 1
            }
        };
        mentions.push(Mention { entity, start, end });
    }
    if entities.is_empty() {
        return NormalizedClaim::default();
    }
    let statement = text.trim().to_string();

    if let Some(said) = turn
        && mentions[0].end <= said
    {
        // A conversation turn kept as `Speaker said: …`: the speaker holds the
        // turn as an observation, and what they said gives relations like any
        // sentence, with `I` standing for the speaker ("I live in Edinburgh").
        let speaker = mentions[0].entity;
        let mut spoken: Vec<Mention> = mentions
            .iter()
            .filter(|m| m.start >= said)
            .cloned()
            .collect();
        spoken.extend(
            tokens
                .iter()
                .filter(|t| t.start >= said && text.get(t.start..t.end) == Some("I"))
                .map(|t| Mention {
                    entity: speaker,
                    start: t.start,
                    end: t.end,
                }),
        );
        spoken.sort_by_key(|m| m.start);
        let (mut relations, _) = find_relations(text, &spoken, &entities);
        // Chat sentences open with imperatives and feelings ("Cherish the
        // moments", "Obstacles are inevitable"): a one-word name whose every
        // mention is a forced capital counts only where a relation shows it is one
        // ("Vera works at Halvard Bank").
        let keep: Vec<bool> = (0..entities.len())
            .map(|e| {
                e == speaker
                    || relations.iter().any(|r| r.subject == e || r.object == e)
                    || entities[e].name.contains(char::is_whitespace)
                    || mentions
                        .iter()
                        .any(|m| m.entity == e && !is_forced(text, m.start))
            })
            .collect();
        let mut index = vec![usize::MAX; entities.len()];
        let mut kept = Vec::new();
        for (e, entity) in entities.into_iter().enumerate() {
            if keep[e] {
                index[e] = kept.len();
                kept.push(entity);
            }
        }
        for r in &mut relations {
            r.subject = index[r.subject];
            r.object = index[r.object];
        }
        return NormalizedClaim {
            entities: kept,
            relations,
            observations: vec![ObservationDraft {
                entity: index[speaker],
                statement,
            }],
        };
    }

    if is_stance(text, &mentions[0]) {
        let holder = entities.swap_remove(mentions[0].entity);
        return NormalizedClaim {
            entities: vec![holder],
            relations: Vec::new(),
            observations: vec![ObservationDraft {
                entity: 0,
                statement,
            }],
        };
    }

    let (relations, pure) = find_relations(text, &mentions, &entities);
    let first = &mentions[0];
    let last = &mentions[mentions.len() - 1];
    let only_relations = pure
        && !relations.is_empty()
        && only_date_words(&text[..first.start])
        && only_date_words(&text[last.end..]);
    let observations = if only_relations {
        Vec::new()
    } else {
        vec![ObservationDraft {
            entity: first.entity,
            statement,
        }]
    };
    NormalizedClaim {
        entities,
        relations,
        observations,
    }
}

/// Where the words of a conversation turn start when the claim reads
/// `Speaker said: …` with that attribution added by claim extraction (its added
/// context says so): the byte after the colon. A document's own "Bob said: …"
/// is not a turn and stays a stance.
fn turn_prefix(text: &str, added: &[String]) -> Option<usize> {
    added
        .iter()
        .find(|a| a.ends_with(" said:") && text.starts_with(a.as_str()))
        .map(String::len)
}

/// One occurrence of an entity in the claim.
#[derive(Clone, Debug)]
struct Mention {
    entity: usize,
    start: usize,
    end: usize,
}

// ---------------------------------------------------------------------------
// Tokens and name runs
// ---------------------------------------------------------------------------

/// A word: byte range in the claim.
#[derive(Clone, Copy, Debug)]
struct Token {
    start: usize,
    end: usize,
}

fn is_joiner(c: char) -> bool {
    matches!(
        c,
        '\'' | '\u{2018}' | '\u{2019}' | '\u{02BC}' | '-' | '\u{2010}' | '\u{2011}' | '.' | '&'
    )
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{02BC}')
}

/// Words: runs of letters and digits, with apostrophes, hyphens, periods and
/// `&` kept between two letters/digits. A single capital letter keeps a
/// following period when a capitalized word follows (initials: `J. R. R.`).
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte_end = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].1.is_alphanumeric() {
            i += 1;
            continue;
        }
        let start_idx = i;
        let mut j = i + 1;
        while j < chars.len() {
            let c = chars[j].1;
            let inner_joiner = is_joiner(c)
                && chars[j - 1].1.is_alphanumeric()
                && chars.get(j + 1).is_some_and(|&(_, n)| n.is_alphanumeric());
            if !(c.is_alphanumeric() || inner_joiner) {
                break;
            }
            j += 1;
        }
        // Initials: the last segment is one uppercase letter, then ". X".
        let last_seg_start = (start_idx..j)
            .rev()
            .find(|&k| chars[k].1 == '.')
            .map_or(start_idx, |k| k + 1);
        if j - last_seg_start == 1
            && chars[last_seg_start].1.is_uppercase()
            && chars.get(j).is_some_and(|&(_, c)| c == '.')
            && chars.get(j + 1).is_some_and(|&(_, c)| c.is_whitespace())
        {
            let next = chars[j + 1..].iter().find(|&&(_, c)| !c.is_whitespace());
            if next.is_some_and(|&(_, c)| c.is_uppercase()) {
                j += 1;
            }
        }
        out.push(Token {
            start: chars[start_idx].0,
            end: byte_end(j),
        });
        i = j;
    }
    out
}

const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "according",
    "additionally",
    "after",
    "afterwards",
    "all",
    "also",
    "although",
    "an",
    "and",
    "any",
    "as",
    "at",
    "because",
    "before",
    "both",
    "but",
    "by",
    "currently",
    "dame",
    "dear",
    "despite",
    "dr",
    "during",
    "each",
    "earlier",
    "either",
    "eventually",
    "every",
    "finally",
    "following",
    "for",
    "formerly",
    "from",
    "furthermore",
    "he",
    "hello",
    "her",
    "here",
    "hers",
    "hi",
    "him",
    "his",
    "how",
    "however",
    "i",
    "if",
    "in",
    "including",
    "initially",
    "it",
    "its",
    "last",
    "later",
    "let",
    "many",
    "me",
    "meanwhile",
    "mine",
    "moreover",
    "most",
    "mr",
    "mrs",
    "ms",
    "mx",
    "my",
    "neither",
    "next",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "ok",
    "okay",
    "on",
    "once",
    "or",
    "originally",
    "our",
    "ours",
    "overall",
    "per",
    "please",
    "previously",
    "prof",
    "recently",
    "several",
    "she",
    "since",
    "sir",
    "so",
    "some",
    "still",
    "thanks",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "though",
    "thus",
    "to",
    "today",
    "tomorrow",
    "until",
    "us",
    "using",
    "via",
    "we",
    "what",
    "when",
    "where",
    "whereas",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "with",
    "yes",
    "yesterday",
    "you",
    "your",
    "yours",
];

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];
const SEASONS: &[&str] = &["spring", "summer", "autumn", "fall", "winter"];
const CALENDAR_ABBREVIATIONS: &[&str] = &[
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mon",
    "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
];

/// Role acronyms and time markers: never part of a name.
const NON_NAMES: &[&str] = &[
    "CEO", "CTO", "CFO", "COO", "CIO", "CMO", "CPO", "CSO", "CISO", "VP", "SVP", "EVP", "AM", "PM",
    "UTC", "GMT", "CET", "CEST", "EST", "EDT", "PST", "PDT",
];

/// Lowercase particles inside personal names.
const NAME_PARTICLES: &[&str] = &[
    "de", "van", "von", "der", "den", "la", "le", "du", "da", "di", "del", "della", "dos", "das",
    "ter", "ten", "bin", "ibn",
];

/// Head words after which `of`/`for` continue a name.
const INSTITUTION_HEADS: &[&str] = &[
    "academy",
    "agency",
    "association",
    "bank",
    "bay",
    "board",
    "bureau",
    "cape",
    "center",
    "centre",
    "chamber",
    "church",
    "city",
    "college",
    "commission",
    "committee",
    "council",
    "county",
    "court",
    "department",
    "duke",
    "federation",
    "foundation",
    "gulf",
    "hall",
    "house",
    "institute",
    "isle",
    "king",
    "kingdom",
    "lake",
    "league",
    "ministry",
    "mount",
    "museum",
    "office",
    "order",
    "party",
    "port",
    "prince",
    "princess",
    "queen",
    "republic",
    "school",
    "sea",
    "society",
    "state",
    "states",
    "tower",
    "union",
    "university",
];

fn lower(s: &str) -> String {
    s.to_lowercase()
}

fn is_capitalized(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

fn is_all_upper(word: &str) -> bool {
    word.chars().any(char::is_alphabetic)
        && word
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase)
}

/// `FY2023`, `FY23`, `CY2024`, `Q1`, `H2`, `Q4-2023`, `FY2023/24`.
fn is_period_token(word: &str) -> bool {
    let upper = word.to_uppercase();
    ["FY", "CY", "Q", "H"].iter().any(|p| {
        upper.strip_prefix(p).is_some_and(|rest| {
            rest.chars().next().is_some_and(|c| c.is_ascii_digit())
                && rest
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '-' | '/' | '\''))
        })
    })
}

/// Conversational words that start sentences capitalized but never name anything.
const CHAT_WORDS: &[&str] = &[
    "absolutely",
    "actually",
    "almost",
    "anyway",
    "appreciate",
    "awesome",
    "btw",
    "check",
    "congrats",
    "cool",
    "definitely",
    "did",
    "does",
    "everybody",
    "everyone",
    "exactly",
    "got",
    "gotta",
    "gonna",
    "hey",
    "hi",
    "honestly",
    "lol",
    "made",
    "make",
    "makes",
    "maybe",
    "nope",
    "oh",
    "ok",
    "okay",
    "omg",
    "perfect",
    "plus",
    "really",
    "reminds",
    "show",
    "someone",
    "started",
    "sure",
    "thanks",
    "totally",
    "wanna",
    "well",
    "wish",
    "wow",
    "yay",
    "yeah",
    "yep",
    "yes",
];

/// A contraction (`You've`, `They're`, `It'll`, `Don't`) never names anything.
fn is_contraction(word: &str) -> bool {
    let l = lower(word).replace('\u{2019}', "'");
    ["'ve", "'re", "'ll", "'d", "'m", "n't"]
        .iter()
        .any(|suffix| l.ends_with(suffix))
        || l == "it's"
        || l == "that's"
        || l == "there's"
        || l == "here's"
        // `She's`, `What's`, `Let's`: a pronoun or function word with `'s`.
        || l.strip_suffix("'s").is_some_and(|base| {
            STOP_WORDS.contains(&base) || (english::never_starts_name(base) && base != "i")
        })
}

fn is_stop_word(word: &str) -> bool {
    let l = lower(word);
    let all_caps_acronym = word.chars().count() > 1 && is_all_upper(word);
    (!all_caps_acronym && STOP_WORDS.contains(&l.as_str()))
        || CHAT_WORDS.contains(&l.as_str())
        || is_contraction(word)
}

/// A gerund leading a longer run (`Seeing Melanie`) is a verb, not part of the name.
fn is_leading_gerund(word: &str) -> bool {
    let l = lower(word);
    // Names with a gerund's ending (`Sterling Cooper`, `Reading Festival`) keep it.
    l.chars().count() >= 5 && l.ends_with("ing") && !english::is_gerund_name(&l)
}

fn is_full_calendar_word(word: &str) -> bool {
    let l = lower(word);
    MONTHS.contains(&l.as_str())
        || WEEKDAYS.contains(&l.as_str())
        || WEEKDAYS.contains(&l.strip_suffix('s').unwrap_or(""))
        || SEASONS.contains(&l.as_str())
}

fn is_calendar_word(word: &str) -> bool {
    is_full_calendar_word(word)
        || CALENDAR_ABBREVIATIONS.contains(&lower(word.trim_end_matches('.')).as_str())
}

/// Whether a word can be part of a name.
fn is_nameable(word: &str) -> bool {
    is_capitalized(word) && !is_period_token(word) && !NON_NAMES.contains(&word)
}

/// The byte length of a trailing possessive `'s` (`Acme's` → 2), if any.
fn possessive_len(word: &str) -> Option<usize> {
    let mut rev = word.char_indices().rev();
    let (_, s) = rev.next()?;
    let (ap_idx, ap) = rev.next()?;
    if (s == 's' || s == 'S') && is_apostrophe(ap) && ap_idx > 0 {
        Some(word.len() - ap_idx)
    } else {
        None
    }
}

/// The byte length kept of a capitalized hyphenated word: `Acme-backed` keeps
/// `Acme`; `Jean-Luc` and `GPT-4` stay whole.
fn hyphen_cut(word: &str) -> usize {
    let mut prev_hyphen: Option<usize> = None;
    for (i, c) in word.char_indices() {
        if let Some(h) = prev_hyphen {
            if c.is_lowercase() {
                return h;
            }
            prev_hyphen = None;
        }
        if matches!(c, '-' | '\u{2010}' | '\u{2011}') {
            prev_hyphen = Some(i);
        }
    }
    word.len()
}

/// What joins the next token to a run.
enum Link {
    /// Only whitespace.
    Space,
    /// ` & `.
    Ampersand,
    /// Lowercase connector words (`of`, `van der`, …), as token indices.
    Connectors(usize),
    /// Nothing: the run ends.
    Break,
}

fn is_whitespace_only(s: &str) -> bool {
    !s.is_empty() && s.chars().all(char::is_whitespace)
}

/// The names in `text`, as byte ranges, found as the normalizer finds entities
/// (without added context).
pub(crate) fn names_in(text: &str) -> Vec<(usize, usize)> {
    name_runs(text, &tokenize(text), &[])
}

/// Last words that make a name an organisation's (`Acme Inc`, `Globex Group`).
const ORGANISATION_TAILS: &[&str] = &[
    "ag",
    "associates",
    "bank",
    "co",
    "company",
    "corp",
    "corporation",
    "gmbh",
    "group",
    "holdings",
    "inc",
    "industries",
    "labs",
    "llc",
    "llp",
    "ltd",
    "partners",
    "plc",
    "sa",
    "systems",
    "technologies",
    "ventures",
];

/// Whether a name reads as an organisation's or a place's rather than a person's:
/// an institution's head word (`University of Oslo`), an organisation's last word
/// (`Acme Inc`), an `&`, or all capitals (`NASA`).
pub(crate) fn is_institutional(name: &str) -> bool {
    let words: Vec<String> = tokenize(name)
        .iter()
        .map(|t| lower(name[t.start..t.end].trim_end_matches('.')))
        .collect();
    name.contains('&')
        || (name.chars().count() > 1 && is_all_upper(name))
        || words
            .iter()
            .any(|w| INSTITUTION_HEADS.contains(&w.as_str()))
        || words
            .last()
            .is_some_and(|w| ORGANISATION_TAILS.contains(&w.as_str()))
}

/// The names the extractor added to the claim (a conversation's speaker, in place
/// of `I`): known names wherever they stand.
fn known_names(added: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for a in added {
        let tokens = tokenize(a);
        for (s, e) in name_runs(a, &tokens, &[]) {
            let words: Vec<String> = tokenize(&a[s..e])
                .iter()
                .map(|t| lower(&a[s + t.start..s + t.end]))
                .collect();
            if !words.is_empty() && !out.contains(&words) {
                out.push(words);
            }
        }
    }
    out
}

/// Whether capitalization is forced at byte `at`: the text's first word, or the
/// first word after a sentence end, a colon or a line break (opening quotes,
/// brackets and list markers between them do not count).
fn is_forced(text: &str, at: usize) -> bool {
    let before = &text[..at];
    for (i, c) in before.char_indices().rev() {
        match c {
            c if c.is_whitespace() && c != '\n' => continue,
            // An opening quote starts quoted speech: `asked "Are you …`.
            '"' | '\u{201C}' => {
                if before[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|p| p.is_whitespace() || matches!(p, ':' | '(' | '['))
                {
                    return true;
                }
                continue;
            }
            // A dash between spaces separates clauses (`Family is important - Even
            // though …`); a list marker's dash is followed back to its line start.
            '-' | '\u{2013}' | '\u{2014}'
                if before[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|p| p.is_whitespace() && p != '\n') =>
            {
                return true;
            }
            '\'' | '\u{2018}' | '(' | '[' | '*' | '-' | '\u{2022}' | '>' | '#' | '_'
            | '\u{2013}' | '\u{2014}' => continue,
            '.' | '!' | '?' | ':' | '\n' | '\u{2026}' => return true,
            _ => return false,
        }
    }
    true
}

/// Byte ranges of candidate names, in text order. `known` are names (as lowercase
/// words) that the claim's added context vouches for.
///
/// Where capitalization is forced (a sentence's first word), a run must earn its
/// name: words that never begin a name are stripped from its front (`Glad Gina` →
/// `Gina`), anything before a known name is stripped (`Lately John` → `John`), a
/// known name written twice is one (`Maria Maria`), and a single common word
/// (`Family`, `Painting`) is no name at all. Elsewhere a single all-capitals
/// common word is emphasis (`INTENSE`), not a name.
fn name_runs(text: &str, tokens: &[Token], known: &[Vec<String>]) -> Vec<(usize, usize)> {
    let word = |i: usize| &text[tokens[i].start..tokens[i].end];
    let gap = |i: usize| &text[tokens[i].end..tokens[i + 1].start];
    let mut runs = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_nameable(word(i)) {
            i += 1;
            continue;
        }
        // Token indices of the run's capitalized words (connectors are implied
        // between them) and the byte end of the run.
        let mut words = vec![i];
        let mut end = tokens[i].start + hyphen_cut(word(i));
        let mut joined_of = false;
        let mut j = i;
        loop {
            let w = word(j);
            if let Some(p) = possessive_len(w) {
                end = tokens[j].end - p;
                break;
            }
            if hyphen_cut(w) < w.len() || j + 1 >= tokens.len() {
                break;
            }
            let link = link_after(tokens, j, joined_of, &word, &gap);
            let next = match link {
                Link::Space | Link::Ampersand => j + 1,
                Link::Connectors(n) => {
                    let first = lower(word(j + 1));
                    if first == "of" || first == "for" {
                        joined_of = true;
                    }
                    j + 1 + n
                }
                Link::Break => break,
            };
            j = next;
            words.push(j);
            let nw = word(j);
            end = tokens[j].start + hyphen_cut(nw);
        }
        i = j + 1;
        let forced = is_forced(text, tokens[words[0]].start);
        // A quoted run of two or more words is a title: its first word stays
        // (`'Finding Freedom'`, `"Keep Going"`).
        let quoted = text[..tokens[words[0]].start].ends_with(['"', '\'', '\u{201C}', '\u{2018}']);
        let lowered: Vec<String> = words.iter().map(|&w| lower(word(w))).collect();
        // A known name inside a forced run: what precedes it is not part of it.
        let mut k = 0;
        if forced
            && let Some(at) = (1..words.len()).find(|&at| {
                known
                    .iter()
                    .any(|n| lowered.get(at..at + n.len()) == Some(n.as_slice()))
            })
        {
            k = at;
        }
        // Strip leading stop words, calendar words and, where capitalization is
        // forced, words that never begin a name.
        while k < words.len() && {
            let w = word(words[k]);
            let more = k + 1 < words.len();
            is_stop_word(w)
                || is_full_calendar_word(w)
                || (more && !quoted && is_leading_gerund(w))
                || (forced && more && !quoted && english::never_starts_name(w))
        } {
            k += 1;
        }
        if k >= words.len() {
            continue;
        }
        if k == words.len() - 1 && is_calendar_word(word(words[k])) {
            continue;
        }

        // The same name twice in a row (two rewritten pronouns): one mention.
        if words.len() - k == 2
            && lowered[k] == lowered[k + 1]
            && is_whitespace_only(&text[tokens[words[k]].end..tokens[words[k + 1]].start])
        {
            end = tokens[words[k]].end;
        }
        if words.len() - k == 1 || end == tokens[words[k]].end {
            let w = &text[tokens[words[k]].start..end.max(tokens[words[k]].start)];
            let is_known = known.iter().any(|n| n.len() == 1 && n[0] == lowered[k]);
            let common = english::is_common_word(w);
            if !is_known && common && (forced || (w.chars().count() > 1 && is_all_upper(w))) {
                continue;
            }
        }
        let start = tokens[words[k]].start;
        if start < end {
            runs.push((start, end));
        }
    }
    runs
}

/// How token `j` links to what follows it inside a name run.
fn link_after<'t>(
    tokens: &[Token],
    j: usize,
    joined_of: bool,
    word: &dyn Fn(usize) -> &'t str,
    gap: &dyn Fn(usize) -> &'t str,
) -> Link {
    let g = gap(j);
    let next_ok = |k: usize| k < tokens.len() && is_nameable(word(k));
    if is_whitespace_only(g) && next_ok(j + 1) {
        return Link::Space;
    }
    if g.trim() == "&" && g.len() > 1 && next_ok(j + 1) {
        return Link::Ampersand;
    }
    if !is_whitespace_only(g) {
        return Link::Break;
    }
    // Up to two lowercase connector words, then a capitalized word.
    let prev = lower(word(j));
    for n in 1..=2usize {
        let last = j + n;
        if last + 1 >= tokens.len() || !is_whitespace_only(gap(last)) {
            return Link::Break;
        }
        let conns: Vec<String> = (j + 1..=last).map(|k| word(k).to_string()).collect();
        // `of` alone may not join where `of the` does (`Lord of the Rings`).
        if connectors_ok(&conns, &prev, joined_of) && next_ok(last + 1) {
            return Link::Connectors(n);
        }
    }
    Link::Break
}

fn connectors_ok(conns: &[String], prev: &str, joined_of: bool) -> bool {
    let Some(first) = conns.first() else {
        return false;
    };
    let rest_ok = |allowed: &[&str]| conns[1..].iter().all(|c| allowed.contains(&c.as_str()));
    match first.as_str() {
        // After an institution's head word (`University of Oslo`, `Bank of the
        // West`); `of the` after any name word and `of` after a common noun make a
        // title (`Lord of the Rings`, `Game of Thrones`).
        "of" | "for" => {
            rest_ok(&["the"])
                && (INSTITUTION_HEADS.contains(&prev)
                    || (first == "of" && conns.len() == 2)
                    || (first == "of"
                        && english::is_common_word(prev)
                        && !english::never_starts_name(prev)))
        }
        "and" => joined_of && conns.len() == 1,
        c if NAME_PARTICLES.contains(&c) => rest_ok(NAME_PARTICLES),
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Stance
// ---------------------------------------------------------------------------

const STANCE_VERBS: &[&str] = &[
    "said",
    "says",
    "stated",
    "states",
    "believes",
    "believed",
    "thinks",
    "thought",
    "argues",
    "argued",
    "prefers",
    "preferred",
    "opposes",
    "opposed",
    "supports",
    "supported",
    "claims",
    "claimed",
    "feels",
    "felt",
];

/// Words allowed between the holder and the stance verb.
const STANCE_ADVERBS: &[&str] = &[
    "has",
    "had",
    "also",
    "strongly",
    "publicly",
    "firmly",
    "repeatedly",
    "still",
];

/// The word with surrounding punctuation removed, lowercased.
fn bare_lower(word: &str) -> String {
    lower(word.trim_matches(|c: char| !c.is_alphanumeric()))
}

fn is_stance(text: &str, holder: &Mention) -> bool {
    let before = lower(text[..holder.start].trim_end());
    if before.ends_with("according to") && text[holder.end..].trim_start().starts_with(',') {
        return true;
    }
    let after = &text[holder.end..];
    if !after.starts_with(char::is_whitespace) {
        return false;
    }
    let mut words = after.split_whitespace().map(bare_lower);
    match words.next() {
        Some(w) if STANCE_VERBS.contains(&w.as_str()) => true,
        Some(w) if STANCE_ADVERBS.contains(&w.as_str()) => words
            .next()
            .is_some_and(|v| STANCE_VERBS.contains(&v.as_str())),
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Relations
// ---------------------------------------------------------------------------

/// Verb phrases (after auxiliaries and trailing determiners are dropped) →
/// (core predicate, reversed direction).
const VERB_TABLE: &[(&str, &str, bool)] = &[
    ("works for", "works_for", false),
    ("worked for", "works_for", false),
    ("work for", "works_for", false),
    ("working for", "works_for", false),
    ("works at", "works_for", false),
    ("worked at", "works_for", false),
    ("work at", "works_for", false),
    ("working at", "works_for", false),
    ("started at", "works_for", false),
    ("starting at", "works_for", false),
    ("employed by", "works_for", false),
    ("employed at", "works_for", false),
    ("an employee of", "works_for", false),
    ("employee of", "works_for", false),
    ("hired by", "works_for", false),
    ("joined", "works_for", false),
    ("joins", "works_for", false),
    ("employs", "works_for", true),
    ("employed", "works_for", true),
    ("hired", "works_for", true),
    ("a member of", "member_of", false),
    ("member of", "member_of", false),
    ("became a member of", "member_of", false),
    ("belongs to", "member_of", false),
    ("belonged to", "member_of", false),
    ("lives in", "located_in", false),
    ("live in", "located_in", false),
    ("lived in", "located_in", false),
    ("living in", "located_in", false),
    ("based in", "located_in", false),
    ("located in", "located_in", false),
    ("headquartered in", "located_in", false),
    ("resides in", "located_in", false),
    ("resided in", "located_in", false),
    ("situated in", "located_in", false),
    ("moved to", "located_in", false),
    ("relocated to", "located_in", false),
    ("founded", "founded", false),
    ("co-founded", "founded", false),
    ("cofounded", "founded", false),
    ("established", "founded", false),
    ("the founder of", "founded", false),
    ("a founder of", "founded", false),
    ("founder of", "founded", false),
    ("the co-founder of", "founded", false),
    ("a co-founder of", "founded", false),
    ("co-founder of", "founded", false),
    ("founded by", "founded", true),
    ("co-founded by", "founded", true),
    ("established by", "founded", true),
    ("wrote", "authored", false),
    ("written", "authored", false),
    ("authored", "authored", false),
    ("co-authored", "authored", false),
    ("the author of", "authored", false),
    ("author of", "authored", false),
    ("written by", "authored", true),
    ("authored by", "authored", true),
    ("created", "created", false),
    ("built", "created", false),
    ("invented", "created", false),
    ("designed", "created", false),
    ("created by", "created", true),
    ("built by", "created", true),
    ("invented by", "created", true),
    ("designed by", "created", true),
    ("reports to", "reports_to", false),
    ("reported to", "reports_to", false),
    ("report to", "reports_to", false),
    ("reporting to", "reports_to", false),
    ("managed by", "reports_to", false),
    ("supervised by", "reports_to", false),
    ("works under", "reports_to", false),
    ("worked under", "reports_to", false),
    ("manages", "reports_to", true),
    ("managed", "reports_to", true),
    ("supervises", "reports_to", true),
    ("knows", "knows", false),
    ("knew", "knows", false),
    ("known", "knows", false),
    ("met", "knows", false),
    ("meets", "knows", false),
    ("friends with", "knows", false),
    ("acquainted with", "knows", false),
    ("a friend of", "knows", false),
    ("works on", "works_on", false),
    ("worked on", "works_on", false),
    ("work on", "works_on", false),
    ("working on", "works_on", false),
    ("contributes to", "works_on", false),
    ("contributed to", "works_on", false),
    ("maintains", "works_on", false),
    ("maintained", "works_on", false),
    ("uses", "uses", false),
    ("used", "uses", false),
    ("using", "uses", false),
    ("relies on", "uses", false),
    ("relied on", "uses", false),
    ("part of", "part_of", false),
    ("a part of", "part_of", false),
    ("a division of", "part_of", false),
    ("division of", "part_of", false),
    ("a subsidiary of", "part_of", false),
    ("subsidiary of", "part_of", false),
    ("a unit of", "part_of", false),
    ("participated in", "participated_in", false),
    ("participates in", "participated_in", false),
    ("attended", "participated_in", false),
    ("attends", "participated_in", false),
    ("took part in", "participated_in", false),
    ("takes part in", "participated_in", false),
    ("competed in", "participated_in", false),
    ("affiliated with", "affiliated_with", false),
    ("partnered with", "affiliated_with", false),
    ("partners with", "affiliated_with", false),
    ("a partner of", "affiliated_with", false),
];

/// Auxiliaries and adverbs dropped from the front of a gap.
const LEADING_SKIP: &[&str] = &[
    "has",
    "have",
    "had",
    "been",
    "is",
    "was",
    "are",
    "were",
    "be",
    "being",
    "also",
    "now",
    "still",
    "currently",
    "previously",
    "formerly",
    "recently",
    "later",
    "then",
    "once",
    "officially",
    "eventually",
    "finally",
    "first",
    "already",
    "since",
    "just",
    "long",
    "originally",
    "initially",
    "subsequently",
    "together",
    "jointly",
];

/// Any of these in a gap: no relation.
const BLOCKERS: &[&str] = &[
    "not",
    "never",
    "no",
    "nor",
    "longer",
    "will",
    "would",
    "could",
    "should",
    "might",
    "may",
    "must",
    "can",
    "shall",
    "wants",
    "wanted",
    "plans",
    "planned",
    "hopes",
    "hoped",
    "intends",
    "intended",
    "expects",
    "expected",
    "tried",
    "tries",
    "if",
    "whether",
    "who",
    "which",
    "that",
    "whom",
    "whose",
    "when",
    "where",
    "while",
    "because",
    "but",
    "or",
    "than",
    "told",
    "tells",
    "asked",
    "allegedly",
    "reportedly",
    "nearly",
    "almost",
];

/// Verbs of leaving: a change, never a relation.
const LEAVE_VERBS: &[&str] = &[
    "left", "leaves", "leaving", "leave", "quit", "quits", "resigned", "resigns", "departed",
    "departs", "exited", "exits", "retired", "fired", "laid", "stepped", "stopped", "ceased",
    "dropped",
];

/// Irregular past forms accepted for `other:` relations.
const IRREGULAR_PAST: &[&str] = &[
    "won", "beat", "led", "sold", "bought", "ran", "taught", "lost", "fought", "held", "paid",
    "sent", "sued",
];

/// Particles allowed after the verb of an `other:` relation.
const PARTICLES: &[&str] = &[
    "with",
    "against",
    "by",
    "in",
    "on",
    "at",
    "for",
    "from",
    "into",
    "over",
    "under",
    "about",
    "off",
    "up",
    "out",
    "of",
    "alongside",
];

const DETERMINERS: &[&str] = &["the", "a", "an", "its", "his", "her", "their"];

/// What the words between two mentions say.
enum Gap {
    /// `and`, `,`, `, and`, `&`.
    Coordination,
    /// A relation verb; `coordinated` when it followed `and` ("… and joined").
    Verb {
        predicate: Predicate,
        reversed: bool,
        /// The readable phrase for the label.
        phrase: String,
        coordinated: bool,
    },
    /// A leaving verb.
    Leave { coordinated: bool },
    /// Anything else.
    Other,
}

fn classify_gap(raw: &str) -> Gap {
    // A gap glued to a mention ("Acme-backed", "Alice's") is never a verb.
    if !raw.starts_with(|c: char| c.is_whitespace() || c == ',') {
        return Gap::Other;
    }
    let lowered = raw.to_lowercase();
    let trimmed = lowered.trim();
    let compact: String = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
    if matches!(compact.as_str(), "and" | "," | ",and" | "&") {
        return Gap::Coordination;
    }
    let mut rest = trimmed;
    let mut coordinated = false;
    if let Some(r) = rest.strip_prefix(',') {
        rest = r.trim_start();
        if !rest.starts_with("and ") {
            return Gap::Other;
        }
    }
    if !rest
        .chars()
        .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_whitespace())
    {
        return Gap::Other;
    }
    let mut words: Vec<&str> = rest.split_whitespace().collect();
    if words.first() == Some(&"and") {
        coordinated = true;
        words.remove(0);
        if words.first() == Some(&"then") {
            words.remove(0);
        }
    }
    if words.is_empty() || words.iter().any(|w| BLOCKERS.contains(w)) {
        return Gap::Other;
    }
    if words.iter().any(|w| STANCE_VERBS.contains(w)) {
        return Gap::Other;
    }
    while words.len() > 1 && DETERMINERS.contains(&words[words.len() - 1]) {
        words.pop();
    }
    let phrase_words = words.clone();
    let mut core: Vec<&str> = words;
    while !core.is_empty() && LEADING_SKIP.contains(&core[0]) {
        core.remove(0);
    }
    let Some(&verb) = core.first() else {
        return Gap::Other;
    };
    if LEAVE_VERBS.contains(&verb) {
        return Gap::Leave { coordinated };
    }
    let key = core.join(" ");
    if let Some(&(_, name, reversed)) = VERB_TABLE.iter().find(|(p, _, _)| *p == key) {
        if let Ok(predicate) = Predicate::parse(name) {
            return Gap::Verb {
                phrase: readable_phrase(&predicate, &phrase_words),
                predicate,
                reversed,
                coordinated,
            };
        }
        return Gap::Other;
    }
    // Conservative `other:`: a past-tense verb plus at most two particles.
    let verb_like = (verb.len() >= 4 && verb.ends_with("ed")) || IRREGULAR_PAST.contains(&verb);
    if !verb_like
        || core.len() > 3
        || phrase_words.len() > 4
        || !core[1..].iter().all(|w| PARTICLES.contains(w))
    {
        return Gap::Other;
    }
    let predicate = predicates::resolve(&key);
    Gap::Verb {
        phrase: readable_phrase(&predicate, &phrase_words),
        predicate,
        reversed: false,
        coordinated,
    }
}

/// The phrase used in a fact label: a fixed phrase for core predicates, the
/// claim's own words for `other:` ones.
fn readable_phrase(predicate: &Predicate, words: &[&str]) -> String {
    let fixed = match predicate.spec().map(|s| s.name) {
        Some("works_for") => "works for",
        Some("member_of") => "is a member of",
        Some("affiliated_with") => "is affiliated with",
        Some("located_in") => "is located in",
        Some("part_of") => "is part of",
        Some("authored") => "authored",
        Some("created") => "created",
        Some("about") => "is about",
        Some("knows_about") => "knows about",
        Some("knows") => "knows",
        Some("participated_in") => "participated in",
        Some("works_on") => "works on",
        Some("founded") => "founded",
        Some("related_to") => "is related to",
        Some("uses") => "uses",
        Some("reports_to") => "reports to",
        _ => return words.join(" "),
    };
    fixed.to_string()
}

fn label(subject: &str, phrase: &str, object: &str) -> String {
    format!("{subject} {phrase} {object}.")
}

/// The last relation, for object coordination ("founded Acme and Globex").
struct LastRelation {
    subjects: Vec<usize>,
    predicate: Predicate,
    reversed: bool,
    phrase: String,
    /// The entity in the object slot of the text.
    object: usize,
}

/// Words that may follow a relation's object: the object is then the whole
/// name, not a modifier of a noun ("an LGBTQ support group").
const AFTER_OBJECT: &[&str] = &[
    "in",
    "on",
    "at",
    "since",
    "from",
    "until",
    "till",
    "to",
    "for",
    "with",
    "by",
    "as",
    "and",
    "or",
    "but",
    "after",
    "before",
    "during",
    "when",
    "while",
    "because",
    "who",
    "which",
    "that",
    "where",
    "last",
    "this",
    "next",
    "yesterday",
    "today",
    "tomorrow",
    "ago",
    "again",
    "too",
    "also",
    "together",
    "instead",
    "now",
    "then",
    "early",
    "late",
    "between",
    "through",
    "via",
    "under",
    "over",
    "once",
    "twice",
    "there",
    "here",
    "online",
    "remotely",
    "these",
    "so",
    "though",
    "still",
];

/// Whether the mention ending at `end` stands as a whole noun phrase: it is
/// followed by the end, punctuation other than a glued apostrophe or hyphen, a
/// capitalized word, or a lowercase word from [`AFTER_OBJECT`] or ending in
/// `-ly`. Not after it: a possessive `'s`, a number, a noun ("Acme engineers").
fn stands_alone(text: &str, end: usize) -> bool {
    let rest = text.get(end..).unwrap_or("");
    let Some(first) = rest.chars().next() else {
        return true;
    };
    if !first.is_whitespace() {
        let glued = is_apostrophe(first) || matches!(first, '-' | '\u{2010}' | '\u{2011}');
        return !glued;
    }
    let Some(word) = rest.split_whitespace().next() else {
        return true;
    };
    let Some(c) = word.chars().next() else {
        return true;
    };
    if c.is_uppercase() || !c.is_alphanumeric() {
        return true;
    }
    if !c.is_lowercase() {
        return false;
    }
    let w = bare_lower(word);
    AFTER_OBJECT.contains(&w.as_str()) || w.ends_with("ly")
}

/// Adds one relation (deduplicated); `false` when subject and object are the
/// same entity.
fn emit(
    out: &mut Vec<RelationDraft>,
    entities: &[EntityRef],
    (s, o): (usize, usize),
    predicate: &Predicate,
    reversed: bool,
    phrase: &str,
) -> bool {
    let (s, o) = if reversed { (o, s) } else { (s, o) };
    if s == o {
        return false;
    }
    if !out
        .iter()
        .any(|r| r.subject == s && r.object == o && r.predicate == *predicate)
    {
        out.push(RelationDraft {
            subject: s,
            predicate: predicate.clone(),
            object: o,
            label: label(&entities[s].name, phrase, &entities[o].name),
        });
    }
    true
}

/// Relations between consecutive mentions, and whether every gap fed a
/// relation (the claim is nothing but its relations).
fn find_relations(
    text: &str,
    mentions: &[Mention],
    entities: &[EntityRef],
) -> (Vec<RelationDraft>, bool) {
    let mut out: Vec<RelationDraft> = Vec::new();
    let mut pure = true;
    let mut pending: Vec<usize> = Vec::new();
    let mut clause_subjects: Vec<usize> = Vec::new();
    let mut last: Option<LastRelation> = None;

    for pair in mentions.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let raw = text.get(a.end..b.start).unwrap_or("");
        if a.end > b.start {
            pure = false;
            continue;
        }
        match classify_gap(raw) {
            Gap::Coordination => {
                if let Some(l) = last.as_mut().filter(|l| l.object == a.entity) {
                    if !stands_alone(text, b.end) {
                        last = None;
                        pure = false;
                        continue;
                    }
                    let mut any = false;
                    for &s in &l.subjects {
                        any |= emit(
                            &mut out,
                            entities,
                            (s, b.entity),
                            &l.predicate,
                            l.reversed,
                            &l.phrase,
                        );
                    }
                    l.object = b.entity;
                    pure &= any;
                } else {
                    last = None;
                    if pending.last() != Some(&a.entity) {
                        pending = vec![a.entity];
                    }
                    pending.push(b.entity);
                }
            }
            Gap::Verb {
                predicate,
                reversed,
                phrase,
                coordinated,
            } => {
                let subjects = if coordinated {
                    clause_subjects.clone()
                } else if pending.last() == Some(&a.entity) {
                    std::mem::take(&mut pending)
                } else {
                    vec![a.entity]
                };
                pending.clear();
                clause_subjects = subjects.clone();
                if !stands_alone(text, b.end) {
                    last = None;
                    pure = false;
                    continue;
                }
                let mut any = false;
                for &s in &subjects {
                    any |= emit(
                        &mut out,
                        entities,
                        (s, b.entity),
                        &predicate,
                        reversed,
                        &phrase,
                    );
                }
                pure &= any;
                last = Some(LastRelation {
                    subjects,
                    predicate,
                    reversed,
                    phrase,
                    object: b.entity,
                });
            }
            Gap::Leave { coordinated } => {
                if !coordinated {
                    clause_subjects = if pending.last() == Some(&a.entity) {
                        std::mem::take(&mut pending)
                    } else {
                        vec![a.entity]
                    };
                }
                pending.clear();
                last = None;
                pure = false;
            }
            Gap::Other => {
                pending.clear();
                last = None;
                pure = false;
            }
        }
    }
    (out, pure && pending.is_empty())
}

// ---------------------------------------------------------------------------
// Residue
// ---------------------------------------------------------------------------

const DATE_WORDS: &[&str] = &[
    "in",
    "on",
    "at",
    "since",
    "from",
    "until",
    "till",
    "to",
    "through",
    "by",
    "during",
    "as",
    "of",
    "the",
    "early",
    "late",
    "mid",
    "middle",
    "end",
    "start",
    "beginning",
    "around",
    "about",
    "before",
    "after",
    "between",
    "and",
    "ago",
    "last",
    "this",
    "next",
    "year",
    "years",
    "month",
    "months",
    "week",
    "weeks",
    "day",
    "days",
    "quarter",
    "today",
    "yesterday",
    "tomorrow",
    "now",
    "currently",
    "still",
    "then",
    "also",
];

/// Whether `s` holds only date words, years, period tokens, month/weekday
/// names (with day numbers and ordinals) and punctuation.
fn only_date_words(s: &str) -> bool {
    let words: Vec<&str> = s
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has_calendar_word = words.iter().any(|w| is_calendar_word(w));
    words.iter().all(|w| {
        let l = lower(w);
        let digits = !l.is_empty() && l.chars().all(|c| c.is_ascii_digit());
        // A year stands alone; a day number or ordinal needs a month or weekday.
        (digits && (l.len() == 4 || has_calendar_word))
            || (is_ordinal(&l) && has_calendar_word)
            || is_period_token(w)
            || is_calendar_word(w)
            || DATE_WORDS.contains(&l.as_str())
    })
}

fn is_ordinal(l: &str) -> bool {
    ["st", "nd", "rd", "th"].iter().any(|suffix| {
        l.strip_suffix(suffix)
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{Validity, ValidityKind};
    use proptest::prelude::*;

    fn input(claim: &str, title: &str) -> NormalizeInput {
        NormalizeInput {
            claim_text: claim.to_string(),
            added_context: Vec::new(),
            document_title: title.to_string(),
            validity: Validity::unknown(ValidityKind::State),
        }
    }

    fn run(claim: &str) -> NormalizedClaim {
        normalize_offline(&input(claim, "Meeting notes"))
    }

    fn names(n: &NormalizedClaim) -> Vec<&str> {
        n.entities.iter().map(|e| e.name.as_str()).collect()
    }

    fn rels(n: &NormalizedClaim) -> Vec<(String, String, String)> {
        n.relations
            .iter()
            .map(|r| {
                (
                    n.entities[r.subject].name.clone(),
                    r.predicate.as_str().into_owned(),
                    n.entities[r.object].name.clone(),
                )
            })
            .collect()
    }

    fn rel(s: &str, p: &str, o: &str) -> (String, String, String) {
        (s.to_string(), p.to_string(), o.to_string())
    }

    fn assert_invariants(claim: &str, n: &NormalizedClaim) {
        for e in &n.entities {
            let (Some(s), Some(t)) = (e.start, e.end) else {
                panic!("offline entity without span: {e:?}");
            };
            assert_eq!(&claim[s..t], e.surface, "{claim:?}");
            assert!(!e.name.is_empty());
        }
        for r in &n.relations {
            assert!(r.subject < n.entities.len() && r.object < n.entities.len());
            assert_ne!(r.subject, r.object);
            assert!(r.label.ends_with('.'));
        }
        for o in &n.observations {
            assert!(o.entity < n.entities.len());
        }
        let mut lemmas: Vec<String> = n.entities.iter().map(|e| lemma(&e.name)).collect();
        let count = lemmas.len();
        lemmas.sort();
        lemmas.dedup();
        assert_eq!(lemmas.len(), count, "duplicate entity lemmas in {claim:?}");
    }

    #[test]
    fn works_for_with_a_date() {
        let claim = "Alice has worked for Acme since March 2024.";
        let n = run(claim);
        assert_invariants(claim, &n);
        assert_eq!(names(&n), ["Alice", "Acme"]);
        assert_eq!(rels(&n), [rel("Alice", "works_for", "Acme")]);
        assert_eq!(n.relations[0].label, "Alice works for Acme.");
        // Nothing but the relation and a date: no observation.
        assert!(n.observations.is_empty());
    }

    #[test]
    fn leaving_is_not_a_relation() {
        let claim = "In February 2026 Alice left Acme and joined Globex.";
        let n = run(claim);
        assert_invariants(claim, &n);
        assert_eq!(names(&n), ["Alice", "Acme", "Globex"]);
        assert_eq!(rels(&n), [rel("Alice", "works_for", "Globex")]);
        assert_eq!(n.observations.len(), 1);
        assert_eq!(n.observations[0].entity, 0);
        assert_eq!(n.observations[0].statement, claim);
    }

    #[test]
    fn possessive_and_period_tokens() {
        let claim = "Acme's FY2023 revenue was $5M.";
        let n = run(claim);
        assert_invariants(claim, &n);
        assert_eq!(names(&n), ["Acme"]);
        assert_eq!(n.entities[0].surface, "Acme");
        assert_eq!((n.entities[0].start, n.entities[0].end), (Some(0), Some(4)));
        assert!(n.relations.is_empty());
        assert_eq!(
            n.observations,
            [ObservationDraft {
                entity: 0,
                statement: claim.to_string()
            }]
        );
        for c in ["Revenue grew in Q1 and H2.", "In Q3 2024 and FY23 it fell."] {
            let n = run(c);
            assert!(
                !names(&n)
                    .iter()
                    .any(|x| x.starts_with('Q') || x.starts_with('H') || x.starts_with("FY"))
            );
        }
    }

    #[test]
    fn attributed_stance_is_an_observation_on_the_holder() {
        let claim = "Bob said that Acme is going bankrupt.";
        let n = run(claim);
        assert_invariants(claim, &n);
        assert_eq!(names(&n), ["Bob"]);
        assert!(n.relations.is_empty());
        assert_eq!(
            n.observations,
            [ObservationDraft {
                entity: 0,
                statement: claim.to_string()
            }]
        );
        for c in [
            "Bob opposes the pricing change at Acme.",
            "Carol Danvers strongly believes Globex will win.",
            "In the meeting, Bob argued Acme should hire Dana.",
            "According to Bob, Acme works with Globex.",
        ] {
            let n = run(c);
            assert_invariants(c, &n);
            assert_eq!(n.entities.len(), 1, "{c:?}");
            assert!(n.relations.is_empty(), "{c:?}");
            assert_eq!(n.observations.len(), 1, "{c:?}");
            assert_eq!(n.observations[0].statement, c);
        }
    }

    #[test]
    fn multi_word_names_and_an_other_relation() {
        let claim = "Jan Novak won the Prague Open chess tournament in May 2023.";
        let n = run(claim);
        assert_invariants(claim, &n);
        assert_eq!(names(&n), ["Jan Novak", "Prague Open"]);
        // "Prague Open" modifies "chess tournament": no relation to it.
        assert!(n.relations.is_empty());
        assert_eq!(n.observations.len(), 1);
        assert_eq!(n.observations[0].entity, 0);
        assert_eq!(n.observations[0].statement, claim);
        let claim = "Jan Novak won the Prague Open in May 2023.";
        let n = run(claim);
        assert_invariants(claim, &n);
        assert_eq!(rels(&n), [rel("Jan Novak", "other:won", "Prague Open")]);
        assert_eq!(n.relations[0].label, "Jan Novak won Prague Open.");
        assert!(n.observations.is_empty());
    }

    #[test]
    fn the_document_title_is_never_an_entity() {
        let n = normalize_offline(&input(
            "Project Phoenix launched in May 2024.",
            "Project Phoenix",
        ));
        assert_eq!(n, NormalizedClaim::default());
        let n = normalize_offline(&input(
            "The Quarterly Report covers Acme.",
            "quarterly report",
        ));
        assert_eq!(names(&n), ["Acme"]);
    }

    #[test]
    fn no_entity_gives_empty_output() {
        for c in [
            "",
            "   ",
            "the company grew fast.",
            "He said it was fine.",
            "In March the team met on Monday.",
            "It rained in Q2 2024.",
        ] {
            assert_eq!(run(c), NormalizedClaim::default(), "{c:?}");
        }
    }

    #[test]
    fn name_shapes() {
        let cases: &[(&str, &[&str])] = &[
            (
                "J. R. R. Tolkien wrote The Hobbit.",
                &["J. R. R. Tolkien", "Hobbit"],
            ),
            (
                "Shaquille O'Neil met Jean-Luc Picard.",
                &["Shaquille O'Neil", "Jean-Luc Picard"],
            ),
            (
                "The Acme Corporation uses GPT-4.",
                &["Acme Corporation", "GPT-4"],
            ),
            (
                "Alice studied at the University of Oslo.",
                &["Alice", "University of Oslo"],
            ),
            (
                "Ludwig van Beethoven lived in Vienna.",
                &["Ludwig van Beethoven", "Vienna"],
            ),
            (
                "Alice Smith of Acme met NASA staff.",
                &["Alice Smith", "Acme", "NASA"],
            ),
            (
                "Alice joined the Bank of the West.",
                &["Alice", "Bank of the West"],
            ),
            (
                "Johnson & Johnson hired Dana at 3 PM UTC.",
                &["Johnson & Johnson", "Dana"],
            ),
            ("On Monday Alice met Bob.", &["Alice", "Bob"]),
            (
                "After that, Alice became the CEO of Acme.",
                &["Alice", "Acme"],
            ),
            (
                "Dr. Smith works at Acme-backed Globex.",
                &["Smith", "Acme", "Globex"],
            ),
            ("I met Alice and Alice met Bob.", &["Alice", "Bob"]),
            (
                "Theresa May visited Paris on Sunday.",
                &["Theresa May", "Paris"],
            ),
        ];
        for (claim, want) in cases {
            let n = run(claim);
            assert_invariants(claim, &n);
            assert_eq!(names(&n), *want, "{claim:?}");
        }
    }

    type Triple<'a> = (&'a str, &'a str, &'a str);

    #[test]
    fn relation_patterns() {
        let cases: &[(&str, &[Triple])] = &[
            ("Alice works at Acme.", &[("Alice", "works_for", "Acme")]),
            (
                "Alice is a member of the Chess Club.",
                &[("Alice", "member_of", "Chess Club")],
            ),
            (
                "Alice lives in Berlin.",
                &[("Alice", "located_in", "Berlin")],
            ),
            (
                "Acme is based in Berlin.",
                &[("Acme", "located_in", "Berlin")],
            ),
            (
                "Alice co-founded Globex.",
                &[("Alice", "founded", "Globex")],
            ),
            (
                "Globex was founded by Alice.",
                &[("Alice", "founded", "Globex")],
            ),
            (
                "Bob wrote Dune Notes.",
                &[("Bob", "authored", "Dune Notes")],
            ),
            ("Alice built Tinker.", &[("Alice", "created", "Tinker")]),
            ("Alice reports to Bob.", &[("Alice", "reports_to", "Bob")]),
            ("Bob manages Alice.", &[("Alice", "reports_to", "Bob")]),
            ("Alice knows Bob.", &[("Alice", "knows", "Bob")]),
            (
                "Alice works on Phoenix.",
                &[("Alice", "works_on", "Phoenix")],
            ),
            ("Acme uses Postgres.", &[("Acme", "uses", "Postgres")]),
            (
                "Globex Labs is part of Globex.",
                &[("Globex Labs", "part_of", "Globex")],
            ),
            (
                "Alice attended RustConf.",
                &[("Alice", "participated_in", "RustConf")],
            ),
            (
                "Alice took part in RustConf.",
                &[("Alice", "participated_in", "RustConf")],
            ),
            (
                "Acme acquired Globex.",
                &[("Acme", "other:acquired", "Globex")],
            ),
            (
                "Acme partnered with Globex.",
                &[("Acme", "affiliated_with", "Globex")],
            ),
            (
                "Alice and Bob founded Acme.",
                &[("Alice", "founded", "Acme"), ("Bob", "founded", "Acme")],
            ),
            (
                "Alice founded Acme and Globex.",
                &[("Alice", "founded", "Acme"), ("Alice", "founded", "Globex")],
            ),
        ];
        for (claim, want) in cases {
            let n = run(claim);
            assert_invariants(claim, &n);
            let want: Vec<_> = want.iter().map(|(s, p, o)| rel(s, p, o)).collect();
            assert_eq!(rels(&n), want, "{claim:?}");
            assert!(n.observations.is_empty(), "{claim:?}");
        }
    }

    #[test]
    fn conservative_gaps_give_no_relation() {
        for claim in [
            "Alice no longer works for Acme.",
            "Alice does not work for Acme.",
            "Alice will join Acme.",
            "Alice wants to join Acme.",
            "Alice met Bob, who works for Acme.",
            "Alice quit Acme.",
            "Alice's team uses Rust.",
            "Alice told Bob about Acme.",
            "Alice and her friend Bob visited Rome.",
            "Alice sometimes really likes Bob.",
        ] {
            let n = run(claim);
            assert_invariants(claim, &n);
            assert!(
                !rels(&n)
                    .iter()
                    .any(|(_, p, _)| p == "works_for" || p.starts_with("other:like")),
                "{claim:?}: {:?}",
                rels(&n)
            );
            assert_eq!(n.observations.len(), 1, "{claim:?}");
        }
        assert!(run("Alice quit Acme.").relations.is_empty());
        assert!(
            run("Alice sometimes really likes Bob.")
                .relations
                .is_empty()
        );
        assert!(run("Alice told Bob about Acme.").relations.is_empty());
    }

    #[test]
    fn a_name_used_as_a_modifier_is_no_object() {
        for claim in [
            "Caroline attended an LGBTQ support group.",
            "Alice joined Acme's sales team.",
            "Jon has been working on the Phoenix engine.",
            "Microsoft released Windows 11.",
        ] {
            let n = run(claim);
            assert_invariants(claim, &n);
            assert!(n.relations.is_empty(), "{claim:?}: {:?}", rels(&n));
            assert_eq!(n.observations.len(), 1, "{claim:?}");
        }
        let n = run("Alice uses Rust daily.");
        assert_eq!(rels(&n), [rel("Alice", "uses", "Rust")]);
    }

    #[test]
    fn more_than_the_relation_keeps_an_observation() {
        let n = run("Alice works for Acme as a senior engineer.");
        assert_eq!(rels(&n), [rel("Alice", "works_for", "Acme")]);
        assert_eq!(n.observations.len(), 1);
        let n = run("Since 1 March 2024, Alice has worked at Acme.");
        assert_eq!(rels(&n), [rel("Alice", "works_for", "Acme")]);
        assert!(n.observations.is_empty());
        let n = run("Alice has used Rust for 3 years.");
        assert_eq!(rels(&n), [rel("Alice", "uses", "Rust")]);
        assert_eq!(n.observations.len(), 1);
    }

    #[test]
    fn spans_slice_exactly_and_odd_input_is_safe() {
        for claim in [
            "Zoë Ångström moved to Málaga in 2021.",
            "Владимир работает в Яндексе с 2020 года.",
            "东京的 Alice 在 Acme 工作。",
            "🎉 Alice 🎉 joined Acme 🚀!",
            "Alice’s manager Bob’s team",
            "'s 's ' - -- . .. A. B. C.",
            "Q1 FY2023 H2 FY 2024 Q",
            "ALICE WORKS FOR ACME",
            "of of The The the & & and",
            "É",
            "a\u{0301}b Ca\u{0301}fe\u{0301} de\u{0301}",
            "Alice\u{2019}s",
            "X's",
            "A.",
            "Acme-",
            "-Acme",
        ] {
            let n = run(claim);
            assert_invariants(claim, &n);
        }
        let claim = "Владимир Путин met Zoë Ångström.";
        let n = run(claim);
        assert_eq!(names(&n), ["Владимир Путин", "Zoë Ångström"]);
        assert_eq!(rels(&n), [rel("Владимир Путин", "knows", "Zoë Ångström")]);
    }

    #[test]
    fn deterministic() {
        let claim = "In February 2026 Alice left Acme and joined Globex.";
        assert_eq!(run(claim), run(claim));
    }

    proptest! {
        #[test]
        fn total_on_any_text(s in "\\PC{0,120}") {
            let n = run(&s);
            assert_invariants(&s, &n);
        }

        #[test]
        fn total_on_name_like_text(s in "([A-Z][a-z']{0,6}|of|and|the|&|'s|[0-9]{1,4}|Q[1-4]|,|\\.| ){0,20}") {
            let n = run(&s);
            assert_invariants(&s, &n);
        }
    }

    #[test]
    fn conversational_openers_are_not_names() {
        let names = |text: &str| -> Vec<String> {
            normalize_offline(&NormalizeInput {
                claim_text: text.into(),
                added_context: vec![],
                document_title: "Chat".into(),
                validity: crate::claims::Validity::unknown(crate::claims::ValidityKind::State),
            })
            .entities
            .into_iter()
            .map(|e| e.name)
            .collect()
        };
        assert_eq!(
            names("Seeing Melanie with her kids made Caroline happy."),
            vec!["Melanie", "Caroline"]
        );
        assert_eq!(
            names("You've been to Sweden, Caroline said."),
            vec!["Sweden", "Caroline"]
        );
        assert_eq!(names("Yeah, Melanie paints."), vec!["Melanie"]);
        assert_eq!(names("Beijing is large."), vec!["Beijing"]);
        assert_eq!(names("Great Britain voted."), vec!["Great Britain"]);
    }

    fn names_with(claim: &str, added: &[&str]) -> Vec<String> {
        normalize_offline(&NormalizeInput {
            claim_text: claim.into(),
            added_context: added.iter().map(|a| a.to_string()).collect(),
            document_title: "Chat".into(),
            validity: Validity::unknown(ValidityKind::State),
        })
        .entities
        .into_iter()
        .map(|e| e.name)
        .collect()
    }

    #[test]
    fn forced_capitals_must_earn_a_name() {
        // A rewritten speaker after a chat opener: the opener is not part of it.
        assert_eq!(
            names_with("Glad Jon has you in Jon's corner!", &["Jon", "Jon's"]),
            ["Jon"]
        );
        assert_eq!(
            names_with("Lately John has been exploring options.", &["John"]),
            ["John"]
        );
        assert_eq!(
            names_with("Last Fri Melanie took the kids out.", &["Melanie"]),
            ["Melanie"]
        );
        // Two rewritten pronouns side by side are one mention.
        assert_eq!(
            names_with("They keep reminding Maria Maria is not alone.", &["Maria"]),
            ["Maria"]
        );
        // Words that never begin a name, without any added name.
        assert_eq!(names_with("Besides Gina, nobody came.", &[]), ["Gina"]);
        // A single common word where capitals are forced: after a colon, a sentence
        // end or an opening quote.
        assert_eq!(
            names_with("Caroline said: Family is everything.", &["Caroline said:"]),
            ["Caroline"]
        );
        assert_eq!(
            names_with("Painting helps Caroline relax. Nature too.", &[]),
            ["Caroline"]
        );
        assert_eq!(
            names_with(
                "Gina asked \"Are you using colors?\" and Jon said \"Yes.\"",
                &["Gina asked \"", "\" and Jon said \""]
            ),
            ["Gina", "Jon"]
        );
        // A spaced dash starts a clause; a quoted title keeps its gerund.
        assert_eq!(
            names_with("Family matters to Maria - Even Oslo is far.", &[]),
            ["Maria", "Oslo"]
        );
        assert_eq!(
            names_with("We danced a piece called \"Finding Freedom.\"", &[]),
            ["Finding Freedom"]
        );
        // A pronoun with 's is not a name; shouting is not a name.
        assert_eq!(names_with("She's moving to Oslo.", &[]), ["Oslo"]);
        assert_eq!(names_with("Nate felt INTENSE about it.", &[]), ["Nate"]);
        // Names where capitals are forced still count when nothing says otherwise.
        assert_eq!(names_with("Alice founded Acme.", &[]), ["Alice", "Acme"]);
        assert_eq!(
            names_with("Alice Moreno works for Acme.", &[]),
            ["Alice Moreno", "Acme"]
        );
        assert_eq!(
            names_with("Grace Hopper wrote code.", &[]),
            ["Grace Hopper"]
        );
        // Titles joined by `of the`, or by `of` after a common noun.
        assert_eq!(
            names_with("Tim read \"The Name of the Wind\" twice.", &[]),
            ["Tim", "Name of the Wind"]
        );
        assert_eq!(
            names_with("Tim loves Game of Thrones.", &[]),
            ["Tim", "Game of Thrones"]
        );
        // A person of an organisation stays two names.
        assert_eq!(
            names_with("Alice Smith of Acme spoke.", &[]),
            ["Alice Smith", "Acme"]
        );
    }

    fn turn(claim: &str, speaker: &str) -> NormalizedClaim {
        normalize_offline(&NormalizeInput {
            claim_text: claim.into(),
            added_context: vec![format!("{speaker} said:")],
            document_title: "Chat".into(),
            validity: Validity::unknown(ValidityKind::State),
        })
    }

    #[test]
    fn what_a_speaker_said_gives_relations_with_i_as_the_speaker() {
        let n = turn(
            "Ewan McAllister said: I live in Edinburgh now, so I only go in on Thursdays.",
            "Ewan McAllister",
        );
        assert_eq!(names(&n), vec!["Ewan McAllister", "Edinburgh"]);
        assert_eq!(
            rels(&n),
            vec![(
                "Ewan McAllister".to_string(),
                "located_in".to_string(),
                "Edinburgh".to_string()
            )]
        );
        // The speaker holds the turn.
        assert_eq!(n.observations.len(), 1);
        assert_eq!(n.observations[0].entity, 0);
        let n = turn("Milo said: Vera works at Halvard Bank now.", "Milo");
        assert_eq!(
            rels(&n),
            vec![(
                "Vera".to_string(),
                "works_for".to_string(),
                "Halvard Bank".to_string()
            )]
        );
        // A lone forced capital is a name only where a relation shows it.
        let n = turn(
            "Mel said: Obstacles are inevitable. Cherish the moments with Caroline.",
            "Mel",
        );
        assert_eq!(names(&n), vec!["Mel", "Caroline"]);
        // A function word alone is no name, even mid-sentence.
        assert_eq!(
            names(&turn("Mel said: Remember Jon, Just do it!", "Mel")),
            vec!["Mel", "Jon"]
        );
        // A name with a gerund's ending keeps its first word.
        assert_eq!(
            names(&run("Gustav Petrov is still working at Sterling Cooper.")),
            vec!["Gustav Petrov", "Sterling Cooper"]
        );
        // `I` after a name is the speaker.
        let n = turn("Dora said: Tell Vera I said hi!", "Dora");
        assert_eq!(names(&n), vec!["Dora", "Vera"]);
        // The same words in a document are a stance: the holder alone.
        let quoted = run("Milo said: Vera works at Halvard Bank now.");
        assert_eq!(names(&quoted), vec!["Milo"]);
        assert!(quoted.relations.is_empty());
        // A progressive with a time phrase after the object still relates.
        assert_eq!(
            rels(&run("Grace Whitfield is working at Luma Print these days.")),
            vec![(
                "Grace Whitfield".to_string(),
                "works_for".to_string(),
                "Luma Print".to_string()
            )]
        );
    }
}
