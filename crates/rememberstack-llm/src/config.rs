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
/// ```
///
/// It never holds a secret: the API key is read from the environment variable
/// named by `api_key_env`, so the derived `Debug` is safe to print.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case")]
pub enum EmbedderConfig {
    /// The offline [`HashingEmbedder`] (the default).
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
    /// A sentence-embedding model in a local directory, run on the CPU
    /// (`LocalEmbedder`). Always parses; building it needs a build with the
    /// `local-embedder` feature.
    Local {
        /// The directory holding `config.json`, `tokenizer.json` and
        /// `model.safetensors`.
        model_dir: PathBuf,
    },
}

/// What [`build_embedder`] says for [`EmbedderConfig::Local`] in a build without the
/// `local-embedder` feature.
#[cfg(not(feature = "local-embedder"))]
const NO_LOCAL_EMBEDDER: &str =
    "this build has no local embedder: rebuild with the `local-embedder` feature";

fn default_hashing_dimension() -> usize {
    DEFAULT_HASHING_DIMENSION
}

impl Default for EmbedderConfig {
    /// `Hashing { dimension: 256 }`.
    fn default() -> Self {
        EmbedderConfig::Hashing {
            dimension: DEFAULT_HASHING_DIMENSION,
        }
    }
}

/// Builds the embedder `config` describes.
///
/// For [`EmbedderConfig::Openai`] the API key is read from the environment variable
/// named by `api_key_env` (default [`DEFAULT_API_KEY_ENV`]); a missing or empty
/// variable means no key. Fails with [`ProviderError::Config`] on an invalid
/// configuration (zero dimension, bad URL, empty model, a key variable that is not
/// valid Unicode).
///
/// [`EmbedderConfig::Local`] loads the model from disk (blocking; about a second for
/// all-MiniLM-L6-v2) and fails with [`ProviderError::Config`] when a file is missing
/// or invalid, or when this build lacks the `local-embedder` feature.
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
        #[cfg(feature = "local-embedder")]
        EmbedderConfig::Local { model_dir } => {
            Ok(Arc::new(crate::local::LocalEmbedder::load(model_dir)?))
        }
        #[cfg(not(feature = "local-embedder"))]
        EmbedderConfig::Local { .. } => Err(ProviderError::Config(NO_LOCAL_EMBEDDER.to_owned())),
    }
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
    fn default_is_hashing_256() {
        assert_eq!(
            EmbedderConfig::default(),
            EmbedderConfig::Hashing { dimension: 256 }
        );
        let e = build_embedder(&EmbedderConfig::default()).unwrap();
        assert_eq!(e.identity().generation(), "hashing/feature-hash-v1/d256/v1");
    }

    #[test]
    fn serde_shapes() {
        let c: EmbedderConfig = serde_json::from_str(r#"{"provider":"hashing"}"#).unwrap();
        assert_eq!(c, EmbedderConfig::default());
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
            serde_json::to_value(EmbedderConfig::default()).unwrap(),
            serde_json::json!({"provider": "hashing", "dimension": 256})
        );
        assert!(serde_json::from_str::<EmbedderConfig>(r#"{"provider":"nope"}"#).is_err());

        let local = EmbedderConfig::Local {
            model_dir: PathBuf::from("/models/all-MiniLM-L6-v2"),
        };
        let c: EmbedderConfig =
            serde_json::from_str(r#"{"provider":"local","model_dir":"/models/all-MiniLM-L6-v2"}"#)
                .unwrap();
        assert_eq!(c, local);
        assert_eq!(
            serde_json::to_value(&local).unwrap(),
            serde_json::json!({"provider": "local", "model_dir": "/models/all-MiniLM-L6-v2"})
        );
        assert!(serde_json::from_str::<EmbedderConfig>(r#"{"provider":"local"}"#).is_err());
    }

    #[cfg(not(feature = "local-embedder"))]
    #[test]
    fn local_without_the_feature_is_a_config_error() {
        let c = EmbedderConfig::Local {
            model_dir: PathBuf::from("/models/all-MiniLM-L6-v2"),
        };
        match build_embedder(&c) {
            Err(ProviderError::Config(m)) => assert_eq!(m, NO_LOCAL_EMBEDDER),
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
