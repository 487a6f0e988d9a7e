//! The perimeter: who is calling, what they may do, and how fast.

use crate::error::{ApiError, ApiResult};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use rememberstack::KeyScope as Scope;
use rememberstack::{ApiKey, Memory};

/// The caller of one request.
#[derive(Clone, Debug)]
pub enum Principal {
    /// No key is configured and the server listens on loopback: every namespace,
    /// every scope.
    Open,
    /// A bearer key: its scopes on its namespaces only.
    Key(ApiKey),
}

impl Principal {
    /// The id rate limits are kept under.
    pub fn limit_key(&self) -> String {
        match self {
            Principal::Open => "open".to_string(),
            Principal::Key(k) => k.id.clone(),
        }
    }

    /// Whether this caller may know that `namespace` exists.
    pub fn sees(&self, namespace: &str) -> bool {
        match self {
            Principal::Open => true,
            Principal::Key(k) => !k.is_revoked() && k.namespaces.iter().any(|n| n == namespace),
        }
    }

    /// Whether this caller holds `scope` (on the namespaces it sees).
    pub fn holds(&self, scope: Scope) -> bool {
        match self {
            Principal::Open => true,
            Principal::Key(k) => !k.is_revoked() && k.grants(scope),
        }
    }

    /// Refuse unless the caller may use `scope` on `namespace`: a namespace it may
    /// not see is `404` (as if it did not exist), a missing scope `403`.
    pub fn require(&self, namespace: &str, scope: Scope) -> ApiResult<()> {
        if !self.sees(namespace) {
            return Err(ApiError::namespace_not_found());
        }
        if !self.holds(scope) {
            return Err(ApiError::forbidden(format!(
                "this credential lacks the `{}` scope",
                scope.as_str()
            )));
        }
        Ok(())
    }
}

/// Name the caller from its `Authorization` header. A bearer key must be known
/// and not revoked (401 otherwise). Without a header the request is served only
/// when no key is configured at all and the server listens on loopback.
pub async fn authenticate(
    memory: &Memory,
    loopback: bool,
    authorization: Option<&str>,
) -> ApiResult<Principal> {
    match authorization {
        Some(value) => {
            let secret = value
                .split_once(' ')
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, s)| s.trim())
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    ApiError::unauthorized("the Authorization header must be `Bearer <key>`")
                })?;
            match memory.authenticate_key(secret).await? {
                Some(key) => Ok(Principal::Key(key)),
                None => Err(ApiError::unauthorized("unknown or revoked API key")),
            }
        }
        None => {
            if memory.has_active_api_keys().await? {
                Err(ApiError::unauthorized(
                    "this server requires an API key: send `Authorization: Bearer <key>`",
                ))
            } else if loopback {
                Ok(Principal::Open)
            } else {
                Err(ApiError::unauthorized(
                    "no API key is configured and this server is not on loopback: \
                     create one with `remember keys create`",
                ))
            }
        }
    }
}

/// Per-caller request rate and in-flight limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Sustained requests per second per caller.
    pub rate_per_sec: f64,
    /// Requests a caller may make at once above the sustained rate.
    pub burst: f64,
    /// Requests a caller may have in flight.
    pub in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            rate_per_sec: 200.0,
            burst: 400.0,
            in_flight: 64,
        }
    }
}

struct Bucket {
    tokens: f64,
    last: Instant,
    in_flight: Arc<Semaphore>,
}

/// Token buckets and in-flight semaphores, one per caller, in this process.
pub struct Limiter {
    limits: Limits,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Limiter {
    /// A limiter with `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Hold one of `key`'s in-flight places for work that outlives its request's
    /// response (an MCP tool call answered over a stream), waiting up to `wait`.
    pub async fn hold(&self, key: &str, wait: Duration) -> ApiResult<OwnedSemaphorePermit> {
        let semaphore = {
            let mut buckets = self
                .buckets
                .lock()
                .map_err(|_| ApiError::from(rememberstack::Error::internal("limiter poisoned")))?;
            let limits = self.limits;
            buckets
                .entry(key.to_string())
                .or_insert_with(|| Bucket {
                    tokens: limits.burst,
                    last: Instant::now(),
                    in_flight: Arc::new(Semaphore::new(limits.in_flight.max(1))),
                })
                .in_flight
                .clone()
        };
        match tokio::time::timeout(wait, semaphore.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(ApiError::rate_limited(
                "too many requests in flight for this credential",
                1,
            )),
        }
    }

    /// Take one request's worth for `key`; the permit is held until the response.
    pub fn admit(&self, key: &str) -> ApiResult<OwnedSemaphorePermit> {
        let mut buckets = self
            .buckets
            .lock()
            .map_err(|_| ApiError::from(rememberstack::Error::internal("limiter poisoned")))?;
        let now = Instant::now();
        let limits = self.limits;
        let bucket = buckets.entry(key.to_string()).or_insert_with(|| Bucket {
            tokens: limits.burst,
            last: now,
            in_flight: Arc::new(Semaphore::new(limits.in_flight.max(1))),
        });
        let elapsed = now.duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * limits.rate_per_sec).min(limits.burst);
        bucket.last = now;
        if bucket.tokens < 1.0 {
            let wait =
                Duration::from_secs_f64((1.0 - bucket.tokens) / limits.rate_per_sec.max(1e-9));
            return Err(ApiError::rate_limited(
                "request rate limit reached for this credential",
                wait.as_secs_f64().ceil() as u64,
            ));
        }
        let permit = bucket.in_flight.clone().try_acquire_owned().map_err(|_| {
            ApiError::rate_limited("too many requests in flight for this credential", 1)
        })?;
        bucket.tokens -= 1.0;
        Ok(permit)
    }
}
