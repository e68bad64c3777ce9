"""Unit tests of KIP-642 reassignment in the refimpl: the pure rules (refimpl/kraft/reassign.py)
and the handlers of ReassignNode, one or more per rule of the draft (its example, the main
subtlety, NOT_FOLLOWER, the Vote from a non-voter, quorum-state persistence, bootstrapping)."""

from __future__ import annotations

from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.log import LeaderChange, Record, VoterAssignment
from refimpl.kraft.messages import (
    AlterPartitionReassignmentsRequest, Errors, FetchRequest, FetchResponse, VoteRequest,
)
from refimpl.kraft.reassign import (
    Change, ChangeKind, committed_voters, next_change, target_from_log, voters_from_log,
)
from refimpl.kraft.node import CHECK_QUORUM, ELECTION
from refimpl.kraft.reassign_node import REASSIGN, UPDATE_HWM, ReassignNode
from refimpl.kraft.state import QUORUM_STATE, Role, replace
from refimpl.sim.protocol import CancelTimer, SetTimer

VOTERS = ("n1", "n2", "n3")
N = ReassignNode(QuorumConfig(voters=VOTERS))


def va(epoch, cur, target=()):
    return Record(epoch, control=VoterAssignment("c", tuple(sorted(cur)), tuple(sorted(target))))


def lc(epoch, leader="n1"):
    return Record(epoch, control=LeaderChange("c", leader, VOTERS))


def has_timer(t, name):
    return any(isinstance(x, SetTimer) and x.name == name for x in t.timers)


def leader(log, hwm, node="n1", epoch=2, **kw):
    s = replace(N.initial_state(node, "c"), role=Role.LEADER, epoch=epoch, leader_id=node,
                voted_id=node, log=log, high_watermark=hwm, epoch_start_offset=0)
    return replace(s, voter_set=voters_from_log(log, VOTERS), **kw)


# ---------------------------------------------------------------- the pure rules

def test_voter_set_is_the_latest_appended_assignment_else_bootstrap():
    assert voters_from_log((), VOTERS) == VOTERS
    log = (lc(1), va(1, VOTERS, ("n1", "n2", "n4")), va(1, ("n1", "n2", "n3", "n4"), ("n1", "n2", "n4")))
    assert voters_from_log(log, VOTERS) == ("n1", "n2", "n3", "n4")     # uncommitted counts
    assert voters_from_log(log[:2], VOTERS) == VOTERS                    # truncated: reverts
    assert committed_voters(log, 2, VOTERS) == (VOTERS, 2)               # quorum-state value
    assert committed_voters(log, 1, VOTERS) == (VOTERS, 0)
    assert target_from_log(log) == ("n1", "n2", "n4")
    assert target_from_log(log + (va(1, ("n1", "n2", "n4")),)) is None   # cleared


def test_draft_example_123_to_456_adds_first_and_the_leader_leaves_last():
    """KIP-642 draft "Quorum Change Protocol": (1,2,3) -> (4,5,6) with 1 leading."""
    cur, target, caught = ("1", "2", "3"), ("4", "5", "6"), {"4", "5", "6"}
    steps = []
    while True:
        ch = next_change(cur, target, "1", caught)
        if ch.kind in (ChangeKind.CLEAR, ChangeKind.RESIGN):
            steps.append(ch.kind)
            break
        steps.append((ch.kind, ch.voter))
        cur = ch.voters_after(cur)
    assert steps == [(ChangeKind.ADD, "4"), (ChangeKind.REMOVE, "2"), (ChangeKind.ADD, "5"),
                     (ChangeKind.REMOVE, "3"), (ChangeKind.ADD, "6"), ChangeKind.RESIGN]
    assert cur == ("1", "4", "5", "6")
    # the next leader removes 1, then clears TargetVoters
    assert next_change(cur, target, "4", caught) == Change(ChangeKind.REMOVE, "1")
    assert next_change(("4", "5", "6"), target, "4", caught) == Change(ChangeKind.CLEAR)


def test_new_voter_waits_until_caught_up():
    assert next_change(VOTERS, ("n1", "n2", "n3", "n4"), "n1", set()).kind is ChangeKind.WAIT
    assert next_change(VOTERS, ("n1", "n2", "n3", "n4"), "n1", {"n4"}) == Change(ChangeKind.ADD, "n4")
    assert next_change(VOTERS, None, "n1", {"n4"}) is None


# ---------------------------------------------------------------- AlterPartitionReassignments

def test_non_leader_answers_not_leader():
    s = replace(N.initial_state("n2", "c"), role=Role.FOLLOWER, epoch=2, leader_id="n1")
    t = N.handle_message(s, "admin", AlterPartitionReassignmentsRequest(("n1", "n2", "n4")))
    r = t.sends[0].payload
    assert r.error is Errors.NOT_LEADER_OR_FOLLOWER and r.leader_id == "n1"
    assert t.state.log == s.log


def test_leader_appends_the_target_then_answers_once_committed():
    s = leader((lc(2),), 1)
    t = N.handle_message(s, "admin", AlterPartitionReassignmentsRequest(("n1", "n2", "n4")))
    assert not t.sends                                       # answered only once committed
    assert t.state.log[-1].control == VoterAssignment("c", VOTERS, ("n1", "n2", "n4"))
    again = N.handle_message(t.state, "admin", AlterPartitionReassignmentsRequest(("n1", "n2", "n4")))
    assert not again.sends and again.state.log == t.state.log
    done = replace(t.state, high_watermark=2)
    r = N.handle_message(done, "admin", AlterPartitionReassignmentsRequest(("n1", "n2", "n4")))
    assert r.sends[0].payload.error is Errors.NONE


def test_leader_adds_a_caught_up_observer_only_after_the_target_is_committed():
    log = (lc(2), va(2, VOTERS, ("n1", "n2", "n3", "n4")))
    s = leader(log, 1)
    assert N.reassign_step(s) is None                        # target not committed yet
    s = leader(log, 2)
    assert N.reassign_step(s) is None                        # n4 not caught up
    s = replace(s, follower_end_offset=s.follower_end_offset.set("n4", 2),
                caught_up_now=frozenset({"n4"}))               # fetched to the HWM just now
    t = N.handle_timer(s, REASSIGN)
    assert t.action == "AddVoter" and t.params == {"node": "n1", "nv": "n4"}
    assert t.state.voter_set == ("n1", "n2", "n3", "n4")    # acts on it at once
    assert N.handle_timer(t.state, REASSIGN) is None         # one change in flight


def test_change_waits_for_a_record_of_the_leaders_own_epoch():
    log = (lc(1), va(1, VOTERS, ("n1", "n2")))
    s = leader(log, 2, epoch=2)                              # nothing of epoch 2 committed
    assert N.reassign_step(s) is None
    s = leader(log + (lc(2),), 3, epoch=2)
    assert N.reassign_step(s).action == "RemoveVoter"


def test_leader_that_is_the_last_removing_voter_resigns_and_stays_a_voter():
    log = (lc(2), va(2, ("n1", "n2", "n3"), ("n2", "n3")))
    t = N.reassign_step(leader(log, 2))
    assert t.action == "ResignAsLastRemovingVoter"
    assert t.state.role is Role.RESIGNED and "n1" in t.state.voter_set
    assert {e.dst for e in t.sends} == {"n2", "n3"}


def test_complete_reassignment_clears_the_target():
    log = (lc(2), va(2, ("n1", "n2", "n3", "n4"), ("n1", "n2", "n3", "n4")))
    t = N.reassign_step(leader(log, 2))
    assert t.action == "CompleteReassignment"
    assert t.state.log[-1].control.target_voters == ()


# ---------------------------------------------------------------- followers

def test_follower_acts_on_append_and_reverts_on_truncation():
    """The draft's "main subtlety"."""
    s = replace(N.initial_state("n2", "c"), role=Role.FOLLOWER, epoch=2, leader_id="n1",
                log=(lc(1),), high_watermark=1, fetch_pending=True)
    rec = va(2, ("n1", "n2"))
    resp = FetchResponse(Errors.NONE, "n1", 2, 1, 1, 1, (rec,))
    t = N.handle_message(s, "n1", resp)
    assert t.state.voter_set == ("n1", "n2")                 # appended, not committed
    assert QUORUM_STATE not in {p.key for p in t.persist}    # only committed changes persist
    s2 = replace(t.state, epoch=3, leader_id="n3", fetch_pending=True)
    div = FetchResponse(Errors.NONE, "n3", 3, 1, 2, 2, (), (1, 1))
    t2 = N.handle_message(s2, "n3", div)
    assert t2.state.log == (lc(1),) and t2.state.voter_set == VOTERS


def test_quorum_state_persists_the_committed_voters_and_restart_scans_forward():
    s = replace(N.initial_state("n2", "c"), role=Role.FOLLOWER, epoch=2, leader_id="n1",
                log=(lc(1),), high_watermark=1, fetch_pending=True)
    recs = (va(2, ("n1", "n2")), va(2, ("n1", "n2", "n4")))
    t = N.handle_message(s, "n1", FetchResponse(Errors.NONE, "n1", 2, 2, 1, 1, recs))
    qs = [p.value for p in t.persist if p.key == QUORUM_STATE][-1]
    assert (qs.current_voters, qs.applied_offset) == (("n1", "n2"), 2)
    r = N.restart("n2", {QUORUM_STATE: qs, "log": t.state.log})
    assert r.state.voter_set == ("n1", "n2", "n4")           # the uncommitted one, by scanning
    assert (r.state.qs_voters, r.state.qs_offset) == (("n1", "n2"), 2)


def test_removed_voter_gets_not_follower_with_valid_data():
    log = (lc(2), va(2, ("n1", "n2")), Record(2, value="x"))
    s = leader(log, 3)
    t = N.handle_message(s, "n3", FetchRequest("c", "n3", 2, 2, 2))
    r = t.sends[0].payload
    assert r.error is Errors.NOT_FOLLOWER and r.records == (log[2],)
    f = replace(N.initial_state("n3", "c"), role=Role.FOLLOWER, epoch=2, leader_id="n1",
                log=log[:2], voter_set=("n1", "n2"), fetch_pending=True)
    t2 = N.handle_message(f, "n1", r)
    assert t2.state.log == log and "n3" not in t2.state.voter_set


def test_voter_rejects_a_non_voter_candidate_and_stands_itself():
    s = replace(N.initial_state("n2", "c"), role=Role.FOLLOWER, epoch=2, leader_id="n1",
                log=(lc(1),))
    t = N.handle_message(s, "n4", VoteRequest("c", 3, "n4", 1, 1))
    reply = [e for e in t.sends if e.dst == "n4"][0].payload
    assert reply.vote_granted is False and reply.leader_epoch == 3
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 3     # the request's epoch
    assert t.action == "HandleVoteRequest"


def test_buggy_voter_grants_a_non_voter():
    bad = ReassignNode(QuorumConfig(voters=VOTERS), "reassign-votes-for-non-voter")
    s = replace(bad.initial_state("n2", "c"), log=(lc(1),))
    t = bad.handle_message(s, "n4", VoteRequest("c", 3, "n4", 1, 1))
    assert t.sends[0].payload.vote_granted is True and t.state.voted_id == "n4"


def test_single_voter_bootstrap_leads_at_once_and_commits_in_its_own_step():
    """KIP-642 draft "Bootstrapping Example": quorum.voters=0 alone."""
    one = ReassignNode(QuorumConfig(voters=("n1",)))
    s = one.initial_state("n1", "c")
    t = one.handle_timer(s, "election")
    assert t.action == "Timeout" and t.state.role is Role.LEADER and t.state.high_watermark == 0
    assert has_timer(t, UPDATE_HWM)
    u = one.handle_timer(t.state, UPDATE_HWM)
    assert u.action == "UpdateHighWatermark" and u.state.high_watermark == 2   # bootstrap + LC


def test_first_leader_appends_the_bootstrap_assignment_before_its_leader_change():
    """KIP-642 draft "Bootstrapping Procedure": the first leader (empty log) appends a
    VoterAssignment with CurrentVoters = quorum.voters and TargetVoters null, first, then its
    LeaderChange; once committed, quorum-state holds it (AppliedOffset 1), and a later leader
    (non-empty log) appends only its LeaderChange."""
    one = ReassignNode(QuorumConfig(voters=("n1",)))
    t = one.handle_timer(one.initial_state("n1", "c"), "election")
    first, second = t.state.log
    assert isinstance(first.control, VoterAssignment) and first.epoch == 1
    assert first.control.current_voters == ("n1",) and not first.control.target_voters
    assert isinstance(second.control, LeaderChange) and t.state.epoch_start_offset == 0
    u = one.handle_timer(t.state, UPDATE_HWM)
    assert (u.state.qs_offset, u.state.qs_voters) == (1, ("n1",))
    later = replace(u.state, role=Role.FOLLOWER, epoch=1, leader_id=None)
    v = one.handle_timer(later, "election")
    assert v.state.role is Role.LEADER and v.state.epoch == 2
    assert v.state.log[:2] == u.state.log and len(v.state.log) == 3
    assert isinstance(v.state.log[2].control, LeaderChange)


def test_null_target_cancels_with_the_current_voters_and_answers_once_committed():
    """KIP-642 draft "Cancellation": Replicas = null in the middle of (n1, n2, n3) -> (n1, n2, n4),
    after n4 was added: the leader appends VoterAssignment(CurrentVoters = its current voters,
    TargetVoters = null) and answers NONE only once that is committed; with nothing pending a
    null request is answered at once."""
    log = (va(1, VOTERS), lc(1), va(1, VOTERS, ("n1", "n2", "n4")),
           va(1, ("n1", "n2", "n3", "n4"), ("n1", "n2", "n4")))
    s = leader(log, hwm=4, epoch=1)
    t = N.handle_message(s, "admin", AlterPartitionReassignmentsRequest(None))
    assert not t.sends and t.state.log[-1] == va(1, ("n1", "n2", "n3", "n4"))
    assert target_from_log(t.state.log) is None
    waiting = N.handle_message(t.state, "admin", AlterPartitionReassignmentsRequest(None))
    assert not waiting.sends and waiting.state.log == t.state.log
    done = N.handle_message(replace(t.state, high_watermark=5), "admin",
                            AlterPartitionReassignmentsRequest(None))
    (env,) = done.sends
    assert env.payload.error is Errors.NONE and env.payload.target_voters is None


# ---------------------------------------------------------------- liveness fixes (review 2026-11-24)

N2 = ReassignNode(QuorumConfig(voters=("n1", "n2")))


def two_voter_leader(log, hwm):
    s = replace(N2.initial_state("n1", "c"), role=Role.LEADER, epoch=1, leader_id="n1",
                voted_id="n1", log=log, high_watermark=hwm, epoch_start_offset=1)
    return replace(s, voter_set=voters_from_log(log, ("n1", "n2")))


def test_last_removing_leader_resigns_only_once_its_whole_log_is_committed():
    """Draft step 6.2 and its example ("Once the new leader takes over, it will complete the
    reassignment"): {n1, n2} -> {n2} with n1 leading.  Resigning while n2 lacks a record of
    n1's, n1 (still a voter, longer log) refuses n2's vote request, which n2 needs: n1 wins
    again and resigned again at once, for ever.  The leader now takes no client records
    while its step-down is due, and steps down once HWM = log end."""
    base = (va(1, ("n1", "n2")), Record(1, control=LeaderChange("c", "n1", ("n1", "n2"))),
            va(1, ("n1", "n2"), ("n2",)))
    behind = two_voter_leader(base + (Record(1, value="x"),), 3)
    assert N2.reassign_step(behind) is None and N2.handle_timer(behind, REASSIGN) is None
    ready = two_voter_leader(base, 3)
    assert N2.client_append(ready, "y") is None             # the step-down is due
    t = N2.handle_timer(ready, REASSIGN)
    assert t.action == "ResignAsLastRemovingVoter" and t.state.role is Role.RESIGNED
    # the HWM reaching the log end (n2's Fetch) arms the step-down
    fetched = replace(behind, follower_end_offset=behind.follower_end_offset.set("n2", 3))
    t = N2.handle_message(fetched, "n2", FetchRequest("c", "n2", 1, 4, 1))
    assert t.state.high_watermark == 4 and has_timer(t, REASSIGN)
    assert N2.handle_timer(t.state, REASSIGN).action == "ResignAsLastRemovingVoter"


def test_a_change_of_the_leaders_voter_set_restarts_its_progress_timer():
    """Draft "Bootstrapping Example": {n1} grows to {n1, n2}.  The progress timer armed at
    n1's election (alone) must not expire before n2 could fetch as a voter: n2 is an observer
    by its own log until it fetches the record, grants no vote, and n1 could never be
    elected again."""
    one = ReassignNode(QuorumConfig(voters=("n1",)))
    log = (va(1, ("n1",)), Record(1, control=LeaderChange("c", "n1", ("n1",))),
           va(1, ("n1",), ("n1", "n2")))
    s = replace(one.initial_state("n1", "c"), role=Role.LEADER, epoch=1, leader_id="n1",
                voted_id="n1", log=log, high_watermark=3, epoch_start_offset=1,
                voter_set=("n1",))
    s = replace(s, follower_end_offset=s.follower_end_offset.set("n2", 3),
                caught_up_now=frozenset({"n2"}))
    t = one.handle_timer(s, REASSIGN)
    assert t.action == "AddVoter" and t.state.voter_set == ("n1", "n2")
    assert SetTimer(CHECK_QUORUM, one.cfg.fetch_timeout_ms) in t.timers


def test_not_follower_downgrades_the_removed_voter_at_once():
    """Early revision "FetchQuorumRecords Response Handling" 3: NOT_FOLLOWER -> "do a
    self-downgrade", although the removal record has not reached the replica's log yet."""
    log = (lc(2), Record(2, value="a"), va(2, ("n1", "n2")))
    f = replace(N.initial_state("n3", "c"), role=Role.FOLLOWER, epoch=2, leader_id="n1",
                log=log[:1], voter_set=VOTERS, fetch_pending=True)
    t = N.handle_message(f, "n1", FetchResponse(Errors.NOT_FOLLOWER, "n1", 2, 1, 1, 2,
                                                (log[1],)))
    assert t.state.log == log[:2] and "n3" in t.state.voter_set     # not there yet
    assert CancelTimer(ELECTION) in t.timers and not has_timer(t, ELECTION)
    ok = N.handle_message(f, "n1", FetchResponse(Errors.NONE, "n1", 2, 1, 1, 2, (log[1],)))
    assert has_timer(ok, ELECTION)                          # a plain response keeps it


def test_empty_target_is_rejected_and_nothing_is_appended():
    """Kafka's KafkaRaftClientReconfigTest.testRemoveVoterToEmptyVoterSet; null (not empty)
    is the cancellation."""
    s = leader((lc(2),), 1)
    t = N.handle_message(s, "admin", AlterPartitionReassignmentsRequest(()))
    assert t.sends[0].payload.error is Errors.INVALID_REQUEST and t.state.log == s.log


def test_malformed_vote_request_from_a_non_voter_is_invalid_and_changes_nothing():
    """KafkaRaftClientTest.testInvalidVoteRequest, whoever the candidate."""
    s = replace(N.initial_state("n2", "c"), role=Role.FOLLOWER, epoch=1, leader_id="n1",
                log=(lc(1),))
    for bad in (VoteRequest("c", 3, "n4", 7, 1), VoteRequest("c", 3, "n4", 1, -5)):
        t = N.handle_message(s, "n4", bad)
        assert t.sends[0].payload.error is Errors.INVALID_REQUEST
        assert (t.state.role, t.state.epoch) == (Role.FOLLOWER, 1)


def test_a_voter_added_later_stands_for_a_non_voter_by_default():
    """Draft: "when a voter receives a VoteRequest from a non-voter, it must then become a
    candidate" -- for a voter added by a VoterAssignment too, not only the bootstrap ones."""
    log = (lc(1), va(1, ("n1", "n2", "n3", "n4")))
    s = replace(N.initial_state("n4", "c"), role=Role.FOLLOWER, epoch=1, leader_id="n1",
                log=log, voter_set=("n1", "n2", "n3", "n4"))
    t = N.handle_message(s, "n5", VoteRequest("c", 2, "n5", 1, 2))
    assert t.state.role is Role.CANDIDATE and t.state.epoch == 2


def test_describe_quorum_reports_the_pending_target_voters():
    """KIP-642 draft "DescribeQuorum" (TargetVoters, its new field): the pending target with
    the leader's view of each replica's log end offset; null once the target is cleared, and
    from a replica that does not lead."""
    from kraftcore.values import Fn
    log = (va(1, VOTERS), lc(1), va(2, VOTERS, ("n1", "n2", "n4")))
    s = leader(log, 2, last_fetch_offset=Fn({"n2": 3, "n4": 1}))
    d = N.describe_quorum(s)
    assert d.error is Errors.NONE
    assert [(r.replica_id, r.log_end_offset) for r in d.target_voters] == [
        ("n1", 3), ("n2", 3), ("n4", 1)]
    assert [r.replica_id for r in d.current_voters] == ["n1", "n2", "n3"]
    assert [r.replica_id for r in d.observers] == ["n4"]          # not a voter yet
    done = log + (va(2, ("n1", "n2", "n3", "n4"), ("n1", "n2", "n4")),
                  va(2, ("n1", "n2", "n4"), ("n1", "n2", "n4")), va(2, ("n1", "n2", "n4")))
    assert N.describe_quorum(leader(done, 6)).target_voters is None
    assert N.describe_quorum(replace(s, role=Role.FOLLOWER)).target_voters is None


def test_promotion_needs_a_recent_fetch_to_the_hwm():
    """Draft "Observer Promotion" (leader based): "promote the observer when one replication
    round is less than election timeout".  n4's Fetch at the HWM puts it in the current
    promotion window and starts the window timer (one election timeout); it stays promotable
    through the next window; after two windows without a Fetch (crashed, partitioned away) it
    is not promoted, although its end offset once reached the HWM."""
    from refimpl.kraft.reassign_node import PROMOTION
    log = (lc(2), va(2, VOTERS, ("n1", "n2", "n3", "n4")))
    s = leader(log, 2)
    t = N.handle_message(s, "n4", FetchRequest("c", "n4", 2, 2, 2))
    assert t.state.caught_up_now == {"n4"} and has_timer(t, PROMOTION) and has_timer(t, REASSIGN)
    assert N.reassign_step(t.state).action == "AddVoter"
    # a Fetch below the HWM does not count
    behind = N.handle_message(s, "n4", FetchRequest("c", "n4", 2, 1, 2))
    assert behind.state.caught_up_now == frozenset() and not has_timer(behind, PROMOTION)
    w1 = N.handle_timer(t.state, PROMOTION)
    assert w1.action == "PromotionWindow" and w1.state.caught_up_before == {"n4"}
    assert has_timer(w1, PROMOTION) and N.reassign_step(w1.state).action == "AddVoter"
    w2 = N.handle_timer(w1.state, PROMOTION)
    assert w2.state.caught_up_now == w2.state.caught_up_before == frozenset()
    assert not has_timer(w2, PROMOTION)                      # nothing left to time
    assert w2.state.follower_end_offset["n4"] >= w2.state.high_watermark
    assert N.reassign_step(w2.state) is None                  # not recent: not promoted
    assert N.handle_timer(w2.state, PROMOTION) is None
    # the window changes no spec variable: a stutter step of the trace
    from refimpl.kraft.reassign_mapping import ACTION_NAMES
    assert ACTION_NAMES["PromotionWindow"] == "PromotionWindow"


def test_an_observer_by_its_own_log_votes_only_with_the_cure():
    """The draft's availability finding (docs/spec-reassignment.md §4): n4, added by n1's
    uncommitted record that n4 has not fetched yet, is an observer by its own log and rejects
    n1's VoteRequest (KIP-595: observers do not vote), whatever n1's log.  With the cure
    (`any_replica_votes`, spec AnyReplicaVotes) it answers on the merits: granted to an up to
    date candidate of its voter set, persisted, and n4 stays an observer; refused to a
    candidate whose log is behind its own, or who is not in its voter set."""
    log = (va(1, VOTERS), lc(1))
    s = replace(N.initial_state("n4", "c"), epoch=1, leader_id="n1", role=Role.FOLLOWER, log=log)
    ask = VoteRequest("c", 2, "n1", 1, 3)
    assert not N.handle_message(s, "n1", ask).sends[0].payload.vote_granted
    cure = ReassignNode(QuorumConfig(voters=VOTERS), any_replica_votes=True)
    t = cure.handle_message(s, "n1", ask)
    assert t.sends[0].payload.vote_granted and t.state.voted_id == "n1"
    assert t.state.voter_set == VOTERS and any(p.key == QUORUM_STATE for p in t.persist)
    assert not has_timer(t, ELECTION)                         # still an observer: no election timer
    assert not cure.handle_message(s, "n1", VoteRequest("c", 2, "n1", 1, 1)).sends[0].payload.vote_granted
    assert not cure.handle_message(s, "n5", VoteRequest("c", 2, "n5", 1, 3)).sends[0].payload.vote_granted
