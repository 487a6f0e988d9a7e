import json
import os
import pathlib
import types

import pytest

import remember

REPO = pathlib.Path(__file__).resolve().parents[3]
SAMPLES = REPO / "crates" / "rememberstack-cli" / "samples"


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch, tmp_path):
    """No REMEMBERSTACK_* setting of the caller's leaks into a test; every test runs on
    the hashing embedder (the same vectors on every machine, no model to load)."""
    for key in list(os.environ):
        if key.startswith("REMEMBERSTACK_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("REMEMBERSTACK_EMBEDDER", "hashing")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture
def db(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def memory(db):
    with remember.Memory(db) as m:
        yield m


@pytest.fixture
def conversation():
    return json.loads((SAMPLES / "standup.json").read_text())


@pytest.fixture
def notes_file(tmp_path):
    path = tmp_path / "field-notes.md"
    path.write_text((SAMPLES / "field-notes.md").read_text())
    return path


@pytest.fixture
def loaded(memory, notes_file, conversation):
    """A memory holding the CLI's two samples, processed."""
    doc = memory.ingest_file(notes_file)
    conv = memory.ingest_conversation(conversation, source_ref="samples/standup")
    report = memory.process_until_idle()
    return types.SimpleNamespace(memory=memory, doc=doc, conv=conv, report=report)
