"""Typed results: attribute access over the engine's JSON, which is kept as is."""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Iterator, List


def wrap(value: Any) -> Any:
    """Wrap a decoded JSON value: objects become :class:`Result`, lists are wrapped
    item by item, scalars stay as they are."""
    if isinstance(value, dict):
        return Result(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


class Result:
    """One result of the engine: an envelope, a receipt, a report, a record.

    Fields read as attributes (``env.results[0].text``), nested objects as
    :class:`Result` and lists as lists. A field named after a Python keyword reads
    with a trailing underscore (``scope.from_``) or by item (``scope["from"]``).
    :meth:`to_dict` returns exactly the JSON the Rust facade serialized — the JSON
    the CLI prints with ``--json`` and the HTTP API returns.
    """

    __slots__ = ("_data",)
    _data: Dict[str, Any]

    def __init__(self, data: Dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if name in data:
            return wrap(data[name])
        if name.endswith("_") and name[:-1] in data:
            return wrap(data[name[:-1]])
        raise AttributeError(
            f"this {type(self).__name__} has no field `{name}` (fields: {', '.join(data)})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("results are read-only; use to_dict() for a mutable copy")

    def __getitem__(self, key: str) -> Any:
        return wrap(self._data[key])

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | {k for k in self._data if k.isidentifier()})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Result):
            return self._data == other._data
        if isinstance(other, dict):
            return self._data == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        text = json.dumps(self._data, ensure_ascii=False)
        if len(text) > 300:
            text = text[:297] + "..."
        return f"Result({text})"

    def fields(self) -> List[str]:
        """The field names, in the engine's order."""
        return list(self._data)

    def to_dict(self) -> Dict[str, Any]:
        """A deep copy of the JSON object, exactly as the engine serialized it."""
        return copy.deepcopy(self._data)

    def to_json(self, **kwargs: Any) -> str:
        """The JSON text (``json.dumps`` keyword arguments apply)."""
        kwargs.setdefault("ensure_ascii", False)
        return json.dumps(self._data, **kwargs)
