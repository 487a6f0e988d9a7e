#!/usr/bin/env python3
"""Write JSON inputs that used to amplify when rendered to Markdown.

  deep-keys.json      ~18 KB: ten nested objects with 800-byte keys over an array
                      of 5,000 zeros (every leaf used to repeat the 8 KB key path).
  tiny-records-N.json ~30 KB each: an array of 7,500 one-element arrays (every
                      record used to become its own section, hence its own chunk).

Usage: scripts/gen-json-amplifiers.py OUT_DIR
"""
import json
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(out, exist_ok=True)

doc = [0] * 5000
for level in range(10):
    doc = {chr(ord("a") + level) * 800: doc}
with open(os.path.join(out, "deep-keys.json"), "w") as f:
    json.dump(doc, f, separators=(",", ":"))

for n in (1, 2):
    with open(os.path.join(out, f"tiny-records-{n}.json"), "w") as f:
        json.dump([[(n + i) % 10] for i in range(7500)], f, separators=(",", ":"))
