#!/usr/bin/env python3
"""Check that every decision number the repository cites is documented.

Run from anywhere:

    python3 scripts/check-decisions.py

Code comments, SQL migrations, bindings and the top-level Markdown files cite
decisions from the design log as `D<n>`, `(D<n>)`, `D<n>/D<m>` or a range
`D<n>–D<m>` (every number in a range counts as cited). Each cited number must
have a section with the anchor `{#d<n>}` in website/src/decisions.md.

What is scanned: every text file under crates/, tests/, bindings/, scripts/ and
examples/, plus ARCHITECTURE.md, CONTRIBUTING.md, SECURITY.md, CHANGELOG.md and
README.md. Skipped: directories named `node_modules` or `target`, directories
whose name starts with a dot (virtualenvs and tool caches such as
bindings/python/.venv, .mypy_cache), `__pycache__`, and binary files.

What is not a citation (LoCoMo conversation ids, which share the `D<n>` shape):

* a turn id: `D<n>:` directly followed by a digit or `{` (`"D1:3"`, and the
  format string `"D1:{i}"` that produces one);
* a bare session id on a line that also holds a turn id (`D3:7` -> `D3`);
* session ids named as sessions: `D<n>` right after the word "session" or
  "sessions", and the ids listed with it (`sessions D2 and D1`).

Exit status: 0 with a one-line summary when every cited number has a section;
1 with one `file:line: D<n>` line per undocumented citation otherwise.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECISIONS_PAGE = os.path.join("website", "src", "decisions.md")
SCAN_DIRS = ["crates", "tests", "bindings", "scripts", "examples"]
SCAN_FILES = [
    "ARCHITECTURE.md",
    "CONTRIBUTING.md",
    "SECURITY.md",
    "CHANGELOG.md",
    "README.md",
]
SKIP_DIRS = {"node_modules", "target", "__pycache__"}

# A decision number: D followed by one to three digits, whole word.
CITE = re.compile(r"\bD([0-9]{1,3})\b")
# A range of decisions, D<n>–D<m> (en dash, em dash or hyphen).
RANGE = re.compile(r"\bD([0-9]{1,3})\s*[\u2013\u2014-]\s*D([0-9]{1,3})\b")
# A LoCoMo turn id or the format string that builds one: D1:3, "D1:{i}".
TURN_ID = re.compile(r"\bD[0-9]{1,3}:[0-9{]")
# LoCoMo session ids named as such: "session D2", "sessions D2 and D1".
SESSION_LIST = re.compile(
    r"\bsessions?\s+D[0-9]{1,3}(?:\s*(?:,|and|or|&)\s*D[0-9]{1,3})*\b",
    re.IGNORECASE,
)
ANCHOR = re.compile(r"\{#d([0-9]{1,3})\}")


def files_to_scan():
    for d in SCAN_DIRS:
        top = os.path.join(ROOT, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(
                n for n in dirnames if n not in SKIP_DIRS and not n.startswith(".")
            )
            for name in sorted(filenames):
                yield os.path.join(dirpath, name)
    for f in SCAN_FILES:
        path = os.path.join(ROOT, f)
        if os.path.isfile(path):
            yield path


def read_text(path):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def spans(pattern, line):
    return [m.span() for m in pattern.finditer(line)]


def inside(pos, ranges):
    return any(a <= pos < b for a, b in ranges)


def citations_in_line(line):
    """The decision numbers a line cites, in order of appearance."""
    turn_ids = spans(TURN_ID, line)
    sessions = spans(SESSION_LIST, line)
    out = []
    for m in CITE.finditer(line):
        if inside(m.start(), turn_ids) or inside(m.start(), sessions):
            continue
        if turn_ids:
            # A bare D<n> next to a turn id is that turn's session id.
            continue
        out.append(int(m.group(1)))
    for m in RANGE.finditer(line):
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo < hi:
            out.extend(range(lo + 1, hi))
    return out


def collect():
    """(relative path, line number, decision number) for every citation."""
    sites = []
    for path in files_to_scan():
        text = read_text(path)
        if text is None:
            continue
        rel = os.path.relpath(path, ROOT)
        for lineno, line in enumerate(text.splitlines(), 1):
            for n in citations_in_line(line):
                sites.append((rel, lineno, n))
    return sites


def documented():
    path = os.path.join(ROOT, DECISIONS_PAGE)
    text = read_text(path)
    if text is None:
        return None
    return {int(n) for n in ANCHOR.findall(text)}


def main():
    sites = collect()
    cited = sorted({n for _, _, n in sites})
    have = documented()
    if have is None:
        print(f"check-decisions: {DECISIONS_PAGE} is missing", file=sys.stderr)
        return 1
    missing = [(f, l, n) for f, l, n in sites if n not in have]
    if missing:
        for f, l, n in missing:
            print(f"{f}:{l}: D{n} has no {{#d{n}}} section in {DECISIONS_PAGE}")
        undocumented = sorted({n for _, _, n in missing})
        print(
            f"check-decisions: {len(undocumented)} cited decision(s) undocumented: "
            + ", ".join(f"D{n}" for n in undocumented),
            file=sys.stderr,
        )
        return 1
    print(
        f"check-decisions: ok, {len(cited)} cited decisions at {len(sites)} "
        f"citation sites, all documented in {DECISIONS_PAGE}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
