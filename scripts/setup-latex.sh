#!/usr/bin/env bash
# Installs the LaTeX that `make spec-pdf` (kraftcheck spec typeset --pdf) needs to typeset the
# TLA+ modules with tla2tex: pdflatex and the base LaTeX packages (Debian/Ubuntu, apt-get; needs
# root or sudo).  Only this target needs it; `make setup` and the test suite do not install it.
# Idempotent: when pdflatex is on PATH it only checks.
set -euo pipefail

if command -v pdflatex >/dev/null 2>&1; then
  echo "setup-latex: ok ($(pdflatex --version | head -n1))"
  exit 0
fi
echo "setup-latex: installing pdflatex (texlive-latex-base) for tla2tex"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends texlive-latex-base >/dev/null
command -v pdflatex >/dev/null 2>&1 || {
  echo "setup-latex: could not install pdflatex (texlive-latex-base); install it and rerun" >&2
  exit 1
}
echo "setup-latex: ok ($(pdflatex --version | head -n1))"
