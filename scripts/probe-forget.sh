#!/usr/bin/env bash
# Probe: hard forget of one document that alone supports many facts, on the embedded
# store, with the release binary. Prints the facts it produced, whether the forget
# succeeded, its wall time and peak RSS, and whether the store still opens.
#
#   cargo build --release -p rememberstack-cli
#   scripts/probe-forget.sh [LINES]        # default 24000 lines (~20k facts)
#
# With PROBE_DB=postgres://… it runs against the PostgreSQL store instead, in two
# fresh namespaces of that database (schema REMEMBERSTACK_PG_SCHEMA, if set), with
# the manifest root in a temporary directory.
set -euo pipefail
lines="${1:-24000}"
bin="${REMEMBER_BIN:-target/release/remember}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
db="${PROBE_DB:-$dir/memory.db}"
main=default other=other
case "$db" in
  postgres://* | postgresql://*)
    main="probe-$$-$RANDOM" other="probe-other-$$-$RANDOM"
    export REMEMBERSTACK_MANIFEST_ROOT="$dir/manifests" ;;
esac
size() { if [ -f "$db" ]; then du -sh "$db" | cut -f1; else echo "PostgreSQL"; fi; }

for ((i = 1; i <= lines; i++)); do
  printf 'Person%05d Smith%05d works for Company%05d Inc.\n' "$i" "$i" "$i"
done > "$dir/staff.md"
# A second document in another namespace: it must keep working whatever happens.
printf '# Beta\n\nAna lives in Lisbon.\n' > "$dir/beta.md"

"$bin" --db "$db" --namespace "$main" ingest "$dir/staff.md" --json > "$dir/ingest.json"
"$bin" --db "$db" --namespace "$other" ingest "$dir/beta.md" > /dev/null
/usr/bin/time -f '%e s, %M KB peak' -o "$dir/process.time" "$bin" --db "$db" --namespace "$main" process > /dev/null
"$bin" --db "$db" --namespace "$other" process > /dev/null
doc="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ingested"][0]["document_id"])' "$dir/ingest.json")"
# Every page of the fact listing (at most 1,000 facts a page).
facts="$(python3 - "$bin" "$db" "$main" <<'PY'
import json, subprocess, sys
bin, db, ns = sys.argv[1:4]
n, cursor = 0, None
while True:
    cmd = [bin, "--db", db, "--namespace", ns, "facts", "list", "--limit", "1000", "--json"]
    page = json.loads(subprocess.run(cmd + (["--cursor", cursor] if cursor else []),
                                     check=True, capture_output=True).stdout)
    n += len(page["facts"])
    cursor = page.get("cursor")
    if not cursor:
        break
print(n)
PY
)"
echo "lines: $lines  facts: $facts  db: $(size)  process: $(cat "$dir/process.time")"

# A tiny document forgotten in the big store: the file rewrite must not hold the
# database in memory (peak RSS well under the file size).
printf '# Tiny\n\nBo met Cy.\n' > "$dir/tiny.md"
tiny="$("$bin" --db "$db" --namespace "$main" ingest "$dir/tiny.md" --wait --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ingested"][0]["document_id"])')"
size_before="$(size)"
/usr/bin/time -f '%e s, %M KB peak' -o "$dir/tiny.time" "$bin" --db "$db" --namespace "$main" forget "$tiny" > /dev/null
echo "forget of a tiny document in a $size_before store: $(cat "$dir/tiny.time")"

if /usr/bin/time -f '%e s, %M KB peak' -o "$dir/forget.time" "$bin" --db "$db" --namespace "$main" forget "$doc" --json > "$dir/forget.json" 2> "$dir/forget.err"; then
  echo "forget: ok ($(cat "$dir/forget.time"))"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  removed: facts", r.get("facts"), "claims", r.get("claims"), "chunks", r.get("chunks"), "file_rewrite_pending", r.get("file_rewrite_pending"))' "$dir/forget.json"
else
  echo "forget: FAILED ($(cat "$dir/forget.time")): $(head -c 300 "$dir/forget.err")"
fi
if "$bin" --db "$db" --namespace "$other" search "Lisbon" --json > /dev/null 2> "$dir/after.err"; then
  echo "store opens afterwards, other namespace answers: yes"
else
  echo "store opens afterwards: NO: $(head -c 300 "$dir/after.err")"
fi
