//! The model cache: where local embedding models live, how they get there
//! (`pull` from the Hugging Face hub, `import` from a directory) and how a default
//! configuration finds one.
//!
//! A model is a directory holding `config.json`, `tokenizer.json` and
//! `model.safetensors` (plus the optional sentence-transformers settings), named after
//! the model under the cache directory: `<cache>/all-MiniLM-L6-v2/`. The cache is
//! `$REMEMBERSTACK_MODELS_DIR`, else `$XDG_CACHE_HOME/rememberstack/models`, else
//! `~/.cache/rememberstack/models`.
//!
//! Files are written to a temporary directory beside their final place and renamed
//! into it only once complete, so a crash or a cut connection never leaves a
//! half-written model where a store would load it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rememberstack_core::embed::ProviderError;

/// The model a default configuration uses.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The static model `provider = "static"` takes from the cache when no directory is
/// set (`scripts/fetch-model.sh tokenlearn-static-64d` installs it): tokenlearn-static-model's
/// 64-dimension table.
pub const DEFAULT_STATIC_MODEL: &str = "tokenlearn-static-64d";

/// The environment variable naming the model cache directory.
pub const MODELS_DIR_ENV: &str = "REMEMBERSTACK_MODELS_DIR";

/// The environment variable naming the hub to download from (default
/// `https://huggingface.co`; `HF_ENDPOINT` is honoured too).
pub const MODEL_ENDPOINT_ENV: &str = "REMEMBERSTACK_MODEL_ENDPOINT";

/// Set (to anything but `0`) to forbid downloads on first use; `HF_HUB_OFFLINE`
/// is honoured too. `remember models pull` still downloads.
pub const OFFLINE_ENV: &str = "REMEMBERSTACK_OFFLINE";

/// The files a model directory must hold.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Files a model directory may hold (sentence-transformers settings).
pub const OPTIONAL_FILES: [&str; 2] = ["sentence_bert_config.json", "1_Pooling/config.json"];

/// How long a failed first-use download keeps later opens from trying again, so a
/// machine without internet pays the connection timeout once, not on every open.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(3600);

/// How long a first-use download may take to connect before it gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(4);

/// The longest pause between two pieces of a download before it gives up.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A model this build knows how to fetch: its cache name and its hub repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownModel {
    /// The cache directory name (and the name `remember models pull` takes).
    pub name: &'static str,
    /// The Hugging Face hub repository.
    pub repo: &'static str,
    /// The vector dimension.
    pub dimension: usize,
}

/// The models `pull` can fetch by name: only those the local embedder loads (a
/// BERT encoder with mean pooling; bge models pool the CLS token and are refused).
pub const KNOWN_MODELS: &[KnownModel] = &[KnownModel {
    name: "all-MiniLM-L6-v2",
    repo: "sentence-transformers/all-MiniLM-L6-v2",
    dimension: 384,
}];

/// The model called `name`, if this build knows it.
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| m.name == name)
}

/// The model cache directory, from the environment read through `var`.
pub fn models_dir_with(var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let var = |k: &str| var(k).filter(|v| !v.trim().is_empty());
    if let Some(dir) = var(MODELS_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("rememberstack").join("models"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache/rememberstack/models"))
}

/// The model cache directory (see the module documentation), or `None` when
/// neither it nor a home directory is set.
pub fn models_dir() -> Option<PathBuf> {
    models_dir_with(|k| std::env::var(k).ok())
}

/// Whether `dir` holds every file a model needs.
pub fn is_complete(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|f| dir.join(f).is_file())
}

/// Whether first-use downloads are forbidden by the environment.
pub fn offline() -> bool {
    [OFFLINE_ENV, "HF_HUB_OFFLINE"]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.trim().is_empty() && v.trim() != "0"))
}

/// A model name usable as one directory name (no separators, no dot-only names).
pub(crate) fn check_name(name: &str) -> Result<(), ProviderError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ProviderError::Config(format!(
            "`{name}` is not a model name: use letters, digits, `-`, `_` and `.`"
        )))
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> ProviderError {
    ProviderError::Config(format!("{what} {}: {e}", path.display()))
}

/// Copies the model files in `src` into the cache as `name` (replacing what was
/// there) and returns the model's directory. Refuses a directory that lacks a
/// required file; the copy lands whole or not at all.
pub fn import(src: &Path, name: &str, cache: &Path) -> Result<PathBuf, ProviderError> {
    check_name(name)?;
    if let Some(missing) = REQUIRED_FILES.iter().find(|f| !src.join(f).is_file()) {
        return Err(ProviderError::Config(format!(
            "{} holds no `{missing}`: a model directory needs {}",
            src.display(),
            REQUIRED_FILES.join(", ")
        )));
    }
    let staging = staging_dir(cache, name)?;
    let result = (|| {
        for file in REQUIRED_FILES.iter().chain(OPTIONAL_FILES.iter()) {
            let from = src.join(file);
            if !from.is_file() {
                continue;
            }
            let to = staging.join(file);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io_err("cannot create", parent, e))?;
            }
            std::fs::copy(&from, &to).map_err(|e| io_err("cannot copy", &from, e))?;
        }
        install(&staging, &cache.join(name))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

/// A fresh temporary directory in `cache` for the files of `name`.
fn staging_dir(cache: &Path, name: &str) -> Result<PathBuf, ProviderError> {
    std::fs::create_dir_all(cache).map_err(|e| io_err("cannot create", cache, e))?;
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir = cache.join(format!(".{name}.partial-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    Ok(dir)
}

/// Moves a complete staging directory to `target`, replacing an older copy.
fn install(staging: &Path, target: &Path) -> Result<PathBuf, ProviderError> {
    if target.exists() {
        let old = staging.with_extension("old");
        std::fs::rename(target, &old).map_err(|e| io_err("cannot replace", target, e))?;
        std::fs::rename(staging, target).map_err(|e| io_err("cannot install", target, e))?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(staging, target).map_err(|e| io_err("cannot install", target, e))?;
    }
    Ok(target.to_path_buf())
}

/// Progress of a download: the file, bytes so far and the file's size when known.
pub type Progress<'a> = &'a (dyn Fn(&str, u64, Option<u64>) + Send + Sync);

/// The hub to download from.
fn endpoint() -> String {
    [MODEL_ENDPOINT_ENV, "HF_ENDPOINT"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "https://huggingface.co".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// Where models come from: the cache, the hub, and whether first-use downloads
/// are allowed. [`ModelSource::from_env`] reads the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSource {
    /// The model cache (`None`: no cache directory can be named).
    pub cache: Option<PathBuf>,
    /// The hub's base URL.
    pub endpoint: String,
    /// Whether a missing model may be downloaded on first use.
    pub download_on_first_use: bool,
}

impl ModelSource {
    /// The cache, hub and download permission the environment names.
    pub fn from_env() -> Self {
        ModelSource {
            cache: models_dir(),
            endpoint: endpoint(),
            download_on_first_use: !offline(),
        }
    }
}

/// Downloads the known model `name` from the hub the environment names into the
/// cache and returns its directory. Fails fast (a few seconds) when the hub cannot
/// be reached.
pub async fn pull(
    name: &str,
    cache: &Path,
    progress: Progress<'_>,
) -> Result<PathBuf, ProviderError> {
    pull_from(&endpoint(), name, cache, progress).await
}

/// [`pull`] from the hub at `base` (e.g. `https://huggingface.co`).
pub async fn pull_from(
    base: &str,
    name: &str,
    cache: &Path,
    progress: Progress<'_>,
) -> Result<PathBuf, ProviderError> {
    let model = known_model(name).ok_or_else(|| {
        ProviderError::Config(format!(
            "no known model `{name}`: pull one of {}, or `remember models import DIR` a copy",
            KNOWN_MODELS
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .build()
        .map_err(|e| ProviderError::Config(format!("cannot build an HTTP client: {e}")))?;
    let base = base.trim_end_matches('/');
    let staging = staging_dir(cache, name)?;
    let result = async {
        for (file, required) in REQUIRED_FILES
            .iter()
            .map(|f| (*f, true))
            .chain(OPTIONAL_FILES.iter().map(|f| (*f, false)))
        {
            let url = format!("{base}/{}/resolve/main/{file}", model.repo);
            let to = staging.join(file);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io_err("cannot create", parent, e))?;
            }
            match download(&client, &url, &to, file, progress).await {
                Ok(()) => {}
                Err(Fetch::NotFound) if !required => {}
                Err(Fetch::NotFound) => {
                    return Err(ProviderError::Config(format!("{url}: not found")));
                }
                Err(Fetch::Failed(e)) => return Err(e),
            }
        }
        install(&staging, &cache.join(name))
    }
    .await;
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

enum Fetch {
    NotFound,
    Failed(ProviderError),
}

async fn download(
    client: &reqwest::Client,
    url: &str,
    to: &Path,
    file: &str,
    progress: Progress<'_>,
) -> Result<(), Fetch> {
    let transport = |e: reqwest::Error| {
        Fetch::Failed(ProviderError::Transport {
            message: format!("{url}: {e}"),
        })
    };
    let mut resp = client.get(url).send().await.map_err(transport)?;
    let status = resp.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(Fetch::NotFound);
    }
    if !status.is_success() {
        return Err(Fetch::Failed(ProviderError::Status {
            status: status.as_u16(),
            message: format!("{url}: HTTP {status}"),
            retry_after: None,
        }));
    }
    let total = resp.content_length();
    let mut out =
        std::fs::File::create(to).map_err(|e| Fetch::Failed(io_err("cannot create", to, e)))?;
    let mut got = 0u64;
    progress(file, 0, total);
    while let Some(chunk) = resp.chunk().await.map_err(transport)? {
        out.write_all(&chunk)
            .map_err(|e| Fetch::Failed(io_err("cannot write", to, e)))?;
        got += chunk.len() as u64;
        progress(file, got, total);
    }
    if let Some(total) = total
        && got != total
    {
        return Err(Fetch::Failed(ProviderError::Transport {
            message: format!("{url}: the download ended after {got} of {total} bytes"),
        }));
    }
    out.sync_all()
        .map_err(|e| Fetch::Failed(io_err("cannot write", to, e)))?;
    Ok(())
}

/// The marker a failed first-use download leaves, so later opens skip the
/// attempt for [`RETRY_AFTER_FAILURE`].
fn failure_marker(cache: &Path, name: &str) -> PathBuf {
    cache.join(format!(".{name}.unreachable"))
}

/// Whether a first-use download of `name` failed less than
/// [`RETRY_AFTER_FAILURE`] ago.
pub fn recently_failed(cache: &Path, name: &str) -> bool {
    std::fs::metadata(failure_marker(cache, name))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < RETRY_AFTER_FAILURE)
}

/// Records that a first-use download of `name` failed with `why`.
pub fn mark_failed(cache: &Path, name: &str, why: &str) {
    let _ = std::fs::create_dir_all(cache);
    let _ = std::fs::write(failure_marker(cache, name), why);
}

/// Forgets an earlier failed download of `name` (after a successful one).
pub fn clear_failed(cache: &Path, name: &str) {
    let _ = std::fs::remove_file(failure_marker(cache, name));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_follows_the_environment_in_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            models_dir_with(env(&[
                (MODELS_DIR_ENV, "/m"),
                ("XDG_CACHE_HOME", "/x"),
                ("HOME", "/h")
            ])),
            Some(PathBuf::from("/m"))
        );
        assert_eq!(
            models_dir_with(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/rememberstack/models"))
        );
        assert_eq!(
            models_dir_with(env(&[(MODELS_DIR_ENV, " "), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.cache/rememberstack/models"))
        );
        assert_eq!(models_dir_with(env(&[])), None);
    }

    #[test]
    fn names_that_would_leave_the_cache_are_refused() {
        for bad in ["", "..", ".", "a/b", "../x", "a\\b", "a b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("all-MiniLM-L6-v2").unwrap();
    }

    #[test]
    fn import_lands_whole_or_not_at_all() {
        let src = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("config.json"), "{}").unwrap();
        std::fs::write(src.path().join("tokenizer.json"), "{}").unwrap();
        let err = import(src.path(), "m", cache.path()).unwrap_err();
        assert!(err.to_string().contains("model.safetensors"), "{err}");
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);

        std::fs::write(src.path().join("model.safetensors"), "w1").unwrap();
        std::fs::create_dir_all(src.path().join("1_Pooling")).unwrap();
        std::fs::write(src.path().join("1_Pooling/config.json"), "{}").unwrap();
        let dir = import(src.path(), "m", cache.path()).unwrap();
        assert!(is_complete(&dir));
        assert!(dir.join("1_Pooling/config.json").is_file());
        // A second import replaces the first, leaving no staging directories.
        std::fs::write(src.path().join("model.safetensors"), "w2").unwrap();
        import(src.path(), "m", cache.path()).unwrap();
        assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), b"w2");
        let names: Vec<_> = std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("m")]);
    }

    #[test]
    fn a_failed_download_is_remembered_for_a_while() {
        let cache = tempfile::tempdir().unwrap();
        assert!(!recently_failed(cache.path(), "m"));
        mark_failed(cache.path(), "m", "no route");
        assert!(recently_failed(cache.path(), "m"));
        clear_failed(cache.path(), "m");
        assert!(!recently_failed(cache.path(), "m"));
    }
}
