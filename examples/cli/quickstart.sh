#!/usr/bin/env bash
# The CLI quick start: a store of its own in a temporary directory, a note and a
# conversation ingested and processed, then asked. Run: bash examples/cli/quickstart.sh
set -euo pipefail
remember="${REMEMBER:-remember}"
export REMEMBERSTACK_DB="$(mktemp -d)/memory.db"

printf '# HR\n\nAlice Moreno has worked for Acme since March 2024.\n' \
  | "$remember" ingest - --source-ref notes/hr
cat > "$(dirname "$REMEMBERSTACK_DB")/chat.json" <<'JSON'
{"session_time": "2024-06-03T09:30:00Z", "messages": [
  {"event_id": "m1", "speaker": "Maria", "text": "The nightly backup failed again on Saturday."},
  {"event_id": "m2", "speaker": "Joao", "text": "The bucket hit its quota, so I raised it to 2 TB."}
]}
JSON
"$remember" ingest "$(dirname "$REMEMBERSTACK_DB")/chat.json" --source-ref chat/standup --wait

"$remember" search "why did the nightly backup fail" --k 2
"$remember" ask "Where does Alice Moreno work?"
