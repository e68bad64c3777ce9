"""Reproducible installs (issue 10, item 9): requirements.lock pins every package with hashes,
setup (make setup / test / demo) installs from it, the version floors match the APIs used,
and test-only packages are not runtime dependencies."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from kraftcore.paths import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
RUNTIME = [Requirement(r) for r in PYPROJECT["dependencies"]]
DEV = [Requirement(r) for r in PYPROJECT["optional-dependencies"]["dev"]]
RUNTIME_PACKAGES = ("kraftcheck", "kraftcore", "refimpl", "trace_checker", "spark_trace_analysis")
TEST_ONLY = {"pytest", "pytest-xdist", "hypothesis"}


def _lock() -> dict[str, tuple[Version, list[str]]]:
    text = (REPO_ROOT / "requirements.lock").read_text()
    out = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        m = re.match(r"([A-Za-z0-9_.-]+)==(\S+)", block)
        if m:
            out[canonicalize_name(m.group(1))] = (Version(m.group(2)),
                                                   re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return out


def test_every_locked_package_is_pinned_with_hashes():
    lock = _lock()
    assert len(lock) > 20
    for name, (_, hashes) in lock.items():
        assert hashes, f"{name} has no hash in requirements.lock"
    text = (REPO_ROOT / "requirements.lock").read_text()
    reqs = [ln for ln in text.splitlines() if ln and not ln.startswith((" ", "#"))]
    assert all("==" in ln for ln in reqs), [ln for ln in reqs if "==" not in ln]


def test_the_lock_satisfies_pyproject():
    lock = _lock()
    for r in RUNTIME + DEV:
        name = canonicalize_name(r.name)
        assert name in lock, f"{r.name} is not in requirements.lock (run `make lock`)"
        assert r.specifier.contains(lock[name][0], prereleases=True), \
            f"requirements.lock pins {r.name}=={lock[name][0]}, pyproject asks {r.specifier}"
    assert "setuptools" in lock        # the build backend, for the --no-build-isolation install


def _imports(package: str) -> set[str]:
    names = set()
    for f in (REPO_ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def _uses(attr: str, package: str) -> bool:
    return any(attr in f.read_text() for f in (REPO_ROOT / package).rglob("*.py"))


def test_version_floors_match_the_apis_used():
    spec = {canonicalize_name(r.name): r.specifier for r in RUNTIME}
    if _uses("arrow_udf", "spark_trace_analysis"):       # new in pyspark 4.1
        assert not spec["pyspark"].contains("4.0.1") and spec["pyspark"].contains("4.1.0")
        assert not spec["pyarrow"].contains("17.0.0")    # pyspark 4.1's floor for Arrow UDFs


def test_test_only_packages_are_not_runtime_dependencies():
    runtime = {canonicalize_name(r.name) for r in RUNTIME}
    assert not runtime & TEST_ONLY, runtime & TEST_ONLY
    assert TEST_ONLY <= {canonicalize_name(r.name) for r in DEV}
    used = set().union(*(_imports(p) for p in RUNTIME_PACKAGES))
    assert not used & {"pytest", "hypothesis", "xdist"}, used & {"pytest", "hypothesis"}
    assert "duckdb" not in used     # the benchmark's peer (the `bench` extra) only


def test_setup_installs_from_the_lock_with_hashes():
    setup = (REPO_ROOT / "scripts/setup.sh").read_text()
    assert "--require-hashes" in setup and "-r requirements.lock" in setup
    assert "--no-deps" in setup and "requirements.lock" in setup.split("stamp=", 1)[1].split("\n")[0]
    make = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^test: setup", make, re.M) and re.search(r"^demo: setup", make, re.M)


def test_setup_writes_the_bytecode_of_the_venv_and_of_every_project_package():
    """setup compiles every module once (scripts/setup.sh): where the environment sets
    PYTHONDONTWRITEBYTECODE, Python would otherwise compile pyspark, pyarrow, matplotlib and
    this project from source in every process it starts."""
    import importlib.util
    import sys

    setup = (REPO_ROOT / "scripts/setup.sh").read_text()
    listed = re.search(r'^PROJECT_PACKAGES="([^"]*)"', setup, re.M).group(1).split()
    find = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert sorted(listed) == sorted(p.rstrip("*") for p in find["packages"]["find"]["include"])
    assert "compileall" in setup and "$PROJECT_PACKAGES" in setup.split("compileall", 1)[1]
    # this environment was set up by that script: the bytecode is there
    import pyspark.sql.dataframe

    import spark_trace_analysis.jobs
    for mod in (pyspark.sql.dataframe, spark_trace_analysis.jobs):
        assert mod.__file__.startswith((sys.prefix, str(REPO_ROOT)))
        assert Path(importlib.util.cache_from_source(mod.__file__)).is_file(), mod.__file__
