//! Configuration: one typed `Config` from a TOML file plus `REMEMBERSTACK_*`
//! environment variables. Secrets are never stored here: an API key is read from
//! the environment variable the embedder configuration names.

use rememberstack_core::engine::EngineConfig;
use rememberstack_core::{Error, ErrorCode, Result};
use rememberstack_llm::{ChatConfig, EmbedderConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The whole configuration.
///
/// ```toml
/// [engine]
/// max_source_bytes = 67108864
/// lease = 300                    # seconds a claimed work item stays leased
///
/// [engine.chunk]
/// token_budget = 256
/// anchor_period = 6
///
/// [embedder]
/// provider = "openai"            # or "hashing", "local" (the default) or "static", with model_dir
/// base_url = "http://localhost:11434/v1"
/// model = "nomic-embed-text"
/// dimension = 768
/// api_key_env = "OPENAI_API_KEY"
///
/// [store]
/// manifest_root = "/var/lib/rememberstack/forget"   # default: `<db>.manifests`
/// schema = "memory"              # PostgreSQL only: the schema holding the store
/// statement_timeout = 5           # PostgreSQL only: seconds one statement may run (0: no bound)
/// lock_timeout = 2                # PostgreSQL only: seconds one statement may wait for a lock
/// read_url = "postgres://rs@replica:5432/memory"   # PostgreSQL only: searches read here
///
/// [chat]
/// provider = "openai"            # or "none" (the default: the offline extractor)
/// base_url = "https://openrouter.ai/api/v1"
/// model = "openai/gpt-4.1-mini"
/// seats = { claimify = "openai/gpt-4.1", normalize = "offline" }   # "offline": no model
/// api_key_env = "OPENROUTER_API_KEY"
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Engine settings.
    pub engine: EngineConfig,
    /// The embedding provider.
    pub embedder: EmbedderConfig,
    /// The chat model for model-backed pipeline stages (`none`: offline stages).
    pub chat: ChatConfig,
    /// The store.
    pub store: StoreConfig,
}

/// Store settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// The hard-forget manifest root (D74), kept apart from the database: every
    /// manifest in it is re-honoured when the store opens. Default: the directory
    /// `<db>.manifests` beside the database file.
    pub manifest_root: Option<PathBuf>,
    /// PostgreSQL only: the schema that holds the store (created if missing;
    /// default: the connection's `search_path`, normally `public`). One deployment
    /// per schema. Refused for the embedded store.
    pub schema: Option<String>,
    /// PostgreSQL only: the longest one store statement may run, in seconds (`0`:
    /// no bound). Past it the statement is cancelled, its transaction rolls back
    /// and the call fails `timeout`, safe to retry. Migrations, index builds and
    /// `VACUUM` run without it.
    pub statement_timeout: f64,
    /// PostgreSQL only: the longest one store statement may wait for a lock, in
    /// seconds (`0`: no bound); past it the call fails `timeout`.
    pub lock_timeout: f64,
    /// PostgreSQL only: a read replica's URL; the search channels of the read-only
    /// operations run there (a replica lags its primary: a search right after a
    /// write may not find it yet). Refused for the embedded store.
    pub read_url: Option<String>,
    /// Embedded store only: a semantic search over a namespace's chunks, claims or
    /// facts walks an approximate (HNSW) index once that table has at least this
    /// many records with a vector; below it, or with `0`, the scan is exact.
    /// Scores stay exact cosines: the index decides only which records are scored.
    /// (PostgreSQL always searches its pgvector HNSW indexes.)
    pub approximate_from: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            manifest_root: None,
            schema: None,
            statement_timeout: rememberstack_pg::DEFAULT_STATEMENT_TIMEOUT.as_secs_f64(),
            lock_timeout: rememberstack_pg::DEFAULT_LOCK_TIMEOUT.as_secs_f64(),
            read_url: None,
            approximate_from: rememberstack_sqlite::DEFAULT_APPROXIMATE_FROM,
        }
    }
}

impl StoreConfig {
    /// A time bound in seconds as a duration (`None` for 0).
    pub(crate) fn bound(secs: f64, key: &str) -> Result<Option<std::time::Duration>> {
        if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
            return Err(config_err(format!(
                "invalid configuration: [store] {key} must be a number of seconds from 0 (no \
                 bound) to 86400"
            )));
        }
        Ok((secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs)))
    }
}

fn config_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::Config, msg)
}

impl Config {
    /// Parse a TOML document.
    pub fn from_toml_str(s: &str) -> Result<Config> {
        let config: Config =
            toml::from_str(s).map_err(|e| config_err(format!("invalid configuration: {e}")))?;
        StoreConfig::bound(config.store.statement_timeout, "statement_timeout")?;
        StoreConfig::bound(config.store.lock_timeout, "lock_timeout")?;
        if config.engine.lease.is_zero() {
            return Err(config_err(
                "invalid configuration: [engine] lease must be a positive number of seconds",
            ));
        }
        Ok(config)
    }

    /// Load the configuration: the TOML file `file` (else the one named by
    /// `REMEMBERSTACK_CONFIG`, else defaults), then `REMEMBERSTACK_*` overrides.
    pub fn load(file: Option<&Path>) -> Result<Config> {
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("REMEMBERSTACK_CONFIG").map(PathBuf::from));
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    config_err(format!("cannot read configuration {}: {e}", path.display()))
                })?;
                Config::from_toml_str(&text)?
            }
            None => Config::default(),
        };
        config.apply_env(|k| std::env::var(k).ok())?;
        Ok(config)
    }

    /// Apply `REMEMBERSTACK_*` overrides read through `var`.
    pub fn apply_env(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<()> {
        let var = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = var("REMEMBERSTACK_MANIFEST_ROOT") {
            self.store.manifest_root = Some(PathBuf::from(v));
        }
        if let Some(v) = var("REMEMBERSTACK_PG_SCHEMA") {
            self.store.schema = Some(v.trim().to_string());
        }
        if let Some(v) = var("REMEMBERSTACK_LEASE_SECS") {
            let secs: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 1e9)
                .ok_or_else(|| {
                    config_err(format!(
                        "REMEMBERSTACK_LEASE_SECS=`{v}` is not a positive number of seconds"
                    ))
                })?;
            self.engine.lease = std::time::Duration::from_secs_f64(secs);
        }
        if let Some(v) = var("REMEMBERSTACK_MAX_SOURCE_BYTES") {
            self.engine.max_source_bytes = v.trim().parse().map_err(|_| {
                config_err(format!(
                    "REMEMBERSTACK_MAX_SOURCE_BYTES=`{v}` is not a number"
                ))
            })?;
        }
        let dimension = |default: usize| -> Result<usize> {
            match var("REMEMBERSTACK_EMBEDDER_DIMENSION") {
                Some(v) => v.trim().parse().map_err(|_| {
                    config_err(format!(
                        "REMEMBERSTACK_EMBEDDER_DIMENSION=`{v}` is not a number"
                    ))
                }),
                None => Ok(default),
            }
        };
        match var("REMEMBERSTACK_EMBEDDER").as_deref() {
            None => {}
            Some("hashing") => {
                self.embedder = EmbedderConfig::Hashing {
                    dimension: dimension(rememberstack_llm::DEFAULT_HASHING_DIMENSION)?,
                }
            }
            Some("openai") => {
                let base_url = var("REMEMBERSTACK_EMBEDDER_BASE_URL").ok_or_else(|| {
                    config_err(
                        "REMEMBERSTACK_EMBEDDER=openai needs REMEMBERSTACK_EMBEDDER_BASE_URL",
                    )
                })?;
                let model = var("REMEMBERSTACK_EMBEDDER_MODEL").ok_or_else(|| {
                    config_err("REMEMBERSTACK_EMBEDDER=openai needs REMEMBERSTACK_EMBEDDER_MODEL")
                })?;
                let dim = dimension(0)?;
                if dim == 0 {
                    return Err(config_err(
                        "REMEMBERSTACK_EMBEDDER=openai needs REMEMBERSTACK_EMBEDDER_DIMENSION",
                    ));
                }
                self.embedder = EmbedderConfig::Openai {
                    base_url,
                    model,
                    dimension: dim,
                    api_key_env: var("REMEMBERSTACK_EMBEDDER_API_KEY_ENV"),
                    send_dimensions: false,
                    timeout_secs: None,
                };
            }
            Some("local") => {
                self.embedder = EmbedderConfig::Local {
                    model_dir: var("REMEMBERSTACK_EMBEDDER_MODEL_DIR").map(PathBuf::from),
                    model: var("REMEMBERSTACK_EMBEDDER_MODEL"),
                };
            }
            Some("static") => {
                self.embedder = EmbedderConfig::Static {
                    model_dir: var("REMEMBERSTACK_EMBEDDER_MODEL_DIR").map(PathBuf::from),
                    model: var("REMEMBERSTACK_EMBEDDER_MODEL"),
                };
            }
            Some(other) => {
                return Err(config_err(format!(
                    "REMEMBERSTACK_EMBEDDER=`{other}`: use `hashing`, `openai`, `local` or \
                     `static`"
                )));
            }
        }
        match var("REMEMBERSTACK_CHAT").as_deref() {
            None => {}
            Some("none") => self.chat = ChatConfig::None,
            Some("openai") => {
                let base_url = var("REMEMBERSTACK_CHAT_BASE_URL").ok_or_else(|| {
                    config_err("REMEMBERSTACK_CHAT=openai needs REMEMBERSTACK_CHAT_BASE_URL")
                })?;
                let model = var("REMEMBERSTACK_CHAT_MODEL").ok_or_else(|| {
                    config_err("REMEMBERSTACK_CHAT=openai needs REMEMBERSTACK_CHAT_MODEL")
                })?;
                let mut seats = std::collections::BTreeMap::new();
                for seat in [
                    "selection",
                    "claimify",
                    "normalize",
                    "resolve",
                    "adjudicate",
                ] {
                    let key = format!("REMEMBERSTACK_CHAT_{}_MODEL", seat.to_ascii_uppercase());
                    if let Some(m) = var(&key) {
                        seats.insert(seat.to_string(), m);
                    }
                }
                self.chat = ChatConfig::Openai {
                    base_url,
                    model,
                    seats,
                    api_key_env: var("REMEMBERSTACK_CHAT_API_KEY_ENV"),
                    strict: var("REMEMBERSTACK_CHAT_STRICT"),
                    timeout_secs: None,
                    temperature: None,
                    max_tokens: None,
                };
            }
            Some(other) => {
                return Err(config_err(format!(
                    "REMEMBERSTACK_CHAT=`{other}`: use `none` or `openai`"
                )));
            }
        }
        Ok(())
    }
}

/// The default database path: `REMEMBERSTACK_DB`, else `memory.db` under the
/// user's data directory (`~/.local/share/rememberstack/` on Linux).
pub fn default_db_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("REMEMBERSTACK_DB").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    dirs::data_dir()
        .map(|d| d.join("rememberstack").join("memory.db"))
        .ok_or_else(|| {
            config_err(
                "no user data directory is known here: pass --db PATH or set REMEMBERSTACK_DB",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn toml_and_env() {
        let mut c = Config::from_toml_str(
            "[engine]\nmax_source_bytes = 10\n[embedder]\nprovider = \"hashing\"\ndimension = 64\n",
        )
        .unwrap();
        assert_eq!(c.engine.max_source_bytes, 10);
        assert_eq!(c.embedder, EmbedderConfig::Hashing { dimension: 64 });
        let env: HashMap<&str, &str> = [
            ("REMEMBERSTACK_EMBEDDER", "openai"),
            ("REMEMBERSTACK_EMBEDDER_BASE_URL", "http://127.0.0.1:9/v1"),
            ("REMEMBERSTACK_EMBEDDER_MODEL", "m"),
            ("REMEMBERSTACK_EMBEDDER_DIMENSION", "8"),
        ]
        .into_iter()
        .collect();
        c.apply_env(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert!(matches!(
            c.embedder,
            EmbedderConfig::Openai { dimension: 8, .. }
        ));
    }

    #[test]
    fn local_embedder_from_toml_and_env() {
        let c = Config::from_toml_str(
            "[embedder]\nprovider = \"local\"\nmodel_dir = \"/models/all-MiniLM-L6-v2\"\n",
        )
        .unwrap();
        assert_eq!(
            c.embedder,
            EmbedderConfig::local_dir("/models/all-MiniLM-L6-v2")
        );

        let mut c = Config::default();
        let env: HashMap<&str, &str> = [
            ("REMEMBERSTACK_EMBEDDER", "local"),
            ("REMEMBERSTACK_EMBEDDER_MODEL_DIR", "/m/minilm"),
        ]
        .into_iter()
        .collect();
        c.apply_env(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(c.embedder, EmbedderConfig::local_dir("/m/minilm"));

        // Without a directory, `local` is a cached model, by name or the default.
        let mut c = Config::from_toml_str("[embedder]\nprovider = \"hashing\"\n").unwrap();
        let env: HashMap<&str, &str> = [
            ("REMEMBERSTACK_EMBEDDER", "local"),
            ("REMEMBERSTACK_EMBEDDER_MODEL", "bge-small-en-v1.5"),
        ]
        .into_iter()
        .collect();
        c.apply_env(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(
            c.embedder,
            EmbedderConfig::Local {
                model_dir: None,
                model: Some("bge-small-en-v1.5".into())
            }
        );
        assert_eq!(Config::default().embedder, EmbedderConfig::default());
    }

    #[test]
    fn fusion_from_toml() {
        let c =
            Config::from_toml_str("[engine.fusion]\nmethod = \"scores\"\nsemantic_weight = 0.7\n")
                .unwrap();
        assert_eq!(
            c.engine.fusion,
            crate::Fusion::Scores {
                semantic_weight: 0.7,
                semantic_scale: crate::SemanticScale::Cosine,
            }
        );
        let c = Config::from_toml_str("[engine.fusion]\nmethod = \"scores\"\n").unwrap();
        assert_eq!(
            c.engine.fusion,
            crate::Fusion::Scores {
                semantic_weight: 0.5,
                semantic_scale: crate::SemanticScale::Cosine,
            }
        );
        assert_eq!(
            Config::default().engine.fusion,
            crate::Fusion::Scores {
                semantic_weight: 0.5,
                semantic_scale: crate::SemanticScale::Cosine,
            }
        );
        let c = Config::from_toml_str(
            "[engine.fusion]\nmethod = \"scores\"\nsemantic_scale = \"min_max\"\n",
        )
        .unwrap();
        assert_eq!(
            c.engine.fusion,
            crate::Fusion::Scores {
                semantic_weight: 0.5,
                semantic_scale: crate::SemanticScale::MinMax,
            }
        );
        assert!(
            Config::from_toml_str("[engine.fusion]\nmethod = \"scores\"\nsemantic_scale = \"z\"\n")
                .is_err()
        );
        let c = Config::from_toml_str("[engine.fusion]\nmethod = \"rrf\"\n").unwrap();
        assert_eq!(c.engine.fusion, crate::Fusion::Rrf);
        assert!(Config::from_toml_str("[engine.fusion]\nmethod = \"max\"\n").is_err());
    }

    #[test]
    fn relevance_floor_and_curve_from_toml() {
        let c = Config::from_toml_str(
            "[engine.relevance]\nfloor = 0.4\ncalibration = { intercept = -3.0, slope = 8.0 }\n",
        )
        .unwrap();
        assert_eq!(c.engine.relevance.floor, 0.4);
        assert_eq!(
            c.engine.relevance.calibration,
            Some(crate::relevance::Calibration {
                intercept: -3.0,
                slope: 8.0
            })
        );
        assert_eq!(
            Config::default().engine.relevance.floor,
            crate::relevance::DEFAULT_FLOOR
        );
        assert!(Config::from_toml_str("[engine.relevance]\nthreshold = 0.4\n").is_err());
    }

    #[test]
    fn chat_seats_from_env_offline_included() {
        let env: HashMap<&str, &str> = [
            ("REMEMBERSTACK_CHAT", "openai"),
            ("REMEMBERSTACK_CHAT_BASE_URL", "http://127.0.0.1:9/v1"),
            ("REMEMBERSTACK_CHAT_MODEL", "judge"),
            ("REMEMBERSTACK_CHAT_SELECTION_MODEL", "offline"),
            ("REMEMBERSTACK_CHAT_CLAIMIFY_MODEL", "offline"),
            ("REMEMBERSTACK_CHAT_NORMALIZE_MODEL", "offline"),
            ("REMEMBERSTACK_CHAT_RESOLVE_MODEL", "small"),
        ]
        .into_iter()
        .collect();
        let mut c = Config::default();
        c.apply_env(|k| env.get(k).map(|v| v.to_string())).unwrap();
        let ChatConfig::Openai { model, seats, .. } = &c.chat else {
            panic!("{:?}", c.chat)
        };
        assert_eq!(model, "judge");
        let seats: Vec<(&str, &str)> = seats
            .iter()
            .map(|(s, m)| (s.as_str(), m.as_str()))
            .collect();
        assert_eq!(
            seats,
            [
                ("claimify", "offline"),
                ("normalize", "offline"),
                ("resolve", "small"),
                ("selection", "offline"),
            ]
        );
        // The same in a file.
        let file = Config::from_toml_str(
            "[chat]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"judge\"\n\
             seats = { selection = \"offline\", claimify = \"offline\", normalize = \"offline\", \
             resolve = \"small\" }\n",
        )
        .unwrap();
        assert_eq!(file.chat, c.chat);
    }

    #[test]
    fn lease_and_schema_from_toml_and_env() {
        let mut c =
            Config::from_toml_str("[engine]\nlease = 2.5\n[store]\nschema = \"memory\"\n").unwrap();
        assert_eq!(c.engine.lease, std::time::Duration::from_millis(2500));
        assert_eq!(c.store.schema.as_deref(), Some("memory"));
        let env: HashMap<&str, &str> = [
            ("REMEMBERSTACK_LEASE_SECS", "3"),
            ("REMEMBERSTACK_PG_SCHEMA", "tenant_a"),
        ]
        .into_iter()
        .collect();
        c.apply_env(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(c.engine.lease, std::time::Duration::from_secs(3));
        assert_eq!(c.store.schema.as_deref(), Some("tenant_a"));
        for bad in ["0", "-1", "soon", "NaN", "inf"] {
            let err = Config::default()
                .apply_env(|k| (k == "REMEMBERSTACK_LEASE_SECS").then(|| bad.to_string()))
                .unwrap_err();
            assert_eq!(err.code(), ErrorCode::Config, "{bad}");
            assert!(
                err.to_string().contains("REMEMBERSTACK_LEASE_SECS"),
                "{err}"
            );
        }
        let err = Config::from_toml_str("[engine]\nlease = 0\n").unwrap_err();
        assert_eq!(err.code(), ErrorCode::Config);
        assert!(err.to_string().contains("lease"), "{err}");
    }

    #[test]
    fn claim_sizes_come_from_the_engine_section() {
        let c =
            Config::from_toml_str("[engine]\nclaim_limit = 8\ngrouped_claim_limit = 64\n").unwrap();
        assert_eq!(
            (c.engine.claim_limit, c.engine.grouped_claim_limit),
            (8, 64)
        );
        assert_eq!(Config::default().engine.grouped_claim_limit, 1024);
    }

    #[test]
    fn bad_config_is_a_typed_error() {
        assert_eq!(
            Config::from_toml_str("[engine]\nnope = 1\n")
                .unwrap_err()
                .code(),
            ErrorCode::Config
        );
        let mut c = Config::default();
        let err = c
            .apply_env(|k| (k == "REMEMBERSTACK_EMBEDDER").then(|| "magic".to_string()))
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Config);
        assert!(err.to_string().contains("`local`"), "{err}");
    }

    #[test]
    fn static_embedder_from_toml_and_env() {
        let c = Config::from_toml_str(
            "[embedder]\nprovider = \"static\"\nmodel_dir = \"/models/tokenlearn-static-64d\"\n",
        )
        .unwrap();
        assert_eq!(
            c.embedder,
            EmbedderConfig::static_dir("/models/tokenlearn-static-64d")
        );
        let mut c = Config::default();
        let env: HashMap<&str, &str> = [
            ("REMEMBERSTACK_EMBEDDER", "static"),
            ("REMEMBERSTACK_EMBEDDER_MODEL_DIR", "/m/static"),
        ]
        .into_iter()
        .collect();
        c.apply_env(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(c.embedder, EmbedderConfig::static_dir("/m/static"));
        let mut c = Config::default();
        c.apply_env(|k| (k == "REMEMBERSTACK_EMBEDDER").then(|| "static".to_string()))
            .unwrap();
        assert_eq!(
            c.embedder,
            EmbedderConfig::Static {
                model_dir: None,
                model: None
            }
        );
    }
}
