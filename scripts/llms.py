#!/usr/bin/env python3
"""The agent-readable index of the documentation (https://llmstxt.org): llms.txt
lists every page of the site with its first sentence; llms-full.txt holds every
page's Markdown, includes resolved, in the site's order.

    python3 scripts/llms.py website/book   # writes website/book/llms.txt and llms-full.txt
    python3 scripts/llms.py --check        # fails if the committed website/llms.txt is stale

`scripts/site.sh` runs both after building the site. The committed website/llms.txt
is the index with paths into the repository; the built one links the site's pages.
"""

import os
import re
import sys

SRC = "website/src"
INCLUDE = re.compile(r"\{\{#include ([^}:\s]+)(?::[^}]*)?\}\}")
LINK = re.compile(r"^\s*-?\s*\[([^\]]+)\]\(([^)]+\.md)\)")
PART = re.compile(r"^# (.+)$")


def pages():
    """(part, title, path) in SUMMARY order."""
    part = None
    with open(os.path.join(SRC, "SUMMARY.md"), encoding="utf-8") as f:
        for line in f:
            if m := PART.match(line):
                part = None if m.group(1) == "Summary" else m.group(1)
            elif m := LINK.match(line):
                yield part, m.group(1), m.group(2)


def markdown(path):
    """A page's Markdown with its includes resolved (relative to the page)."""
    full = os.path.join(SRC, path)
    with open(full, encoding="utf-8") as f:
        text = f.read()

    def include(m):
        target = os.path.normpath(os.path.join(os.path.dirname(full), m.group(1)))
        with open(target, encoding="utf-8") as f:
            return f.read()

    return INCLUDE.sub(include, text)


def summary(text):
    """The first sentence of a page's first paragraph of prose."""
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block or block.startswith(("#", "<!--", "```", "|", "-", "{{", ">")):
            continue
        sentence = re.split(r"(?<=[.!?])\s", " ".join(block.split()), maxsplit=1)[0]
        return re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", sentence)
    return ""


def index(link):
    out = [
        "# RememberStack",
        "",
        "> A memory engine for AI agents, in Rust: it keeps sources, extracts claims with "
        "exact spans, resolves entities, keeps facts with world-time windows and "
        "contradictions, answers through zero-LLM operations that return typed envelopes, "
        "and forgets on request. One library; CLI, HTTP, MCP, Python and Node surfaces.",
        "",
    ]
    current = object()
    for part, title, path in pages():
        if part != current:
            out += ["", f"## {part or 'Start'}", ""]
            current = part
        note = summary(markdown(path))
        out.append(f"- [{title}]({link(path)})" + (f": {note}" if note else ""))
    return "\n".join(out).replace("\n\n\n", "\n\n") + "\n"


def main(args):
    repo_index = index(lambda p: f"src/{p}")
    if args == ["--check"]:
        with open("website/llms.txt", encoding="utf-8") as f:
            if f.read() != repo_index:
                print("website/llms.txt is stale: run python3 scripts/llms.py --write")
                return 1
        return 0
    if args == ["--write"]:
        with open("website/llms.txt", "w", encoding="utf-8") as f:
            f.write(repo_index)
        return 0
    if len(args) != 1:
        print(__doc__)
        return 2
    book = args[0]
    with open(os.path.join(book, "llms.txt"), "w", encoding="utf-8") as f:
        f.write(index(lambda p: p[: -len(".md")] + ".html"))
    with open(os.path.join(book, "llms-full.txt"), "w", encoding="utf-8") as f:
        for _, title, path in pages():
            f.write(f"<!-- page: {path} -->\n{markdown(path).strip()}\n\n")
    print(f"llms: {sum(1 for _ in pages())} pages indexed in {book}/llms.txt and llms-full.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
