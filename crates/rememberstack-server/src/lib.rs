//! The RememberStack server: one [`Memory`] engine shared by the HTTP API (`/v1`),
//! the operational endpoints (`/health`, `/ready`, `/metrics`, `/openapi.json`)
//! and an in-process worker pool that runs the ledger.
//!
//! ```no_run
//! # async fn run() -> rememberstack::Result<()> {
//! let memory = rememberstack::Memory::open("memory.db").await?;
//! let config = rememberstack_server::ServerConfig::default();
//! rememberstack_server::serve(memory, config, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod auth;
pub mod error;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod perimeter;
mod routes;

use auth::{Limiter, Limits};
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use error::{ApiError, ErrorMarker};
use rememberstack::{Error, Memory, Result};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// In-process ledger workers (0: leave the ledger to `remember worker`).
    pub workers: usize,
    /// How often an idle worker looks for work.
    pub worker_poll: Duration,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// The longest a request may run before it is answered `503 timeout`.
    pub request_timeout: Duration,
    /// The longest `?wait=true` waits for an ingest's processing.
    pub max_wait: Duration,
    /// Per-caller rate and in-flight limits.
    pub limits: Limits,
    /// Hosts an open server answers besides loopback ones, and CORS origins.
    pub perimeter: perimeter::PerimeterConfig,
    /// MCP sessions one key (or the open server) may hold at once.
    pub mcp_sessions_per_key: usize,
    /// An MCP session idle this long is closed (its client starts a new one).
    pub mcp_session_idle: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8420)),
            workers: 2,
            worker_poll: Duration::from_millis(500),
            body_limit: 16 * 1024 * 1024,
            request_timeout: Duration::from_secs(120),
            max_wait: Duration::from_secs(60),
            limits: Limits::default(),
            perimeter: perimeter::PerimeterConfig::default(),
            mcp_sessions_per_key: 16,
            mcp_session_idle: Duration::from_secs(300),
        }
    }
}

/// What every handler shares.
pub(crate) struct Shared {
    pub(crate) memory: Memory,
    /// Cancelled at shutdown: ends MCP sessions and their streams.
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    /// Whether the listener is a loopback address (an open server is loopback only).
    pub(crate) loopback: bool,
    pub(crate) config: ServerConfig,
    pub(crate) metrics: metrics::Metrics,
    pub(crate) limiter: Limiter,
    pub(crate) sessions: mcp::SessionCap,
}

/// The state behind the router.
#[derive(Clone)]
pub struct AppState(pub(crate) Arc<Shared>);

impl AppState {
    /// State over one engine.
    pub fn new(memory: Memory, config: ServerConfig) -> Self {
        let limiter = Limiter::new(config.limits);
        let sessions = mcp::SessionCap::new(config.mcp_sessions_per_key, config.mcp_session_idle);
        AppState(Arc::new(Shared {
            sessions,
            cancel: tokio_util::sync::CancellationToken::new(),
            loopback: config.listen.ip().is_loopback(),
            memory,
            config,
            metrics: metrics::Metrics::default(),
            limiter,
        }))
    }
}

/// The request id of one request (`X-Request-Id`, echoed or minted).
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// The full router: `/v1`, the operational endpoints, and the request middleware
/// (request ids, perimeter, limits, timeouts, error bodies, metrics, logs).
pub fn app(state: AppState) -> Router {
    let mcp_state = state.clone();
    let mut mcp_config =
        rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default();
    mcp_config.cancellation_token = state.0.cancel.child_token();
    mcp_config.max_request_body_bytes = state.0.config.body_limit;
    // The request middleware applies the Host and Origin rules to `/mcp` as to
    // `/v1` (one rule, in `perimeter`), so rmcp's own copy is off.
    mcp_config = mcp_config.disable_allowed_hosts().disable_allowed_origins();
    let mcp = rmcp::transport::streamable_http_server::StreamableHttpService::new(
        move || Ok(mcp::McpServer::over_http(mcp_state.clone())),
        state.0.sessions.manager(),
        mcp_config,
    );
    routes::router()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            request_context,
        ))
        .layer(DefaultBodyLimit::max(state.0.config.body_limit))
        .with_state(state)
}

/// Serve `memory` until `shutdown` resolves: then stop accepting, finish the
/// requests in flight, and stop the workers (each finishes the batch it holds,
/// so no lease is left behind).
pub async fn serve(
    memory: Memory,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| {
            Error::new(
                rememberstack::ErrorCode::Config,
                format!("cannot listen on {}: {e}", config.listen),
            )
        })?;
    serve_on(listener, memory, config, shutdown).await
}

/// [`serve`] on a listener the caller bound (tests bind port 0).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    memory: Memory,
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let local = listener.local_addr().map_err(|e| {
        Error::new(
            rememberstack::ErrorCode::Config,
            format!("listener address: {e}"),
        )
    })?;
    config.perimeter.validate()?;
    check_perimeter(&memory, local).await?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let workers = if config.workers > 0 {
        let memory = memory.clone();
        let (n, poll) = (config.workers, config.worker_poll);
        let rx = stop_rx.clone();
        Some(tokio::spawn(async move {
            memory.run_workers(n, poll, rx).await
        }))
    } else {
        None
    };
    let state = AppState::new(
        memory,
        ServerConfig {
            listen: local,
            ..config.clone()
        },
    );
    let cancel = state.0.cancel.clone();
    tracing::info!(listen = %local, workers = config.workers, "serving");
    let served = axum::serve(listener, app(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: no new connections, finishing requests");
            cancel.cancel();
        })
        .await
        .map_err(|e| Error::internal(format!("server: {e}")));
    let _ = stop_tx.send(true);
    if let Some(handle) = workers {
        match handle.await {
            Ok(Ok(report)) => {
                tracing::info!(completed = report.completed, "workers stopped")
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "workers stopped with an error"),
            Err(e) => tracing::warn!(error = %e, "a worker task failed"),
        }
    }
    served
}

/// With no key configured the server is open, so it binds loopback only.
async fn check_perimeter(memory: &Memory, local: SocketAddr) -> Result<()> {
    if memory.has_active_api_keys().await? {
        tracing::info!("API keys are configured: every /v1 and /mcp request needs a bearer key");
        return Ok(());
    }
    if !local.ip().is_loopback() {
        return Err(Error::new(
            rememberstack::ErrorCode::Config,
            format!(
                "refusing to serve {local} without API keys: with no key configured every \
                 request is served unauthenticated, so only a loopback address is allowed \
                 (create a key with `remember keys create`, or listen on 127.0.0.1)"
            ),
        ));
    }
    tracing::warn!(
        "no API key is configured: serving unauthenticated requests on loopback {local} only"
    );
    Ok(())
}

fn request_id_from(req: &Request) -> String {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 64
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        })
        .map(str::to_string)
        .unwrap_or_else(|| format!("req_{}", uuid::Uuid::new_v4().simple()))
}

/// Routes behind the perimeter.
fn guarded(path: &str) -> bool {
    path.starts_with("/v1/") || path == "/v1" || path.starts_with("/mcp")
}

/// A POST to `/mcp` without a session id: it may open a session.
fn opens_mcp_session(req: &Request) -> bool {
    req.method() == Method::POST
        && req.uri().path().starts_with("/mcp")
        && !req.headers().contains_key("mcp-session-id")
}

async fn request_context(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let request_id = request_id_from(&req);
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = metrics::method_label(req.method());
    req.extensions_mut().insert(RequestId(request_id.clone()));
    let span =
        tracing::info_span!("request", request_id = %request_id, method = %method, route = %route);
    let started = Instant::now();
    let timeout = state.0.config.request_timeout;
    let perimeter = &state.0.config.perimeter;
    // The Origin rule holds on every route; a `--cors-origin` page is answered
    // with CORS headers, its preflight before any credential is asked for.
    let origin = perimeter::check_origin(req.headers(), &perimeter.cors_origins);
    let cors = match &origin {
        Ok(perimeter::OriginVerdict::Cors(o)) => Some(o.clone()),
        _ => None,
    };
    let response = async {
        if let Err(e) = origin {
            return e.into_response();
        }
        if let Some(o) = &cors
            && req.method() == Method::OPTIONS
            && req
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return perimeter::preflight(o);
        }
        let _permit;
        let mut session_slot = None;
        if guarded(req.uri().path()) {
            let authorization = req
                .headers()
                .get(header::AUTHORIZATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let principal = match auth::authenticate(
                &state.0.memory,
                state.0.loopback,
                authorization.as_deref(),
            )
            .await
            {
                Ok(p) => p,
                Err(e) => return e.into_response(),
            };
            if matches!(principal, auth::Principal::Open) {
                let host = req
                    .headers()
                    .get(header::HOST)
                    .and_then(|v| v.to_str().ok());
                if !perimeter::host_allowed(host, &perimeter.allowed_hosts) {
                    return perimeter::misdirected(host).into_response();
                }
            }
            if let Err(e) = perimeter::check_declared(req.method(), req.headers()) {
                return e.into_response();
            }
            _permit = match state.0.limiter.admit(&principal.limit_key()) {
                Ok(p) => p,
                Err(e) => return e.into_response(),
            };
            if opens_mcp_session(&req) {
                session_slot = match state.0.sessions.reserve(&principal.limit_key()).await {
                    Ok(slot) => Some(slot),
                    Err(e) => return e.into_response(),
                };
            }
            req.extensions_mut().insert(principal);
        }
        let response = match tokio::time::timeout(timeout, next.run(req)).await {
            Ok(response) => response,
            Err(_) => {
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "timeout",
                    format!("the request did not finish within {} s", timeout.as_secs()),
                );
                e.retry_after = Some(1);
                e.into_response()
            }
        };
        if let Some(slot) = session_slot
            && let Some(id) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            slot.bind(id);
        }
        response
    }
    .instrument(span.clone())
    .await;
    let mut response = finish(response, &request_id).await;
    if let Some(o) = &cors {
        perimeter::allow_cors(&mut response, o);
    }
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    state.0.metrics.record(&route, method, status, elapsed);
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(
                status,
                millis = elapsed.as_millis() as u64,
                "request failed"
            );
        } else {
            tracing::info!(status, millis = elapsed.as_millis() as u64, "request");
        }
    });
    response
}

/// Give every error response the `{code, message, request_id}` body (also the
/// framework's own: unknown routes, wrong methods, unreadable bodies), and every
/// response the `X-Request-Id` header.
async fn finish(response: Response, request_id: &str) -> Response {
    let status = response.status();
    let mut response = if let Some(ErrorMarker(e)) = response.extensions().get::<ErrorMarker>() {
        error_response(&e.clone(), request_id)
    } else if response.extensions().get::<CompleteErrorBody>().is_some() {
        response
    } else if status.is_client_error() || status.is_server_error() {
        let (parts, body) = response.into_parts();
        let text = axum::body::to_bytes(body, 64 * 1024)
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let (status, code, fallback) = framework_error(status);
        // A framework's 5xx text may name internals: it goes to the log only.
        let message = if text.trim().is_empty() || status.is_server_error() {
            if !text.trim().is_empty() {
                tracing::error!(request_id, error = %text.trim(), "internal error");
            }
            fallback.to_string()
        } else {
            text.trim().to_string()
        };
        let mut e = ApiError::new(status, code, message);
        e.retry_after = parts
            .headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        error_response(&e, request_id)
    } else {
        response
    };
    if let Ok(v) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
}

/// The status, code and default message for an error the framework (axum, rmcp)
/// answered itself: every status gets the code that names it, never a catch-all.
fn framework_error(status: StatusCode) -> (StatusCode, &'static str, &'static str) {
    match status.as_u16() {
        400 | 422 => (StatusCode::BAD_REQUEST, "invalid_input", "invalid request"),
        401 => (status, "unauthorized", "this request needs a credential"),
        403 => (status, "forbidden", "this request is not allowed"),
        404 => (StatusCode::NOT_FOUND, "not_found", "no such route"),
        405 => (
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this route does not take that method",
        ),
        406 => (
            status,
            "not_acceptable",
            "the Accept header names no type this route answers with",
        ),
        409 => (
            status,
            "conflict",
            "the request conflicts with the server's state",
        ),
        413 => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "the request body is larger than the server accepts",
        ),
        415 => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send JSON with `Content-Type: application/json`",
        ),
        421 => (
            status,
            "misdirected_request",
            "this server does not answer that host name",
        ),
        429 => (status, "rate_limited", "too many requests"),
        s if s >= 500 => (status, "internal", "internal error"),
        _ => (status, "invalid_input", "invalid request"),
    }
}

/// Marks an error response whose handler wrote the whole body itself (with
/// `code`, `message` and `request_id`, and more): `/ready`'s checks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompleteErrorBody;

/// The final error response, with its request id.
fn error_response(e: &ApiError, request_id: &str) -> Response {
    let e = e.public(request_id);
    let mut response = (e.status, axum::Json(e.body(request_id))).into_response();
    if let Some(secs) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_errors_keep_the_code_that_names_their_status() {
        for (status, code) in [
            (401, "unauthorized"),
            (403, "forbidden"),
            (406, "not_acceptable"),
            (415, "unsupported_media_type"),
            (421, "misdirected_request"),
            (429, "rate_limited"),
            (500, "internal"),
            (502, "internal"),
        ] {
            let (s, c, _) = framework_error(StatusCode::from_u16(status).unwrap());
            assert_eq!((s.as_u16(), c), (status, code));
        }
    }
}
