"""The example agent loop runs and prints recalled context with provenance."""

import subprocess
import sys

from conftest import REPO


def _run(example: str) -> str:
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / example)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout


def test_agent_loop_example_runs():
    out = _run("agent_loop.py")
    assert "user: Why did the nightly backup fail?" in out
    backup = out.split("user: When is the runner migration?")[0]
    assert "quota" in backup and "turns m2" in backup
    assert "Tuesday afternoon" in out.split("user: When is the runner migration?")[1]


def test_quickstart_example_runs():
    out = _run("quickstart.py")
    lines = out.splitlines()
    assert 1 <= len(lines) <= 3
    assert "14 March" in out and lines[0].startswith("[")
