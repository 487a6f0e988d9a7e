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

from .._errors import NotFound
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

    ``messages`` reads the conversation back from the memory, as the engine holds
    it: one message per turn, in order, with the turn's ``event_id`` as ``id``;
    the type comes from the speaker (a speaker that is none of ``speakers`` reads
    back as a ``HumanMessage`` with that ``name``). Text comes back as the engine
    keeps it (blank lines and trailing spaces dropped); tool calls and other
    message fields are not kept. Turns that are not processed yet are processed
    first. ``clear()`` forgets the conversation for good (hard forget: its text and
    everything derived from it are removed from the memory).
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
        self._doc_id: Optional[str] = None

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
        document = self._document()
        if document is not None:
            self.memory.forget_document(document["doc_id"])
        self._doc_id = None

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

    def _document(self) -> Optional[Dict[str, Any]]:
        """The conversation's document (``doc_id``, ``current_version_id``,
        ``latest_version_id``...), or ``None`` before the first message."""
        if self._doc_id is not None:
            try:
                return self.memory.document(self._doc_id).to_dict()
            except NotFound:  # forgotten meanwhile
                self._doc_id = None
        for document in self.memory.documents():
            if document.source_kind == "conversation" and document.source_ref == self.conversation_ref:
                self._doc_id = str(document.doc_id)
                return document.to_dict()
        return None

    def turns(self) -> List[Tuple[str, str, str]]:
        """The conversation's turns as ``(event_id, speaker, text)``, in order."""
        return _read_turns(self.memory, self.conversation_ref, self._document(), self.speakers.values())


# -------------------------------------------------------------------------- turns


def _read_turns(
    memory: Memory, conversation_ref: str, document: Optional[Mapping[str, Any]], speakers: Any
) -> List[Tuple[str, str, str]]:
    """Rebuild a conversation's turns from its processed chunks.

    The engine renders a conversation as ``speaker: text`` blocks separated by a
    blank line (a turn's text never holds one) and cuts it into chunks that list
    the turns they cover (``event_ids``); a long turn may span several chunks.
    """
    if document is None:
        return []
    chunks = None
    current = document.get("current_version_id")
    if current and current == document.get("latest_version_id"):
        chunks = _version_chunks(memory, document["doc_id"], current, conversation_ref, speakers)
    if chunks is None:
        # The newest messages are not processed yet: process, then read again.
        memory.process_until_idle()
        document = memory.document(document["doc_id"]).to_dict()
        if not document.get("current_version_id"):
            return []
        chunks = _version_chunks(
            memory, document["doc_id"], document["current_version_id"], conversation_ref, speakers
        )
    known = sorted({str(s) for s in speakers}, key=len, reverse=True)
    turns: List[List[str]] = []  # [event_id, speaker, text]
    for chunk in chunks or []:
        event_ids: List[str] = list(chunk.get("event_ids") or [])
        blocks = str(chunk.get("text") or "").split("\n\n")
        start = 0
        if turns and event_ids and event_ids[0] == turns[-1][0]:
            # The chunk continues the previous chunk's last turn.
            turns[-1][2] = f"{turns[-1][2]} {blocks[0]}"
            start = 1
        for event_id, block in zip(event_ids[start:], blocks[start:]):
            speaker, text = _split_speaker(block, known)
            turns.append([event_id, speaker, text])
    return [(t[0], t[1], t[2]) for t in turns]


def _split_speaker(block: str, known: Sequence[str]) -> Tuple[str, str]:
    for speaker in known:
        if block.startswith(f"{speaker}: "):
            return speaker, block[len(speaker) + 2 :]
    speaker, sep, text = block.partition(": ")
    return (speaker, text) if sep else ("", block)


def _version_chunks(
    memory: Memory, document_id: str, version_id: str, conversation_ref: str, speakers: Any
) -> Optional[List[Dict[str, Any]]]:
    """Every chunk of a version in order, or ``None`` when the version has none yet."""
    query = " ".join([conversation_ref, *[str(s) for s in speakers]])
    seed = [
        r.to_dict()
        for r in memory.search(query, k=20, document_ids=[document_id]).results
        if r.version_id == version_id
    ]
    if not seed:
        # No chunk matched the query: start from a claim's chunk instead.
        for claim in memory.claims(document_id=document_id):
            for occurrence in claim.to_dict().get("occurrences") or []:
                if occurrence.get("version_id") == version_id:
                    seed.append({"chunk_id": occurrence["chunk_id"]})
    if not seed:
        return None
    found: Dict[str, Dict[str, Any]] = {}

    def around(chunk_id: str) -> List[Dict[str, Any]]:
        near = [r.to_dict() for r in memory.adjacent_chunks(chunk_id, 2).results]
        for chunk in near:
            found[chunk["chunk_id"]] = chunk
        return near

    near = around(seed[0]["chunk_id"])
    if not near:
        return None
    # Walk to both ends, two chunks at a time.
    for edge in (0, -1):
        current = near
        while True:
            step = around(current[edge]["chunk_id"])
            if not step or step[edge]["chunk_id"] == current[edge]["chunk_id"]:
                break
            current = step
    return sorted(found.values(), key=lambda c: (c.get("char_span") or {}).get("start", 0))
