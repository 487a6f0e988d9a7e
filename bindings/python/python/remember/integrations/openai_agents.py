"""OpenAI Agents SDK integration: function tools over one memory.

Needs ``openai-agents`` (``pip install 'remember[openai-agents]'``)::

    from agents import Agent
    from remember.integrations.openai_agents import memory_tools

    agent = Agent(name="assistant", instructions="...", tools=memory_tools(memory))

The tools are the engine's four assured read operations — ``resolve_entity``,
``claims_and_sources_context``, ``facts_context``, ``combined_context`` — and
``remember_note``, each described to the model in the engine's own words.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Union, cast

try:
    from agents import FunctionTool, ModelBehaviorError, RunContextWrapper, function_tool
    from agents.tool_context import ToolContext
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "remember.integrations.openai_agents needs openai-agents, which the `openai-agents` extra installs: "
        "pip install 'remember[openai-agents]' (from source: cd bindings/python && "
        "maturin develop --extras openai-agents)"
    ) from e

from .._errors import RememberError
from .._memory import AsyncMemory, Memory
from .._result import Result
from ._records import _envelope_records, _merge, as_memory, compact

__all__ = ["memory_tools", "TOOL_NAMES"]

#: The tools :func:`memory_tools` makes, in order.
TOOL_NAMES = (
    "resolve_entity",
    "claims_and_sources_context",
    "facts_context",
    "combined_context",
    "remember_note",
)

TemporalMode = Literal["current", "at", "overlap", "history"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _negative(envelope: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    negative = envelope.get("negative")
    if not isinstance(negative, Mapping):
        return None
    return {k: negative[k] for k in ("kind", "message") if k in negative}


def _context_output(answer: Result, min_relevance: Optional[float]) -> Dict[str, Any]:
    """The compact answer a model sees: results with their provenance, and what the
    engine said about them (a typed negative, more pages)."""
    envelope = answer.to_dict()
    out: Dict[str, Any] = {}
    if envelope.get("contract") == "ContextBundle/v2":
        parts = {"claims_and_sources": envelope["claims_and_sources"], "facts": envelope["facts"]}
        records = _merge(_envelope_records(parts["claims_and_sources"]), _envelope_records(parts["facts"]))
        negatives = {name: n for name, part in parts.items() if (n := _negative(part)) is not None}
        if negatives:
            out["negative"] = negatives
        if parts["facts"].get("temporal_scope"):
            out["temporal_scope"] = parts["facts"]["temporal_scope"]
    else:
        records = _envelope_records(envelope)
        negative = _negative(envelope)
        if negative is not None:
            out["negative"] = negative
        truncation = envelope.get("truncation") or {}
        if truncation.get("more_available"):
            out["continuation"] = truncation.get("continuation")
        if envelope.get("temporal_scope"):
            out["temporal_scope"] = envelope["temporal_scope"]
    if min_relevance is not None:
        records = [r for r in records if r.relevance is None or r.relevance >= min_relevance]
    if envelope.get("receipt_id"):
        out["receipt_id"] = envelope["receipt_id"]
    return {"results": [compact(r) for r in records], **out}


def tool_error(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """What a failed tool call tells the model: the engine's error code and message
    (written for agents: what was wrong and what to do), or why the arguments did
    not fit the tool's schema; for anything else the SDK's fixed text."""
    if isinstance(error, RememberError):
        return _dumps({"error": {"code": error.code, "message": error.message}})
    if isinstance(error, ModelBehaviorError):
        # The call's arguments did not fit the tool's schema: say how.
        return _dumps({"error": {"code": "invalid_arguments", "message": str(error)}})
    return "An error occurred while running the tool. Please try again."


def _scope(
    temporal_mode: Optional[str], at: Optional[str], from_time: Optional[str], to_time: Optional[str]
) -> Optional[Dict[str, Any]]:
    mode = temporal_mode
    if mode is None:
        if at is not None:
            mode = "at"
        elif from_time is not None or to_time is not None:
            mode = "overlap"
        else:
            return None
    scope: Dict[str, Any] = {"mode": mode}
    if at is not None:
        scope["at"] = at
    if from_time is not None:
        scope["from"] = from_time
    if to_time is not None:
        scope["to"] = to_time
    return scope


def memory_tools(
    memory: Union[Memory, AsyncMemory],
    *,
    k: Optional[int] = None,
    min_relevance: Optional[float] = None,
    envelope: bool = False,
    note_metadata: Optional[Mapping[str, Any]] = None,
    process_notes: bool = True,
    raise_errors: bool = False,
    name_prefix: str = "",
) -> List[FunctionTool]:
    """Function tools over ``memory`` for an OpenAI Agents SDK ``Agent``: the four
    assured operations and ``remember_note`` (see :data:`TOOL_NAMES`).

    The read tools return JSON: by default a compact form — ``results``, best
    first, each with its ``ref`` (``claim:<id>``...), ``kind``, ``text`` and
    provenance (document title, source, section, conversation turn ids, source
    time, validity, relevance), and the engine's typed ``negative`` when nothing
    relevant is remembered; with ``envelope=True`` the operation's whole envelope.
    ``k`` is the default number of results, ``min_relevance`` drops weaker results
    from the compact form.

    ``remember_note`` remembers a note (a new lineage, or a new revision of the
    lineage ``key``), idempotent per tool call (the call id is its request id),
    with ``note_metadata``; with ``process_notes`` (the default) the pipeline runs
    at once so the note is recalled by the next read.

    An engine error (a closed memory, invalid input...) goes back to the model as
    the tool's output, ``{"error": {"code", "message"}}`` (see :func:`tool_error`);
    ``raise_errors=True`` raises it instead.
    ``name_prefix`` prefixes the tools' names (for agents with several memories).
    """
    m = as_memory(memory)
    descriptions = {op.name: str(op.description) for op in m.operations()}

    def tool(name: str, description: Optional[str] = None) -> Callable[[Callable[..., str]], FunctionTool]:
        description = description or descriptions.get(name)
        full_name = f"{name_prefix}{name}"
        decorator = function_tool(
            name_override=full_name,
            description_override=description,
            failure_error_function=None if raise_errors else tool_error,
        )
        return cast(Callable[[Callable[..., str]], FunctionTool], decorator)

    def read(answer: Result) -> str:
        if envelope:
            return answer.to_json()
        return _dumps(_context_output(answer, min_relevance))

    @tool("resolve_entity")
    def resolve_entity(name: str, k: Optional[int] = None) -> str:
        """Find the entities a name may refer to.

        Args:
            name: A person, organisation or thing as named in the question.
            k: How many candidates to return (default 5).
        """
        answer = m.resolve_entity(name, k=k)
        if envelope:
            return answer.to_json()
        data = answer.to_dict()
        results = [
            {key: r.get(key) for key in ("entity_id", "canonical_name", "aliases", "profile", "score")}
            for r in data.get("results") or []
        ]
        out: Dict[str, Any] = {"results": results}
        if data.get("ambiguity"):
            out["ambiguity"] = data["ambiguity"]
        negative = _negative(data)
        if negative is not None:
            out["negative"] = negative
        return _dumps(out)

    default_k = k

    @tool("claims_and_sources_context")
    def claims_and_sources_context(
        query: str, entity_ids: Optional[List[str]] = None, k: Optional[int] = None
    ) -> str:
        """What sources said about a question.

        Args:
            query: The question, in plain words.
            entity_ids: Anchor entities (ids from resolve_entity), or null.
            k: How many results (default 10), or null.
        """
        return read(m.claims_and_sources_context(query, entity_ids=entity_ids, k=k or default_k))

    @tool("facts_context")
    def facts_context(
        query: str,
        entity_ids: Optional[List[str]] = None,
        temporal_mode: Optional[TemporalMode] = None,
        at: Optional[str] = None,
        from_time: Optional[str] = None,
        to_time: Optional[str] = None,
        k: Optional[int] = None,
    ) -> str:
        """What is believed about a question, in a time scope.

        Args:
            query: The question, in plain words.
            entity_ids: Anchor entities (ids from resolve_entity), or null.
            temporal_mode: current (default): what holds now; at: what held at the
                instant `at`; overlap: what held at some point in [from_time, to_time);
                history: everything, closed and superseded included.
            at: An RFC 3339 instant, for temporal_mode at.
            from_time: An RFC 3339 instant, the start for temporal_mode overlap.
            to_time: An RFC 3339 instant, the end for temporal_mode overlap.
            k: How many results (default 10), or null.
        """
        return read(
            m.facts_context(
                query,
                entity_ids=entity_ids,
                temporal_scope=_scope(temporal_mode, at, from_time, to_time),
                k=k or default_k,
            )
        )

    @tool("combined_context")
    def combined_context(
        query: str,
        entity_ids: Optional[List[str]] = None,
        temporal_mode: Optional[TemporalMode] = None,
        at: Optional[str] = None,
        from_time: Optional[str] = None,
        to_time: Optional[str] = None,
    ) -> str:
        """Both what sources said and what is believed about a question.

        Args:
            query: The question, in plain words.
            entity_ids: Anchor entities (ids from resolve_entity), or null.
            temporal_mode: The time scope of the facts: current (default), at, overlap or history.
            at: An RFC 3339 instant, for temporal_mode at.
            from_time: An RFC 3339 instant, the start for temporal_mode overlap.
            to_time: An RFC 3339 instant, the end for temporal_mode overlap.
        """
        return read(
            m.combined_context(
                query,
                entity_ids=entity_ids,
                temporal_scope=_scope(temporal_mode, at, from_time, to_time),
            )
        )

    metadata = dict(note_metadata) if note_metadata else None

    @tool(
        "remember_note",
        "Remember a note: something worth keeping that no document or conversation "
        "holds yet (a decision, a preference, a correction). Give a key to revise an "
        "earlier note of the same key; the newest revision replaces it.",
    )
    def remember_note(ctx: ToolContext[Any], text: str, key: Optional[str] = None) -> str:
        """Remember a note.

        Args:
            text: The note, as a self-contained statement.
            key: A stable key of what the note is about (e.g. "preferences/maria"), to
                revise the earlier note of that key; or null for a new note.
        """
        call = ctx.tool_call_id or uuid.uuid4().hex
        source_key = key or f"agent-note/{uuid.uuid5(uuid.NAMESPACE_URL, f'call:{call}').hex}"
        note = m.remember_note(
            text,
            source_key=source_key,
            source_revision=f"call-{call}",
            request_id=f"openai-agents:{call}",
            metadata=metadata,
        )
        if process_notes:
            m.process_until_idle()
        data = note.to_dict()
        return _dumps({k: data.get(k) for k in ("note_id", "version_id", "source_key", "lifecycle")})

    return [resolve_entity, claims_and_sources_context, facts_context, combined_context, remember_note]
