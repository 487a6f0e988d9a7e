#!/usr/bin/env bash
# The HTTP quick start: `remember serve` on a store of its own, a document ingested
# (waiting for processing), then one question. Run: bash examples/server/quickstart.sh
set -euo pipefail
remember="${REMEMBER:-remember}"
port="${PORT:-8420}"
dir="$(mktemp -d)"
"$remember" serve --db "$dir/memory.db" --listen "127.0.0.1:$port" --workers 2 2> "$dir/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
until curl -sf "localhost:$port/ready" > /dev/null; do sleep 0.2; done

curl -s -X POST "localhost:$port/v1/namespaces/team/documents?wait=true" \
  -H 'content-type: application/json' \
  -d '{"text": "# HR\n\nAlice Moreno has worked for Acme since March 2024.", "source_ref": "hr"}'
echo
curl -s -X POST "localhost:$port/v1/namespaces/team/operations/facts_context" \
  -H 'content-type: application/json' -d '{"query": "Where does Alice Moreno work?"}'
echo
