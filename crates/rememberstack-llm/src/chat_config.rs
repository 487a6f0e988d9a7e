//! The serializable chat-provider choice and the factory that builds the chat
//! models of the pipeline seats.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rememberstack_core::chat::ChatModel;
use rememberstack_core::embed::ProviderError;
use serde::{Deserialize, Serialize};

use crate::chat::{OpenAiChatConfig, OpenAiChatModel, StrictMode};
use crate::config::read_api_key;

/// Which chat model to use, as written in configuration files:
///
/// ```toml
/// [chat]
/// provider = "openai"                 # or "none" (the default)
/// base_url = "https://openrouter.ai/api/v1"
/// model = "openai/gpt-4o-mini"
/// api_key_env = "OPENROUTER_API_KEY"  # default OPENAI_API_KEY
/// strict = "auto"                     # auto | always | never
/// timeout_secs = 120
/// temperature = 0.0
/// max_tokens = 4096
///
/// [chat.seats]                        # per pipeline seat model overrides
/// claimify = "openai/gpt-4o"
/// ```
///
/// It never holds a secret: the API key is read from the environment variable
/// named by `api_key_env`, so the derived `Debug` is safe to print. Unknown keys are
/// rejected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChatConfig {
    /// No chat model: the engine runs its deterministic offline stages (the
    /// default).
    #[default]
    None,
    /// An OpenAI-compatible `/chat/completions` endpoint ([`OpenAiChatModel`]).
    Openai {
        /// The API base URL, e.g. `https://api.openai.com/v1`.
        base_url: String,
        /// The default model name, used by every seat without an override.
        model: String,
        /// Per pipeline seat model overrides, seat name → model name (e.g.
        /// `selection`, `claimify`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        seats: BTreeMap<String, String>,
        /// The environment variable holding the API key (default `OPENAI_API_KEY`).
        /// When the variable is unset or empty, requests carry no `Authorization`
        /// header, which suits local servers such as Ollama.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key_env: Option<String>,
        /// `auto` (the default), `always` or `never`; see [`StrictMode`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<String>,
        /// The request timeout in seconds (default 120).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// The sampling temperature (default: the provider's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        temperature: Option<f32>,
        /// The answer token limit (default: the provider's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
    },
}

/// The chat models of the pipeline seats: a default model and per-seat overrides.
///
/// Seats are named by the pipeline (e.g. `selection`, `claimify`); a seat without
/// an override gets the default model.
#[derive(Clone)]
pub struct ChatSeats {
    default: Arc<dyn ChatModel>,
    seats: BTreeMap<String, Arc<dyn ChatModel>>,
}

impl ChatSeats {
    /// Seats that all use `default`.
    pub fn new(default: Arc<dyn ChatModel>) -> Self {
        Self {
            default,
            seats: BTreeMap::new(),
        }
    }

    /// Gives seat `name` its own model.
    pub fn with_seat(mut self, name: impl Into<String>, model: Arc<dyn ChatModel>) -> Self {
        self.seats.insert(name.into(), model);
        self
    }

    /// The model of seat `name`: its override, else the default model.
    pub fn seat(&self, name: &str) -> Arc<dyn ChatModel> {
        self.seats
            .get(name)
            .cloned()
            .unwrap_or_else(|| Arc::clone(&self.default))
    }

    /// The default model.
    pub fn default_model(&self) -> Arc<dyn ChatModel> {
        Arc::clone(&self.default)
    }

    /// The names of the seats that have an override, sorted.
    pub fn overridden_seats(&self) -> impl Iterator<Item = &str> {
        self.seats.keys().map(String::as_str)
    }
}

impl fmt::Debug for ChatSeats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seats: BTreeMap<&str, &str> = self
            .seats
            .iter()
            .map(|(seat, model)| (seat.as_str(), model.model()))
            .collect();
        f.debug_struct("ChatSeats")
            .field("default", &self.default.model())
            .field("seats", &seats)
            .finish()
    }
}

/// Builds the chat models `config` describes: `Ok(None)` for [`ChatConfig::None`].
///
/// For [`ChatConfig::Openai`] the API key is read from the environment variable
/// named by `api_key_env` (default [`crate::DEFAULT_API_KEY_ENV`]); a missing or
/// empty variable means no key. All models share one HTTP client; seats naming the
/// same model share one [`OpenAiChatModel`] (and so its strict-mode fallback
/// memory). Fails with [`ProviderError::Config`] on an invalid configuration (bad
/// URL, empty model or seat name, unknown strict mode, zero timeout or
/// `max_tokens`, a bad temperature, a key variable that is not valid Unicode).
pub fn build_chat_models(config: &ChatConfig) -> Result<Option<ChatSeats>, ProviderError> {
    build_chat_models_with_env(config, |name| std::env::var(name))
}

/// [`build_chat_models`] with an injectable environment (for tests).
pub(crate) fn build_chat_models_with_env(
    config: &ChatConfig,
    env: impl Fn(&str) -> Result<String, std::env::VarError>,
) -> Result<Option<ChatSeats>, ProviderError> {
    let ChatConfig::Openai {
        base_url,
        model,
        seats,
        api_key_env,
        strict,
        timeout_secs,
        temperature,
        max_tokens,
    } = config
    else {
        return Ok(None);
    };
    let mut openai = OpenAiChatConfig::new(base_url.clone(), model.trim());
    openai.api_key = read_api_key(api_key_env.as_deref(), &env, "chat")?;
    if let Some(strict) = strict {
        openai.strict = strict.parse::<StrictMode>()?;
    }
    if let Some(secs) = timeout_secs {
        openai.timeout = Duration::from_secs(*secs);
    }
    openai.temperature = *temperature;
    openai.max_tokens = *max_tokens;

    let base = OpenAiChatModel::new(openai)?;
    let default: Arc<dyn ChatModel> = Arc::new(base.clone());
    let mut by_model: BTreeMap<String, Arc<dyn ChatModel>> = BTreeMap::new();
    by_model.insert(base.config().model.clone(), Arc::clone(&default));
    let mut built = ChatSeats::new(default);
    for (seat, seat_model) in seats {
        let seat_name = seat.trim();
        if seat_name.is_empty() {
            return Err(ProviderError::Config(
                "a chat seat override has an empty seat name".to_owned(),
            ));
        }
        let seat_model = seat_model.trim();
        if seat_model.is_empty() {
            return Err(ProviderError::Config(format!(
                "chat seat {seat_name:?} names an empty model"
            )));
        }
        let shared = match by_model.get(seat_model) {
            Some(existing) => Arc::clone(existing),
            None => {
                let created: Arc<dyn ChatModel> = Arc::new(base.with_model(seat_model)?);
                by_model.insert(seat_model.to_owned(), Arc::clone(&created));
                created
            }
        };
        built = built.with_seat(seat_name, shared);
    }
    Ok(Some(built))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    fn openai(seats: &[(&str, &str)]) -> ChatConfig {
        ChatConfig::Openai {
            base_url: "http://localhost:11434/v1".into(),
            model: "llama3.1".into(),
            seats: seats
                .iter()
                .map(|(s, m)| ((*s).to_owned(), (*m).to_owned()))
                .collect(),
            api_key_env: Some("MY_KEY".into()),
            strict: Some("never".into()),
            timeout_secs: Some(5),
            temperature: Some(0.0),
            max_tokens: Some(100),
        }
    }

    fn env(name: &str) -> Result<String, VarError> {
        match name {
            "MY_KEY" => Ok(" sk-chat-secret\n".to_owned()),
            _ => Err(VarError::NotPresent),
        }
    }

    #[test]
    fn default_is_none_and_builds_nothing() {
        assert_eq!(ChatConfig::default(), ChatConfig::None);
        assert!(build_chat_models(&ChatConfig::None).unwrap().is_none());
        let c: ChatConfig = serde_json::from_str(r#"{"provider":"none"}"#).unwrap();
        assert_eq!(c, ChatConfig::None);
        assert_eq!(
            serde_json::to_value(ChatConfig::None).unwrap(),
            serde_json::json!({"provider": "none"})
        );
    }

    #[test]
    fn serde_shapes() {
        let c: ChatConfig = serde_json::from_str(
            r#"{"provider":"openai","base_url":"http://localhost:11434/v1","model":"m"}"#,
        )
        .unwrap();
        assert_eq!(
            c,
            ChatConfig::Openai {
                base_url: "http://localhost:11434/v1".into(),
                model: "m".into(),
                seats: BTreeMap::new(),
                api_key_env: None,
                strict: None,
                timeout_secs: None,
                temperature: None,
                max_tokens: None,
            }
        );
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({"provider": "openai", "base_url": "http://localhost:11434/v1",
                               "model": "m"})
        );
        let full = openai(&[("claimify", "big")]);
        let round: ChatConfig =
            serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
        assert_eq!(round, full);
        // Typos are rejected, not ignored.
        for bad in [
            r#"{"provider":"openai","base_url":"http://h/v1","model":"m","modle":"x"}"#,
            r#"{"provider":"nope"}"#,
            r#"{"provider":"openai","model":"m"}"#,
        ] {
            assert!(serde_json::from_str::<ChatConfig>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn seats_fall_back_to_the_default_and_share_models() {
        let seats = build_chat_models_with_env(
            &openai(&[
                ("claimify", "big"),
                ("judge", "big"),
                ("selection", "llama3.1"),
            ]),
            env,
        )
        .unwrap()
        .unwrap();
        assert_eq!(seats.default_model().model(), "llama3.1");
        assert_eq!(seats.seat("claimify").model(), "big");
        assert_eq!(seats.seat("selection").model(), "llama3.1");
        assert_eq!(seats.seat("anything-else").model(), "llama3.1");
        assert!(Arc::ptr_eq(&seats.seat("claimify"), &seats.seat("judge")));
        assert!(Arc::ptr_eq(
            &seats.seat("selection"),
            &seats.default_model()
        ));
        assert_eq!(
            seats.overridden_seats().collect::<Vec<_>>(),
            vec!["claimify", "judge", "selection"]
        );
        let debug = format!("{seats:?}");
        assert!(debug.contains("big"), "{debug}");
        let model_debug = format!("{:?}", seats.seat("claimify"));
        assert!(model_debug.contains("<redacted>"), "{model_debug}");
        assert!(!model_debug.contains("sk-chat-secret"), "{model_debug}");
        assert!(model_debug.contains("Never"), "{model_debug}");
    }

    #[test]
    fn invalid_configs_are_config_errors() {
        let with = |f: &dyn Fn(&mut ChatConfig)| {
            let mut c = openai(&[]);
            f(&mut c);
            c
        };
        let bad = [
            with(&|c| {
                if let ChatConfig::Openai { strict, .. } = c {
                    *strict = Some("sometimes".into());
                }
            }),
            with(&|c| {
                if let ChatConfig::Openai { base_url, .. } = c {
                    *base_url = "localhost:11434".into();
                }
            }),
            with(&|c| {
                if let ChatConfig::Openai { model, .. } = c {
                    *model = " ".into();
                }
            }),
            with(&|c| {
                if let ChatConfig::Openai { timeout_secs, .. } = c {
                    *timeout_secs = Some(0);
                }
            }),
            with(&|c| {
                if let ChatConfig::Openai { max_tokens, .. } = c {
                    *max_tokens = Some(0);
                }
            }),
            with(&|c| {
                if let ChatConfig::Openai { temperature, .. } = c {
                    *temperature = Some(-1.0);
                }
            }),
            openai(&[("claimify", " ")]),
            openai(&[(" ", "m")]),
        ];
        for c in bad {
            assert!(
                matches!(
                    build_chat_models_with_env(&c, env),
                    Err(ProviderError::Config(_))
                ),
                "{c:?}"
            );
        }
    }
}
