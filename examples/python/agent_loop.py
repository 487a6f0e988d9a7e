"""A minimal agent loop over RememberStack: remember the conversation, recall before answering.

No LLM is needed to run it: where an agent would call its model, this prints the
context it would hand over. Run it after `pip install` of the `remember` package
(bindings/python: `maturin develop`):

    python examples/python/agent_loop.py
"""

import tempfile
from pathlib import Path

import remember

CONVERSATION = {
    "session_time": "2024-06-03T09:30:00Z",
    "messages": [
        {"event_id": "m1", "speaker": "Maria", "text": "Morning! The nightly backup failed again on Saturday."},
        {"event_id": "m2", "speaker": "Joao", "text": "I saw that. The cold-storage bucket hit its quota, so I raised it to 2 TB."},
        {"event_id": "m3", "speaker": "Maria", "text": "Thanks. Can you also move the runners to the new rack next week?"},
        {"event_id": "m4", "speaker": "Joao", "text": "Sure, I will schedule the runner migration for Tuesday afternoon."},
    ],
}

QUESTIONS = [
    "Why did the nightly backup fail?",
    "When is the runner migration?",
]


def render_context(bundle: remember.Result) -> str:
    """The prompt section an agent would send its model: evidence with provenance."""
    lines = []
    for item in bundle.claims_and_sources.results:
        turns = f" turns {', '.join(item.event_ids)}" if item.event_ids else ""
        text = " ".join(item.text.split())
        text = text if len(text) <= 160 else text[:157] + "..."
        lines.append(f"- {text}  [{item.kind} from {item.source_ref}{turns}]")
    for fact in bundle.facts.results:
        lines.append(f"- fact: {fact.statement}  [fact {fact.fact_id}, {fact.evidence_count} evidence]")
    return "\n".join(lines) or "(nothing remembered about this)"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, remember.Memory(Path(tmp) / "memory.db") as memory:
        # 1. Remember what was said (a later turn would use append_messages).
        memory.ingest_conversation(CONVERSATION, source_ref="chat/standup")
        memory.append_messages(
            "chat/standup",
            [{"event_id": "m5", "speaker": "Maria", "text": "Great, the backup ran fine last night."}],
        )
        memory.process_until_idle()

        # 2. For each user question: recall, then (here) show what the model would see.
        for question in QUESTIONS:
            bundle = memory.combined_context(question)
            print(f"user: {question}")
            print("context:")
            print(render_context(bundle))
            print()


if __name__ == "__main__":
    main()
