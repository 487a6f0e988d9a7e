//! Typed record identifiers. Every id is a UUID, serialized lowercase and hyphenated.
//!
//! A fresh id is a UUID v7: its leading bits are the time it was minted (ordered
//! within a process), the rest random. Rows written together therefore sit together
//! in the stores' id indexes, so an insert into a large store touches the right edge
//! of each id index instead of a random leaf that is seldom cached; an id still says
//! nothing a record's own timestamps do not.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh id, ordered by the time it was minted (UUID v7).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
            /// The underlying UUID.
            pub fn uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Lowercase, hyphenated: the one serialized form.
                write!(f, "{}", self.0.as_hyphenated())
            }
        }

        impl FromStr for $name {
            type Err = crate::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim()).map(Self).map_err(|_| {
                    crate::Error::invalid_input(format!(
                        "`{s}` is not a valid {} (expected a UUID such as 123e4567-e89b-12d3-a456-426614174000)",
                        stringify!($name)
                    ))
                })
            }
        }
    };
}

id_type!(
    /// A namespace: one trust domain.
    NamespaceId
);
id_type!(
    /// A document lineage.
    DocumentId
);
id_type!(
    /// One immutable version of a document lineage.
    VersionId
);
id_type!(
    /// A section of a version's representation.
    SectionId
);
id_type!(
    /// A chunk of a version's representation.
    ChunkId
);
id_type!(
    /// A row of the work ledger.
    WorkId
);

impl WorkId {
    /// A time-ordered id, as every fresh id is: the ledger claims work of equal due
    /// time and creation time in id order, so work enqueued together is claimed in the
    /// order it was enqueued (a document's claims in document order) instead of at
    /// random.
    pub fn ordered() -> Self {
        Self::new()
    }
}
id_type!(
    /// An immutable claim.
    ClaimId
);
id_type!(
    /// An entity: one real-world referent (D95).
    EntityId
);
id_type!(
    /// A fact: a relation or an observation.
    FactId
);
id_type!(
    /// An append-only entity-resolution decision.
    DecisionId
);
id_type!(
    /// A staged fact assertion (one relation or observation a claim asserts).
    AssertionId
);
id_type!(
    /// A merge event (reversible, D21).
    MergeId
);
id_type!(
    /// An append-only adjudication transcript row.
    AdjudicationId
);
id_type!(
    /// A durable recall receipt.
    ReceiptId
);

/// Every id (a lowercase hyphenated UUID, the one serialized form) written inside
/// `text`, in order: how a scrub finds the records a stored JSON document names
/// without one query per record.
pub fn ids_in(text: &str) -> impl Iterator<Item = &str> + '_ {
    const LEN: usize = 36;
    let bytes = text.as_bytes();
    let is_id = move |i: usize| {
        bytes[i..i + LEN].iter().enumerate().all(|(j, b)| match j {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(b),
        })
    };
    let mut i = 0;
    std::iter::from_fn(move || {
        while i + LEN <= bytes.len() {
            if bytes[i + 8] == b'-' && is_id(i) {
                let found = &text[i..i + LEN];
                i += LEN;
                return Some(found);
            }
            i += 1;
        }
        None
    })
}

/// Whether `text` names any of `ids` (see [`ids_in`]).
pub fn names_any(text: &str, ids: &std::collections::HashSet<String>) -> bool {
    !ids.is_empty() && ids_in(text).any(|id| ids.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_lowercase_hyphenated() {
        let id: DocumentId = "123E4567-E89B-12D3-A456-426614174000".parse().unwrap();
        assert_eq!(id.to_string(), "123e4567-e89b-12d3-a456-426614174000");
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"123e4567-e89b-12d3-a456-426614174000\""
        );
        assert!("not-a-uuid".parse::<DocumentId>().is_err());
    }

    #[test]
    fn ids_in_finds_every_id_a_json_text_names() {
        let a = FactId::new().to_string();
        let b = FactId::new().to_string();
        let text = format!(
            r#"{{"candidates":["{a}"],"input":"fact:{b}, not 123e4567-e89b-12d3-a456-42661417400"}}"#
        );
        assert_eq!(
            ids_in(&text).collect::<Vec<_>>(),
            vec![a.as_str(), b.as_str()]
        );
        let set: std::collections::HashSet<String> = [b.clone()].into();
        assert!(names_any(&text, &set));
        assert!(!names_any("no ids here", &set));
        assert!(!names_any(&a.to_uppercase(), &[a.clone()].into()));
        // Shorter than an id, or cut at a multi-byte character: nothing, no panic.
        assert_eq!(ids_in("é-").count(), 0);
    }
}
