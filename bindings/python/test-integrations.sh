#!/usr/bin/env bash
# Test the framework integrations (remember.integrations: LangChain, LlamaIndex,
# the OpenAI Agents SDK) against the real packages from PyPI: build the `remember`
# package (maturin, dev profile) into its own virtualenv with the three frameworks
# at the versions the extras in pyproject.toml name as lower bounds, type-check the
# package with them installed (mypy --strict), and run tests_integrations/.
# Exits non-zero on any failure.
#
#   bindings/python/test-integrations.sh      # from anywhere; extra arguments go to pytest
#
# The virtualenv is bindings/python/.venv-integrations (git-ignored;
# REMEMBER_INTEGRATIONS_VENV overrides it) and is reused by later runs. Installing
# needs PyPI; the tests themselves need no network (the frameworks run on their own
# fake models, or their tools and retrievers are called directly).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# The suites run on the hashing embedder: the same vectors on every machine, no
# model to load.
export REMEMBERSTACK_EMBEDDER="${REMEMBERSTACK_EMBEDDER:-hashing}"
venv="${REMEMBER_INTEGRATIONS_VENV:-$here/.venv-integrations}"
python="${PYTHON:-python3}"

# The framework versions tested (the extras' lower bounds in pyproject.toml).
frameworks=(
  "langchain-core==1.8.3"
  "llama-index-core==0.14.25"
  "openai-agents==0.24.0"
)

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.9,<2" "pytest>=7" "mypy>=1.10" "${frameworks[@]}"

export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
unset CONDA_PREFIX || true

# The extension, built in the dev profile and installed into the virtualenv
# (editable: the pure-Python package is imported from python/).
(cd "$here" && maturin develop --quiet)

cd "$here"
# The integrations type-check against the frameworks' own annotations.
python -m mypy --strict --no-error-summary python/remember
python -m pytest -q -p no:cacheprovider tests_integrations "$@"
