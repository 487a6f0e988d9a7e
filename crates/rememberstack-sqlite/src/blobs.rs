//! The content-addressed blob directory beside the database file.

use rememberstack_core::{Error, Result};
use std::path::PathBuf;

/// `<db>.blobs/<namespace id>/<sha[0..2]>/<sha>`.
#[derive(Debug, Clone)]
pub(crate) struct BlobDir {
    root: PathBuf,
}

impl BlobDir {
    pub(crate) fn new(root: PathBuf) -> Self {
        BlobDir { root }
    }

    fn path(&self, ns: &str, sha256: &str) -> Result<PathBuf> {
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::store(format!("not a sha256: `{sha256}`")));
        }
        Ok(self.root.join(ns).join(&sha256[..2]).join(sha256))
    }

    /// Write `bytes` under their hash (atomically: a temporary file renamed into place).
    /// Writing bytes that are already there is a no-op.
    pub(crate) async fn put(&self, ns: &str, sha256: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path(ns, sha256)?;
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Ok(());
        }
        let dir = path
            .parent()
            .ok_or_else(|| Error::store("blob path has no parent"))?
            .to_path_buf();
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| Error::store(format!("cannot create {}: {e}", dir.display())))?;
        let tmp = dir.join(format!(".{sha256}.{}.tmp", uuid::Uuid::new_v4().simple()));
        tokio::fs::write(&tmp, bytes)
            .await
            .map_err(|e| Error::store(format!("cannot write {}: {e}", tmp.display())))?;
        let file = tokio::fs::File::open(&tmp)
            .await
            .map_err(|e| Error::store(format!("cannot reopen {}: {e}", tmp.display())))?;
        file.sync_all()
            .await
            .map_err(|e| Error::store(format!("cannot sync {}: {e}", tmp.display())))?;
        tokio::fs::rename(&tmp, &path)
            .await
            .map_err(|e| Error::store(format!("cannot move blob into {}: {e}", path.display())))
    }

    /// Read the bytes stored under `sha256`.
    pub(crate) async fn get(&self, ns: &str, sha256: &str) -> Result<Vec<u8>> {
        let path = self.path(ns, sha256)?;
        tokio::fs::read(&path)
            .await
            .map_err(|e| Error::store(format!("cannot read blob {}: {e}", path.display())))
    }
}

impl BlobDir {
    /// Remove the bytes stored under `sha256`, and any temporary file a crashed
    /// write left for them. Returns whether a blob was there.
    pub(crate) async fn remove(&self, ns: &str, sha256: &str) -> Result<bool> {
        let path = self.path(ns, sha256)?;
        if let Some(dir) = path.parent()
            && let Ok(mut entries) = tokio::fs::read_dir(dir).await
        {
            let prefix = format!(".{sha256}.");
            while let Ok(Some(e)) = entries.next_entry().await {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = tokio::fs::remove_file(e.path()).await;
                }
            }
        }
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::store(format!(
                "cannot remove blob {}: {e}",
                path.display()
            ))),
        }
    }

    /// Whether bytes are stored under `sha256`.
    pub(crate) async fn exists(&self, ns: &str, sha256: &str) -> Result<bool> {
        Ok(tokio::fs::try_exists(self.path(ns, sha256)?)
            .await
            .unwrap_or(false))
    }
}
