"""Smoke test of an installed wheel (run by test.sh from a directory outside the
source tree, in a fresh virtualenv where only the wheel is installed): the package
imports from site-packages, ships its type information, and runs the engine
offline end to end."""

import os
import sys
import tempfile

import remember

package_dir = os.path.dirname(remember.__file__)
assert "site-packages" in package_dir, f"remember imported from {package_dir}, not the wheel"
for shipped in ("py.typed", "_native.pyi", "__init__.py"):
    assert os.path.exists(os.path.join(package_dir, shipped)), f"the wheel lacks {shipped}"

with tempfile.TemporaryDirectory() as tmp:
    memory = remember.Memory(os.path.join(tmp, "memory.db"), namespace="wheel")
    receipt = memory.ingest_text("Ada Lovelace wrote the first program.", source_ref="notes/ada")
    assert receipt.to_dict()["outcome"] == "created", receipt.to_dict()
    memory.process_until_idle()
    bundle = memory.combined_context("Who wrote the first program?").to_dict()
    texts = [r["text"] for r in bundle["claims_and_sources"]["results"]]
    assert any("Ada Lovelace" in t for t in texts), bundle
    try:
        memory.trace("not-an-id")
    except remember.RememberError as e:
        assert e.code == "invalid_input", e.code
    else:
        raise AssertionError("a malformed id was accepted")
    memory.close()

print(f"wheel smoke test passed: Python {sys.version.split()[0]}, {package_dir}")
