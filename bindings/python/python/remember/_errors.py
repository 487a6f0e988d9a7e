"""Exception classes: one per engine error code, all under :class:`RememberError`."""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "RememberError",
    "InvalidInput",
    "InvalidParameter",
    "EmptyInput",
    "TooLarge",
    "InvalidUtf8",
    "InvalidConversation",
    "NotFound",
    "DocumentNotFound",
    "Conflict",
    "RequestConflict",
    "RevisionConflict",
    "Revoked",
    "ForgottenContent",
    "ForgetInProgress",
    "LeaseLost",
    "ProviderError",
    "ConfigError",
    "StoreError",
    "Timeout",
    "InternalError",
    "ClosedError",
    "ERRORS",
]


class RememberError(Exception):
    """Base class of every error the engine reports.

    ``code`` is the engine's machine-readable error code (the same string the CLI
    prints as ``{"code", "message"}`` and the HTTP API returns); ``message`` says
    what was wrong and what to do.
    """

    code: str = "error"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class InvalidInput(RememberError, ValueError):
    """``invalid_input``: malformed input (a bad id, a bad value, a wrong type)."""

    code = "invalid_input"


class InvalidParameter(InvalidInput):
    """``invalid_parameter``: an operation's input does not satisfy its schema."""

    code = "invalid_parameter"


class EmptyInput(InvalidInput):
    """``empty_input``: the input is empty."""

    code = "empty_input"


class TooLarge(InvalidInput):
    """``too_large``: the input exceeds the configured maximum source size."""

    code = "too_large"


class InvalidUtf8(InvalidInput):
    """``invalid_utf8``: a text format that is not valid UTF-8."""

    code = "invalid_utf8"


class InvalidConversation(InvalidInput):
    """``invalid_conversation``: a conversation that does not follow the conversation shape."""

    code = "invalid_conversation"


class NotFound(RememberError, LookupError):
    """``not_found``: a record (or an operation) that does not exist in this namespace."""

    code = "not_found"


class DocumentNotFound(NotFound):
    """``document_not_found``: no such document lineage (or it is already deleted)."""

    code = "document_not_found"


class Conflict(RememberError):
    """``conflict``: the request conflicts with the stored state (e.g. a stale ``expected_version``)."""

    code = "conflict"


class RequestConflict(Conflict):
    """``request_conflict``: a request id was reused with a different input."""

    code = "request_conflict"


class RevisionConflict(Conflict):
    """``revision_conflict``: a note's source key and revision already hold different text."""

    code = "revision_conflict"


class Revoked(RememberError):
    """``revoked``: a note revision was revoked and can never be remembered again."""

    code = "revoked"


class ForgottenContent(RememberError):
    """``forgotten_content``: the bytes were hard-forgotten and can never be ingested again."""

    code = "forgotten_content"


class ForgetInProgress(RememberError):
    """``forget_in_progress``: a hard forget in this namespace is incomplete."""

    code = "forget_in_progress"


class LeaseLost(RememberError):
    """``lease_lost``: a worker's lease on a work item expired."""

    code = "lease_lost"


class ProviderError(RememberError):
    """``provider``: a provider (embedder, chat model) failed."""

    code = "provider"


class ConfigError(RememberError):
    """``config``: the configuration is invalid."""

    code = "config"


class StoreError(RememberError):
    """``store``: the store failed (database, blob directory)."""

    code = "store"


class Timeout(RememberError, TimeoutError):
    """``timeout``: a store statement ran past its time bound and was cancelled;
    nothing of it was kept. Safe to retry."""

    code = "timeout"


class InternalError(RememberError):
    """``internal``: an invariant was violated inside the engine (a bug)."""

    code = "internal"


class ClosedError(RememberError):
    """``closed``: the :class:`~remember.Memory` was closed; open a new one."""

    code = "closed"


#: Every error code the engine reports, with its exception class.
ERRORS: Dict[str, Type[RememberError]] = {
    cls.code: cls
    for cls in (
        InvalidInput,
        InvalidParameter,
        EmptyInput,
        TooLarge,
        InvalidUtf8,
        InvalidConversation,
        NotFound,
        DocumentNotFound,
        Conflict,
        RequestConflict,
        RevisionConflict,
        Revoked,
        ForgottenContent,
        ForgetInProgress,
        LeaseLost,
        ProviderError,
        ConfigError,
        StoreError,
        Timeout,
        InternalError,
        ClosedError,
    )
}


def error_for(code: str, message: str) -> RememberError:
    """The exception for an engine error code (a :class:`RememberError` for a code
    this version does not know)."""
    cls = ERRORS.get(code)
    if cls is None:
        return RememberError(message, code)
    return cls(message)
