//! The serializable embedding-provider choice and the factory that builds it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rememberstack_core::embed::{Embedder, ProviderError};
use serde::{Deserialize, Serialize};

use crate::hashing::{DEFAULT_HASHING_DIMENSION, HashingEmbedder};
use crate::openai::{OpenAiEmbedder, OpenAiEmbedderConfig};

/// The environment variable an OpenAI-compatible provider reads its key from when
/// `api_key_env` is not set.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// Which embedder to use, as written in configuration files:
///
/// ```json
/// {"provider": "hashing", "dimension": 256}
/// {"provider": "openai", "base_url": "https://api.openai.com/v1",
///  "model": "text-embedding-3-small", "dimension": 1536}
/// {"provider": "local", "model_dir": "/models/all-MiniLM-L6-v2"}
/// {"provider": "static", "model_dir": "/models/tokenlearn-static-64d"}
/// ```
///
/// It never holds a secret: the API key is read from the environment variable
/// named by `api_key_env`, so the derived `Debug` is safe to print.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case")]
pub enum EmbedderConfig {
    /// The offline [`HashingEmbedder`]: lexical, not semantic.
    Hashing {
        /// The vector dimension (default 256).
        #[serde(default = "default_hashing_dimension")]
        dimension: usize,
    },
    /// An OpenAI-compatible `/embeddings` endpoint ([`OpenAiEmbedder`]).
    Openai {
        /// The API base URL, e.g. `https://api.openai.com/v1`.
        base_url: String,
        /// The model name.
        model: String,
        /// The vector dimension the model returns.
        dimension: usize,
        /// The environment variable holding the API key (default `OPENAI_API_KEY`).
        /// When the variable is unset or empty, requests carry no `Authorization`
        /// header, which suits local servers such as Ollama.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Whether to send `"dimensions"` in requests (default `false`).
        #[serde(default)]
        send_dimensions: bool,
        /// The request timeout in seconds (default 60).
        #[serde(default)]
        timeout_secs: Option<u64>,
    },
    /// A sentence-embedding model run in-process on the CPU (`LocalEmbedder`;
    /// the default). With `model_dir` the model is loaded from that directory and
    /// any failure is an error. Without it, the model named `model` (default
    /// [`crate::models::DEFAULT_MODEL`]) is taken from the model cache, downloaded
    /// there on first use when it is missing; when no model can be had (no internet,
    /// a build without the `local-embedder` feature), [`resolve_embedder`] stands the
    /// hashing embedder in and says why.
    Local {
        /// The directory holding `config.json`, `tokenizer.json` and
        /// `model.safetensors`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_dir: Option<PathBuf>,
        /// The cached model's name when `model_dir` is not set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// A static (model2vec-style) embedding table (`StaticEmbedder`, feature
    /// `static-embedder`): the weighted mean of token vectors, no neural network.
    /// With `model_dir` the model is loaded from that directory; without it, the
    /// model named `model` (default [`crate::models::DEFAULT_STATIC_MODEL`]) from the
    /// model cache, where `scripts/fetch-model.sh tokenlearn-static-64d` puts it. It is
    /// never downloaded on first use and nothing stands in for it: a missing or broken
    /// model is a configuration error.
    Static {
        /// The directory holding `tokenizer.json`, `model.safetensors` and,
        /// optionally, `config.json`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_dir: Option<PathBuf>,
        /// The cached model's name when `model_dir` is not set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
}

/// What [`build_embedder`] says for [`EmbedderConfig::Local`] in a build without the
/// `local-embedder` feature.
#[cfg(not(feature = "local-embedder"))]
pub(crate) const NO_LOCAL_EMBEDDER: &str =
    "this build has no local embedder: rebuild with the `local-embedder` feature";

/// What [`build_embedder`] says for [`EmbedderConfig::Static`] in a build without
/// the `static-embedder` feature.
#[cfg(not(feature = "static-embedder"))]
pub(crate) const NO_STATIC_EMBEDDER: &str =
    "this build has no static embedder: rebuild with the `static-embedder` feature";

fn default_hashing_dimension() -> usize {
    DEFAULT_HASHING_DIMENSION
}

impl Default for EmbedderConfig {
    /// `Local` with neither a directory nor a model name: the default semantic
    /// model from the cache, the hashing embedder standing in when it cannot be had.
    fn default() -> Self {
        EmbedderConfig::Local {
            model_dir: None,
            model: None,
        }
    }
}

impl EmbedderConfig {
    /// The offline hashing embedder of the default dimension.
    pub fn hashing() -> Self {
        EmbedderConfig::Hashing {
            dimension: DEFAULT_HASHING_DIMENSION,
        }
    }

    /// A local model loaded from `dir`.
    pub fn local_dir(dir: impl Into<PathBuf>) -> Self {
        EmbedderConfig::Local {
            model_dir: Some(dir.into()),
            model: None,
        }
    }

    /// A static model loaded from `dir`.
    pub fn static_dir(dir: impl Into<PathBuf>) -> Self {
        EmbedderConfig::Static {
            model_dir: Some(dir.into()),
            model: None,
        }
    }
}

/// An embedder and, when the configured semantic model could not be had, why the
/// hashing embedder stands in for it.
#[derive(Clone, Debug)]
pub struct ResolvedEmbedder {
    /// The embedder to use.
    pub embedder: Arc<dyn Embedder>,
    /// Why the configured model is not used (`None` when it is).
    pub fallback: Option<String>,
}

/// Builds the embedder `config` describes, fetching the default model into the
/// cache on first use (see [`EmbedderConfig::Local`]). `progress` hears about a
/// download. Errors are those of [`build_embedder`]; a missing cached model is not
/// an error but a [`ResolvedEmbedder::fallback`].
pub async fn resolve_embedder(
    config: &EmbedderConfig,
    progress: Option<crate::models::Progress<'_>>,
) -> Result<ResolvedEmbedder, ProviderError> {
    let EmbedderConfig::Local {
        model_dir: None,
        model,
    } = config
    else {
        return Ok(ResolvedEmbedder {
            embedder: build_embedder(config)?,
            fallback: None,
        });
    };
    let name = model.as_deref().unwrap_or(crate::models::DEFAULT_MODEL);
    Ok(resolve_cached(name, &crate::models::ModelSource::from_env(), progress).await)
}

/// The cached model `name` from `source` (downloaded first when it is missing and
/// `source` allows it), or the hashing embedder standing in, with the reason.
pub async fn resolve_cached(
    name: &str,
    source: &crate::models::ModelSource,
    progress: Option<crate::models::Progress<'_>>,
) -> ResolvedEmbedder {
    match cached_model(name, source, progress).await {
        Ok(embedder) => ResolvedEmbedder {
            embedder,
            fallback: None,
        },
        Err(why) => {
            tracing::warn!(model = name, reason = %why, "no semantic model: the hashing embedder stands in");
            ResolvedEmbedder {
                embedder: Arc::new(HashingEmbedder::standing_in(
                    DEFAULT_HASHING_DIMENSION,
                    &why,
                )),
                fallback: Some(why),
            }
        }
    }
}

/// The cached model `name`, downloaded first when missing and allowed; the error
/// says why there is none.
#[cfg(feature = "local-embedder")]
async fn cached_model(
    name: &str,
    source: &crate::models::ModelSource,
    progress: Option<crate::models::Progress<'_>>,
) -> Result<Arc<dyn Embedder>, String> {
    use crate::models;
    let cache = source.cache.clone().ok_or_else(|| {
        format!(
            "no model cache directory (set {} or HOME)",
            models::MODELS_DIR_ENV
        )
    })?;
    let dir = cache.join(name);
    if !models::is_complete(&dir) {
        if models::known_model(name).is_none() {
            return Err(format!(
                "model `{name}` is not in {} and is not one this build can download; \
                 `remember models import DIR --name {name}` installs a copy",
                cache.display()
            ));
        }
        if !source.download_on_first_use {
            return Err(format!(
                "model `{name}` is not in {} and downloads are off ({}); \
                 run `remember models pull` or `scripts/fetch-model.sh`",
                cache.display(),
                models::OFFLINE_ENV
            ));
        }
        if models::recently_failed(&cache, name) {
            return Err(format!(
                "model `{name}` is not in {} and a download failed within the last hour; \
                 run `remember models pull` to try again",
                cache.display()
            ));
        }
        let silent = |_: &str, _: u64, _: Option<u64>| {};
        match models::pull_from(&source.endpoint, name, &cache, progress.unwrap_or(&silent)).await {
            Ok(_) => models::clear_failed(&cache, name),
            Err(e) => {
                let why = format!("model `{name}` could not be downloaded: {e}");
                models::mark_failed(&cache, name, &why);
                return Err(format!(
                    "{why}; run `remember models pull` where the hub is reachable, \
                     or `remember models import DIR`"
                ));
            }
        }
    }
    let load = tokio::task::spawn_blocking(move || crate::local::LocalEmbedder::load(&dir));
    match load.await {
        Ok(Ok(e)) => Ok(Arc::new(e)),
        Ok(Err(e)) => Err(format!("model `{name}` could not be loaded: {e}")),
        Err(e) => Err(format!("model `{name}` could not be loaded: {e}")),
    }
}

#[cfg(not(feature = "local-embedder"))]
async fn cached_model(
    _name: &str,
    _source: &crate::models::ModelSource,
    _progress: Option<crate::models::Progress<'_>>,
) -> Result<Arc<dyn Embedder>, String> {
    Err(NO_LOCAL_EMBEDDER.to_owned())
}

/// Builds the embedder `config` describes.
///
/// For [`EmbedderConfig::Openai`] the API key is read from the environment variable
/// named by `api_key_env` (default [`DEFAULT_API_KEY_ENV`]); a missing or empty
/// variable means no key. Fails with [`ProviderError::Config`] on an invalid
/// configuration (zero dimension, bad URL, empty model, a key variable that is not
/// valid Unicode).
///
/// [`EmbedderConfig::Local`] with a `model_dir` loads the model from disk (blocking;
/// about a second for all-MiniLM-L6-v2) and fails with [`ProviderError::Config`]
/// when a file is missing or invalid, or when this build lacks the `local-embedder`
/// feature. Without a `model_dir` it is a configuration error here: the cached
/// model, with its download and fallback, is [`resolve_embedder`]'s.
///
/// [`EmbedderConfig::Static`] loads the table from `model_dir`, else from the model
/// cache (blocking; well under a second), and fails with [`ProviderError::Config`]
/// when the model is not there, a file is missing or invalid, or this build lacks
/// the `static-embedder` feature.
pub fn build_embedder(config: &EmbedderConfig) -> Result<Arc<dyn Embedder>, ProviderError> {
    build_embedder_with_env(config, |name| std::env::var(name))
}

/// [`build_embedder`] with an injectable environment (for tests).
pub(crate) fn build_embedder_with_env(
    config: &EmbedderConfig,
    env: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<Arc<dyn Embedder>, ProviderError> {
    match config {
        EmbedderConfig::Hashing { dimension } => {
            if *dimension == 0 {
                return Err(ProviderError::Config(
                    "hashing embedder dimension must be greater than 0".to_owned(),
                ));
            }
            Ok(Arc::new(HashingEmbedder::new(*dimension)))
        }
        EmbedderConfig::Openai {
            base_url,
            model,
            dimension,
            api_key_env,
            send_dimensions,
            timeout_secs,
        } => {
            let api_key = read_api_key(api_key_env.as_deref(), &env, "embedding")?;
            let mut openai = OpenAiEmbedderConfig::new(base_url.clone(), model.clone(), *dimension);
            openai.api_key = api_key;
            openai.send_dimensions = *send_dimensions;
            if let Some(secs) = timeout_secs {
                openai.timeout = Duration::from_secs(*secs);
            }
            Ok(Arc::new(OpenAiEmbedder::new(openai)?))
        }
        EmbedderConfig::Local {
            model_dir: None, ..
        } => Err(ProviderError::Config(
            "a local model without `model_dir` comes from the model cache: \
             use `resolve_embedder`"
                .to_owned(),
        )),
        #[cfg(feature = "local-embedder")]
        EmbedderConfig::Local {
            model_dir: Some(dir),
            ..
        } => Ok(Arc::new(crate::local::LocalEmbedder::load(dir)?)),
        #[cfg(not(feature = "local-embedder"))]
        EmbedderConfig::Local { .. } => Err(ProviderError::Config(NO_LOCAL_EMBEDDER.to_owned())),
        #[cfg(feature = "static-embedder")]
        EmbedderConfig::Static { model_dir, model } => {
            let dir = match model_dir {
                Some(dir) => dir.clone(),
                None => cached_static_dir(model.as_deref(), &env)?,
            };
            Ok(Arc::new(crate::static_model::StaticEmbedder::load(&dir)?))
        }
        #[cfg(not(feature = "static-embedder"))]
        EmbedderConfig::Static { .. } => Err(ProviderError::Config(NO_STATIC_EMBEDDER.to_owned())),
    }
}

/// The directory of the cached static model `name` (default
/// [`crate::models::DEFAULT_STATIC_MODEL`]); an error when it is not in the cache.
#[cfg(feature = "static-embedder")]
fn cached_static_dir(
    name: Option<&str>,
    env: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<PathBuf, ProviderError> {
    use crate::models;
    let name = name.unwrap_or(models::DEFAULT_STATIC_MODEL);
    models::check_name(name)?;
    let cache = models::models_dir_with(|k| env(k).ok()).ok_or_else(|| {
        ProviderError::Config(format!(
            "static model `{name}`: no model cache directory (set {} or HOME), \
             or set `model_dir`",
            models::MODELS_DIR_ENV
        ))
    })?;
    let dir = cache.join(name);
    if !dir.is_dir() {
        return Err(ProviderError::Config(format!(
            "static model `{name}` is not in {}: `scripts/fetch-model.sh {}` installs the \
             default one; `remember models import DIR --name {name}` another, or set `model_dir`",
            cache.display(),
            models::DEFAULT_STATIC_MODEL
        )));
    }
    Ok(dir)
}

/// The API key from the environment variable `api_key_env` (default
/// [`DEFAULT_API_KEY_ENV`]), trimmed; `None` when unset or empty. `what` names the
/// key in messages (`embedding`, `chat`).
pub(crate) fn read_api_key(
    api_key_env: Option<&str>,
    env: impl Fn(&str) -> Result<String, std::env::VarError>,
    what: &str,
) -> Result<Option<String>, ProviderError> {
    let var = api_key_env
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or(DEFAULT_API_KEY_ENV);
    match env(var) {
        Ok(value) => Ok(Some(value.trim().to_owned()).filter(|k| !k.is_empty())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(ProviderError::Config(format!(
            "environment variable {var} (the {what} API key) is not valid Unicode"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    fn openai(api_key_env: Option<&str>) -> EmbedderConfig {
        EmbedderConfig::Openai {
            base_url: "http://localhost:11434/v1".into(),
            model: "nomic-embed-text".into(),
            dimension: 768,
            api_key_env: api_key_env.map(str::to_owned),
            send_dimensions: false,
            timeout_secs: Some(5),
        }
    }

    #[test]
    fn default_is_the_cached_model_and_hashing_is_256() {
        assert_eq!(
            EmbedderConfig::default(),
            EmbedderConfig::Local {
                model_dir: None,
                model: None
            }
        );
        let e = build_embedder(&EmbedderConfig::hashing()).unwrap();
        assert_eq!(e.identity().generation(), "hashing/feature-hash-v1/d256/v1");
    }

    #[test]
    fn serde_shapes() {
        let c: EmbedderConfig = serde_json::from_str(r#"{"provider":"hashing"}"#).unwrap();
        assert_eq!(c, EmbedderConfig::hashing());
        let c: EmbedderConfig =
            serde_json::from_str(r#"{"provider":"hashing","dimension":64}"#).unwrap();
        assert_eq!(c, EmbedderConfig::Hashing { dimension: 64 });

        let c: EmbedderConfig = serde_json::from_str(
            r#"{"provider":"openai","base_url":"http://localhost:11434/v1",
                "model":"nomic-embed-text","dimension":768}"#,
        )
        .unwrap();
        assert_eq!(
            c,
            EmbedderConfig::Openai {
                base_url: "http://localhost:11434/v1".into(),
                model: "nomic-embed-text".into(),
                dimension: 768,
                api_key_env: None,
                send_dimensions: false,
                timeout_secs: None,
            }
        );
        let round: EmbedderConfig =
            serde_json::from_value(serde_json::to_value(openai(Some("K"))).unwrap()).unwrap();
        assert_eq!(round, openai(Some("K")));
        assert_eq!(
            serde_json::to_value(EmbedderConfig::hashing()).unwrap(),
            serde_json::json!({"provider": "hashing", "dimension": 256})
        );
        assert_eq!(
            serde_json::to_value(EmbedderConfig::default()).unwrap(),
            serde_json::json!({"provider": "local"})
        );
        assert!(serde_json::from_str::<EmbedderConfig>(r#"{"provider":"nope"}"#).is_err());

        let local = EmbedderConfig::local_dir("/models/all-MiniLM-L6-v2");
        let c: EmbedderConfig =
            serde_json::from_str(r#"{"provider":"local","model_dir":"/models/all-MiniLM-L6-v2"}"#)
                .unwrap();
        assert_eq!(c, local);
        assert_eq!(
            serde_json::to_value(&local).unwrap(),
            serde_json::json!({"provider": "local", "model_dir": "/models/all-MiniLM-L6-v2"})
        );
        let c: EmbedderConfig =
            serde_json::from_str(r#"{"provider":"local","model":"bge-small-en-v1.5"}"#).unwrap();
        assert_eq!(
            c,
            EmbedderConfig::Local {
                model_dir: None,
                model: Some("bge-small-en-v1.5".into())
            }
        );
    }

    #[cfg(not(feature = "local-embedder"))]
    #[test]
    fn local_without_the_feature_is_a_config_error() {
        let c = EmbedderConfig::local_dir("/models/all-MiniLM-L6-v2");
        match build_embedder(&c) {
            Err(ProviderError::Config(m)) => assert_eq!(m, NO_LOCAL_EMBEDDER),
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[test]
    fn static_serde_shapes() {
        let c: EmbedderConfig = serde_json::from_str(
            r#"{"provider":"static","model_dir":"/models/tokenlearn-static-64d"}"#,
        )
        .unwrap();
        assert_eq!(
            c,
            EmbedderConfig::static_dir("/models/tokenlearn-static-64d")
        );
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({"provider": "static", "model_dir": "/models/tokenlearn-static-64d"})
        );
        let c: EmbedderConfig = serde_json::from_str(r#"{"provider":"static"}"#).unwrap();
        assert_eq!(
            c,
            EmbedderConfig::Static {
                model_dir: None,
                model: None
            }
        );
        let c: EmbedderConfig =
            serde_json::from_str(r#"{"provider":"static","model":"potion-base-8M"}"#).unwrap();
        assert_eq!(
            c,
            EmbedderConfig::Static {
                model_dir: None,
                model: Some("potion-base-8M".into())
            }
        );
    }

    #[cfg(feature = "static-embedder")]
    #[test]
    fn static_loads_from_its_directory_or_the_cache() {
        use crate::models::{DEFAULT_STATIC_MODEL, MODELS_DIR_ENV};
        let cache = tempfile::tempdir().unwrap();
        let dir = cache.path().join(DEFAULT_STATIC_MODEL);
        crate::static_model::tests::write_test_model(&dir);
        let e = build_embedder(&EmbedderConfig::static_dir(&dir)).unwrap();
        let generation = e.identity().generation();
        assert!(
            generation.starts_with("static/tokenlearn-static-64d/d3/v1-"),
            "{generation}"
        );
        assert!(e.is_in_process() && e.degraded().is_none());

        let cache_path = cache.path().to_str().unwrap().to_owned();
        let env = |k: &str| {
            if k == MODELS_DIR_ENV {
                Ok(cache_path.clone())
            } else {
                Err(VarError::NotPresent)
            }
        };
        let from_cache = EmbedderConfig::Static {
            model_dir: None,
            model: None,
        };
        let cached = build_embedder_with_env(&from_cache, env).unwrap();
        assert_eq!(cached.identity(), e.identity());

        let named = |name: &str| EmbedderConfig::Static {
            model_dir: None,
            model: Some(name.to_owned()),
        };
        let config_error = |c: &EmbedderConfig, env: &dyn Fn(&str) -> Result<String, VarError>| {
            match build_embedder_with_env(c, env) {
                Err(ProviderError::Config(m)) => m,
                other => panic!("expected a configuration error for {c:?}, got {other:?}"),
            }
        };
        let m = config_error(&named("potion-base-8M"), &env);
        assert!(
            m.contains("scripts/fetch-model.sh tokenlearn-static-64d"),
            "{m}"
        );
        let m = config_error(&named("../escape"), &env);
        assert!(m.contains("is not a model name"), "{m}");
        let m = config_error(&from_cache, &|_: &str| Err(VarError::NotPresent));
        assert!(m.contains(MODELS_DIR_ENV), "{m}");
        let m = config_error(
            &EmbedderConfig::static_dir(cache.path().join("absent")),
            &env,
        );
        assert!(m.contains("does not exist"), "{m}");
    }

    #[cfg(not(feature = "static-embedder"))]
    #[test]
    fn static_without_the_feature_is_a_config_error() {
        let c = EmbedderConfig::static_dir("/models/tokenlearn-static-64d");
        match build_embedder(&c) {
            Err(ProviderError::Config(m)) => assert_eq!(m, NO_STATIC_EMBEDDER),
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[test]
    fn key_comes_from_the_named_variable() {
        let env = |name: &str| match name {
            "MY_KEY" => Ok(" sk-from-env\n".to_owned()),
            "EMPTY" => Ok(String::new()),
            _ => Err(VarError::NotPresent),
        };
        let e = build_embedder_with_env(&openai(Some("MY_KEY")), env).unwrap();
        let debug = format!("{e:?}");
        assert!(debug.contains("<redacted>"), "{debug}");
        assert!(!debug.contains("sk-from-env"), "{debug}");

        // Missing or empty key: allowed, no Authorization header.
        for name in [None, Some("EMPTY"), Some("ABSENT")] {
            let e = build_embedder_with_env(&openai(name), env).unwrap();
            assert!(format!("{e:?}").contains("api_key: None"));
            assert_eq!(
                e.identity().generation(),
                "openai-compatible/nomic-embed-text/d768/v1"
            );
            assert_eq!(e.max_batch(), 64);
        }
        let asked = std::cell::RefCell::new(Vec::new());
        let _ = build_embedder_with_env(&openai(None), |n| {
            asked.borrow_mut().push(n.to_owned());
            Err(VarError::NotPresent)
        });
        assert_eq!(asked.into_inner(), vec![DEFAULT_API_KEY_ENV.to_owned()]);
    }

    #[test]
    fn invalid_configs_are_config_errors() {
        let env = |_: &str| Err(VarError::NotPresent);
        let bad = [
            EmbedderConfig::Hashing { dimension: 0 },
            EmbedderConfig::Openai {
                base_url: "localhost:11434".into(),
                model: "m".into(),
                dimension: 8,
                api_key_env: None,
                send_dimensions: false,
                timeout_secs: None,
            },
            EmbedderConfig::Openai {
                base_url: "http://localhost:11434/v1".into(),
                model: "m".into(),
                dimension: 8,
                api_key_env: None,
                send_dimensions: false,
                timeout_secs: Some(0),
            },
        ];
        for c in bad {
            assert!(
                matches!(
                    build_embedder_with_env(&c, env),
                    Err(ProviderError::Config(_))
                ),
                "{c:?}"
            );
        }
    }
}
