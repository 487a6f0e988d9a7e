#!/usr/bin/env bash
# Build the documentation site (website/, mdBook) into website/book, check its
# internal links and anchors offline (scripts/check-site.py) and write its
# agent-readable index (scripts/llms.py).
#
#   scripts/site.sh
#
# Uses `mdbook` from PATH when it is the pinned version; otherwise installs that
# version once from crates.io into the cache (MDBOOK_ROOT, default
# ~/.cache/rememberstack/mdbook-<version>).
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.5.4
mdbook="$(command -v mdbook || true)"
if [[ -z "$mdbook" || "$("$mdbook" --version)" != "mdbook v$version" ]]; then
  root="${MDBOOK_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/rememberstack/mdbook-$version}"
  if [[ ! -x "$root/bin/mdbook" ]]; then
    cargo install mdbook --locked --version "$version" --no-default-features \
      --features search --root "$root"
  fi
  mdbook="$root/bin/mdbook"
fi
rm -rf website/book
"$mdbook" build website
python3 scripts/check-site.py website/book
# Every decision number the code cites has its section on the Design decisions page.
python3 scripts/check-decisions.py
# The agent-readable index: website/llms.txt (committed, checked here) and, in the
# built site, llms.txt and llms-full.txt.
python3 scripts/llms.py --check
python3 scripts/llms.py website/book
