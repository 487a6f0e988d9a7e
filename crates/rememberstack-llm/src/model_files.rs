//! Reading a model directory: what the in-process embedders (`LocalEmbedder`,
//! `StaticEmbedder`) share — file reads with errors that name the file, and the
//! SHA-256 over the files that shape the vectors, which their generations carry.

use std::fmt;
use std::path::Path;

use rememberstack_core::embed::ProviderError;
use sha2::{Digest, Sha256};

/// Hex digits of the files' SHA-256 kept in a generation.
pub(crate) const SHORT_HASH_HEX: usize = 12;

/// A model directory being loaded by the embedder `who`, which every error names.
#[derive(Clone, Copy)]
pub(crate) struct ModelDir<'a> {
    pub(crate) path: &'a Path,
    who: &'static str,
}

impl<'a> ModelDir<'a> {
    pub(crate) fn new(path: &'a Path, who: &'static str) -> Self {
        Self { path, who }
    }

    /// A configuration error: `<who>: <message>`.
    pub(crate) fn err(&self, message: impl fmt::Display) -> ProviderError {
        ProviderError::Config(format!("{}: {message}", self.who))
    }

    /// A configuration error about `file`: `<who>: <dir>/<file> <what>`.
    pub(crate) fn file_err(&self, file: &str, what: impl fmt::Display) -> ProviderError {
        self.err(format!("{} {what}", self.path.join(file).display()))
    }

    /// The bytes of `file`.
    pub(crate) fn read(&self, file: &str) -> Result<Vec<u8>, ProviderError> {
        std::fs::read(self.path.join(file))
            .map_err(|e| self.file_err(file, format!("cannot be read: {e}")))
    }

    /// The bytes of `file`, `None` when there is no such file.
    pub(crate) fn read_optional(&self, file: &str) -> Result<Option<Vec<u8>>, ProviderError> {
        match std::fs::read(self.path.join(file)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.file_err(file, format!("cannot be read: {e}"))),
        }
    }

    /// The directory's own name (after resolving `.` and links), the model name in
    /// a generation; `fallback` when it has none.
    pub(crate) fn model_name(&self, fallback: &str) -> String {
        self.path
            .canonicalize()
            .ok()
            .as_deref()
            .unwrap_or(self.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| fallback.to_owned())
    }
}

/// Feeds one file into the identity hash: its name and length first, so that bytes
/// moving between files change the hash.
pub(crate) fn hash_file(hasher: &mut Sha256, name: &str, bytes: &[u8]) {
    hasher.update((name.len() as u64).to_le_bytes());
    hasher.update(name.as_bytes());
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

/// The hash in lowercase hex.
pub(crate) fn hex_digest(hasher: Sha256) -> String {
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
