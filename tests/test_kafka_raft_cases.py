"""Kafka's own KRaft test cases, ported to the KIP-595 refimpl (refimpl/kraft/node.py).

Each test is named after the Kafka test it ports (raft module of apache/kafka:
KafkaRaftClientTest, LeaderStateTest, QuorumStateTest, CandidateStateTest, FollowerStateTest,
VotedStateTest, UnattachedStateTest, ResignedStateTest) and its docstring names the Kafka class
and method and the KIP-595 section.  The Kafka scenario is replayed through the node's inputs
only (handle_message, handle_timer, restart, client_append, resign); Kafka's integer ids 0, 1,
2 ... are our n1, n2, n3 ... ("local" is n1 unless said otherwise).  Kafka-only mechanics
(correlation ids, purgatory, metrics, the batch accumulator, KIP-853 directory ids, pre-vote,
snapshots) are out of scope; docs/refimpl.md "Kafka's own test cases" lists every case, its
result and the ones left out with the reason.
"""

from __future__ import annotations

import pytest

from kraftcore.values import Fn
from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.log import LeaderChange, Record
from refimpl.kraft.messages import (
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest, Errors,
    FetchRequest, FetchResponse, VoteRequest, VoteResponse,
)
from refimpl.kraft.node import CHECK_QUORUM, ELECTION, FETCH, FETCH_TIMEOUT, REQUEST, RESEND, KRaftNode
from refimpl.kraft.state import LOG, QUORUM_STATE, QuorumStateFile, Role, replace
from refimpl.sim.protocol import CancelTimer, SetTimer

# Kafka's KafkaRaftClientTest timings are irrelevant here; only their relations matter
# (retry backoff < election backoff max < election timeout < fetch timeout).
RETRY_MS, BACKOFF_MAX_MS = 50, 100


def node(*voters: str, **kw) -> KRaftNode:
    return KRaftNode(QuorumConfig(voters=tuple(voters), retry_backoff_ms=RETRY_MS,
                                  election_backoff_max_ms=BACKOFF_MAX_MS, **kw))


N2 = node("n1", "n2")              # Kafka's Utils.mkSet(localId, otherNodeId)
N3 = node("n1", "n2", "n3")


def boot(n: KRaftNode, me: str, qs: QuorumStateFile | None = None, log=()):
    """Kafka's RaftClientTestContext.Builder ... .build(): a replica started from a quorum-state
    file (withElectedLeader / withVotedCandidate / withUnknownLeader) and a log."""
    disk = {LOG: tuple(log)}
    if qs is not None:
        disk[QUORUM_STATE] = qs
    return n.restart(me, disk)


def elected(epoch, leader, voters):       # ElectionState.withElectedLeader
    return QuorumStateFile(leader, epoch, None, tuple(voters))


def voted(epoch, cand, voters):           # ElectionState.withVotedCandidate
    return QuorumStateFile(None, epoch, cand, tuple(voters))


def unknown(epoch, voters):               # ElectionState.withUnknownLeader
    return QuorumStateFile(None, epoch, None, tuple(voters))


def recs(*epochs):
    return tuple(Record(e, value=f"v{i}") for i, e in enumerate(epochs))


def only(t, kind=None):
    assert len(t.sends) == 1, t.sends
    p = t.sends[0].payload
    if kind is not None:
        assert isinstance(p, kind), p
    return p


def timer(t, name):
    for x in t.timers:
        if x.name == name:
            return x
    return None


def qs_of(t):
    vals = [p.value for p in t.persist if p.key == QUORUM_STATE]
    return vals[-1] if vals else None


def vote(epoch, cand, last_epoch, last_offset, cluster=None):
    return VoteRequest(cluster, epoch, cand, last_epoch, last_offset)


def fetch(epoch, offset, last_epoch, cluster=None, replica="?"):
    return FetchRequest(cluster, replica, epoch, offset, last_epoch)


def become_leader(n: KRaftNode, me: str, epoch: int, log=()):
    """Kafka's RaftClientTestContext.initializeAsLeader: unattached in epoch - 1, an election
    won with every vote, the LeaderChange record appended; the leader state is returned."""
    s = boot(n, me, unknown(epoch - 1, n.voters), log).state
    c = n.handle_timer(s, ELECTION).state
    assert c.role is Role.CANDIDATE and c.epoch == epoch
    for v in n.voters:
        if v != me and c.role is Role.CANDIDATE:
            c = n.handle_message(c, v, VoteResponse(Errors.NONE, None, epoch, True)).state
    assert c.role is Role.LEADER
    return c


def deliver_fetches(n, s, *fetches):
    """(src, FetchRequest) in order; returns the leader state and the last response."""
    r = None
    for src, req in fetches:
        t = n.handle_message(s, src, req)
        s, r = t.state, only(t, FetchResponse)
    return s, r


# ================================================================ Vote

def test_reject_votes_from_same_epoch_after_resigning_leadership():
    """KafkaRaftClientTest.testRejectVotesFromSameEpochAfterResigningLeadership; KIP-595
    "Quorum State" / "Vote Request Handling" step 3: a replica that led epoch 2 comes back
    Resigned and never votes for anyone else in that epoch, even an up-to-date candidate."""
    s = boot(N2, "n1", elected(2, "n1", N2.voters)).state
    assert s.role is Role.RESIGNED and s.epoch == 2
    r = only(N2.handle_message(s, "n2", vote(2, "n2", 0, 0)), VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == (Errors.NONE, 2, "n1", False)


def test_reject_votes_from_same_epoch_after_resigning_candidacy():
    """KafkaRaftClientTest.testRejectVotesFromSameEpochAfterResigningCandidacy; KIP-595
    "Vote": "voters, including candidates, are not allowed to change their vote once cast"."""
    s = boot(N2, "n1", voted(2, "n1", N2.voters)).state
    assert s.role is Role.CANDIDATE
    r = only(N2.handle_message(s, "n2", vote(2, "n2", 0, 0)), VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == (Errors.NONE, 2, None, False)


def test_grant_votes_from_higher_epoch_after_resigning_leadership():
    """KafkaRaftClientTest.testGrantVotesFromHigherEpochAfterResigningLeadership; KIP-595
    "Vote Request Handling" step 4: a larger candidate epoch is adopted and the vote granted
    (persisted before the response)."""
    s = boot(N2, "n1", elected(2, "n1", N2.voters)).state
    t = N2.handle_message(s, "n2", vote(3, "n2", 0, 0))
    r = only(t, VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == (Errors.NONE, 3, None, True)
    assert t.state.role is Role.VOTED and qs_of(t) == QuorumStateFile(None, 3, "n2", N2.voters)


def test_grant_votes_from_higher_epoch_after_resigning_candidacy():
    """KafkaRaftClientTest.testGrantVotesFromHigherEpochAfterResigningCandidacy; KIP-595
    "Vote Request Handling" step 4 (and "a candidate ... can still grant that vote while at
    the same time transiting back to voter state")."""
    s = boot(N2, "n1", voted(2, "n1", N2.voters)).state
    t = N2.handle_message(s, "n2", vote(3, "n2", 0, 0))
    assert only(t, VoteResponse).vote_granted
    assert t.state.role is Role.VOTED and qs_of(t).voted_id == "n2" and qs_of(t).leader_epoch == 3


def test_grant_votes_when_shutting_down():
    """KafkaRaftClientTest.testGrantVotesWhenShuttingDown (and testLeaderGracefulShutdown);
    KIP-595 "EndQuorumEpoch": a leader that resigned gracefully still votes in the next epoch
    "to help the new leader get elected"."""
    s = become_leader(N2, "n1", 2)
    res = N2.resign(s).state
    assert res.role is Role.RESIGNED
    t = N2.handle_message(res, "n2", vote(3, "n2", 2, len(s.log)))
    assert only(t, VoteResponse).vote_granted and t.state.role is Role.VOTED


def test_handle_valid_vote_request_as_follower():
    """KafkaRaftClientTest.testHandleValidVoteRequestAsFollower; UnattachedStateTest.testGrantVote;
    KIP-595 "Vote Request Handling" 4b: an unattached voter grants an up-to-date candidate of
    its epoch and records the vote."""
    s = boot(N2, "n1", unknown(2, N2.voters)).state
    t = N2.handle_message(s, "n2", vote(2, "n2", 1, 1))
    r = only(t, VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == (Errors.NONE, 2, None, True)
    assert qs_of(t) == QuorumStateFile(None, 2, "n2", N2.voters)


@pytest.mark.parametrize("up_to_date", [True, False])
def test_unattached_grant_vote(up_to_date):
    """UnattachedStateTest.testGrantVote(isLogUpToDate); KIP-595 "Vote Request Handling" 4b
    (the extra condition on leadership)."""
    s = boot(N3, "n1", unknown(5, N3.voters), log=recs(3, 3)).state
    req = vote(5, "n2", 3, 2) if up_to_date else vote(5, "n2", 3, 1)
    assert only(N3.handle_message(s, "n2", req), VoteResponse).vote_granted is up_to_date


def test_handle_vote_request_as_follower_with_elected_leader():
    """KafkaRaftClientTest.testHandleVoteRequestAsFollowerWithElectedLeader;
    FollowerStateTest.testGrantVote; KIP-595 "Vote Request Handling" 4: a follower that knows
    the leader of the epoch rejects and names that leader; its state is unchanged."""
    s = boot(N3, "n1", elected(2, "n3", N3.voters)).state
    t = N3.handle_message(s, "n2", vote(2, "n2", 1, 1))
    r = only(t, VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == (Errors.NONE, 2, "n3", False)
    assert t.state == s and not t.persist


def test_handle_vote_request_as_follower_with_voted_candidate():
    """KafkaRaftClientTest.testHandleVoteRequestAsFollowerWithVotedCandidate;
    VotedStateTest.testGrantVote; KIP-595 "Vote Request Handling" step 3: only the candidate
    already voted for gets the vote."""
    s = boot(N3, "n1", voted(2, "n3", N3.voters)).state
    r = only(N3.handle_message(s, "n2", vote(2, "n2", 1, 1)), VoteResponse)
    assert (r.error, r.leader_id, r.vote_granted) == (Errors.NONE, None, False)
    assert only(N3.handle_message(s, "n3", vote(2, "n3", 1, 1)), VoteResponse).vote_granted


def test_handle_invalid_vote_request_with_older_epoch():
    """KafkaRaftClientTest.testHandleInvalidVoteRequestWithOlderEpoch; KIP-595 "Vote Request
    Handling" step 2: FENCED_LEADER_EPOCH with our epoch, no state change."""
    s = boot(N2, "n1", unknown(2, N2.voters)).state
    t = N2.handle_message(s, "n2", vote(1, "n2", 0, 1))
    r = only(t, VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == \
        (Errors.FENCED_LEADER_EPOCH, 2, None, False)
    assert t.state == s and not t.persist


def test_invalid_vote_request():
    """KafkaRaftClientTest.testInvalidVoteRequest; KIP-595 "Vote Request Handling": a
    malformed candidate position (negative LastOffset, negative LastOffsetEpoch, or a
    LastOffsetEpoch not below the candidate epoch) is INVALID_REQUEST, the epoch is not
    adopted and the known leader is kept."""
    s = boot(N2, "n1", elected(5, "n2", N2.voters)).state
    for bad in (vote(6, "n2", 0, -5), vote(6, "n2", -1, 0), vote(6, "n2", 6, 0)):
        t = N2.handle_message(s, "n2", bad)
        r = only(t, VoteResponse)
        assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == \
            (Errors.INVALID_REQUEST, 5, "n2", False)
        assert t.state == s and not t.persist and not t.timers


def test_leader_ignore_vote_request_on_same_epoch():
    """KafkaRaftClientTest.testLeaderIgnoreVoteRequestOnSameEpoch; LeaderStateTest.testGrantVote;
    KIP-595 "Vote Request Handling" step 3: the leader voted for itself in its epoch."""
    s = become_leader(N2, "n1", 2)
    t = N2.handle_message(s, "n2", vote(2, "n2", 1, 1))
    r = only(t, VoteResponse)
    assert (r.error, r.leader_epoch, r.leader_id, r.vote_granted) == (Errors.NONE, 2, "n1", False)
    assert t.state == s


def test_candidate_ignore_vote_request_on_same_epoch():
    """KafkaRaftClientTest.testCandidateIgnoreVoteRequestOnSameEpoch; CandidateStateTest.testGrantVote;
    KIP-595 "Vote": a candidate voted for itself and cannot change its vote."""
    s = boot(N2, "n1", voted(2, "n1", N2.voters)).state
    t = N2.handle_message(s, "n2", vote(2, "n2", 1, 1))
    assert not only(t, VoteResponse).vote_granted
    assert t.state.role is Role.CANDIDATE and t.state.voted_id == "n1"


def test_vote_request_cluster_id_validation():
    """KafkaRaftClientTest.testVoteRequestClusterIdValidation; KIP-595 "Vote Request Handling"
    step 1 / "Cluster Bootstrapping": a null clusterId is accepted, an empty or different one
    is rejected with INVALID_CLUSTER_ID (Kafka's INCONSISTENT_CLUSTER_ID)."""
    s = replace(become_leader(N2, "n1", 5), cluster_id="cluster-A")
    for cid in ("cluster-A", None):
        r = only(N2.handle_message(s, "n2", vote(5, "n2", 0, 0, cluster=cid)), VoteResponse)
        assert (r.error, r.leader_id, r.vote_granted) == (Errors.NONE, "n1", False)
    for cid in ("", "invalid-uuid"):
        t = N2.handle_message(s, "n2", vote(6, "n2", 5, 9, cluster=cid))
        assert only(t, VoteResponse).error is Errors.INVALID_CLUSTER_ID and t.state == s


def test_vote_request_timeout_late_response_still_counts():
    """KafkaRaftClientTest.testVoteRequestTimeout (KIP-595 era); KIP-595 "Vote Response
    Handling" step 2: the Vote request is re-sent after quorum.request.timeout.ms; a grant
    of the candidate's epoch counts whichever copy it answers, and a second one changes
    nothing."""
    s = boot(N2, "n1", unknown(0, N2.voters)).state
    c = N2.handle_timer(s, ELECTION).state
    resend = N2.handle_timer(c, RESEND)
    assert [e.dst for e in resend.sends] == ["n2"]
    assert only(resend, VoteRequest).candidate_epoch == 1
    led = N2.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 1, True))
    assert led.state.role is Role.LEADER and qs_of(led) == QuorumStateFile("n1", 1, "n1", N2.voters)
    again = N2.handle_message(led.state, "n2", VoteResponse(Errors.NONE, None, 1, True))
    assert again.state == led.state


def test_retry_election():
    """KafkaRaftClientTest.testRetryElection; KIP-595 "Vote Response Handling", note on
    gridlocked elections: with two voters one rejection loses the election; the candidate
    keeps its vote for itself and retries in the next epoch after a random backoff bounded
    by quorum.election.backoff.max.ms."""
    s = boot(N2, "n1", unknown(0, N2.voters)).state
    c = N2.handle_timer(s, ELECTION).state
    t = N2.handle_message(c, "n2", VoteResponse(Errors.NONE, None, 1, False))
    assert t.state.epoch == 1 and t.state.voted_id == "n1"
    el = timer(t, ELECTION)
    assert el.delay_ms == 0 and 0 < el.jitter_ms <= BACKOFF_MAX_MS
    again = N2.handle_timer(t.state, ELECTION)
    assert again.state.role is Role.CANDIDATE and again.state.epoch == 2
    assert only(again, VoteRequest) == VoteRequest(None, 2, "n1", 0, 0)


def test_vote_response_ignored_after_becoming_follower():
    """KafkaRaftClientTest.testVoteResponseIgnoredAfterBecomingFollower; KIP-595 "Vote
    Response Handling" step 1: once a BeginQuorumEpoch of the same epoch made the candidate a
    follower, late Vote responses are ignored."""
    s = boot(N3, "n1", voted(5, "n1", N3.voters)).state
    f = N3.handle_message(s, "n3", BeginQuorumEpochRequest(None, "n3", 5)).state
    assert f.role is Role.FOLLOWER and f.leader_id == "n3"
    for src, resp in (("n2", VoteResponse(Errors.NONE, None, 5, False)),
                      ("n3", VoteResponse(Errors.NONE, "n3", 5, False))):
        assert N3.handle_message(f, src, resp).state == f


def test_initialize_as_candidate_and_become_leader_quorum_of_three():
    """KafkaRaftClientTest.testInitializeAsCandidateAndBecomeLeaderQuorumOfThree; KIP-595 "Vote
    Response Handling" steps 2-3: one grant of two makes a majority of three; quorum-state
    names the leader and the LeaderChange record (synced) lists the granting voters."""
    s = boot(N3, "n1", unknown(0, N3.voters)).state
    c = N3.handle_timer(s, ELECTION)
    assert qs_of(c) == QuorumStateFile(None, 1, "n1", N3.voters)
    assert sorted(e.dst for e in c.sends) == ["n2", "n3"]
    t = N3.handle_message(c.state, "n2", VoteResponse(Errors.NONE, None, 1, True))
    assert qs_of(t) == QuorumStateFile("n1", 1, "n1", N3.voters)
    assert [p.value for p in t.persist if p.key == LOG] == [t.state.log]
    assert t.state.log[0].control == LeaderChange("cluster-n1-1", "n1", ("n1", "n2"))
    assert sorted(e.dst for e in t.sends) == ["n2", "n3"]
    assert all(isinstance(e.payload, BeginQuorumEpochRequest) for e in t.sends)


# ================================================================ BeginQuorumEpoch

def test_handle_begin_quorum_request():
    """KafkaRaftClientTest.testHandleBeginQuorumRequest; KIP-595 "BeginQuorumEpoch Request
    Handling": a replica that voted for the new leader becomes its follower."""
    s = boot(N2, "n1", voted(2, "n2", N2.voters)).state
    t = N2.handle_message(s, "n2", BeginQuorumEpochRequest(None, "n2", 2))
    assert qs_of(t) == QuorumStateFile("n2", 2, "n2", N2.voters)
    r = only(t, BeginQuorumEpochResponse)
    assert (r.error, r.leader_epoch, r.leader_id) == (Errors.NONE, 2, "n2")


def test_handle_begin_quorum_response():
    """KafkaRaftClientTest.testHandleBeginQuorumResponse (a resigned leader learns the next
    epoch) and testHandleBeginQuorumEpochAfterUserInitiatedResign; KIP-595 "BeginQuorumEpoch
    Request Handling"."""
    s = boot(N2, "n1", elected(2, "n1", N2.voters)).state
    t = N2.handle_message(s, "n2", BeginQuorumEpochRequest(None, "n2", 3))
    assert t.state.role is Role.FOLLOWER and qs_of(t).leader_id == "n2" and qs_of(t).leader_epoch == 3


def test_fetch_should_be_treated_as_leader_endorsement():
    """KafkaRaftClientTest.testFetchShouldBeTreatedAsLeaderEndorsement; KIP-595
    "BeginQuorumEpoch Response Handling": "An endorsement ... may also be inferred through a
    received Fetch request with the new leader's epoch": BeginQuorumEpoch is not re-sent."""
    s = become_leader(N2, "n1", 5)
    assert [e.dst for e in N2.handle_timer(s, RESEND).sends] == ["n2"]
    s, r = deliver_fetches(N2, s, ("n2", fetch(5, 0, 0)))
    assert r.error is Errors.NONE and r.leader_id == "n1"
    assert N2.handle_timer(s, RESEND) is None


def test_begin_quorum_epoch_request_cluster_id_validation():
    """KafkaRaftClientTest.testBeginQuorumEpochRequestClusterIdValidation; KIP-595
    "BeginQuorumEpoch Request Handling" / "Cluster Bootstrapping": a null or matching clusterId
    is accepted; an inconsistent one is fatal per the KIP ("a broker will fail"), where
    Kafka answers INCONSISTENT_CLUSTER_ID (see docs/refimpl.md)."""
    s = replace(boot(N2, "n1", unknown(4, N2.voters)).state, cluster_id="cluster-A")
    for cid in ("cluster-A", None):
        t = N2.handle_message(s, "n2", BeginQuorumEpochRequest(cid, "n2", 5))
        assert only(t, BeginQuorumEpochResponse).error is Errors.NONE
        assert t.state.role is Role.FOLLOWER
    t = N2.handle_message(s, "n2", BeginQuorumEpochRequest("", "n2", 5))
    assert t.halt and t.state.role is Role.SHUTDOWN and not t.sends


# ================================================================ EndQuorumEpoch

def end_epoch(epoch, leader, replica, succ, cluster=None):
    return EndQuorumEpochRequest(cluster, replica, leader, epoch, tuple(succ))


def test_end_quorum_ignored_if_already_candidate():
    """KafkaRaftClientTest.testEndQuorumIgnoredIfAlreadyCandidate; KIP-595 "EndQuorumEpoch
    Request Handling": "if ... the leader id is not known for this epoch, the request is
    rejected": a candidate's EndQuorumEpoch (LeaderId -1) leaves a candidate of the same
    epoch as it was (its own election timer still runs)."""
    s = boot(N2, "n1", voted(2, "n1", N2.voters)).state
    t = N2.handle_message(s, "n2", end_epoch(2, None, "n2", ["n1"]))
    assert t.state == s and not t.sends and not t.persist and not t.timers


def test_end_quorum_ignored_if_already_leader():
    """KafkaRaftClientTest.testEndQuorumIgnoredIfAlreadyLeader; KIP-595 "EndQuorumEpoch Request
    Handling": a voter that did not yet know the leader sent EndQuorumEpoch as a candidate;
    the leader stays leader."""
    s = become_leader(N3, "n1", 2)
    t = N3.handle_message(s, "n2", end_epoch(2, None, "n2", ["n1", "n3"]))
    assert t.state == s and not t.timers


def test_end_quorum_ignored_as_leader_if_older_epoch():
    """KafkaRaftClientTest.testEndQuorumIgnoredAsLeaderIfOlderEpoch (and
    testEndQuorumIgnoredAsCandidateIfOlderEpoch); KIP-595 "EndQuorumEpoch Request Handling":
    a smaller epoch is rejected."""
    s = become_leader(N3, "n1", 7)
    assert N3.handle_message(s, "n2", end_epoch(5, "n2", "n2", ["n1", "n3"])).state == s
    c = boot(N2, "n1", voted(5, "n1", N2.voters)).state
    assert N2.handle_message(c, "n2", end_epoch(3, "n2", "n2", ["n1"])).state == c


def test_end_quorum_starts_new_election_immediately_if_follower_unattached():
    """KafkaRaftClientTest.testEndQuorumStartsNewElectionImmediatelyIfFollowerUnattached;
    KIP-595 "EndQuorumEpoch": the first preferred successor "will become candidate
    immediately"; quorum-state (its own vote) is written first."""
    s = boot(N3, "n1", unknown(2, N3.voters)).state
    t = N3.handle_message(s, "n2", end_epoch(2, "n2", "n2", ["n1", "n3"]))
    assert t.state.role is Role.CANDIDATE
    assert qs_of(t) == QuorumStateFile(None, 3, "n1", N3.voters)


def test_handle_end_quorum_request():
    """KafkaRaftClientTest.testHandleEndQuorumRequest; KIP-595 "Vote" condition 2."""
    s = boot(N2, "n1", elected(2, "n2", N2.voters)).state
    t = N2.handle_message(s, "n2", end_epoch(2, "n2", "n2", ["n1"]))
    assert qs_of(t) == QuorumStateFile(None, 3, "n1", N2.voters)
    assert only(t, VoteRequest).candidate_epoch == 3


def test_handle_end_quorum_request_with_lower_priority_to_become_leader():
    """KafkaRaftClientTest.testHandleEndQuorumRequestWithLowerPriorityToBecomeLeader; KIP-595
    "EndQuorumEpoch": successor N = 1 waits MIN(retryBackoffMaxMs, retryBackoffMs * 2^0)
    and keeps fetching meanwhile; then it stands in epoch + 1."""
    n = node("n1", "n2", "n3")
    s = boot(n, "n1", elected(2, "n2", n.voters)).state
    t = n.handle_message(s, "n2", end_epoch(2, "n2", "n2", ["n3", "n1"]))
    assert t.state.role is Role.FOLLOWER and not t.sends
    assert timer(t, ELECTION) == SetTimer(ELECTION, RETRY_MS)
    f = n.handle_timer(t.state, FETCH)
    assert f.sends[0].dst == "n2" and f.sends[0].payload == fetch(2, 0, 0, replica="n1")
    e = n.handle_timer(f.state, ELECTION)
    assert e.state.role is Role.CANDIDATE and e.state.epoch == 3
    assert sorted(x.dst for x in e.sends) == ["n2", "n3"]


def test_end_quorum_epoch_request_cluster_id_validation():
    """KafkaRaftClientTest.testEndQuorumEpochRequestClusterIdValidation; KIP-595
    "EndQuorumEpoch Request Handling" / "Cluster Bootstrapping": a mismatching clusterId is
    rejected (no response: the resigning leader ignores them), a null one accepted."""
    s = replace(boot(N2, "n1", elected(5, "n2", N2.voters)).state, cluster_id="cluster-A")
    for cid in ("", "invalid-uuid"):
        t = N2.handle_message(s, "n2", end_epoch(5, "n2", "n2", ["n1"], cluster=cid))
        assert t.state == s and not t.sends
    for cid in ("cluster-A", None):
        t = N2.handle_message(s, "n2", end_epoch(5, "n2", "n2", ["n1"], cluster=cid))
        assert t.state.role is Role.CANDIDATE and t.state.epoch == 6


def test_end_quorum_epoch_sent_based_on_fetch_offset():
    """KafkaRaftClientTest.testEndQuorumEpochSentBasedOnFetchOffset and
    LeaderStateTest.testGetNonLeaderFollowersByFetchOffsetDescending; KIP-595 "EndQuorumEpoch":
    the preferred successors are sorted by replicated offset, descending."""
    s = become_leader(N3, "n1", 1)
    s, _ = deliver_fetches(N3, s, ("n2", fetch(1, 1, 1)))          # lagging follower
    s = N3.client_append(N3.client_append(s, "foo").state, "bar").state
    s, _ = deliver_fetches(N3, s, ("n3", fetch(1, 3, 1)))          # close follower
    t = N3.resign(s)
    assert {e.dst for e in t.sends} == {"n2", "n3"}
    assert {e.payload.preferred_successors for e in t.sends} == {("n3", "n2")}


# ================================================================ Fetch (leader side)

def test_invalid_fetch_request():
    """KafkaRaftClientTest.testInvalidFetchRequest; KIP-595 "FetchRequest Handling": a
    negative FetchOffset or LastFetchedEpoch, or a LastFetchedEpoch beyond the request's
    epoch, is INVALID_REQUEST and changes nothing (the leader's answer names it and its
    epoch).  (The UNKNOWN_LEADER_EPOCH case of that test is answered by silence here, as in
    KRaft.tla: see test_fetch_epoch_checks in test_refimpl_kraft_node.py.)"""
    s = become_leader(N2, "n1", 5)
    for bad in (fetch(5, -5, 0), fetch(5, 0, -1), fetch(5, 0, 6)):
        t = N2.handle_message(s, "n2", bad)
        r = only(t, FetchResponse)
        assert (r.error, r.leader_id, r.leader_epoch, r.records) == \
            (Errors.INVALID_REQUEST, "n1", 5, ())
        assert t.state == s


def test_fetch_request_cluster_id_validation():
    """KafkaRaftClientTest.testFetchRequestClusterIdValidation; KIP-595 "FetchRequest Handling"
    step 1: a null or matching clusterId passes on to the other checks (here the request is
    malformed, so INVALID_REQUEST), an empty or different one is INVALID_CLUSTER_ID."""
    s = replace(become_leader(N2, "n1", 5), cluster_id="cluster-A")
    for cid in ("cluster-A", None):
        assert only(N2.handle_message(s, "n2", fetch(5, -5, 0, cluster=cid))).error is \
            Errors.INVALID_REQUEST
    for cid in ("", "invalid-uuid"):
        assert only(N2.handle_message(s, "n2", fetch(5, -5, 0, cluster=cid))).error is \
            Errors.INVALID_CLUSTER_ID


def test_local_read_from_leader():
    """KafkaRaftClientTest.testLocalReadFromLeader / testListenerCommitCallbackAfterLeaderWrite;
    KIP-595 "FetchRequest Handling" step 4: the follower's fetch at the end of the LeaderChange
    record commits it; appended records are committed only when the follower fetches past
    them."""
    s = become_leader(N2, "n1", 2)
    s, r = deliver_fetches(N2, s, ("n2", fetch(2, 1, 2)))
    assert s.high_watermark == 1 and r.high_watermark == 1
    s = N2.client_append(N2.client_append(s, "a").state, "b").state
    assert len(s.log) == 3 and s.high_watermark == 1
    s, r = deliver_fetches(N2, s, ("n2", fetch(2, 3, 2)))
    assert s.high_watermark == 3 and r.high_watermark == 3


def test_describe_quorum():
    """KafkaRaftClientTest.testDescribeQuorum; KIP-595 "DescribeQuorum Request Handling": the
    leader reports each voter's and observer's last fetch offset and the high watermark."""
    s = become_leader(N3, "n1", 1)
    s, _ = deliver_fetches(N3, s, ("n2", fetch(1, 1, 1)))
    s = N3.client_append(N3.client_append(s, "foo").state, "bar").state
    s, _ = deliver_fetches(N3, s, ("n3", fetch(1, 3, 1)), ("o1", fetch(1, 0, 0)))
    d = N3.describe_quorum(s)
    assert (d.error, d.leader_id, d.leader_epoch, d.high_watermark) == (Errors.NONE, "n1", 1, 3)
    assert [(v.replica_id, v.log_end_offset) for v in d.current_voters] == \
        [("n1", 3), ("n2", 1), ("n3", 3)]
    assert [(o.replica_id, o.log_end_offset) for o in d.observers] == [("o1", 0)]


def test_election_timeout_after_user_initiated_resign():
    """KafkaRaftClientTest.testElectionTimeoutAfterUserInitiatedResign; ResignedStateTest;
    KIP-595 "EndQuorumEpoch": a resigned leader answers a Fetch with NOT_LEADER_OR_FOLLOWER
    naming itself for its epoch, and after the election timeout stands in epoch + 1."""
    s = N2.resign(become_leader(N2, "n1", 1)).state
    r = only(N2.handle_message(s, "n2", fetch(1, 0, 0)), FetchResponse)
    assert (r.error, r.leader_epoch, r.leader_id) == (Errors.NOT_LEADER_OR_FOLLOWER, 1, "n1")
    t = N2.handle_timer(s, ELECTION)
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 2 and t.state.leader_id is None


# ================================================================ Fetch (follower side)

def fresp(s, leader, epoch, hwm, records=(), error=Errors.NONE, div=None):
    from refimpl.kraft.log import last_epoch
    return FetchResponse(error, leader, epoch, hwm, len(s.log), last_epoch(s.log), tuple(records), div)


def pending(n, s):
    t = n.handle_timer(s, FETCH)
    assert t is not None
    return t


def test_initialize_as_follower_empty_and_non_empty_log():
    """KafkaRaftClientTest.testInitializeAsFollowerEmptyLog / testInitializeAsFollowerNonEmptyLog;
    KIP-595 "Fetch": a follower fetches from its leader at its log end with its last epoch."""
    s = boot(N2, "n1", elected(5, "n2", N2.voters)).state
    t = pending(N2, s)
    assert t.sends[0].dst == "n2" and t.sends[0].payload == fetch(5, 0, 0, replica="n1")
    s = boot(N2, "n1", elected(5, "n2", N2.voters), log=recs(3)).state
    assert pending(N2, s).sends[0].payload == fetch(5, 1, 3, replica="n1")


def test_voter_become_candidate_after_fetch_timeout():
    """KafkaRaftClientTest.testVoterBecomeCandidateAfterFetchTimeout; KIP-595 "Vote" condition
    1: the Vote request carries the log's last epoch and end offset."""
    s = boot(N2, "n1", elected(5, "n2", N2.voters), log=recs(3)).state
    t = N2.handle_timer(pending(N2, s).state, ELECTION)
    assert only(t, VoteRequest) == VoteRequest(None, 6, "n1", 3, 1)
    assert qs_of(t) == QuorumStateFile(None, 6, "n1", N2.voters)


def test_fetch_response_ignored_after_becoming_candidate():
    """KafkaRaftClientTest.testFetchResponseIgnoredAfterBecomingCandidate; KIP-595
    "FetchResponse Handling": the old leader's late response (with records) is ignored."""
    s = boot(N2, "n1", elected(5, "n2", N2.voters)).state
    f = pending(N2, s).state
    c = N2.handle_timer(f, ELECTION).state
    t = N2.handle_message(c, "n2", fresp(f, "n2", 5, 0, recs(3, 3)))
    assert t.state.log == () and t.state.role is Role.CANDIDATE and t.state.epoch == 6
    assert not t.persist


def test_fetch_response_ignored_after_becoming_follower_of_different_leader():
    """KafkaRaftClientTest.testFetchResponseIgnoredAfterBecomingFollowerOfDifferentLeader;
    KIP-595 "FetchResponse Handling"."""
    s = boot(N3, "n1", elected(5, "n2", N3.voters)).state
    f = pending(N3, s).state
    g = N3.handle_message(f, "n3", BeginQuorumEpochRequest(None, "n3", 6)).state
    t = N3.handle_message(g, "n2", fresp(f, "n2", 5, 0, recs(3, 3)))
    assert t.state.log == () and (t.state.leader_id, t.state.epoch) == ("n3", 6)


def test_empty_record_set_in_fetch_response():
    """KafkaRaftClientTest.testEmptyRecordSetInFetchResponse (and testLocalReadFromFollower,
    FollowerStateTest high-watermark cases); KIP-595 "Key Concepts / High watermark": the
    follower's HWM is min(its log end, the leader's), never decreasing, and an empty response
    still advances it."""
    s = pending(N2, boot(N2, "n1", elected(5, "n2", N2.voters)).state).state
    s = N2.handle_message(s, "n2", fresp(s, "n2", 5, 0)).state
    assert (len(s.log), s.high_watermark) == (0, 0)
    s = pending(N2, s).state
    s = N2.handle_message(s, "n2", fresp(s, "n2", 5, 0, recs(5, 5))).state
    assert (len(s.log), s.high_watermark) == (2, 0)
    s = pending(N2, s).state
    assert s.fetch_pending
    s = N2.handle_message(s, "n2", fresp(s, "n2", 5, 2)).state
    assert (len(s.log), s.high_watermark) == (2, 2)


def test_follower_log_reconciliation():
    """KafkaRaftClientTest.testFollowerLogReconciliation; KIP-595 "FetchResponse Handling"
    step 2: DivergingEpoch (3, 2) truncates the log to offset 2; the next Fetch is (2, 3)."""
    s = boot(N2, "n1", elected(5, "n2", N2.voters), log=recs(3, 3, 3)).state
    f = pending(N2, s)
    assert f.sends[0].payload == fetch(5, 3, 3, replica="n1")
    t = N2.handle_message(f.state, "n2", fresp(f.state, "n2", 5, 1, div=(3, 2)))
    assert len(t.state.log) == 2 and [p.value for p in t.persist if p.key == LOG] == [t.state.log]
    assert pending(N2, t.state).sends[0].payload == fetch(5, 2, 3, replica="n1")


def test_append_to_non_leader_fails():
    """KafkaRaftClientTest.testAppendToNonLeaderFails / testAppendFailedWithNotLeaderException;
    KIP-595 "Client Interactions": only the leader appends."""
    s = boot(N2, "n1", elected(5, "n2", N2.voters)).state
    assert N2.client_append(s, "a") is None
    assert N2.client_append(boot(N2, "n1", elected(2, "n1", N2.voters)).state, "a") is None


# ================================================================ observers

def test_initialize_observer_no_previous_state():
    """KafkaRaftClientTest.testInitializeObserverNoPreviousState; KIP-595 "FetchResponse
    Handling" step 1: an observer asks a voter; FENCED_LEADER_EPOCH naming the leader makes it
    that leader's follower (persisted)."""
    n = node("n2", "n3")
    s = n.restart("o1", {}).state
    t = pending(n, s)
    assert t.sends[0].dst in n.voters and t.sends[0].payload == fetch(0, 0, 0, replica="o1")
    u = n.handle_message(t.state, t.sends[0].dst,
                         fresp(t.state, "n2", 5, 0, error=Errors.FENCED_LEADER_EPOCH))
    assert (u.state.role, u.state.leader_id, u.state.epoch) == (Role.FOLLOWER, "n2", 5)
    assert qs_of(u).leader_id == "n2" and qs_of(u).leader_epoch == 5


def test_observer_quorum_discovery_failure():
    """KafkaRaftClientTest.testObserverQuorumDiscoveryFailure; KIP-595 "FetchResponse
    Handling" step 1: an answer without a leader is retried after the retry backoff."""
    n = node("n2")
    s = n.restart("o1", {}).state
    t = pending(n, s)
    u = n.handle_message(t.state, "n2", FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, None, -1, -1, -1, -1))
    assert u.state.role is Role.UNATTACHED and timer(u, FETCH) == SetTimer(FETCH, RETRY_MS)
    t2 = pending(n, u.state)
    assert t2.sends[0].dst == "n2" and t2.sends[0].payload == fetch(0, 0, 0, replica="o1")
    v = n.handle_message(t2.state, "n2", fresp(t2.state, "n2", 5, 0, error=Errors.FENCED_LEADER_EPOCH))
    assert (v.state.leader_id, v.state.epoch) == ("n2", 5)


def discover_leader_as_observer(n, leader="n2", epoch=5):
    """Kafka's RaftClientTestContext.discoverLeaderAsObserver."""
    t = pending(n, n.restart("o1", {}).state)
    u = n.handle_message(t.state, t.sends[0].dst, fresp(t.state, leader, epoch, 0))
    assert (u.state.role, u.state.leader_id) == (Role.FOLLOWER, leader)
    return u


def test_observer_send_discovery_fetch_after_fetch_timeout():
    """KafkaRaftClientTest.testObserverSendDiscoveryFetchAfterFetchTimeout; KIP-595
    "BeginQuorumEpoch": observers find a new leader through the Fetch API: after
    quorum.fetch.timeout.ms without a successful Fetch it asks the voters again."""
    n = node("n2", "n3")
    u = discover_leader_as_observer(n)
    assert timer(u, FETCH_TIMEOUT) == SetTimer(FETCH_TIMEOUT, n.cfg.fetch_timeout_ms)
    t = n.handle_timer(pending(n, u.state).state, FETCH_TIMEOUT)
    f = pending(n, t.state)
    assert f.sends[0].dst == "n3" and f.sends[0].payload == fetch(5, 0, 0, replica="o1")


def test_handle_vote_request_as_observer_is_rejected():
    """KafkaRaftClientTest.testHandleInvalidVoteRequestAsObserver (vote part); KIP-595 "Key
    Concepts": an observer never votes.  (Kafka also keeps the observer's epoch and answers
    INCONSISTENT_VOTER_SET; the refimpl, like KRaft.tla's HandleVoteRequest, adopts the epoch:
    see docs/refimpl.md.)"""
    n = node("n2", "n3")
    s = n.restart("n1", {QUORUM_STATE: unknown(2, n.voters)}).state
    assert not only(n.handle_message(s, "n2", vote(3, "n2", 2, 1)), VoteResponse).vote_granted


# ================================================================ high watermark (LeaderStateTest)

def leader_with_log(n, me, epoch, before, after):
    """A leader whose log has `before` records of epoch - 1, then its LeaderChange record
    (the epoch start offset = `before`), then `after` - 1 records of its epoch."""
    s = become_leader(n, me, epoch, log=recs(*([epoch - 1] * before)))
    for i in range(after - 1):
        s = n.client_append(s, f"x{i}").state
    assert s.epoch_start_offset == before and len(s.log) == before + after
    return s


def test_update_high_watermark_quorum_size_one():
    """LeaderStateTest.testUpdateHighWatermarkQuorumSizeOne (and
    KafkaRaftClientTest.testLeaderAppendSingleMemberQuorum); KIP-595 "FetchRequest Handling"
    step 4: a single voter commits its LeaderChange record (epoch start 15) and every append
    on its own."""
    one = node("n1")
    s = boot(one, "n1", unknown(4, one.voters), log=recs(*([4] * 15))).state
    c = one.handle_timer(s, ELECTION).state
    t = one.handle_timer(c, "become-leader")
    assert t.state.epoch_start_offset == 15 and t.state.high_watermark == 16
    s = t.state
    for i in range(4):
        s = one.client_append(s, f"a{i}").state
    assert s.high_watermark == 20


def test_update_high_watermark_quorum_size_two():
    """LeaderStateTest.testUpdateHighWatermarkQuorumSizeTwo; KIP-595 "FetchRequest Handling"
    step 4 with the current-epoch rule: a follower at the epoch start offset (10) commits
    nothing; at 11 (the LeaderChange record) the HWM is 11; then 13."""
    s = leader_with_log(N2, "n1", 5, 10, 3)
    s, _ = deliver_fetches(N2, s, ("n2", fetch(5, 10, 4)))
    assert s.high_watermark == 0
    s, _ = deliver_fetches(N2, s, ("n2", fetch(5, 11, 5)))
    assert s.high_watermark == 11
    s, _ = deliver_fetches(N2, s, ("n2", fetch(5, 13, 5)))
    assert s.high_watermark == 13


def test_update_high_watermark_quorum_size_three():
    """LeaderStateTest.testUpdateHighWatermarkQuorumSizeThree; KIP-595 "FetchRequest Handling"
    step 4: followers at the epoch start (10) commit nothing; one follower at the leader's
    end (15) makes a majority; the HWM follows the second-largest voter offset."""
    s = leader_with_log(N3, "n1", 5, 10, 5)
    s, _ = deliver_fetches(N3, s, ("n2", fetch(5, 10, 4)), ("n3", fetch(5, 10, 4)))
    assert s.high_watermark == 0
    s, _ = deliver_fetches(N3, s, ("n3", fetch(5, 15, 5)))
    assert s.high_watermark == 15
    for i in range(5):
        s = N3.client_append(s, f"y{i}").state
    assert s.high_watermark == 15                    # the leader's own append commits nothing
    s, _ = deliver_fetches(N3, s, ("n2", fetch(5, 20, 5)))
    assert s.high_watermark == 20
    s, _ = deliver_fetches(N3, s, ("n3", fetch(5, 20, 5)))
    assert s.high_watermark == 20


def test_update_high_watermark_quorum_size_five():
    """LeaderStateTest's quorum-size cases for five voters (majority 3, the leader included);
    KIP-595 "FetchRequest Handling" step 4 and "Key Concepts": observers never count."""
    n5 = node("n1", "n2", "n3", "n4", "n5")
    s = leader_with_log(n5, "n1", 3, 4, 6)
    s, _ = deliver_fetches(n5, s, ("n2", fetch(3, 10, 3)), ("o1", fetch(3, 10, 3)),
                           ("o2", fetch(3, 10, 3)))
    assert s.high_watermark == 0                     # leader + n2 are 2 of 5; observers don't count
    s, _ = deliver_fetches(n5, s, ("n3", fetch(3, 7, 3)))
    assert s.high_watermark == 7                     # third largest of (10, 10, 7, -, -)
    s, _ = deliver_fetches(n5, s, ("n4", fetch(3, 9, 3)))
    assert s.high_watermark == 9


def test_non_monotonic_high_watermark_update():
    """LeaderStateTest.testNonMonotonicHighWatermarkUpdate; KIP-595 "Key Concepts / High
    watermark": the follower lost its disk and fetches from an earlier offset: the leader's
    high watermark does not go back."""
    s = leader_with_log(N2, "n1", 1, 0, 10)
    s, _ = deliver_fetches(N2, s, ("n2", fetch(1, 10, 1)))
    assert s.high_watermark == 10
    s, r = deliver_fetches(N2, s, ("n2", fetch(1, 5, 1)))
    assert s.high_watermark == 10 and r.high_watermark == 10


def test_non_monotonic_follower_end_offset_deliberate_difference():
    """LeaderStateTest.testNonMonotonicHighWatermarkUpdate / testHighWatermarkDoesNotDecreaseFromNewVoter.
    Kafka's LeaderState.updateReplicaState takes each fetch's offset (it may go DOWN).  The spec
    (KRaft.tla HandleFetchRequest: followerEndOffset' = Max(@, FetchOffset)) and so the refimpl
    (rules.follower_end_offset) keep the largest offset a follower has fetched from in the
    leader's epoch: a deliberate difference (docs/refimpl.md), safe because a follower never
    truncates below a validated fetch offset in the same epoch, except by disk loss, which the
    simulator allows only under the spec's rejoin rule.  What Kafka's tests assert of the HWM
    holds in both: it never decreases, and the new record is committed once a majority holds it."""
    s = leader_with_log(N3, "n1", 1, 0, 10)
    s, _ = deliver_fetches(N3, s, ("n2", fetch(1, 10, 1)))
    assert s.high_watermark == 10
    s = N3.client_append(s, "z").state                # offset 10; log end 11
    s, _ = deliver_fetches(N3, s, ("n2", fetch(1, 5, 1)))   # a stale (duplicated) Fetch
    assert s.follower_end_offset["n2"] == 10 and s.high_watermark == 10
    s, _ = deliver_fetches(N3, s, ("n3", fetch(1, 9, 1)))
    assert s.high_watermark == 10
    s, _ = deliver_fetches(N3, s, ("n3", fetch(1, 11, 1)))
    assert s.high_watermark == 11


def test_check_quorum():
    """LeaderStateTest.testCheckQuorum; KIP-595r "Leader Progress Timeout": with five voters,
    Fetches from two voters (a majority with the leader) restart the progress timer; one
    voter and one observer do not; the timer then expires into an election."""
    n5 = node("n1", "n2", "n3", "n4", "n5")
    s = become_leader(n5, "n1", 1)
    t = n5.handle_message(s, "n2", fetch(1, 1, 1))
    assert timer(t, CHECK_QUORUM) is None
    t = n5.handle_message(t.state, "n3", fetch(1, 1, 1))
    assert timer(t, CHECK_QUORUM) == SetTimer(CHECK_QUORUM, n5.cfg.fetch_timeout_ms)
    t = n5.handle_message(t.state, "n4", fetch(1, 1, 1))
    t = n5.handle_message(t.state, "o1", fetch(1, 1, 1))
    assert timer(t, CHECK_QUORUM) is None and t.state.fetched_since_check == {"n4"}
    e = n5.handle_timer(t.state, CHECK_QUORUM)
    assert e.action == "LeaderProgressTimeout" and e.state.role is Role.CANDIDATE


def test_check_quorum_with_one_voter():
    """LeaderStateTest.testCheckQuorumWithOneVoter; KIP-595r "Leader Progress Timeout": a
    single voter is a majority on its own, so its progress timeout never fires (spec
    LeaderProgressTimeout requires ~IsQuorumOf(i, fetchedSinceCheck[i] \\cup {i})), observers'
    fetches notwithstanding."""
    one = node("n1")
    s = boot(one, "n1", unknown(0, one.voters)).state
    s = one.handle_timer(one.handle_timer(s, ELECTION).state, "become-leader").state
    s = one.handle_message(s, "o1", fetch(1, 0, 0)).state
    assert one.handle_timer(s, CHECK_QUORUM) is None
    assert s.role is Role.LEADER


# ================================================================ QuorumState initialisation

def test_initialize_as_resigned_leader_from_state_store():
    """QuorumStateTest.testInitializeAsResignedLeader and
    KafkaRaftClientTest.testInitializeAsResignedLeaderFromStateStore /
    testInitializeAsResignedAndBecomeCandidate; KIP-595 "Quorum State": a replica that led
    epoch 2 restarts Resigned (no appends), keeps the file, and after the election timeout
    stands in epoch 3."""
    t = boot(N2, "n1", elected(2, "n1", N2.voters))
    s = t.state
    assert (s.role, s.epoch, s.leader_id) == (Role.RESIGNED, 2, "n1") and s.high_watermark == 0
    assert N2.client_append(s, "a") is None
    assert isinstance(timer(t, ELECTION), SetTimer)
    e = N2.handle_timer(s, ELECTION)
    assert qs_of(e) == QuorumStateFile(None, 3, "n1", N2.voters)
    assert only(e, VoteRequest) == VoteRequest(None, 3, "n1", 0, 0)


def test_initialize_as_candidate_from_state_store():
    """QuorumStateTest.testInitializeAsResignedCandidate and
    KafkaRaftClientTest.testInitializeAsCandidateFromStateStore; KIP-595 "Vote Response
    Handling" step 2 ("upon failover it can just resend the vote request"): the candidate
    resumes its election of epoch 2 and re-sends both Vote requests."""
    t = boot(N3, "n1", voted(2, "n1", N3.voters))
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 2
    assert timer(t, RESEND) == SetTimer(RESEND, 0)
    r = N3.handle_timer(t.state, RESEND)
    assert sorted(e.dst for e in r.sends) == ["n2", "n3"]
    assert {e.payload for e in r.sends} == {VoteRequest(None, 2, "n1", 0, 0)}


def test_initialize_as_voted_and_follower():
    """QuorumStateTest.testInitializeAsVoted / testInitializeAsFollower /
    testInitializeAsUnattached (and no file: epoch 0); KIP-595 "Quorum State"."""
    v = boot(N3, "n1", voted(5, "n2", N3.voters)).state
    assert (v.role, v.epoch, v.voted_id, v.leader_id) == (Role.VOTED, 5, "n2", None)
    f = boot(N3, "n1", elected(5, "n2", N3.voters)).state
    assert (f.role, f.epoch, f.leader_id) == (Role.FOLLOWER, 5, "n2")
    u = boot(N3, "n1", unknown(5, N3.voters)).state
    assert (u.role, u.epoch) == (Role.UNATTACHED, 5)
    z = N3.restart("n1", {}).state
    assert (z.role, z.epoch, z.voted_id, z.leader_id) == (Role.UNATTACHED, 0, None, None)


def test_timers_of_a_restarted_follower_and_observer():
    """QuorumStateTest.testInitializeAsFollower / KafkaRaftClientTest.testInitializeObserverNoPreviousState
    timers; KIP-595 "Vote" condition 1: a voter follower has the fetch timeout as its election
    timer; an observer never has an election timer."""
    t = boot(N3, "n1", elected(5, "n2", N3.voters))
    assert timer(t, ELECTION) == SetTimer(ELECTION, N3.cfg.fetch_timeout_ms)
    o = N3.restart("o1", {QUORUM_STATE: elected(5, "n2", N3.voters)})
    assert isinstance(timer(o, ELECTION), CancelTimer)
    assert N3.handle_timer(o.state, ELECTION) is None


def test_restart_restores_resigned_not_leader_for_leader_state_with_fetches():
    """QuorumStateTest.testInitializeAsResignedLeader (volatile state lost); KIP-595 "Quorum
    State": the leader's replication state is not persisted: after a restart the former
    leader knows no follower offsets and no high watermark."""
    s = become_leader(N2, "n1", 2)
    s, _ = deliver_fetches(N2, s, ("n2", fetch(2, 1, 2)))
    assert s.high_watermark == 1
    disk = {QUORUM_STATE: s.quorum_state(N2.voters), LOG: s.log}
    r = N2.restart("n1", disk).state
    assert (r.role, r.high_watermark, r.follower_end_offset) == (Role.RESIGNED, 0, Fn())
    assert r.log == s.log


# ================================================================ more state-class cases

def test_cannot_resign_if_not_leader_or_observer():
    """KafkaRaftClientTest.testCannotResignIfNotLeader / testCannotResignIfObserver; KIP-595
    "EndQuorumEpoch": only a leader (or a candidate ending its election) sends EndQuorumEpoch."""
    assert N2.resign(boot(N2, "n1", elected(2, "n2", N2.voters)).state) is None
    n = node("n2", "n3")
    assert n.resign(n.restart("o1", {QUORUM_STATE: elected(5, "n2", n.voters)}).state) is None


def test_observer_cannot_become_candidate():
    """QuorumStateTest.testObserverCannotBecomeCandidateOrLeader; KIP-595 "Key Concepts":
    observers never stand in an election, whatever timer fires."""
    n = node("n2", "n3")
    s = n.restart("o1", {QUORUM_STATE: unknown(4, n.voters)}).state
    assert n.start_election(s) is None and n.handle_timer(s, ELECTION) is None


def test_cannot_grant_or_reject_non_voters():
    """CandidateStateTest.testCannotGrantOrRejectNonVoters; KIP-595 "Key Concepts": only voters'
    answers count towards (or against) a majority."""
    c = boot(N3, "n1", voted(2, "n1", N3.voters)).state
    t = N3.handle_message(c, "o1", VoteResponse(Errors.NONE, None, 2, True))
    assert t.state.role is Role.CANDIDATE
    two = node("n1", "n2")
    c2 = boot(two, "n1", voted(2, "n1", two.voters)).state
    t = two.handle_message(c2, "o1", VoteResponse(Errors.NONE, None, 2, False))
    assert t.state.role is Role.CANDIDATE                 # n2 may still grant


@pytest.mark.parametrize("size,grants,leader", [(1, 0, True), (2, 1, True), (3, 1, True),
                                               (5, 1, False), (5, 2, True)])
def test_candidate_quorum_sizes(size, grants, leader):
    """CandidateStateTest.testSingleNodeQuorum / testTwoNodeQuorumVoteGranted /
    testThreeNodeQuorumVoteGranted (and five voters); KIP-595 "Vote Response Handling" step 2:
    a majority of the voters, the candidate's own vote included."""
    voters = tuple(f"n{i}" for i in range(1, size + 1))
    n = node(*voters)
    c = n.start_election(n.initial_state("n1"))
    s = c.state
    for v in voters[1:1 + grants]:
        s = n.handle_message(s, v, VoteResponse(Errors.NONE, None, 1, True)).state
    if size == 1:
        s = n.handle_timer(s, "become-leader").state
    assert (s.role is Role.LEADER) is leader


@pytest.mark.parametrize("size,rejections,lost", [(2, 1, True), (3, 1, False), (3, 2, True),
                                                  (5, 2, False), (5, 3, True)])
def test_candidate_vote_rejected(size, rejections, lost):
    """CandidateStateTest.testTwoNodeQuorumVoteRejected / testThreeNodeQuorumVoteRejected;
    KIP-595 gridlock note: once the rejections leave no majority the candidate steps down at
    once (keeping its vote) and backs off."""
    voters = tuple(f"n{i}" for i in range(1, size + 1))
    n = node(*voters)
    s = n.start_election(n.initial_state("n1")).state
    for v in voters[1:1 + rejections]:
        s = n.handle_message(s, v, VoteResponse(Errors.NONE, None, 1, False)).state
    assert (s.role is Role.VOTED) is lost and s.voted_id == "n1" and s.epoch == 1


def test_leader_steps_down_after_becoming_follower_voted_or_unattached():
    """KafkaRaftClientTest.testAccumulatorClearedAfterBecomingFollower / ...BecomingVoted /
    ...BecomingUnattached (the role changes; the accumulator is Kafka's); KIP-595 "Vote
    Request Handling" step 4 and "BeginQuorumEpoch Request Handling": a leader that learns a
    larger epoch stops leading (no more appends) and clears its leader bookkeeping."""
    s = become_leader(N2, "n1", 2)
    s = N2.client_append(s, "a").state
    f = N2.handle_message(s, "n2", BeginQuorumEpochRequest(None, "n2", 3)).state
    assert (f.role, f.leader_id, f.epoch) == (Role.FOLLOWER, "n2", 3)
    v = N2.handle_message(s, "n2", vote(3, "n2", 2, len(s.log))).state
    assert (v.role, v.voted_id, v.epoch) == (Role.VOTED, "n2", 3)
    u = N2.handle_message(s, "n2", vote(3, "n2", 2, 0)).state       # its log is behind
    assert (u.role, u.voted_id, u.leader_id, u.epoch) == (Role.UNATTACHED, None, None, 3)
    for x in (f, v, u):
        assert N2.client_append(x, "b") is None and x.follower_end_offset == Fn()


# ================================================================ RaftEventSimulationTest

from refimpl.kraft.adapter import KRaftAdapter, KRaftBounds  # noqa: E402
from refimpl.sim.faults import get_profile  # noqa: E402
from refimpl.sim.scenario import Scenario  # noqa: E402
from refimpl.sim.simulator import Simulator  # noqa: E402


def sim(voters=3, scenario=None, until=0, seed=0, trace=True):
    """A fault-free cluster (profile `none`) with the given scenario, run until a leader is
    back after `until` ms; the online invariants (ElectionSafety, LogMatching,
    LeaderCompleteness, committed records never lost, HWM monotonic ...) are checked after
    every step, as RaftEventSimulationTest's invariants are."""
    names = tuple(f"n{i}" for i in range(1, voters + 1))
    a = KRaftAdapter(KRaftBounds(voters=names, values=("v1", "v2")))
    return Simulator(a, seed, get_profile("none"), 400_000, trace=trace, scenario=scenario,
                     faults_until_ms=until, stop_when_recovered=True).run()


def final(r):
    import json
    return json.loads(r.lines[-2])["state"]


def leader_of(state):
    leaders = [n for n, role in state["role"].items() if role == "Leader"]
    assert len(leaders) == 1, state["role"]
    return leaders[0]


@pytest.mark.parametrize("voters", [3, 5])
def test_initial_leader_election(voters):
    """RaftEventSimulationTest.testInitialLeaderElection (quorum sizes 3 and 5); KIP-595
    "Vote": a fault-free cluster elects one leader, whose epoch every voter learns."""
    r = sim(voters)
    assert r.violations == [] and r.liveness["verdict"] == "recovered"
    st = final(r)
    ldr = leader_of(st)
    assert st["currentEpoch"][ldr] >= 1


def _after_first_leader(voters, fault, seed=0):
    first = sim(voters, seed=seed)
    ldr, t0 = leader_of(final(first)), first.time_ms
    sc = fault(Scenario(), ldr, t0)
    r = sim(voters, scenario=sc, until=sc.last_fault_ms, seed=seed)
    assert r.violations == [], r.violations[:1]
    assert r.liveness["verdict"] == "recovered"
    st = final(r)
    return ldr, st, first


@pytest.mark.parametrize("voters", [3, 5])
def test_election_after_leader_failure(voters):
    """RaftEventSimulationTest.testElectionAfterLeaderFailure; KIP-595 "Vote" condition 1: the
    leader crashes; the others' fetch timeouts elect a new leader in a larger epoch; the old
    leader restarts Resigned and catches up with it."""
    ldr, st, first = _after_first_leader(
        voters, lambda sc, ldr, t0: sc.crash(ldr, at_ms=t0 + 500, restart_ms=t0 + 6000), seed=1)
    new = leader_of(st)
    assert new != ldr and st["currentEpoch"][new] > final(first)["currentEpoch"][ldr]


def test_election_after_leader_graceful_shutdown():
    """RaftEventSimulationTest.testElectionAfterLeaderGracefulShutdown; KIP-595
    "EndQuorumEpoch": the resigning leader's first preferred successor stands at once."""
    ldr, st, first = _after_first_leader(
        3, lambda sc, ldr, t0: sc.graceful(ldr, at_ms=t0 + 500, restart_ms=t0 + 3000), seed=2)
    assert leader_of(st) != ldr


def test_election_after_leader_network_partition():
    """RaftEventSimulationTest.testElectionAfterLeaderNetworkPartition; KIP-595r "Leader
    Progress Timeout": the partitioned leader loses its quorum; the majority side elects a new
    leader; after the heal everyone agrees on it."""
    ldr, st, first = _after_first_leader(
        3, lambda sc, ldr, t0: sc.partition({ldr}, start_ms=t0 + 500, end_ms=t0 + 8000), seed=3)
    new = leader_of(st)
    assert st["currentEpoch"][new] > final(first)["currentEpoch"][ldr]


def test_recovery_after_all_nodes_failed():
    """RaftEventSimulationTest.testRecoveryAfterAllNodesFailed; KIP-595 "Quorum State": every
    voter crashes and restarts from its quorum-state file and log; a leader is elected again
    and no committed record is lost (online invariant)."""
    def all_down(sc, ldr, t0):
        for n in ("n1", "n2", "n3"):
            sc.crash(n, at_ms=t0 + 1000, restart_ms=t0 + 3000)
        return sc
    ldr, st, first = _after_first_leader(3, all_down, seed=4)
    assert st["currentEpoch"][leader_of(st)] > final(first)["currentEpoch"][ldr]


# ---------------------------------------------------------------- MockLogTest (log rules)

def _log_of(*batches):
    """(count, epoch) batches, as MockLogTest appends them."""
    return tuple(Record(e, value="x") for n, e in batches for _ in range(n))


@pytest.mark.parametrize("kafka_case, log, fetch, want", [
    ("testValidateEpochGreaterThanLastKnownEpoch", ((1, 1),), (1, 2), (1, 1)),
    ("testValidateOffsetGreatThanEndOffset", ((1, 1),), (2, 1), (1, 1)),
    ("testValidateOffsetLessThanLEO", ((10, 1), (10, 2)), (11, 1), (1, 10)),
    ("testValidateValidEpochAndOffset", ((5, 1),), (4, 1), None),
    # the no-snapshot forms of testValidateUnknownEpochLessThanLastKnownGreaterThanOldestSnapshot
    # and testValidateEpochLessThanFirstEpochInLog
    ("testValidateUnknownEpochLessThanLastKnown", ((5, 1), (5, 2), (5, 4)), (100, 3), (2, 10)),
    ("testValidateEpochLessThanFirstEpochInLog", ((5, 3),), (100, 2), (0, 0)),
    ("a fetch at the start offset of the next epoch", ((5, 1), (5, 2)), (5, 1), None),
])
def test_validate_offset_and_epoch(kafka_case, log, fetch, want):
    """MockLogTest.testValidate* (ReplicatedLog.validateOffsetAndEpoch, no snapshot); KIP-595
    "FetchRequest Handling" step 3: Kafka's ValidOffsetAndEpoch.diverging(offset, epoch) is
    the refimpl's DivergingEpoch (epoch, end offset), VALID is None."""
    from refimpl.kraft import rules
    assert rules.diverging_epoch(_log_of(*log), *fetch) == want, kafka_case


def test_end_offset_for_epoch():
    """MockLogTest.testEndOffsetForEpoch (MockLog.endOffsetForEpoch): for an epoch in the log,
    its end offset; for an absent epoch, the end of the largest smaller epoch, with that epoch;
    beyond the last epoch, the log end."""
    from refimpl.kraft.log import end_offset_for_epoch
    log = _log_of((5, 1), (5, 2), (5, 4))
    assert [end_offset_for_epoch(log, e) for e in range(7)] == [
        (0, 0), (1, 5), (2, 10), (2, 10), (4, 15), (4, 15), (4, 15)]
    assert end_offset_for_epoch(_log_of((5, 3)), 2) == (0, 0)
    assert end_offset_for_epoch((), 3) == (0, 0)
