//! A scripted [`ChatModel`] for tests of the pipelines.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use rememberstack_core::chat::{
    ChatModel, ChatRequest, ChatResponse, StructuredMode, Usage, request_hash, validate_json,
};
use rememberstack_core::embed::ProviderError;
use serde_json::Value;

/// A [`ChatModel`] that answers from a script instead of a provider, for hermetic
/// tests of the pipelines.
///
/// Answers are scripted per call key, either for one exact request (its
/// [`request_hash`]) or for any request with that key
/// ([`ScriptedChatModel::ANY`]). Several answers for the same key and request form
/// a queue consumed in order; an exact-hash script is preferred over a wildcard
/// one. An answer may be an injected [`ProviderError`] to script failures.
///
/// Scripted values are validated against the request's schema exactly as the real
/// adapter validates provider answers: a value that violates it yields
/// [`ProviderError::Malformed`], so tests can script malformed answers.
///
/// A request with no scripted answer fails with [`ProviderError::Config`] whose
/// message starts `unexpected chat request: call_key=…, request_hash=…`. Every
/// request, answered or not, is recorded ([`ScriptedChatModel::calls`]).
///
/// ```
/// # use rememberstack_llm::ScriptedChatModel;
/// # use serde_json::json;
/// let model = ScriptedChatModel::new("scripted")
///     .answer("selection", ScriptedChatModel::ANY, json!({"keep": [0, 2]}))
///     .answer("selection", ScriptedChatModel::ANY, json!({"keep": []}));
/// assert_eq!(model.unused_answers(), 2);
/// ```
pub struct ScriptedChatModel {
    model: String,
    usage: Usage,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// `(call_key, request hash or ANY)` → script.
    scripts: BTreeMap<(String, String), Script>,
    calls: Vec<ChatRequest>,
}

#[derive(Default)]
struct Script {
    queue: VecDeque<Result<Value, ProviderError>>,
    /// Answered once the queue is empty, forever.
    always: Option<Result<Value, ProviderError>>,
}

impl Script {
    fn take(&mut self) -> Option<Result<Value, ProviderError>> {
        self.queue.pop_front().or_else(|| self.always.clone())
    }
}

impl ScriptedChatModel {
    /// The wildcard that matches any request hash.
    pub const ANY: &'static str = "*";

    /// A scripted model reporting `model` as its name, with nothing scripted and
    /// zero usage.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            usage: Usage::default(),
            state: Mutex::new(State::default()),
        }
    }

    /// Reports `usage` with every answer (default zero).
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Queues `value` as the next answer to a request with `call_key` whose
    /// [`request_hash`] is `request` (or any request, with [`Self::ANY`]).
    pub fn answer(
        self,
        call_key: impl Into<String>,
        request: impl Into<String>,
        value: Value,
    ) -> Self {
        self.push(call_key.into(), request.into(), Ok(value));
        self
    }

    /// Queues `error` as the next answer to a request with `call_key` and hash
    /// `request` (or [`Self::ANY`]).
    pub fn fail(
        self,
        call_key: impl Into<String>,
        request: impl Into<String>,
        error: ProviderError,
    ) -> Self {
        self.push(call_key.into(), request.into(), Err(error));
        self
    }

    /// Answers `value` to every request with `call_key` and hash `request` (or
    /// [`Self::ANY`]) once that script's queue is empty, however often it comes.
    pub fn answer_always(
        self,
        call_key: impl Into<String>,
        request: impl Into<String>,
        value: Value,
    ) -> Self {
        self.lock()
            .scripts
            .entry((call_key.into(), request.into()))
            .or_default()
            .always = Some(Ok(value));
        self
    }

    /// [`Self::answer`] on a shared model (e.g. behind an `Arc`).
    pub fn push_answer(
        &self,
        call_key: impl Into<String>,
        request: impl Into<String>,
        value: Value,
    ) {
        self.push(call_key.into(), request.into(), Ok(value));
    }

    /// [`Self::fail`] on a shared model (e.g. behind an `Arc`).
    pub fn push_error(
        &self,
        call_key: impl Into<String>,
        request: impl Into<String>,
        error: ProviderError,
    ) {
        self.push(call_key.into(), request.into(), Err(error));
    }

    fn push(&self, call_key: String, request: String, answer: Result<Value, ProviderError>) {
        self.lock()
            .scripts
            .entry((call_key, request))
            .or_default()
            .queue
            .push_back(answer);
    }

    /// Every request received so far, in order (including unexpected ones).
    pub fn calls(&self) -> Vec<ChatRequest> {
        self.lock().calls.clone()
    }

    /// How many requests were received so far.
    pub fn call_count(&self) -> usize {
        self.lock().calls.len()
    }

    /// How many queued answers (and errors) have not been consumed yet; answers of
    /// [`Self::answer_always`] are not counted.
    pub fn unused_answers(&self) -> usize {
        self.lock().scripts.values().map(|s| s.queue.len()).sum()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not turn every later call into a panic.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for ScriptedChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("ScriptedChatModel")
            .field("model", &self.model)
            .field("scripts", &state.scripts.keys().collect::<Vec<_>>())
            .field("calls", &state.calls.len())
            .finish()
    }
}

#[async_trait]
impl ChatModel for ScriptedChatModel {
    fn model(&self) -> &str {
        &self.model
    }

    async fn complete_json(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let hash = request_hash(request);
        let scripted = {
            let mut state = self.lock();
            state.calls.push(request.clone());
            let key = request.call_key.clone();
            let exact = state
                .scripts
                .get_mut(&(key.clone(), hash.clone()))
                .and_then(Script::take);
            exact.or_else(|| {
                state
                    .scripts
                    .get_mut(&(key, Self::ANY.to_owned()))
                    .and_then(Script::take)
            })
        };
        let value = match scripted {
            None => {
                return Err(ProviderError::Config(format!(
                    "unexpected chat request: call_key={}, request_hash={hash} (no answer \
                     scripted for it in ScriptedChatModel {:?})",
                    request.call_key, self.model
                )));
            }
            Some(Err(error)) => return Err(error),
            Some(Ok(value)) => value,
        };
        if let Err(violation) = validate_json(&request.schema, &value) {
            return Err(ProviderError::Malformed {
                message: format!(
                    "scripted answer for call_key={} (model {}) violates schema `{}` {violation}",
                    request.call_key, self.model, request.schema_name
                ),
            });
        }
        Ok(ChatResponse {
            value,
            model: self.model.clone(),
            usage: self.usage.clone(),
            provider_request_id: None,
            mode: StructuredMode::Scripted,
        })
    }
}
