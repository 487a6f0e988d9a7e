"""Integrations of :mod:`remember` with agent frameworks.

Each framework has its own module, imported on its own (this package imports
none of them, so ``import remember`` stays free of framework dependencies):

- :mod:`remember.integrations.langchain`: a LangChain retriever
  (``RememberRetriever``) and chat message history
  (``RememberChatMessageHistory``); ``pip install 'remember[langchain]'``.
- :mod:`remember.integrations.llamaindex`: a LlamaIndex retriever
  (``RememberRetriever``); ``pip install 'remember[llamaindex]'``.
- :mod:`remember.integrations.openai_agents`: OpenAI Agents SDK function tools
  (``memory_tools(memory)``); ``pip install 'remember[openai-agents]'``.

Every result they return carries the engine's provenance (document, version,
chunk, claim or fact ids, section path, conversation turn ids, source time and
scores) as metadata; see :func:`remember.integrations.recall`, which they share.
"""

from ._records import OPERATIONS, Record, recall, recall_async

__all__ = ["OPERATIONS", "Record", "recall", "recall_async"]
