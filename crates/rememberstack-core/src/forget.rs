//! Hard forget (D74, D75): the content-free manifest, the manifest root every
//! store appends to before it scrubs, and the report of a completed forget.
//!
//! The manifest root is the one piece of IO in core: it lives apart from every
//! database, so that restoring an older copy of a database cannot resurrect what
//! was forgotten — a store re-honours every manifest when it opens.

use crate::ids::{DocumentId, NamespaceId, VersionId};
use crate::time::Timestamp;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The manifest format.
pub const MANIFEST_FORMAT: &str = "rememberstack.forget/v1";

/// A vector row no chunk, claim, fact or entity profile uses any more (both
/// stores' SQL; forget and conversation compaction remove such rows).
pub const VECTOR_UNUSED: &str =
    "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.namespace_id = vectors.namespace_id
                   AND c.embedding_key = vectors.embedding_key)
               AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.namespace_id = vectors.namespace_id
                   AND c.embedding_key = vectors.embedding_key)
               AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.namespace_id = vectors.namespace_id
                   AND f.embedding_key = vectors.embedding_key)
               AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.namespace_id = vectors.namespace_id
                   AND e.profile_key = vectors.embedding_key)";

/// The scrub's statements, the same text on both stores: `?` placeholders (the
/// PostgreSQL store numbers them) and `{IN}` where the store's `IN` over one JSON
/// array parameter goes ([`scrub_sql::with_in`]). A filter over two columns is
/// two statements, each served by its column's index: an `OR` of two id lists
/// left the planner a scan of the namespace.
pub mod scrub_sql {
    /// `template` with the store's `IN` over a JSON array parameter for `{IN}`.
    pub fn with_in(template: &str, in_list: &str) -> String {
        template.replace("{IN}", in_list)
    }

    /// `DELETE FROM table WHERE namespace_id = ? AND column {IN}`.
    pub fn delete_in(table: &str, column: &str, in_list: &str) -> String {
        format!("DELETE FROM {table} WHERE namespace_id = ? AND {column} {in_list}")
    }

    /// Chunks of the versions: `seq, id, embedding_key`.
    pub const CHUNKS_OF_VERSIONS: &str =
        "SELECT seq, id, embedding_key FROM chunks WHERE namespace_id = ? AND version_id {IN}";
    /// Every claim of the lineage.
    pub const CLAIMS_OF_LINEAGE: &str =
        "SELECT seq, id, embedding_key FROM claims WHERE namespace_id = ? AND document_id = ?";
    /// The lineage's claims that occur in no version but the listed ones.
    pub const CLAIMS_ONLY_IN_VERSIONS: &str = "SELECT c.seq, c.id, c.embedding_key FROM claims c
         WHERE c.namespace_id = ? AND c.document_id = ?
           AND NOT EXISTS (SELECT 1 FROM chunk_claims cc
               WHERE cc.namespace_id = c.namespace_id AND cc.claim_id = c.id
                 AND cc.version_id NOT {IN})";
    /// Facts the listed claims evidence, with repeats (`DISTINCT` made SQLite
    /// read the namespace's evidence in fact order instead of by claim).
    pub const FACTS_OF_CLAIMS: &str =
        "SELECT fact_id FROM fact_evidence WHERE namespace_id = ? AND claim_id {IN}";
    /// The listed facts that no evidence supports any more.
    pub const FACTS_WITHOUT_EVIDENCE: &str = "SELECT f.seq, f.id, f.embedding_key FROM facts f
         WHERE f.namespace_id = ? AND f.id {IN}
           AND NOT EXISTS (SELECT 1 FROM fact_evidence e
               WHERE e.namespace_id = f.namespace_id AND e.fact_id = f.id)";
    /// Subjects and objects of the listed facts (binds: ns, list, ns, list).
    pub const ENTITIES_OF_FACTS: &str =
        "SELECT subject_id FROM facts WHERE namespace_id = ? AND id {IN}
         UNION SELECT object_id FROM facts WHERE namespace_id = ? AND id {IN}
           AND object_id IS NOT NULL";
    /// Correction notes among the versions (`corrections/<fact id>`).
    pub const CORRECTION_NOTES: &str =
        "SELECT DISTINCT source_key FROM notes WHERE namespace_id = ? AND version_id {IN}
           AND source_key LIKE 'corrections/%'";
    /// A surviving fact superseded by a removed one was never superseded.
    pub const UNSUPERSEDE: &str =
        "UPDATE facts SET superseded_by = NULL WHERE namespace_id = ? AND superseded_by {IN}";
    /// Entities the listed claims mention or resolved (binds: ns, list, ns, list).
    pub const ENTITIES_OF_CLAIMS: &str =
        "SELECT DISTINCT entity_id FROM entity_mentions WHERE namespace_id = ? AND claim_id {IN}
         UNION SELECT DISTINCT entity_id FROM resolution_decisions WHERE namespace_id = ? AND claim_id {IN}";
    /// Resolution decisions of the listed claims.
    pub const DECISIONS_OF_CLAIMS: &str =
        "SELECT id FROM resolution_decisions WHERE namespace_id = ? AND claim_id {IN}";
    /// Work of the listed versions.
    pub const WORK_OF_VERSIONS: &str =
        "SELECT id FROM processing_state WHERE namespace_id = ? AND version_id {IN}";
    /// Work on the listed records (chunks, claims, facts).
    pub const WORK_ON_RECORDS: &str =
        "SELECT id FROM processing_state WHERE namespace_id = ? AND target_id {IN}";
    /// The listed entities nothing mentions, no fact names and no survivor
    /// redirects into.
    pub const UNSUPPORTED_ENTITIES: &str = "SELECT e.id FROM entities e
         WHERE e.namespace_id = ? AND e.id {IN}
           AND NOT EXISTS (SELECT 1 FROM entity_mentions m
               WHERE m.namespace_id = e.namespace_id AND m.entity_id = e.id)
           AND NOT EXISTS (SELECT 1 FROM facts f
               WHERE f.namespace_id = e.namespace_id AND f.subject_id = e.id)
           AND NOT EXISTS (SELECT 1 FROM facts f
               WHERE f.namespace_id = e.namespace_id AND f.object_id = e.id)
           AND NOT EXISTS (SELECT 1 FROM entities s
               WHERE s.namespace_id = e.namespace_id AND s.merged_into = e.id)";
    /// Profile vector keys of the listed entities.
    pub const PROFILE_KEYS: &str = "SELECT profile_key FROM entities
         WHERE namespace_id = ? AND profile_key IS NOT NULL AND id {IN}";
    /// A surviving entity's remaining surfaces, most frequent first.
    pub const SURFACES: &str =
        "SELECT surface FROM entity_mentions WHERE namespace_id = ? AND entity_id = ?
         GROUP BY surface ORDER BY COUNT(*) DESC, MIN(seq)";
    /// A surviving entity's aliases no remaining surface carries.
    pub const STALE_ALIASES: &str =
        "DELETE FROM entity_aliases WHERE namespace_id = ? AND entity_id = ?
           AND surface NOT {IN}";
    /// A surviving entity's keys no remaining alias derives (binds: ns, e, ns, e).
    pub const STALE_KEYS: &str = "DELETE FROM entity_keys WHERE namespace_id = ? AND entity_id = ?
           AND alias_lemma NOT IN (SELECT lemma FROM entity_aliases
               WHERE namespace_id = ? AND entity_id = ?)";
    /// A canonical name only removed mentions carried yields to the first
    /// remaining surface (binds: surface, surface, ns, e, surfaces, surface).
    pub const RENAME: &str = "UPDATE entities SET
           canonical_name = (SELECT surface FROM entity_aliases a
               WHERE a.namespace_id = entities.namespace_id AND a.entity_id = entities.id
                 AND a.surface = ?),
           lemma = (SELECT lemma FROM entity_aliases a
               WHERE a.namespace_id = entities.namespace_id AND a.entity_id = entities.id
                 AND a.surface = ?)
         WHERE namespace_id = ? AND id = ? AND canonical_name NOT {IN}
           AND EXISTS (SELECT 1 FROM entity_aliases a
               WHERE a.namespace_id = entities.namespace_id AND a.entity_id = entities.id
                 AND a.surface = ?)";
    /// The profile goes (the engine rebuilds it from the surviving facts).
    pub const CLEAR_PROFILE: &str = "UPDATE entities
         SET profile_summary = NULL, profile_key = NULL, profile_updated_at = NULL
         WHERE namespace_id = ? AND id = ?";
    /// Key counts of keys no entity carries any more.
    pub const EMPTY_KEY_COUNTS: &str =
        "DELETE FROM entity_key_counts WHERE namespace_id = ? AND n <= 0";
    /// Open-vocabulary predicates nothing uses any more.
    pub const UNUSED_PREDICATES: &str =
        "DELETE FROM predicates WHERE namespace_id = ? AND status = 'other'
           AND NOT EXISTS (SELECT 1 FROM staged_assertions s
               WHERE s.namespace_id = predicates.namespace_id AND s.predicate = predicates.name)
           AND NOT EXISTS (SELECT 1 FROM facts f
               WHERE f.namespace_id = predicates.namespace_id AND f.predicate = predicates.name)";
    /// Content hashes of the listed versions.
    pub const SHAS_OF_VERSIONS: &str = "SELECT DISTINCT content_sha256 FROM document_versions
         WHERE namespace_id = ? AND id {IN}";
    /// Whether a version other than the listed ones still serves from a hash
    /// (binds: ns, sha, versions).
    pub const SHA_HELD_ELSEWHERE: &str = "SELECT 1 FROM document_versions
         WHERE namespace_id = ? AND content_sha256 = ? AND id NOT {IN} AND admission <> 'revoked'
         LIMIT 1";

    /// Rows keyed by a removed fact: `(table, column)`, deleted after the facts'
    /// ids are known and before the facts.
    pub const BY_FACT: &[(&str, &str)] = &[
        ("fact_events", "fact_id"),
        ("adjudications", "target_fact"),
        ("adjudications", "result_fact"),
        ("staged_assertions", "fact_id"),
    ];
    /// Rows keyed by a removed claim (`fact_evidence` goes first, on its own).
    pub const BY_CLAIM: &[(&str, &str)] = &[
        ("adjudications", "claim_id"),
        ("staged_assertions", "claim_id"),
        ("entity_mentions", "claim_id"),
        ("normalizations", "claim_id"),
        ("claim_currency_events", "claim_id"),
        ("claim_retractions", "claim_id"),
        ("resolution_decisions", "claim_id"),
        ("chunk_claims", "claim_id"),
        ("claim_extraction_decisions", "claim_id"),
    ];
    /// Rows keyed by a removed resolution decision.
    pub const BY_DECISION: &[(&str, &str)] = &[
        ("resolution_exclusions", "decision_id"),
        ("document_entity_bindings", "anchor_decision_id"),
    ];
    /// Rows keyed by a removed version that name its chunks: they go before the
    /// chunks (whose deletion the store runs itself, to count them).
    pub const BY_VERSION_BEFORE_CHUNKS: &[(&str, &str)] = &[
        ("chunk_claims", "version_id"),
        ("claim_extraction_decisions", "version_id"),
    ];
    /// The rest of a removed version's derived rows, after its chunks.
    pub const BY_VERSION: &[(&str, &str)] = &[
        ("representations", "version_id"),
        ("blocks", "version_id"),
        ("sections", "version_id"),
        ("currency_due", "version_id"),
    ];
    /// Rows of removed work items, before the items themselves.
    pub const BY_WORK: &[(&str, &str)] = &[
        ("llm_transcripts", "processing_id"),
        ("cost_ledger", "processing_id"),
        ("processing_state", "id"),
    ];
    /// Rows keyed by a removed entity, before the entities.
    pub const BY_ENTITY: &[(&str, &str)] = &[
        ("entity_aliases", "entity_id"),
        ("entity_keys", "entity_id"),
        ("document_entity_bindings", "entity_id"),
        ("resolution_decisions", "entity_id"),
        ("resolution_exclusions", "a"),
        ("resolution_exclusions", "b"),
        ("merge_events", "from_id"),
        ("merge_events", "into_id"),
    ];
    /// The verification of a forget, by lineage: `(check, table, column)`, each
    /// `SELECT COUNT(*) FROM table WHERE namespace_id = ? AND column = ?` (binds:
    /// ns, doc) must be 0.
    pub const VERIFY_BY_LINEAGE: &[(&str, &str, &str)] = &[
        ("documents", "documents", "id"),
        ("document_versions", "document_versions", "document_id"),
        ("document_names", "document_names", "document_id"),
        ("claims", "claims", "document_id"),
        ("chunks", "chunks", "document_id"),
        ("chunk_claims", "chunk_claims", "document_id"),
        (
            "extraction_decisions",
            "claim_extraction_decisions",
            "document_id",
        ),
        ("staged_assertions", "staged_assertions", "document_id"),
        (
            "resolution_decisions",
            "resolution_decisions",
            "document_id",
        ),
        ("notes", "notes", "document_id"),
        ("entity_bindings", "document_entity_bindings", "document_id"),
    ];
    /// The verification by version: `(check, table)`, rows of the versions left.
    pub const VERIFY_BY_VERSION: &[(&str, &str)] = &[
        ("representations", "representations"),
        ("blocks", "blocks"),
        ("sections", "sections"),
        ("work_items", "processing_state"),
    ];
    /// The lineage's own rows when the whole lineage goes (binds: ns, doc), after
    /// `note_requests` of its versions.
    pub const LINEAGE_ROWS: &[&str] = &[
        "DELETE FROM document_names WHERE namespace_id = ? AND document_id = ?",
        "DELETE FROM document_deletions WHERE namespace_id = ? AND document_id = ?",
        "DELETE FROM document_entity_bindings WHERE namespace_id = ? AND document_id = ?",
        "DELETE FROM notes WHERE namespace_id = ? AND document_id = ?",
        "DELETE FROM document_versions WHERE namespace_id = ? AND document_id = ?",
        "DELETE FROM documents WHERE namespace_id = ? AND id = ?",
    ];
}

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
    fn file_name(&self) -> String {
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

/// The directory of forget manifests, apart from the database.
#[derive(Clone, Debug)]
pub struct ManifestRoot {
    dir: PathBuf,
}

fn root_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::store(format!(
        "forget manifest root: cannot {what} {}: {e}",
        path.display()
    ))
}

impl ManifestRoot {
    /// The root at `dir` (created on first append).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ManifestRoot { dir: dir.into() }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Append a manifest durably (written to a temporary file, synced, renamed into
    /// place, and the directory synced). Appending the same manifest again is a no-op.
    pub fn append(&self, manifest: &ForgetManifest) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| root_err("create", &self.dir, e))?;
        let path = self.dir.join(manifest.file_name());
        if path.exists() {
            return Ok(());
        }
        let tmp = self
            .dir
            .join(format!(".{}.tmp", manifest.manifest_id.simple()));
        let body = serde_json::to_vec_pretty(manifest)
            .map_err(|e| Error::store(format!("manifest encoding: {e}")))?;
        let mut f = std::fs::File::create(&tmp).map_err(|e| root_err("write", &tmp, e))?;
        f.write_all(&body).map_err(|e| root_err("write", &tmp, e))?;
        f.sync_all().map_err(|e| root_err("sync", &tmp, e))?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(|e| root_err("rename", &path, e))?;
        if let Ok(d) = std::fs::File::open(&self.dir) {
            d.sync_all().map_err(|e| root_err("sync", &self.dir, e))?;
        }
        Ok(())
    }

    /// Every manifest in the root, oldest request first. A missing root holds none;
    /// a root that exists but cannot be read, or a manifest that does not parse, is
    /// an error: a store must not serve before it has honoured every manifest.
    pub fn list(&self) -> Result<Vec<ForgetManifest>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(root_err("read", &self.dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| root_err("read", &self.dir, e))?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|e| root_err("read", &path, e))?;
            let m: ForgetManifest = serde_json::from_slice(&bytes).map_err(|e| {
                Error::store(format!(
                    "forget manifest {} is unreadable: {e}",
                    path.display()
                ))
            })?;
            if m.format != MANIFEST_FORMAT {
                return Err(Error::store(format!(
                    "forget manifest {} has an unknown format `{}`",
                    path.display(),
                    m.format
                )));
            }
            out.push(m);
        }
        out.sort_by(|a, b| {
            a.requested_at
                .cmp(&b.requested_at)
                .then(a.manifest_id.cmp(&b.manifest_id))
        });
        Ok(out)
    }
}

/// sha256 of a lineage's source identity, as a manifest records it.
pub fn source_identity_sha256(source_kind: &str, source_ref: &str) -> String {
    crate::hash::sha256_hex(format!("{source_kind}\0{source_ref}").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(at: &str) -> ForgetManifest {
        ForgetManifest {
            format: MANIFEST_FORMAT.into(),
            manifest_id: uuid::Uuid::new_v4(),
            namespace_id: NamespaceId::new(),
            namespace: "default".into(),
            target: ForgetTarget::Document,
            document_id: DocumentId::new(),
            version_ids: vec![VersionId::new()],
            content_sha256: vec!["ab".repeat(32)],
            source_identity_sha256: source_identity_sha256("file", "a.md"),
            requested_at: crate::time::parse_rfc3339(at).unwrap(),
        }
    }

    #[test]
    fn manifests_append_durably_and_list_in_request_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = ManifestRoot::new(dir.path().join("manifests"));
        assert!(root.list().unwrap().is_empty(), "a missing root holds none");
        let (late, early) = (
            manifest("2024-02-01T00:00:00Z"),
            manifest("2024-01-01T00:00:00Z"),
        );
        root.append(&late).unwrap();
        root.append(&early).unwrap();
        root.append(&early).unwrap();
        assert_eq!(root.list().unwrap(), vec![early, late]);
    }

    #[test]
    fn an_unreadable_manifest_is_an_error_not_an_empty_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.json"), b"{not json").unwrap();
        assert!(ManifestRoot::new(dir.path()).list().is_err());
    }
}
