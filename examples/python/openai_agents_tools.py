"""RememberStack as OpenAI Agents SDK tools: recall with provenance, remember notes.

Runs offline: the SDK's own ScriptedModel plays the model (it calls a memory tool,
then answers from its output). For a real agent drop `model=` (or name a model)
and set OPENAI_API_KEY. Needs: pip install 'remember[openai-agents]'.

    python examples/python/openai_agents_tools.py
"""

import asyncio
import json
import tempfile
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

import remember
from remember.integrations.openai_agents import memory_tools

STANDUP = {
    "session_time": "2024-06-03T09:30:00Z",
    "messages": [
        {"event_id": "m3", "speaker": "Maria", "text": "Can you move the runners to the new rack next week?"},
        {"event_id": "m4", "speaker": "Joao", "text": "Sure, I will schedule the runner migration for Tuesday afternoon."},
    ],
}
QUESTION = "When is the runner migration?"


def answer_from_memory(call):
    """The scripted model's second turn: answer with the best result, citing it."""
    best = json.loads(call.input[-1]["output"])["results"][0]
    turns = ", ".join(best.get("event_ids", []))
    return [assistant_message(f"{best['text']} ({best['source_ref']}, turns {turns})")]


async def main() -> None:
    set_tracing_disabled(True)  # offline: no trace export
    with tempfile.TemporaryDirectory() as tmp, remember.Memory(Path(tmp) / "memory.db") as memory:
        memory.ingest_conversation(STANDUP, source_ref="chat/standup")
        memory.process_until_idle()

        tools = memory_tools(memory, k=3)
        print("tools:", ", ".join(tool.name for tool in tools))

        model = ScriptedModel(
            [
                [function_call("combined_context", {"query": QUESTION}, call_id="call_1")],
                ModelStep.respond(answer_from_memory),
            ]
        )
        agent = Agent(name="assistant", instructions="Answer from memory; cite sources.", tools=tools, model=model)
        result = await Runner.run(agent, QUESTION)
        for item in result.new_items:
            if item.type == "tool_call_item":
                print(f"tool call: {item.raw_item.name}({item.raw_item.arguments})")
        print(f"user: {QUESTION}")
        print(f"answer: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
