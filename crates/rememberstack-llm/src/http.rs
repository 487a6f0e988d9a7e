//! HTTP plumbing shared by the OpenAI-compatible clients: client building, endpoint
//! URLs, bearer auth, retries with `Retry-After`-aware jittered backoff, error
//! messages that never show a secret.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use rememberstack_core::embed::ProviderError;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use tracing::debug;

/// How much of a provider's body an error message may quote.
pub(crate) const MAX_QUOTED_CHARS: usize = 200;

/// How often and how long to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// How many times a failed request is retried.
    pub max_retries: u32,
    /// The first backoff delay; doubled on every retry.
    pub initial_backoff: Duration,
    /// The longest single wait, including a provider's `Retry-After`.
    pub max_backoff: Duration,
}

impl RetryPolicy {
    /// The wait before retry number `retry + 1`.
    pub(crate) fn backoff_delay(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        seed: u64,
    ) -> Duration {
        let max = self.max_backoff;
        if let Some(wait) = retry_after {
            return wait.min(max);
        }
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        let base = self
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
}

/// Whether an answer with this status is worth retrying.
pub(crate) fn retryable_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// One HTTP answer, whatever its status.
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    /// The status.
    pub status: StatusCode,
    /// The parsed `Retry-After`, if any.
    pub retry_after: Option<Duration>,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Vec<u8>,
}

/// A JSON endpoint of an OpenAI-compatible API: the URL, the shared client, auth and
/// the retry policy. Cloning is cheap (the client is reference-counted).
#[derive(Clone)]
pub(crate) struct JsonEndpoint {
    client: reqwest::Client,
    url: Url,
    /// The URL without user info or query, for messages and `Debug`.
    display: String,
    authorization: Option<HeaderValue>,
    /// Kept only to scrub it from messages.
    api_key: Option<String>,
    timeout: Duration,
    retry: RetryPolicy,
    /// What the requests are, for logs: `embeddings`, `chat`.
    label: &'static str,
}

impl JsonEndpoint {
    /// An endpoint at `url` using `client`. Fails on an API key that cannot be sent
    /// in a header.
    pub(crate) fn new(
        client: reqwest::Client,
        url: Url,
        api_key: Option<String>,
        timeout: Duration,
        retry: RetryPolicy,
        label: &'static str,
    ) -> Result<Self, ProviderError> {
        let authorization = bearer(api_key.as_deref())?;
        Ok(Self {
            display: display_url(&url),
            client,
            url,
            authorization,
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout,
            retry,
            label,
        })
    }

    /// The URL without user info or query string.
    pub(crate) fn display(&self) -> &str {
        &self.display
    }

    /// The shared HTTP client.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Whether requests carry an `Authorization` header.
    pub(crate) fn has_key(&self) -> bool {
        self.authorization.is_some()
    }

    /// The retry policy.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// POSTs `body` as JSON, retrying transport failures, 429 and 5xx with backoff.
    ///
    /// Returns the first answer that is not retryable, or the last one when retries
    /// are exhausted, whatever its status; `Err` only for a transport failure on the
    /// last attempt.
    pub(crate) async fn post_json(
        &self,
        body: &impl serde::Serialize,
    ) -> Result<HttpAnswer, ProviderError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ProviderError::Config(format!("cannot serialize the {} request: {e}", self.label))
        })?;
        let label = self.label;
        let mut retry = 0u32;
        loop {
            let attempt = retry + 1;
            let (retry_after, outcome) = match self.post_once(&bytes, attempt).await {
                Ok(answer) if !retryable_status(answer.status) => return Ok(answer),
                Ok(answer) => (answer.retry_after, Ok(answer)),
                Err(err) => (None, Err(err)),
            };
            if retry >= self.retry.max_retries {
                debug!(label, attempt, "request failed, retries exhausted");
                return outcome;
            }
            let delay = self.retry.backoff_delay(retry, retry_after, clock_seed());
            debug!(
                label,
                attempt,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                honours_retry_after = retry_after.is_some(),
                "request failed, retrying"
            );
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// One HTTP request, no retries.
    async fn post_once(&self, body: &[u8], attempt: u32) -> Result<HttpAnswer, ProviderError> {
        let mut request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.to_vec());
        if let Some(auth) = &self.authorization {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        let label = self.label;
        debug!(label, attempt, "sending request");
        let response = request.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        let headers = response.headers().clone();
        let retry_after = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, Utc::now()));
        let body = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(e))?
            .to_vec();
        debug!(
            label,
            attempt,
            status = status.as_u16(),
            body_bytes = body.len(),
            "response"
        );
        Ok(HttpAnswer {
            status,
            retry_after,
            headers,
            body,
        })
    }

    /// The [`ProviderError::Status`] for a non-2xx answer.
    pub(crate) fn status_error(&self, answer: &HttpAnswer) -> ProviderError {
        ProviderError::Status {
            status: answer.status.as_u16(),
            message: self.status_message(answer.status, &answer.body),
            retry_after: answer.retry_after,
        }
    }

    /// A transport failure. reqwest's own message names the full URL, which may carry
    /// credentials; ours names the redacted endpoint instead.
    fn transport_error(&self, err: reqwest::Error) -> ProviderError {
        let what = if err.is_timeout() {
            format!("request timed out after {:?}: ", self.timeout)
        } else {
            String::new()
        };
        ProviderError::Transport {
            message: self.redact(&format!(
                "POST {}: {what}{}",
                self.display,
                error_chain(&err.without_url())
            )),
        }
    }

    /// The provider's error message (its `error.message` when it sends the OpenAI
    /// error shape, else the start of the body), short and without the key.
    pub(crate) fn status_message(&self, status: StatusCode, body: &[u8]) -> String {
        let message = collapse_whitespace(&error_text(body));
        let message = if message.is_empty() {
            status.canonical_reason().unwrap_or("no message").to_owned()
        } else {
            message
        };
        truncate_chars(&self.redact(&message), MAX_QUOTED_CHARS)
    }

    /// Removes the API key from a message, should a provider or library echo it.
    pub(crate) fn redact(&self, message: &str) -> String {
        match self.api_key.as_deref() {
            Some(key) => message.replace(key, "<redacted>"),
            None => message.to_owned(),
        }
    }
}

/// The error text of an error body: its `error.message` (or `error`, `message`,
/// `detail`) when it is JSON, else the whole body. Not shortened.
pub(crate) fn error_text(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
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
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

/// `Authorization: Bearer <key>`, marked sensitive; `None` without a key.
fn bearer(api_key: Option<&str>) -> Result<Option<HeaderValue>, ProviderError> {
    let Some(key) = api_key.filter(|k| !k.is_empty()) else {
        return Ok(None);
    };
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
        ProviderError::Config(
            "the API key contains characters that cannot be sent in an HTTP header".to_owned(),
        )
    })?;
    value.set_sensitive(true);
    Ok(Some(value))
}

/// Builds an HTTP client.
///
/// With its `rustls` feature, reqwest 0.13 uses aws-lc-rs as the crypto provider (no
/// provider has to be installed) and `rustls-platform-verifier`, which on Linux loads
/// the system CA roots when the client is *built* and fails the build when there are
/// none (minimal containers without `ca-certificates`). A plain-`http` endpoint such
/// as a local Ollama needs no roots, so for it the build is retried with an empty
/// trust store instead of failing.
pub(crate) fn build_client(
    timeout: Duration,
    https: bool,
) -> Result<reqwest::Client, ProviderError> {
    let builder = || {
        reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .user_agent(concat!("rememberstack/", env!("CARGO_PKG_VERSION")))
    };
    let err = match builder().build() {
        Ok(client) => return Ok(client),
        Err(err) => err,
    };
    if !https && let Ok(client) = builder().tls_certs_only(std::iter::empty()).build() {
        debug!("no system CA roots; plain-http client built without them");
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

/// `{base_url}/{suffix}`, keeping any path prefix and query of the base URL.
/// `what` names the URL in messages (`embedding`, `chat`).
pub(crate) fn endpoint_url(base_url: &str, suffix: &str, what: &str) -> Result<Url, ProviderError> {
    let bad = |why: &str| {
        ProviderError::Config(format!(
            "{what} base URL {:?} {why}",
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
    let path = format!("{}/{suffix}", url.path().trim_end_matches('/'));
    url.set_path(&path);
    Ok(url)
}

/// A URL without user info or query, for messages.
pub(crate) fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    // Both only fail for URLs that cannot have credentials, which is fine.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// A base URL as configured, without user info or query when it parses.
pub(crate) fn redacted_url(raw: &str) -> String {
    match Url::parse(raw.trim()) {
        Ok(url) => display_url(&url),
        Err(_) => raw.to_owned(),
    }
}

/// Parses `Retry-After`: delta-seconds, or an HTTP-date (RFC 2822 form), relative to
/// `now`. A date in the past means "now".
pub(crate) fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
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
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
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

/// `text` with every whitespace run replaced by one space.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}…", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn endpoint_keeps_prefix_and_strips_trailing_slash() {
        for (base, suffix, want) in [
            (
                "https://api.openai.com/v1",
                "embeddings",
                "https://api.openai.com/v1/embeddings",
            ),
            (
                "https://api.openai.com/v1/",
                "chat/completions",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://localhost:11434/v1//",
                "embeddings",
                "http://localhost:11434/v1/embeddings",
            ),
            (
                "http://localhost:8080",
                "chat/completions",
                "http://localhost:8080/chat/completions",
            ),
            (
                "https://example.com/openai/v1?api-version=2",
                "chat/completions",
                "https://example.com/openai/v1/chat/completions?api-version=2",
            ),
        ] {
            assert_eq!(
                endpoint_url(base, suffix, "test").unwrap().as_str(),
                want,
                "{base}"
            );
        }
        for bad in ["ftp://x/v1", "localhost:1/v1", "not a url", ""] {
            match endpoint_url(bad, "chat/completions", "chat") {
                Err(ProviderError::Config(msg)) => {
                    assert!(msg.starts_with("chat base URL"), "{msg}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
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
        let policy = RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for seed in [0u64, 1, 42, u64::MAX, 0x1234_5678_9abc_def0] {
            for retry in 0..40 {
                let d = policy.backoff_delay(retry, None, seed);
                let base = Duration::from_millis(100)
                    .checked_mul(1u32.checked_shl(retry).unwrap_or(u32::MAX))
                    .unwrap_or(Duration::MAX)
                    .min(Duration::from_secs(1));
                assert!(
                    d >= base / 2 && d <= base,
                    "retry {retry}: {d:?} vs {base:?}"
                );
                assert_eq!(d, policy.backoff_delay(retry, None, seed), "deterministic");
            }
        }
        // Retry-After is honoured, capped at max_backoff.
        assert_eq!(
            policy.backoff_delay(0, Some(Duration::from_millis(700)), 0),
            Duration::from_millis(700)
        );
        assert_eq!(
            policy.backoff_delay(0, Some(Duration::from_secs(3600)), 0),
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
        let url = endpoint_url("http://h/v1", "embeddings", "test").unwrap();
        let client = build_client(Duration::from_secs(1), false).unwrap();
        let policy = RetryPolicy {
            max_retries: 0,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        };
        let e = JsonEndpoint::new(
            client,
            url,
            Some("sk-secret-123".into()),
            Duration::from_secs(1),
            policy,
            "test",
        )
        .unwrap();
        assert!(e.has_key());
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
        assert_eq!(error_text(br#"{"detail":"nope"}"#), "nope");
        assert_eq!(error_text(br#"{"error":"plain"}"#), "plain");
        assert_eq!(error_text(b"not json"), "not json");
    }

    #[test]
    fn bad_keys_are_config_errors_and_empty_keys_are_none() {
        assert!(matches!(
            bearer(Some("sk-bad\nkey")),
            Err(ProviderError::Config(msg)) if !msg.contains("sk-bad")
        ));
        assert!(bearer(Some("")).unwrap().is_none());
        assert!(bearer(None).unwrap().is_none());
        assert!(bearer(Some("k")).unwrap().unwrap().is_sensitive());
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("hé", 2), "hé");
    }
}
