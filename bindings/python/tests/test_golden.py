"""The golden scenario (tests/golden/): driven through the Python package on a
fresh embedded store, it must give exactly tests/golden/expected.json after the
normalisation tests/golden/README.md describes -- the same envelopes the Rust
facade, the CLI, HTTP, MCP and Node give."""

import datetime
import json
import pathlib
import re

import remember

GOLDEN = pathlib.Path(__file__).resolve().parents[3] / "tests" / "golden"
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _is_run_time(s):
    if len(s) < 20 or s[4] != "-" or s[10] != "T":
        return False
    try:
        datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return False
    return s[:4] >= "2025"


def normalize(value):
    """UUIDs to <idN> by first appearance (keys sorted), run times to <now>,
    floats to 9 significant digits."""
    ids = {}

    def placeholder(match):
        return ids.setdefault(match.group(0), f"<id{len(ids)}>")

    def walk(v):
        if isinstance(v, str):
            return "<now>" if _is_run_time(v) else UUID.sub(placeholder, v)
        if isinstance(v, bool) or isinstance(v, int) or v is None:
            return v
        if isinstance(v, float):
            return float(f"{v:.8e}")
        if isinstance(v, list):
            return [walk(x) for x in v]
        return {k: walk(v[k]) for k in sorted(v)}

    return walk(value)


def test_the_golden_scenario_gives_the_golden_envelopes(tmp_path):
    scenario = json.loads((GOLDEN / "scenario.json").read_text())
    expected = json.loads((GOLDEN / "expected.json").read_text())
    with remember.Memory(tmp_path / "memory.db", namespace=scenario["namespace"]) as m:
        for doc in scenario["documents"]:
            m.ingest_text(doc["text"], source_ref=doc["source_ref"], source_time=doc["source_time"])
        conv = scenario["conversation"]
        m.ingest_conversation(
            conv["conversation"], source_ref=conv["source_ref"], source_time=conv["source_time"]
        )
        m.process_until_idle()
        c = scenario["correction"]
        found = m.run_operation(c["find"]["operation"], c["find"]["input"]).to_dict()
        target = next(r for r in found["results"] if r.get("object_name") == c["object_name"])
        m.correct_fact(target["fact_id"], c["statement"], c["reason"], request_id=c["request_id"])
        m.process_until_idle()
        out = {r["operation"]: m.run_operation(r["operation"], r["input"]).to_dict() for r in scenario["reads"]}
    got = normalize(out)
    if got != normalize(expected):
        (tmp_path / "golden-python.json").write_text(json.dumps(got, indent=2, sort_keys=True))
    assert got == normalize(expected)
