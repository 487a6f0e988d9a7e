"""The golden scenario (tests/golden/): driven through the Python package on a
fresh embedded store, it must give exactly tests/golden/expected.json after the
normalisation tests/golden/README.md describes -- the same envelopes the Rust
facade, the CLI, HTTP, MCP and Node give. Its adjudicate seat calls the fake chat
endpoint below, scripted by tests/golden/chat.json."""

import datetime
import http.server
import json
import pathlib
import re
import threading

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
    continuation cursors to <cursor>, floats to 9 significant digits."""
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
        # Cursors are signed with each store's own secret.
        return {
            k: "<cursor>" if k == "continuation" and isinstance(v[k], str) else walk(v[k])
            for k in sorted(v)
        }

    return walk(value)


def _candidate_handle(user, statement):
    """The handle (F1, F2, ...) of the candidate whose statement is `statement`."""
    handle = None
    for line in user.split("\n"):
        if line.startswith("["):
            handle = line[1:].split("]", 1)[0]
        elif line == "  Statement: " + statement:
            return handle
    return None


def scripted_answer(script, user):
    """The script's answer to an adjudication prompt and the index of the rule that
    matched (None: the default), as tests/conformance/src/golden/chat.rs answers."""
    for i, rule in enumerate(script["rules"]):
        if "Statement: " + rule["incoming"] not in user.split("\n"):
            continue
        handle = _candidate_handle(user, rule["candidate"])
        if handle is not None:
            return {**rule["answer"], "fact": handle}, i
    return script["default"], None


class FakeChat:
    """The fake OpenAI-compatible POST /v1/chat/completions on a loopback port, in a
    thread (the binding releases the GIL while the engine works)."""

    def __init__(self, script):
        self.script = script
        self.fired = set()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                model = body.get("model")
                if self.path != "/v1/chat/completions":
                    status, answer = 404, {"error": {"message": f"no such endpoint: {self.path}"}}
                elif model != script["config"]["model"]:
                    message = f"the golden chat script serves model `{script['config']['model']}` only, not `{model}`"
                    status, answer = 404, {"error": {"message": message}}
                else:
                    user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
                    content, rule = scripted_answer(script, user)
                    fake.fired.add(rule)
                    status, answer = 200, {
                        "id": "golden-chat",
                        "object": "chat.completion",
                        "created": 0,
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": json.dumps(content)},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                    }
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def config(self):
        """The `chat` configuration section pointing here."""
        port = self.server.server_address[1]
        return {**self.script["config"], "provider": "openai", "base_url": f"http://127.0.0.1:{port}/v1"}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_the_fake_chat_names_the_candidate():
    script = json.loads((GOLDEN / "chat.json").read_text())
    rule = script["rules"][0]
    prompt = (
        f"INCOMING ASSERTION\nStatement: {rule['incoming']}\n\nCANDIDATE FACTS\n"
        f"[F1] relation: x\n  Statement: other\n[F2] relation: y\n  Statement: {rule['candidate']}\n"
    )
    answer, fired = scripted_answer(script, prompt)
    assert (answer["fact"], fired) == ("F2", 0)
    assert scripted_answer(script, prompt.replace("Statement: " + rule["incoming"], "Statement: x")) == (
        script["default"],
        None,
    )


def test_the_golden_scenario_gives_the_golden_envelopes(tmp_path):
    scenario = json.loads((GOLDEN / "scenario.json").read_text())
    expected = json.loads((GOLDEN / "expected.json").read_text())
    chat = FakeChat(json.loads((GOLDEN / "chat.json").read_text()))
    try:
        out = _drive(scenario, tmp_path, chat)
    finally:
        chat.close()
    assert set(range(len(chat.script["rules"]))) <= chat.fired, "a rule of tests/golden/chat.json never fired"
    got = normalize(out)
    if got != normalize(expected):
        (tmp_path / "golden-python.json").write_text(json.dumps(got, indent=2, sort_keys=True))
    assert got == normalize(expected)


def _drive(scenario, tmp_path, chat):
    config = {"chat": chat.config()}
    with remember.Memory(tmp_path / "memory.db", namespace=scenario["namespace"], config=config) as m:
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
        return {r["operation"]: m.run_operation(r["operation"], r["input"]).to_dict() for r in scenario["reads"]}
