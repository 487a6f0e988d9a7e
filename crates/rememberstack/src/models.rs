//! Local embedding models: the cache the default configuration loads its semantic
//! model from, and the calls that fill it (`remember models pull`, `remember models
//! import`).
//!
//! The cache is `$REMEMBERSTACK_MODELS_DIR`, else `$XDG_CACHE_HOME/rememberstack/models`,
//! else `~/.cache/rememberstack/models`; a model is one directory in it, named after
//! the model. With no embedder configured, opening a memory loads
//! [`DEFAULT_MODEL`] from there, downloading it on first use when it is missing; when
//! it cannot be had, the hashing embedder stands in and every envelope says
//! `freshness.semantic.degraded = "lexical embedder"`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use rememberstack_core::{Error, ErrorCode, Result};
pub use rememberstack_llm::models::{
    DEFAULT_MODEL, KNOWN_MODELS, KnownModel, MODEL_ENDPOINT_ENV, MODELS_DIR_ENV, OFFLINE_ENV,
    REQUIRED_FILES, is_complete, models_dir,
};

/// A model directory in the cache.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CachedModel {
    /// The model's name (its directory name).
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Whether every required file is there.
    pub complete: bool,
    /// Whether the default configuration uses it.
    pub default: bool,
}

/// The cache directory, or a configuration error naming what to set.
pub fn cache_dir() -> Result<PathBuf> {
    models_dir().ok_or_else(|| {
        Error::new(
            ErrorCode::Config,
            format!("no model cache directory: set {MODELS_DIR_ENV} (or HOME)"),
        )
    })
}

/// The models in the cache, by name.
pub fn list() -> Result<Vec<CachedModel>> {
    let cache = cache_dir()?;
    let entries = match std::fs::read_dir(&cache) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => {
            return Err(Error::new(
                ErrorCode::Config,
                format!("cannot read {}: {e}", cache.display()),
            ));
        }
    };
    let mut out: Vec<CachedModel> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            (!name.starts_with('.')).then(|| CachedModel {
                complete: is_complete(&e.path()),
                default: name == DEFAULT_MODEL,
                dir: e.path(),
                name,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Downloads the known model `name` (default [`DEFAULT_MODEL`]) into the cache,
/// replacing an older copy, and returns its directory. Shows a progress bar when
/// stderr is a terminal.
pub async fn pull(name: Option<&str>) -> Result<PathBuf> {
    let name = name.unwrap_or(DEFAULT_MODEL);
    let cache = cache_dir()?;
    let progress = terminal_progress();
    let silent = |_: &str, _: u64, _: Option<u64>| {};
    let dir = rememberstack_llm::models::pull(name, &cache, progress.as_deref().unwrap_or(&silent))
        .await
        .map_err(model_error)?;
    rememberstack_llm::models::clear_failed(&cache, name);
    Ok(dir)
}

/// Copies the model in `dir` (`config.json`, `tokenizer.json`, `model.safetensors`
/// and the optional sentence-transformers settings) into the cache as `name`
/// (default [`DEFAULT_MODEL`]), replacing an older copy: the way to give a machine
/// without internet its model.
pub fn import(dir: &Path, name: Option<&str>) -> Result<PathBuf> {
    let name = name.unwrap_or(DEFAULT_MODEL);
    let cache = cache_dir()?;
    let installed = rememberstack_llm::models::import(dir, name, &cache).map_err(model_error)?;
    rememberstack_llm::models::clear_failed(&cache, name);
    Ok(installed)
}

/// A model that cannot be named, found or installed is a configuration problem
/// (`config`); a hub that fails to answer stays a provider one.
fn model_error(e: rememberstack_core::embed::ProviderError) -> Error {
    match e {
        rememberstack_core::embed::ProviderError::Config(m) => Error::new(ErrorCode::Config, m),
        other => other.into(),
    }
}

/// A progress bar on stderr, when stderr is a terminal.
#[allow(clippy::type_complexity)]
pub(crate) fn terminal_progress() -> Option<Box<dyn Fn(&str, u64, Option<u64>) + Send + Sync>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(Box::new(|file: &str, got: u64, total: Option<u64>| {
        let mb = |b: u64| b as f64 / 1_000_000.0;
        let line = match total {
            Some(t) if t > 0 => {
                let width = 30usize;
                let filled = ((got.min(t) as f64 / t as f64) * width as f64) as usize;
                format!(
                    "\rdownloading {file} [{}{}] {:.1}/{:.1} MB",
                    "#".repeat(filled),
                    " ".repeat(width - filled),
                    mb(got),
                    mb(t)
                )
            }
            _ => format!("\rdownloading {file} {:.1} MB", mb(got)),
        };
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        if total.is_some_and(|t| got >= t) {
            let _ = err.write_all(b"\n");
        }
        let _ = err.flush();
    }))
}
