"""The TLC harness end to end on tiny fixture specs (runs TLC)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.manifest import load_manifest
from kraftcore.tlc.runner import run_config

pytestmark = [pytest.mark.tlc]
FIXTURES = {e.name: e for e in load_manifest(REPO_ROOT / "tests/fixtures/tlc")}


def test_ok_run_reports_exact_counts(tlc_toolchain):
    r = run_config(FIXTURES["counter-ok"], workers=1)
    assert (r.status, r.distinct_states, r.depth, r.as_expected) == ("ok", 25, 9, True)
    assert r.tlc_version  # read from TLC's banner


def test_invariant_violation_and_shortest_counterexample(tlc_toolchain):
    r = run_config(FIXTURES["counter-inv"], workers=1)
    assert (r.status, r.violated, r.as_expected) == ("violation", "BelowLimit", True)
    assert [s.action for s in r.counterexample] == ["Init", "Inc", "Inc"]
    assert sorted(r.counterexample[-1].state["count"].values()) == [0, 2]


def test_action_and_temporal_properties(tlc_toolchain):
    assert run_config(FIXTURES["counter-action"], workers=1).violated == "Grows"
    r = run_config(FIXTURES["counter-temporal"], workers=1)
    assert (r.violated, r.as_expected) == ("NeverAll", True) and r.loop_back_to is not None


def test_semantic_error_is_reported_with_place(tlc_toolchain):
    r = run_config(FIXTURES["broken"], workers=1)
    assert r.status == "error" and not r.as_expected
    assert (r.errors[0].module, r.errors[0].line) == ("Broken", 4)


def test_timeout_is_reported(tlc_toolchain):
    r = run_config(FIXTURES["counter-ok"], workers=1, timeout=0.01)
    assert r.status == "timeout" and not r.as_expected


def test_scratch_files_stay_out_of_the_source_tree(tlc_toolchain):
    run_config(FIXTURES["counter-ok"], workers=1)
    assert not list((REPO_ROOT / "tests/fixtures/tlc").glob("states"))
    assert not list((REPO_ROOT / "spec").glob("states"))


def test_missing_jar_gives_a_clear_error(tmp_path):
    env = {"KRAFTCHECK_TLA2TOOLS": str(tmp_path / "nope.jar"), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-m", "kraftcheck", "version", "--json"],
                       capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert p.returncode == 1 and "nope.jar" in json.loads(p.stdout)["error"]


def test_missing_java_gives_install_hint(tmp_path):
    env = {"KRAFTCHECK_JAVA": str(tmp_path / "java"), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-m", "kraftcheck", "version", "--json"],
                       capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert p.returncode == 1 and "make setup" in json.loads(p.stdout)["error"]


def test_cli_run_json_and_exit_code(tmp_path):
    p = subprocess.run([sys.executable, "-m", "kraftcheck", "tlc", "run", "no-such-config", "--json"],
                       capture_output=True, text=True, cwd=REPO_ROOT)
    assert p.returncode == 2 and "no config named" in json.loads(p.stdout)["error"]
