"""The simulator's monitors for the invariants issue 13 added to spec/KRaft.tla
(KnownLeadersAgree, KnownLeaderIsLeader, LeaderHoldsItsLeaderChange,
EndOffsetsAreCommonPrefixes) and spec/KRaftHistory.tla (ElectionSafety, with its ghost map
epoch -> leaders): each catches a constructed violating state, and a correct quorum raises
none (also over whole simulated runs in every fault profile)."""

from __future__ import annotations

import pytest

from kraftcore.values import Fn
from refimpl.kraft.adapter import KRaftAdapter, KRaftBounds
from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.invariants import INVARIANTS, KRaftMonitor
from refimpl.kraft.log import LeaderChange, Record
from refimpl.kraft.node import KRaftNode
from refimpl.kraft.state import Role, replace
from refimpl.kraft.view_invariants import VIEW_INVARIANTS
from refimpl.sim.faults import DEFAULT_PROFILES, get_profile
from refimpl.sim.protocol import World
from refimpl.sim.simulator import Simulator

VOTERS = ("n1", "n2", "n3")
N = KRaftNode(QuorumConfig(voters=VOTERS))


def lc(epoch, leader="n1"):
    return Record(epoch, control=LeaderChange("cluster-A", leader, (leader,)))


def st(node, **kw):
    return replace(N.initial_state(node), **kw)


def leader(node="n1", epoch=1, log=None, **kw):
    return st(node, role=Role.LEADER, epoch=epoch, leader_id=node, voted_id=node,
              log=(lc(epoch, node),) if log is None else log, **kw)


def follower(node, epoch=1, leader_id="n1", log=(), **kw):
    return st(node, role=Role.FOLLOWER, epoch=epoch, leader_id=leader_id, log=log, **kw)


def world(states):
    return World(0, states, {n: True for n in states}, {n: {} for n in states}, {})


def run(states, steps):
    """Init on `states`, then each (node, new state, action) step; the violated names."""
    m = KRaftMonitor(VOTERS, VOTERS)
    w = world(dict(states))
    found = [v.invariant for v in m.check(w, "Init", None)]
    for node, s, action in steps:
        w.states[node] = s
        found += [v.invariant for v in m.check(w, action, node)]
    return found


def healthy():
    return {"n1": leader(), "n2": follower("n2", log=(lc(1),)), "n3": follower("n3")}


def test_the_monitor_names_the_spec_invariants():
    assert set(VIEW_INVARIANTS) <= set(INVARIANTS)


def test_a_healthy_quorum_violates_nothing():
    assert run(healthy(), [("n3", follower("n3", log=(lc(1),)), "ReceiveFetchResponse")]) == []


def test_known_leaders_agree_catches_two_leaders_known_for_one_epoch():
    assert "KnownLeadersAgree" in run(healthy(), [
        ("n3", follower("n3", leader_id="n2"), "ReceiveBeginQuorumEpochRequest")])


def test_known_leader_is_leader_catches_a_leader_that_never_led():
    # n3 names n2 as the leader of epoch 1; n2 is a follower of n1 in epoch 1
    s = healthy()
    s["n3"] = st("n3", role=Role.FOLLOWER, epoch=1, leader_id="n2")
    s["n1"] = leader(epoch=1)
    found = run({"n1": s["n1"], "n2": s["n2"], "n3": follower("n3")},
                [("n3", s["n3"], "ReceiveBeginQuorumEpochRequest")])
    assert "KnownLeaderIsLeader" in found


def test_known_leader_is_leader_catches_the_leader_falling_back():
    # the leader's own state changes: it names another leader in the same epoch
    assert "KnownLeaderIsLeader" in run(healthy(), [
        ("n1", st("n1", role=Role.UNATTACHED, epoch=1, voted_id="n1", log=(lc(1),)),
         "Restart")])


def test_known_leader_is_leader_holds_for_a_leader_that_moved_on():
    assert run(healthy(), [
        ("n1", st("n1", role=Role.CANDIDATE, epoch=2, voted_id="n1", log=(lc(1),),
                  votes_granted=frozenset({"n1"})), "LeaderProgressTimeout")]) == []


def test_known_leader_is_leader_exempts_a_leader_that_lost_its_disk():
    wiped = st("n1", role=Role.UNATTACHED, epoch=0)
    assert "KnownLeaderIsLeader" not in run(healthy(), [("n1", wiped, "LoseDisk")])
    assert "KnownLeaderIsLeader" in run(healthy(), [("n1", wiped, "Restart")])


def test_leader_holds_its_leader_change_catches_a_leader_without_one():
    assert "LeaderHoldsItsLeaderChange" in run(healthy(), [
        ("n1", leader(log=(Record(1, value="v1"),)), "ClientRequest")])
    # a LeaderChange of an older epoch is not its own
    assert "LeaderHoldsItsLeaderChange" in run(healthy(), [
        ("n1", leader(epoch=2, log=(lc(1),)), "ReceiveVoteResponse")])


def test_end_offsets_are_common_prefixes_catches_an_offset_beyond_the_voter_log():
    bad = leader(follower_end_offset=Fn({"n3": 1}))  # n3's log is empty
    assert "EndOffsetsAreCommonPrefixes" in run(healthy(), [("n1", bad, "ReceiveFetchRequest")])


def test_end_offsets_are_common_prefixes_catches_a_diverged_prefix():
    s = healthy()
    s["n1"] = leader(follower_end_offset=Fn({"n2": 1}))
    # n2 replaced its record at offset 0 by another one of the same epoch
    assert "EndOffsetsAreCommonPrefixes" in run(s, [
        ("n2", follower("n2", log=(Record(1, value="x"),)), "ReceiveFetchResponse")])


def test_end_offsets_exempt_a_voter_of_a_later_epoch():
    s = healthy()
    s["n1"] = leader(follower_end_offset=Fn({"n2": 1}))
    assert "EndOffsetsAreCommonPrefixes" not in run(s, [
        ("n2", st("n2", role=Role.CANDIDATE, epoch=2, voted_id="n2", log=()), "Timeout")])


def test_election_safety_remembers_every_leader_of_an_epoch():
    # n1 led epoch 1 and resigned; later n2 leads epoch 1 too: no two leaders at the same time
    # (AtMostOneLeaderPerEpoch holds), but the historical form is violated
    s = healthy()
    found = run(s, [
        ("n1", replace(s["n1"], role=Role.RESIGNED), "Resign"),
        ("n2", leader("n2", epoch=1, log=(lc(1), lc(1, "n2"))), "ReceiveVoteResponse"),
    ])
    assert "ElectionSafety" in found and "AtMostOneLeaderPerEpoch" not in found


@pytest.mark.parametrize("profile", DEFAULT_PROFILES)
def test_no_view_invariant_fires_on_the_correct_refimpl(profile):
    for seed in range(3):
        sim = Simulator(KRaftAdapter(KRaftBounds(voters=VOTERS)), seed, get_profile(profile),
                        1500, trace=False)
        r = sim.run()
        assert not r.violations, (profile, seed, r.violations)
        assert all(r.invariants[n] == "ok" for n in VIEW_INVARIANTS)


def test_end_offsets_flag_a_voter_that_lost_its_disk_in_the_leaders_epoch():
    # no exemption any more: a leader that recorded an end offset for a voter before it lost
    # its disk counts records the voter no longer has (the disk-loss finding, seed 123); the
    # disk-loss profile now rejoins a wiped voter only under the spec's
    # "AfterNewLeaderCommitted", where no such leader is left
    s = healthy()
    s["n1"] = leader(follower_end_offset=Fn({"n2": 1}))
    rejoined = follower("n2", log=())
    for action in ("LoseDisk", "Restart"):
        steps = [("n2", st("n2", role=Role.UNATTACHED, epoch=0), action),
                 ("n2", rejoined, "ReceiveFetchResponse")]
        assert "EndOffsetsAreCommonPrefixes" in run(s, steps), action
