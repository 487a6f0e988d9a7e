//! The OpenAI-compatible embeddings client.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use rememberstack_core::embed::{EmbedPurpose, Embedder, EmbedderIdentity, ProviderError};
use serde::{Deserialize, Serialize};

use crate::http::{
    JsonEndpoint, MAX_QUOTED_CHARS, RetryPolicy, build_client, collapse_whitespace, endpoint_url,
    redacted_url, truncate_chars,
};

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
    http: JsonEndpoint,
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
        let endpoint = endpoint_url(&config.base_url, "embeddings", "embedding")?;
        let client = build_client(config.timeout, endpoint.scheme() == "https")?;
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
            "embeddings",
        )?;

        let identity = EmbedderIdentity {
            provider: Self::PROVIDER.to_owned(),
            model: config.model.clone(),
            dimension: config.dimension,
            version: Self::VERSION.to_owned(),
        };
        Ok(Self {
            http,
            config,
            identity,
        })
    }

    /// The URL requests are posted to (without user info or query string).
    pub fn endpoint(&self) -> &str {
        self.http.display()
    }

    /// One batch (at most `max_batch` inputs), with retries.
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let body = EmbeddingsRequest {
            model: &self.config.model,
            input: texts,
            encoding_format: "float",
            dimensions: self.config.send_dimensions.then_some(self.config.dimension),
        };
        let answer = self.http.post_json(&body).await?;
        if !answer.status.is_success() {
            return Err(self.http.status_error(&answer));
        }
        self.parse_answer(&answer.body, texts.len())
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
                self.http.display()
            ),
        }
    }

    /// Removes the API key from a message, should a provider or library echo it.
    fn redact(&self, message: &str) -> String {
        self.http.redact(message)
    }
}

impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("endpoint", &self.http.display())
            .field("model", &self.config.model)
            .field("dimension", &self.config.dimension)
            .field("api_key", &self.http.has_key().then_some("<redacted>"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;

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
            let e = embedder(OpenAiEmbedderConfig::new(base, "m", 4));
            assert_eq!(e.http.display(), want.split('?').next().unwrap(), "{base}");
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
    fn status_message_extraction_and_redaction() {
        let e = embedder(
            OpenAiEmbedderConfig::new("http://h/v1", "m", 4).with_api_key("sk-secret-123"),
        );
        let msg = e.http.status_message(
            StatusCode::UNAUTHORIZED,
            br#"{"error":{"message":"Incorrect API key provided: sk-secret-123","type":"invalid_request_error"}}"#,
        );
        assert_eq!(msg, "Incorrect API key provided: <redacted>");
        assert_eq!(
            e.http.status_message(StatusCode::BAD_GATEWAY, b""),
            "Bad Gateway"
        );
        let long = "x".repeat(5000);
        let msg = e
            .http
            .status_message(StatusCode::BAD_REQUEST, long.as_bytes());
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
}
