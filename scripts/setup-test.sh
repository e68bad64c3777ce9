#!/usr/bin/env bash
# What the test suite needs beyond `make setup` (scripts/setup.sh), run by `make test`:
#   - a headless browser for the report's rendering test (tests/test_report_browser.py):
#     Debian's chromium, installed only when no chromium is on PATH (KRAFTCHECK_CHROMIUM
#     names another one).  `make demo` never needs it.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

chromium_ok() {
  [ -n "${KRAFTCHECK_CHROMIUM:-}" ] && [ -x "${KRAFTCHECK_CHROMIUM}" ] && return 0
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1
}
if ! chromium_ok; then
  echo "setup-test: installing chromium (headless browser for the report test)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
  chromium_ok || { echo "setup-test: could not install chromium; install it and rerun" >&2; exit 1; }
fi
echo "setup-test: ok ($(command -v chromium || command -v chromium-browser || echo "$KRAFTCHECK_CHROMIUM"))"
