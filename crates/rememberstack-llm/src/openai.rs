//! The OpenAI-compatible embeddings client.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rememberstack_core::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use reqwest::header::{AUTHORIZATION, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use tracing::debug;

/// How much of a provider's body an error message may quote.
const MAX_QUOTED_CHARS: usize = 200;

/// Configuration of an [`OpenAiEmbedder`].
///
/// `Debug` never prints the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiEmbedderConfig {
    /// The API base URL, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`.
    /// Requests go to `{base_url}/embeddings`.
    pub base_url: String,
    /// The model name as the provider knows it, e.g. `text-embedding-3-small`.
    pub model: String,
    /// The vector dimension every answer must have.
    pub dimension: usize,
    /// The API key, sent as `Authorization: Bearer <key>`. `None` for local servers
    /// that need none (Ollama, llama.cpp).
    pub api_key: Option<String>,
    /// Timeout of one HTTP request, connect to last byte (default 60 s).
    pub timeout: Duration,
    /// How many times a failed request is retried (default 4, so at most 5 requests).
    pub max_retries: u32,
    /// The first backoff delay; doubled on every retry (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest single wait between attempts, including a provider's
    /// `Retry-After` (default 30 s).
    pub max_backoff: Duration,
    /// Whether to send `"dimensions"` in the request (default `false`). Only models
    /// that can shorten their vectors (OpenAI `text-embedding-3-*`) accept it.
    pub send_dimensions: bool,
    /// The largest number of inputs one request carries (default 64); larger calls
    /// are split into several requests.
    pub max_batch: usize,
}

impl OpenAiEmbedderConfig {
    /// The default request timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default number of retries.
    pub const DEFAULT_MAX_RETRIES: u32 = 4;
    /// The default first backoff delay.
    pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(500);
    /// The default longest backoff delay.
    pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(30);
    /// The default batch size.
    pub const DEFAULT_MAX_BATCH: usize = 64;

    /// A configuration with the given endpoint, model and dimension, no API key and
    /// default timeouts, retries and batching.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, dimension: usize) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            dimension,
            api_key: None,
            timeout: Self::DEFAULT_TIMEOUT,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            initial_backoff: Self::DEFAULT_INITIAL_BACKOFF,
            max_backoff: Self::DEFAULT_MAX_BACKOFF,
            send_dimensions: false,
            max_batch: Self::DEFAULT_MAX_BATCH,
        }
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }
}

impl fmt::Debug for OpenAiEmbedderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedderConfig")
            .field("base_url", &redacted_url(&self.base_url))
            .field("model", &self.model)
            .field("dimension", &self.dimension)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("send_dimensions", &self.send_dimensions)
            .field("max_batch", &self.max_batch)
            .finish()
    }
}

/// An embedder for any OpenAI-compatible `/embeddings` endpoint (OpenAI, OpenRouter,
/// Ollama, vLLM, llama.cpp server).
///
/// * Inputs larger than `max_batch` are split into several requests; order is kept.
/// * 429, 5xx and transport failures are retried up to `max_retries` times, waiting
///   for the provider's `Retry-After` when given (capped at `max_backoff`) and for an
///   exponential, jittered backoff otherwise. Other statuses fail at once.
/// * Answers are checked: one vector per input, ordered by `index`, each exactly
///   `dimension` long ([`ProviderError::DimensionMismatch`] otherwise).
///
/// Neither `Debug` nor logging ever shows the API key or the input texts.
#[derive(Clone)]
pub struct OpenAiEmbedder {
    client: reqwest::Client,
    endpoint: Url,
    /// The endpoint without user info or query, for messages and `Debug`.
    endpoint_display: String,
    authorization: Option<HeaderValue>,
    config: OpenAiEmbedderConfig,
    identity: EmbedderIdentity,
}

impl OpenAiEmbedder {
    /// The provider name in the identity.
    pub const PROVIDER: &'static str = "openai-compatible";
    /// The adapter version in the identity.
    pub const VERSION: &'static str = "1";

    /// Builds the client.
    ///
    /// Fails with [`ProviderError::Config`] on an empty model, a zero dimension, batch
    /// size or timeout, a base URL that is not an absolute `http(s)` URL, or an API
    /// key that cannot be sent in an HTTP header.
    pub fn new(config: OpenAiEmbedderConfig) -> Result<Self, ProviderError> {
        if config.model.trim().is_empty() {
            return Err(ProviderError::Config(
                "embedding model name is empty".to_owned(),
            ));
        }
        if config.dimension == 0 {
            return Err(ProviderError::Config(
                "embedding dimension must be greater than 0".to_owned(),
            ));
        }
        if config.max_batch == 0 {
            return Err(ProviderError::Config(
                "embedding max_batch must be greater than 0".to_owned(),
            ));
        }
        if config.timeout.is_zero() {
            return Err(ProviderError::Config(
                "embedding request timeout must be greater than 0".to_owned(),
            ));
        }
        let endpoint = embeddings_endpoint(&config.base_url)?;
        let endpoint_display = display_url(&endpoint);

        let authorization = match &config.api_key {
            None => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    ProviderError::Config(
                        "the API key contains characters that cannot be sent in an HTTP header"
                            .to_owned(),
                    )
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };

        let client = build_client(&config, endpoint.scheme() == "https")?;

        let identity = EmbedderIdentity {
            provider: Self::PROVIDER.to_owned(),
            model: config.model.clone(),
            dimension: config.dimension,
            version: Self::VERSION.to_owned(),
        };
        Ok(Self {
            client,
            endpoint,
            endpoint_display,
            authorization,
            config,
            identity,
        })
    }

    /// The URL requests are posted to (without user info or query string).
    pub fn endpoint(&self) -> &str {
        &self.endpoint_display
    }

    /// One batch (at most `max_batch` inputs), with retries.
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut retry = 0u32;
        loop {
            let attempt = retry + 1;
            let err = match self.send_once(texts, attempt).await {
                Ok(vectors) => return Ok(vectors),
                Err(err) => err,
            };
            let (retryable, retry_after) = match &err {
                ProviderError::Transport { .. } => (true, None),
                ProviderError::Status {
                    retry_after,
                    status,
                    ..
                } => (*status == 429 || *status >= 500, *retry_after),
                _ => (false, None),
            };
            if !retryable || retry >= self.config.max_retries {
                if retryable {
                    debug!(attempt, "embeddings request failed, retries exhausted");
                }
                return Err(err);
            }
            let delay = self.backoff_delay(retry, retry_after, clock_seed());
            debug!(
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                honours_retry_after = retry_after.is_some(),
                "embeddings request failed, retrying"
            );
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// The wait before retry number `retry + 1`.
    fn backoff_delay(&self, retry: u32, retry_after: Option<Duration>, seed: u64) -> Duration {
        let max = self.config.max_backoff;
        if let Some(wait) = retry_after {
            return wait.min(max);
        }
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        let base = self
            .config
            .initial_backoff
            .checked_mul(factor)
            .unwrap_or(max)
            .min(max);
        // "Equal jitter": half fixed, half spread, so retries of concurrent callers
        // do not arrive in lockstep while the wait never drops below half the base.
        let half = base / 2;
        let fraction = jitter_fraction(seed, retry);
        (half + half.mul_f64(fraction)).min(max)
    }

    /// One HTTP request, no retries.
    async fn send_once(
        &self,
        texts: &[String],
        attempt: u32,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        let body = EmbeddingsRequest {
            model: &self.config.model,
            input: texts,
            encoding_format: "float",
            dimensions: self.config.send_dimensions.then_some(self.config.dimension),
        };
        let mut request = self.client.post(self.endpoint.clone()).json(&body);
        if let Some(auth) = &self.authorization {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        debug!(attempt, inputs = texts.len(), "sending embeddings request");

        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e))?;
        debug!(
            attempt,
            status = status.as_u16(),
            body_bytes = bytes.len(),
            "embeddings response"
        );

        if !status.is_success() {
            return Err(ProviderError::Status {
                status: status.as_u16(),
                message: self.status_message(status, &bytes),
                retry_after,
            });
        }
        self.parse_answer(&bytes, texts.len())
    }

    /// A transport failure. reqwest's own message names the full URL, which may carry
    /// credentials; ours names the redacted endpoint instead.
    fn transport_error(&self, err: reqwest::Error) -> ProviderError {
        let what = if err.is_timeout() {
            format!("request timed out after {:?}: ", self.config.timeout)
        } else {
            String::new()
        };
        ProviderError::Transport {
            message: self.redact(&format!(
                "POST {}: {what}{}",
                self.endpoint_display,
                error_chain(&err.without_url())
            )),
        }
    }

    /// The provider's error message (its `error.message` when it sends the OpenAI
    /// error shape, else the start of the body), short and without the key.
    fn status_message(&self, status: StatusCode, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let extracted = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                let msg = v
                    .pointer("/error/message")
                    .or_else(|| v.get("error"))
                    .or_else(|| v.get("message"))
                    .or_else(|| v.get("detail"))?;
                match msg {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Null => None,
                    other => Some(other.to_string()),
                }
            });
        let message = extracted.unwrap_or_else(|| text.into_owned());
        let message = collapse_whitespace(&message);
        let message = if message.is_empty() {
            status.canonical_reason().unwrap_or("no message").to_owned()
        } else {
            message
        };
        truncate_chars(&self.redact(&message), MAX_QUOTED_CHARS)
    }

    /// Checks and orders a 2xx answer.
    fn parse_answer(&self, body: &[u8], expected: usize) -> Result<Vec<Vec<f32>>, ProviderError> {
        let answer: EmbeddingsResponse = serde_json::from_slice(body).map_err(|e| {
            self.malformed(
                &format!("expected {{\"data\": [{{\"embedding\": [...], \"index\": n}}]}}: {e}"),
                body,
            )
        })?;
        if answer.data.len() != expected {
            return Err(self.malformed(
                &format!("expected {expected} embeddings, got {}", answer.data.len()),
                body,
            ));
        }

        let with_index = answer.data.iter().filter(|d| d.index.is_some()).count();
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        if with_index == 0 {
            // Some servers omit `index`; then the answer order is the input order.
            for (slot, item) in slots.iter_mut().zip(answer.data) {
                *slot = Some(item.embedding);
            }
        } else if with_index == expected {
            for item in answer.data {
                let index = item.index.unwrap_or(usize::MAX);
                match slots.get_mut(index) {
                    Some(slot @ None) => *slot = Some(item.embedding),
                    Some(Some(_)) => {
                        return Err(
                            self.malformed(&format!("index {index} appears more than once"), body)
                        );
                    }
                    None => {
                        return Err(self.malformed(
                            &format!("index {index} is out of range for {expected} inputs"),
                            body,
                        ));
                    }
                }
            }
        } else {
            return Err(self.malformed("some embeddings have an index and some do not", body));
        }

        let mut vectors = Vec::with_capacity(expected);
        for slot in slots {
            // Every slot is filled: `expected` distinct in-range indexes, or all positional.
            let Some(vector) = slot else {
                return Err(self.malformed("an input has no embedding", body));
            };
            if vector.len() != self.config.dimension {
                return Err(ProviderError::DimensionMismatch {
                    expected: self.config.dimension,
                    got: vector.len(),
                });
            }
            if vector.iter().any(|x| !x.is_finite()) {
                return Err(self.malformed("an embedding has a non-finite component", body));
            }
            vectors.push(vector);
        }
        Ok(vectors)
    }

    fn malformed(&self, what: &str, body: &[u8]) -> ProviderError {
        let text = collapse_whitespace(&String::from_utf8_lossy(body));
        let quoted = truncate_chars(&self.redact(&text), MAX_QUOTED_CHARS);
        ProviderError::Malformed {
            message: format!(
                "embeddings answer from {} is not usable: {what}; body starts: {quoted}",
                self.endpoint_display
            ),
        }
    }

    /// Removes the API key from a message, should a provider or library echo it.
    fn redact(&self, message: &str) -> String {
        match self.config.api_key.as_deref() {
            Some(key) if !key.is_empty() => message.replace(key, "<redacted>"),
            _ => message.to_owned(),
        }
    }
}

impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("endpoint", &self.endpoint_display)
            .field("model", &self.config.model)
            .field("dimension", &self.config.dimension)
            .field(
                "api_key",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("timeout", &self.config.timeout)
            .field("max_retries", &self.config.max_retries)
            .field("initial_backoff", &self.config.initial_backoff)
            .field("max_backoff", &self.config.max_backoff)
            .field("send_dimensions", &self.config.send_dimensions)
            .field("max_batch", &self.config.max_batch)
            .finish()
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn max_batch(&self) -> usize {
        self.config.max_batch
    }

    async fn embed(
        &self,
        texts: &[String],
        _purpose: EmbedPurpose,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.config.max_batch.max(1)) {
            vectors.extend(self.embed_batch(batch).await?);
        }
        Ok(vectors)
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

/// Builds the HTTP client.
///
/// With its `rustls` feature, reqwest 0.13 uses aws-lc-rs as the crypto provider (no
/// provider has to be installed) and `rustls-platform-verifier`, which on Linux loads
/// the system CA roots when the client is *built* and fails the build when there are
/// none (minimal containers without `ca-certificates`). A plain-`http` endpoint such
/// as a local Ollama needs no roots, so for it the build is retried with an empty
/// trust store instead of failing.
fn build_client(
    config: &OpenAiEmbedderConfig,
    https: bool,
) -> Result<reqwest::Client, ProviderError> {
    let builder = || {
        reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(30)))
            .user_agent(concat!("rememberstack/", env!("CARGO_PKG_VERSION")))
    };
    let err = match builder().build() {
        Ok(client) => return Ok(client),
        Err(err) => err,
    };
    if !https && let Ok(client) = builder().tls_certs_only(std::iter::empty()).build() {
        debug!("no system CA roots; plain-http embeddings client built without them");
        return Ok(client);
    }
    let hint = if https {
        " (for https, the system needs CA certificates, e.g. the ca-certificates package, \
         or SSL_CERT_FILE pointing at a PEM bundle)"
    } else {
        ""
    };
    Err(ProviderError::Config(format!(
        "cannot build the HTTP client: {}{hint}",
        error_chain(&err.without_url())
    )))
}

/// `{base_url}/embeddings`, keeping any path prefix and query of the base URL.
fn embeddings_endpoint(base_url: &str) -> Result<Url, ProviderError> {
    let bad = |why: &str| {
        ProviderError::Config(format!(
            "embedding base URL {:?} {why}",
            truncate_chars(&redacted_url(base_url), MAX_QUOTED_CHARS)
        ))
    };
    let mut url = Url::parse(base_url.trim()).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must start with http:// or https://"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    url.set_fragment(None);
    let path = format!("{}/embeddings", url.path().trim_end_matches('/'));
    url.set_path(&path);
    Ok(url)
}

/// A URL without user info or query, for messages.
fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    // Both only fail for URLs that cannot have credentials, which is fine.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// A base URL as configured, without user info or query when it parses.
fn redacted_url(raw: &str) -> String {
    match Url::parse(raw.trim()) {
        Ok(url) => display_url(&url),
        Err(_) => raw.to_owned(),
    }
}

/// Parses `Retry-After`: delta-seconds, or an HTTP-date (RFC 2822 form), relative to
/// `now`. A date in the past means "now".
fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        // Not standard, but some servers send fractional seconds.
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&Utc).signed_duration_since(now);
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// A seed for the backoff jitter, from the wall clock.
fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs().wrapping_mul(1_000_000_007) ^ u64::from(d.subsec_nanos()))
        .unwrap_or(0)
}

/// A deterministic fraction in `[0, 1)` from a seed and the retry number.
fn jitter_fraction(seed: u64, retry: u32) -> f64 {
    // SplitMix64 finalizer.
    let mut z = seed ^ u64::from(retry).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    // The top 53 bits give an exactly representable fraction.
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// An error and its sources, joined by `: ` (reqwest's own `Display` hides the cause).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn embedder(config: OpenAiEmbedderConfig) -> OpenAiEmbedder {
        OpenAiEmbedder::new(config).expect("valid config")
    }

    #[test]
    fn endpoint_keeps_prefix_and_strips_trailing_slash() {
        for (base, want) in [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "http://localhost:11434/v1//",
                "http://localhost:11434/v1/embeddings",
            ),
            ("http://localhost:8080", "http://localhost:8080/embeddings"),
            (
                "https://example.com/openai/v1?api-version=2",
                "https://example.com/openai/v1/embeddings?api-version=2",
            ),
        ] {
            assert_eq!(embeddings_endpoint(base).unwrap().as_str(), want, "{base}");
        }
    }

    #[test]
    fn config_errors() {
        let ok = OpenAiEmbedderConfig::new("http://localhost:1/v1", "m", 4);
        assert!(OpenAiEmbedder::new(ok.clone()).is_ok());
        for bad in [
            OpenAiEmbedderConfig {
                model: " ".into(),
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                dimension: 0,
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                max_batch: 0,
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                timeout: Duration::ZERO,
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                base_url: "ftp://x/v1".into(),
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                base_url: "localhost:11434/v1".into(),
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                base_url: "not a url".into(),
                ..ok.clone()
            },
            OpenAiEmbedderConfig {
                base_url: "".into(),
                ..ok.clone()
            },
            ok.clone().with_api_key("sk-bad\nkey"),
        ] {
            match OpenAiEmbedder::new(bad.clone()) {
                Err(ProviderError::Config(msg)) => assert!(!msg.contains("sk-bad"), "{msg}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn https_client_builds() {
        // reqwest's `rustls` feature ships aws-lc-rs as the default crypto provider.
        let e = embedder(OpenAiEmbedderConfig::new(
            "https://api.openai.com/v1",
            "m",
            4,
        ));
        assert_eq!(e.endpoint(), "https://api.openai.com/v1/embeddings");
    }

    #[test]
    fn identity() {
        let e = embedder(OpenAiEmbedderConfig::new(
            "http://h/v1",
            "text-embedding-3-small",
            1536,
        ));
        assert_eq!(
            e.identity().generation(),
            "openai-compatible/text-embedding-3-small/d1536/v1"
        );
    }

    #[test]
    fn retry_after_parsing() {
        let now = Utc.with_ymd_and_hms(2015, 10, 21, 7, 28, 0).unwrap();
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after(" 120 ", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_is_exponential_jittered_and_capped() {
        let mut config = OpenAiEmbedderConfig::new("http://h/v1", "m", 4);
        config.initial_backoff = Duration::from_millis(100);
        config.max_backoff = Duration::from_secs(1);
        let e = embedder(config);
        for seed in [0u64, 1, 42, u64::MAX, 0x1234_5678_9abc_def0] {
            for retry in 0..40 {
                let d = e.backoff_delay(retry, None, seed);
                let base = Duration::from_millis(100)
                    .checked_mul(1u32.checked_shl(retry).unwrap_or(u32::MAX))
                    .unwrap_or(Duration::MAX)
                    .min(Duration::from_secs(1));
                assert!(
                    d >= base / 2 && d <= base,
                    "retry {retry}: {d:?} vs {base:?}"
                );
                assert_eq!(d, e.backoff_delay(retry, None, seed), "deterministic");
            }
        }
        // Retry-After is honoured, capped at max_backoff.
        assert_eq!(
            e.backoff_delay(0, Some(Duration::from_millis(700)), 0),
            Duration::from_millis(700)
        );
        assert_eq!(
            e.backoff_delay(0, Some(Duration::from_secs(3600)), 0),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn jitter_spreads() {
        let fractions: Vec<f64> = (0..1000).map(|s| jitter_fraction(s, 1)).collect();
        assert!(fractions.iter().all(|f| (0.0..1.0).contains(f)));
        let mean = fractions.iter().sum::<f64>() / fractions.len() as f64;
        assert!((0.4..0.6).contains(&mean), "{mean}");
    }

    #[test]
    fn status_message_extraction_and_redaction() {
        let e = embedder(
            OpenAiEmbedderConfig::new("http://h/v1", "m", 4).with_api_key("sk-secret-123"),
        );
        let msg = e.status_message(
            StatusCode::UNAUTHORIZED,
            br#"{"error":{"message":"Incorrect API key provided: sk-secret-123","type":"invalid_request_error"}}"#,
        );
        assert_eq!(msg, "Incorrect API key provided: <redacted>");
        assert_eq!(
            e.status_message(StatusCode::BAD_GATEWAY, b""),
            "Bad Gateway"
        );
        let long = "x".repeat(5000);
        let msg = e.status_message(StatusCode::BAD_REQUEST, long.as_bytes());
        assert_eq!(msg.chars().count(), MAX_QUOTED_CHARS + 1);
    }

    #[test]
    fn answers_without_index_are_positional() {
        let e = embedder(OpenAiEmbedderConfig::new("http://h/v1", "m", 2));
        let got = e
            .parse_answer(br#"{"data":[{"embedding":[1,2]},{"embedding":[3,4]}]}"#, 2)
            .unwrap();
        assert_eq!(got, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn bad_indexes_are_malformed() {
        let e = embedder(OpenAiEmbedderConfig::new("http://h/v1", "m", 1));
        for body in [
            r#"{"data":[{"embedding":[1],"index":0},{"embedding":[2],"index":0}]}"#,
            r#"{"data":[{"embedding":[1],"index":0},{"embedding":[2],"index":2}]}"#,
            r#"{"data":[{"embedding":[1],"index":0},{"embedding":[2]}]}"#,
            r#"{"data":[{"embedding":[1],"index":-1},{"embedding":[2],"index":0}]}"#,
            r#"{"data":[{"embedding":"AAAA","index":0},{"embedding":[2],"index":1}]}"#,
            r#"{"data":[{"embedding":[1e300],"index":0},{"embedding":[2],"index":1}]}"#,
            r#"{"data":null}"#,
        ] {
            match e.parse_answer(body.as_bytes(), 2) {
                Err(ProviderError::Malformed { .. }) => {}
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("hé", 2), "hé");
    }
}
