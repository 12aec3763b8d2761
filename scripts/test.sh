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

python -m pip install --quiet --upgrade pip
python -m pip install --quiet ".[test]"   # builds the labextension into the wheel (npm install + build)

mkdir -p .output
[ -d node_modules ] || npm ci --no-audit --no-fund
npm test
python -m pytest -q -p no:cacheprovider "$@"
