#!/usr/bin/env bash
# How long `/health` waits while two large conversations are ingested at once.
# Writes two ~2.7 MB conversations (distinct speakers, as the issue measured),
# posts both concurrently to a running `remember serve`, polls `/health` every
# 50 ms meanwhile, and prints the slowest `/health` answer and each ingest's time.
# Usage:
#   remember --db /tmp/stall.db serve --workers 0 &
#   scripts/probe-health-stall.sh [BASE_URL] [MESSAGES] [AFTER_SECS]
# BASE_URL defaults to http://127.0.0.1:8420, MESSAGES (per conversation) to 20000;
# AFTER_SECS (default 0) keeps polling that long after the ingests answer, while a
# server with workers processes them.
# It writes to namespace `probe` only.
set -eu
BASE=${1:-http://127.0.0.1:8420}
N=${2:-20000}
AFTER=${3:-0}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

for i in 1 2; do
  python3 - "$N" "$i-$$" >"$dir/conv$i.json" <<'EOF'
import json, sys
# A run tag of its own, so a repeated probe ingests new text (not an unchanged replay).
n, run = int(sys.argv[1]), sys.argv[2]
messages = [
    {"event_id": f"r{run}-m{k}", "speaker": f"Speaker {k % 900}",
     "text": f"Message {k} of run {run}: the quarterly report for region {k % 37} is due on Friday."}
    for k in range(n)
]
json.dump({"source_ref": f"stall-{run}", "conversation": {"messages": messages}}, sys.stdout)
EOF
done
printf 'conversation bodies: %s and %s bytes\n' "$(wc -c <"$dir/conv1.json")" "$(wc -c <"$dir/conv2.json")"

health() { curl -s -o /dev/null -w '%{time_total}\n' "$BASE/health"; }
echo "idle /health: $(health) s"

: >"$dir/health.txt"
(
  while [ ! -e "$dir/done" ]; do
    health >>"$dir/health.txt"
    sleep 0.05
  done
) &
poller=$!

post() {
  curl -s -o "$dir/out$1.json" -w "ingest $1: HTTP %{http_code} in %{time_total} s\n" \
    -X POST "$BASE/v1/namespaces/probe/conversations" \
    -H 'content-type: application/json' --data-binary "@$dir/conv$1.json"
}
started=$(date +%s.%N)
post 1 &
a=$!
post 2 &
b=$!
wait "$a" "$b"
ended=$(date +%s.%N)
cp "$dir/health.txt" "$dir/during.txt"
sleep "$AFTER"
touch "$dir/done"
wait "$poller"

sort -n "$dir/during.txt" | awk -v wall="$(echo "$ended - $started" | bc)" '
  { v[NR] = $1 }
  END {
    printf "both ingests: %.2f s wall\n", wall
    printf "/health during them: %d answers, median %.3f s, slowest %.3f s\n", NR, v[int((NR + 1) / 2)], v[NR]
  }'
if [ "$AFTER" != 0 ]; then
  sort -n "$dir/health.txt" | awk -v after="$AFTER" '
    { v[NR] = $1 }
    END { printf "/health through %s s more: %d answers, median %.3f s, slowest %.3f s\n", after, NR, v[int((NR + 1) / 2)], v[NR] }'
fi
