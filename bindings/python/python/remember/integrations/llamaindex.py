"""LlamaIndex integration: a retriever over the context operations.

Needs ``llama-index-core`` (``pip install 'remember[llamaindex]'``)::

    from remember.integrations.llamaindex import RememberRetriever

    retriever = RememberRetriever(memory)                    # claims_and_sources_context
    for hit in retriever.retrieve("When does version 2.0 ship?"):
        hit.score, hit.node.text, hit.node.metadata["document_id"], hit.node.ref_doc_id
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "remember.integrations.llamaindex needs llama-index-core, which the `llamaindex` extra installs: "
        "pip install 'remember[llamaindex]' (from source: cd bindings/python && "
        "maturin develop --extras llamaindex)"
    ) from e

from .._memory import AsyncMemory, Memory
from ._records import OPERATIONS, Record, as_memory, recall, recall_async

__all__ = ["RememberRetriever", "to_node", "LLM_METADATA_KEYS"]

#: The metadata keys a node shows the LLM (``node.get_content(MetadataMode.LLM)``);
#: the rest (ids, scores, spans) stay in ``metadata`` but out of prompts, and no
#: key is embedded.
LLM_METADATA_KEYS = ("kind", "document_title", "source_ref", "section_path", "event_ids", "asserted_at")


def to_node(record: Record, score: Literal["fused", "relevance"] = "fused") -> NodeWithScore:
    """A LlamaIndex ``NodeWithScore`` of a record: a ``TextNode`` whose ``id_`` is the
    record reference (``claim:<id>``...), ``text`` the record's text, ``metadata``
    its provenance and ``SOURCE`` relationship its document (so ``ref_doc_id`` is
    the document id); ``score`` is the fused score, or the calibrated relevance."""
    meta = dict(record.metadata)
    relationships: Dict[NodeRelationship, Any] = {}
    if meta.get("document_id"):
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=meta["document_id"],
            metadata={k: meta[k] for k in ("version_id", "document_title", "source_ref") if k in meta},
        )
    node = TextNode(
        id_=record.ref,
        text=record.text,
        metadata=meta,
        relationships=relationships,
        start_char_idx=meta.get("char_start"),
        end_char_idx=meta.get("char_end"),
        excluded_llm_metadata_keys=[k for k in meta if k not in LLM_METADATA_KEYS or meta[k] == []],
        excluded_embed_metadata_keys=list(meta),
    )
    value = record.score if score == "fused" else record.relevance
    return NodeWithScore(node=node, score=value)


class RememberRetriever(BaseRetriever):  # type: ignore[misc, unused-ignore]
    """A LlamaIndex retriever answering from a RememberStack memory.

    Each query runs one context operation (zero LLM calls): ``operation`` is
    ``claims_and_sources_context`` (the default: claims and the source chunks they
    come from), ``facts_context`` (facts, each with its supporting claims) or
    ``combined_context`` (both, merged by fused score). Nodes come best first as
    ``NodeWithScore``: a ``TextNode`` with the result's text and provenance
    metadata (``kind``, ``document_id``, ``version_id``,
    ``chunk_id``/``claim_id``/``fact_id``, ``section_path``, ``event_ids`` of the
    conversation turns, ``asserted_at``, ``score``, ``relevance``...; see
    :func:`remember.integrations.recall`), scored by the fused score
    (``score="relevance"``: the calibrated relevance in [0, 1]).

    ``memory`` is a :class:`remember.Memory` or :class:`remember.AsyncMemory`;
    ``aretrieve`` runs the engine call in a worker thread. A closed memory raises
    :class:`remember.ClosedError`.
    """

    def __init__(
        self,
        memory: Union[Memory, AsyncMemory],
        *,
        operation: str = "claims_and_sources_context",
        k: Optional[int] = None,
        entity_ids: Optional[Sequence[str]] = None,
        temporal_scope: Union[str, Mapping[str, Any], None] = None,
        budget: Optional[int] = None,
        min_relevance: Optional[float] = None,
        operation_input: Optional[Mapping[str, Any]] = None,
        score: Literal["fused", "relevance"] = "fused",
        callback_manager: Optional[CallbackManager] = None,
        verbose: bool = False,
    ) -> None:
        if operation not in OPERATIONS:
            raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}, not {operation!r}")
        if score not in ("fused", "relevance"):
            raise ValueError(f"score must be 'fused' or 'relevance', not {score!r}")
        self.memory = as_memory(memory)
        self.operation = operation
        self.k = k
        self.entity_ids = None if entity_ids is None else list(entity_ids)
        self.temporal_scope = temporal_scope
        self.budget = budget
        self.min_relevance = min_relevance
        self.operation_input = None if operation_input is None else dict(operation_input)
        self.score = score
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _recall_kwargs(self) -> Dict[str, Any]:
        return {
            "operation": self.operation,
            "k": self.k,
            "entity_ids": self.entity_ids,
            "temporal_scope": self.temporal_scope,
            "budget": self.budget,
            "min_relevance": self.min_relevance,
            "extra": self.operation_input,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        records = recall(self.memory, query_bundle.query_str, **self._recall_kwargs())
        return [to_node(r, self.score) for r in records]

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        records = await recall_async(self.memory, query_bundle.query_str, **self._recall_kwargs())
        return [to_node(r, self.score) for r in records]

