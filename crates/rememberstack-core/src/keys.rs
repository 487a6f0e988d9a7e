//! API keys: deployment-wide bearer credentials for the server's perimeter (D50).
//!
//! A key grants its scopes on its namespaces only. The secret (`rsk_…`) is shown
//! once, when the key is created; the store keeps only its SHA-256 ([`hash_secret`])
//! and the first [`PREFIX_LEN`] characters ([`ApiKey::prefix`]) so a listing can
//! identify a key without revealing it. Keys are not namespace data: deleting or
//! forgetting a namespace's documents never touches them.

use crate::source::validate_namespace;
use crate::time::Timestamp;
use crate::{Error, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What every secret starts with, so a leaked one is recognisable.
pub const SECRET_PREFIX: &str = "rsk_";

/// How many leading characters of the secret a key's [`ApiKey::prefix`] keeps.
pub const PREFIX_LEN: usize = 12;

/// The longest key name, in characters.
pub const MAX_NAME_CHARS: usize = 200;

/// Random bytes in a secret.
const SECRET_BYTES: usize = 32;

/// What a key may do. `admin` implies every scope, `write` implies `ingest`; `read`
/// is separate (a `write` key cannot read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyScope {
    /// Reads: operations, search, listings, traces, exports.
    Read,
    /// Adding sources: ingest documents and conversations, append messages.
    Ingest,
    /// Every write: ingest, notes, deletion, fact and claim administration.
    Write,
    /// Everything, including hard forget.
    Admin,
}

impl KeyScope {
    /// Every scope, in order.
    pub const ALL: [KeyScope; 4] = [
        KeyScope::Read,
        KeyScope::Ingest,
        KeyScope::Write,
        KeyScope::Admin,
    ];

    /// The snake_case form.
    pub fn as_str(&self) -> &'static str {
        match self {
            KeyScope::Read => "read",
            KeyScope::Ingest => "ingest",
            KeyScope::Write => "write",
            KeyScope::Admin => "admin",
        }
    }

    /// Parse the snake_case form; anything else is `invalid_input`.
    pub fn parse(s: &str) -> Result<Self> {
        KeyScope::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "unknown key scope `{s}`: use read, ingest, write or admin"
                ))
            })
    }

    /// Whether holding `self` grants `other`: `admin` grants everything, `write`
    /// grants `ingest`, and every scope grants itself.
    pub fn implies(self, other: KeyScope) -> bool {
        self == other
            || self == KeyScope::Admin
            || (self == KeyScope::Write && other == KeyScope::Ingest)
    }
}

impl fmt::Display for KeyScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for KeyScope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        KeyScope::parse(s)
    }
}

/// An API key as stored and listed: never its secret, never the secret's hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    /// `key_` + a UUID (simple form).
    pub id: String,
    /// A label for people.
    pub name: Option<String>,
    /// The namespaces the key reaches (at least one, no duplicates).
    pub namespaces: Vec<String>,
    /// What it may do there (at least one, no duplicates, in [`KeyScope::ALL`] order).
    pub scopes: Vec<KeyScope>,
    /// The first [`PREFIX_LEN`] characters of the secret, to tell keys apart.
    pub prefix: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was revoked; a revoked key authenticates nothing.
    pub revoked_at: Option<Timestamp>,
}

impl ApiKey {
    /// Whether the key is live and grants `scope` on `namespace`.
    pub fn allows(&self, namespace: &str, scope: KeyScope) -> bool {
        !self.is_revoked() && self.namespaces.iter().any(|n| n == namespace) && self.grants(scope)
    }

    /// Whether one of the key's scopes implies `scope` (revocation aside: see
    /// [`ApiKey::allows`]).
    pub fn grants(&self, scope: KeyScope) -> bool {
        self.scopes.iter().any(|s| s.implies(scope))
    }

    /// Whether the key was revoked.
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}

/// A new secret: `rsk_` followed by 32 bytes from the operating system's random
/// number generator, base64url without padding (47 characters in all).
///
/// # Panics
///
/// When the operating system's random number generator fails; use
/// [`try_generate_secret`] to get an error instead.
pub fn generate_secret() -> String {
    try_generate_secret().expect("the operating system's random number generator failed")
}

/// [`generate_secret`], with a failing random number generator as an `internal` error.
pub fn try_generate_secret() -> Result<String> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::internal(format!(
            "the operating system's random number generator failed: {e}"
        ))
    })?;
    Ok(format!(
        "{SECRET_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    ))
}

/// The stored form of a secret: its SHA-256, lowercase hex.
pub fn hash_secret(secret: &str) -> String {
    crate::hash::sha256_hex(secret.as_bytes())
}

/// Validate a key request and build the key around a fresh secret: returns the key
/// (id, prefix, `created_at = now`) and the secret, which must be shown once and
/// then dropped. Namespaces keep their first-given order; duplicates of either
/// list are removed. Every refusal is `invalid_input`.
pub fn new_key(
    namespaces: Vec<String>,
    scopes: Vec<KeyScope>,
    name: Option<String>,
    now: Timestamp,
) -> Result<(ApiKey, String)> {
    let (namespaces, scopes, name) = validate_request(namespaces, scopes, name)?;
    let secret = try_generate_secret()?;
    let key = ApiKey {
        id: format!("key_{}", uuid::Uuid::new_v4().simple()),
        name,
        namespaces,
        scopes,
        prefix: secret.chars().take(PREFIX_LEN).collect(),
        created_at: now,
        revoked_at: None,
    };
    Ok((key, secret))
}

type Validated = (Vec<String>, Vec<KeyScope>, Option<String>);

fn validate_request(
    namespaces: Vec<String>,
    mut scopes: Vec<KeyScope>,
    name: Option<String>,
) -> Result<Validated> {
    if namespaces.is_empty() {
        return Err(Error::invalid_input(
            "an API key needs at least one namespace (--namespace NS, repeatable)",
        ));
    }
    let mut unique: Vec<String> = Vec::with_capacity(namespaces.len());
    for ns in namespaces {
        validate_namespace(&ns)?;
        if !unique.contains(&ns) {
            unique.push(ns);
        }
    }
    if scopes.is_empty() {
        return Err(Error::invalid_input(
            "an API key needs at least one scope: read, ingest, write or admin (--scope, repeatable)",
        ));
    }
    scopes.sort();
    scopes.dedup();
    let name = match name {
        None => None,
        Some(n) => {
            let n = n.trim();
            if n.is_empty() {
                return Err(Error::invalid_input(
                    "an API key's name must not be blank: give a label or omit the name",
                ));
            }
            if n.chars().count() > MAX_NAME_CHARS {
                return Err(Error::invalid_input(format!(
                    "an API key's name is at most {MAX_NAME_CHARS} characters"
                )));
            }
            if n.chars().any(char::is_control) {
                return Err(Error::invalid_input(
                    "an API key's name must be printable: no control characters or line breaks",
                ));
            }
            Some(n.to_string())
        }
    };
    Ok((unique, scopes, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    fn now() -> Timestamp {
        crate::time::parse_rfc3339("2024-06-01T12:00:00Z").unwrap()
    }

    fn key(scopes: &[KeyScope]) -> ApiKey {
        new_key(vec!["team-a".into()], scopes.to_vec(), None, now())
            .unwrap()
            .0
    }

    #[test]
    fn scopes_parse_print_and_imply() {
        for s in KeyScope::ALL {
            assert_eq!(KeyScope::parse(s.as_str()).unwrap(), s);
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.as_str())
            );
            assert_eq!(s.to_string(), s.as_str());
        }
        for bad in ["", "Read", "owner", " read"] {
            assert_eq!(
                KeyScope::parse(bad).unwrap_err().code(),
                ErrorCode::InvalidInput
            );
        }
        use KeyScope::*;
        let granted = |held: &[KeyScope]| -> Vec<KeyScope> {
            let k = key(held);
            KeyScope::ALL.into_iter().filter(|s| k.grants(*s)).collect()
        };
        assert_eq!(granted(&[Admin]), vec![Read, Ingest, Write, Admin]);
        assert_eq!(granted(&[Write]), vec![Ingest, Write]);
        assert_eq!(granted(&[Ingest]), vec![Ingest]);
        assert_eq!(granted(&[Read]), vec![Read]);
        assert_eq!(granted(&[Read, Ingest]), vec![Read, Ingest]);
    }

    #[test]
    fn allows_checks_namespace_scope_and_revocation() {
        let mut k = key(&[KeyScope::Write]);
        assert!(k.allows("team-a", KeyScope::Ingest));
        assert!(k.allows("team-a", KeyScope::Write));
        assert!(!k.allows("team-a", KeyScope::Read));
        assert!(!k.allows("team-b", KeyScope::Write));
        k.revoked_at = Some(now());
        assert!(!k.allows("team-a", KeyScope::Write));
        assert!(k.grants(KeyScope::Write));
    }

    #[test]
    fn secrets_are_random_prefixed_and_hashed() {
        let a = generate_secret();
        let b = generate_secret();
        assert_ne!(a, b);
        assert!(a.starts_with(SECRET_PREFIX));
        assert_eq!(a.len(), SECRET_PREFIX.len() + 43);
        assert!(
            a[SECRET_PREFIX.len()..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        let h = hash_secret(&a);
        assert_eq!(h.len(), 64);
        assert_ne!(h, hash_secret(&b));
        assert_eq!(h, crate::hash::sha256_hex(a.as_bytes()));
    }

    #[test]
    fn new_key_normalizes_and_never_keeps_the_secret() {
        let (k, secret) = new_key(
            vec!["b".into(), "a".into(), "b".into()],
            vec![KeyScope::Admin, KeyScope::Read, KeyScope::Admin],
            Some("  ci bot ".into()),
            now(),
        )
        .unwrap();
        assert_eq!(k.namespaces, vec!["b", "a"]);
        assert_eq!(k.scopes, vec![KeyScope::Read, KeyScope::Admin]);
        assert_eq!(k.name.as_deref(), Some("ci bot"));
        assert!(k.id.starts_with("key_") && k.id.len() == 36, "{}", k.id);
        assert_eq!(k.prefix, secret[..PREFIX_LEN]);
        assert_eq!(k.created_at, now());
        assert_eq!(k.revoked_at, None);
        let listed = serde_json::to_string(&k).unwrap();
        assert!(!listed.contains(&secret));
        assert!(!listed.contains(&hash_secret(&secret)));
    }

    #[test]
    fn bad_requests_are_invalid_input() {
        let cases: Vec<(Vec<String>, Vec<KeyScope>, Option<String>)> = vec![
            (vec![], vec![KeyScope::Read], None),
            (vec!["Bad NS".into()], vec![KeyScope::Read], None),
            (vec!["ok".into(), "".into()], vec![KeyScope::Read], None),
            (vec!["ok".into()], vec![], None),
            (vec!["ok".into()], vec![KeyScope::Read], Some("   ".into())),
            (
                vec!["ok".into()],
                vec![KeyScope::Read],
                Some("x".repeat(MAX_NAME_CHARS + 1)),
            ),
            (
                vec!["ok".into()],
                vec![KeyScope::Read],
                Some("two\nlines".into()),
            ),
        ];
        for (ns, scopes, name) in cases {
            let e = new_key(ns.clone(), scopes.clone(), name.clone(), now()).unwrap_err();
            assert_eq!(
                e.code(),
                ErrorCode::InvalidInput,
                "{ns:?} {scopes:?} {name:?}"
            );
        }
        // Exactly the limit is fine, counted in characters.
        assert!(
            new_key(
                vec!["ok".into()],
                vec![KeyScope::Read],
                Some("é".repeat(MAX_NAME_CHARS)),
                now()
            )
            .is_ok()
        );
    }
}
