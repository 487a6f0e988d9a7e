"""The LangChain integration against the real langchain-core: retriever and chat history."""

import asyncio

import pytest
from conftest import run_example
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

import remember
from remember.integrations.langchain import RememberChatMessageHistory, RememberRetriever

SHIP = "When does version 2.0 ship?"
MIGRATION = "When is the runner migration?"


def test_retriever_is_a_langchain_retriever_with_provenance(loaded):
    retriever = RememberRetriever(memory=loaded.memory)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(SHIP)
    assert docs and all(isinstance(d, Document) for d in docs)

    # The expected evidence comes first: the claim, then the passage it is in.
    claim, chunk = docs[0], docs[1]
    assert claim.page_content == "Version 2.0 ships on 2024-03-14."
    assert claim.metadata["kind"] == "claim"
    assert claim.id == claim.metadata["record"] == f"claim:{claim.metadata['claim_id']}"
    assert claim.metadata["document_id"] == loaded.doc.document_id
    assert claim.metadata["version_id"] == loaded.doc.version_id
    assert claim.metadata["chunk_id"] == chunk.metadata["chunk_id"]
    assert claim.metadata["source_ref"] == "notes/release"
    assert claim.metadata["document_title"] == "Release plan"
    assert claim.metadata["asserted_at"] == "2024-03-01T00:00:00Z"
    assert claim.metadata["valid_from"] == "2024-03-14T00:00:00Z"
    assert claim.metadata["operation"] == "claims_and_sources_context"
    assert claim.metadata["spans"] and claim.metadata["is_current"] is True
    assert claim.metadata["relevance"] > 0.5 and claim.metadata["score"] > 0

    assert chunk.metadata["kind"] == "chunk"
    assert "14 March" in chunk.page_content
    assert chunk.metadata["section_path"] == ["Release plan", "Dates"]
    assert chunk.metadata["char_start"] < chunk.metadata["char_end"]
    assert chunk.metadata["event_ids"] == []
    # Best first.
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_conversation_evidence_carries_turn_ids(loaded):
    docs = RememberRetriever(memory=loaded.memory, k=3).invoke(MIGRATION)
    assert len(docs) <= 3
    first = docs[0]
    assert "runner migration" in first.page_content and "Tuesday" in first.page_content
    assert first.metadata["event_ids"] == ["m4"]
    assert first.metadata["source_kind"] == "conversation"
    assert first.metadata["source_ref"] == "chat/standup"
    assert first.metadata["document_id"] == loaded.conv.document_id
    assert first.metadata["asserted_at"] == "2024-06-03T09:30:00Z"


def test_facts_and_combined_operations(loaded):
    facts = RememberRetriever(memory=loaded.memory, operation="facts_context").invoke(
        "Who wrote the sync engine?"
    )
    fact = facts[0]
    assert fact.page_content == "The sync engine was written by Ana Lima."
    assert fact.metadata["kind"] == "fact"
    assert fact.id == f"fact:{fact.metadata['fact_id']}"
    assert fact.metadata["subject_name"] == "Ana Lima"
    assert fact.metadata["document_id"] == loaded.doc.document_id
    assert fact.metadata["claim_ids"] and fact.metadata["provenance"][0]["claim_id"] == fact.metadata["claim_ids"][0]
    assert fact.metadata["support_state"] == "supported"

    combined = RememberRetriever(memory=loaded.memory, operation="combined_context", k=4).invoke(SHIP)
    assert len(combined) == 4
    assert combined[0].page_content == "Version 2.0 ships on 2024-03-14."
    kinds = {d.metadata["kind"] for d in combined}
    assert "fact" in kinds and kinds & {"claim", "chunk"}
    assert all(d.metadata["operation"] == "combined_context" for d in combined)
    # A fact the engine calls a weak guess says so.
    weak = [d for d in combined if d.metadata["kind"] == "fact"]
    assert weak[0].metadata["negative"] == "no_relevant_memory"
    strong = RememberRetriever(
        memory=loaded.memory, operation="combined_context", min_relevance=0.5
    ).invoke(SHIP)
    assert strong and all(d.metadata["relevance"] >= 0.5 for d in strong)


def test_async_retrieval_matches_sync(loaded):
    retriever = RememberRetriever(memory=loaded.memory)
    sync_ids = [d.id for d in retriever.invoke(SHIP)]

    async def main():
        a, b = await asyncio.gather(retriever.ainvoke(SHIP), retriever.ainvoke(MIGRATION))
        return a, b

    a, b = asyncio.run(main())
    assert [d.id for d in a] == sync_ids
    assert b[0].metadata["event_ids"] == ["m4"]

    # An AsyncMemory works too, sync and async.
    async_retriever = RememberRetriever(memory=remember.AsyncMemory(_memory=loaded.memory))
    assert [d.id for d in asyncio.run(async_retriever.ainvoke(SHIP))] == sync_ids
    assert [d.id for d in async_retriever.invoke(SHIP)] == sync_ids


def test_closed_memory_raises(loaded):
    retriever = RememberRetriever(memory=loaded.memory)
    loaded.memory.close()
    with pytest.raises(remember.ClosedError):
        retriever.invoke(SHIP)
    with pytest.raises(remember.ClosedError):
        asyncio.run(retriever.ainvoke(SHIP))


def test_invalid_settings_are_rejected(loaded):
    with pytest.raises(ValueError):
        RememberRetriever(memory=loaded.memory, operation="nope")
    with pytest.raises(remember.InvalidParameter):
        # claims_and_sources_context has no time scope.
        RememberRetriever(memory=loaded.memory, temporal_scope="history").invoke(SHIP)


def test_retriever_in_a_chain(loaded):
    retriever = RememberRetriever(memory=loaded.memory, k=2)

    def cite(docs):
        return "\n".join(f"- {d.page_content} [{d.metadata['record']}]" for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context:\n{context}"), ("human", "{question}")]
    )
    chain = {"context": retriever | RunnableLambda(cite), "question": RunnablePassthrough()} | prompt
    value = chain.invoke(SHIP)
    system, human = value.to_messages()
    assert "Version 2.0 ships on 2024-03-14. [claim:" in system.content
    assert human.content == SHIP


def test_chat_history_round_trip(memory):
    history = RememberChatMessageHistory(memory, "chat/session-1")
    assert history.messages == []
    first = [
        SystemMessage("You are a helpful assistant."),
        HumanMessage("Hi, I am planning the Lisbon offsite.", name="Maria"),
        AIMessage("Great! When is it?"),
    ]
    history.add_messages(first)
    history.add_user_message("It is on 12 May, and we need a venue for 40 people.")
    history.add_ai_message("Noted: 12 May, a venue for 40 people.\n\n\nI will look for options.")

    messages = history.messages
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert messages[1].name == "Maria"
    assert messages[0].content == "You are a helpful assistant."
    assert messages[3].content == "It is on 12 May, and we need a venue for 40 people."
    # Read back exactly as appended, blank lines included.
    assert messages[4].content == "Noted: 12 May, a venue for 40 people.\n\n\nI will look for options."
    # Each message's id is its turn's event id (assigned when it had none).
    assert [m.id for m in messages[:3]] == [m.id for m in first]
    assert all(m.id for m in messages)

    # Replaying a stored message is skipped; the turns are searchable at once.
    history.add_messages([first[1]])
    assert len(history.messages) == 5
    docs = RememberRetriever(memory=memory, k=3).invoke("How many people need a venue?")
    assert any(d.metadata["source_ref"] == "chat/session-1" for d in docs)
    turn = next(d for d in docs if d.metadata["source_ref"] == "chat/session-1")
    assert set(turn.metadata["event_ids"]) <= {m.id for m in messages}

    # Another handle (another process) reads the same conversation.
    assert [m.content for m in RememberChatMessageHistory(memory, "chat/session-1").messages] == [
        m.content for m in messages
    ]
    history.clear()
    assert history.messages == []
    assert not [d for d in memory.documents() if d.source_ref == "chat/session-1"]


def test_chat_history_long_turns_and_async(memory):
    history = RememberChatMessageHistory(memory, "chat/long", process=False)
    long_text = " ".join(f"Sentence {i} of a long answer about the release." for i in range(120))
    messages = [HumanMessage(f"Question {i}?") if i % 2 == 0 else AIMessage(f"Answer {i}.") for i in range(30)]
    messages[7] = AIMessage(long_text)

    async def main():
        await history.aadd_messages(messages[:15])
        await history.aadd_messages(messages[15:])
        return await history.aget_messages()

    # Turns read back before they are processed.
    back = asyncio.run(main())
    assert [m.content for m in back] == [m.content for m in messages]
    assert [m.type for m in back] == [m.type for m in messages]


def test_chat_history_closed_memory(memory):
    history = RememberChatMessageHistory(memory, "chat/closed")
    memory.close()
    with pytest.raises(remember.ClosedError):
        history.add_user_message("hello")
    with pytest.raises(remember.ClosedError):
        history.messages


def test_langchain_example_runs():
    out = run_example("langchain_retriever.py")
    assert "Version 2.0 ships on 2024-03-14." in out.splitlines()[1]
    assert "claim:" in out and "notes/release" in out
    assert "turns m4" in out
    assert "history: human: Hi, I am Maria." in out
