"""KIP-966 liveness in the simulator (refimpl/elr/liveness.py, spec/ELR.tla's LIVENESS section):
once the faults stop, the partition recovers (a live leader, the full ISR, every HWM caught up)
or the election order keeps it offline on purpose; a planted liveness bug is flagged with the
spec property it breaks."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from refimpl.elr import liveness
from refimpl.elr.adapter import ELRAdapter
from refimpl.elr.controller import Controller
from refimpl.elr.types import AGGRESSIVE, BALANCED, NO_LEADER, NONE, ElrConfig
from refimpl.sim.faults import DEFAULT_PROFILES, get_profile
from refimpl.sim.simulator import LIVENESS, Simulator

BUG = "isr-expand-off-by-one"


def live(cfg: ElrConfig, profile: str, seed: int, until: int = 20_000) -> tuple:
    a = ELRAdapter(cfg)
    r = Simulator(a, seed, get_profile(profile), 10_000_000, trace=False,
                  faults_until_ms=until, stop_when_recovered=True).run()
    return a, r


@pytest.mark.parametrize("profile", DEFAULT_PROFILES)
def test_correct_partition_recovers_in_every_profile(profile):
    # several seeds: a property must not be reported stuck at the moment of recovery
    for strategy, seed in ((s, seed) for s in (BALANCED, AGGRESSIVE) for seed in range(3)):
        a, r = live(ElrConfig(strategy=strategy), profile, seed)
        assert r.end_reason == "recovered", (strategy, seed, r.violations, r.liveness)
        assert r.violations == []
        assert r.liveness["verdict"] == "recovered"
        assert set(r.liveness["properties"]) == set(liveness.PROPERTIES)
        assert all(v == "ok" for v in r.liveness["properties"].values()), (seed, r.liveness)
        p = a.world.states[a.config.controller].partition
        # recovered, not offline: a live leader, every replica back in the ISR, and every
        # replica's HWM at the leader's log end of the moment the ISR was full again
        assert p.leader != NO_LEADER and p.isr == frozenset(a.config.brokers)
        target = a._hwm_target[2]
        assert all(a.world.states[b].hwm >= target for b in a.config.brokers)
        # the target is taken after the faults stopped, never at Init
        assert r.liveness["recovered_ms"] is not None


def test_a_high_watermark_that_never_moves_is_not_recovery(monkeypatch):
    """A leader whose HWM rule never advances (every other step correct) leaves the
    partition unrecovered, with HwmEventuallyAdvances failing: the recovery target is the
    leader's log end offset, not its (stuck) HWM."""
    from refimpl.elr import rules
    monkeypatch.setattr(rules, "next_high_watermark", lambda hwm, *a, **k: hwm)
    for profile in ("none", "chaos"):
        _, r = live(ElrConfig(), profile, 0)
        assert r.liveness["verdict"] == "not_recovered", profile
        assert [v["invariant"] for v in r.violations] == [LIVENESS]
        assert "failing: HwmEventuallyAdvances" in r.violations[0]["detail"]
        assert "its HWM is still" in r.liveness["properties"][liveness.HWM_ADVANCES]


def test_strategy_none_may_end_offline_by_design_and_that_is_not_a_failure():
    """unclean.recovery.strategy=None (KIP-966 §"Unclean recovery" 4c): once every ISR and ELR
    member stopped uncleanly the partition waits for an operator.  Measured: crashes seeds
    0..5, 5 of 6 end so."""
    offline = 0
    for seed in range(3):
        a, r = live(ElrConfig(strategy=NONE), "crashes", seed)
        assert r.liveness["verdict"] == "recovered" and r.violations == []
        d = liveness.offline_by_design(a.config, a.world.states)
        if d is not None:
            offline += 1
            assert d == "WaitForOperator"
            p = a.world.states[a.config.controller].partition
            assert p.leader == NO_LEADER and not p.isr and not p.elr
    assert offline >= 1


def test_planted_liveness_bug_is_flagged_with_the_property_it_breaks():
    a, r = live(replace(ElrConfig(), bug=BUG), "chaos", 0)
    assert r.liveness["verdict"] == "not_recovered"
    assert [v["invariant"] for v in r.violations] == [LIVENESS]
    assert "failing: IsrEventuallyReexpands" in r.violations[0]["detail"]
    why = r.liveness["properties"][liveness.ISR_REEXPANDS]
    assert "outside the ISR" in why
    # every other property holds: the bug only stops ISR expansion
    assert [k for k, v in r.liveness["properties"].items() if v != "ok"] == [
        liveness.ISR_REEXPANDS]


# ------------------------------------------------------------------ the pure rules

def _ctrl(cfg: ElrConfig, **partition):
    s = Controller(cfg).initial_registered()
    return replace(s, partition=s.partition.with_(**partition))


def test_offline_by_design_follows_the_election_order():
    none, bal, agg = (ElrConfig(strategy=x) for x in (NONE, BALANCED, AGGRESSIVE))
    empty = dict(leader=NO_LEADER, isr=frozenset(), elr=frozenset(), last_known_elr=frozenset())
    assert liveness.offline_by_design(none, {"ctrl": _ctrl(none, **empty)}) == "WaitForOperator"
    # Aggressive and Balanced (every LastKnownELR member unfenced) recover: not offline
    assert liveness.offline_by_design(agg, {"ctrl": _ctrl(agg, **empty)}) is None
    assert liveness.offline_by_design(bal, {"ctrl": _ctrl(bal, **empty)}) is None
    # an unfenced ELR member is electable: never offline by design
    elr = dict(empty, elr=frozenset({"b2"}))
    assert liveness.offline_by_design(none, {"ctrl": _ctrl(none, **elr)}) is None
    # pre-KIP-966 (no ELR): the ISR never empties (IsrNonEmptyWithoutElr), so an empty ISR
    # with every replica unfenced is a bug, never offline by design (nor is a phase-1
    # partition whose LastKnownLeader is lost: it is set whenever the last ISR member leaves)
    off = ElrConfig(elr_enabled=False, strategy=BALANCED)
    assert liveness.offline_by_design(off, {"ctrl": _ctrl(off, **empty)}) is None
    ph1 = ElrConfig(manager_enabled=False, strategy=BALANCED)
    assert liveness.offline_by_design(ph1, {"ctrl": _ctrl(ph1, **empty)}) is None
    # a fenced broker: the partition may still recover when it comes back
    s = _ctrl(none, **empty)
    regs = tuple(replace(r, fenced=r.broker_id == "b3") for r in s.registrations)
    assert liveness.offline_by_design(none, {"ctrl": replace(s, registrations=regs)}) is None


def test_judge_names_a_stuck_elr_election():
    cfg = ElrConfig()
    s = _ctrl(cfg, leader=NO_LEADER, isr=frozenset(), elr=frozenset({"b2"}))
    out = liveness.judge(cfg, {"ctrl": s}, {b: True for b in cfg.brokers}, None)
    assert out[liveness.ELR_ELECTED] == ("the ISR is empty and ELR member(s) b2 are unfenced, "
                                         "but no leader is elected")
    assert out[liveness.HWM_ADVANCES] is None and out[liveness.ISR_REEXPANDS] is None


def test_adapter_reused_for_a_second_run_starts_its_liveness_afresh():
    a = ELRAdapter(ElrConfig())
    r1 = Simulator(a, 0, get_profile("chaos"), 10_000_000, trace=False,
                   faults_until_ms=20_000, stop_when_recovered=True).run()
    r2 = Simulator(a, 0, get_profile("chaos"), 10_000_000, trace=False,
                   faults_until_ms=20_000, stop_when_recovered=True).run()
    assert r1.liveness == r2.liveness and r1.liveness["verdict"] == "recovered"


def test_bounded_runs_are_not_judged():
    """MaxLeaderEpoch and the other bounds may stop the protocol for good: no verdict."""
    a = ELRAdapter(ElrConfig(max_leader_epoch=3))
    with pytest.raises(ValueError, match="cannot judge recovery"):
        Simulator(a, 0, get_profile("chaos"), 100, trace=False, faults_until_ms=5).run()


def test_cli_elr_liveness_run_and_planted_bug():
    from typer.testing import CliRunner

    from kraftcheck.cli import app
    runner = CliRunner()
    ok = runner.invoke(app, ["simulate", "--protocol", "elr", "--seeds", "0", "--faults",
                             "crashes", "--steps", "6000", "--faults-until", "15000",
                             "--json"])
    assert ok.exit_code == 0, ok.output
    m = json.loads(ok.stdout)
    assert m["traces"][0]["liveness"]["verdict"] == "recovered"
    assert m["traces"][0]["invariants"][LIVENESS] == "ok"
    bad = runner.invoke(app, ["simulate", "--protocol", "elr", "--seeds", "0", "--faults",
                              "chaos", "--steps", "6000", "--faults-until", "15000",
                              "--bug", BUG, "--json"])
    # with --bug, exit 0 says the planted bug was caught (kraftcheck/commands/simulate.py)
    assert bad.exit_code == 0, bad.output
    t = json.loads(bad.stdout)["traces"][0]
    assert t["liveness"]["verdict"] == "not_recovered"
    assert t["invariants"][LIVENESS] == "violated"
    assert t["liveness"]["properties"]["IsrEventuallyReexpands"] != "ok"
