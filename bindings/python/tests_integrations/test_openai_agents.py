"""The OpenAI Agents SDK integration against the real openai-agents package.

The tools are invoked through their ``on_invoke_tool`` entry points, and a whole
agent run is driven by the SDK's own offline ``agents.testing.ScriptedModel``.
"""

import asyncio
import json

import pytest
from agents import Agent, FunctionTool, Runner, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from conftest import run_example

import remember
from remember.integrations.openai_agents import TOOL_NAMES, memory_tools

set_tracing_disabled(True)

SHIP = "When does version 2.0 ship?"
NULLS = {"entity_ids": None, "temporal_mode": None, "at": None, "from_time": None, "to_time": None}


def invoke(tool, arguments, call_id="call_1"):
    """Call a tool as the SDK's runner does: its on_invoke_tool with a ToolContext."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id=call_id, tool_arguments=raw)
    return asyncio.run(tool.on_invoke_tool(ctx, raw))


@pytest.fixture
def tools(loaded):
    return {tool.name: tool for tool in memory_tools(loaded.memory)}


def test_the_tools(loaded, tools):
    assert list(tools) == list(TOOL_NAMES)
    descriptions = {op.name: op.description for op in loaded.memory.operations()}
    for name, tool in tools.items():
        assert isinstance(tool, FunctionTool)
        assert tool.strict_json_schema
        schema = tool.params_json_schema
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == set(schema["properties"])
        if name in descriptions:
            # The model reads the engine's own description of each operation.
            assert tool.description == descriptions[name]
    assert tools["facts_context"].params_json_schema["properties"]["temporal_mode"]["anyOf"][0]["enum"] == [
        "current",
        "at",
        "overlap",
        "history",
    ]


def test_reads_return_results_with_provenance(loaded, tools):
    out = json.loads(invoke(tools["claims_and_sources_context"], {"query": SHIP, "entity_ids": None, "k": 2}))
    first = out["results"][0]
    assert first["kind"] == "claim" and first["ref"].startswith("claim:")
    assert first["text"] == "Version 2.0 ships on 2024-03-14."
    assert first["source_ref"] == "notes/release" and first["document_title"] == "Release plan"
    assert first["asserted_at"] == "2024-03-01T00:00:00Z" and first["relevance"] > 0.5
    assert len(out["results"]) == 2 and out["continuation"]

    turn = json.loads(
        invoke(tools["claims_and_sources_context"], {"query": "When is the runner migration?", "entity_ids": None, "k": None})
    )["results"][0]
    assert turn["event_ids"] == ["m4"] and turn["source_ref"] == "chat/standup"

    entities = json.loads(invoke(tools["resolve_entity"], {"name": "Ana Lima", "k": None}))
    ana = entities["results"][0]
    assert ana["canonical_name"] == "Ana Lima" and ana["entity_id"]

    facts = json.loads(
        invoke(
            tools["facts_context"],
            {"query": "Who wrote the sync engine?", **NULLS, "entity_ids": [ana["entity_id"]], "temporal_mode": "history", "k": None},
        )
    )
    assert facts["results"][0]["kind"] == "fact"
    assert facts["results"][0]["text"] == "The sync engine was written by Ana Lima."
    assert facts["results"][0]["subject_name"] == "Ana Lima"
    assert facts["temporal_scope"]["mode"] == "history"

    combined = json.loads(invoke(tools["combined_context"], {"query": "When is the runner migration?", **NULLS}))
    assert [r["kind"] for r in combined["results"][:2]] == ["claim", "fact"]

    # Nothing relevant: the engine's typed negative reaches the model.
    none = json.loads(invoke(tools["facts_context"], {"query": SHIP, **NULLS, "k": None}))
    assert none["negative"]["kind"] == "no_relevant_memory"

    # envelope=True: the operation's whole envelope.
    env_tools = {t.name: t for t in memory_tools(loaded.memory, envelope=True)}
    env = json.loads(invoke(env_tools["claims_and_sources_context"], {"query": SHIP, "entity_ids": None, "k": 2}))
    assert env["contract"] == "rememberstack.envelope/v1"
    assert env == loaded.memory.claims_and_sources_context(SHIP, k=2).to_dict()


def test_remember_note_then_recall(loaded, tools):
    args = {"text": "Maria prefers tea over coffee at the offsite.", "key": "preferences/maria"}
    note = json.loads(invoke(tools["remember_note"], args, call_id="call_note_1"))
    assert note["lifecycle"] == "promoted" and note["source_key"] == "preferences/maria"
    # The same tool call again (a retry) is idempotent.
    assert json.loads(invoke(tools["remember_note"], args, call_id="call_note_1")) == note
    out = json.loads(
        invoke(tools["claims_and_sources_context"], {"query": "What does Maria prefer at the offsite?", "entity_ids": None, "k": 3})
    )
    assert any("tea" in r["text"] and r["source_ref"] == "preferences/maria" for r in out["results"])

    # A later call revises the note: the newest revision is the one recalled.
    revised = json.loads(
        invoke(tools["remember_note"], {**args, "text": "Maria now prefers coffee at the offsite."}, call_id="call_note_2")
    )
    assert revised["note_id"] == note["note_id"] and revised["version_id"] != note["version_id"]
    texts = [
        r["text"]
        for r in json.loads(
            invoke(tools["claims_and_sources_context"], {"query": "What does Maria prefer?", "entity_ids": None, "k": 5})
        )["results"]
    ]
    assert any("coffee" in t for t in texts) and not any("tea" in t for t in texts)


def test_agent_run_with_the_sdks_scripted_model(loaded):
    """A whole Runner loop, offline: the scripted model resolves an entity, asks
    for its facts with the id it got back, and answers from the tool output."""

    def ask_facts(call):
        resolved = json.loads(call.input[-1]["output"])
        entity = resolved["results"][0]["entity_id"]
        return [
            function_call(
                "facts_context",
                {"query": "Who wrote the sync engine?", **NULLS, "entity_ids": [entity], "k": 3},
                call_id="call_2",
            )
        ]

    def answer(call):
        facts = json.loads(call.input[-1]["output"])["results"]
        return [assistant_message(f"{facts[0]['text']} [{facts[0]['ref']}]")]

    model = ScriptedModel(
        [
            [function_call("resolve_entity", {"name": "Ana Lima", "k": None}, call_id="call_1")],
            ModelStep.respond(ask_facts),
            ModelStep.respond(answer),
        ]
    )
    agent = Agent(
        name="assistant",
        instructions="Answer from memory.",
        tools=memory_tools(loaded.memory),
        model=model,
    )
    result = asyncio.run(Runner.run(agent, "Who wrote the sync engine?"))
    assert result.final_output.startswith("The sync engine was written by Ana Lima. [fact:")
    model.assert_complete()
    assert [t.name for t in model.first_call.tools] == list(TOOL_NAMES)
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert len(outputs) == 2 and "Ana Lima" in outputs[1]


def test_errors_reach_the_model_or_raise(loaded, tools):
    # Invalid input: the engine's message, for the model to correct itself.
    bad = json.loads(invoke(tools["claims_and_sources_context"], {"query": SHIP, "entity_ids": None, "k": 1000}))
    assert bad["error"]["code"] == "invalid_parameter"
    unparsable = json.loads(invoke(tools["resolve_entity"], "not json"))
    assert unparsable["error"]["code"] == "invalid_arguments"

    raising = {t.name: t for t in memory_tools(loaded.memory, raise_errors=True, name_prefix="mem_")}
    assert set(raising) == {f"mem_{n}" for n in TOOL_NAMES}
    loaded.memory.close()
    closed = json.loads(invoke(tools["combined_context"], {"query": SHIP, **NULLS}))
    assert closed["error"]["code"] == "closed"
    with pytest.raises(remember.ClosedError):
        invoke(raising["mem_combined_context"], {"query": SHIP, **NULLS})
    with pytest.raises(remember.ClosedError):
        memory_tools(loaded.memory)


def test_openai_agents_example_runs():
    out = run_example("openai_agents_tools.py")
    assert "tool call: combined_context" in out
    assert "answer: Joao will schedule the runner migration for Tuesday afternoon." in out
    assert "turns m4" in out
