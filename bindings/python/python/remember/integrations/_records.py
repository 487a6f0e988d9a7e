"""One answer of a context operation as flat records: text, score and provenance.

The framework integrations (LangChain, LlamaIndex, the OpenAI Agents SDK) all turn
the engine's envelopes into their own objects through :func:`recall`; this module
imports no framework.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .._errors import InvalidInput
from .._memory import AsyncMemory, Memory
from .._result import Result

__all__ = ["OPERATIONS", "Record", "recall", "recall_async", "as_memory", "compact"]

#: The context operations a retriever can answer from.
OPERATIONS: Tuple[str, ...] = ("claims_and_sources_context", "facts_context", "combined_context")

MemoryLike = Union[Memory, AsyncMemory]
TemporalScope = Union[str, Mapping[str, Any], None]


@dataclass(frozen=True)
class Record:
    """One result of a context operation, flattened for a framework.

    ``text`` is what the result says (a chunk's or claim's text, a fact's
    statement); ``ref`` its record reference (``chunk:<id>``, ``claim:<id>``,
    ``fact:<id>``, as :meth:`remember.Memory.hydrate` takes it); ``score`` the fused
    score and ``relevance`` the calibrated relevance in [0, 1] (``None`` when the
    engine gave none). ``metadata`` holds the provenance: see :func:`recall`.
    """

    text: str
    ref: str
    kind: str
    score: float
    relevance: Optional[float]
    metadata: Dict[str, Any]


def as_memory(memory: Any) -> Memory:
    """The blocking :class:`~remember.Memory` of a ``Memory`` or ``AsyncMemory``."""
    if isinstance(memory, AsyncMemory):
        return memory.sync
    if isinstance(memory, Memory):
        return memory
    raise InvalidInput(f"expected a remember.Memory or remember.AsyncMemory, not {type(memory).__name__}")


def _operation_input(
    query: str,
    operation: str,
    *,
    k: Optional[int],
    entity_ids: Optional[Sequence[str]],
    temporal_scope: TemporalScope,
    budget: Optional[int],
    extra: Optional[Mapping[str, Any]],
) -> Dict[str, Any]:
    if operation not in OPERATIONS:
        raise InvalidInput(f"operation must be one of {', '.join(OPERATIONS)}, not {operation!r}")
    if not isinstance(query, str):
        raise InvalidInput(f"the query must be a str, not {type(query).__name__}")
    data: Dict[str, Any] = {"query": query}
    # combined_context takes no k: the merged list is cut to k here instead.
    if k is not None and operation != "combined_context":
        data["k"] = k
    if entity_ids is not None:
        data["entity_ids"] = list(entity_ids)
    if temporal_scope is not None:
        data["temporal_scope"] = {"mode": temporal_scope} if isinstance(temporal_scope, str) else dict(temporal_scope)
    if budget is not None:
        data["budget"] = budget
    if extra:
        data.update(extra)
    return data


def recall(
    memory: MemoryLike,
    query: str,
    *,
    operation: str = "claims_and_sources_context",
    k: Optional[int] = None,
    entity_ids: Optional[Sequence[str]] = None,
    temporal_scope: TemporalScope = None,
    budget: Optional[int] = None,
    min_relevance: Optional[float] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> List[Record]:
    """Run a context operation and return its results as :class:`Record` objects, best first.

    ``operation`` is ``claims_and_sources_context`` (claims and source chunks, the
    default), ``facts_context`` (facts with their supporting claims) or
    ``combined_context`` (both, merged by fused score; evidence first on ties).
    ``k``, ``entity_ids``, ``temporal_scope`` (a dict or a mode string such as
    ``"history"``; facts and combined only), ``budget`` and ``extra`` (any other
    field of the operation's input, e.g. ``record_receipt``) go to the operation;
    with ``combined_context``, ``k`` cuts the merged list. ``min_relevance`` drops
    results whose calibrated relevance is below it.

    Every record's ``metadata`` has ``kind`` (``chunk``, ``claim`` or ``fact``),
    ``record`` (its reference), ``operation``, ``namespace``, ``document_id``,
    ``version_id``, ``document_title``, ``event_ids`` (the conversation turns, by
    message id), ``asserted_at`` (the source time), and the scores ``score``
    (fused), ``relevance``, ``semantic_score``/``semantic_rank`` and
    ``lexical_score``/``lexical_rank`` where the channel ranked it. Chunks add
    ``chunk_id``, ``source_kind``, ``source_ref``, ``section_path``,
    ``section_role``, ``char_start``/``char_end``; claims add ``claim_id``,
    ``chunk_id``, ``source_kind``, ``source_ref``, ``spans``, ``is_current``,
    ``added_context``, the validity window and ``extractor_version``; facts add
    ``fact_id``, ``fact_kind``, subject, predicate and object, counts, the validity
    window and ``provenance`` (the supporting claims, each with its document,
    version, spans and turn ids), with ``claim_ids``, ``document_ids`` and
    ``version_ids`` flattened. ``negative`` (the envelope's typed negative, e.g.
    ``no_relevant_memory``: the results are weak guesses) and ``receipt_id`` are set
    when the envelope has them. Keys whose value is absent are left out.
    """
    data = _operation_input(
        query, operation, k=k, entity_ids=entity_ids, temporal_scope=temporal_scope, budget=budget, extra=extra
    )
    answer = as_memory(memory).run_operation(operation, data)
    return _records(answer, operation, k=k, min_relevance=min_relevance)


async def recall_async(
    memory: MemoryLike,
    query: str,
    *,
    operation: str = "claims_and_sources_context",
    k: Optional[int] = None,
    entity_ids: Optional[Sequence[str]] = None,
    temporal_scope: TemporalScope = None,
    budget: Optional[int] = None,
    min_relevance: Optional[float] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> List[Record]:
    """:func:`recall` without blocking the event loop (the engine call runs in a
    worker thread, as :class:`~remember.AsyncMemory` runs it)."""
    data = _operation_input(
        query, operation, k=k, entity_ids=entity_ids, temporal_scope=temporal_scope, budget=budget, extra=extra
    )
    async_memory = memory if isinstance(memory, AsyncMemory) else AsyncMemory(_memory=as_memory(memory))
    answer = await async_memory.run_operation(operation, data)
    return _records(answer, operation, k=k, min_relevance=min_relevance)


# ---------------------------------------------------------------------- conversion


def _records(answer: Result, operation: str, *, k: Optional[int], min_relevance: Optional[float]) -> List[Record]:
    envelope = answer.to_dict()
    if operation == "combined_context":
        evidence = _envelope_records(envelope["claims_and_sources"])
        facts = _envelope_records(envelope["facts"])
        records = _merge(evidence, facts)
        for r in records:
            r.metadata["operation"] = "combined_context"
    else:
        records = _envelope_records(envelope)
    if min_relevance is not None:
        records = [r for r in records if r.relevance is None or r.relevance >= min_relevance]
    if k is not None and operation == "combined_context":
        records = records[:k]
    return records


def _merge(evidence: List[Record], facts: List[Record]) -> List[Record]:
    """Merge two ranked lists by fused score, keeping each list's own order."""
    out: List[Record] = []
    i = j = 0
    while i < len(evidence) and j < len(facts):
        if facts[j].score > evidence[i].score:
            out.append(facts[j])
            j += 1
        else:
            out.append(evidence[i])
            i += 1
    out.extend(evidence[i:])
    out.extend(facts[j:])
    return out


def _envelope_records(envelope: Mapping[str, Any]) -> List[Record]:
    common: Dict[str, Any] = {
        "operation": (envelope.get("operation") or {}).get("name"),
        "namespace": envelope.get("namespace"),
    }
    negative = envelope.get("negative")
    if isinstance(negative, Mapping):
        common["negative"] = negative.get("kind")
    if envelope.get("receipt_id") is not None:
        common["receipt_id"] = envelope["receipt_id"]
    out: List[Record] = []
    for item in envelope.get("results") or []:
        if not isinstance(item, Mapping):
            continue
        if "fact_id" in item:
            out.append(_fact(item, common))
        elif "claim_id" in item:
            out.append(_claim(item, common))
        elif "chunk_id" in item:
            out.append(_chunk(item, common))
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _clean(meta: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in meta.items() if value is not None}


def _scores(scores: Any) -> Tuple[float, Optional[float], Dict[str, Any]]:
    scores = _mapping(scores)
    fused = float(scores.get("fused") or 0.0)
    relevance = scores.get("relevance")
    meta: Dict[str, Any] = {"score": fused, "relevance": relevance}
    for channel in ("semantic", "lexical"):
        ranked = scores.get(channel)
        if isinstance(ranked, Mapping):
            meta[f"{channel}_score"] = ranked.get("score")
            meta[f"{channel}_rank"] = ranked.get("rank")
    return fused, None if relevance is None else float(relevance), meta


def _validity(meta: Dict[str, Any], validity: Any) -> None:
    if isinstance(validity, Mapping):
        meta["validity_kind"] = validity.get("kind")
        meta["valid_from"] = validity.get("from")
        meta["valid_until"] = validity.get("until")
        meta["validity_precision"] = validity.get("precision")


def _source(item: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "document_id": item.get("document_id"),
        "version_id": item.get("version_id"),
        "document_title": item.get("document_title"),
        "source_kind": item.get("source_kind"),
        "source_ref": item.get("source_ref"),
        "event_ids": list(item.get("event_ids") or []),
        "asserted_at": item.get("asserted_at"),
    }


def _chunk(item: Mapping[str, Any], common: Mapping[str, Any]) -> Record:
    fused, relevance, scores = _scores(item.get("scores"))
    ref = f"chunk:{item['chunk_id']}"
    span = _mapping(item.get("char_span"))
    meta: Dict[str, Any] = {
        "kind": "chunk",
        "record": ref,
        **common,
        "chunk_id": item["chunk_id"],
        **_source(item),
        "section_path": list(item.get("section_path") or []),
        "section_role": item.get("section_role"),
        "char_start": span.get("start"),
        "char_end": span.get("end"),
        **scores,
    }
    return Record(str(item.get("text") or ""), ref, "chunk", fused, relevance, _clean(meta))


def _claim(item: Mapping[str, Any], common: Mapping[str, Any]) -> Record:
    fused, relevance, scores = _scores(item.get("scores"))
    ref = f"claim:{item['claim_id']}"
    meta: Dict[str, Any] = {
        "kind": "claim",
        "record": ref,
        **common,
        "claim_id": item["claim_id"],
        "chunk_id": item.get("chunk_id"),
        **_source(item),
        "spans": [[s.get("start"), s.get("end")] for s in item.get("spans") or [] if isinstance(s, Mapping)],
        "is_current": item.get("is_current"),
        "added_context": list(item.get("added_context") or []),
        "extractor_version": item.get("extractor_version"),
        **scores,
    }
    _validity(meta, item.get("validity"))
    return Record(str(item.get("text") or ""), ref, "claim", fused, relevance, _clean(meta))


def _fact(item: Mapping[str, Any], common: Mapping[str, Any]) -> Record:
    fused, relevance, scores = _scores(item.get("scores"))
    ref = f"fact:{item['fact_id']}"
    support = [p for p in item.get("provenance") or [] if isinstance(p, Mapping)]
    first: Mapping[str, Any] = support[0] if support else {}
    event_ids: List[str] = []
    for p in support:
        for e in p.get("event_ids") or []:
            if e not in event_ids:
                event_ids.append(e)
    window = _mapping(item.get("window"))
    meta: Dict[str, Any] = {
        "kind": "fact",
        "record": ref,
        **common,
        "fact_id": item["fact_id"],
        "fact_kind": item.get("kind"),
        "subject": item.get("subject"),
        "subject_name": item.get("subject_name"),
        "predicate": item.get("predicate"),
        "object": item.get("object"),
        "object_name": item.get("object_name"),
        "evidence_count": item.get("evidence_count"),
        "contradict_count": item.get("contradict_count"),
        "contradiction_group": item.get("contradiction_group"),
        "support_state": item.get("support_state"),
        "superseded_by": item.get("superseded_by"),
        "invalidated_at": item.get("invalidated_at"),
        "recorded_at": item.get("recorded_at"),
        "validity_kind": item.get("validity_kind"),
        "valid_from": window.get("valid_from"),
        "valid_until": window.get("valid_until"),
        "validity_precision": window.get("precision"),
        # The first (current-first) supporting claim stands for the fact's source.
        "document_id": first.get("document_id"),
        "version_id": first.get("version_id"),
        "document_title": first.get("document_title"),
        "asserted_at": first.get("asserted_at"),
        "event_ids": event_ids,
        "claim_ids": [p.get("claim_id") for p in support],
        "document_ids": list(dict.fromkeys(p.get("document_id") for p in support)),
        "version_ids": list(dict.fromkeys(p.get("version_id") for p in support)),
        "provenance": [dict(p) for p in support],
        **scores,
    }
    return Record(str(item.get("statement") or ""), ref, "fact", fused, relevance, _clean(meta))


#: The metadata keys :func:`compact` keeps: what a model needs to use and cite a result.
COMPACT_KEYS: Tuple[str, ...] = (
    "document_title",
    "source_ref",
    "section_path",
    "event_ids",
    "asserted_at",
    "subject_name",
    "predicate",
    "object_name",
    "valid_from",
    "valid_until",
    "evidence_count",
    "support_state",
    "relevance",
)


def compact(record: Record) -> Dict[str, Any]:
    """A short JSON-ready form of a record for a model's context: its reference,
    kind and text, and the provenance that lets it cite (title, source, section,
    turns, source time, validity, relevance); empty values left out."""
    out: Dict[str, Any] = {"ref": record.ref, "kind": record.kind, "text": record.text}
    for key in COMPACT_KEYS:
        value = record.metadata.get(key)
        if value is not None and value != []:
            out[key] = value
    return out
