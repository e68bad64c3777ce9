"""Model checking the project's specs: every ci and bugs config of tlc_configs/*.toml.

ci configs must finish with exactly the distinct-state count and depth the manifest pins;
bugs configs must be caught by exactly the invariant / property the manifest names, with a
counterexample no longer than the manifest allows.  deep configs run with `pytest -m deep`.
"""

from __future__ import annotations

import pytest

from kraftcore.tlc.manifest import load_manifest
from tlc_memo import config_group, manifest_run

ENTRIES = load_manifest()


def _params(profile: str, marks=()):
    # each config its own xdist group: the configs spread over both test processes, and a test
    # elsewhere that reads a config's counterexample shares its run (tests/tlc_memo.py)
    return [pytest.param(e, id=e.name, marks=[*marks, config_group(e.name)])
            for e in ENTRIES if e.profile == profile]


def _check(entry):
    r = manifest_run(entry.name)
    detail = "; ".join(r.mismatches + [str(e) for e in r.errors])
    assert r.as_expected, f"{entry.name}: {detail} (log: {r.log})"
    return r


@pytest.mark.tlc
@pytest.mark.parametrize("entry", _params("ci"))
def test_ci_config(entry, tlc_toolchain):
    r = _check(entry)
    if entry.expect == "ok" and entry.mode == "bfs":
        assert (r.distinct_states, r.depth) == (entry.distinct_states, entry.depth)


@pytest.mark.tlc
@pytest.mark.parametrize("entry", _params("bugs"))
def test_bug_config_is_caught_by_its_invariant(entry, tlc_toolchain):
    r = _check(entry)
    if entry.expect != "ok":
        assert r.violated == entry.expect and r.counterexample, entry.name


@pytest.mark.tlc
@pytest.mark.parametrize("entry", _params("deep", marks=[pytest.mark.deep]))
def test_deep_config(entry, tlc_toolchain):
    r = _check(entry)
    if entry.expect == "ok" and entry.mode == "bfs" and entry.distinct_states is not None:
        assert (r.distinct_states, r.depth) == (entry.distinct_states, entry.depth)


def test_each_spec_has_ci_and_bug_configs():
    for module in ("spec/MCKRaft.tla", "spec/MCELR.tla"):
        profiles = {e.profile for e in ENTRIES if e.module == module}
        assert {"ci", "bugs", "deep"} <= profiles, f"{module} lacks configs: {profiles}"


# --------------------------------------------------------------------------- KIP-966 findings

def _elr_entry(name: str):
    (entry,) = [e for e in ENTRIES if e.name == name]
    return entry


@pytest.mark.tlc
@config_group("elr-finding-last-known-elr-literal")
def test_elr_literal_last_known_elr_finding_loses_acked_data_after_a_vacuous_wait(tlc_toolchain):
    """docs/spec-elr.md finding 11: with the literal §"Other behaviors" 6a rule the LastKnownELR
    is empty when ISR and ELR are, so Balanced's "all LastKnownELR members replied" holds with
    one reply, and the replica that lost the acked record is elected (12 states on the
    asynchronous spec of issue 14; 10 before)."""
    r = _check(_elr_entry("elr-finding-last-known-elr-literal"))
    assert r.violated == "NoAckedRecordLost" and len(r.counterexample) == 12
    *_, before, last = r.counterexample
    assert last.action == "CompleteUncleanRecovery"
    s = before.state
    assert set(s["isr"]) == set(s["elr"]) == set(s["lastKnownElr"]) == set()
    assert s["acked"] and s["leader"] == "NoBroker"
    elected = last.state["leader"]
    assert len(last.state["log"][elected]) == 0          # the elected replica lost r1


# ------------------------------------------------- KIP-966 with asynchronous metadata (issue 14)

@pytest.mark.tlc
@config_group("elr-bug-stale-leader-acks")
def test_elr_stale_leader_acks_when_it_learns_it_was_replaced(tlc_toolchain):
    """docs/spec-elr.md "The asynchronous abstraction": a running leader fenced by the
    controller keeps its acks=all purgatory; with BugStaleLeaderAcks it answers it when it
    learns the new leader epoch (unfenced), acknowledging a record that is not committed."""
    r = _check(_elr_entry("elr-bug-stale-leader-acks"))
    assert r.violated == "AckedRecordNeverLost"
    *_, before, last = r.counterexample
    assert last.action == "UnfenceBroker"
    old = before.state["leader"]
    stale = next(b for b, v in before.state["metadata"].items()
                 if v["leader"] == b and b != old)        # still leads in its own view
    assert last.state["acked"] and not before.state["acked"]
    assert last.state["metadata"][stale]["leader"] == old   # it learned the new leader
    assert len(last.state["committedLog"]) == 0


@pytest.mark.tlc
@config_group("elr-bug-hwm-on-pending-isr")
def test_elr_hwm_on_pending_isr_acknowledges_before_the_controller_commits(tlc_toolchain):
    """BugHwmOnPendingIsr: the HWM moves (and acks=all is answered) in the ShrinkIsr step that
    only SENT the AlterPartition; the controller's ISR still holds the lagging follower."""
    r = _check(_elr_entry("elr-bug-hwm-on-pending-isr"))
    assert r.violated == "NoAckedRecordLost"
    shrink = next(i for i, s in enumerate(r.counterexample) if s.action == "ShrinkIsr")
    st = r.counterexample[shrink].state
    assert st["acked"] and len(st["isr"]) == 2              # committed ISR unchanged
    assert any(len(p) == 1 for p in st["pendingIsr"].values())   # the shrink is only pending


@pytest.mark.tlc
@config_group("elr-bug-skip-partition-epoch-check")
def test_elr_skip_partition_epoch_check_commits_a_stale_alter_partition(tlc_toolchain):
    """BugSkipPartitionEpochCheck: a stale AlterPartition is committed; the controller's ISR
    then holds a replica the acting leader's HWM quorum does not contain."""
    r = _check(_elr_entry("elr-bug-skip-partition-epoch-check"))
    assert r.violated == "ReplicationQuorumSuperset"
    *_, before, last = r.counterexample
    s = last.state
    ldr = s["leader"]
    quorum = set(s["metadata"][ldr]["isr"]) | set(s["pendingIsr"][ldr])
    assert not set(s["isr"]) <= quorum
    assert s["partitionEpoch"] > s["metadata"][ldr]["partitionEpoch"]
