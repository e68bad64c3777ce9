"""Liveness with the randomised election back-off (spec/KRaftBackoff.tla, issue 13).

test_spec_models.py runs every ci config (pinned counts) and every bugs config (the named
property must be violated).  Here: every liveness property of KRaftBackoff has a passing config
and a negative config that names it; the gridlock counterexample of the no-back-off config is
what the KIP's "Note on Gridlocked Elections" describes; and TLC's simulation mode does check
temporal properties (a planted bug that holds in every behaviour is reported by name).
"""

from __future__ import annotations

import re

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import load_manifest
from tlc_memo import config_group, manifest_run

SPEC = REPO_ROOT / "spec" / "KRaftBackoff.tla"
MODULE = "spec/MCKRaftBackoff.tla"
PROPERTIES = ("QuorumEventuallyLedByMajority", "LeaderElectedAfterCrash",
              "LeaderElectedAfterResignation", "LeaderElectedAfterProgressTimeout",
              "ClientValueCommittedOrTruncated", "ObserverFindsLeaderAndCatchesUp",
              "FollowersConverge")


def _entries():
    return [e for e in load_manifest() if e.module == MODULE]


def _entry(name):
    (e,) = [e for e in _entries() if e.name == name]
    return e


def test_the_properties_are_defined_in_the_spec():
    text = SPEC.read_text(encoding="utf-8")
    for p in PROPERTIES:
        assert re.search(rf"^{p}\s*==", text, re.M), p


@pytest.mark.parametrize("prop", PROPERTIES)
def test_each_property_is_checked_and_has_a_negative_config(prop):
    entries = _entries()
    checked = [e.name for e in entries if e.expect == "ok" and e.profile in ("ci", "deep")
               and prop in parse_cfg(e.cfg_path).sections.get("PROPERTY", [])]
    assert checked, f"{prop}: no passing config lists it"
    assert any(e.profile == "ci" for e in entries if e.name in checked), \
        f"{prop}: only deep configs check it"
    negative = [e for e in entries if e.profile == "bugs" and e.expect == prop and e.mode == "bfs"]
    assert negative, f"{prop}: no negative config proves it can fail"
    for e in negative:
        # the negative config lists only the property it must violate (TLC then names it)
        assert parse_cfg(e.cfg_path).sections.get("PROPERTY") == [prop]


def test_ci_liveness_configs_are_exhaustive_and_pinned():
    ci = [e for e in _entries() if e.profile == "ci"]
    assert {e.name for e in ci} == {
        "kraft-ci-liveness-backoff-crash", "kraft-ci-liveness-backoff-resign",
        "kraft-ci-liveness-backoff-progress", "kraft-ci-liveness-backoff-observer"}
    for e in ci:
        assert e.mode == "bfs" and e.workers == 1
        assert e.distinct_states is not None and e.distinct_states < 50_000
        cfg = parse_cfg(e.cfg_path)
        assert "SYMMETRY" not in cfg.sections      # liveness: never with symmetry
        assert "QuietBoundNeverReached" in cfg.sections["INVARIANT"]
        assert cfg.constants["BugNoBackoff"] is False


def _loop(r):
    """The states of the counterexample's cycle (the last state when it stutters)."""
    steps = r.counterexample
    start = r.loop_back_to - 1 if r.loop_back_to else len(steps) - 1
    return [s.state for s in steps[start:]]


def _roles(state):
    return {str(k): str(v) for k, v in state["role"].items()}


@pytest.mark.tlc
@config_group("kraft-bug-liveness-no-backoff")
def test_without_back_off_the_candidates_gridlock(tlc_toolchain):
    """KIP-595 §"Vote Response Handling", Note on Gridlocked Elections: "if each voter becomes
    a candidate at the same time and votes for itself".  After the faults stop, without the
    back-off the voters end in the last epoch the model allows with the vote split, for ever.

    TLC checks liveness on the partial graph at time-dependent points, so which lasso it
    reports varies from run to run (one CI run ended with n2 never having voted in the last
    epoch, most runs with both voters self-voted).  The test asserts what every gridlock
    lasso has, not one particular lasso."""
    r = manifest_run("kraft-bug-liveness-no-backoff")
    assert r.as_expected and r.violated == "QuorumEventuallyLedByMajority", r.mismatches
    cfg = parse_cfg(_entry("kraft-bug-liveness-no-backoff").cfg_path)
    max_epoch = int(cfg.constants["MaxEpoch"])
    voters = {"n1", "n2"}
    for s in _loop(r):
        assert s["faultsStopped"] is True
        assert "Leader" not in _roles(s).values()
        assert {str(k): int(v) for k, v in s["currentEpoch"].items()} == \
            {v: max_epoch for v in voters}               # the epochs ran out
        votes = [str(v) for v in s["votedId"].values()]
        # the vote is split: no voter holds the votes of a majority (both, of two voters),
        # and at least one voter voted for itself (it stood as a candidate)
        assert all(votes.count(c) < 2 for c in voters), votes
        assert any(str(k) == str(v) for k, v in s["votedId"].items()), votes


@pytest.mark.tlc
@config_group("kraft-bug-sim-liveness-observer-no-discovery")
def test_tlc_simulation_mode_checks_temporal_properties(tlc_toolchain):
    """The planted bug (the observer never polls) breaks ObserverFindsLeaderAndCatchesUp in every
    behaviour: TLC -simulate must report it by name, so a simulation config that passes has
    really checked its properties."""
    e = _entry("kraft-bug-sim-liveness-observer-no-discovery")
    assert e.mode == "simulate"
    r = manifest_run(e.name)
    assert r.as_expected and r.violated == "ObserverFindsLeaderAndCatchesUp", r.mismatches
    assert r.counterexample
    # TLC 2.15's -simulate also reports <>[]P "violations" on lassos whose every loop state
    # satisfies P (tlaplus/tlaplus#204: seen on the correct spec, docs/spec-kraft.md 9.6), so
    # the report alone proves nothing: check the lasso independently.  <>[]P fails on a lasso
    # iff some state of its loop violates P; here P's conjunct "o1 follows a voter l in l's
    # epoch and holds l's committed prefix" fails for every l.
    def holds_prefix(state, o, l):
        st = {k: {str(a): b for a, b in v.items()} if hasattr(v, "items") else v
              for k, v in state.items()}
        hwm = int(st["highWatermark"][l])
        return (st["currentEpoch"][o] == st["currentEpoch"][l] and str(st["leaderId"][o]) == l
                and list(st["log"][o])[:hwm] == list(st["log"][l])[:hwm]
                and len(list(st["log"][o])) >= hwm)
    assert any(not any(holds_prefix(s, "o1", l) for l in ("n1", "n2", "n3")) for s in _loop(r))
