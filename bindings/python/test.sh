#!/usr/bin/env bash
# Build the `remember` Python package (maturin, dev profile) into a virtualenv and
# run its pytest suite; then build the abi3 wheel, install it alone into a fresh
# virtualenv and smoke-test it there. Exits non-zero on any failure.
#
#   bindings/python/test.sh            # from anywhere; extra arguments go to pytest
#
# The virtualenv is bindings/python/.venv (git-ignored; REMEMBER_VENV overrides it)
# and is reused by later runs. The crate is a member of the repository's Cargo
# workspace, so it shares Cargo.lock and compiled dependencies with `cargo build`
# (CARGO_TARGET_DIR is respected).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# The suites run on the hashing embedder: the same vectors on every machine, no
# model to load (the Rust tests cover the default model).
export REMEMBERSTACK_EMBEDDER="${REMEMBERSTACK_EMBEDDER:-hashing}"
repo="$(cd "$here/../.." && pwd)"
venv="${REMEMBER_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.9,<2" "pytest>=7" "mypy>=1.10"

export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
unset CONDA_PREFIX || true

# The extension, built in the dev profile and installed into the virtualenv
# (editable: the pure-Python package is imported from python/).
(cd "$here" && maturin develop --quiet)

# The CLI, for the test that compares `to_dict()` with `remember --json`: used
# when it is already built (cargo test --workspace builds it), never built here.
target="${CARGO_TARGET_DIR:-$repo/target}"
if [ -z "${REMEMBER_CLI:-}" ] && [ -x "$target/debug/remember" ]; then
  export REMEMBER_CLI="$target/debug/remember"
fi

cd "$here"
# The package's annotations and the native module's stub hold together.
python -m mypy --strict --no-error-summary python/remember
python -m pytest -q -p no:cacheprovider tests "$@"

# The distribution: build the abi3 wheel, install it alone into a fresh
# virtualenv and run the smoke test from outside the source tree.
dist="$(mktemp -d)"
trap 'rm -rf "$dist"' EXIT
maturin build --quiet --profile dev -o "$dist/wheels"
wheel="$(ls "$dist"/wheels/remember-*-cp39-abi3-*.whl)"
"$python" -m venv "$dist/venv"
"$dist/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"
(cd "$dist" && "$dist/venv/bin/python" "$here/scripts/wheel_smoke.py")
