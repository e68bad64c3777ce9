"""A KIP-595 replica with KIP-642 dynamic quorum reassignment, as a pure state machine.

`ReassignNode` extends `KRaftNode` (every KIP-595 handler is reused) with:

* the per-replica voter set, derived from the replica's own log (refimpl/kraft/reassign.py
  `voters_from_log`, spec VotersOf): acted on as soon as a VoterAssignment record is appended,
  reverted when it is truncated (KIP-642 draft "Reassignment Algorithm" step 4 and the "main
  subtlety"); cached in `NodeState.voter_set` and recomputed after every transition;
* the quorum-state file persisting only the COMMITTED voters with the offset after their record
  (draft "Changes to Quorum State": AppliedOffset), a restart scanning forward from it (draft
  "Bootstrapping Procedure" step 1);
* the admin request (AlterPartitionReassignments / the early revision's AlterQuorum) as a
  message from the admin client: NOT_LEADER_OR_FOLLOWER elsewhere, a new target replacing a
  pending one (resubmitting the current voters cancels, and so does a null target: draft
  "Cancellation"), NONE once committed (draft "AlterPartitionReassignments Request Handling");
* the bootstrap record: the first leader (its log empty) appends VoterAssignment(CurrentVoters
  = quorum.voters, TargetVoters = null) before its LeaderChange record, in the step that makes
  it leader (draft "Bootstrapping Procedure"; spec ReassignEpochStartRecords);
* the leader's single-member changes (`reassign_step`, fired by the `reassign` timer whenever
  one may be enabled): each appended only once the previous one is committed and once the
  leader has committed a record of its own epoch; a NewVoter only once caught up as an observer
  (the end offset the leader tracks for it, as for every TargetVoter, reached the leader's
  HWM, draft "Observer Promotion"); a leader that is
  the last RemovingVoter resigns with EndQuorumEpoch and stays a voter (draft step 6.2),
  once its whole log is committed (it takes no client records meanwhile), so that a
  successor can win;
* the leader progress timeout restarted when the leader's voter set changes (a voter just
  added has not fetched as a voter yet);
* the leader's HWM recomputed in its own step (`update-hwm` timer, spec UpdateHighWatermark)
  when an append or a removal lets it grow without a Fetch (a single-voter quorum);
* NOT_FOLLOWER on Fetch from a replica whose removal is committed (draft step 5; early revision
  "FetchQuorumRecords" step 4 and "New Error Codes"), with the fetched data still valid; the
  replica downgrades at once (no election timer), before the removal record reaches it;
* an empty target (not null) rejected with INVALID_REQUEST;
* voters rejecting a VoteRequest from a non-voter and then becoming candidates (draft: "when a
  voter receives a VoteRequest from a non-voter, it must then become a candidate").

Planted bugs (refimpl/bugs.py, protocol "reassign") switch one rule off each.
"""

from __future__ import annotations

import dataclasses

from refimpl.bugs import bug_enabled
from refimpl.kraft import rules
from refimpl.kraft.log import Record, VoterAssignment
from refimpl.kraft.messages import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, Errors,
    FetchRequest, FetchResponse, VoteRequest, VoteResponse,
)
from refimpl.kraft.node import CHECK_QUORUM, ELECTION, RESEND, KRaftNode
from refimpl.kraft.quorum import is_majority
from refimpl.kraft.reassign import (
    ChangeKind, committed_voters, latest_assignment, next_change, sorted_ids, target_from_log,
    voters_from_log,
)
from refimpl.kraft.state import LOG, QUORUM_STATE, NodeState, QuorumStateFile, Role, replace
from refimpl.sim.protocol import CancelTimer, Persist, SetTimer, Transition

__all__ = ["ReassignNode", "REASSIGN", "UPDATE_HWM", "PROMOTION"]

REASSIGN = "reassign"       # the leader's next single-member change may be enabled
UPDATE_HWM = "update-hwm"   # the leader's HWM may grow without a Fetch
PROMOTION = "promotion-window"  # the leader's promotion window ends (one election timeout)


class ReassignNode(KRaftNode):
    """KIP-642 on top of KIP-595; `config.voters` are the bootstrap voters (quorum.voters)."""

    def __init__(self, config, bug: str | None = None, any_replica_votes: bool = False, **kw):
        """`any_replica_votes`: the cure of the draft's availability finding
        (docs/spec-reassignment.md §4, spec KRaftReassign.tla AnyReplicaVotes): a replica
        that is not a voter by its own log answers a VoteRequest from a candidate of its voter
        set on its merits instead of rejecting it.  Off by default: the draft as written,
        which the trace checker's configurations check."""
        super().__init__(config, bug, **kw)
        self.any_replica_votes = any_replica_votes
        self.inline_single_voter_hwm = False
        self.bug_before_epoch_commit = bug_enabled(bug, "reassign-before-epoch-commit")   # (a)
        self.bug_two_in_flight = bug_enabled(bug, "reassign-two-changes-in-flight")       # (b)
        self.bug_acts_on_commit = bug_enabled(bug, "reassign-follower-acts-on-commit")    # (c)
        self.bug_no_revert = bug_enabled(bug, "reassign-no-revert-on-truncation")         # (d)
        self.bug_persist_uncommitted = bug_enabled(bug, "reassign-persists-uncommitted")  # (e)
        self.bug_vote_non_voter = bug_enabled(bug, "reassign-votes-for-non-voter")        # (f)
        self.bug_target_majority = bug_enabled(bug, "reassign-majority-of-target")        # (g)

    def initial_state(self, node_id: str, cluster_id: str | None = None) -> NodeState:
        return replace(super().initial_state(node_id, cluster_id), voter_set=self.voters,
                       qs_voters=self.voters, qs_offset=0)

    # ------------------------------------------------------------------ DescribeQuorum

    def describe_quorum(self, s: NodeState):
        """KIP-642 draft "DescribeQuorum": KIP-595's response plus TargetVoters, "the
        progress of a quorum reassignment": each replica of the pending target with the log
        end offset the leader last saw (its own log's for itself, -1 before a first valid
        Fetch), in id order; null (None) when no reassignment is pending.  A target replica
        that is not yet a voter is listed among the observers too, as the draft's leader
        tracks it."""
        d = super().describe_quorum(s)
        target = target_from_log(s.log) if s.role is Role.LEADER else None
        if target is None:
            return d
        return dataclasses.replace(d, target_voters=tuple(
            self.replica_state(s, r) for r in sorted_ids(target)))

    # ------------------------------------------------------------------ the voter set

    def derive_voters(self, s: NodeState) -> tuple[str, ...]:
        """The voter set the spec gives the replica (VotersOf): from its whole log."""
        return voters_from_log(s.log, self.voters)

    def _voters(self, s: NodeState) -> tuple[str, ...]:
        v = s.voter_set
        return v if v is not None else self.derive_voters(s)

    def _persisted_voters(self, s: NodeState) -> tuple[str, ...]:
        return s.qs_voters if s.qs_voters is not None else self.voters

    def _qs(self, s: NodeState) -> Persist:
        return Persist(QUORUM_STATE, s.quorum_state(
            self._persisted_voters(s), persist_vote=not self.bug_vote_not_persisted,
            applied_offset=s.qs_offset))

    def _restore(self, s: NodeState, qs: QuorumStateFile | None) -> NodeState:
        """Draft "Bootstrapping Procedure" step 1: the quorum-state file's voters, then a
        forward scan of the log from its AppliedOffset."""
        if qs is None:
            return replace(s, voter_set=voters_from_log(s.log, self.voters),
                           qs_voters=self.voters, qs_offset=0)
        base = tuple(qs.current_voters) or self.voters
        return replace(s, voter_set=voters_from_log(s.log, base, qs.applied_offset),
                       qs_voters=base, qs_offset=qs.applied_offset)

    def _updated_voters(self, prev: NodeState, new: NodeState) -> tuple[str, ...]:
        if self.bug_acts_on_commit and new.role is not Role.LEADER:
            # (c) a follower acts on a change only once it is committed
            base = new.qs_voters if new.qs_voters is not None else self.voters
            return committed_voters(new.log, new.high_watermark, base)[0]
        if self.bug_no_revert and prev.voter_set is not None:
            # (d) the cache is only updated from the records appended, never reverted
            n = len(prev.log)
            keep = 0
            while keep < min(n, len(new.log)) and new.log[keep] is prev.log[keep]:
                keep += 1
            return voters_from_log(new.log, prev.voter_set, keep)
        return self.derive_voters(new)

    def _persist_due(self, s: NodeState) -> tuple[tuple[str, ...], int] | None:
        """(voters, offset) the quorum-state must now hold, when newer than what it holds: the
        latest VoterAssignment the HWM passed (bug (e): the latest appended)."""
        end = len(s.log) if self.bug_persist_uncommitted else s.high_watermark
        a = latest_assignment(s.log, s.qs_offset, end)
        if a is None:
            return None
        return a[1].current_voters, a[0] + 1

    # ------------------------------------------------------------------ every transition

    def _finish(self, prev: NodeState, t: Transition | None) -> Transition | None:
        """Recompute the voter set after the transition, adjust the timers of a replica that
        became (or stopped being) a voter, persist a newly committed voter set, and arm the
        leader's `reassign` / `update-hwm` timers when those steps may be enabled."""
        if t is None or t.state is None:
            return t
        new: NodeState = t.state
        if new.role is Role.SHUTDOWN:
            return t
        changed_log = new.log is not prev.log or new.high_watermark != prev.high_watermark
        if changed_log or new.voter_set is None:
            vs = self._updated_voters(prev, new)
            if vs != new.voter_set:
                new = replace(new, voter_set=vs)
        old_voters = self._voters(prev)
        new_voters = new.voter_set
        timers = t.timers
        persist = t.persist
        if (new.node_id in old_voters) != (new.node_id in new_voters) and \
                new.role in (Role.FOLLOWER, Role.UNATTACHED, Role.VOTED, Role.RESIGNED):
            # promoted to voter (election timer) or removed (observer: no election timer)
            timers = timers + self._role_timers(new)
        if new.role is Role.LEADER and new_voters != old_voters:
            # BeginQuorumEpoch to new voters; and the leader progress timeout starts again
            # for the new set (as at election): a voter just added has had no chance to
            # fetch as a voter yet.  Without this, a single voter that had armed the timer
            # at its election and adds a second voter could time out before the new voter's
            # next Fetch, and then no replica could win (the new voter, an observer by its
            # own log until it fetches the record, grants no vote): the growth from one
            # voter deadlocked (KIP-642 draft "Bootstrapping Example"; Kafka's LeaderState
            # measures check-quorum against the current voter set).
            timers = timers + (SetTimer(RESEND, 0),
                               SetTimer(CHECK_QUORUM, self.cfg.fetch_timeout_ms))
        if changed_log:
            due = self._persist_due(new)
            if due is not None:
                new = replace(new, qs_voters=due[0], qs_offset=due[1])
                persist = tuple(p for p in persist if p.key != QUORUM_STATE) + (self._qs(new),)
        if new.role is Role.LEADER:
            if self._reassign_change(new) is not None:
                timers = timers + (SetTimer(REASSIGN, 0),)
            if self._leader_hwm(new) > new.high_watermark:
                timers = timers + (SetTimer(UPDATE_HWM, 0),)
        if new is t.state and timers is t.timers and persist is t.persist:
            return t
        return dataclasses.replace(t, state=new, timers=timers, persist=persist)

    # ------------------------------------------------------------------ entry points

    def restart(self, node_id: str, disk, action: str = "Restart") -> Transition:
        t = super().restart(node_id, disk, action)
        s = t.state
        if s.role is Role.CANDIDATE and s.node_id not in self._voters(s):
            s = replace(s, role=Role.VOTED, votes_granted=frozenset())
            t = dataclasses.replace(t, state=s, timers=self._role_timers(s))
        return t

    def handle_message(self, s: NodeState, src: str, msg) -> Transition | None:
        return self._finish(s, super().handle_message(s, src, msg))

    def handle_timer(self, s: NodeState, timer: str) -> Transition | None:
        if s.role is Role.SHUTDOWN:
            return None
        if timer == REASSIGN:
            return self._finish(s, self.reassign_step(s))
        if timer == UPDATE_HWM:
            return self._finish(s, self.update_high_watermark(s))
        if timer == PROMOTION:
            return self._finish(s, self.promotion_window(s))
        return self._finish(s, super().handle_timer(s, timer))

    def client_append(self, s: NodeState, value: str) -> Transition | None:
        """A leader that is about to step down as the last RemovingVoter takes no more
        client records (they would go to its successor), so that its whole log can commit
        and a successor holding all of it can win (see `_reassign_change`)."""
        if self._resign_due(s):
            return None
        return self._finish(s, super().client_append(s, value))

    def resign(self, s: NodeState) -> Transition | None:
        return self._finish(s, super().resign(s))

    def start_election(self, s: NodeState, action: str = "Timeout",
                       epoch: int | None = None) -> Transition | None:
        """KIP-595 "Vote"; a replica whose own vote is a majority of its voter set (a quorum
        of one, e.g. the bootstrap example's single node) takes office in the same step."""
        t = super().start_election(s, action, epoch)
        if t is None or not is_majority(t.state.votes_granted, self._voters(t.state)):
            return t
        won = self.become_leader(t.state, action)
        return dataclasses.replace(won, persist=t.persist + won.persist, split_sends=None,
                                   sends=())

    def become_leader(self, s: NodeState, action: str = "BecomeLeader") -> Transition | None:
        """KIP-595's BecomeLeader; a leader whose log is empty (the first of the cluster)
        appends, first, the bootstrap VoterAssignment: KIP-642 draft "Bootstrapping Procedure":
        "the first thing it will do is append a VoterAssignmentMessage ... which will contain
        quorum.voters as the initial CurrentVoters" (TargetVoters null), then its LeaderChange
        ("The leader will also append a LeaderChangeMessage").  The VoterAssignment goes first
        so that every committed prefix holds it (a Fetch may carry the first record alone).
        The epoch still starts at offset 0 (epoch_start_offset: the first record of the
        epoch), as KRaftNode computes it."""
        t = super().become_leader(s, action)
        if t is None or s.log:
            return t
        new = t.state
        lc = new.log[-1]
        boot = Record(s.epoch, control=VoterAssignment(lc.control.cluster_id, sorted_ids(self.voters), ()))
        log = (boot, lc)
        persist = tuple(Persist(LOG, log) if p.key == LOG else p for p in t.persist)
        return dataclasses.replace(t, state=replace(new, log=log), persist=persist)

    def update_high_watermark(self, s: NodeState) -> Transition | None:
        """The leader recomputes its HWM from the end offsets it tracks and its own log end
        (spec UpdateHighWatermark; Kafka does it on its own appends): a quorum of one, or a
        smaller majority after a removal.  Enabled only when the HWM grows."""
        if s.role is not Role.LEADER:
            return None
        hwm = self._leader_hwm(s)
        if hwm <= s.high_watermark:
            return None
        new, persist = self._cache_cluster_id(replace(s, high_watermark=hwm))
        return Transition(new, "UpdateHighWatermark", {"node": s.node_id}, persist=persist)

    # ------------------------------------------------------------------ AlterPartitionReassignments

    @staticmethod
    def _cluster(s: NodeState) -> str:
        if s.cluster_id is not None:
            return s.cluster_id
        for r in reversed(s.log):
            if r.control is not None:
                return r.control.cluster_id
        return f"cluster-{s.node_id}-{s.epoch}"

    def _append(self, s: NodeState, rec: VoterAssignment, action: str, params: dict) -> Transition:
        log = s.log + (Record(s.epoch, control=rec),)
        return Transition(replace(s, log=log), action, params, persist=(Persist(LOG, log),))

    def _on_alter_reassignments(self, s: NodeState, src: str,
                                m: AlterPartitionReassignmentsRequest) -> Transition:
        """KIP-642 draft "AlterPartitionReassignments Request Handling" steps 1-4 (early
        revision: AlterQuorum): not the leader -> NOT_LEADER_OR_FOLLOWER (the draft's
        NOT_LEADER_FOR_PARTITION) with the leader it knows; the effective target (the pending
        TargetVoters, else the current voters) requested again -> NONE once the latest
        assignment is committed, else no answer yet (the admin retries); a different target ->
        append VoterAssignment(CurrentVoters = its voters, TargetVoters = target), replacing a
        pending one, and answer once it is committed (the admin retries)."""
        def reply(err: Errors) -> Transition:
            r = AlterPartitionReassignmentsResponse(err, m.target_voters, s.leader_id)
            return self._same(s, "HandleAlterPartitionReassignmentsRequest",
                              [self._send(s, src, r)])

        if s.role is not Role.LEADER:
            return reply(Errors.NOT_LEADER_OR_FOLLOWER)
        if m.target_voters is not None and not m.target_voters:
            # an empty voter set is no target (null is the cancellation): rejected, nothing
            # appended (Kafka's KafkaRaftClientReconfigTest.testRemoveVoterToEmptyVoterSet;
            # the spec's TargetSets holds no empty set)
            return reply(Errors.INVALID_REQUEST)
        pending = target_from_log(s.log)
        cur = self._voters(s)
        if m.target_voters is None:
            # draft "Cancellation": Replicas = null "cancel[s] an ongoing reassignment and
            # leave[s] the quorum with the current voters": TargetVoters := the current voters,
            # written as step 6.1's record with TargetVoters = null (spec RequestInForce)
            in_force, target = pending is None, ()
        else:
            target = sorted_ids(m.target_voters)
            in_force = target == tuple(pending if pending else cur)
        if in_force:
            a = latest_assignment(s.log)
            if a is None or a[0] < s.high_watermark:
                return reply(Errors.NONE)
            return self._same(s, "HandleAlterPartitionReassignmentsRequest")
        rec = VoterAssignment(self._cluster(s), cur, target)
        return self._append(s, rec, "HandleAlterPartitionReassignmentsRequest",
                            {"node": s.node_id})

    def _on_alter_reassignments_response(self, s: NodeState, src: str, m) -> Transition:
        return self._same(s, "HandleAlterPartitionReassignmentsResponse")

    # ------------------------------------------------------------------ the leader's steps

    def _rule_a(self, s: NodeState) -> bool:
        """The leader has committed a record of its own epoch (Raft's single-server change
        rule; bug (a) skips it)."""
        return self.bug_before_epoch_commit or (
            s.high_watermark > 0 and s.log[s.high_watermark - 1].epoch == s.epoch)

    def _rule_b(self, s: NodeState) -> bool:
        """The leader's latest VoterAssignment is committed (bug (b) skips it)."""
        if self.bug_two_in_flight:
            return True
        a = latest_assignment(s.log)
        return a is None or a[0] < s.high_watermark

    def caught_up(self, s: NodeState) -> frozenset:
        """Replicas the leader may promote (draft "Observer Promotion", the leader-based
        approach: "promote the observer when one replication round is less than election
        timeout, which suggests the gap is sufficiently small"): the tracked end offset has
        reached the leader's HWM (the spec's AddVoter guard), and a valid Fetch of the replica
        reached the HWM within the current or the previous promotion window of one election
        timeout each.  A replica that caught up once and then stopped fetching (crashed,
        partitioned away) is not promoted: adding it would make a voter of a replica that
        cannot vote, and a quorum that needs its vote would stall."""
        feo = s.follower_end_offset
        recent = s.caught_up_now | s.caught_up_before
        return frozenset(r for r in feo if feo[r] >= s.high_watermark and r in recent)

    def promotion_window(self, s: NodeState) -> Transition | None:
        """The `promotion-window` timer: the current window becomes the previous one.  The
        timer runs while some replica is in either window (armed by the Fetch that puts one
        in an empty pair).  Changes no spec variable: a stutter step of the trace."""
        if s.role is not Role.LEADER or not (s.caught_up_now or s.caught_up_before):
            return None
        new = replace(s, caught_up_now=frozenset(), caught_up_before=s.caught_up_now)
        timers = (SetTimer(PROMOTION, self.cfg.election_timeout_ms),) if new.caught_up_before else ()
        return Transition(new, "PromotionWindow", {"node": s.node_id}, timers=timers)

    def _next_change(self, s: NodeState):
        if s.role is not Role.LEADER or not self._rule_b(s):
            return None
        ch = next_change(self._voters(s), target_from_log(s.log), s.node_id, self.caught_up(s))
        if ch is None or ch.kind is ChangeKind.WAIT:
            return None
        return ch

    def _resign_due(self, s: NodeState) -> bool:
        """The leader is the last RemovingVoter and its latest assignment is committed: it
        will step down (draft step 6.2) once its whole log is committed."""
        ch = self._next_change(s)
        return ch is not None and ch.kind is ChangeKind.RESIGN

    def _reassign_change(self, s: NodeState):
        ch = self._next_change(s)
        if ch is None:
            return None
        if ch.kind in (ChangeKind.ADD, ChangeKind.REMOVE) and not self._rule_a(s):
            return None
        if ch.kind is ChangeKind.RESIGN and not (self._rule_a(s)
                                                 and s.high_watermark == len(s.log)):
            # draft step 6.2 and its example ("Once the new leader takes over, it will
            # complete the reassignment"): the leader steps down only when a successor can
            # win, i.e. once its whole log (its own epoch's records included) is committed,
            # so that a majority holds all of it.  Resigning earlier, its own vote (still a
            # voter, with the longer log) refuses every successor, and when that vote is
            # needed it wins again and resigns again at once: the quorum livelocked (a
            # target of one voter, or a target voter that lags).
            return None
        return ch

    def reassign_step(self, s: NodeState) -> Transition | None:
        """KIP-642 draft "Reassignment Algorithm" steps 2-6: one single-member change, the
        clearing of TargetVoters, or the leader's resignation as the last RemovingVoter."""
        ch = self._reassign_change(s)
        if ch is None:
            return None
        cur = self._voters(s)
        if ch.kind is ChangeKind.RESIGN:
            t = KRaftNode.resign(self, s)
            if t is None:
                return None
            return dataclasses.replace(t, action="ResignAsLastRemovingVoter",
                                       timers=self._role_timers(t.state))
        target = target_from_log(s.log)
        if ch.kind is ChangeKind.CLEAR:
            rec = VoterAssignment(self._cluster(s), cur, ())
            return self._append(s, rec, "CompleteReassignment", {"node": s.node_id})
        rec = VoterAssignment(self._cluster(s), ch.voters_after(cur), target)
        if ch.kind is ChangeKind.ADD:
            return self._append(s, rec, "AddVoter", {"node": s.node_id, "nv": ch.voter})
        return self._append(s, rec, "RemoveVoter", {"node": s.node_id, "rv": ch.voter})

    def _majority_voters(self, s: NodeState) -> tuple[str, ...]:
        """The set whose majority the leader counts (spec MajorityVotersOf): its voters; bug
        (g): the TargetVoters when a reassignment is pending."""
        if self.bug_target_majority:
            target = target_from_log(s.log)
            if target:
                return target
        return self._voters(s)

    def _leader_hwm(self, s: NodeState) -> int:
        voters = self._majority_voters(s)
        feo = s.follower_end_offset
        offs = [len(s.log) if v == s.node_id else max(0, feo.get(v, -1)) for v in voters]
        return rules.leader_high_watermark(offs, len(voters), s.epoch_start_offset,
                                           s.high_watermark,
                                           check_current_epoch=not self.bug_hwm_epoch)

    # ------------------------------------------------------------------ Fetch and Vote

    def _on_fetch_request(self, s: NodeState, src: str, m: FetchRequest) -> Transition:
        """KIP-595 "FetchRequest Handling"; the leader also tracks the end offset of a fetching
        TargetVoter (draft: "the leader will begin tracking the fetch state of the target
        voters"), and answers NOT_FOLLOWER, with the data still valid, to a former voter whose
        removal is committed (draft step 5; early revision "FetchQuorumRecords" step 4)."""
        t = KRaftNode._on_fetch_request(self, s, src, m)
        if s.role is not Role.LEADER or m.current_leader_epoch != s.epoch or not t.sends:
            return t
        env = t.sends[0]
        r: FetchResponse = env.payload
        if r.error is not Errors.NONE:
            return t
        new = t.state
        voters = self._voters(new)
        if src in voters:
            return t
        if src in (target_from_log(new.log) or ()):
            feo = new.follower_end_offset
            valid = r.diverging_epoch is None
            off = rules.follower_end_offset(feo.get(src, -1), m.fetch_offset, valid)
            if off != feo.get(src, -1):
                new = replace(new, follower_end_offset=feo.set(src, off))
            if valid and m.fetch_offset >= new.high_watermark and src not in new.caught_up_now:
                # caught up in this promotion window; the first replica in an empty pair of
                # windows starts the window timer
                idle = not (new.caught_up_now or new.caught_up_before)
                new = replace(new, caught_up_now=new.caught_up_now | {src})
                if idle:
                    t = dataclasses.replace(t, timers=t.timers + (
                        SetTimer(PROMOTION, self.cfg.election_timeout_ms),))
            if new is not t.state:
                t = dataclasses.replace(t, state=new)
        was_voter = src in self.voters or any(
            isinstance(x.control, VoterAssignment) and src in x.control.current_voters
            for x in new.log)
        removed = src not in committed_voters(new.log, new.high_watermark, self.voters)[0]
        if was_voter and removed:
            r = dataclasses.replace(r, error=Errors.NOT_FOLLOWER)
            t = dataclasses.replace(t, sends=(dataclasses.replace(env, payload=r),))
        return t

    def _on_fetch_response(self, s: NodeState, src: str, m: FetchResponse) -> Transition:
        """NOT_FOLLOWER is non-fatal and its records are valid: handled as NONE, and the
        replica downgrades at once (early revision "FetchQuorumRecords Response Handling" 3:
        "it will receive a non-fatal NOT_FOLLOWER error code, and do a self-downgrade"; draft
        step 5): its election timer stops, although its own log may not hold the removal
        record yet (a response carries at most fetch_max_records).  Otherwise a removed voter
        that loses its leader before the record reaches it would stand, and the voters that
        know of its removal would then stand in its epoch and depose a healthy leader.  Its
        log decides the rest: it is an observer once the record arrives."""
        if m.error is not Errors.NOT_FOLLOWER:
            return KRaftNode._on_fetch_response(self, s, src, m)
        t = KRaftNode._on_fetch_response(self, s, src, dataclasses.replace(m, error=Errors.NONE))
        if t is None or t.state is None or t.state.role is not Role.FOLLOWER:
            return t
        timers = tuple(x for x in t.timers if x.name != ELECTION) + (CancelTimer(ELECTION),)
        return dataclasses.replace(t, timers=timers)

    def _on_vote_request(self, s: NodeState, src: str, m: VoteRequest) -> Transition:
        """KIP-642 draft: "Voters must reject votes from non-voters, but that does not mean
        that the non-voter cannot ultimately win the election.  Hence when a voter receives a
        VoteRequest from a non-voter, it must then become a candidate": a voter whose timers may
        fire rejects and stands in the election of the request's epoch, when that epoch is
        new to it or it has neither voted nor a leader in it (spec KRaft.tla HandleVoteRequest,
        BeginElection); its Vote requests follow as SendVoteRequest steps.  Otherwise the
        vote is rejected as KIP-595 does.  Bug (f) grants the vote as if the candidate were a
        voter."""
        voters = self._voters(s)
        if self.any_replica_votes and s.node_id not in voters and m.candidate_id in voters:
            # the cure: answered as a voter would (vote state, log comparison), without
            # becoming one (spec GrantsVotes <- AnyReplicaVotes)
            return self._vote_as_if(s, src, m, s.node_id)
        if (m.candidate_id in voters or s.node_id not in voters
                or self._cluster_check_fails(s, m.cluster_id) or m.candidate_epoch < s.epoch
                or not rules.vote_request_is_valid(m.candidate_epoch, m.last_offset_epoch,
                                                   m.last_offset)):
            # (a malformed request is answered INVALID_REQUEST there, whoever sends it:
            # Kafka's KafkaRaftClientTest.testInvalidVoteRequest)
            return KRaftNode._on_vote_request(self, s, src, m)
        if self.bug_vote_non_voter:
            return self._vote_as_if(s, src, m, m.candidate_id)
        fresh = m.candidate_epoch > s.epoch or (s.voted_id is None and s.leader_id is None)
        if not self.may_time_out(s.node_id) or not fresh:
            return KRaftNode._on_vote_request(self, s, src, m)
        reply = self._send(s, src, VoteResponse(Errors.NONE, None, m.candidate_epoch, False))
        t = self.start_election(s, "HandleVoteRequest", m.candidate_epoch)
        if t.split_sends is None:
            return dataclasses.replace(t, sends=(reply,) + t.sends)
        timers = tuple(x for x in t.timers if x.name != RESEND) + (SetTimer(RESEND, 0),)
        return dataclasses.replace(t, sends=(reply,), split_sends=None, timers=timers)

    def _vote_as_if(self, s: NodeState, src: str, m: VoteRequest, member: str) -> Transition:
        """KIP-595's answer to `m` as if `member` were in s's voter set; the replica keeps its
        own voter set and the role timers of what it is (an observer has no election
        timer)."""
        voters = self._voters(s)
        widened = replace(s, voter_set=tuple(sorted(set(voters) | {member})))
        t = KRaftNode._on_vote_request(self, widened, src, m)
        new = replace(t.state, voter_set=voters)
        return dataclasses.replace(t, state=new,
                                   timers=self._role_timers(new, s) if t.timers else ())

    _handlers = {
        **KRaftNode._handlers,
        VoteRequest: _on_vote_request,
        FetchRequest: _on_fetch_request,
        FetchResponse: _on_fetch_response,
        AlterPartitionReassignmentsRequest: _on_alter_reassignments,
        AlterPartitionReassignmentsResponse: _on_alter_reassignments_response,
    }
