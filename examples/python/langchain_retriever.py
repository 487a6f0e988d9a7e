"""RememberStack in LangChain: a retriever with provenance, and a chat history.

Runs offline (no model, no network). Needs the `remember` package with its
LangChain extra: pip install 'remember[langchain]' (from bindings/python).

    python examples/python/langchain_retriever.py
"""

import tempfile
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

import remember
from remember.integrations.langchain import RememberChatMessageHistory, RememberRetriever

PLAN = "# Release plan\n\n## Dates\n\nVersion 2.0 ships on 14 March.\n"
STANDUP = {
    "session_time": "2024-06-03T09:30:00Z",
    "messages": [
        {"event_id": "m3", "speaker": "Maria", "text": "Can you move the runners to the new rack next week?"},
        {"event_id": "m4", "speaker": "Joao", "text": "Sure, I will schedule the runner migration for Tuesday afternoon."},
    ],
}


def cite(docs):
    """Documents as prompt lines, each with where it comes from."""
    lines = []
    for doc in docs:
        meta = doc.metadata
        turns = f" turns {', '.join(meta['event_ids'])}" if meta.get("event_ids") else ""
        text = " ".join(doc.page_content.split())
        lines.append(f"- {text}  [{doc.id} in {meta['source_ref']}{turns}]")
    return "\n".join(lines)


with tempfile.TemporaryDirectory() as tmp, remember.Memory(Path(tmp) / "memory.db") as memory:
    memory.ingest_text(PLAN, source_ref="notes/release", source_time="2024-03-01T00:00:00Z")
    memory.ingest_conversation(STANDUP, source_ref="chat/standup")
    memory.process_until_idle()

    # 1. The retriever: Documents whose metadata is the engine's provenance.
    retriever = RememberRetriever(memory=memory, k=2)
    docs = retriever.invoke("When does version 2.0 ship?")
    print("retrieved:")
    print(cite(docs))
    print(f"  first: kind={docs[0].metadata['kind']} document={docs[0].metadata['document_id']} "
          f"relevance={docs[0].metadata['relevance']}")

    # 2. In a chain: the prompt a model would get (swap in any chat model).
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context, citing it:\n{context}"), ("human", "{question}")]
    )
    chain = {"context": retriever | RunnableLambda(cite), "question": RunnablePassthrough()} | prompt
    print("prompt:")
    print(chain.invoke("When is the runner migration?").to_messages()[0].content)

    # 3. A chat history kept as a conversation in the memory (and recalled like one).
    history = RememberChatMessageHistory(memory, "chat/assistant")
    history.add_messages([HumanMessage("Hi, I am Maria. I prefer tea over coffee."), AIMessage("Noted, Maria!")])
    for message in history.messages:
        print(f"history: {message.type}: {message.content}")
