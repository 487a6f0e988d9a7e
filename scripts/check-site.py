#!/usr/bin/env python3
"""Offline link check of the built documentation site.

    python3 scripts/check-site.py website/book

Every relative link and image of every page must name a file of the site, and
every `#anchor` an element id of its page. External links (a scheme, or `//`)
are not fetched. Exits 1 and lists each broken link otherwise.
"""

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

# Pages mdBook writes for itself: the print view repeats every page with its links
# rewritten, the 404 page is served from the site root.
SKIP = {"print.html", "404.html", "toc.html"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "a" and attrs.get("href") is not None:
            self.links.append(attrs["href"])
        if tag == "img" and attrs.get("src") is not None:
            self.links.append(attrs["src"])


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    page.feed(text)
    # An include mdBook could not resolve is left in the page as written.
    page.unresolved = "{{#include" in text or "{{#rustdoc_include" in text
    return page


def main(root):
    if not os.path.isdir(root):
        print(f"{root}: no such directory (build the site first: mdbook build website)")
        return 2
    pages = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(dirpath, name))
                pages[path] = parse(path)
    broken = []
    checked = 0
    for path, page in sorted(pages.items()):
        if os.path.basename(path) in SKIP:
            continue
        if page.unresolved:
            broken.append(f"{path}: an include that did not resolve")
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or link.startswith("//"):
                continue
            checked += 1
            target = path
            if parts.path:
                target = os.path.normpath(os.path.join(os.path.dirname(path), unquote(parts.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                if not os.path.exists(target):
                    broken.append(f"{path}: {link}: no file {target}")
                    continue
            if parts.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path}: {link}: no #{parts.fragment} in {target}")
    for line in broken:
        print(line)
    print(f"check-site: {len(pages)} pages, {checked} internal links, {len(broken)} broken")
    return 1 if broken or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "website/book"))
