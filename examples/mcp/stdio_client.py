"""The MCP quick start, without an agent: speak MCP's JSON-RPC to `remember mcp` over
stdio as an agent would — initialize, list the tools, ingest a note, ask.
Run: python3 examples/mcp/stdio_client.py (with `remember` on PATH, or REMEMBER=path)."""

import json
import os
import subprocess
import tempfile

remember = os.environ.get("REMEMBER", "remember")
db = os.path.join(tempfile.mkdtemp(), "memory.db")
server = subprocess.Popen(
    [remember, "--db", db, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
)


def send(message):
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()


def request(id, method, params):
    send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    while True:
        answer = json.loads(server.stdout.readline())
        if answer.get("id") == id:
            return answer["result"]


request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "quickstart", "version": "1"}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
tools = request(2, "tools/list", {})["tools"]
print("tools:", ", ".join(t["name"] for t in tools))
request(3, "tools/call", {"name": "ingest", "arguments": {
    "text": "# HR\n\nAlice Moreno has worked for Acme since March 2024.",
    "source_ref": "notes/hr", "wait": True}})
answer = request(4, "tools/call", {"name": "facts_context",
                                   "arguments": {"query": "Where does Alice Moreno work?"}})
for fact in answer["structuredContent"]["results"][:3]:
    print("fact:", fact["statement"])
server.stdin.close()
server.wait(timeout=30)
