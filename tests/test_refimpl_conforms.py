"""The refimpl's KIP-595 traces against the real spec (spec/KRaft.tla), end to end with TLC:
bounded traces of the correct implementation are all valid in full-graph mode, and the
planted bug the online invariants rarely see (the HWM without the current-epoch rule) is
flagged by the checker.  The graph of kraft-graph-small is dumped once and cached."""

from __future__ import annotations

import pytest

from kraftcore.paths import REPO_ROOT
from refimpl.sim.corpus import simulate_corpus
from trace_checker.corpus import validate_corpus

pytestmark = [pytest.mark.tlc]
BOUNDS = str(REPO_ROOT / "tlc_configs" / "kraft-graph-small.cfg")


@pytest.mark.parametrize("faults", ["none", "lossy", "partitions", "chaos"])
def test_correct_refimpl_traces_are_valid(tmp_path, faults, tlc_toolchain):
    simulate_corpus(protocol="kraft", seeds=range(25), faults=faults, steps=300,
                    out=tmp_path, bounds=BOUNDS)
    s = validate_corpus([tmp_path], graph="kraft-graph-small")
    assert s["counts"] == {"valid": 25, "invalid": 0, "out_of_scope": 0, "malformed": 0}, [
        (r["file"], r.get("failed_step"), r.get("reason")) for r in s["results"]
        if r["verdict"] != "valid"]


@pytest.mark.parametrize("bug", ["hwm-no-current-epoch-check", "follower-hwm-uncapped",
                                 "majority-off-by-one"])
def test_checker_flags_planted_bug(tmp_path, bug, tlc_toolchain):
    simulate_corpus(protocol="kraft", seeds=range(20), faults="chaos", steps=300,
                    out=tmp_path, bounds=BOUNDS, bug=bug)
    s = validate_corpus([tmp_path], graph="kraft-graph-small")
    invalid = [r for r in s["results"] if r["verdict"] == "invalid"]
    assert invalid, s["counts"]
    d = invalid[0]["diagnosis"]
    # the diagnosis names the step, the claimed action and what differs from the spec
    assert d["claimed_action"] and d["nearest"]["differing_variables"]
