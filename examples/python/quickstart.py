# The Python quick start: an embedded memory in a temporary directory, one note and
# one conversation, processed, then asked. Run: python examples/python/quickstart.py
import tempfile

import remember

with tempfile.TemporaryDirectory() as dir, remember.Memory(f"{dir}/memory.db") as memory:
    memory.ingest_text("# Release plan\n\nVersion 2.0 ships on 14 March.\n", source_ref="notes/release")
    memory.ingest_conversation(
        {"messages": [
            {"event_id": "m1", "speaker": "Ana", "text": "Did QA sign off on the sync engine?"},
            {"event_id": "m2", "speaker": "Ben", "text": "Yes, QA signed off after the load tests passed."},
        ]},
        source_ref="chat/release",
    )
    memory.process_until_idle()
    context = memory.claims_and_sources_context("When does version 2.0 ship?")
    for result in context.results[:3]:
        print(f"[{result.kind}]", " ".join(result.text.split()))
