"""`Memory` and `AsyncMemory`: the engine in process."""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar, Union

from . import _native
from ._errors import ClosedError, ConfigError, InternalError, InvalidInput, InvalidParameter, error_for
from ._result import Result

__all__ = ["Memory", "AsyncMemory", "PathLike"]

PathLike = Union[str, "os.PathLike[str]"]
T = TypeVar("T")

DEFAULT_NAMESPACE = "default"


def _json_default(value: Any) -> Any:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidInput(
                f"datetime {value.isoformat()} has no time zone: give tzinfo (e.g. datetime.timezone.utc)"
            )
        return value.isoformat()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _dumps(value: Any, error: Callable[[str], Exception] = InvalidInput) -> str:
    try:
        return json.dumps(value, default=_json_default, allow_nan=False)
    except (TypeError, ValueError) as e:
        if isinstance(e, InvalidInput):
            raise
        raise error(f"arguments cannot be sent to the engine: {e}") from None


def _given(args: Mapping[str, Any]) -> Dict[str, Any]:
    """The arguments that were given (``None`` means: the engine's default)."""
    return {k: v for k, v in args.items() if v is not None}


def _instant(value: Any) -> Any:
    if isinstance(value, _dt.datetime):
        return _json_default(value)
    return value


def _path(value: Any, what: str) -> str:
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise InvalidInput(f"{what} must be a str or an os.PathLike, not {type(value).__name__}")


def _scope(value: Any) -> Any:
    # "history" is shorthand for {"mode": "history"}.
    if isinstance(value, str):
        return {"mode": value}
    return value


_DOCUMENT_SCOPE = ("document_ids", "file_name", "title", "author", "from", "to")


def _scoped(filters: Dict[str, Any]) -> Dict[str, Any]:
    # A search's document scope travels as one `documents` object.
    scope = _given({k: filters.pop(k) for k in _DOCUMENT_SCOPE if k in filters})
    if scope:
        filters["documents"] = scope
    return filters


def _filters(filters: Dict[str, Any]) -> Dict[str, Any]:
    # `from` is a Python keyword: `from_=` is accepted for it.
    if "from_" in filters:
        if "from" in filters:
            raise InvalidInput("give `from` or `from_`, not both")
        filters["from"] = filters.pop("from_")
    return filters


class Memory:
    """A memory: the RememberStack engine in this process, over one store and one namespace.

    ``Memory(path)`` opens (or creates) the embedded SQLite store at ``path``; with
    ``path=None`` it uses ``REMEMBERSTACK_DB``, else ``memory.db`` under the user's
    data directory, as the CLI does. :meth:`connect` opens a PostgreSQL store.

    The configuration is the CLI's: the TOML file ``config_file`` (else the one
    ``REMEMBERSTACK_CONFIG`` names), then the ``REMEMBERSTACK_*`` environment. The
    ``config`` dict (in the file's shape: ``engine``, ``embedder``, ``chat``,
    ``store`` sections) overrides it section by section; ``embedder=`` and ``chat=``
    are shorthands for those two sections. Without any of it the memory runs
    offline: a deterministic hashing embedder and the offline extractor.

    Every method blocks until the engine answers and releases the GIL meanwhile;
    handles may be shared by threads. Results are :class:`~remember.Result` objects
    whose ``to_dict()`` is the JSON the CLI prints with ``--json``. Errors raise a
    subclass of :class:`~remember.RememberError` named after the engine's code.
    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: Optional[PathLike] = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        config: Optional[Mapping[str, Any]] = None,
        config_file: Optional[PathLike] = None,
        embedder: Optional[Mapping[str, Any]] = None,
        chat: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self._native: Optional[_native.NativeMemory] = None
        if not isinstance(namespace, str):
            raise InvalidInput(f"namespace must be a str, not {type(namespace).__name__}")
        overlay: Dict[str, Any] = {}
        if config is not None:
            if not isinstance(config, Mapping):
                raise InvalidInput(f"config must be a dict of sections, not {type(config).__name__}")
            overlay.update(config)
        for name, section in (("embedder", embedder), ("chat", chat)):
            if section is not None:
                if not isinstance(section, Mapping):
                    raise InvalidInput(f"{name} must be a dict, not {type(section).__name__}")
                overlay[name] = dict(section)
        status, message, native = _native.NativeMemory.open(
            None if path is None else _path(path, "path"),
            namespace,
            None if config_file is None else _path(config_file, "config_file"),
            _dumps(overlay) if overlay else None,
        )
        if status != "ok" or native is None:
            raise error_for(status, message)
        self._native = native

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        config: Optional[Mapping[str, Any]] = None,
        config_file: Optional[PathLike] = None,
        embedder: Optional[Mapping[str, Any]] = None,
        chat: Optional[Mapping[str, Any]] = None,
    ) -> "Memory":
        """Connect to the PostgreSQL store at ``url`` (``postgres://user@host:port/db``;
        PostgreSQL 16+ with the ``vector`` extension). Its migrations are applied
        before it serves."""
        if not isinstance(url, str) or not url.startswith(("postgres://", "postgresql://")):
            raise ConfigError(f"`{url}` is not a PostgreSQL URL (postgres://user@host:port/database)")
        return cls(
            url,
            namespace=namespace,
            config=config,
            config_file=config_file,
            embedder=embedder,
            chat=chat,
        )

    # ------------------------------------------------------------------ plumbing

    def _raw(
        self,
        method: str,
        args: Mapping[str, Any],
        error: Callable[[str], Exception] = InvalidInput,
    ) -> Any:
        native = self._native
        if native is None:
            raise ClosedError("this Memory is closed: open a new one")
        payload = _dumps(dict(args), error)
        status, text = native.call(method, payload)
        if status != "ok":
            raise error_for(status, text)
        return json.loads(text)

    def _call(self, method: str, **args: Any) -> Result:
        value = self._raw(method, _given(args))
        if not isinstance(value, dict):
            raise InternalError(f"{method} answered {type(value).__name__}, not an object")
        return Result(value)

    def _call_list(self, method: str, key: str, **args: Any) -> List[Result]:
        # Listings come wrapped as the CLI and HTTP wrap them: {key: [...]}.
        value = self._raw(method, _given(args))
        items = value.get(key) if isinstance(value, dict) else None
        if not isinstance(items, list) or not all(isinstance(v, dict) for v in items):
            raise InternalError(f"{method} answered {type(value).__name__}, not a list of objects")
        return [Result(v) for v in items]

    @staticmethod
    def methods() -> List[str]:
        """The names of every call :meth:`call` answers: the engine's operation
        table, the same names as the CLI's ``remember call --list``."""
        return list(_native.NativeMemory.methods())

    def call(self, method: str, input: Optional[Mapping[str, Any]] = None) -> Result:
        """Run any call of the engine by its name with its JSON input: the fields
        MCP's tool of that name and the CLI's ``remember call`` take, omitted ones at
        their defaults. Every call is reachable this way, with or without a named
        method here; the named methods are this with Python's types. The result is
        the call's JSON object (a listing comes wrapped, e.g. ``{"documents": [...]}``).
        An unknown name or a field the call does not take is
        :class:`~remember.InvalidInput`."""
        if not isinstance(method, str):
            raise InvalidInput(f"the call's name must be a str, not {type(method).__name__}")
        if input is None:
            input = {}
        if not isinstance(input, Mapping):
            raise InvalidInput(f"a call's input must be a dict, not {type(input).__name__}")
        value = self._raw(method, input)
        if not isinstance(value, dict):
            raise InternalError(f"{method} answered {type(value).__name__}, not an object")
        return Result(value)

    @property
    def namespace(self) -> str:
        """The namespace this handle reads and writes."""
        if self._native is None:
            raise ClosedError("this Memory is closed: open a new one")
        return self._native.namespace

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native is None or self._native.closed

    def close(self) -> None:
        """Close the memory: later calls raise :class:`~remember.ClosedError`. Calls
        already running finish first. Closing twice is harmless."""
        native, self._native = self._native, None
        if native is not None:
            native.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._native is None:
            return "<remember.Memory closed>"
        return f"<remember.Memory namespace={self._native.namespace!r}>"

    # ------------------------------------------------------------------ ingest

    def ingest_file(
        self,
        path: PathLike,
        *,
        kind: Optional[str] = None,
        source_ref: Optional[str] = None,
        source_time: Union[str, _dt.datetime, None] = None,
        mode: Optional[str] = None,
        thread_ref: Optional[str] = None,
    ) -> Result:
        """Ingest a file. ``kind``: ``auto`` (default), ``markdown``, ``text``,
        ``html``, ``json``, ``ndjson`` or ``conversation``. Without ``source_ref`` the
        lineage is the file's canonical absolute path, so re-ingesting an edited
        file makes a new version. ``source_time`` (RFC 3339 or an aware datetime)
        defaults to the file's modification time; ``mode`` is ``snapshot`` or
        ``living``. Returns the ingest receipt (``document_id``, ``version_id``,
        ``outcome``...). Run :meth:`process_until_idle` to process it."""
        return self._call(
            "ingest_file",
            path=_path(path, "path"),
            kind=kind,
            source_ref=source_ref,
            source_time=_instant(source_time),
            mode=mode,
            thread_ref=thread_ref,
        )

    def ingest_text(
        self,
        text: str,
        *,
        source_ref: Optional[str] = None,
        kind: Optional[str] = None,
        source_time: Union[str, _dt.datetime, None] = None,
        mode: Optional[str] = None,
        thread_ref: Optional[str] = None,
    ) -> Result:
        """Ingest Markdown (or ``kind``) text under the lineage ``("text", source_ref)``;
        ``source_ref`` is required. Returns the ingest receipt."""
        return self._call(
            "ingest_text",
            text=text,
            source_ref=source_ref,
            kind=kind,
            source_time=_instant(source_time),
            mode=mode,
            thread_ref=thread_ref,
        )

    def ingest_conversation(
        self,
        conversation: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        *,
        source_ref: Optional[str] = None,
        source_time: Union[str, _dt.datetime, None] = None,
        mode: Optional[str] = None,
        thread_ref: Optional[str] = None,
    ) -> Result:
        """Ingest a conversation under the lineage ``("conversation", source_ref)``.
        ``conversation`` has the shape the CLI reads: ``{"session_time"?: RFC 3339,
        "messages": [{"speaker", "text", "event_id"?, "timestamp"?}, ...]}`` or a
        bare list of messages. Each message becomes one turn. Returns the receipt."""
        return self._call(
            "ingest_conversation",
            conversation=conversation,
            source_ref=source_ref,
            source_time=_instant(source_time),
            mode=mode,
            thread_ref=thread_ref,
        )

    def append_messages(
        self,
        conversation_ref: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        source_time: Union[str, _dt.datetime, None] = None,
    ) -> Result:
        """Append messages (each with an ``event_id``) to the conversation
        ``conversation_ref``, created on first use. A replayed message is skipped;
        an ``event_id`` holding a different message is a :class:`~remember.Conflict`
        and nothing changes. Returns the append receipt."""
        return self._call(
            "append_messages",
            conversation_ref=conversation_ref,
            messages=messages,
            source_time=_instant(source_time),
        )

    def conversation_messages(self, conversation_ref: str) -> Result:
        """The messages of the conversation ``conversation_ref``, in order, exactly as
        they were ingested and appended, processed or not (``messages``,
        ``session_time``, ``document_id``, ``version_id``). An unknown or deleted
        conversation is :class:`~remember.DocumentNotFound`."""
        return self._call("conversation_messages", conversation_ref=conversation_ref)

    # ------------------------------------------------------------------ notes

    def remember_note(
        self,
        text: str,
        *,
        source_key: str,
        source_revision: str,
        request_id: str,
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> Result:
        """Remember a note revision (an explicit memory write), idempotent by
        ``request_id``. Returns the note record (``version_id``,
        ``lifecycle``, ``lifecycle_version``...)."""
        return self._call(
            "remember_note",
            text=text,
            source_key=source_key,
            source_revision=source_revision,
            request_id=request_id,
            metadata=metadata,
        )

    def promote_note(self, version_id: str, expected_version: int) -> Result:
        """Promote a note revision if its lifecycle version is still
        ``expected_version`` (else :class:`~remember.Conflict`)."""
        return self._call("promote_note", version_id=version_id, expected_version=expected_version)

    def archive_note(self, version_id: str, expected_version: int) -> Result:
        """Archive a promoted note revision if its lifecycle version is still
        ``expected_version``: it stops being served."""
        return self._call("archive_note", version_id=version_id, expected_version=expected_version)

    def revoke_note(self, version_id: str, expected_version: int) -> Result:
        """Revoke a note revision if its lifecycle version is still
        ``expected_version``: its text and derived records are removed for good."""
        return self._call("revoke_note", version_id=version_id, expected_version=expected_version)

    def list_notes(self, *, cursor: Optional[str] = None, limit: Optional[int] = None) -> Result:
        """Note revisions' metadata (never text), a page at a time (``notes``,
        ``cursor``)."""
        return self._call("list_notes", cursor=cursor, limit=limit)

    def set_note_policy(self, start_as: str) -> Result:
        """The state new notes start in: ``promoted`` (default) or ``candidate``."""
        return self._call("set_note_policy", start_as=start_as)

    def forget_note(self, note_id: str) -> Result:
        """Hard-forget every revision of the note lineage ``note_id``."""
        return self._call("forget_note", note_id=note_id)

    # ------------------------------------------------------------------ pipeline

    def process_until_idle(self) -> Result:
        """Run the work ledger in this process until nothing is left to do. Returns
        the drain report (``completed``, ``retried``, ``dead_lettered``, ...)."""
        return self._call("process_until_idle")

    def status(self) -> Result:
        """The work ledger's status for this namespace."""
        return self._call("status")

    def doctor(self) -> Result:
        """Check the store and each configured provider with one cheap call each."""
        return self._call("doctor")

    # ------------------------------------------------------------------ reads

    def search(self, query: str, k: Optional[int] = None, **filters: Any) -> Result:
        """Hybrid search (lexical and semantic, fused; ``k`` results, default 10). Filters: ``grain``
        (``chunks`` default, ``claims``, ``facts``), ``roles``, ``cursor``,
        ``include_retired``, ``entities``, ``exact``, and the document scope
        ``document_ids``, ``file_name``, ``title``, ``author``, ``from_``, ``to``.
        Returns the envelope (``results``, ``truncation``, ...)."""
        return self._call("search", query=query, k=k, **_scoped(_filters(filters)))

    def search_claims(self, query: str, k: Optional[int] = None, **filters: Any) -> Result:
        """:meth:`search` over claims (current testimony)."""
        return self.search(query, k, grain="claims", **filters)

    def search_facts(self, query: str, k: Optional[int] = None, **filters: Any) -> Result:
        """:meth:`search` over facts."""
        return self.search(query, k, grain="facts", **filters)

    def operations(self) -> List[Result]:
        """The operation registry: each operation's name, description, input schema,
        grain and version."""
        return self._call_list("operations", "operations")

    def run_operation(self, name: str, input: Optional[Mapping[str, Any]] = None) -> Result:
        """Run an operation of the registry by name with its JSON input (the same
        JSON as the CLI's ``operations run --input`` and ``POST /operations/{name}``).
        An unknown name is :class:`~remember.NotFound`; input that does not fit the
        schema is :class:`~remember.InvalidParameter`."""
        if not isinstance(name, str):
            raise InvalidInput(f"the operation name must be a str, not {type(name).__name__}")
        if input is None:
            input = {}
        if not isinstance(input, Mapping):
            raise InvalidParameter(f"an operation's input must be a dict, not {type(input).__name__}")
        value = self._raw("run_operation", {"name": name, "input": dict(input)}, InvalidParameter)
        if not isinstance(value, dict):
            raise InternalError(f"{name} answered {type(value).__name__}, not an object")
        return Result(value)

    def resolve_entity(self, query: str, *, k: Optional[int] = None) -> Result:
        """``resolve_entity``: the entities a name may refer to, ranked; ambiguity
        explicit."""
        return self.run_operation("resolve_entity", _given({"name": query, "k": k}))

    def claims_and_sources_context(self, query: str, **input: Any) -> Result:
        """``claims_and_sources_context``: claims and source chunks for a question.
        Keyword arguments are the operation's input fields (``entity_ids``, ``k``,
        ``budget``, ``cursor``, ``record_receipt``, ``request_id``, ``subject``,
        ``purpose``)."""
        return self.run_operation("claims_and_sources_context", {"query": query, **_given(input)})

    def facts_context(self, query: str, **input: Any) -> Result:
        """``facts_context``: relations and observations for a question in a time
        scope. Keyword arguments are the operation's input fields (``entity_ids``,
        ``temporal_scope``, ``k``, ``budget``, ...); ``temporal_scope`` may be a
        mode string such as ``"history"``."""
        if "temporal_scope" in input:
            input["temporal_scope"] = _scope(input["temporal_scope"])
        return self.run_operation("facts_context", {"query": query, **_given(input)})

    def combined_context(
        self,
        query: str,
        *,
        entity_ids: Optional[Sequence[str]] = None,
        temporal_scope: Union[str, Mapping[str, Any], None] = None,
        **input: Any,
    ) -> Result:
        """``combined_context``: both context operations as one ``ContextBundle/v2``
        (facts and evidence, each with its provenance)."""
        return self.run_operation(
            "combined_context",
            {
                "query": query,
                **_given({"entity_ids": entity_ids, "temporal_scope": _scope(temporal_scope)}),
                **_given(input),
            },
        )

    def adjacent_chunks(self, chunk_id: str, window: Optional[int] = None) -> Result:
        """The chunks around a chunk in its version (``window`` 1–2 on each side;
        default 1)."""
        return self._call("adjacent_chunks", chunk_id=chunk_id, window=window)

    def search_documents(self, query: str = "", k: Optional[int] = None, **filters: Any) -> Result:
        """Documents by name and content, with the filters ``file_name``,
        ``title``, ``author``, ``from_`` and ``to``."""
        return self._call("search_documents", query=query, k=k, **_filters(filters))

    def trace(self, fact_id: str) -> Result:
        """A fact with its evidence claims, adjudications and entity resolutions."""
        return self._call("trace", fact_id=fact_id)

    def resolve_receipt(self, receipt_id: str) -> Result:
        """Re-check a recall receipt's records against current authority."""
        return self._call("resolve_receipt", receipt_id=receipt_id)

    def inspect_receipt(self, receipt_id: str) -> Result:
        """A recall receipt as stored: ids, versions, digests, scores; no text."""
        return self._call("inspect_receipt", receipt_id=receipt_id)

    def documents(self) -> List[Result]:
        """Document lineages in this namespace."""
        return self._call_list("documents", "documents")

    def document(self, doc_id: str) -> Result:
        """One document with its versions and sections."""
        return self._call("document", document_id=doc_id)

    def entities(self, *, include_merged: bool = False, limit: Optional[int] = None) -> List[Result]:
        """Entities in this namespace, oldest first."""
        return self._call_list("entities", "entities", include_merged=include_merged, limit=limit)

    def entity(self, name_or_id: str) -> Result:
        """One entity by id or exact name, with its facts, mentions and merges."""
        return self._call("entity", name_or_id=name_or_id)

    def claims(self, *, document_id: Optional[str] = None, include_retired: bool = False) -> List[Result]:
        """Claims in this namespace (optionally of one document), newest first."""
        return self._call_list(
            "claims", "claims", document_id=document_id, include_retired=include_retired
        )

    def claim_decisions(self, doc_id: str) -> List[Result]:
        """The extraction ledger of a document: kept, dropped and rejected sentences."""
        return self._call_list("claim_decisions", "decisions", document_id=doc_id)

    def facts(
        self,
        *,
        entity_id: Optional[str] = None,
        at: Union[str, _dt.datetime, None] = None,
        history: bool = False,
        limit: Optional[int] = None,
    ) -> List[Result]:
        """Facts of this namespace (of one entity, merges followed): those holding now,
        or ``at`` an instant, or every one with ``history=True``."""
        return self._call_list(
            "facts", "facts", entity_id=entity_id, at=_instant(at), history=history, limit=limit
        )

    def facts_page(
        self,
        *,
        entity_id: Optional[str] = None,
        at: Union[str, _dt.datetime, None] = None,
        history: bool = False,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Result:
        """One page of :meth:`facts` (``facts``, and ``cursor`` while more follow):
        pass ``cursor`` back with the same query for the next page. A page holds at
        most 1,000 facts."""
        return self._call(
            "facts",
            entity_id=entity_id,
            at=_instant(at),
            history=history,
            limit=limit,
            cursor=cursor,
        )

    def predicates(self) -> List[Result]:
        """The namespace's predicate registry."""
        return self._call_list("predicates", "predicates")

    def neighborhood(
        self,
        entity_ids: Sequence[str],
        *,
        depth: Optional[int] = None,
        predicates: Optional[Sequence[str]] = None,
        temporal_scope: Optional[Mapping[str, Any]] = None,
    ) -> Result:
        """Relations reachable from ``entity_ids`` in up to ``depth`` hops (1-3), with
        the path to each; ``predicates`` and ``temporal_scope`` apply at every hop."""
        return self._call(
            "neighborhood",
            entity_ids=list(entity_ids),
            depth=depth,
            predicates=None if predicates is None else list(predicates),
            temporal_scope=_scope(temporal_scope),
        )

    def hydrate(self, records: Sequence[str]) -> Result:
        """Full records by reference (``fact:<id>``, ``claim:<id>``, ``chunk:<id>``)."""
        return self._call("hydrate", records=list(records))

    def with_namespace(self, namespace: str) -> "Memory":
        """The same memory (one engine, one store) reading and writing ``namespace``.
        Closing either handle leaves the other open."""
        native = self._native
        if native is None:
            raise ClosedError("this Memory is closed: open a new one")
        if not isinstance(namespace, str):
            raise InvalidInput(f"namespace must be a str, not {type(namespace).__name__}")
        status, message, shared = native.share(namespace)
        if status != "ok" or shared is None:
            raise error_for(status, message)
        other = Memory.__new__(Memory)
        other._native = shared
        return other

    # ------------------------------------------------------------------ writes

    def merge_entities(self, from_id: str, into_id: str) -> Result:
        """Merge entity ``from_id`` into ``into_id`` (a reversible redirect)."""
        return self._call("merge_entities", **{"from": from_id, "into": into_id})

    def unmerge_entities(self, merge_id: str) -> Result:
        """Undo a merge: the exact prior membership comes back."""
        return self._call("unmerge_entities", merge_id=merge_id)

    def merge_proposals(self) -> List[Result]:
        """The merges this namespace's names propose: each one-word name that
        abbreviates exactly one longer name, with its rule and reason; those marked
        ``automatic`` the idle pipeline merges by itself."""
        return self._call_list("merge_proposals", "proposals")

    def accept_merge_proposal(self, from_id: str, into_id: str) -> Result:
        """Accept a proposal: an ordinary, reversible merge recording its rule."""
        return self._call("accept_merge_proposal", **{"from": from_id, "into": into_id})

    def reject_merge_proposal(self, from_id: str, into_id: str) -> Result:
        """Reject a proposal: the pair becomes cannot-link, never proposed again."""
        return self._call("reject_merge_proposal", **{"from": from_id, "into": into_id})

    def delete_document(self, doc_id: str) -> Result:
        """Delete a document lineage (soft and auditable): its claims stop being
        current testimony. An unknown id is :class:`~remember.DocumentNotFound`."""
        return self._call("delete_document", document_id=doc_id)

    def forget_document(self, doc_id: str) -> Result:
        """Hard-forget a document lineage: its bytes and everything derived from them
        are removed and verified gone. Returns the forget report."""
        return self._call("forget_document", document_id=doc_id)

    def retract_claim(self, claim_id: str, reason: str, *, request_id: Optional[str] = None) -> Result:
        """Retract a claim with a reason."""
        return self._call("retract_claim", id=claim_id, reason=reason, request_id=request_id)

    def invalidate_fact(self, fact_id: str, reason: str, *, request_id: Optional[str] = None) -> Result:
        """Invalidate a fact with a reason: the belief ends now."""
        return self._call("invalidate_fact", id=fact_id, reason=reason, request_id=request_id)

    def correct_fact(
        self, fact_id: str, statement: str, reason: str, *, request_id: Optional[str] = None
    ) -> Result:
        """Correct a fact: invalidate it and remember the corrected statement as a note."""
        return self._call(
            "correct_fact", fact_id=fact_id, statement=statement, reason=reason, request_id=request_id
        )

    def feedback(
        self, receipt_id: str, item_ref: str, rating: str, *, comment: Optional[str] = None
    ) -> Result:
        """Rate one item (``kind:id``) a recall receipt selected: ``useful``,
        ``not_useful`` or ``wrong``."""
        return self._call(
            "feedback", receipt_id=receipt_id, item_ref=item_ref, rating=rating, comment=comment
        )

    def list_feedback(self, *, receipt_id: Optional[str] = None, limit: Optional[int] = None) -> List[Result]:
        """Feedback of this namespace (optionally of one receipt), oldest first."""
        return self._call_list("list_feedback", "feedback", receipt_id=receipt_id, limit=limit)

    def export(
        self,
        *,
        entities: Optional[Sequence[str]] = None,
        documents: Optional[Sequence[str]] = None,
        history: Optional[bool] = None,
        limit: Optional[int] = None,
    ) -> Result:
        """A canonical JSON memory pack (``rememberstack.pack/v1``): the selected
        facts, their evidence, the source documents, entities and a digest."""
        return self._call(
            "export", entities=entities, documents=documents, history=history, limit=limit
        )


class AsyncMemory:
    """:class:`Memory` for asyncio: the same methods as coroutines.

    Each call runs the blocking engine call in a worker thread
    (:func:`asyncio.to_thread`); the engine releases the GIL, so the event loop
    keeps running. ``AsyncMemory(...)`` takes :class:`Memory`'s arguments; use it
    as an ``async with`` context manager or ``await aclose()``.
    """

    def __init__(self, path: Optional[PathLike] = None, **kwargs: Any) -> None:
        self._memory = kwargs.pop("_memory", None) or Memory(path, **kwargs)

    @classmethod
    def connect(cls, url: str, **kwargs: Any) -> "AsyncMemory":
        """:meth:`Memory.connect` (PostgreSQL)."""
        return cls(_memory=Memory.connect(url, **kwargs))

    @classmethod
    async def open(cls, path: Optional[PathLike] = None, **kwargs: Any) -> "AsyncMemory":
        """Open without blocking the event loop."""
        memory = await asyncio.to_thread(Memory, path, **kwargs)
        return cls(_memory=memory)

    @property
    def sync(self) -> Memory:
        """The blocking :class:`Memory` underneath (same engine, same handle)."""
        return self._memory

    @property
    def namespace(self) -> str:
        return self._memory.namespace

    @property
    def closed(self) -> bool:
        return self._memory.closed

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def aclose(self) -> None:
        """Close the memory (waits for calls already running)."""
        await self._run(self._memory.close)

    def close(self) -> None:
        """Close the memory now."""
        self._memory.close()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return repr(self._memory).replace("remember.Memory", "remember.AsyncMemory")

    @staticmethod
    def methods() -> List[str]:
        """:meth:`Memory.methods`."""
        return Memory.methods()

    async def call(self, method: str, input: Optional[Mapping[str, Any]] = None) -> Result:
        """:meth:`Memory.call`: any call of the engine by its name."""
        return await self._run(self._memory.call, method, input)

    async def ingest_file(self, path: PathLike, **kwargs: Any) -> Result:
        return await self._run(self._memory.ingest_file, path, **kwargs)

    async def ingest_text(self, text: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.ingest_text, text, **kwargs)

    async def ingest_conversation(self, conversation: Any, **kwargs: Any) -> Result:
        return await self._run(self._memory.ingest_conversation, conversation, **kwargs)

    async def append_messages(self, conversation_ref: str, messages: Any, **kwargs: Any) -> Result:
        return await self._run(self._memory.append_messages, conversation_ref, messages, **kwargs)

    async def conversation_messages(self, conversation_ref: str) -> Result:
        return await self._run(self._memory.conversation_messages, conversation_ref)

    async def remember_note(self, text: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.remember_note, text, **kwargs)

    async def promote_note(self, version_id: str, expected_version: int) -> Result:
        return await self._run(self._memory.promote_note, version_id, expected_version)

    async def archive_note(self, version_id: str, expected_version: int) -> Result:
        return await self._run(self._memory.archive_note, version_id, expected_version)

    async def revoke_note(self, version_id: str, expected_version: int) -> Result:
        return await self._run(self._memory.revoke_note, version_id, expected_version)

    async def list_notes(self, **kwargs: Any) -> Result:
        return await self._run(self._memory.list_notes, **kwargs)

    async def set_note_policy(self, start_as: str) -> Result:
        return await self._run(self._memory.set_note_policy, start_as)

    async def forget_note(self, note_id: str) -> Result:
        return await self._run(self._memory.forget_note, note_id)

    async def process_until_idle(self) -> Result:
        return await self._run(self._memory.process_until_idle)

    async def status(self) -> Result:
        return await self._run(self._memory.status)

    async def doctor(self) -> Result:
        return await self._run(self._memory.doctor)

    async def search(self, query: str, k: Optional[int] = None, **filters: Any) -> Result:
        return await self._run(self._memory.search, query, k, **filters)

    async def search_claims(self, query: str, k: Optional[int] = None, **filters: Any) -> Result:
        return await self._run(self._memory.search_claims, query, k, **filters)

    async def search_facts(self, query: str, k: Optional[int] = None, **filters: Any) -> Result:
        return await self._run(self._memory.search_facts, query, k, **filters)

    async def operations(self) -> List[Result]:
        return await self._run(self._memory.operations)

    async def run_operation(self, name: str, input: Optional[Mapping[str, Any]] = None) -> Result:
        return await self._run(self._memory.run_operation, name, input)

    async def resolve_entity(self, query: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.resolve_entity, query, **kwargs)

    async def claims_and_sources_context(self, query: str, **input: Any) -> Result:
        return await self._run(self._memory.claims_and_sources_context, query, **input)

    async def facts_context(self, query: str, **input: Any) -> Result:
        return await self._run(self._memory.facts_context, query, **input)

    async def combined_context(self, query: str, **input: Any) -> Result:
        return await self._run(self._memory.combined_context, query, **input)

    async def adjacent_chunks(self, chunk_id: str, window: Optional[int] = None) -> Result:
        return await self._run(self._memory.adjacent_chunks, chunk_id, window)

    async def search_documents(self, query: str = "", k: Optional[int] = None, **filters: Any) -> Result:
        return await self._run(self._memory.search_documents, query, k, **filters)

    async def trace(self, fact_id: str) -> Result:
        return await self._run(self._memory.trace, fact_id)

    async def resolve_receipt(self, receipt_id: str) -> Result:
        return await self._run(self._memory.resolve_receipt, receipt_id)

    async def inspect_receipt(self, receipt_id: str) -> Result:
        return await self._run(self._memory.inspect_receipt, receipt_id)

    async def documents(self) -> List[Result]:
        return await self._run(self._memory.documents)

    async def document(self, doc_id: str) -> Result:
        return await self._run(self._memory.document, doc_id)

    async def entities(self, **kwargs: Any) -> List[Result]:
        return await self._run(self._memory.entities, **kwargs)

    async def entity(self, name_or_id: str) -> Result:
        return await self._run(self._memory.entity, name_or_id)

    async def claims(self, **kwargs: Any) -> List[Result]:
        return await self._run(self._memory.claims, **kwargs)

    async def claim_decisions(self, doc_id: str) -> List[Result]:
        return await self._run(self._memory.claim_decisions, doc_id)

    async def facts(self, **kwargs: Any) -> List[Result]:
        return await self._run(self._memory.facts, **kwargs)

    async def predicates(self) -> List[Result]:
        return await self._run(self._memory.predicates)

    async def neighborhood(self, entity_ids: Sequence[str], **kwargs: Any) -> Result:
        return await self._run(self._memory.neighborhood, entity_ids, **kwargs)

    async def hydrate(self, records: Sequence[str]) -> Result:
        return await self._run(self._memory.hydrate, records)

    def with_namespace(self, namespace: str) -> "AsyncMemory":
        return AsyncMemory(_memory=self._memory.with_namespace(namespace))

    async def merge_entities(self, from_id: str, into_id: str) -> Result:
        return await self._run(self._memory.merge_entities, from_id, into_id)

    async def unmerge_entities(self, merge_id: str) -> Result:
        return await self._run(self._memory.unmerge_entities, merge_id)

    async def merge_proposals(self) -> List[Result]:
        return await self._run(self._memory.merge_proposals)

    async def accept_merge_proposal(self, from_id: str, into_id: str) -> Result:
        return await self._run(self._memory.accept_merge_proposal, from_id, into_id)

    async def reject_merge_proposal(self, from_id: str, into_id: str) -> Result:
        return await self._run(self._memory.reject_merge_proposal, from_id, into_id)

    async def delete_document(self, doc_id: str) -> Result:
        return await self._run(self._memory.delete_document, doc_id)

    async def forget_document(self, doc_id: str) -> Result:
        return await self._run(self._memory.forget_document, doc_id)

    async def retract_claim(self, claim_id: str, reason: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.retract_claim, claim_id, reason, **kwargs)

    async def invalidate_fact(self, fact_id: str, reason: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.invalidate_fact, fact_id, reason, **kwargs)

    async def correct_fact(self, fact_id: str, statement: str, reason: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.correct_fact, fact_id, statement, reason, **kwargs)

    async def feedback(self, receipt_id: str, item_ref: str, rating: str, **kwargs: Any) -> Result:
        return await self._run(self._memory.feedback, receipt_id, item_ref, rating, **kwargs)

    async def list_feedback(self, **kwargs: Any) -> List[Result]:
        return await self._run(self._memory.list_feedback, **kwargs)

    async def export(self, **kwargs: Any) -> Result:
        return await self._run(self._memory.export, **kwargs)


def _copy_docs() -> None:
    for name, fn in list(vars(AsyncMemory).items()):
        doc_source = getattr(Memory, name, None)
        if callable(fn) and doc_source is not None and not fn.__doc__:
            fn.__doc__ = f"Async :meth:`Memory.{name}`.\n\n{doc_source.__doc__ or ''}"


_copy_docs()
