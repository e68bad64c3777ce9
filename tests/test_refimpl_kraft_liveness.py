"""Unit tests of the KIP-595 behaviours that keep the quorum live (issue 11), one or more per
rule, on the pure handlers of refimpl/kraft/node.py:

* a voter that rejects a larger-epoch Vote keeps the election time it had left (Kafka's
  QuorumState.transitionToUnattached) -- KIP-595 "Vote Request Handling";
* an observer whose leader is silent for quorum.fetch.timeout.ms asks the voters again
  (Kafka's pollFollowerAsObserver) -- KIP-595 "BeginQuorumEpoch" / "Fetch";
* DescribeQuorum reports each replica's last fetch offset (it may go down), the HWM stays
  monotone and the spec's followerEndOffset never decreases -- KIP-595 "DescribeQuorum";
* a DivergingEpoch that would truncate below the HWM is fatal (Kafka's KafkaRaftClient
  throws) -- KIP-595 "FetchResponse Handling" step 2;
* a restart from a lost disk (spec LoseDisk).
"""

from __future__ import annotations

import pytest

from kraftcore.values import Fn
from refimpl.kraft import rules
from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.invariants import KRaftMonitor
from refimpl.kraft.log import LeaderChange, Record
from refimpl.kraft.messages import Errors, FetchRequest, FetchResponse, VoteRequest, VoteResponse
from refimpl.kraft.node import (
    ELECTION, FETCH, FETCH_TIMEOUT, REQUEST, RESEND, TRUNCATION_BELOW_HWM, KRaftNode,
)
from refimpl.kraft.state import LOG, META_PROPERTIES, QUORUM_STATE, QuorumStateFile, Role, replace
from refimpl.sim.protocol import CancelTimer, SetTimer, World

VOTERS = ("n1", "n2", "n3")
CFG = QuorumConfig(voters=VOTERS, retry_backoff_ms=100, retry_backoff_max_ms=1000)
N = KRaftNode(CFG)
BUGGY = KRaftNode(CFG, bug="vote-rejection-resets-election-timer")


def st(node="n2", **kw):
    return replace(N.initial_state(node), **kw)


def recs(*epochs):
    return tuple(Record(e, value=f"v{i}") for i, e in enumerate(epochs))


def timer(t, name):
    found = [x for x in t.timers if x.name == name]
    return found[-1] if found else None


def stale_vote(epoch=7, cand="n3"):
    """A Vote request of a larger epoch from a candidate whose log is behind (empty)."""
    return VoteRequest(None, epoch, cand, 0, 0)


# ---------------------------------------------------------------- election livelock

@pytest.mark.parametrize("role,voted", [(Role.UNATTACHED, None), (Role.VOTED, "n1"),
                                        (Role.CANDIDATE, "n2")])
def test_rejecting_a_larger_epoch_vote_keeps_the_election_time_left(role, voted):
    s = st(role=role, epoch=3, voted_id=voted, log=recs(1, 2, 3),
           votes_granted=frozenset({"n2"}) if role is Role.CANDIDATE else frozenset())
    t = N.handle_message(s, "n3", stale_vote())
    r = t.sends[0].payload
    assert isinstance(r, VoteResponse) and not r.vote_granted and r.leader_epoch == 7
    assert t.state.epoch == 7 and t.state.role is Role.UNATTACHED and t.state.voted_id is None
    assert persisted_epoch(t) == 7                     # the epoch is still persisted first
    assert timer(t, ELECTION) is None                  # neither re-armed nor cancelled
    if role is Role.CANDIDATE:
        assert timer(t, RESEND) == CancelTimer(RESEND)  # the old candidacy's re-sends stop


def persisted_epoch(t):
    qs = [p.value for p in t.persist if p.key == QUORUM_STATE]
    return qs[-1].leader_epoch


def test_the_planted_bug_restarts_the_timer_on_every_rejection():
    s = st(role=Role.UNATTACHED, epoch=3, log=recs(1, 2, 3))
    t = BUGGY.handle_message(s, "n3", stale_vote())
    assert isinstance(timer(t, ELECTION), SetTimer)


def test_a_follower_gets_a_fresh_election_timeout_when_it_learns_a_larger_epoch():
    # Kafka: a Follower (or Leader, Resigned) moving to Unattached draws a new random timeout
    s = st(role=Role.FOLLOWER, epoch=3, leader_id="n1", log=recs(1, 2, 3))
    t = N.handle_message(s, "n3", stale_vote())
    assert t.state.role is Role.UNATTACHED and isinstance(timer(t, ELECTION), SetTimer)


def test_granting_a_vote_draws_a_new_election_timeout():
    # Kafka's transitionToVoted: a new VotedState with randomElectionTimeoutMs
    s = st(role=Role.UNATTACHED, epoch=3)
    t = N.handle_message(s, "n3", VoteRequest(None, 7, "n3", 0, 0))
    assert t.state.role is Role.VOTED and isinstance(timer(t, ELECTION), SetTimer)


def test_a_candidate_learning_a_larger_epoch_from_a_vote_response_keeps_its_time():
    s = st(role=Role.CANDIDATE, epoch=3, voted_id="n2", votes_granted=frozenset({"n2"}))
    t = N.handle_message(s, "n1", VoteResponse(Errors.FENCED_LEADER_EPOCH, None, 5, False))
    assert t.state.role is Role.UNATTACHED and t.state.epoch == 5
    assert timer(t, ELECTION) is None


# ---------------------------------------------------------------- observer rediscovery

def observer(**kw):
    return replace(N.initial_state("o1"), role=Role.FOLLOWER, epoch=3, leader_id="n1",
                   log=recs(1, 2), **kw)


def test_observer_following_a_leader_arms_the_fetch_timeout():
    s = N.initial_state("o1")
    t = N.handle_message(s, "n2", FetchResponse(Errors.FENCED_LEADER_EPOCH, "n1", 3, -1, -1, -1))
    assert t.state.role is Role.FOLLOWER
    assert timer(t, FETCH_TIMEOUT) == SetTimer(FETCH_TIMEOUT, CFG.fetch_timeout_ms)
    assert timer(t, ELECTION) == CancelTimer(ELECTION)   # observers never stand


def test_silent_leader_sends_the_observer_back_to_discovery():
    s = observer(fetch_pending=True)
    t = N.handle_timer(s, FETCH_TIMEOUT)
    assert t.action == "ObserverFetchTimeout" and t.state.rediscovering
    assert not t.state.fetch_pending and timer(t, FETCH) == SetTimer(FETCH, 0)
    assert timer(t, REQUEST) == CancelTimer(REQUEST)
    # it asks the voters in turn, starting after the silent leader
    dsts = []
    s = t.state
    for _ in range(3):
        f = N.handle_timer(s, FETCH)
        dsts.append(f.sends[0].dst)
        s = N.handle_timer(f.state, REQUEST).state     # no answer: next voter
    assert dsts == ["n2", "n3", "n1"]


def test_rediscovering_observer_follows_the_leader_a_voter_names():
    s = replace(observer(), rediscovering=True, fetch_attempt=1)
    f = N.handle_timer(s, FETCH)
    assert f.sends[0].dst == "n2"
    t = N.handle_message(f.state, "n2", FetchResponse(Errors.FENCED_LEADER_EPOCH, "n2", 4, -1, -1, -1))
    assert t.state.role is Role.FOLLOWER and t.state.leader_id == "n2" and t.state.epoch == 4
    assert not t.state.rediscovering
    assert N.handle_timer(t.state, FETCH).sends[0].dst == "n2"


def test_a_successful_fetch_from_the_leader_ends_discovery_and_rearms_the_timeout():
    s = replace(observer(), rediscovering=True, fetch_attempt=0, fetch_pending=True)
    resp = FetchResponse(Errors.NONE, "n1", 3, 1, 2, 2)          # n1 is still the leader
    t = N.handle_message(s, "n1", resp)
    assert not t.state.rediscovering
    assert timer(t, FETCH_TIMEOUT) == SetTimer(FETCH_TIMEOUT, CFG.fetch_timeout_ms)


def test_fetch_timeout_is_not_enabled_for_voters_or_without_rediscovery():
    voter = st(role=Role.FOLLOWER, epoch=3, leader_id="n1")
    assert N.handle_timer(voter, FETCH_TIMEOUT) is None          # a voter stands instead
    spec_faithful = KRaftNode(CFG, observer_rediscovery=False)
    assert spec_faithful.handle_timer(observer(), FETCH_TIMEOUT) is None
    t = spec_faithful.handle_message(N.initial_state("o1"), "n2",
                                     FetchResponse(Errors.FENCED_LEADER_EPOCH, "n1", 3, -1, -1, -1))
    assert timer(t, FETCH_TIMEOUT) == CancelTimer(FETCH_TIMEOUT)


# ---------------------------------------------------------------- DescribeQuorum

def leader(log=None, **kw):
    log = recs(1, 1, 2, 2) if log is None else log
    return st("n1", role=Role.LEADER, epoch=2, leader_id="n1", voted_id="n1", log=log,
              epoch_start_offset=2, **kw)


def fetch(src, offset, last_epoch, epoch=2):
    return src, FetchRequest(None, src, epoch, offset, last_epoch)


def test_describe_quorum_reports_last_fetch_offsets_that_may_go_down():
    s = leader()
    for src, off, le in (("n2", 4, 2), ("n3", 3, 2), ("o1", 4, 2)):
        s = N.handle_message(s, src, FetchRequest(None, src, 2, off, le)).state
    d = N.describe_quorum(s)
    assert [(r.replica_id, r.log_end_offset) for r in d.current_voters] == \
        [("n1", 4), ("n2", 4), ("n3", 3)]
    assert [(r.replica_id, r.log_end_offset) for r in d.observers] == [("o1", 4)]
    hwm = d.high_watermark
    assert hwm == 4
    # a late (duplicated / delayed) Fetch of n2 at offset 2: DescribeQuorum follows it down,
    # as Kafka's LeaderState does, while the spec's followerEndOffset and the HWM do not
    s2 = N.handle_message(s, "n2", FetchRequest(None, "n2", 2, 2, 1)).state
    d2 = N.describe_quorum(s2)
    assert dict((r.replica_id, r.log_end_offset) for r in d2.current_voters)["n2"] == 2
    assert s2.follower_end_offset["n2"] == 4
    assert d2.high_watermark == hwm == s2.high_watermark


def test_describe_quorum_ignores_invalid_fetch_positions_and_unknown_replicas():
    s = leader()
    t = N.handle_message(s, "n2", FetchRequest(None, "n2", 2, 3, 1))   # diverging position
    assert t.sends[0].payload.diverging_epoch is not None
    d = N.describe_quorum(t.state)
    assert dict((r.replica_id, r.log_end_offset) for r in d.current_voters)["n2"] == -1
    assert d.observers == ()


def test_leader_hwm_never_decreases_with_lower_fetch_offsets():
    s = leader()
    s = N.handle_message(s, "n2", FetchRequest(None, "n2", 2, 4, 2)).state
    assert s.high_watermark == 4
    for off, le in ((3, 2), (2, 1), (0, 0)):
        s = N.handle_message(s, "n2", FetchRequest(None, "n2", 2, off, le)).state
        assert s.high_watermark == 4


# ---------------------------------------------------------------- fatal truncation

def test_truncates_committed_rule():
    assert rules.truncates_committed(2, 3)
    assert not rules.truncates_committed(3, 3)
    assert not rules.truncates_committed(5, 0)


def follower_at(hwm):
    return st(role=Role.FOLLOWER, epoch=3, leader_id="n1", log=recs(1, 2, 2, 2),
              high_watermark=hwm, fetch_pending=True)


def diverging(epoch, end):
    return FetchResponse(Errors.NONE, "n1", 3, 4, 4, 2, (), (epoch, end))


def test_diverging_epoch_below_the_high_watermark_is_fatal():
    s = follower_at(hwm=3)
    t = N.handle_message(s, "n1", diverging(1, 1))
    assert t.halt and t.state.role is Role.SHUTDOWN
    assert t.state.fatal_error.startswith(TRUNCATION_BELOW_HWM)
    assert t.state.log == s.log and t.state.high_watermark == 3   # nothing truncated
    assert not t.persist


def test_diverging_epoch_at_or_above_the_high_watermark_truncates():
    s = follower_at(hwm=1)
    t = N.handle_message(s, "n1", diverging(1, 1))
    assert not t.halt and t.state.log == recs(1) and t.state.high_watermark == 1
    assert [p.value for p in t.persist if p.key == LOG] == [recs(1)]


def test_the_monitor_reports_the_refused_truncation():
    s = follower_at(hwm=3)
    t = N.handle_message(s, "n1", diverging(1, 1))
    m = KRaftMonitor(VOTERS, VOTERS)
    # n1 leads epoch 3 (the follower's epoch), its LeaderChange record after the shared prefix
    lc3 = Record(3, control=LeaderChange("cluster-A", "n1", ("n1", "n2")))
    states = {"n1": replace(leader(log=recs(1, 2, 2, 2) + (lc3,)), epoch=3, epoch_start_offset=4),
              "n2": s, "n3": st("n3")}
    w = World(0, states, {n: True for n in VOTERS}, {n: {} for n in VOTERS}, {})
    assert m.check(w, "Init", None) == []
    states["n2"] = t.state
    found = m.check(w, "ReceiveFetchResponse", "n2")
    assert [v.invariant for v in found] == ["HighWatermarkWithinLog"]
    assert "truncation below the high watermark" in found[0].detail


# ---------------------------------------------------------------- disk loss

def test_restart_from_a_lost_disk_is_a_fresh_replica():
    t = N.restart("n2", {META_PROPERTIES: "cluster-A"}, action="LoseDisk")
    s = t.state
    assert t.action == "LoseDisk"
    assert (s.role, s.epoch, s.voted_id, s.leader_id, s.log, s.high_watermark) == \
        (Role.UNATTACHED, 0, None, None, (), 0)
    assert s.cluster_id == "cluster-A"
    assert isinstance(timer(t, ELECTION), SetTimer) and timer(t, FETCH) == SetTimer(FETCH, 0)


def test_a_plain_restart_keeps_what_was_persisted():
    qs = QuorumStateFile("n1", 5, "n1", VOTERS)
    t = N.restart("n2", {QUORUM_STATE: qs, LOG: recs(1, 5), META_PROPERTIES: "cluster-A"})
    assert t.action == "Restart" and t.state.epoch == 5 and t.state.log == recs(1, 5)


def test_history_maps_lose_disk_like_a_restart():
    from refimpl.kraft.spec_mapping import History
    h = History({n: "cluster-A" for n in VOTERS})
    states = {n: st(n) for n in VOTERS}
    w = World(0, states, {n: True for n in VOTERS}, {n: {} for n in VOTERS}, {})
    states["n2"] = st("n2", role=Role.VOTED, epoch=4, voted_id="n1")
    h.after_step(w, "n2", "ReceiveVoteRequest")
    assert h.values()["ghostVotes"]["n2"] == frozenset({"n1"})
    states["n2"] = N.restart("n2", {META_PROPERTIES: "cluster-A"}, action="LoseDisk").state
    h.after_step(w, "n2", "LoseDisk")
    v = h.values()
    assert v["restartCount"] == 1 and v["ghostVotes"]["n2"] == frozenset({"n1"})
    # the next larger epoch clears the ghost votes, as the spec compares with currentEpoch
    states["n2"] = st("n2", role=Role.VOTED, epoch=2, voted_id="n3")
    h.after_step(w, "n2", "ReceiveVoteRequest")
    assert h.values()["ghostVotes"]["n2"] == frozenset({"n3"})


def test_lose_disk_keeps_only_the_formatted_cluster_id():
    from refimpl.kraft.adapter import KRaftAdapter
    a = KRaftAdapter()
    states, disks, _ = a.init()
    w = World(0, states, {n: True for n in a.nodes()}, disks, {})
    a.bind(w)
    disk = {META_PROPERTIES: "cluster-A", LOG: recs(1), QUORUM_STATE: QuorumStateFile(None, 1, "n1", VOTERS)}
    assert a.lose_disk("n2", disk) == {META_PROPERTIES: "cluster-A"}
    t = a.restart_after_disk_loss("n2", {META_PROPERTIES: "cluster-A"}, 0)
    assert t.action == "LoseDisk" and t.state.log == ()


def test_leader_change_record_is_not_a_client_value():
    # guard for the fixtures above: recs() builds client records only
    assert all(r.control is None for r in recs(1, 2))
    assert Record(1, control=LeaderChange("c", "n1", ("n1",))).value is None
