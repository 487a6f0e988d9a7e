//! States an observation names offline: a property of its entity that holds one
//! value at a time, so that its observations are decided as a chain
//! ([`crate::facts::chain`]) like a single-valued relation.
//!
//! Two properties, each read only where the wording is explicit and the state is
//! the observation's own entity's (named right before it, or `I` in what that
//! entity said):
//!
//! * `relationship_status`: `<entity> is [now|still|…] single | married |
//!   engaged | divorced | widowed | separated`, `<entity> got married | engaged |
//!   divorced`;
//! * `job_title`: `<entity> works as a/an <role>` (one to four lowercase words).
//!
//! A negated state (`is not married`, `no longer single`) names nothing.

/// The relationship statuses read.
const STATUSES: &[&str] = &[
    "single",
    "married",
    "engaged",
    "divorced",
    "widowed",
    "separated",
];

/// Words allowed between the copula and the status.
const ADVERBS: &[&str] = &[
    "now",
    "still",
    "currently",
    "happily",
    "newly",
    "recently",
    "officially",
    "finally",
    "also",
];

/// Words that end a role.
const ROLE_END: &[&str] = &[
    "at", "for", "in", "with", "on", "since", "and", "but", "from", "of", "to", "by", "now",
    "these", "so", "because",
];

/// Whether `statement` may name a state (a cheap test before [`state_of`]).
pub fn mentions_state(statement: &str) -> bool {
    let l = statement.to_lowercase();
    STATUSES.iter().any(|s| l.contains(s)) || l.contains(" as a")
}

/// The property and value `statement` names for the entity called `name`, if any.
pub fn state_of(statement: &str, name: &str) -> Option<(&'static str, String)> {
    let words: Vec<String> = statement
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '\'' | '\u{2019}' | '-')))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().replace('\u{2019}', "'"))
        .collect();
    let last = name.split_whitespace().last()?.to_lowercase();
    let spoken = statement.contains(" said: ");
    for i in 0..words.len() {
        // Who the state is about: the entity's name, or `I` in what it said.
        let (subject, verb_at) = match words[i].as_str() {
            w if w == last => (true, i + 1),
            "i" if spoken => (true, i + 1),
            "i'm" if spoken => (true, i),
            _ => (false, i),
        };
        if !subject {
            continue;
        }
        let verb = if words[i] == "i'm" {
            "am"
        } else {
            match words.get(verb_at) {
                Some(v) => v.as_str(),
                None => continue,
            }
        };
        let mut j = verb_at + 1;
        let at = |k: usize| words.get(k).map(String::as_str);
        match verb {
            "is" | "am" | "'s" => {
                while at(j).is_some_and(|w| ADVERBS.contains(&w)) {
                    j += 1;
                }
                if let Some(s) = at(j).filter(|w| STATUSES.contains(w)) {
                    return Some(("relationship_status", s.to_string()));
                }
            }
            "got" if matches!(at(j), Some("married" | "engaged" | "divorced")) => {
                return Some(("relationship_status", words[j].clone()));
            }
            "works" | "work" | "working"
                if at(j) == Some("as") && matches!(at(j + 1), Some("a" | "an")) =>
            {
                let role: Vec<&str> = words[j + 2..]
                    .iter()
                    .map(String::as_str)
                    .take_while(|w| !ROLE_END.contains(w))
                    .take(5)
                    .collect();
                // Written in lowercase (a role, not a name).
                let lowercase = |w: &&str| statement.contains(*w);
                if (1..=4).contains(&role.len()) && role.iter().all(lowercase) {
                    return Some(("job_title", role.join(" ")));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_states_of_the_entity_itself() {
        let s = |t: &str, n: &str| state_of(t, n);
        assert_eq!(
            s("Alice Moreno is single.", "Alice Moreno"),
            Some(("relationship_status", "single".into()))
        );
        assert_eq!(
            s(
                "Alice Moreno is now happily married to Bruno.",
                "Alice Moreno"
            ),
            Some(("relationship_status", "married".into()))
        );
        assert_eq!(
            s(
                "Caroline said: I'm still single, and loving it.",
                "Caroline"
            ),
            Some(("relationship_status", "single".into()))
        );
        assert_eq!(
            s("Jon got engaged in Paris.", "Jon"),
            Some(("relationship_status", "engaged".into()))
        );
        assert_eq!(
            s(
                "Alice Moreno works as a senior nurse at Leeds General.",
                "Alice Moreno"
            ),
            Some(("job_title", "senior nurse".into()))
        );
        // Another person's state, a negation, or no explicit wording: nothing.
        assert_eq!(s("Caroline said: Melanie is married.", "Caroline"), None);
        assert_eq!(s("Alice Moreno is not married.", "Alice Moreno"), None);
        assert_eq!(s("Alice Moreno is a great friend.", "Alice Moreno"), None);
        assert_eq!(
            s(
                "Alice Moreno is single-handedly running it.",
                "Alice Moreno"
            ),
            None
        );
    }
}
