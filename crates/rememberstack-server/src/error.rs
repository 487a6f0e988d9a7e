//! Every error leaves the server as `{code, message, request_id}` with the status
//! that matches its code.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rememberstack::{Error, ErrorCode};
use serde_json::json;

/// An error on its way to the caller. The request id is filled in by the request
/// middleware, which knows it.
#[derive(Clone, Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The machine-readable code (the engine's codes, plus the perimeter's).
    pub code: &'static str,
    /// What was wrong and what to do.
    pub message: String,
    /// Seconds to wait before retrying (429, 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// A new error.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400 `invalid_input`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_input", message)
    }

    /// 404 for a namespace the caller may not see (or that does not exist): the
    /// same answer either way, so a key never learns that another namespace exists.
    pub fn namespace_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such namespace for this credential",
        )
    }

    /// 401 `unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403 `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 429 `rate_limited` with `Retry-After`.
    pub fn rate_limited(message: impl Into<String>, retry_after: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message);
        e.retry_after = Some(retry_after.max(1));
        e
    }

    /// Whether the message may carry internals (store paths, SQL, an engine bug's
    /// detail): `store`, `internal` and `config` errors.
    pub fn is_internal(&self) -> bool {
        matches!(self.code, "store" | "internal" | "config")
    }

    /// The error as a client may see it: an internal one is logged with its
    /// detail under `correlation` (the request id) and answered with a sentence
    /// that names only that id.
    pub fn public(&self, correlation: &str) -> ApiError {
        if !self.is_internal() {
            return self.clone();
        }
        tracing::error!(
            correlation,
            code = self.code,
            error = %self.message,
            "internal error (detail withheld from the client)"
        );
        let mut e = self.clone();
        e.message = format!(
            "the server could not complete this request ({}); its log has the detail under `{correlation}`",
            if self.code == "store" {
                "the store failed"
            } else {
                "an internal error"
            }
        );
        e
    }

    /// The JSON body for a request id.
    pub fn body(&self, request_id: &str) -> serde_json::Value {
        json!({"code": self.code, "message": self.message, "request_id": request_id})
    }
}

/// The HTTP status for an engine error code.
pub fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidInput
        | ErrorCode::InvalidParameter
        | ErrorCode::EmptyInput
        | ErrorCode::InvalidUtf8
        | ErrorCode::InvalidConversation => StatusCode::BAD_REQUEST,
        ErrorCode::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::NotFound | ErrorCode::DocumentNotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict
        | ErrorCode::RequestConflict
        | ErrorCode::RevisionConflict
        | ErrorCode::Revoked
        | ErrorCode::ForgottenContent
        | ErrorCode::LeaseLost => StatusCode::CONFLICT,
        ErrorCode::ForgetInProgress => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Provider => StatusCode::BAD_GATEWAY,
        ErrorCode::Store | ErrorCode::Timeout => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Config | ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let code = e.code();
        let mut err = ApiError::new(status_for(code), code.as_str(), e.to_string());
        match code {
            ErrorCode::ForgetInProgress => err.retry_after = Some(5),
            ErrorCode::Timeout => err.retry_after = Some(1),
            _ => {}
        }
        err
    }
}

/// The marker a failed response carries until the request middleware writes its
/// body with the request id.
#[derive(Clone, Debug)]
pub struct ErrorMarker(pub ApiError);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(json!({"code": self.code, "message": self.message, "request_id": null})),
        )
            .into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response.extensions_mut().insert(ErrorMarker(self));
        response
    }
}

/// The route result type.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_are_shown_without_their_detail() {
        let e = ApiError::from(Error::store(
            "error returned from database: no such table: feedback (/var/lib/rs/blobs/ab/cd)",
        ));
        let shown = e.public("req_42");
        assert_eq!((shown.status, shown.code), (e.status, "store"));
        assert!(shown.message.contains("req_42"), "{}", shown.message);
        assert!(!shown.message.contains("feedback") && !shown.message.contains("/var"));
        let domain = ApiError::from(Error::invalid_input("bad id `x`"));
        assert_eq!(domain.public("req_42").message, "bad id `x`");
    }

    #[test]
    fn a_store_timeout_is_a_retryable_503() {
        let e = ApiError::from(Error::timeout("a statement ran past its time bound"));
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.code, "timeout");
        assert_eq!(e.retry_after, Some(1));
        let response = e.into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
