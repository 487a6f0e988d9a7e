"""The native extension module (Rust, PyO3). Not for direct use: see `remember.Memory`."""

from typing import List, Optional, Tuple

__version__: str

class NativeMemory:
    """A handle on one memory (one engine, one namespace)."""

    @staticmethod
    def open(
        path: Optional[str],
        namespace: str,
        config_file: Optional[str] = None,
        config_json: Optional[str] = None,
    ) -> Tuple[str, str, Optional["NativeMemory"]]:
        """`("ok", "", handle)` or `(error code, message, None)`."""
    @staticmethod
    def methods() -> List[str]:
        """The names of every call `call` answers."""
    def call(self, method: str, args: str) -> Tuple[str, str]:
        """`("ok", result JSON)` or `(error code, message)`."""
    def share(self, namespace: str) -> Tuple[str, str, Optional["NativeMemory"]]:
        """The same memory in another namespace: `("ok", "", handle)` or `(code, message, None)`."""
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def namespace(self) -> str: ...
