//! Hard forget (D74, D75): the content-free manifest every store appends to its
//! manifest root before it scrubs (the root, a directory of files, is the stores'
//! own: `rememberstack_sql::manifests`), and the report of a completed forget.

use crate::Error;
use crate::ids::{DocumentId, NamespaceId, VersionId};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The manifest format.
pub const MANIFEST_FORMAT: &str = "rememberstack.forget/v1";

/// What a forget targets: one document lineage (a note is a lineage too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgetTarget {
    /// An ingested document or conversation.
    Document,
    /// A note (every revision).
    Note,
}

/// A content-free record of one hard forget: stable ids and hashes, never text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForgetManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// Its id (one per forget request; a resumed forget keeps it).
    pub manifest_id: uuid::Uuid,
    /// The namespace.
    pub namespace_id: NamespaceId,
    /// The namespace's slug: a restored database that predates the namespace gets
    /// it back with the same id, so the ingest guards keep applying.
    pub namespace: String,
    /// Document or note.
    pub target: ForgetTarget,
    /// The lineage.
    pub document_id: DocumentId,
    /// Every version the lineage had when the forget was requested.
    pub version_ids: Vec<VersionId>,
    /// sha256 of each version's bytes: they are refused at ingest from now on.
    pub content_sha256: Vec<String>,
    /// sha256 of the lineage's source kind and reference (`kind\0ref`).
    pub source_identity_sha256: String,
    /// When it was requested.
    pub requested_at: Timestamp,
}

impl ForgetManifest {
    /// A new manifest (fresh id) for the lineage `document_id` of namespace
    /// `namespace` with these versions and source identity.
    pub fn new(
        namespace: &crate::store::Namespace,
        target: ForgetTarget,
        document_id: DocumentId,
        versions: &[crate::store::VersionRecord],
        (source_kind, source_ref): (&str, &str),
        requested_at: Timestamp,
    ) -> Self {
        let mut shas: Vec<String> = versions.iter().map(|v| v.content_sha256.clone()).collect();
        shas.sort();
        shas.dedup();
        ForgetManifest {
            format: MANIFEST_FORMAT.into(),
            manifest_id: uuid::Uuid::new_v4(),
            namespace_id: namespace.id,
            namespace: namespace.slug.clone(),
            target,
            document_id,
            version_ids: versions.iter().map(|v| v.version_id).collect(),
            content_sha256: shas,
            source_identity_sha256: source_identity_sha256(source_kind, source_ref),
            requested_at,
        }
    }

    /// The manifest's file name in the root.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.manifest_id.simple())
    }
}

/// One verification query of a forget and what it found (0 when clean).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForgetCheck {
    /// What was checked (`chunks`, `claims`, `blob`, …).
    pub check: String,
    /// Rows (or files) still holding the forgotten records.
    pub remaining: u64,
}

/// What a completed hard forget removed, and its verification.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ForgetReport {
    /// The manifest.
    pub manifest_id: uuid::Uuid,
    /// The lineage.
    pub doc_id: DocumentId,
    /// When the forget completed.
    pub forgotten_at: Option<Timestamp>,
    /// Versions removed.
    pub versions: u64,
    /// Chunks removed.
    pub chunks: u64,
    /// Claims removed (every claim of the lineage).
    pub claims: u64,
    /// Facts removed: no support was left.
    pub facts: u64,
    /// Entities removed: nothing mentioned them any more.
    pub entities: u64,
    /// Vectors removed: nothing used their key any more.
    pub vectors: u64,
    /// Blob files removed.
    pub blobs: u64,
    /// Recall receipts rewritten without the forgotten records.
    pub receipts_rewritten: u64,
    /// Blobs kept because another live lineage holds the same bytes.
    pub shared_blobs_kept: u64,
    /// The verification queries, all 0.
    pub verification: Vec<ForgetCheck>,
    /// Set when every row is erased but the store could not rewrite its files to
    /// drop the freed pages yet (the embedded store's VACUUM, e.g. for want of
    /// free disk): why. Freed pages are zeroed as they are freed, so no text
    /// remains readable; the rewrite is retried when the store next opens or
    /// forgets, and `doctor` reports it until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_rewrite_pending: Option<String>,
}

/// A forget that has not completed: its namespace refuses reads and writes
/// (`forget_in_progress`) until the forget is run again and finishes.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingForget {
    /// The namespace's slug.
    pub namespace: String,
    /// The manifest.
    pub manifest_id: uuid::Uuid,
    /// The lineage being forgotten.
    pub document_id: DocumentId,
    /// When the forget started.
    pub started_at: Timestamp,
    /// Why the last attempt stopped, if one failed (none: it was interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The command that runs the forget again; it resumes where it stopped.
    pub resume_with: String,
}

/// The refusal of every read and write in namespace `slug` while the forget of
/// lineage `doc` there is incomplete, naming the command that resumes it.
pub fn forget_in_progress(slug: &str, doc: &str) -> Error {
    Error::new(
        crate::ErrorCode::ForgetInProgress,
        format!(
            "a hard forget of document {doc} in namespace `{slug}` is incomplete: the namespace \
             refuses reads and writes until it finishes; resume it with \
             `remember --namespace {slug} forget {doc}` (`remember doctor` says why it stopped)"
        ),
    )
}

impl PendingForget {
    /// A pending forget, with the command that resumes it.
    pub fn new(
        namespace: String,
        manifest_id: uuid::Uuid,
        document_id: DocumentId,
        started_at: Timestamp,
        last_error: Option<String>,
    ) -> Self {
        let resume_with = format!("remember --namespace {namespace} forget {document_id}");
        Self {
            namespace,
            manifest_id,
            document_id,
            started_at,
            last_error,
            resume_with,
        }
    }

    /// One line for people: what is closed, why, and how to resume it.
    pub fn describe(&self) -> String {
        format!(
            "the forget of document {} in namespace `{}` (started {}) is incomplete, so the \
             namespace refuses reads and writes: {}; resume it with `{}`",
            self.document_id,
            self.namespace,
            crate::time::to_rfc3339(&self.started_at),
            self.last_error.as_deref().unwrap_or("it was interrupted"),
            self.resume_with
        )
    }
}

/// sha256 of a lineage's source identity, as a manifest records it.
pub fn source_identity_sha256(source_kind: &str, source_ref: &str) -> String {
    crate::hash::sha256_hex(format!("{source_kind}\0{source_ref}").as_bytes())
}
