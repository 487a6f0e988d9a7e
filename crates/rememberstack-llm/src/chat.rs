//! The OpenAI-compatible chat client: structured JSON answers from
//! `/chat/completions`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use rememberstack_core::chat::{
    ChatModel, ChatRequest, ChatResponse, StructuredMode, Usage, canonical_json, validate_json,
};
use rememberstack_core::embed::ProviderError;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use tracing::{Instrument, debug};

use crate::http::{
    HttpAnswer, JsonEndpoint, MAX_QUOTED_CHARS, RetryPolicy, build_client, collapse_whitespace,
    endpoint_url, error_text, redacted_url, truncate_chars,
};

/// Whether to ask for strict `json_schema` structured output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StrictMode {
    /// Ask for `json_schema` with `strict: true`; when the provider refuses it (see
    /// [`is_strict_mode_refusal`]), retry once with `json_object` and the schema in
    /// the system prompt, and use `json_object` for every later call of the same
    /// [`OpenAiChatModel`] instance. The default.
    #[default]
    Auto,
    /// Always `json_schema` strict; a refusal is an error.
    Always,
    /// Never `json_schema`: always `json_object` with the schema in the system prompt
    /// (for servers without structured outputs, e.g. older llama.cpp or vLLM).
    Never,
}

impl StrictMode {
    /// The configuration spelling: `auto`, `always` or `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            StrictMode::Auto => "auto",
            StrictMode::Always => "always",
            StrictMode::Never => "never",
        }
    }
}

impl fmt::Display for StrictMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StrictMode {
    type Err = ProviderError;

    /// Parses `auto`, `always` or `never` (case-insensitive, surrounding whitespace
    /// ignored); anything else is a [`ProviderError::Config`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(StrictMode::Auto),
            "always" => Ok(StrictMode::Always),
            "never" => Ok(StrictMode::Never),
            _ => Err(ProviderError::Config(format!(
                "chat strict mode {:?} is not one of auto, always, never",
                truncate_chars(s, 40)
            ))),
        }
    }
}

/// Configuration of an [`OpenAiChatModel`].
///
/// `Debug` never prints the API key.
#[derive(Clone, PartialEq)]
pub struct OpenAiChatConfig {
    /// The API base URL, e.g. `https://api.openai.com/v1`,
    /// `https://openrouter.ai/api/v1` or `http://localhost:11434/v1`. Requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// The model name as the provider knows it, e.g. `gpt-4o-mini`.
    pub model: String,
    /// The API key, sent as `Authorization: Bearer <key>`. `None` for local servers
    /// that need none.
    pub api_key: Option<String>,
    /// Timeout of one HTTP request, connect to last byte (default 120 s).
    pub timeout: Duration,
    /// How many times a request failing with 429, 5xx or a transport error is
    /// retried (default 3, so at most 4 requests).
    pub max_retries: u32,
    /// The first backoff delay; doubled on every retry (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest single wait between attempts, including a provider's
    /// `Retry-After` (default 30 s).
    pub max_backoff: Duration,
    /// Whether to ask for strict `json_schema` output (default [`StrictMode::Auto`]).
    pub strict: StrictMode,
    /// The sampling temperature sent when a request does not set its own; `None`
    /// sends none (the provider's default).
    pub temperature: Option<f32>,
    /// The `max_tokens` sent when a request does not set its own; `None` sends none.
    pub max_tokens: Option<u32>,
}

impl OpenAiChatConfig {
    /// The default request timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
    /// The default number of retries.
    pub const DEFAULT_MAX_RETRIES: u32 = 3;
    /// The default first backoff delay.
    pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(500);
    /// The default longest backoff delay.
    pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(30);

    /// A configuration with the given endpoint and model, no API key, strict mode
    /// [`StrictMode::Auto`], no temperature or token limit, and default timeout and
    /// retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Self::DEFAULT_TIMEOUT,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            initial_backoff: Self::DEFAULT_INITIAL_BACKOFF,
            max_backoff: Self::DEFAULT_MAX_BACKOFF,
            strict: StrictMode::Auto,
            temperature: None,
            max_tokens: None,
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }
}

impl fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("base_url", &redacted_url(&self.base_url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("strict", &self.strict)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// A [`ChatModel`] for any OpenAI-compatible `/chat/completions` endpoint (OpenAI,
/// OpenRouter, Ollama, vLLM, llama.cpp server).
///
/// * Sends `messages: [system, user]` and `response_format: json_schema` with
///   `strict: true`, or `json_object` with the schema appended to the system prompt,
///   as [`StrictMode`] says.
/// * Reads `choices[0].message.content` (a string, or an array of text parts),
///   strips a Markdown code fence, parses it as JSON and **always** validates it
///   locally with [`validate_json`], whatever the provider promised. Anything short
///   of a valid answer is a [`ProviderError::Malformed`] naming the model,
///   `finish_reason`, the provider's request id and the start of the content; it is
///   not retried here (the work ledger retries).
/// * 429, 5xx and transport failures are retried up to `max_retries` times, waiting
///   for the provider's `Retry-After` when given (capped at `max_backoff`) and for an
///   exponential, jittered backoff otherwise. Other statuses fail at once.
///
/// Neither `Debug` nor logging ever shows the API key, the prompts or the answers
/// (debug-level logs carry the call key, model, status, attempt and token counts).
/// Clones share the HTTP client and the strict-mode fallback memory.
#[derive(Clone)]
pub struct OpenAiChatModel {
    http: JsonEndpoint,
    config: OpenAiChatConfig,
    /// Set once the provider refused strict mode under [`StrictMode::Auto`].
    strict_unsupported: Arc<AtomicBool>,
}

impl OpenAiChatModel {
    /// Builds the client.
    ///
    /// Fails with [`ProviderError::Config`] on an empty model, a zero timeout, a
    /// negative or non-finite temperature, a zero `max_tokens`, a base URL that is
    /// not an absolute `http(s)` URL, or an API key that cannot be sent in an HTTP
    /// header.
    pub fn new(config: OpenAiChatConfig) -> Result<Self, ProviderError> {
        let endpoint = endpoint_url(&config.base_url, "chat/completions", "chat")?;
        let client = build_client(config.timeout, endpoint.scheme() == "https")?;
        Self::with_client(config, client)
    }

    /// Builds the client on an existing HTTP client.
    fn with_client(
        config: OpenAiChatConfig,
        client: reqwest::Client,
    ) -> Result<Self, ProviderError> {
        check_model(&config.model)?;
        if config.timeout.is_zero() {
            return Err(ProviderError::Config(
                "chat request timeout must be greater than 0".to_owned(),
            ));
        }
        if let Some(t) = config.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(ProviderError::Config(format!(
                "chat temperature must be a finite number ≥ 0, not {t}"
            )));
        }
        if config.max_tokens == Some(0) {
            return Err(ProviderError::Config(
                "chat max_tokens must be greater than 0".to_owned(),
            ));
        }
        let endpoint = endpoint_url(&config.base_url, "chat/completions", "chat")?;
        let http = JsonEndpoint::new(
            client,
            endpoint,
            config.api_key.clone(),
            config.timeout,
            RetryPolicy {
                max_retries: config.max_retries,
                initial_backoff: config.initial_backoff,
                max_backoff: config.max_backoff,
            },
            "chat",
        )?;
        Ok(Self {
            http,
            config,
            strict_unsupported: Arc::new(AtomicBool::new(false)),
        })
    }

    /// A client for another model on the same endpoint, sharing this one's HTTP
    /// client, key and settings but with its own strict-mode fallback memory (models
    /// of one provider differ in what they support).
    pub fn with_model(&self, model: impl Into<String>) -> Result<Self, ProviderError> {
        let config = OpenAiChatConfig {
            model: model.into(),
            ..self.config.clone()
        };
        Self::with_client(config, self.http.client().clone())
    }

    /// The URL requests are posted to (without user info or query string).
    pub fn endpoint(&self) -> &str {
        self.http.display()
    }

    /// The configuration (its `Debug` hides the key).
    pub fn config(&self) -> &OpenAiChatConfig {
        &self.config
    }

    /// Whether calls currently go to `json_object` mode: always under
    /// [`StrictMode::Never`], and under [`StrictMode::Auto`] once the provider has
    /// refused strict mode.
    pub fn uses_json_object(&self) -> bool {
        match self.config.strict {
            StrictMode::Always => false,
            StrictMode::Never => true,
            StrictMode::Auto => self.strict_unsupported.load(Ordering::Relaxed),
        }
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        if !self.uses_json_object() {
            let answer = self
                .http
                .post_json(&self.request_body(request, StructuredMode::JsonSchema)?)
                .await?;
            if answer.status.is_success() {
                return self.parse_answer(request, &answer, StructuredMode::JsonSchema);
            }
            let refused = self.config.strict == StrictMode::Auto
                && is_strict_mode_refusal(answer.status.as_u16(), &error_text(&answer.body));
            if !refused {
                return Err(self.status_error(&answer));
            }
            self.strict_unsupported.store(true, Ordering::Relaxed);
            debug!(
                status = answer.status.as_u16(),
                "provider refused strict json_schema output; using json_object from now on"
            );
        }
        let answer = self
            .http
            .post_json(&self.request_body(request, StructuredMode::JsonObject)?)
            .await?;
        if !answer.status.is_success() {
            return Err(self.status_error(&answer));
        }
        self.parse_answer(request, &answer, StructuredMode::JsonObject)
    }

    /// The `/chat/completions` body for `request` in `mode`.
    fn request_body(
        &self,
        request: &ChatRequest,
        mode: StructuredMode,
    ) -> Result<Value, ProviderError> {
        let name = provider_schema_name(&request.schema_name);
        let (system, response_format) = match mode {
            StructuredMode::JsonSchema => (
                request.system.clone(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": request.schema, "strict": true}
                }),
            ),
            _ => (
                format!(
                    "{}{}",
                    request.system,
                    json_object_instructions(&name, &request.schema)
                ),
                json!({"type": "json_object"}),
            ),
        };
        let mut messages = Vec::with_capacity(2);
        if !system.is_empty() {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": request.user}));
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "response_format": response_format,
        });
        if let Some(t) = request.temperature.or(self.config.temperature) {
            body["temperature"] = temperature_json(t)?;
        }
        if let Some(n) = request.max_tokens.or(self.config.max_tokens) {
            body["max_tokens"] = json!(n);
        }
        Ok(body)
    }

    /// A [`ProviderError::Status`] naming the provider's request id.
    fn status_error(&self, answer: &HttpAnswer) -> ProviderError {
        let mut err = self.http.status_error(answer);
        if let (ProviderError::Status { message, .. }, Some(id)) =
            (&mut err, request_id(&answer.headers))
        {
            message.push_str(&format!(" (request id {id})"));
        }
        err
    }

    /// Turns a 2xx answer into a validated response.
    fn parse_answer(
        &self,
        request: &ChatRequest,
        answer: &HttpAnswer,
        mode: StructuredMode,
    ) -> Result<ChatResponse, ProviderError> {
        let header_id = request_id(&answer.headers);
        let body: Value = match serde_json::from_slice(&answer.body) {
            Ok(body) => body,
            Err(e) => {
                let ctx = AnswerContext {
                    model: &self.config.model,
                    finish_reason: None,
                    request_id: header_id.as_deref(),
                };
                let text = String::from_utf8_lossy(&answer.body);
                return Err(self.malformed(&ctx, &format!("the body is not JSON ({e})"), &text));
            }
        };
        let parsed = parse_completion(&body, &request.schema);
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or(&self.config.model);
        let provider_request_id = header_id.or_else(|| {
            body.get("id")
                .and_then(Value::as_str)
                .map(|id| truncate_chars(id, 100))
        });
        let ctx = AnswerContext {
            model,
            finish_reason: parsed.finish_reason,
            request_id: provider_request_id.as_deref(),
        };
        let value = match parsed.value {
            Ok(value) => value,
            Err(failure) => {
                let what = match failure.kind {
                    FailureKind::Schema => format!(
                        "the answer violates schema `{}` {}",
                        request.schema_name, failure.what
                    ),
                    FailureKind::Shape => failure.what,
                };
                return Err(self.malformed(&ctx, &what, &failure.excerpt));
            }
        };
        let usage = Usage {
            prompt_tokens: body
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            completion_tokens: body
                .pointer("/usage/completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        };
        debug!(
            mode = ?mode,
            prompt_tokens = usage.prompt_tokens,
            completion_tokens = usage.completion_tokens,
            "chat answer accepted"
        );
        Ok(ChatResponse {
            value,
            model: model.to_owned(),
            usage,
            provider_request_id,
            mode,
        })
    }

    fn malformed(&self, ctx: &AnswerContext<'_>, what: &str, excerpt: &str) -> ProviderError {
        let cut_off = if ctx.finish_reason == Some("length") {
            "the answer was cut off at the token limit (finish_reason=length; raise max_tokens \
             or shorten the input): "
        } else {
            ""
        };
        let quoted = truncate_chars(
            &self.http.redact(&collapse_whitespace(excerpt)),
            MAX_QUOTED_CHARS,
        );
        let message = format!(
            "chat answer from {} is not usable (model {}, finish_reason {}, request id {}): \
             {cut_off}{what}; content starts: {quoted}",
            self.http.display(),
            ctx.model,
            ctx.finish_reason.unwrap_or("none"),
            ctx.request_id.unwrap_or("none"),
        );
        debug!(
            finish_reason = ctx.finish_reason.unwrap_or("none"),
            "chat answer rejected as malformed"
        );
        ProviderError::Malformed {
            message: self.http.redact(&message),
        }
    }
}

impl fmt::Debug for OpenAiChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChatModel")
            .field("endpoint", &self.http.display())
            .field("model", &self.config.model)
            .field("api_key", &self.http.has_key().then_some("<redacted>"))
            .field("timeout", &self.config.timeout)
            .field("retry", &self.http.retry_policy())
            .field("strict", &self.config.strict)
            .field("uses_json_object", &self.uses_json_object())
            .field("temperature", &self.config.temperature)
            .field("max_tokens", &self.config.max_tokens)
            .finish()
    }
}

#[async_trait]
impl ChatModel for OpenAiChatModel {
    fn model(&self) -> &str {
        &self.config.model
    }

    async fn complete_json(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let span = tracing::debug_span!(
            "chat",
            call_key = %request.call_key,
            model = %self.config.model
        );
        self.complete(request).instrument(span).await
    }
}

/// Whether an error answer means "this provider or model does not do strict
/// `json_schema` structured output" (rather than some other bad request): a 400 or
/// 422 whose error text mentions `response_format`, `json_schema`, structured
/// outputs or strict mode, or says something about a format or schema is not
/// supported.
pub fn is_strict_mode_refusal(status: u16, error_text: &str) -> bool {
    if !matches!(status, 400 | 422) {
        return false;
    }
    let text = error_text.to_ascii_lowercase();
    let names_the_feature = [
        "response_format",
        "response format",
        "json_schema",
        "json schema",
        "structured output",
    ]
    .iter()
    .any(|needle| text.contains(needle))
        || mentions_word(&text, "strict");
    let unsupported = [
        "not supported",
        "unsupported",
        "does not support",
        "not support",
    ]
    .iter()
    .any(|needle| text.contains(needle));
    let about_format = text.contains("format") || text.contains("schema");
    names_the_feature || (unsupported && about_format)
}

/// Whether `word` occurs in `text` with no letter right before or after it (so
/// `strict` matches "strict mode" and "'strict'" but not "restricted").
fn mentions_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphabetic) && !after.is_some_and(char::is_alphabetic)
    })
}

/// A schema name providers accept (`^[a-zA-Z0-9_-]{1,64}$`).
fn provider_schema_name(name: &str) -> String {
    let cleaned: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "answer".to_owned()
    } else {
        cleaned
    }
}

/// The system-prompt suffix of `json_object` mode. It names JSON explicitly, which
/// OpenAI requires in `json_object` mode.
fn json_object_instructions(name: &str, schema: &Value) -> String {
    format!(
        "\n\nRespond with a single JSON object and nothing else: no prose, no Markdown \
         code fences. The object must conform to this JSON Schema (named \"{name}\"):\n{}",
        canonical_json(schema)
    )
}

/// A temperature as JSON, without f32 noise (`0.2`, not `0.20000000298023224`).
fn temperature_json(t: f32) -> Result<Value, ProviderError> {
    if !(t.is_finite() && t >= 0.0) {
        return Err(ProviderError::Config(format!(
            "chat temperature must be a finite number ≥ 0, not {t}"
        )));
    }
    let shortest: f64 = t.to_string().parse().unwrap_or(f64::from(t));
    Ok(json!(shortest))
}

fn check_model(model: &str) -> Result<(), ProviderError> {
    if model.trim().is_empty() {
        return Err(ProviderError::Config("chat model name is empty".to_owned()));
    }
    Ok(())
}

/// The provider's request id from the response headers: `x-request-id`,
/// `request-id`, or an OpenRouter id header.
fn request_id(headers: &HeaderMap) -> Option<String> {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| truncate_chars(v, 100))
    };
    value("x-request-id")
        .or_else(|| value("request-id"))
        .or_else(|| {
            headers.keys().find_map(|name| {
                let n = name.as_str();
                let openrouter = n.starts_with("openrouter-") || n.starts_with("x-openrouter-");
                (openrouter && n.ends_with("id"))
                    .then(|| value(n))
                    .flatten()
            })
        })
}

/// What is known about an answer, for error messages.
struct AnswerContext<'a> {
    model: &'a str,
    finish_reason: Option<&'a str>,
    request_id: Option<&'a str>,
}

/// The outcome of reading a completion body.
struct ParsedCompletion<'a> {
    finish_reason: Option<&'a str>,
    value: Result<Value, ParseFailure>,
}

enum FailureKind {
    /// The answer is not a JSON value in a completion.
    Shape,
    /// The JSON does not satisfy the schema; `what` is the violation.
    Schema,
}

struct ParseFailure {
    kind: FailureKind,
    what: String,
    /// Text to quote (the content, or the body when there is none).
    excerpt: String,
}

/// Reads `choices[0]` of a completion body and validates its content.
fn parse_completion<'a>(body: &'a Value, schema: &Value) -> ParsedCompletion<'a> {
    let shape = |what: String, excerpt: String| ParseFailure {
        kind: FailureKind::Shape,
        what,
        excerpt,
    };
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first());
    let finish_reason = choice
        .and_then(|c| c.get("finish_reason"))
        .and_then(Value::as_str);
    let value = (|| {
        let Some(choice) = choice else {
            let what = match body.get("error") {
                Some(error) => format!(
                    "the answer has no choices but an error: {}",
                    truncate_chars(&error_text(error.to_string().as_bytes()), MAX_QUOTED_CHARS)
                ),
                None => "the answer has no choices".to_owned(),
            };
            return Err(shape(what, body.to_string()));
        };
        let message = choice.get("message");
        if let Some(refusal) = message
            .and_then(|m| m.get("refusal"))
            .and_then(Value::as_str)
            .filter(|r| !r.trim().is_empty())
        {
            return Err(shape("the model refused".to_owned(), refusal.to_owned()));
        }
        let content = match message.and_then(|m| m.get("content")) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => content_parts_text(parts),
            Some(Value::Null) | None => String::new(),
            Some(_) => {
                return Err(shape(
                    "the message content is neither text nor text parts".to_owned(),
                    choice.to_string(),
                ));
            }
        };
        if content.trim().is_empty() {
            return Err(shape(
                "the answer has no content".to_owned(),
                choice.to_string(),
            ));
        }
        let json_text = strip_wrappers(&content);
        let value: Value = serde_json::from_str(json_text)
            .map_err(|e| shape(format!("the content is not JSON ({e})"), content.clone()))?;
        validate_json(schema, &value).map_err(|violation| ParseFailure {
            kind: FailureKind::Schema,
            what: violation.to_string(),
            excerpt: content.clone(),
        })?;
        Ok(value)
    })();
    ParsedCompletion {
        finish_reason,
        value,
    }
}

/// The text of `content` given as parts (`[{"type": "text", "text": "..."}]`).
fn content_parts_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            Value::String(text) => Some(text.as_str()),
            Value::Object(fields) => fields.get("text").and_then(Value::as_str),
            _ => None,
        })
        .collect()
}

/// The JSON inside `content`: without a leading `<think>…</think>` block (reasoning
/// models served by Ollama or vLLM) and without a surrounding Markdown code fence
/// (` ```json … ``` `).
fn strip_wrappers(content: &str) -> &str {
    let mut text = content.trim();
    if let Some(rest) = text.strip_prefix("<think>")
        && let Some(end) = rest.find("</think>")
    {
        text = rest[end + "</think>".len()..].trim();
    }
    let Some(mut rest) = text.strip_prefix("```") else {
        return text;
    };
    // The info string (`json`), when it is followed by whitespace.
    let info_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    if info_end > 0 && rest[info_end..].starts_with(char::is_whitespace) {
        rest = &rest[info_end..];
    }
    let rest = rest.trim();
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_refusals_are_recognised() {
        for (status, text) in [
            (400, "response_format json_schema is not supported"),
            (
                400,
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
            ),
            (
                422,
                "json_schema response format is unsupported by this backend",
            ),
            (400, "This model does not support Structured Outputs"),
            (400, "strict mode is not available for this model"),
            (
                400,
                "Invalid schema for response_format 'answer': additionalProperties",
            ),
            (400, "Format not supported"),
            (422, "schema not supported"),
            (400, "RESPONSE_FORMAT unsupported"),
            (400, "'strict' must be false for this model"),
        ] {
            assert!(is_strict_mode_refusal(status, text), "{status} {text}");
        }
        for (status, text) in [
            (400, "temperature is not supported with this model"),
            (400, "maximum context length is 8192 tokens"),
            (400, "this content is restricted"),
            (400, "strictly forbidden: too many messages"),
            (400, ""),
            (401, "response_format json_schema is not supported"),
            (404, "json_schema is not supported"),
            (429, "response_format rate limit"),
            (500, "json_schema not supported"),
        ] {
            assert!(!is_strict_mode_refusal(status, text), "{status} {text}");
        }
    }

    #[test]
    fn strict_mode_parsing() {
        assert_eq!("auto".parse::<StrictMode>().unwrap(), StrictMode::Auto);
        assert_eq!(
            " Always ".parse::<StrictMode>().unwrap(),
            StrictMode::Always
        );
        assert_eq!("NEVER".parse::<StrictMode>().unwrap(), StrictMode::Never);
        assert!(matches!(
            "sometimes".parse::<StrictMode>(),
            Err(ProviderError::Config(_))
        ));
        for mode in [StrictMode::Auto, StrictMode::Always, StrictMode::Never] {
            assert_eq!(mode.to_string().parse::<StrictMode>().unwrap(), mode);
        }
    }

    #[test]
    fn schema_names_are_made_acceptable() {
        assert_eq!(provider_schema_name("claims_v1"), "claims_v1");
        assert_eq!(provider_schema_name("claims v1.2/é"), "claims_v1_2__");
        assert_eq!(provider_schema_name("  "), "answer");
        assert_eq!(provider_schema_name(&"x".repeat(100)).len(), 64);
    }

    #[test]
    fn wrappers_are_stripped() {
        for (content, want) in [
            (r#"{"a":1}"#, r#"{"a":1}"#),
            ("  {\"a\":1}\n", r#"{"a":1}"#),
            ("```json\n{\"a\":1}\n```", r#"{"a":1}"#),
            ("```JSON\n{\"a\":1}```", r#"{"a":1}"#),
            ("```\n{\"a\":1}\n```\n", r#"{"a":1}"#),
            ("```{\"a\":1}```", r#"{"a":1}"#),
            (
                "<think>hmm {x}</think>\n```json\n{\"a\":1}\n```",
                r#"{"a":1}"#,
            ),
            (
                "<think>unterminated {\"a\":1}",
                "<think>unterminated {\"a\":1}",
            ),
        ] {
            assert_eq!(strip_wrappers(content), want, "{content:?}");
        }
    }

    #[test]
    fn temperatures_have_no_float_noise() {
        assert_eq!(temperature_json(0.2).unwrap(), json!(0.2));
        assert_eq!(temperature_json(0.0).unwrap(), json!(0.0));
        assert!(temperature_json(f32::NAN).is_err());
        assert!(temperature_json(-1.0).is_err());
    }

    #[test]
    fn completions_are_read_defensively() {
        let schema = json!({"type": "object", "required": ["a"]});
        let read = |body: Value| {
            let parsed = parse_completion(&body, &schema);
            (
                parsed.finish_reason.map(str::to_owned),
                parsed.value.map_err(|f| f.what),
            )
        };
        let (fr, v) = read(json!({"choices": [{"message": {"content": "{\"a\": 1}"},
                                                "finish_reason": "stop"}]}));
        assert_eq!(fr.as_deref(), Some("stop"));
        assert_eq!(v.unwrap(), json!({"a": 1}));
        // Content as parts.
        let (_, v) = read(json!({"choices": [{"message": {"content": [
            {"type": "text", "text": "{\"a\":"}, {"type": "text", "text": " 2}"}
        ]}}]}));
        assert_eq!(v.unwrap(), json!({"a": 2}));
        for (body, want) in [
            (json!({}), "the answer has no choices"),
            (json!({"choices": []}), "the answer has no choices"),
            (json!({"choices": null}), "the answer has no choices"),
            (
                json!({"error": {"message": "upstream died"}}),
                "the answer has no choices but an error: upstream died",
            ),
            (json!({"choices": [{}]}), "the answer has no content"),
            (
                json!({"choices": [{"message": {"content": null}}]}),
                "the answer has no content",
            ),
            (
                json!({"choices": [{"message": {"content": 5}}]}),
                "the message content is neither text nor text parts",
            ),
            (
                json!({"choices": [{"message": {"content": null, "refusal": "no"}}]}),
                "the model refused",
            ),
            (
                json!({"choices": [{"message": {"content": "{}"}}]}),
                "at /a: required property is missing",
            ),
        ] {
            let (_, v) = read(body.clone());
            assert_eq!(v.unwrap_err(), want, "{body}");
        }
        let (_, v) = read(json!({"choices": [{"message": {"content": "nope"}}]}));
        assert!(v.unwrap_err().starts_with("the content is not JSON"));
    }

    #[test]
    fn request_ids_from_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(request_id(&h), None);
        h.insert("x-openrouter-generation-id", "gen-1".parse().unwrap());
        assert_eq!(request_id(&h).as_deref(), Some("gen-1"));
        h.insert("request-id", "req-2".parse().unwrap());
        assert_eq!(request_id(&h).as_deref(), Some("req-2"));
        h.insert("x-request-id", "req-3".parse().unwrap());
        assert_eq!(request_id(&h).as_deref(), Some("req-3"));
    }

    #[test]
    fn config_errors() {
        let ok = OpenAiChatConfig::new("http://localhost:1/v1", "m");
        let model = OpenAiChatModel::new(ok.clone()).unwrap();
        assert_eq!(model.endpoint(), "http://localhost:1/v1/chat/completions");
        assert!(model.with_model("other").is_ok());
        assert!(matches!(
            model.with_model(" "),
            Err(ProviderError::Config(_))
        ));
        for bad in [
            OpenAiChatConfig {
                model: " ".into(),
                ..ok.clone()
            },
            OpenAiChatConfig {
                timeout: Duration::ZERO,
                ..ok.clone()
            },
            OpenAiChatConfig {
                temperature: Some(f32::NAN),
                ..ok.clone()
            },
            OpenAiChatConfig {
                temperature: Some(-0.5),
                ..ok.clone()
            },
            OpenAiChatConfig {
                max_tokens: Some(0),
                ..ok.clone()
            },
            OpenAiChatConfig {
                base_url: "localhost:1/v1".into(),
                ..ok.clone()
            },
            ok.clone().with_api_key("sk-bad\nkey"),
        ] {
            match OpenAiChatModel::new(bad.clone()) {
                Err(ProviderError::Config(msg)) => assert!(!msg.contains("sk-bad"), "{msg}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }
}
