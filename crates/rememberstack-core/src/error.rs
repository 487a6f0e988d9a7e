//! The core error type: a typed code for machines and a sentence for people.

use serde::Serialize;

/// A stable, machine-readable error code. Serialized in snake_case; the CLI
/// prints it as `{"code", "message"}` with `--json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The caller's input is malformed (a bad id, a bad flag value, bad JSON).
    InvalidInput,
    /// An operation's input does not satisfy its schema (a missing or extra field,
    /// a value out of range).
    InvalidParameter,
    /// The input is empty.
    EmptyInput,
    /// The input exceeds the configured maximum source size.
    TooLarge,
    /// A text format that is not valid UTF-8.
    InvalidUtf8,
    /// A conversation document that does not follow the conversation shape.
    InvalidConversation,
    /// A record that does not exist in this namespace.
    NotFound,
    /// A document lineage that does not exist in this namespace, or that is already
    /// deleted and has nothing left to finish.
    DocumentNotFound,
    /// The request conflicts with the stored state (e.g. a lineage's versioning mode).
    Conflict,
    /// A request id was reused with a different input.
    RequestConflict,
    /// A note's source key and revision already hold different text.
    RevisionConflict,
    /// A note revision was revoked: it can never be remembered again.
    Revoked,
    /// The bytes were forgotten (hard forget): they can never be ingested again.
    ForgottenContent,
    /// A hard forget in this namespace is incomplete: every read and write fails
    /// closed until it is resumed and completed.
    ForgetInProgress,
    /// A worker's lease on a work item expired and another worker holds it now.
    LeaseLost,
    /// A provider (embedder, chat model) failed.
    Provider,
    /// The configuration is invalid.
    Config,
    /// The store failed (database, blob directory).
    Store,
    /// A store statement ran past its time bound (the statement or lock timeout)
    /// and was cancelled: nothing of its transaction was kept. Safe to retry.
    Timeout,
    /// An invariant was violated inside the engine: a bug.
    Internal,
}

impl ErrorCode {
    /// The snake_case form.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::EmptyInput => "empty_input",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::InvalidUtf8 => "invalid_utf8",
            ErrorCode::InvalidConversation => "invalid_conversation",
            ErrorCode::NotFound => "not_found",
            ErrorCode::DocumentNotFound => "document_not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::RequestConflict => "request_conflict",
            ErrorCode::RevisionConflict => "revision_conflict",
            ErrorCode::Revoked => "revoked",
            ErrorCode::ForgottenContent => "forgotten_content",
            ErrorCode::ForgetInProgress => "forget_in_progress",
            ErrorCode::LeaseLost => "lease_lost",
            ErrorCode::Provider => "provider",
            ErrorCode::Config => "config",
            ErrorCode::Store => "store",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Internal => "internal",
        }
    }
}

/// The core error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A caller error or a domain refusal, with its code.
    #[error("{message}")]
    Domain {
        /// The machine-readable code.
        code: ErrorCode,
        /// What was wrong and what to do.
        message: String,
    },
    /// A provider failure.
    #[error(transparent)]
    Provider(#[from] crate::embed::ProviderError),
    /// A store failure (database or blob directory), with the store's message.
    #[error("store error: {0}")]
    Store(String),
}

/// Core result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Build a domain error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error::Domain {
            code,
            message: message.into(),
        }
    }
    /// `invalid_input`.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }
    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }
    /// `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    /// A store failure.
    pub fn store(message: impl std::fmt::Display) -> Self {
        Error::Store(message.to_string())
    }
    /// `timeout`.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Timeout, message)
    }
    /// The machine-readable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Domain { code, .. } => *code,
            Error::Provider(_) => ErrorCode::Provider,
            Error::Store(_) => ErrorCode::Store,
        }
    }
}
