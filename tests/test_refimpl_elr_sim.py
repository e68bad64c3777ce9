"""The ELR adapter under the simulator: random fault schedules keep every invariant of the
correct implementation, each planted bug is caught, traces are deterministic, bounded mode
respects the spec's constants, and spec_mapping matches spec/ELR.tla."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.bugs import bugs_for
from refimpl.elr import spec_mapping
from refimpl.elr.adapter import ELRAdapter
from refimpl.elr.config import config_from_bounds
from refimpl.elr.types import ElrConfig
from refimpl.sim.bounds import parse_cfg_text
from refimpl.sim.faults import get_profile
from refimpl.sim.protocol import World
from refimpl.sim.simulator import Simulator, run_one

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("none", "lossy", "partitions", "crashes", "chaos")


def _run(cfg: ElrConfig, seed: int, profile: str, steps: int, trace: bool = False):
    return run_one(ELRAdapter(cfg), seed, get_profile(profile), steps, trace=trace)


# --------------------------------------------------------------------------- correct impl

@settings(max_examples=24, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), profile=st.sampled_from(PROFILES),
       min_isr=st.sampled_from((2, 3)), strategy=st.sampled_from(("Balanced", "Aggressive", "None")),
       brokers=st.sampled_from((("b1", "b2", "b3"), ("b1", "b2", "b3", "b4"))))
def test_random_fault_schedules_never_break_the_invariants(seed, profile, min_isr, strategy,
                                                           brokers):
    cfg = ElrConfig(brokers=brokers, min_isr=min_isr, strategy=strategy)
    r = _run(cfg, seed, profile, 1500)
    assert r.violations == [], r.violations


def test_min_isr_changes_and_elr_off_under_chaos_keep_the_controller_invariants():
    cfg = ElrConfig(min_isr_choices=(1, 2, 3))
    for seed in range(4):
        assert _run(cfg, seed, "chaos", 2000).violations == []
    # ELR off (pre-KIP-966): the data invariants may fail by design, the others hold
    structural = {"ElrIsrDisjoint", "NonEmptyElrImpliesIsrBelowMinIsr", "LeaderInIsr",
                  "LeaderUnfenced", "LastKnownElrDisjoint", "LogMatching", "HwmWithinLeaderLog",
                  "IsrNonEmptyWithoutElr"}
    for seed in range(4):
        r = _run(ElrConfig(elr_enabled=False), seed, "crashes", 2000)
        assert not {v["invariant"] for v in r.violations} & structural


# --------------------------------------------------------------------------- planted bugs

#: bug -> (config overrides, profile, seeds to try).  The catching invariant is the registry's.
BUG_RUNS = {
    "elr-not-cleared-at-min-isr": ({}, "chaos", 4),
    "unclean-broker-kept-in-elr": ({"min_isr": 3}, "crashes", 6),
    "leader-from-fenced-elr": ({}, "chaos", 4),
    "ack-below-min-isr": ({}, "chaos", 4),
    "hwm-on-maximal-isr": ({}, "chaos", 12),
    "balanced-fixed-replies": ({}, "chaos", 12),
}


def test_every_elr_bug_has_a_catching_run():
    assert set(BUG_RUNS) == {b.name for b in bugs_for("elr")}


@pytest.mark.parametrize("bug", sorted(BUG_RUNS))
def test_planted_bug_is_caught_by_the_online_invariants(bug):
    overrides, profile, seeds = BUG_RUNS[bug]
    expected = {b.caught_by for b in bugs_for("elr") if b.name == bug}.pop()
    cfg, _ = config_from_bounds(None, bug)
    cfg = replace(cfg, **overrides)
    for seed in range(seeds):
        r = _run(cfg, seed, profile, 5000)
        if r.violations:
            assert {v["invariant"] for v in r.violations} & set(expected), r.violations
            return
    pytest.fail(f"{bug} not caught within {seeds} seeds")


# --------------------------------------------------------------------------- determinism

def test_same_seed_gives_the_same_trace_bytes():
    cfg = ElrConfig()
    a = _run(cfg, 7, "chaos", 800, trace=True).text()
    b = _run(cfg, 7, "chaos", 800, trace=True).text()
    c = _run(cfg, 8, "chaos", 800, trace=True).text()
    assert a == b
    assert a != c


# --------------------------------------------------------------------------- bounded mode

CFG = """
CONSTANTS
    Brokers = {b1, b2, b3}
    Values = {v1, v2}
    NoBroker = NoBroker
    NoReply = NoReply
    InitMinIsr = 2
    MinIsrValues = {2}
    ElrEnabled = TRUE
    UncleanRecoveryEnabled = TRUE
    RecoveryStrategy = "Balanced"
    FenceRunningBrokers = TRUE
    MaxLogLen = 3
    MaxLeaderEpoch = 4
    MaxBrokerEpoch = 3
    MaxRestarts = 4
    MaxUncleanShutdowns = 1
    BugHwmOnMaximalIsr = FALSE
"""


def test_bounded_mode_respects_the_spec_constants():
    bounds = parse_cfg_text(CFG, "test.cfg")
    adapter = ELRAdapter.from_options(bounds, None)
    assert adapter.config.values == ("v1", "v2") and adapter.config.max_log_len == 3
    assert adapter.config.acks_policy == "spec" and adapter.sim_limits().allow_loss
    assert adapter.sim_limits().max_restarts == 4
    no_fence = parse_cfg_text(CFG.replace("FenceRunningBrokers = TRUE", "FenceRunningBrokers = FALSE"))
    assert not ELRAdapter.from_options(no_fence, None).sim_limits().allow_loss
    for seed in range(2):
        sim = Simulator(ELRAdapter.from_options(bounds, None), seed, get_profile("chaos"), 2500,
                        trace=True)
        r = sim.run()
        assert r.violations == []
        for line in r.lines[1:-1]:
            s = json.loads(line)["state"]
            assert all(len(v) <= 3 for v in s["log"].values())
            assert s["leaderEpoch"] <= 4
            assert all(e <= 3 for e in s["brokerEpoch"].values())
            assert s["uncleanShutdowns"] <= 1


def test_spec_bug_switch_selects_the_planted_bug():
    bounds = parse_cfg_text(CFG.replace("BugHwmOnMaximalIsr = FALSE", "BugHwmOnMaximalIsr = TRUE"))
    assert ELRAdapter.from_options(bounds, None).config.bug == "hwm-on-maximal-isr"
    with pytest.raises(ValueError):
        config_from_bounds(parse_cfg_text(CFG + "    BugAcceptStaleReplies = TRUE\n"), None)


# --------------------------------------------------------------------------- spec mapping

def _spec_text() -> str:
    return (ROOT / "spec" / "ELR.tla").read_text()


def test_projection_has_exactly_the_spec_variables():
    text = _spec_text()
    block = re.search(r"^VARIABLES\s*(.*?)\n\n", text, re.S | re.M).group(1)
    declared = tuple(re.findall(r"[A-Za-z]\w*", re.sub(r"\\\*.*", "", block)))
    assert spec_mapping.VARIABLES == declared
    a = ELRAdapter()
    sim = Simulator(a, 0, get_profile("none"), 50, trace=False)
    sim.run()
    assert tuple(a.project(sim.world)) == declared


def test_initial_state_is_the_spec_init():
    a = ELRAdapter()
    states, disks, _ = a.init()
    s = a.project(World(0, states, {n: True for n in a.nodes()}, disks, {}))
    assert s["leader"] == "b1" and s["leaderEpoch"] == 1 and s["isr"] == frozenset(a.config.brokers)
    assert set(s["brokerEpoch"].values()) == {1} and not any(s["fenced"].values())
    assert set(s["shutdownFile"].values()) == {-1} and s["hwm"] == 0 and s["acked"] == frozenset()
    assert set(s["replies"].values()) == {"NoReply"} and s["minIsr"] == 2


def test_every_trace_action_is_a_spec_action_or_a_stutter():
    text = _spec_text()
    spec_actions = set(re.findall(r"^(\w+)\s*(?:\([^)]*\))?\s*==", text, re.M))
    labels = set(spec_mapping.ACTION_MAP.values()) | {"ShrinkIsr", "CommitAlterPartition",
                                                      "ProposeIsrExpand", "UncleanLeaderElection",
                                                      "UncleanShutdown"}
    assert labels <= spec_actions, labels - spec_actions
    for profile in ("chaos", "crashes"):
        r = _run(ElrConfig(strategy="Aggressive", manager_enabled=False), 3, profile, 1500,
                 trace=True)
        used = {json.loads(line)["action"] for line in r.lines[1:-1]}
        assert used <= spec_actions | {"Stutter", "Init"}, used - spec_actions


def test_random_crashes_lose_acked_data_without_elr_but_not_with_it():
    """The KIP's motivation under random faults: among the same seeds of the crashes profile,
    some lose acked records with ELR off (pre-KIP-966 "last replica standing"), and those
    seeds keep every invariant with ELR on."""
    lost = []
    for seed in range(8):
        off = _run(ElrConfig(elr_enabled=False), seed, "crashes", 4000)
        if any(v["invariant"] == "NoAckedRecordLost" for v in off.violations):
            lost.append(seed)
            assert _run(ElrConfig(), seed, "crashes", 4000).violations == []
    assert lost
