#!/usr/bin/env bash
# Storage growth of conversation appends: N single-message appends to one
# conversation (processing after each, or once at the end with --process-once)
# against one ingest of the final conversation. Prints blobs, chunk rows,
# representation bytes and database file size for both.
#
#   scripts/append-growth.sh [--process-once] N [REMEMBER_BINARY]
set -euo pipefail
once=0
if [[ "${1:-}" == "--process-once" ]]; then once=1; shift; fi
n=${1:-150}
bin=${2:-target/release/remember}
work=$(mktemp -d)
if [[ -z "${KEEP:-}" ]]; then trap 'rm -rf "$work"' EXIT; else echo "keeping $work" >&2; fi

# Deterministic messages of about 500 bytes, each naming people and places.
python3 - "$n" "$work" <<'PY'
import json, sys
n, work = int(sys.argv[1]), sys.argv[2]
names = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank"]
cities = ["Lisbon", "Oslo", "Quito", "Nairobi", "Hanoi", "Perth", "Tunis"]
msgs = []
for i in range(n):
    a, b = names[i % 6], names[(i * 7 + 1) % 6]
    c = cities[(i * 3) % 7]
    text = (f"Turn {i}: {a} told {b} that she moved to {c} in {2000 + i % 25} and now works "
            f"for Company{i:04d} Inc. as an engineer on project {i * 13 % 97}. "
            f"{b} said he visited {c} last spring, met Person{i:04d} Smith{i:04d} there, "
            f"and that the weather was mild for the season; they agreed to meet again "
            f"next month to talk about the move, the new job and the long commute. "
            f"{a} also mentioned that her sister studies medicine at the University of {c}.")
    msgs.append({"event_id": f"e{i:05d}", "speaker": a, "text": text,
                 "timestamp": f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"})
for i, m in enumerate(msgs):
    json.dump([m], open(f"{work}/m{i:05d}.json", "w"))
json.dump(msgs, open(f"{work}/all.json", "w"))
PY

measure() { # db label
  local db=$1 label=$2
  local blobs_n blobs_b
  blobs_n=$(find "$db.blobs" -type f 2>/dev/null | wc -l)
  blobs_b=$(find "$db.blobs" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')
  sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  local db_b; db_b=$(stat -c %s "$db")
  sqlite3 -separator ' ' "$db" "
    SELECT '$label',
      'blobs=$blobs_n', 'blob_bytes=$blobs_b',
      'chunks=' || (SELECT count(*) FROM chunks),
      'repr_bytes=' || (SELECT coalesce(sum(length(markdown) + length(turns_json)), 0) FROM representations),
      'claims=' || (SELECT count(*) FROM claims),
      'decisions=' || (SELECT count(*) FROM claim_extraction_decisions),
      'db_bytes=$db_b';"
}

start=$(date +%s)
for i in $(seq 0 $((n - 1))); do
  f=$(printf '%s/m%05d.json' "$work" "$i")
  if [[ $once == 1 ]]; then
    "$bin" --db "$work/appends.db" conversations append --ref chat "$f" >/dev/null
  else
    "$bin" --db "$work/appends.db" conversations append --ref chat --wait "$f" >/dev/null
  fi
done
[[ $once == 1 ]] && "$bin" --db "$work/appends.db" process >/dev/null
mid=$(date +%s)
"$bin" --db "$work/once.db" conversations append --ref chat --wait "$work/all.json" >/dev/null
measure "$work/appends.db" "appends(n=$n,$([[ $once == 1 ]] && echo process-once || echo process-each),$((mid - start))s)"
measure "$work/once.db" "one-ingest"
