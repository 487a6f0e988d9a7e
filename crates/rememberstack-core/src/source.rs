//! Sources: lineages, versions, document metadata and ingest requests (E0).

use crate::text::SourceFormat;
use crate::time::Timestamp;
use crate::{Error, ErrorCode, Result};
use serde::{Deserialize, Serialize};

/// How successive versions of a lineage relate (D55).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum VersioningMode {
    /// Every version stays independent, dated testimony (the default).
    #[default]
    Snapshot,
    /// The current version is the source's standing statement; older versions lose currency.
    Living,
}

impl VersioningMode {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            VersioningMode::Snapshot => "snapshot",
            VersioningMode::Living => "living",
        }
    }
    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "snapshot" => Ok(VersioningMode::Snapshot),
            "living" => Ok(VersioningMode::Living),
            other => Err(Error::invalid_input(format!(
                "unknown versioning mode `{other}`: use `snapshot` or `living`"
            ))),
        }
    }
}

/// Where an input came from (D42).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// From outside the system boundary (the default).
    #[default]
    External,
    /// Produced by this deployment's own agents or workers.
    System,
}

impl Origin {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Origin::External => "external",
            Origin::System => "system",
        }
    }
    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "external" => Ok(Origin::External),
            "system" => Ok(Origin::System),
            other => Err(Error::invalid_input(format!(
                "unknown origin `{other}`: use `external` or `system`"
            ))),
        }
    }
}

/// A version's admission state: only `promoted` versions are eligible for recall.
/// Ordinary documents are promoted on ingest; notes follow their lifecycle.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Admission {
    /// Awaiting promotion: stored and processed, never served.
    Candidate,
    /// Eligible for recall (the default).
    #[default]
    Promoted,
    /// Kept, no longer served.
    Archived,
    /// Withdrawn; its text is to be cleared (a tombstone remains).
    Revoked,
}

impl Admission {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Admission::Candidate => "candidate",
            Admission::Promoted => "promoted",
            Admission::Archived => "archived",
            Admission::Revoked => "revoked",
        }
    }
    /// Whether a note revision in this state may move to `to`
    /// (`candidate → promoted → archived`).
    pub fn may_become(self, to: Admission) -> bool {
        matches!(
            (self, to),
            (Admission::Candidate, Admission::Promoted)
                | (Admission::Promoted, Admission::Archived)
                | (Admission::Candidate, Admission::Revoked)
                | (Admission::Promoted, Admission::Revoked)
        )
    }
    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "candidate" => Ok(Admission::Candidate),
            "promoted" => Ok(Admission::Promoted),
            "archived" => Ok(Admission::Archived),
            "revoked" => Ok(Admission::Revoked),
            other => Err(Error::invalid_input(format!(
                "unknown lifecycle state `{other}`: use candidate, promoted, archived or revoked"
            ))),
        }
    }
}

/// Who declared a metadata value (D134).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// The source's own bytes declare it (an HTML `<title>`, a conversation's speakers).
    Source,
    /// The connector observed it (a file name, a file's modification time, a caller flag).
    Connector,
}

/// One metadata value with its provenance.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Field_for_{T}"))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field<T> {
    /// The value.
    pub value: T,
    /// Who declared it.
    pub provenance: Provenance,
}

impl<T> Field<T> {
    /// A value the source declares.
    pub fn source(value: T) -> Self {
        Field {
            value,
            provenance: Provenance::Source,
        }
    }
    /// A value the connector observed.
    pub fn connector(value: T) -> Self {
        Field {
            value,
            provenance: Provenance::Connector,
        }
    }
}

/// General document metadata, the same fields whatever the format (D134).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DocumentMetadata {
    /// The file name the version was observed under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<Field<String>>,
    /// The title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Field<String>>,
    /// Authors (a conversation's speakers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authors: Option<Field<Vec<String>>>,
    /// When the source was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Field<Timestamp>>,
    /// When the source was last modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<Field<Timestamp>>,
    /// The language (BCP 47 tag) where declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Field<String>>,
    /// The thread the source belongs to (a conversation id, an email thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_ref: Option<Field<String>>,
}

impl DocumentMetadata {
    /// The display title: the title, else the file name, else `fallback`.
    pub fn display_title(&self, fallback: &str) -> String {
        self.title
            .as_ref()
            .map(|f| f.value.clone())
            .or_else(|| self.file_name.as_ref().map(|f| f.value.clone()))
            .unwrap_or_else(|| fallback.to_string())
    }
}

/// What format the caller declares for an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DeclaredKind {
    /// Detect from the file name and the bytes.
    #[default]
    Auto,
    /// This format.
    Format(SourceFormat),
}

impl DeclaredKind {
    /// Parse `auto|markdown|text|html|json|ndjson|conversation`.
    pub fn parse(s: &str) -> Result<Self> {
        if s == "auto" {
            return Ok(DeclaredKind::Auto);
        }
        SourceFormat::parse(s).map(DeclaredKind::Format).ok_or_else(|| {
            Error::invalid_input(format!(
                "unknown kind `{s}`: use auto, markdown, text, html, json, ndjson or conversation"
            ))
        })
    }
}

/// Who created a document version (D101): a typed principal, recorded only on a
/// newly created version and never changed. It comes from the caller (an HTTP
/// request's `X-Ingest-Principal-*` headers presented by a full-write key), never
/// inferred from a credential.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IngestPrincipal {
    /// What kind of principal.
    pub kind: PrincipalKind,
    /// The caller's reference for it (printable ASCII, 1–256 characters).
    pub external_ref: String,
}

/// The kinds of ingest principal.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// A person.
    User,
    /// An API credential (a key, a token).
    ApiCredential,
    /// A service.
    Service,
}

impl PrincipalKind {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::ApiCredential => "api_credential",
            PrincipalKind::Service => "service",
        }
    }
    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "user" => Ok(PrincipalKind::User),
            "api_credential" => Ok(PrincipalKind::ApiCredential),
            "service" => Ok(PrincipalKind::Service),
            other => Err(Error::invalid_input(format!(
                "unknown principal kind `{other}` (user, api_credential or service)"
            ))),
        }
    }
}

impl IngestPrincipal {
    /// A validated principal: `external_ref` is printable ASCII (a header carries
    /// nothing else), 1–256 characters.
    pub fn new(kind: PrincipalKind, external_ref: impl Into<String>) -> Result<Self> {
        let external_ref = external_ref.into();
        if external_ref.is_empty()
            || external_ref.len() > 256
            || !external_ref.bytes().all(|b| (0x20..0x7f).contains(&b))
        {
            return Err(Error::invalid_input(
                "a principal's external_ref is 1–256 printable ASCII characters",
            ));
        }
        Ok(IngestPrincipal { kind, external_ref })
    }
}

/// One source to ingest. Built by the facade (which does the file IO).
#[derive(Clone, Debug)]
pub struct IngestRequest {
    /// The namespace slug.
    pub namespace: String,
    /// The original bytes.
    pub bytes: Vec<u8>,
    /// The declared kind.
    pub kind: DeclaredKind,
    /// The file name the bytes were read from, if any.
    pub file_name: Option<String>,
    /// The lineage's source kind (`file`, `text`, `conversation`, …).
    pub source_kind: String,
    /// The lineage's connector-native reference.
    pub source_ref: String,
    /// The caller's source time (`--source-time`).
    pub source_time: Option<Timestamp>,
    /// The file's modification time, if read from a file.
    pub file_modified_at: Option<Timestamp>,
    /// The versioning mode; `None` keeps the lineage's (snapshot for a new lineage).
    pub mode: Option<VersioningMode>,
    /// Where the input came from.
    pub origin: Origin,
    /// A thread reference, if the caller has one.
    pub thread_ref: Option<String>,
    /// Compare-and-set: create the version only if the lineage's latest version is
    /// still this one (`conflict` otherwise). Appends use it so that two concurrent
    /// appends cannot lose each other's messages.
    pub expected_latest: Option<crate::ids::VersionId>,
    /// The new version's admission (promoted unless a note policy says otherwise).
    pub admission: Admission,
    /// Always create a version, even for bytes identical to the latest (a note
    /// revision is its own version).
    pub distinct: bool,
    /// Who creates the version (D101), recorded only if a version is created.
    pub principal: Option<IngestPrincipal>,
    /// A title the caller gives the source, used when the source declares none
    /// (the display title falls back to it before the file name and reference).
    pub title: Option<String>,
}

impl IngestRequest {
    /// A request for `bytes` under lineage `(source_kind, source_ref)` in `namespace`.
    pub fn new(
        namespace: impl Into<String>,
        source_kind: impl Into<String>,
        source_ref: impl Into<String>,
        bytes: Vec<u8>,
    ) -> Self {
        IngestRequest {
            namespace: namespace.into(),
            bytes,
            kind: DeclaredKind::Auto,
            file_name: None,
            source_kind: source_kind.into(),
            source_ref: source_ref.into(),
            source_time: None,
            file_modified_at: None,
            mode: None,
            origin: Origin::External,
            thread_ref: None,
            expected_latest: None,
            admission: Admission::Promoted,
            distinct: false,
            principal: None,
            title: None,
        }
    }
}

/// Validate a namespace slug: 1–64 chars of `[a-z0-9_-]`, starting with a letter or digit.
pub fn validate_namespace(slug: &str) -> Result<()> {
    let ok = !slug.is_empty()
        && slug.len() <= 64
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && slug
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "invalid namespace `{slug}`: use 1-64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit"
        )))
    }
}

/// Validate a lineage key.
pub fn validate_lineage(source_kind: &str, source_ref: &str) -> Result<()> {
    if source_kind.is_empty()
        || source_kind.len() > 64
        || !source_kind
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
    {
        return Err(Error::invalid_input(format!(
            "invalid source kind `{source_kind}`: use 1-64 characters of a-z, 0-9, '_', '-', '.'"
        )));
    }
    if source_ref.trim().is_empty() || source_ref.len() > 4096 {
        return Err(Error::new(
            ErrorCode::InvalidInput,
            "a source reference must be 1-4096 bytes and not blank",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn note_lifecycle_moves_only_forward() {
        use Admission::*;
        assert!(Candidate.may_become(Promoted));
        assert!(Promoted.may_become(Archived));
        for (from, to) in [
            (Candidate, Archived),
            (Archived, Promoted),
            (Promoted, Candidate),
            (Promoted, Promoted),
            (Revoked, Promoted),
        ] {
            assert!(!from.may_become(to), "{from:?} -> {to:?}");
        }
    }

    #[test]
    fn a_request_id_replays_only_the_same_operation_and_input() {
        let key = crate::store::RequestKey {
            request_id: "r-1".into(),
            operation: "retract_claim".into(),
            digest: "abc".into(),
        };
        assert!(key.check_replay("retract_claim", "abc").is_ok());
        for (op, digest) in [("retract_claim", "abd"), ("invalidate_fact", "abc")] {
            let err = key.check_replay(op, digest).unwrap_err();
            assert_eq!(err.code(), crate::ErrorCode::RequestConflict);
        }
    }

    use super::*;

    #[test]
    fn namespace_rules() {
        assert!(validate_namespace("default").is_ok());
        assert!(validate_namespace("team-a_1").is_ok());
        assert!(validate_namespace("").is_err());
        assert!(validate_namespace("Upper").is_err());
        assert!(validate_namespace("-lead").is_err());
        assert!(validate_namespace("a/b").is_err());
    }
}
