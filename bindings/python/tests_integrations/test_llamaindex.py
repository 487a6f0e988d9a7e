"""The LlamaIndex integration against the real llama-index-core."""

import asyncio

import pytest
from conftest import run_example
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

import remember
from remember.integrations.llamaindex import RememberRetriever

SHIP = "When does version 2.0 ship?"
MIGRATION = "When is the runner migration?"


def test_retriever_returns_nodes_with_provenance(loaded):
    retriever = RememberRetriever(loaded.memory)
    assert isinstance(retriever, BaseRetriever)
    hits = retriever.retrieve(SHIP)
    assert hits and all(isinstance(h, NodeWithScore) and isinstance(h.node, TextNode) for h in hits)

    claim, chunk = hits[0], hits[1]
    assert claim.node.text == "Version 2.0 ships on 2024-03-14."
    meta = claim.node.metadata
    assert meta["kind"] == "claim"
    assert claim.node.node_id == meta["record"] == f"claim:{meta['claim_id']}"
    assert meta["document_id"] == loaded.doc.document_id
    assert meta["version_id"] == loaded.doc.version_id
    assert meta["asserted_at"] == "2024-03-01T00:00:00Z"
    assert claim.score == meta["score"] > 0
    # The SOURCE relationship is the document.
    assert claim.node.ref_doc_id == loaded.doc.document_id
    assert claim.node.source_node.metadata["version_id"] == loaded.doc.version_id

    assert chunk.node.metadata["kind"] == "chunk"
    assert chunk.node.metadata["section_path"] == ["Release plan", "Dates"]
    assert (chunk.node.start_char_idx, chunk.node.end_char_idx) == (
        chunk.node.metadata["char_start"],
        chunk.node.metadata["char_end"],
    )
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({h.node.node_id for h in hits}) == len(hits)

    # What the LLM sees of a node: its text and where it comes from, not ids and scores.
    shown = claim.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "source_ref: notes/release" in shown and claim.node.text in shown
    assert "claim_id" not in shown and "semantic_score" not in shown
    assert claim.node.get_content(metadata_mode=MetadataMode.EMBED) == claim.node.text


def test_turn_ids_relevance_scores_and_operations(loaded):
    hits = RememberRetriever(loaded.memory, k=3, score="relevance").retrieve(QueryBundle(MIGRATION))
    assert len(hits) <= 3
    first = hits[0]
    assert first.node.metadata["event_ids"] == ["m4"]
    assert first.node.metadata["source_ref"] == "chat/standup"
    assert first.score == first.node.metadata["relevance"] and 0.5 < first.score <= 1.0

    facts = RememberRetriever(loaded.memory, operation="facts_context", temporal_scope="history").retrieve(
        "Who wrote the sync engine?"
    )
    assert facts[0].node.text == "The sync engine was written by Ana Lima."
    assert facts[0].node.metadata["kind"] == "fact"
    assert facts[0].node.metadata["subject_name"] == "Ana Lima"
    assert facts[0].node.ref_doc_id == loaded.doc.document_id

    combined = RememberRetriever(loaded.memory, operation="combined_context", k=3).retrieve(MIGRATION)
    assert [h.node.metadata["kind"] for h in combined][:2] == ["claim", "fact"]
    assert all("runner migration" in h.node.text for h in combined[:2])

    with pytest.raises(ValueError):
        RememberRetriever(loaded.memory, operation="nope")
    with pytest.raises(ValueError):
        RememberRetriever(loaded.memory, score="nope")


def test_async_retrieval(loaded):
    retriever = RememberRetriever(remember.AsyncMemory(_memory=loaded.memory))
    sync_ids = [h.node.node_id for h in retriever.retrieve(SHIP)]

    async def main():
        return await asyncio.gather(retriever.aretrieve(SHIP), retriever.aretrieve(MIGRATION))

    a, b = asyncio.run(main())
    assert [h.node.node_id for h in a] == sync_ids
    assert b[0].node.metadata["event_ids"] == ["m4"]


def test_query_engine_with_mock_llm(loaded):
    engine = RetrieverQueryEngine.from_args(RememberRetriever(loaded.memory, k=2), llm=MockLLM())
    response = engine.query(SHIP)
    assert [n.node.metadata["kind"] for n in response.source_nodes] == ["claim", "chunk"]
    assert response.source_nodes[0].node.metadata["document_id"] == loaded.doc.document_id
    # MockLLM echoes its prompt: the retrieved evidence reached it.
    assert "Version 2.0 ships on 2024-03-14." in str(response)


def test_closed_memory_raises(loaded):
    retriever = RememberRetriever(loaded.memory)
    loaded.memory.close()
    with pytest.raises(remember.ClosedError):
        retriever.retrieve(SHIP)
    with pytest.raises(remember.ClosedError):
        asyncio.run(retriever.aretrieve(SHIP))


def test_llamaindex_example_runs():
    out = run_example("llamaindex_retriever.py")
    lines = out.splitlines()
    assert "Version 2.0 ships on 2024-03-14." in lines[0] and "claim" in lines[0]
    assert "turns m4" in out
    assert "sources: claim, chunk" in out
