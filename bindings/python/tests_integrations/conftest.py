"""Fixtures of the framework integration tests (run by test-integrations.sh).

Every test runs offline: on the hashing embedder, with no REMEMBERSTACK_* setting
of the caller, and with Python's sockets refusing any network connection (the
frameworks are driven by their own fake models or called directly).
"""

import os
import pathlib
import socket
import subprocess
import sys
import types

import pytest

import remember

REPO = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "python"

DOCUMENT = """# Release plan

## Dates

Version 2.0 ships on 14 March.

## Team

The sync engine was written by Ana Lima.
"""

CONVERSATION = {
    "session_time": "2024-06-03T09:30:00Z",
    "messages": [
        {"event_id": "m1", "speaker": "Maria", "text": "Morning! The nightly backup failed again on Saturday."},
        {
            "event_id": "m2",
            "speaker": "Joao",
            "text": "I saw that. The cold-storage bucket hit its quota, so I raised it to 2 TB.",
        },
        {"event_id": "m3", "speaker": "Maria", "text": "Thanks. Can you also move the runners to the new rack next week?"},
        {"event_id": "m4", "speaker": "Joao", "text": "Sure, I will schedule the runner migration for Tuesday afternoon."},
    ],
}


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch, tmp_path):
    for key in list(os.environ):
        if key.startswith("REMEMBERSTACK_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("REMEMBERSTACK_EMBEDDER", "hashing")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt of Python code to open a network connection fails the test."""
    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family == getattr(socket, "AF_UNIX", None):
            return real_connect(self, address)
        raise AssertionError(f"network access attempted: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(
        socket,
        "create_connection",
        lambda address, *a, **k: (_ for _ in ()).throw(AssertionError(f"network access attempted: {address!r}")),
    )


@pytest.fixture
def memory(tmp_path):
    with remember.Memory(tmp_path / "memory.db") as m:
        yield m


@pytest.fixture
def loaded(memory):
    """A memory holding one document and one conversation, processed."""
    doc = memory.ingest_text(DOCUMENT, source_ref="notes/release", source_time="2024-03-01T00:00:00Z")
    conv = memory.ingest_conversation(CONVERSATION, source_ref="chat/standup")
    memory.process_until_idle()
    return types.SimpleNamespace(memory=memory, doc=doc, conv=conv)


def run_example(name: str) -> str:
    """Run an example script as a subprocess; its standard output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEMBERSTACK_")}
    env["REMEMBERSTACK_EMBEDDER"] = "hashing"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
