"""The example agent loop runs and prints recalled context with provenance."""

import subprocess
import sys

from conftest import REPO


def test_agent_loop_example_runs():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "agent_loop.py")],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    assert "user: Why did the nightly backup fail?" in out
    backup = out.split("user: When is the runner migration?")[0]
    assert "quota" in backup and "turns m2" in backup
    assert "Tuesday afternoon" in out.split("user: When is the runner migration?")[1]


def test_quickstart_example_runs():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python" / "quickstart.py")],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    lines = out.splitlines()
    assert 1 <= len(lines) <= 3
    assert "14 March" in out and lines[0].startswith("[")
