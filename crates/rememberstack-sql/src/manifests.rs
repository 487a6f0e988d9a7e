//! The forget manifest root: a directory of content-free manifests beside every
//! database, apart from it, so that restoring an older copy of a database cannot
//! resurrect what was forgotten — a store re-honours every manifest when it opens.
//! Both stores keep it the same way; it is the stores' file IO, not the core's.

use rememberstack_core::forget::{ForgetManifest, MANIFEST_FORMAT};
use rememberstack_core::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;
    use rememberstack_core::forget::{ForgetTarget, source_identity_sha256};
    use rememberstack_core::ids::{DocumentId, NamespaceId, VersionId};

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
            requested_at: rememberstack_core::time::parse_rfc3339(at).unwrap(),
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
