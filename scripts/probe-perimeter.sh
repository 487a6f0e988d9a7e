#!/usr/bin/env bash
# Send what a web page (or a DNS rebinding) can send to a running keyless
# `remember serve`, and the requests that used to grow its memory, and print the
# status codes and sizes. Usage:
#   remember --db /tmp/probe.db serve &          # keyless, loopback
#   scripts/probe-perimeter.sh [BASE_URL] [SERVER_PID]
# BASE_URL defaults to http://127.0.0.1:8420; with SERVER_PID the server's RSS is
# printed too. It writes to namespace `probe` only.
set -u
BASE=${1:-http://127.0.0.1:8420}
PID=${2:-}
docs="$BASE/v1/namespaces/probe/documents"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
poisoned() { curl -s "$docs" | grep -o '"source_ref":"poison[0-9]*"' | wc -l | tr -d ' '; }
row() { printf '%-58s %s\n' "$1" "$2"; }
rss() { [ -n "$PID" ] && echo "$(($(ps -o rss= -p "$PID") / 1024)) MB" || echo "(no pid given)"; }

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'

# A document to aim at, ingested the way a real client does.
doc=$(curl -s -X POST "$docs?wait=true" -H 'content-type: application/json' \
  -d '{"text":"# Probe\n\nAlice works for Acme.","source_ref":"probe"}' |
  sed -n 's/.*"document_id":"\([^"]*\)".*/\1/p')

echo "== what a foreign web page can send"
row "text/plain POST raw ingest (memory poisoning)" \
  "$(code -X POST "$docs?source_ref=poison" -H 'content-type: text/plain' --data 'Alice works for Mallory.')"
row "form-encoded POST raw ingest (curl -d)" \
  "$(code -X POST "$docs?source_ref=poison2" --data 'Alice works for Mallory.')"
row "GET documents, Host: attacker.example (DNS rebinding)" \
  "$(code -H 'Host: attacker.example' "$docs")"
row "POST /mcp initialize, Host: attacker.example" \
  "$(code -X POST "$BASE/mcp" -H 'Host: attacker.example' -H 'content-type: application/json' \
      -H 'accept: application/json, text/event-stream' -d "$init")"
row "GET documents, Origin: https://evil.example" \
  "$(code -H 'Origin: https://evil.example' "$docs")"
row "JSON POST ingest, Origin: https://evil.example" \
  "$(code -X POST "$docs" -H 'Origin: https://evil.example' -H 'content-type: application/json' \
      -d '{"text":"Alice works for Mallory.","source_ref":"poison3"}')"
row "bodyless POST .../documents/{id}/forget" "$(code -X POST "$docs/$doc/forget")"
row "documents the attacks wrote" "$(poisoned)"
row "GET the attacked document afterwards" "$(code "$docs/$doc")"

echo "== what a client can make the server keep"
metrics_before=$(curl -s "$BASE/metrics" | wc -c | tr -d ' ')
long=$(printf 'M%.0s' $(seq 4000))
for i in $(seq 200); do
  curl -s -o /dev/null -X "${long}${i}" "$BASE/v1/namespaces" || true
done
metrics_after=$(curl -s "$BASE/metrics" | wc -c | tr -d ' ')
row "/metrics bytes before -> after 200 invented 4 KB methods" "$metrics_before -> $metrics_after"
rss_before=$(rss)
ok=0
refused=0
for i in $(seq 100); do
  c=$(code -X POST "$BASE/mcp" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' -d "$init")
  if [ "$c" = 200 ]; then ok=$((ok + 1)); else refused=$((refused + 1)); fi
done
row "100 MCP initialize: opened / refused" "$ok / $refused"
row "server RSS before -> after the initializes" "$rss_before -> $(rss)"
