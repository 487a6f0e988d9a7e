"""LangChain integration: a retriever over the context operations, and a chat
message history kept as a RememberStack conversation.

Needs ``langchain-core`` (``pip install 'remember[langchain]'``)::

    from remember.integrations.langchain import RememberRetriever

    retriever = RememberRetriever(memory=memory)             # claims_and_sources_context
    docs = retriever.invoke("When does version 2.0 ship?")
    docs[0].page_content, docs[0].metadata["document_id"], docs[0].metadata["event_ids"]
"""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.documents import Document
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        SystemMessage,
    )
    from langchain_core.retrievers import BaseRetriever
except ImportError as e:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "remember.integrations.langchain needs langchain-core, which the `langchain` extra installs: "
        "pip install 'remember[langchain]' (from source: cd bindings/python && "
        "maturin develop --extras langchain)"
    ) from e

from .._errors import DocumentNotFound
from .._memory import AsyncMemory, Memory
from ._records import Record, as_memory, recall, recall_async

__all__ = ["RememberRetriever", "RememberChatMessageHistory", "to_document"]

Operation = Literal["claims_and_sources_context", "facts_context", "combined_context"]


def to_document(record: Record) -> Document:
    """A LangChain ``Document`` of a record: ``page_content`` is its text, ``id`` its
    record reference (``claim:<id>``...), ``metadata`` its provenance."""
    return Document(page_content=record.text, metadata=dict(record.metadata), id=record.ref)


class RememberRetriever(BaseRetriever):  # type: ignore[misc, unused-ignore]
    """A LangChain retriever answering from a RememberStack memory.

    Each query runs one context operation (zero LLM calls): ``operation`` is
    ``claims_and_sources_context`` (the default: claims and the source chunks they
    come from), ``facts_context`` (facts, each with its supporting claims) or
    ``combined_context`` (both, merged by fused score). Documents come best first;
    ``page_content`` is the chunk's or claim's text or the fact's statement, and
    ``metadata`` the provenance (``kind``, ``document_id``, ``version_id``,
    ``chunk_id``/``claim_id``/``fact_id``, ``section_path``, ``event_ids`` of the
    conversation turns, ``asserted_at``, ``score``, ``relevance``...; see
    :func:`remember.integrations.recall`).

    ``memory`` is a :class:`remember.Memory` or :class:`remember.AsyncMemory`; the
    async path (``ainvoke``) runs the engine call in a worker thread. A closed
    memory raises :class:`remember.ClosedError`.
    """

    memory: Union[Memory, AsyncMemory]
    """The memory to answer from."""
    operation: Operation = "claims_and_sources_context"
    """The context operation each query runs."""
    k: Optional[int] = None
    """Results per query (the operation's default when unset; cuts the merged list
    for ``combined_context``)."""
    entity_ids: Optional[List[str]] = None
    """Anchor entities (ids from ``memory.resolve_entity``)."""
    temporal_scope: Union[str, Dict[str, Any], None] = None
    """``facts_context``/``combined_context``: a time scope (``"history"``, or
    ``{"mode": "at", "at": "2024-06-01T00:00:00Z"}``)."""
    budget: Optional[int] = None
    """Fit results to this many characters (whole items; not with ``combined_context``)."""
    min_relevance: Optional[float] = None
    """Drop results whose calibrated relevance (0-1) is below this."""
    operation_input: Optional[Dict[str, Any]] = None
    """Other fields of the operation's input (``record_receipt``, ``purpose``...)."""

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

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        return [to_document(r) for r in recall(self.memory, query, **self._recall_kwargs())]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> List[Document]:
        records = await recall_async(self.memory, query, **self._recall_kwargs())
        return [to_document(r) for r in records]


#: Default speakers of LangChain message types in the stored conversation.
DEFAULT_SPEAKERS: Mapping[str, str] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
}


class RememberChatMessageHistory(BaseChatMessageHistory):  # type: ignore[misc, unused-ignore]
    """A LangChain chat message history stored as a RememberStack conversation.

    ``add_messages`` appends the messages to the conversation ``conversation_ref``
    with :meth:`remember.Memory.append_messages` (created on first use): each
    message becomes one turn whose ``event_id`` is the message's ``id`` (a new
    UUID when it has none, set on the message) and whose speaker is
    ``speakers[message.type]`` (``user``, ``assistant``, ``system``, ``tool`` by
    default) or, for a human message with a ``name``, that name, so that claims
    are attributed to the person. Re-adding a message with the same ``id`` and text
    is skipped. Messages without text (e.g. an AI message holding only tool
    calls) are not stored. With ``process=True`` (the default) the pipeline runs
    after each append, so the turns are searchable at once.

    ``messages`` reads the conversation back from the memory exactly as it was
    appended (:meth:`remember.Memory.conversation_messages`, processed or not): one
    message per turn, in order, with the turn's ``event_id`` as ``id``; the type
    comes from the speaker (a speaker that is none of ``speakers`` reads back as a
    ``HumanMessage`` with that ``name``). Tool calls and other message fields are
    not kept. ``clear()`` forgets the conversation for good (hard forget: its text
    and everything derived from it are removed from the memory).
    """

    def __init__(
        self,
        memory: Union[Memory, AsyncMemory],
        conversation_ref: str,
        *,
        speakers: Optional[Mapping[str, str]] = None,
        process: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(conversation_ref, str) or not conversation_ref:
            raise ValueError("conversation_ref must be a non-empty str")
        self.memory = as_memory(memory)
        self.conversation_ref = conversation_ref
        self.speakers: Dict[str, str] = {**DEFAULT_SPEAKERS, **(speakers or {})}
        self.process = process

    # ------------------------------------------------------------------ writing

    def _speaker(self, message: BaseMessage) -> str:
        if message.type == "human" and message.name:
            return str(message.name)
        kind = str(message.type)
        return self.speakers.get(kind, kind)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages to the conversation (one turn each)."""
        turns: List[Dict[str, Any]] = []
        for message in messages:
            text = message.text
            if not text.strip():
                continue
            if not message.id:
                message.id = str(uuid.uuid4())
            turns.append({"event_id": message.id, "speaker": self._speaker(message), "text": text})
        if not turns:
            return
        self.memory.append_messages(self.conversation_ref, turns)
        if self.process:
            self.memory.process_until_idle()

    def clear(self) -> None:
        """Forget the conversation for good (:meth:`remember.Memory.forget_document`)."""
        conversation = self._conversation()
        if conversation is not None:
            self.memory.forget_document(conversation["document_id"])

    # ------------------------------------------------------------------ reading

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override, unused-ignore]
        """The conversation's messages as the memory holds them, in order."""
        return [self._message(speaker, text, event_id) for event_id, speaker, text in self.turns()]

    def _message(self, speaker: str, text: str, event_id: str) -> BaseMessage:
        types = {name: kind for kind, name in self.speakers.items()}
        kind = types.get(speaker)
        if kind == "human":
            return HumanMessage(content=text, id=event_id)
        if kind == "ai":
            return AIMessage(content=text, id=event_id)
        if kind == "system":
            return SystemMessage(content=text, id=event_id)
        if kind is not None:
            return ChatMessage(role=kind, content=text, id=event_id)
        return HumanMessage(content=text, id=event_id, name=speaker)

    def _conversation(self) -> Optional[Dict[str, Any]]:
        """The conversation as the memory holds it (``document_id``, ``messages``...),
        or ``None`` before the first message."""
        try:
            value = self.memory.conversation_messages(self.conversation_ref).to_dict()
        except DocumentNotFound:
            return None
        return dict(value)

    def turns(self) -> List[Tuple[str, str, str]]:
        """The conversation's turns as ``(event_id, speaker, text)``, in order."""
        conversation = self._conversation()
        if conversation is None:
            return []
        return [
            (str(m.get("event_id") or ""), str(m["speaker"]), str(m["text"]))
            for m in conversation["messages"]
        ]
