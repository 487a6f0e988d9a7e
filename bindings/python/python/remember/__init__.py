"""RememberStack for Python: an embeddable memory engine for AI agents.

The same Rust engine as the ``remember`` CLI and the HTTP server, in process::

    import remember

    with remember.Memory("memory.db") as memory:
        memory.ingest_text("Ada Lovelace wrote the first program.", source_ref="notes/ada")
        memory.process_until_idle()
        bundle = memory.combined_context("Who wrote the first program?")
        for item in bundle.claims_and_sources.results:
            print(item.text)

:class:`Memory` blocks (releasing the GIL); :class:`AsyncMemory` has the same
methods as coroutines. Results are :class:`Result` objects whose ``to_dict()`` is
the JSON the CLI prints with ``--json``; errors are :class:`RememberError`
subclasses carrying the engine's ``code``.
"""

from ._errors import (
    ERRORS,
    ClosedError,
    ConfigError,
    Conflict,
    DocumentNotFound,
    EmptyInput,
    ForgetInProgress,
    ForgottenContent,
    InternalError,
    InvalidConversation,
    InvalidInput,
    InvalidParameter,
    InvalidUtf8,
    LeaseLost,
    NotFound,
    ProviderError,
    RememberError,
    RequestConflict,
    RevisionConflict,
    Revoked,
    StoreError,
    TooLarge,
)
from ._memory import AsyncMemory, Memory
from ._native import __version__
from ._result import Result

__all__ = [
    "Memory",
    "AsyncMemory",
    "Result",
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
    "InternalError",
    "ClosedError",
    "ERRORS",
    "__version__",
]
