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

/// The model name that runs a seat offline: the engine's deterministic stage
/// instead of a chat model (see [`ChatConfig`]).
pub const OFFLINE_MODEL: &str = "offline";

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
/// normalize = "offline"               # this seat runs its offline stage
/// ```
///
/// The seats are `selection` and `claimify` (claim extraction), `normalize`,
/// `resolve` and `adjudicate` (entities and facts). A seat whose model is the
/// literal [`OFFLINE_MODEL`] (`"offline"`) calls no model: the engine runs that
/// stage's deterministic offline path, so model calls can be spent on some stages
/// only (say `adjudicate`). The default `model` may be `"offline"` too, then only
/// the seats given a model name call one. `selection` and `claimify` are one stage,
/// the extractor: both offline or neither (the facade refuses one of them alone).
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
        /// The default model name, used by every seat without an override
        /// (`"offline"`: those seats run offline).
        model: String,
        /// Per pipeline seat model overrides, seat name → model name (e.g.
        /// `selection`, `claimify`); `"offline"` runs the seat offline.
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

/// The chat models of the pipeline seats: a default model and per-seat overrides,
/// where a seat (or the default) may be offline (no model).
///
/// Seats are named by the pipeline (e.g. `selection`, `claimify`); a seat without
/// an override gets the default.
#[derive(Clone)]
pub struct ChatSeats {
    default: Option<Arc<dyn ChatModel>>,
    seats: BTreeMap<String, Option<Arc<dyn ChatModel>>>,
}

impl ChatSeats {
    /// Seats that all use `default`.
    pub fn new(default: Arc<dyn ChatModel>) -> Self {
        Self {
            default: Some(default),
            seats: BTreeMap::new(),
        }
    }

    /// Seats that all run offline, until given a model with [`ChatSeats::with_seat`].
    pub fn offline() -> Self {
        Self {
            default: None,
            seats: BTreeMap::new(),
        }
    }

    /// Gives seat `name` its own model.
    pub fn with_seat(mut self, name: impl Into<String>, model: Arc<dyn ChatModel>) -> Self {
        self.seats.insert(name.into(), Some(model));
        self
    }

    /// Runs seat `name` offline, whatever the default.
    pub fn with_offline_seat(mut self, name: impl Into<String>) -> Self {
        self.seats.insert(name.into(), None);
        self
    }

    /// The model of seat `name`: its override, else the default; `None` when the
    /// seat runs offline.
    pub fn seat(&self, name: &str) -> Option<Arc<dyn ChatModel>> {
        match self.seats.get(name) {
            Some(model) => model.clone(),
            None => self.default.clone(),
        }
    }

    /// The default model (`None`: seats without an override run offline).
    pub fn default_model(&self) -> Option<Arc<dyn ChatModel>> {
        self.default.clone()
    }

    /// The names of the seats that have an override (a model or offline), sorted.
    pub fn overridden_seats(&self) -> impl Iterator<Item = &str> {
        self.seats.keys().map(String::as_str)
    }
}

impl fmt::Debug for ChatSeats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |m: &Option<Arc<dyn ChatModel>>| match m {
            Some(model) => model.model().to_owned(),
            None => OFFLINE_MODEL.to_owned(),
        };
        let seats: BTreeMap<&str, String> = self
            .seats
            .iter()
            .map(|(seat, model)| (seat.as_str(), name(model)))
            .collect();
        f.debug_struct("ChatSeats")
            .field("default", &name(&self.default))
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
/// memory). A seat (or default) model named [`OFFLINE_MODEL`] is offline
/// ([`ChatSeats::seat`] gives `None`). Fails with [`ProviderError::Config`] on an invalid configuration (bad
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
    let mut by_model: BTreeMap<String, Arc<dyn ChatModel>> = BTreeMap::new();
    let mut built = if base.config().model == OFFLINE_MODEL {
        ChatSeats::offline()
    } else {
        let default: Arc<dyn ChatModel> = Arc::new(base.clone());
        by_model.insert(base.config().model.clone(), Arc::clone(&default));
        ChatSeats::new(default)
    };
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
        if seat_model == OFFLINE_MODEL {
            built = built.with_offline_seat(seat_name);
            continue;
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
        let model = |seat: &str| seats.seat(seat).unwrap();
        assert_eq!(seats.default_model().unwrap().model(), "llama3.1");
        assert_eq!(model("claimify").model(), "big");
        assert_eq!(model("selection").model(), "llama3.1");
        assert_eq!(model("anything-else").model(), "llama3.1");
        assert!(Arc::ptr_eq(&model("claimify"), &model("judge")));
        assert!(Arc::ptr_eq(
            &model("selection"),
            &seats.default_model().unwrap()
        ));
        assert_eq!(
            seats.overridden_seats().collect::<Vec<_>>(),
            vec!["claimify", "judge", "selection"]
        );
        let debug = format!("{seats:?}");
        assert!(debug.contains("big"), "{debug}");
        let model_debug = format!("{:?}", model("claimify"));
        assert!(model_debug.contains("<redacted>"), "{model_debug}");
        assert!(!model_debug.contains("sk-chat-secret"), "{model_debug}");
        assert!(model_debug.contains("Never"), "{model_debug}");
    }

    #[test]
    fn offline_seats_have_no_model() {
        // One seat offline: the others keep the default.
        let seats = build_chat_models_with_env(
            &openai(&[("normalize", "offline"), ("adjudicate", " big ")]),
            env,
        )
        .unwrap()
        .unwrap();
        assert!(seats.seat("normalize").is_none());
        assert_eq!(seats.seat("adjudicate").unwrap().model(), "big");
        assert_eq!(seats.seat("resolve").unwrap().model(), "llama3.1");
        let debug = format!("{seats:?}");
        assert!(debug.contains(r#""normalize": "offline""#), "{debug}");

        // An offline default: only the seats given a model call one.
        let mut c = openai(&[("adjudicate", "big"), ("selection", "offline")]);
        if let ChatConfig::Openai { model, .. } = &mut c {
            *model = " offline ".into();
        }
        let seats = build_chat_models_with_env(&c, env).unwrap().unwrap();
        assert!(seats.default_model().is_none());
        for seat in ["selection", "claimify", "normalize", "resolve"] {
            assert!(seats.seat(seat).is_none(), "{seat}");
        }
        assert_eq!(seats.seat("adjudicate").unwrap().model(), "big");
        assert!(format!("{seats:?}").contains(r#"default: "offline""#));

        // The literal only: a model merely named like it is a model.
        let seats = build_chat_models_with_env(&openai(&[("resolve", "offline-7b")]), env)
            .unwrap()
            .unwrap();
        assert_eq!(seats.seat("resolve").unwrap().model(), "offline-7b");

        // It round-trips through the configuration as any model name does.
        let c: ChatConfig = serde_json::from_str(
            r#"{"provider":"openai","base_url":"http://h/v1","model":"m",
                "seats":{"selection":"offline","claimify":"offline"}}"#,
        )
        .unwrap();
        let seats = build_chat_models_with_env(&c, env).unwrap().unwrap();
        assert!(seats.seat("selection").is_none() && seats.seat("claimify").is_none());
        assert_eq!(seats.seat("adjudicate").unwrap().model(), "m");
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
