"""remember.integrations without any framework installed: the shared records, and
a clear ImportError naming the extra for each framework module. (The frameworks
themselves are tested by test-integrations.sh, in tests_integrations/.)"""

import importlib.util
import subprocess
import sys

import pytest

import remember
from remember.integrations import OPERATIONS, Record, recall

FRAMEWORKS = {
    "langchain": ("langchain_core", "langchain"),
    "llamaindex": ("llama_index.core", "llamaindex"),
    "openai_agents": ("agents", "openai-agents"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def test_the_package_imports_no_framework():
    code = (
        "import sys, remember, remember.integrations\n"
        "print(sorted(m for m in ('langchain_core', 'llama_index', 'agents') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_a_missing_framework_names_its_extra(name):
    module, extra = FRAMEWORKS[name]
    if _installed(module):
        pytest.skip(f"{module} is installed here")
    done = subprocess.run(
        [sys.executable, "-c", f"import remember.integrations.{name}"], capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "ImportError" in done.stderr
    assert f"remember[{extra}]" in done.stderr and f"--extras {extra}" in done.stderr


def test_recall_records_carry_provenance(loaded):
    records = recall(loaded.memory, "Why did the nightly backup fail?", k=3)
    assert records and all(isinstance(r, Record) for r in records)
    assert len(records) <= 3
    for r in records:
        assert r.ref == r.metadata["record"] == f"{r.kind}:{r.metadata[r.kind + '_id']}"
        assert r.metadata["document_id"] and r.metadata["version_id"] and r.metadata["asserted_at"]
        assert r.score == r.metadata["score"]
    assert any(r.metadata["event_ids"] for r in records)

    combined = recall(loaded.memory, "Why did the nightly backup fail?", operation="combined_context", k=5)
    assert len(combined) == 5 and {r.kind for r in combined} >= {"fact"}
    assert OPERATIONS == ("claims_and_sources_context", "facts_context", "combined_context")
    with pytest.raises(remember.InvalidInput):
        recall(loaded.memory, "x", operation="search")
