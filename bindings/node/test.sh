#!/usr/bin/env bash
# Build the Node addon (a debug build of the `rememberstack-node` crate), place it
# as bindings/node/rememberstack.node, and run the binding's tests with Node's
# built-in test runner, then type-check the declarations (index.d.ts, the
# generated types.d.ts and the integrations') with TypeScript under `strict`, and
# test the agent-framework integrations. Honours CARGO_TARGET_DIR.
# Needs Rust (stable), Node.js >= 20 and npm (the dev dependencies — TypeScript, and
# the agent frameworks the integrations are tested against — are installed from
# package-lock.json); then pack the package with `npm pack`, install the tarball into
# a scratch project and smoke-test it there. Exits non-zero on any failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The suites run on the hashing embedder: the same vectors on every machine, no
# model to load (the Rust tests cover the default model).
export REMEMBERSTACK_EMBEDDER="${REMEMBERSTACK_EMBEDDER:-hashing}"
command -v node >/dev/null || { echo "test.sh: node is not installed" >&2; exit 1; }
command -v cargo >/dev/null || { echo "test.sh: cargo is not installed" >&2; exit 1; }

node "$here/scripts/build.js"
node --test "$here/test/"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error && npm run --silent typecheck)
# The framework integrations (rememberstack/ai-sdk, rememberstack/langchain) against
# the real `ai`, `zod` and `@langchain/core` that `npm ci` installed (devDependencies).
node --test "$here/test-integrations/"

# The distribution: pack the package, install the tarball alone into a scratch
# project and smoke-test it there.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
tarball="$(cd "$here" && npm pack --silent --pack-destination "$scratch")"
(cd "$scratch" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "./$tarball" \
  && cp "$here/scripts/pack_smoke.js" . && node pack_smoke.js)
