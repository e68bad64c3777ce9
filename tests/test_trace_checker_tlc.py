"""The trace checker end to end with TLC on the Ticket fixture spec: full-graph build and
cache, symmetry refusal, the recheck of steps leaving the graph, neighbourhood mode, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.manifest import load_manifest
from trace_checker.corpus import validate_corpus
from trace_checker.fullgraph import GraphBuildError, load_graph

pytestmark = [pytest.mark.tlc]
FIX = REPO_ROOT / "tests/fixtures/traces"
ENTRIES = {e.name: e for e in load_manifest(FIX)}

EXPECTED = {
    "valid-request-grant": "valid",
    "valid-beyond-bounds": "valid",          # beyond MaxTicket = 2, yet allowed by the spec
    "partial-valid-holder": "valid",
    "valid-stutter": "valid",
    "invalid-stutter-unknown-action": "invalid",   # a stutter must claim an action of Next
    "invalid-double-grant": "invalid",
    "invalid-wrong-action": "invalid",
    "invalid-beyond-bounds": "invalid",      # a bug beyond the bounds is still a bug
    "invalid-injection-string": "invalid",
    "partial-invalid-holder": "invalid",
    "malformed-truncated": "malformed",
    "malformed-unknown-variable": "malformed",
    "malformed-out-of-order": "malformed",
}
FAIL_STEP = {"invalid-stutter-unknown-action": 3, "invalid-double-grant": 4, "invalid-wrong-action": 2, "invalid-beyond-bounds": 4,
             "invalid-injection-string": 3, "partial-invalid-holder": 4}


def _by_name(summary):
    return {r["file"].rsplit("/", 1)[-1].removesuffix(".jsonl"): r for r in summary["results"]}


def test_full_graph_is_built_once_then_loaded_from_cache(tlc_toolchain):
    first = load_graph(ENTRIES["ticket-graph"], rebuild=True)
    assert len(first.graph) == first.graph.meta["tlc_distinct_states"] == 105
    again = load_graph(ENTRIES["ticket-graph"])
    assert again.cached and again.graph.states == first.graph.states


def test_symmetry_configs_are_refused():
    with pytest.raises(GraphBuildError, match="SYMMETRY"):
        load_graph(ENTRIES["ticket-sym"])


@pytest.mark.parametrize("mode", ["graph", "lazy"])
def test_fixture_corpus_verdicts(mode, tlc_toolchain, tmp_path):
    kw = {"graph": "ticket-graph"} if mode == "graph" else {"lazy": True}
    # Neighbourhood mode expands a partial trace's candidates one TLC run per step; one partial
    # trace (the valid one) is enough there to keep this test short.
    skip = {"partial-invalid-holder"} if mode == "lazy" else set()
    files = [p for p in sorted(FIX.glob("*.jsonl")) if p.stem not in skip]
    s = validate_corpus(files, manifest_dir=FIX, out=tmp_path / "out", **kw)
    got = _by_name(s)
    assert {n: r["verdict"] for n, r in got.items()} == {
        n: v for n, v in EXPECTED.items() if n not in skip}
    for name, k in FAIL_STEP.items():
        if name not in skip:
            assert got[name]["failed_step"] == k
    assert not s["ok"]
    assert all(n["failed_runs"] == 0 for n in s["neighbourhood"])   # escaping held
    why = got["invalid-stutter-unknown-action"]["diagnosis"]["summary"]
    assert "FormatDiskAndElectEveryone is not an action of the spec's next-state relation" in why
    if mode == "graph":
        assert got["valid-beyond-bounds"]["rechecked"] and got["valid-request-grant"].get("rechecked") is None
    kept = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert "invalid-double-grant.jsonl.diagnosis.json" in kept and "summary.json" in kept
    assert not any(n.startswith("valid-") for n in kept)
    d = json.loads((tmp_path / "out/invalid-double-grant.jsonl.diagnosis.json").read_text())
    assert d["diagnosis"]["claimed_action"] == "GrantSome"
    assert "not by the claimed Release" in got["invalid-wrong-action"]["diagnosis"]["summary"]


def test_cli_json_and_exit_codes(tlc_toolchain):
    ok = subprocess.run([sys.executable, "-m", "kraftcheck", "validate",
                         str(FIX / "valid-request-grant.jsonl"), "--graph", "ticket-graph",
                         "--manifest", str(FIX), "--json"], capture_output=True, text=True,
                        cwd=REPO_ROOT)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["counts"]["valid"] == 1
    bad = subprocess.run([sys.executable, "-m", "kraftcheck", "validate",
                          str(FIX / "valid-stutter.jsonl"), str(FIX / "malformed-truncated.jsonl"),
                          "--graph", "ticket-graph", "--manifest", str(FIX)],
                         capture_output=True, text=True, cwd=REPO_ROOT)
    assert bad.returncode == 1 and "malformed-truncated.jsonl:4" in bad.stdout.replace("\n", "")
    sym = subprocess.run([sys.executable, "-m", "kraftcheck", "validate", str(FIX),
                          "--graph", "ticket-sym", "--manifest", str(FIX), "--json"],
                         capture_output=True, text=True, cwd=REPO_ROOT)
    assert sym.returncode == 2 and "SYMMETRY" in json.loads(sym.stdout)["error"]
