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

from . import _errors
from ._errors import *  # noqa: F403 - the exception classes and ERRORS, as _errors lists them
from ._memory import AsyncMemory, Memory
from ._native import __version__
from ._result import Result

__all__ = ["Memory", "AsyncMemory", "Result", "__version__"]
__all__ += _errors.__all__
