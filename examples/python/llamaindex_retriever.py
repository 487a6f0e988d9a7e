"""RememberStack in LlamaIndex: a retriever whose nodes carry provenance.

Runs offline (LlamaIndex's MockLLM stands in for a model). Needs the `remember`
package with its LlamaIndex extra: pip install 'remember[llamaindex]'.

    python examples/python/llamaindex_retriever.py
"""

import tempfile
from pathlib import Path

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

import remember
from remember.integrations.llamaindex import RememberRetriever

PLAN = "# Release plan\n\n## Dates\n\nVersion 2.0 ships on 14 March.\n"
STANDUP = {
    "session_time": "2024-06-03T09:30:00Z",
    "messages": [
        {"event_id": "m3", "speaker": "Maria", "text": "Can you move the runners to the new rack next week?"},
        {"event_id": "m4", "speaker": "Joao", "text": "Sure, I will schedule the runner migration for Tuesday afternoon."},
    ],
}

with tempfile.TemporaryDirectory() as tmp, remember.Memory(Path(tmp) / "memory.db") as memory:
    memory.ingest_text(PLAN, source_ref="notes/release", source_time="2024-03-01T00:00:00Z")
    memory.ingest_conversation(STANDUP, source_ref="chat/standup")
    memory.process_until_idle()

    retriever = RememberRetriever(memory, k=2)
    for question in ["When does version 2.0 ship?", "When is the runner migration?"]:
        for hit in retriever.retrieve(question):
            meta = hit.node.metadata
            turns = f" turns {', '.join(meta['event_ids'])}" if meta.get("event_ids") else ""
            text = " ".join(hit.node.text.split())
            print(f"{hit.score:.3f} {meta['kind']}: {text}  [{meta['source_ref']}{turns}, document {hit.node.ref_doc_id}]")

    # In a query engine: swap MockLLM (which echoes its prompt) for any LLM.
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("When does version 2.0 ship?")
    print("sources:", ", ".join(n.node.metadata["kind"] for n in response.source_nodes))
