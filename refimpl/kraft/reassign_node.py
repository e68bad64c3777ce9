"""A KIP-595 replica with KIP-642 dynamic quorum reassignment, as a pure state machine.

`ReassignNode` extends `KRaftNode` (every KIP-595 handler is reused) with:

* the per-replica voter set, derived from the replica's own log (refimpl/kraft/reassign.py
  `voters_from_log`, spec VotersOf): acted on as soon as a VoterAssignment record is appended,
  reverted when it is truncated (KIP-642 draft "Reassignment Algorithm" step 4 and the "main
  subtlety"); cached in `NodeState.voter_set` and recomputed after every transition;
* the quorum-state file persisting only the COMMITTED voters with the offset after their record
  (draft "Changes to Quorum State": AppliedOffset), a restart scanning forward from it (draft
  "Bootstrapping Procedure" step 1);
* the admin request as an input: `alter_quorum` (AlterPartitionReassignments / the early
  revision's AlterQuorum): NOT_LEADER elsewhere, a new request replacing a pending one, a null
  target cancelling (draft "AlterPartitionReassignments Request Handling");
* the leader's single-member changes (`reassign_step`, fired by the `reassign` timer whenever
  one may be enabled): each appended only once the previous one is committed and once the
  leader has committed a record of its own epoch; a NewVoter only once caught up as an observer
  (its last FetchOffset reached the leader's HWM, draft "Observer Promotion"); a leader that is
  the last RemovingVoter resigns with EndQuorumEpoch and stays a voter (draft step 6.2);
* NOT_FOLLOWER on Fetch from a replica whose removal is committed (draft step 5; early revision
  "FetchQuorumRecords" step 4 and "New Error Codes"), with the fetched data still valid;
* voters rejecting a VoteRequest from a non-voter and then becoming candidates (draft: "when a
  voter receives a VoteRequest from a non-voter, it must then become a candidate").

Planted bugs (refimpl/bugs.py, protocol "reassign") switch one rule off each.
"""

from __future__ import annotations

import dataclasses

from refimpl.bugs import bug_enabled
from refimpl.kraft.log import Record, VoterAssignment
from refimpl.kraft.messages import Errors, FetchRequest, FetchResponse, VoteRequest, VoteResponse
from refimpl.kraft.node import BECOME_LEADER, RESEND, KRaftNode
from refimpl.kraft.quorum import is_majority
from refimpl.kraft.reassign import (
    ChangeKind, committed_voters, latest_assignment, next_change, sorted_ids, target_from_log,
    voters_from_log,
)
from refimpl.kraft.state import LOG, QUORUM_STATE, NodeState, QuorumStateFile, Role, replace
from refimpl.sim.protocol import Persist, SetTimer, Transition

__all__ = ["ReassignNode", "REASSIGN"]

REASSIGN = "reassign"   # the leader's next single-member change may be enabled


class ReassignNode(KRaftNode):
    """KIP-642 on top of KIP-595; `config.voters` are the bootstrap voters (quorum.voters)."""

    def __init__(self, config, bug: str | None = None, **kw):
        super().__init__(config, bug, **kw)
        self.bug_before_epoch_commit = bug_enabled(bug, "reassign-before-epoch-commit")   # (a)
        self.bug_two_in_flight = bug_enabled(bug, "reassign-two-changes-in-flight")       # (b)
        self.bug_acts_on_commit = bug_enabled(bug, "reassign-follower-acts-on-commit")    # (c)
        self.bug_no_revert = bug_enabled(bug, "reassign-no-revert-on-truncation")         # (d)
        self.bug_persist_uncommitted = bug_enabled(bug, "reassign-persists-uncommitted")  # (e)
        self.bug_vote_non_voter = bug_enabled(bug, "reassign-votes-for-non-voter")        # (f)
        self.bug_target_majority = bug_enabled(bug, "reassign-majority-of-target")        # (g)

    # ------------------------------------------------------------------ the voter set

    def derive_voters(self, s: NodeState) -> tuple[str, ...]:
        """The voter set the spec gives the replica (VotersOf): from its whole log."""
        return voters_from_log(s.log, self.voters)

    def _voters(self, s: NodeState) -> tuple[str, ...]:
        v = s.voter_set
        return v if v is not None else self.derive_voters(s)

    def _persisted_voters(self, s: NodeState) -> tuple[str, ...]:
        return self._persisted(s)[0]

    def _persisted(self, s: NodeState) -> tuple[tuple[str, ...], int]:
        """(CurrentVoters, AppliedOffset) the quorum-state file gets: the committed voters
        (bug (e): the latest appended ones)."""
        if self.bug_persist_uncommitted:
            a = latest_assignment(s.log)
            return (self.voters, 0) if a is None else (a[1].current_voters, a[0] + 1)
        return committed_voters(s.log, s.high_watermark, self.voters)

    def _qs(self, s: NodeState) -> Persist:
        voters, applied = self._persisted(s)
        return Persist(QUORUM_STATE, s.quorum_state(
            voters, persist_vote=not self.bug_vote_not_persisted, applied_offset=applied))

    def _restore(self, s: NodeState, qs: QuorumStateFile | None) -> NodeState:
        """Draft "Bootstrapping Procedure" step 1: the quorum-state file's voters, then a
        forward scan of the log from its AppliedOffset."""
        if qs is None:
            return replace(s, voter_set=voters_from_log(s.log, self.voters))
        base = tuple(qs.current_voters) or self.voters
        return replace(s, voter_set=voters_from_log(s.log, base, qs.applied_offset))

    def _updated_voters(self, prev: NodeState, new: NodeState) -> tuple[str, ...]:
        if self.bug_acts_on_commit and new.role is not Role.LEADER:
            # (c) a follower acts on a change only once it is committed
            return committed_voters(new.log, new.high_watermark, self.voters)[0]
        if self.bug_no_revert and prev.voter_set is not None:
            # (d) the cache is only updated from the records appended, never reverted
            n = len(prev.log)
            if new.log[:n] == prev.log:
                return voters_from_log(new.log, prev.voter_set, n)
            keep = 0
            while keep < min(n, len(new.log)) and new.log[keep] == prev.log[keep]:
                keep += 1
            return voters_from_log(new.log, prev.voter_set, keep)
        return self.derive_voters(new)

    # ------------------------------------------------------------------ every transition

    def _finish(self, prev: NodeState, t: Transition | None) -> Transition | None:
        """Recompute the voter set after the transition, adjust the timers of a replica that
        became (or stopped being) a voter, persist a newly committed voter set, recompute the
        HWM of a single-voter leader, and arm the leader's `reassign` timer."""
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
            if len(new_voters) == 1:
                hwm = self._leader_hwm(new)
                if hwm > new.high_watermark:
                    new = replace(new, high_watermark=hwm)
                    new, cid = self._cache_cluster_id(new)
                    persist = persist + cid
            timers = timers + (SetTimer(RESEND, 0),)   # BeginQuorumEpoch to new voters
        if new.role is Role.CANDIDATE and is_majority(new.votes_granted, new_voters) and \
                not is_majority(new.votes_granted, old_voters):
            timers = timers + (SetTimer(BECOME_LEADER, 0),)
        if changed_log and not any(p.key == QUORUM_STATE for p in persist):
            before, after = self._persisted(prev), self._persisted(new)
            if before != after:
                persist = persist + (self._qs(new),)
        if new.role is Role.LEADER and self._reassign_change(new) is not None:
            timers = timers + (SetTimer(REASSIGN, 0),)
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
        if timer == REASSIGN:
            if s.role is Role.SHUTDOWN:
                return None
            return self._finish(s, self.reassign_step(s))
        return self._finish(s, super().handle_timer(s, timer))

    def client_append(self, s: NodeState, value: str) -> Transition | None:
        return self._finish(s, super().client_append(s, value))

    def resign(self, s: NodeState) -> Transition | None:
        return self._finish(s, super().resign(s))

    # ------------------------------------------------------------------ AlterQuorum

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
        new = replace(s, log=log)
        return Transition(new, action, params, persist=(Persist(LOG, log),))

    def alter_quorum(self, s: NodeState, target: tuple[str, ...] | None) -> Transition | None:
        """KIP-642 draft "AlterPartitionReassignments Request Handling" (early revision:
        AlterQuorum): only the leader accepts (else NOT_LEADER_FOR_PARTITION: no step); a
        target equal to the latest assignment's needs no record (the request waits for its
        commit); otherwise a VoterAssignment with the current voters as CurrentVoters and the
        request's replicas as TargetVoters is appended ("Reassignment Algorithm" step 1),
        replacing a pending target; a null target cancels.  An empty target is rejected."""
        if s.role is not Role.LEADER:
            return None
        if target is not None:
            target = sorted_ids(target)
            if not target:
                return None
        if target == target_from_log(s.log):
            return None
        cur = self._voters(s)
        if target is not None and target == cur and target_from_log(s.log) is None:
            return None
        rec = VoterAssignment(self._cluster(s), cur, target)
        params = {"node": s.node_id, "target": frozenset(target) if target is not None else None}
        return self._finish(s, self._append(s, rec, "AlterQuorum", params))

    # ------------------------------------------------------------------ the leader's steps

    def _may_change(self, s: NodeState) -> bool:
        """A membership change may be appended: the previous assignment is committed (bug (b)
        skips this) and the leader has committed a record of its own epoch (bug (a) skips
        this: Raft's single-server change bug)."""
        if not self.bug_before_epoch_commit and s.high_watermark <= s.epoch_start_offset:
            return False
        if not self.bug_two_in_flight:
            a = latest_assignment(s.log)
            if a is not None and a[0] >= s.high_watermark:
                return False
        return True

    def caught_up(self, s: NodeState) -> frozenset:
        """Observers whose last FetchOffset reached the leader's HWM (draft "Observer
        Promotion")."""
        voters = self._voters(s)
        return frozenset(r for r, off in s.last_fetch_offset.items()
                         if r not in voters and off >= s.high_watermark)

    def _reassign_change(self, s: NodeState):
        if s.role is not Role.LEADER or not self._may_change(s):
            return None
        ch = next_change(self._voters(s), target_from_log(s.log), s.node_id, self.caught_up(s))
        if ch is None or ch.kind is ChangeKind.WAIT:
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
            return None if t is None else dataclasses.replace(t, action="ResignForRemoval")
        target = target_from_log(s.log)
        if ch.kind is ChangeKind.CLEAR:
            rec = VoterAssignment(self._cluster(s), cur, None)
            return self._append(s, rec, "CompleteReassignment", {"node": s.node_id})
        rec = VoterAssignment(self._cluster(s), ch.voters_after(cur), target)
        action = "AddVoter" if ch.kind is ChangeKind.ADD else "RemoveVoter"
        return self._append(s, rec, action, {"node": s.node_id, "voter": ch.voter})

    def _leader_hwm(self, s: NodeState) -> int:
        if self.bug_target_majority:
            target = target_from_log(s.log)
            if target is not None:
                # (g) the majority counted over TargetVoters instead of CurrentVoters
                return self._hwm_over(s, target)
        return super()._leader_hwm(s)

    def _hwm_over(self, s: NodeState, voters: tuple[str, ...]) -> int:
        from refimpl.kraft import rules
        offs = [len(s.log)] if s.node_id in voters else []
        lfo = s.last_fetch_offset
        feo = s.follower_end_offset
        for v in voters:
            if v != s.node_id:
                offs.append(max(0, feo.get(v, lfo.get(v, -1))))
        return rules.leader_high_watermark(offs, len(voters), s.epoch_start_offset,
                                           s.high_watermark, check_current_epoch=True)

    # ------------------------------------------------------------------ Fetch and Vote

    def send_fetch(self, s: NodeState) -> Transition | None:
        t = super().send_fetch(s)
        if t is None or not t.sends or not self._is_voter(s):
            return t
        env = t.sends[0]
        req = dataclasses.replace(env.payload, is_follower=True)
        return dataclasses.replace(t, sends=(dataclasses.replace(env, payload=req),))

    def _on_fetch_request(self, s: NodeState, src: str, m: FetchRequest) -> Transition:
        """KIP-595 "FetchRequest Handling" plus the early revision's step 4: a Fetch flagged
        IsFollower from a replica outside the leader's voters, once that removal is committed,
        gets NOT_FOLLOWER; the fetched data stays valid."""
        t = super()._on_fetch_request(s, src, m)
        if not (m.is_follower and s.role is Role.LEADER and t.sends):
            return t
        env = t.sends[0]
        r: FetchResponse = env.payload
        committed = committed_voters(t.state.log, t.state.high_watermark, self.voters)[0]
        if r.error is Errors.NONE and src not in self._voters(t.state) and src not in committed:
            r = dataclasses.replace(r, error=Errors.NOT_FOLLOWER)
            return dataclasses.replace(t, sends=(dataclasses.replace(env, payload=r),))
        return t

    def _on_fetch_response(self, s: NodeState, src: str, m: FetchResponse) -> Transition:
        """NOT_FOLLOWER is non-fatal and its records are valid: they are appended as for NONE
        and the replica downgrades itself to an observer as its own log says (the removal
        record reaches it with the data)."""
        if m.error is Errors.NOT_FOLLOWER:
            m = dataclasses.replace(m, error=Errors.NONE)
        return super()._on_fetch_response(s, src, m)

    def _on_vote_request(self, s: NodeState, src: str, m: VoteRequest) -> Transition:
        """KIP-642 draft: "Voters must reject votes from non-voters ... when a voter receives a
        VoteRequest from a non-voter, it must then become a candidate": the voter adopts the
        request's epoch, rejects, and stands in the next epoch (its Vote requests follow as
        SendVoteRequest steps).  Bug (f) grants the vote as if the candidate were a voter."""
        voters = self._voters(s)
        if (m.candidate_id in voters or s.node_id not in voters
                or self._cluster_check_fails(s, m.cluster_id) or m.candidate_epoch < s.epoch):
            return super()._on_vote_request(s, src, m)
        if self.bug_vote_non_voter:
            widened = replace(s, voter_set=tuple(sorted(set(voters) | {m.candidate_id})))
            t = super()._on_vote_request(widened, src, m)
            return dataclasses.replace(t, state=replace(t.state, voter_set=voters))
        if self.max_epoch is not None and m.candidate_epoch >= self.max_epoch:
            return super()._on_vote_request(s, src, m)
        epoch = m.candidate_epoch + 1
        new = self._clear(s, role=Role.CANDIDATE, epoch=epoch, leader_id=None,
                          voted_id=s.node_id, votes_granted=frozenset((s.node_id,)),
                          fetch_attempt=0)
        reply = self._send(s, src, VoteResponse(Errors.NONE, None, m.candidate_epoch, False))
        timers = tuple(x for x in self._role_timers(new, s) if x.name != RESEND) + \
            (SetTimer(RESEND, 0),)
        return self._stepped(new, "HandleVoteRequest", [reply], timers=timers)

    def initial_state(self, node_id: str, cluster_id: str | None = None) -> NodeState:
        return replace(super().initial_state(node_id, cluster_id), voter_set=self.voters)

    _handlers = {
        **KRaftNode._handlers,
        VoteRequest: _on_vote_request,
        FetchRequest: _on_fetch_request,
        FetchResponse: _on_fetch_response,
    }
