"""Unit tests of the KIP-595 handlers (refimpl/kraft/node.py), one or more per handling rule."""

from __future__ import annotations

import pytest

from refimpl.kraft.config import ConfigError, QuorumConfig, parse_voters
from refimpl.kraft.log import LeaderChange, Record
from refimpl.kraft.messages import (
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest, Errors,
    FetchRequest, FetchResponse, VoteRequest, VoteResponse,
)
from refimpl.kraft.node import BECOME_LEADER, CHECK_QUORUM, ELECTION, FETCH, KRaftNode
from refimpl.kraft.quorum import majority
from refimpl.kraft.state import LOG, META_PROPERTIES, QUORUM_STATE, QuorumStateFile, Role, replace
from refimpl.sim.protocol import CancelTimer, SetTimer

VOTERS = ("n1", "n2", "n3")
CFG = QuorumConfig(voters=VOTERS, retry_backoff_ms=100, retry_backoff_max_ms=1000)
N = KRaftNode(CFG)


def st(node="n2", **kw):
    return replace(N.initial_state(node), **kw)


def recs(*epochs):
    return tuple(Record(e, value=f"v{i}") for i, e in enumerate(epochs))


def only_send(t):
    assert len(t.sends) == 1, t.sends
    return t.sends[0].payload


def timer(t, name):
    for x in t.timers:
        if x.name == name:
            return x
    return None


def persisted(t, key):
    vals = [p.value for p in t.persist if p.key == key]
    return vals[-1] if vals else None


def leader_state(node="n1", epoch=2, log=None, **kw):
    log = recs(1, 1, 2) if log is None else log
    s = st(node, role=Role.LEADER, epoch=epoch, leader_id=node, voted_id=node, log=log,
           epoch_start_offset=len(log) - 1)
    return replace(s, **kw)


# ---------------------------------------------------------------- configuration

def test_config_from_kip_property_names():
    cfg = QuorumConfig.from_properties({
        "quorum.voters": "1@kafka-1:9092, 2@kafka-2:9092,3@kafka-3:9092",
        "quorum.fetch.timeout.ms": "3000", "quorum.election.timeout.ms": "1500",
        "quorum.election.backoff.max.ms": "800", "quorum.request.timeout.ms": "2500",
        "quorum.retry.backoff.ms": "30", "quorum.retry.backoff.max.ms": "600"})
    assert cfg.voters == ("1", "2", "3")
    assert cfg.endpoints["2"] == ("kafka-2", 9092)
    assert (cfg.fetch_timeout_ms, cfg.election_timeout_ms, cfg.election_backoff_max_ms,
            cfg.request_timeout_ms, cfg.retry_backoff_ms, cfg.retry_backoff_max_ms) == \
        (3000, 1500, 800, 2500, 30, 600)
    assert majority(len(cfg.voters)) == 2


@pytest.mark.parametrize("bad", ["", "1@host", "x@h:p", "1@a:1,1@b:2"])
def test_bad_voters_rejected(bad):
    with pytest.raises(ConfigError):
        parse_voters(bad)


def test_unknown_property_rejected():
    with pytest.raises(ConfigError, match="unknown quorum property"):
        QuorumConfig.from_properties({"quorum.voters": "1@a:1", "quorum.bogus": "1"})


# ---------------------------------------------------------------- Vote request

def vote(epoch=1, cand="n1", last_epoch=0, last_offset=0, cluster=None):
    return VoteRequest(cluster, epoch, cand, last_epoch, last_offset)


def test_vote_granted_for_new_epoch_and_persisted_before_reply():
    t = N.handle_message(st(), "n1", vote())
    r = only_send(t)
    assert r.vote_granted and r.error is Errors.NONE and r.leader_epoch == 1
    assert t.state.role is Role.VOTED and t.state.voted_id == "n1"
    qs = persisted(t, QUORUM_STATE)
    assert qs.voted_id == "n1" and qs.leader_epoch == 1  # the vote is on disk with the reply


def test_vote_rejected_on_cluster_id_mismatch():
    t = N.handle_message(st(cluster_id="A"), "n1", vote(cluster="B"))
    r = only_send(t)
    assert r.error is Errors.INVALID_CLUSTER_ID and not r.vote_granted
    assert t.state.epoch == 0 and not t.persist


def test_null_cluster_id_skips_validation():
    r = only_send(N.handle_message(st(cluster_id="A"), "n1", vote(cluster=None)))
    assert r.vote_granted


def test_vote_rejected_for_older_epoch():
    r = only_send(N.handle_message(st(epoch=5), "n1", vote(epoch=4)))
    assert not r.vote_granted and r.leader_epoch == 5


def test_vote_only_for_the_same_candidate_in_an_epoch():
    s = N.handle_message(st(), "n1", vote()).state
    t = N.handle_message(s, "n3", vote(cand="n3"))
    assert not only_send(t).vote_granted
    assert only_send(N.handle_message(s, "n1", vote())).vote_granted   # re-grant same candidate


def test_vote_rejected_when_candidate_log_is_behind_but_epoch_is_learnt():
    s = st(log=recs(1, 2))
    t = N.handle_message(s, "n1", vote(epoch=3, last_epoch=1, last_offset=5))
    assert not only_send(t).vote_granted
    assert t.state.epoch == 3 and t.state.voted_id is None
    assert persisted(t, QUORUM_STATE).leader_epoch == 3


def test_vote_granted_when_candidate_log_ends_in_later_epoch():
    s = st(log=recs(1, 1, 1, 1))
    assert only_send(N.handle_message(s, "n1", vote(epoch=3, last_epoch=2, last_offset=2))).vote_granted


def test_vote_rejected_for_non_voter_candidate():
    assert not only_send(N.handle_message(st(), "o1", vote(cand="o1"))).vote_granted


def test_follower_with_known_leader_rejects_votes_in_its_epoch():
    s = st(role=Role.FOLLOWER, epoch=2, leader_id="n1")
    assert not only_send(N.handle_message(s, "n3", vote(epoch=2, cand="n3"))).vote_granted


def test_observer_never_votes():
    obs = KRaftNode(QuorumConfig(voters=VOTERS))
    s = obs.initial_state("o1")
    assert not only_send(obs.handle_message(s, "n1", vote())).vote_granted


def test_vote_ignores_log_bug_grants_stale_candidate():
    bad = KRaftNode(CFG, bug="vote-ignores-log")
    s = st(log=recs(1, 2))
    assert only_send(bad.handle_message(s, "n1", vote(epoch=3, last_epoch=1, last_offset=1))).vote_granted


# ---------------------------------------------------------------- elections

def test_start_election_bumps_epoch_votes_for_itself_and_persists():
    t = N.start_election(st("n1", epoch=4))
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 5 and t.state.voted_id == "n1"
    assert persisted(t, QUORUM_STATE).voted_id == "n1"
    assert sorted(e.dst for e in t.sends) == ["n2", "n3"]
    assert all(isinstance(e.payload, VoteRequest) and e.payload.candidate_epoch == 5 for e in t.sends)
    el = timer(t, ELECTION)
    assert isinstance(el, SetTimer) and el.jitter_ms == CFG.election_timeout_ms  # randomized


def test_observer_never_starts_an_election():
    assert N.start_election(N.initial_state("o1")) is None
    assert N.handle_timer(N.initial_state("o1"), ELECTION) is None


def test_majority_of_votes_makes_the_candidate_leader():
    c = replace(N.start_election(st("n1", cluster_id="C")).state)
    t2 = N.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 1, True))
    assert t2.action == "HandleVoteResponse"   # spec: BecomeLeader inside HandleVoteResponse
    s = t2.state
    assert s.role is Role.LEADER and s.leader_id == "n1"
    rec = s.log[-1]
    assert rec.epoch == 1 and rec.control == LeaderChange("C", "n1", ("n1", "n2"))
    assert s.high_watermark == 0            # only Fetch handling advances it
    assert persisted(t2, QUORUM_STATE).leader_id == "n1"
    assert persisted(t2, LOG) == s.log
    assert sorted(e.dst for e in t2.sends) == ["n2", "n3"]
    assert all(isinstance(e.payload, BeginQuorumEpochRequest) for e in t2.sends)
    assert t2.split_sends == "SendBeginQuorumEpoch"
    assert isinstance(timer(t2, CHECK_QUORUM), SetTimer)


def test_first_leader_generates_the_cluster_id():
    c = N.start_election(st("n1")).state
    s = N.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 1, True)).state
    assert s.log[-1].control.cluster_id == "cluster-n1-1"
    assert s.cluster_id is None     # cached only once committed


def test_become_leader_not_enabled_without_majority():
    c = N.start_election(st("n1")).state
    assert N.become_leader(c) is None
    t = N.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 0, True))  # stale epoch
    assert t.state is c


def test_vote_response_ignored_when_not_candidate():
    s = st("n1", role=Role.FOLLOWER, epoch=1, leader_id="n2")
    t = N.handle_message(s, "n3", VoteResponse(Errors.NONE, None, 1, True))
    assert t.state is s


def test_vote_response_with_newer_epoch_steps_down():
    c = N.start_election(st("n1")).state
    t = N.handle_message(c, "n2", VoteResponse(Errors.FENCED_LEADER_EPOCH, "n3", 4, False))
    assert t.state.role is Role.FOLLOWER and t.state.leader_id == "n3" and t.state.epoch == 4
    assert persisted(t, QUORUM_STATE).leader_id == "n3"


def test_lost_election_backs_off_immediately():
    # KIP-595 gridlock note: with two voters, one rejection already loses the election; the
    # candidate steps down keeping its persisted self-vote and waits a random backoff
    two = KRaftNode(QuorumConfig(voters=("n1", "n2")))
    c = two.start_election(two.initial_state("n1")).state
    t = two.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 1, False))
    assert t.state.role is Role.VOTED and t.state.voted_id == "n1" and t.state.epoch == 1
    el = timer(t, ELECTION)
    assert el.delay_ms == 0 and 0 < el.jitter_ms <= two.cfg.election_backoff_max_ms


def test_one_rejection_of_three_is_only_recorded():
    c = N.start_election(st("n1")).state
    t = N.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 1, False))
    assert t.state.role is Role.CANDIDATE and t.state.votes_rejected == {"n2"}


def test_invalid_cluster_id_vote_response_is_a_rejection():
    two = KRaftNode(QuorumConfig(voters=("n1", "n2")))
    c = two.start_election(two.initial_state("n1")).state
    t = two.handle_message(c, "n2", VoteResponse(Errors.INVALID_CLUSTER_ID, None, 1, False))
    assert t.state.role is Role.VOTED


def test_candidate_election_timeout_starts_a_new_election():
    c = N.start_election(st("n1")).state
    t2 = N.handle_timer(c, ELECTION)
    assert t2.action == "Timeout" and t2.state.epoch == 2 and t2.state.role is Role.CANDIDATE
    assert t2.split_sends == "SendVoteRequest"


def test_single_voter_becomes_leader_and_commits_alone():
    one = KRaftNode(QuorumConfig(voters=("n1",)))
    t = one.start_election(one.initial_state("n1"))
    assert isinstance(timer(t, BECOME_LEADER), SetTimer)
    s = one.handle_timer(t.state, BECOME_LEADER).state
    assert s.high_watermark == 1 and s.cluster_id == "cluster-n1-1"
    s = one.client_append(s, "x").state
    assert s.high_watermark == 2


# ---------------------------------------------------------------- BeginQuorumEpoch

def test_begin_quorum_epoch_makes_a_follower():
    t = N.handle_message(st(epoch=1), "n1", BeginQuorumEpochRequest(None, "n1", 2))
    assert t.state.role is Role.FOLLOWER and t.state.leader_id == "n1" and t.state.epoch == 2
    assert persisted(t, QUORUM_STATE).leader_id == "n1"
    assert only_send(t).error is Errors.NONE
    assert timer(t, FETCH).delay_ms == 0


def test_begin_quorum_epoch_conflicting_leader_rejected():
    s = st(role=Role.FOLLOWER, epoch=5, leader_id="n1")
    r = only_send(N.handle_message(s, "n3", BeginQuorumEpochRequest(None, "n3", 5)))
    assert r.error is Errors.INVALID_QUORUM_STATE


def test_begin_quorum_epoch_older_epoch_fenced():
    r = only_send(N.handle_message(st(epoch=5), "n1", BeginQuorumEpochRequest(None, "n1", 4)))
    assert r.error is Errors.FENCED_LEADER_EPOCH and r.leader_epoch == 5


def test_begin_quorum_epoch_inconsistent_cluster_id_terminates():
    t = N.handle_message(st(cluster_id="A"), "n1", BeginQuorumEpochRequest("B", "n1", 2))
    assert t.halt and not t.sends and t.state.role is Role.SHUTDOWN


def test_begin_quorum_epoch_response_records_endorsement_and_fencing():
    s = leader_state()
    t = N.handle_message(s, "n2", BeginQuorumEpochResponse(Errors.NONE, "n1", 2))
    assert t.state.follower_end_offset["n2"] == 0       # endorsed: end offset at least 0
    t = N.handle_message(s, "n2", BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, "n3", 3))
    assert t.state.role is Role.FOLLOWER and t.state.leader_id == "n3"


def test_leader_resends_begin_quorum_epoch_until_endorsed():
    from kraftcore.values import Fn
    s = leader_state(follower_end_offset=Fn({"n2": 0}))
    t = N.handle_timer(s, "resend")
    assert [e.dst for e in t.sends] == ["n3"] and t.split_sends == "SendBeginQuorumEpoch"
    assert N.handle_timer(replace(s, follower_end_offset=Fn({"n2": 0, "n3": 3})), "resend") is None


# ---------------------------------------------------------------- EndQuorumEpoch

def end_req(succ, epoch=2, leader="n1"):
    return EndQuorumEpochRequest(None, leader, leader, epoch, succ)


def test_end_quorum_epoch_first_successor_elects_at_once():
    s = st("n2", role=Role.FOLLOWER, epoch=2, leader_id="n1")
    t = N.handle_message(s, "n1", end_req(("n2", "n3")))
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 3
    assert persisted(t, QUORUM_STATE).voted_id == "n2"
    assert {e.dst for e in t.sends} == {"n1", "n3"}


def test_end_quorum_epoch_first_successor_respects_max_epoch():
    bounded = KRaftNode(CFG, max_epoch=2)
    s = st("n2", role=Role.FOLLOWER, epoch=2, leader_id="n1")
    t = bounded.handle_message(s, "n1", end_req(("n2", "n3")))
    assert t.state.role is Role.FOLLOWER and t.state.epoch == 2


@pytest.mark.parametrize("pos,delay", [(1, 100), (2, 200), (3, 400)])
def test_end_quorum_epoch_successor_backoff(pos, delay):
    # KIP-595: MIN(retryBackoffMaxMs, retryBackoffMs * 2^(N-1)) for successor N > 0
    voters = ("n1", "n2", "n3", "n4", "n5")
    node = KRaftNode(QuorumConfig(voters=voters, retry_backoff_ms=100, retry_backoff_max_ms=1000))
    succ = ("n2", "n3", "n4", "n5")
    me = succ[pos]
    s = replace(node.initial_state(me), role=Role.FOLLOWER, epoch=2, leader_id="n1")
    t = node.handle_message(s, "n1", end_req(succ))
    assert timer(t, ELECTION) == SetTimer(ELECTION, delay)
    assert t.state.role is Role.FOLLOWER and not t.sends


@pytest.mark.parametrize("s,req", [
    (st("n3", role=Role.FOLLOWER, epoch=2, leader_id="n1"), end_req(("n2",))),  # not a successor
    (st("n2", role=Role.FOLLOWER, epoch=3, leader_id="n3"), end_req(("n2",), epoch=2)),  # old epoch
    (st("n2", role=Role.FOLLOWER, epoch=2, leader_id="n3"), end_req(("n2",))),  # other leader
    (st("n2", epoch=2, cluster_id="A"), EndQuorumEpochRequest("B", "n1", "n1", 2, ("n2",))),
])
def test_end_quorum_epoch_rejections_change_nothing(s, req):
    t = N.handle_message(s, "n1", req)
    assert t.state is s and not t.sends and not t.persist


def test_resign_sends_successors_by_replicated_offset():
    from kraftcore.values import Fn
    s = leader_state(follower_end_offset=Fn({"n2": 1, "n3": 3}))
    t = N.resign(s)
    assert t.state.role is Role.RESIGNED and not t.halt
    assert {e.payload.preferred_successors for e in t.sends} == {("n3", "n2")}
    assert t.split_sends is None        # spec Resign sends them all in one step


# ---------------------------------------------------------------- Fetch request (leader)

def fetch(offset, last_epoch, epoch=2, cluster=None):
    return FetchRequest(cluster, "?", epoch, offset, last_epoch)


def test_fetch_to_non_leader_returns_leader_hint():
    s = st("n2", role=Role.FOLLOWER, epoch=2, leader_id="n1")
    r = only_send(N.handle_message(s, "o1", fetch(0, 0)))
    assert r.error is Errors.NOT_LEADER_OR_FOLLOWER and r.leader_id == "n1" and r.high_watermark == -1


def test_fetch_epoch_checks():
    s = leader_state()
    assert only_send(N.handle_message(s, "n2", fetch(0, 0, epoch=1))).error is Errors.FENCED_LEADER_EPOCH
    # a larger epoch (UNKNOWN_LEADER_EPOCH) would tell the fetcher nothing it acts on: the
    # request is consumed without a response (KRaft.tla FetchErrorInformative), so the
    # fetcher's quorum.request.timeout.ms makes it fetch again
    t = N.handle_message(s, "n2", fetch(0, 0, epoch=3))
    assert t.sends == () and t.state == s


def test_fetch_to_leaderless_non_leader_gets_no_response():
    s = st("n2", role=Role.UNATTACHED, epoch=2)
    t = N.handle_message(s, "n1", fetch(0, 0))
    assert t.sends == () and t.state == s


def test_fetch_cluster_id_mismatch():
    s = leader_state(cluster_id="A")
    assert only_send(N.handle_message(s, "n2", fetch(0, 0, cluster="B"))).error is Errors.INVALID_CLUSTER_ID


def test_fetch_diverging_epoch():
    s = leader_state(log=recs(1, 1, 2, 2, 4), epoch=4)
    r = only_send(N.handle_message(s, "n2", fetch(5, 3, epoch=4)))
    assert r.diverging_epoch == (2, 4) and r.records == ()


def test_fetch_returns_records_and_advances_hwm_only_with_current_epoch_record():
    s = leader_state()  # log epochs 1,1,2; epoch 2 starts at offset 2
    t = N.handle_message(s, "n2", fetch(2, 1))
    # n2 has the two epoch-1 records only: majority offset 2 <= epoch start: no advance
    assert t.state.high_watermark == 0
    r = only_send(t)
    assert r.records == s.log[2:] and r.high_watermark == 0
    t = N.handle_message(t.state, "n2", fetch(3, 2))
    assert t.state.high_watermark == 3 and only_send(t).high_watermark == 3


def test_hwm_bug_commits_old_epoch_records():
    bad = KRaftNode(CFG, bug="hwm-no-current-epoch-check")
    t = bad.handle_message(leader_state(), "n2", fetch(2, 1))
    assert t.state.high_watermark == 2


def test_observer_fetch_does_not_advance_hwm():
    t = N.handle_message(leader_state(), "o1", fetch(3, 2))
    assert t.state.high_watermark == 0
    assert t.state.last_fetch_offset["o1"] == 3
    assert t.state.follower_end_offset == leader_state().follower_end_offset


def test_fetch_batch_size_is_bounded():
    s = leader_state(log=recs(1, 1, 1, 1, 2))
    assert len(only_send(N.handle_message(s, "n2", fetch(0, 0))).records) == CFG.fetch_max_records
    one = KRaftNode(QuorumConfig(voters=VOTERS, fetch_max_records=1))
    assert len(only_send(one.handle_message(s, "n2", fetch(0, 0))).records) == 1


# ---------------------------------------------------------------- Fetch response (follower)

def fresp(s, **kw):
    from refimpl.kraft.log import last_epoch
    base = dict(error=Errors.NONE, leader_id="n1", leader_epoch=2, high_watermark=0,
                fetch_offset=len(s.log), last_fetched_epoch=last_epoch(s.log))
    base.update(kw)
    return FetchResponse(**base)


def follower(log=(), **kw):
    return st("n2", role=Role.FOLLOWER, epoch=2, leader_id="n1", log=log, fetch_pending=True, **kw)


def test_fetch_response_appends_and_takes_min_hwm():
    s = follower(recs(1))
    t = N.handle_message(s, "n1", fresp(s, records=recs(1, 1)[1:], high_watermark=5))
    assert len(t.state.log) == 2 and t.state.high_watermark == 2  # min(log end, leader hwm)
    assert persisted(t, LOG) == t.state.log                       # synced with the append
    assert timer(t, ELECTION) == SetTimer(ELECTION, CFG.fetch_timeout_ms)


def test_follower_hwm_never_decreases():
    s = follower(recs(1, 1), high_watermark=2)
    t = N.handle_message(s, "n1", fresp(s, high_watermark=1))
    assert t.state.high_watermark == 2


def test_follower_hwm_uncapped_bug():
    bad = KRaftNode(CFG, bug="follower-hwm-uncapped")
    s = follower(recs(1))
    assert bad.handle_message(s, "n1", fresp(s, high_watermark=5)).state.high_watermark == 5


def test_fetch_response_truncates_on_diverging_epoch():
    s = follower(recs(1, 1, 2, 3, 3))
    t = N.handle_message(s, "n1", fresp(s, diverging_epoch=(2, 4)))
    assert [r.epoch for r in t.state.log] == [1, 1, 2]
    assert persisted(t, LOG) == t.state.log
    assert timer(t, FETCH) == SetTimer(FETCH, 0)


def test_fetch_response_invalid_cluster_id_is_fatal():
    s = follower()
    t = N.handle_message(s, "n1", fresp(s, error=Errors.INVALID_CLUSTER_ID))
    assert t.halt and t.state.role is Role.SHUTDOWN


def test_fetch_response_newer_leader_is_followed_and_persisted():
    s = follower()
    t = N.handle_message(s, "n1", fresp(s, error=Errors.FENCED_LEADER_EPOCH, leader_id="n3",
                                        leader_epoch=3))
    assert t.state.leader_id == "n3" and t.state.epoch == 3
    assert persisted(t, QUORUM_STATE).leader_id == "n3"


def test_stale_or_duplicate_fetch_response_ignored():
    s = follower(recs(1, 1))
    old = fresp(s, fetch_offset=1, last_fetched_epoch=1, records=recs(1, 9)[1:])
    assert N.handle_message(s, "n1", old).state.log == s.log
    assert N.handle_message(replace(s, fetch_pending=False), "n1", old).state.log == s.log


def test_matching_response_accepted_even_after_request_timeout():
    # spec HandleFetchResponse: any response answering the current position is applied
    s = replace(follower(recs(1)), fetch_pending=False)
    t = N.handle_message(s, "n1", fresp(s, records=recs(1, 1)[1:]))
    assert len(t.state.log) == 2


def test_cluster_id_cached_once_committed():
    lc = Record(1, control=LeaderChange("C", "n1", ("n1", "n2")))
    s = follower((lc,))
    t = N.handle_message(s, "n1", fresp(s, high_watermark=0))
    assert t.state.cluster_id is None
    t = N.handle_message(replace(t.state, fetch_pending=True), "n1", fresp(s, high_watermark=1))
    assert t.state.cluster_id == "C" and persisted(t, META_PROPERTIES) == "C"


def test_send_fetch_uses_log_end_and_last_epoch():
    s = replace(follower(recs(1, 2)), fetch_pending=False)
    t = N.handle_timer(s, FETCH)
    e = t.sends[0]
    assert e.dst == "n1" and (e.payload.fetch_offset, e.payload.last_fetched_epoch) == (2, 2)
    assert N.handle_timer(t.state, FETCH) is None  # one Fetch in flight at a time


def test_observer_discovers_leader_by_asking_voters_in_turn():
    s = N.initial_state("o1")
    t = N.handle_timer(s, FETCH)
    assert t.sends[0].dst == "n1"
    r = FetchResponse(Errors.NOT_LEADER_FOR_PARTITION, "n2", 3, 0, 0, 0)
    t2 = N.handle_message(t.state, "n1", r)
    assert t2.state.role is Role.FOLLOWER and t2.state.leader_id == "n2"


# ---------------------------------------------------------------- timeouts

def test_follower_fetch_timeout_starts_election():
    s = follower()
    t = N.handle_timer(s, ELECTION)
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 3


def test_leader_progress_timeout():
    s = leader_state()
    t = N.handle_timer(s, CHECK_QUORUM)
    assert t.action == "LeaderProgressTimeout" and t.state.role is Role.CANDIDATE
    assert t.state.epoch == 3
    # a Fetch that completes a majority (leader + n3 of 3 voters) closes the progress window
    # and restarts the timer, so the timer only expires after a fetch-less timeout
    t = N.handle_message(s, "n3", fetch(0, 0))
    assert t.state.fetched_since_check == frozenset()
    assert SetTimer(CHECK_QUORUM, N.cfg.fetch_timeout_ms) in t.timers


def test_progress_window_rule():
    from refimpl.kraft.rules import record_fetch
    five = ("n1", "n2", "n3", "n4", "n5")
    assert record_fetch(frozenset(), "n1", "n2", five) == (frozenset({"n2"}), False)
    assert record_fetch(frozenset({"n2"}), "n1", "n3", five) == (frozenset(), True)
    assert record_fetch(frozenset({"n2"}), "n1", "n2", five) == (frozenset({"n2"}), False)
    assert record_fetch(frozenset(), "n1", "n2", ("n1", "n2", "n3")) == (frozenset(), True)


# ---------------------------------------------------------------- restart and persistence

def _disk(t, disk=None):
    disk = dict(disk or {})
    for p in t.persist:
        disk[p.key] = p.value
    return disk


def test_restart_keeps_vote_so_no_second_vote_in_the_epoch():
    t = N.handle_message(st(), "n1", vote())
    r = N.restart("n2", _disk(t))
    assert r.state.voted_id == "n1" and r.state.epoch == 1
    assert not only_send(N.handle_message(r.state, "n3", vote(cand="n3"))).vote_granted


def test_double_vote_bug_forgets_the_vote():
    bad = KRaftNode(CFG, bug="double-vote-after-restart")
    t = bad.handle_message(st(), "n1", vote())
    r = bad.restart("n2", _disk(t))
    assert only_send(bad.handle_message(r.state, "n3", vote(cand="n3"))).vote_granted


def test_restart_loses_volatile_state_keeps_log():
    s = N.handle_message(follower(), "n1", fresp(follower(), records=recs(2), high_watermark=1))
    r = N.restart("n2", _disk(s, {QUORUM_STATE: follower().quorum_state(VOTERS)}))
    assert r.state.log == recs(2) and r.state.high_watermark == 0
    assert r.state.role is Role.FOLLOWER and r.state.leader_id == "n1"


def test_client_append_only_on_leader_and_synced():
    assert N.client_append(follower(), "x") is None
    t = N.client_append(leader_state(), "x")
    assert t.state.log[-1] == Record(2, value="x") and persisted(t, LOG) == t.state.log


# ---------------------------------------------------------------- DescribeQuorum

def test_describe_quorum():
    from kraftcore.values import Fn
    s = leader_state(last_fetch_offset=Fn({"n2": 2, "o1": 1}),
                     high_watermark=3)
    d = N.describe_quorum(s)
    assert d.error is Errors.NONE and d.leader_id == "n1" and d.high_watermark == 3
    assert [(r.replica_id, r.log_end_offset) for r in d.current_voters] == [("n1", 3), ("n2", 2), ("n3", -1)]
    assert [(r.replica_id, r.log_end_offset) for r in d.observers] == [("o1", 1)]
    nd = N.describe_quorum(follower())
    assert nd.error is Errors.NOT_LEADER_FOR_PARTITION and nd.leader_id == "n1"


def test_timers_cancelled_on_role_change():
    t = N.handle_message(leader_state(), "n3", vote(epoch=9, cand="n3", last_epoch=8, last_offset=9))
    assert isinstance(timer(t, CHECK_QUORUM), CancelTimer)
    assert t.state.role is Role.VOTED


def test_restart_roles_follow_the_quorum_state_file():
    from refimpl.kraft.state import QuorumStateFile
    led = N.restart("n1", {QUORUM_STATE: QuorumStateFile("n1", 3, "n1", VOTERS)}).state
    assert led.role is Role.RESIGNED and led.epoch == 3
    cand = N.restart("n1", {QUORUM_STATE: QuorumStateFile(None, 3, "n1", VOTERS)})
    assert cand.state.role is Role.CANDIDATE and cand.state.votes_granted == {"n1"}
    assert timer(cand, "resend") == SetTimer("resend", 0)   # re-send the Vote requests
    fol = N.restart("n2", {QUORUM_STATE: QuorumStateFile("n1", 3, None, VOTERS)}).state
    assert fol.role is Role.FOLLOWER and fol.high_watermark == 0


def test_resigned_leader_does_not_serve_fetches_and_times_out():
    s = N.resign(leader_state()).state
    r = only_send(N.handle_message(s, "n2", fetch(3, 2)))
    assert r.error is Errors.NOT_LEADER_OR_FOLLOWER
    assert N.handle_timer(s, ELECTION).state.role is Role.CANDIDATE


def test_shutdown_replica_ignores_everything():
    t = N.handle_message(st(cluster_id="A"), "n1", BeginQuorumEpochRequest("B", "n1", 2))
    assert t.state.role is Role.SHUTDOWN
    assert N.handle_message(t.state, "n1", vote()) is None
    assert N.handle_timer(t.state, ELECTION) is None


def test_describe_quorum_hides_the_hwm_retained_from_before_the_election():
    # Kafka's QuorumStateTest.testCandidateToLeader / testHighWatermarkRetained: a new
    # leader's high watermark is unknown (DescribeQuorum: -1) until a majority has replicated
    # its LeaderChange record; the retained value stays in the state (spec highWatermark)
    s = leader_state(high_watermark=2)              # LeaderChange at offset 2, not committed
    assert s.epoch_start_offset == 2 and N.describe_quorum(s).high_watermark == -1
    assert N.describe_quorum(replace(s, high_watermark=3)).high_watermark == 3


def test_preferred_successors_put_voters_that_never_fetched_last():
    # Kafka's LeaderStateTest.testGetNonLeaderFollowersByFetchOffsetDescending: an unknown
    # end offset sorts last.  n2 only acknowledged BeginQuorumEpoch (end offset 0 in the
    # spec's sense), n3 fetched at offset 0: n3 comes first although n2 < n3 by name
    from kraftcore.values import Fn
    s = leader_state(follower_end_offset=Fn({"n2": 0, "n3": 0}),
                     last_fetch_offset=Fn({"n3": 0}))
    t = N.resign(s)
    assert t.sends[0].payload.preferred_successors == ("n3", "n2")
    # a higher replicated offset still comes first whatever was fetched
    s = leader_state(follower_end_offset=Fn({"n2": 2, "n3": 0}),
                     last_fetch_offset=Fn({"n3": 0}))
    assert N.resign(s).sends[0].payload.preferred_successors == ("n2", "n3")


@pytest.mark.parametrize("qs", [None, (1, None, None), (1, "n2", None), (1, None, "n1")])
def test_restart_with_a_quorum_state_older_than_the_log_starts_unattached_in_the_log_epoch(qs):
    # Kafka's QuorumState.initialize: "Epoch from quorum store file ... is smaller than last
    # written epoch": Unattached in the log's last epoch, no leader, no vote, persisted
    log = recs(1, 3, 3)
    disk = {LOG: log}
    if qs is not None:
        epoch, leader, voted = qs
        disk[QUORUM_STATE] = QuorumStateFile(leader, epoch, voted, VOTERS)
    t = N.restart("n1", disk)
    assert (t.state.role, t.state.epoch, t.state.leader_id, t.state.voted_id) == (
        Role.UNATTACHED, 3, None, None)
    written = persisted(t, QUORUM_STATE)
    assert (written.leader_epoch, written.leader_id, written.voted_id) == (3, None, None)


def test_restart_with_a_consistent_quorum_state_keeps_it():
    disk = {LOG: recs(1, 3, 3), QUORUM_STATE: QuorumStateFile("n2", 3, None, VOTERS)}
    t = N.restart("n1", disk)
    assert (t.state.role, t.state.epoch, t.state.leader_id) == (Role.FOLLOWER, 3, "n2")
    assert persisted(t, QUORUM_STATE) is None
