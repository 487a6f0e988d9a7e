//! The predicate registry (E3): the 16 core relation predicates, the `other:`
//! funnel for everything else (D5), and phrase resolution.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::entities::normalize::fold_lower;

/// One core predicate: its canonical snake_case name, a one-sentence
/// description stating the subject → object direction, natural-language
/// synonyms that resolve to it, and whether it is symmetric.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PredicateSpec {
    /// Canonical snake_case name, e.g. `works_for`.
    pub name: &'static str,
    /// One sentence stating what the relation means, subject → object.
    pub description: &'static str,
    /// Natural-language phrases that [`resolve`] maps to this predicate.
    pub synonyms: &'static [&'static str],
    /// Whether `A p B` implies `B p A`.
    pub symmetric: bool,
    /// Whether a subject holds one value at a time (`works_for`, `located_in`,
    /// `reports_to`): a later value replaces an earlier one, two values for the same
    /// period contradict. Otherwise a subject holds many (`knows`, `authored`).
    pub single_valued: bool,
}

/// The predicates a subject holds one value of at a time.
const SINGLE_VALUED: &[&str] = &["works_for", "located_in", "reports_to"];

const fn is_single_valued(name: &str) -> bool {
    let mut i = 0;
    while i < SINGLE_VALUED.len() {
        let (a, b) = (name.as_bytes(), SINGLE_VALUED[i].as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return true;
            }
        }
        i += 1;
    }
    false
}

const fn spec(
    name: &'static str,
    description: &'static str,
    synonyms: &'static [&'static str],
    symmetric: bool,
) -> PredicateSpec {
    PredicateSpec {
        name,
        description,
        synonyms,
        symmetric,
        single_valued: is_single_valued(name),
    }
}

/// The 16 core predicates, in their canonical order.
pub const CORE_PREDICATES: &[PredicateSpec] = &[
    spec(
        "works_for",
        "The subject (a person) is employed by the object (an organization or person).",
        &["employed by", "works at", "job at", "employee of"],
        false,
    ),
    spec(
        "member_of",
        "The subject is a member of the object (a group, team or organization).",
        &["belongs to", "joined", "in the group", "is a member of"],
        false,
    ),
    spec(
        "affiliated_with",
        "The subject has a formal but looser association with the object organization.",
        &[
            "associated with",
            "affiliate of",
            "partnered with",
            "partner of",
        ],
        false,
    ),
    spec(
        "located_in",
        "The subject is physically situated in the object place.",
        &[
            "based in",
            "lives in",
            "situated in",
            "headquartered in",
            "resides in",
        ],
        false,
    ),
    spec(
        "part_of",
        "The subject is a component or subdivision of the object.",
        &[
            "component of",
            "subdivision of",
            "division of",
            "section of",
        ],
        false,
    ),
    spec(
        "authored",
        "The subject wrote the object (a document, text or publication).",
        &["wrote", "author of", "penned"],
        false,
    ),
    spec(
        "created",
        "The subject made, built or invented the object.",
        &["made", "built", "invented", "designed", "creator of"],
        false,
    ),
    spec(
        "about",
        "The subject (a document or item) has the object as its topic.",
        &[
            "concerns",
            "discusses",
            "covers",
            "on the topic of",
            "regarding",
        ],
        false,
    ),
    spec(
        "knows_about",
        "The subject has knowledge of or expertise in the object topic.",
        &[
            "expert in",
            "familiar with",
            "skilled in",
            "knowledgeable about",
        ],
        false,
    ),
    spec(
        "knows",
        "The subject and the object are people acquainted with each other (symmetric).",
        &["acquainted with", "friends with", "knows personally", "met"],
        true,
    ),
    spec(
        "participated_in",
        "The subject took part in the object (an event or activity).",
        &["attended", "took part in", "participant in", "involved in"],
        false,
    ),
    spec(
        "works_on",
        "The subject actively works on the object (a project, product or task).",
        &["contributes to", "working on", "develops", "maintains"],
        false,
    ),
    spec(
        "founded",
        "The subject established the object (an organization or project).",
        &["co-founded", "founder of", "established", "started"],
        false,
    ),
    spec(
        "related_to",
        "The subject is related to the object in an unspecified way (symmetric).",
        &["connected to", "relates to", "linked to", "related with"],
        true,
    ),
    spec(
        "uses",
        "The subject uses the object (a tool, technology or resource).",
        &["utilizes", "relies on", "built with", "uses the"],
        false,
    ),
    spec(
        "reports_to",
        "The subject is managed by the object (their manager or supervisor).",
        &[
            "managed by",
            "subordinate of",
            "works under",
            "supervised by",
        ],
        false,
    ),
];

/// Longest `other:` text, in characters.
const OTHER_MAX_CHARS: usize = 64;

/// A relation predicate: one of the [`CORE_PREDICATES`] or a normalized
/// free-form `other:<text>` predicate (D5). Serializes as its [`as_str`](Self::as_str)
/// string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// A core predicate.
    Core(&'static PredicateSpec),
    /// A free-form predicate; the text is lowercase snake_case (1–64 chars of
    /// letters, digits and underscores) without the `other:` prefix.
    Other(String),
}

/// Lowercases, folds Latin diacritics, drops apostrophes and joins the
/// remaining letter/digit words with `_`. Idempotent.
fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_sep = false;
    for c in fold_lower(s).chars() {
        if c.is_alphanumeric() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(c);
        } else if matches!(c, '\'' | '\u{2018}' | '\u{2019}') {
            // Inner apostrophes vanish: "don't" -> "dont".
        } else if c.is_whitespace()
            || c.is_ascii_punctuation()
            || ('\u{2000}'..='\u{206F}').contains(&c)
        {
            pending_sep = true;
        }
        // Anything else (combining marks, symbols) is dropped.
    }
    out
}

/// Truncates snake text to at most [`OTHER_MAX_CHARS`] chars without leaving a
/// trailing underscore.
fn truncate_snake(s: &str) -> String {
    let mut t: String = s.chars().take(OTHER_MAX_CHARS).collect();
    while t.ends_with('_') {
        t.pop();
    }
    t
}

fn core_by_name(name: &str) -> Option<&'static PredicateSpec> {
    CORE_PREDICATES.iter().find(|p| p.name == name)
}

impl Predicate {
    /// Parses a stored predicate string: a core name (case-insensitive) or
    /// `other:<text>`, where the text is normalized to lowercase snake_case and
    /// must then be 1–64 characters. An `other:` text equal to a core name parses
    /// as that core predicate. Anything else is an `invalid_input` error.
    pub fn parse(s: &str) -> Result<Predicate, crate::Error> {
        let t = s.trim();
        if let Some(core) = core_by_name(&t.to_ascii_lowercase()) {
            return Ok(Predicate::Core(core));
        }
        let prefix_len = "other:".len();
        let is_other = t
            .get(..prefix_len)
            .is_some_and(|p| p.eq_ignore_ascii_case("other:"));
        if !is_other {
            return Err(crate::Error::invalid_input(format!(
                "unknown predicate {t:?}: expected a core predicate name or other:<text>"
            )));
        }
        let text = snake(&t[prefix_len..]);
        let len = text.chars().count();
        if len == 0 || len > OTHER_MAX_CHARS {
            return Err(crate::Error::invalid_input(format!(
                "invalid other: predicate text {t:?}: must normalize to 1-{OTHER_MAX_CHARS} characters"
            )));
        }
        Ok(match core_by_name(&text) {
            Some(core) => Predicate::Core(core),
            None => Predicate::Other(text),
        })
    }

    /// The canonical string: the core name (e.g. `works_for`) or `other:<text>`.
    pub fn as_str(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Predicate::Core(spec) => std::borrow::Cow::Borrowed(spec.name),
            Predicate::Other(text) => std::borrow::Cow::Owned(format!("other:{text}")),
        }
    }

    /// The core spec, if this is a core predicate.
    pub fn spec(&self) -> Option<&'static PredicateSpec> {
        match self {
            Predicate::Core(spec) => Some(spec),
            Predicate::Other(_) => None,
        }
    }

    /// Whether a subject holds one value of it at a time (`Other` predicates never
    /// do).
    pub fn is_single_valued(&self) -> bool {
        self.spec().is_some_and(|s| s.single_valued)
    }

    /// Whether the predicate is symmetric (`Other` predicates never are).
    pub fn is_symmetric(&self) -> bool {
        self.spec().is_some_and(|s| s.symmetric)
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl std::str::FromStr for Predicate {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Predicate::parse(s)
    }
}

impl Serialize for Predicate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for Predicate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Predicate::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Question words that ask for a predicate's value: "Where does Alice *work*?"
/// asks for `works_for`, "Where does she *live*?" for `located_in`. Whole words,
/// lowercase; only present forms and nouns, so a question about what someone
/// once *worked on* does not ask for an employer.
const QUESTION_CUES: &[(&str, &[&str])] = &[
    (
        "works_for",
        &[
            "work", "works", "working", "job", "employer", "employed", "employs",
        ],
    ),
    (
        "located_in",
        &[
            "live", "lives", "living", "reside", "resides", "residing", "based", "located",
        ],
    ),
    (
        "reports_to",
        &["report", "reports", "reporting", "boss", "manager"],
    ),
    ("founded", &["founded", "founder", "founders"]),
    ("authored", &["wrote", "author", "authored"]),
];

/// The core predicates a question asks for, by its [`QUESTION_CUES`] words.
pub fn asked_for(question: &str) -> Vec<&'static str> {
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    QUESTION_CUES
        .iter()
        .filter(|(_, cues)| words.iter().any(|w| cues.contains(&w.as_str())))
        .map(|(name, _)| *name)
        .collect()
}

/// Maps a free natural-language phrase to a predicate (D5): after
/// normalization (lowercase, diacritics folded, words joined with `_`), an
/// exact core name or synonym match gives that core predicate; otherwise the
/// phrase goes to the `other:` funnel, truncated to 64 characters. A phrase
/// with no letters or digits resolves to `related_to`.
pub fn resolve(phrase: &str) -> Predicate {
    let key = snake(phrase);
    if let Some(core) = core_by_name(&key) {
        return Predicate::Core(core);
    }
    for spec in CORE_PREDICATES {
        if spec.synonyms.iter().any(|syn| snake(syn) == key) {
            return Predicate::Core(spec);
        }
    }
    let text = truncate_snake(&key);
    if text.is_empty() {
        // `related_to` is the registry's generic relation.
        return CORE_PREDICATES
            .iter()
            .find(|p| p.name == "related_to")
            .map_or_else(|| Predicate::Other("related".into()), Predicate::Core);
    }
    match core_by_name(&text) {
        Some(core) => Predicate::Core(core),
        None => Predicate::Other(text),
    }
}

/// A deterministic bullet list of the 16 core predicates with descriptions
/// and synonyms, for inclusion in extraction prompts.
pub fn render_for_prompt() -> String {
    let mut out = String::new();
    for p in CORE_PREDICATES {
        out.push_str("- ");
        out.push_str(p.name);
        out.push_str(": ");
        out.push_str(p.description);
        if !p.synonyms.is_empty() {
            out.push_str(" Synonyms: ");
            out.push_str(&p.synonyms.join(", "));
            out.push('.');
        }
        out.push('\n');
    }
    out.push_str("- other:<text>: any other relation, as short lowercase snake_case text.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NAMES: [&str; 16] = [
        "works_for",
        "member_of",
        "affiliated_with",
        "located_in",
        "part_of",
        "authored",
        "created",
        "about",
        "knows_about",
        "knows",
        "participated_in",
        "works_on",
        "founded",
        "related_to",
        "uses",
        "reports_to",
    ];

    #[test]
    fn questions_ask_for_predicates_by_their_words() {
        assert_eq!(
            asked_for("Where does Alice Moreno work now?"),
            ["works_for"]
        );
        assert_eq!(asked_for("Where is she living these days?"), ["located_in"]);
        assert!(asked_for("What has Alice worked on?").is_empty());
        assert!(asked_for("Who is the networker?").is_empty());
        for (name, _) in QUESTION_CUES {
            assert!(
                core_by_name(name).is_some(),
                "{name} is not a core predicate"
            );
        }
    }

    #[test]
    fn all_sixteen_in_order() {
        let names: Vec<&str> = CORE_PREDICATES.iter().map(|p| p.name).collect();
        assert_eq!(names, NAMES);
        for p in CORE_PREDICATES {
            assert!(!p.description.is_empty(), "{}", p.name);
            assert!(p.description.ends_with('.'), "{}", p.name);
            assert!(p.synonyms.len() >= 3, "{}", p.name);
            assert_eq!(
                p.symmetric,
                matches!(p.name, "knows" | "related_to"),
                "{}",
                p.name
            );
        }
    }

    #[test]
    fn synonyms_are_unambiguous() {
        let mut keys: Vec<String> = CORE_PREDICATES.iter().map(|p| p.name.to_string()).collect();
        for p in CORE_PREDICATES {
            keys.extend(p.synonyms.iter().map(|s| snake(s)));
        }
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(
            keys.len(),
            n,
            "a synonym collides with a name or another synonym"
        );
    }

    #[test]
    fn parse_as_str_round_trip() {
        for p in CORE_PREDICATES {
            let parsed = Predicate::parse(p.name).unwrap();
            assert_eq!(parsed, Predicate::Core(p));
            assert_eq!(parsed.as_str(), p.name);
            assert_eq!(Predicate::parse(&p.name.to_uppercase()).unwrap(), parsed);
        }
        let o = Predicate::parse("other:Mentored  By").unwrap();
        assert_eq!(o, Predicate::Other("mentored_by".into()));
        assert_eq!(o.as_str(), "other:mentored_by");
        assert_eq!(Predicate::parse(&o.as_str()).unwrap(), o);
        assert_eq!(
            Predicate::parse("OTHER:ríval-of").unwrap().as_str(),
            "other:rival_of"
        );
        assert_eq!(
            Predicate::parse("other:works for").unwrap(),
            Predicate::parse("works_for").unwrap()
        );
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(json, "\"other:mentored_by\"");
        let back: Predicate = serde_json::from_str(&json).unwrap();
        assert_eq!(back, o);
        let core: Predicate = serde_json::from_str("\"knows\"").unwrap();
        assert!(core.is_symmetric());
        assert!(serde_json::from_str::<Predicate>("\"bogus\"").is_err());
    }

    #[test]
    fn invalid_inputs_error() {
        let long = format!("other:{}", "a".repeat(65));
        for bad in [
            "",
            "  ",
            "works for",
            "bogus",
            "other:",
            "other:!!!",
            "other",
            "other:__",
            long.as_str(),
            "othér:x",
        ] {
            let err = Predicate::parse(bad).expect_err(bad);
            assert_eq!(err.code(), crate::ErrorCode::InvalidInput, "{bad:?}");
        }
        assert!(Predicate::parse(&format!("other:{}", "a".repeat(64))).is_ok());
    }

    #[test]
    fn synonyms_and_names_resolve() {
        for p in CORE_PREDICATES {
            assert_eq!(resolve(p.name), Predicate::Core(p));
            assert_eq!(resolve(&p.name.replace('_', " ")), Predicate::Core(p));
            for syn in p.synonyms {
                assert_eq!(resolve(syn), Predicate::Core(p), "{syn:?}");
                assert_eq!(resolve(&syn.to_uppercase()), Predicate::Core(p), "{syn:?}");
            }
        }
        assert_eq!(resolve("  Employed   BY "), resolve("works_for"));
    }

    #[test]
    fn unknown_phrases_funnel_to_other() {
        let cases = [
            ("Mentored by", "other:mentored_by"),
            ("is the rival of!", "other:is_the_rival_of"),
            ("doesn't like", "other:doesnt_like"),
            ("Größer als", "other:grosser_als"),
            ("喜欢", "other:喜欢"),
        ];
        for (phrase, want) in cases {
            assert_eq!(resolve(phrase).as_str(), want, "{phrase:?}");
        }
        let long = resolve(&"word ".repeat(40));
        let text = long.as_str();
        assert!(text.len() <= "other:".len() + 64 && !text.ends_with('_'));
        assert_eq!(resolve("???").as_str(), "related_to");
    }

    #[test]
    fn prompt_mentions_every_predicate() {
        let text = render_for_prompt();
        for p in CORE_PREDICATES {
            assert!(text.contains(&format!("- {}: ", p.name)), "{}", p.name);
            for syn in p.synonyms {
                assert!(text.contains(syn));
            }
        }
        assert_eq!(text, render_for_prompt());
    }

    proptest! {
        #[test]
        fn resolve_output_parses_back(s in "\\PC{0,100}") {
            let p = resolve(&s);
            prop_assert_eq!(Predicate::parse(&p.as_str()).unwrap(), p);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,80}") {
            if let Ok(p) = Predicate::parse(&s) {
                prop_assert_eq!(Predicate::parse(&p.as_str()).unwrap(), p);
            }
        }
    }
}
