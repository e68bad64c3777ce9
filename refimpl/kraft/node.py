"""A KIP-595 replica as a pure state machine: (state, input) -> Transition.

Inputs are messages (`handle_message`), timer expiries (`handle_timer`), client appends
(`client_append`), graceful shutdown (`resign`) and restarts (`restart`).  A Transition holds
the new state, the messages to send, the persistence effects (quorum-state file, log,
meta.properties) and the timer changes.  The driver (the simulator) applies the persistence
effects BEFORE it sends the messages, so e.g. a vote is on disk before the VoteResponse leaves
(KIP-595 "Quorum State", "Vote Request Handling"), and a log append is synced before anything
acknowledges it (KIP-595 "Log Structure": always fsync).

Time, randomness, network and disk live in the driver (as in etcd's raft library): timers are
named and relative (`SetTimer`), and a random election timeout is asked for as a jitter.

Each handler's docstring cites the KIP section it implements: "KIP-595 <section>" for the main
text, "KIP-595r <section>" for the revision on bootstrapping and the progress timeout.  Each
returned Transition is one action of spec/KRaft.tla (named in `action`); requests a node sends
on its own initiative (Vote, BeginQuorumEpoch, Fetch) are the spec's separate Send* actions, so
those transitions set `split_sends` and the simulator records one step per request (see
docs/refimpl.md for the correspondence table).
"""

from __future__ import annotations

import dataclasses

from kraftcore.values import Fn
from refimpl.bugs import bug_enabled
from refimpl.kraft import rules
from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.log import LeaderChange, Record, last_epoch
from refimpl.kraft.messages import (
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, DescribeQuorumRequest,
    DescribeQuorumResponse, EndQuorumEpochRequest, Errors, FetchRequest, FetchResponse,
    ReplicaState, VoteRequest, VoteResponse,
)
from refimpl.kraft.quorum import is_majority
from refimpl.kraft.state import (
    LOG, META_PROPERTIES, QUORUM_STATE, NodeState, QuorumStateFile, Role, replace,
)
from refimpl.sim.protocol import CancelTimer, Envelope, Persist, SetTimer, Transition

__all__ = ["KRaftNode", "ELECTION", "FETCH", "REQUEST", "RESEND", "CHECK_QUORUM",
           "BECOME_LEADER", "FETCH_TIMEOUT", "ALL_TIMERS", "TRUNCATION_BELOW_HWM"]

# Timer names.
ELECTION = "election"            # fetch timeout (follower) / election timeout + backoff (others)
FETCH = "fetch"                  # send the next Fetch
REQUEST = "request-timeout"      # the pending Fetch got no response (quorum.request.timeout.ms)
RESEND = "resend"                # re-send Vote (candidate) / BeginQuorumEpoch (leader)
CHECK_QUORUM = "check-quorum"    # leader progress timeout (quorum.fetch.timeout.ms)
BECOME_LEADER = "become-leader"  # single-voter quorum: the candidate takes office at once
FETCH_TIMEOUT = "fetch-timeout"  # observer: quorum.fetch.timeout.ms without a successful Fetch
ALL_TIMERS = (ELECTION, FETCH, REQUEST, RESEND, CHECK_QUORUM, BECOME_LEADER, FETCH_TIMEOUT)

# NodeState.fatal_error of a follower told to truncate below its high watermark
TRUNCATION_BELOW_HWM = "truncation below the high watermark"

_EMPTY_FN = Fn()
_PASSIVE = (Role.UNATTACHED, Role.VOTED, Role.FOLLOWER)


def passive_role(voted: str | None, leader: str | None) -> Role:
    """The role of a replica that is neither candidate nor leader (spec: PassiveRole)."""
    if leader is not None:
        return Role.FOLLOWER
    return Role.VOTED if voted is not None else Role.UNATTACHED


class KRaftNode:
    """The handlers of one replica; holds only configuration (the state is passed in).

    `max_epoch` and `timeout_voters` are bounded-mode guards of the spec (MaxEpoch,
    TimeoutVoters): an EndQuorumEpoch does not start an election beyond MaxEpoch, nor at a
    voter whose timers may not fire.  The defaults are the unbounded protocol."""

    def __init__(self, config: QuorumConfig, bug: str | None = None,
                 max_epoch: int | None = None, timeout_voters=None,
                 observer_rediscovery: bool = True):
        self.cfg = config
        self.voters = config.voters
        self.max_epoch = max_epoch
        # None: every voter (bootstrap or, with reassignment, added later) may time out
        self.timeout_voters = None if timeout_voters is None else frozenset(timeout_voters)
        # Kafka's observer goes back to asking the voters when its leader has been silent for
        # quorum.fetch.timeout.ms; spec/KRaft.tla has no such step (a Follower fetches only
        # from its leader), so bounded (spec-faithful) runs switch it off
        self.observer_rediscovery = observer_rediscovery
        # a single-voter leader commits within its append (KIP-595); the reassignment spec
        # has a separate UpdateHighWatermark step instead (refimpl/kraft/reassign_node.py)
        self.inline_single_voter_hwm = True
        self.bug_hwm_epoch = bug_enabled(bug, "hwm-no-current-epoch-check")
        self.bug_div_off_by_one = bug_enabled(bug, "diverging-epoch-off-by-one")
        self.bug_vote_not_persisted = bug_enabled(bug, "double-vote-after-restart")
        self.bug_follower_hwm = bug_enabled(bug, "follower-hwm-uncapped")
        self.bug_vote_ignores_log = bug_enabled(bug, "vote-ignores-log")
        self.bug_majority = bug_enabled(bug, "majority-off-by-one")
        self.bug_no_fetch_timer = bug_enabled(bug, "follower-fetch-timer-not-armed")
        self.bug_cluster_id_fatal_from_non_leader = bug_enabled(
            bug, "cluster-id-fatal-from-any-replica")
        self.bug_reset_election_timer = bug_enabled(bug, "vote-rejection-resets-election-timer")

    # ------------------------------------------------------------------ construction

    def initial_state(self, node_id: str, cluster_id: str | None = None) -> NodeState:
        """A freshly formatted replica: epoch 0, no leader, no vote, empty log (KIP-595
        "Quorum State": LeaderEpoch is initialised to 0).  `cluster_id` is the clusterId
        already cached in meta.properties, if any (KIP-595r "Cluster Bootstrapping")."""
        return NodeState(node_id=node_id, role=Role.UNATTACHED, epoch=0, leader_id=None,
                         voted_id=None, log=(), high_watermark=0, cluster_id=cluster_id)

    def initial_timers(self, s: NodeState) -> tuple:
        return self._role_timers(s)

    def restart(self, node_id: str, disk, action: str = "Restart") -> Transition:
        """Restart from the quorum-state file, the log and meta.properties (KIP-595 "Quorum
        State": the file initialises the quorum state after a restart and keeps the vote).
        Volatile state is lost (HWM 0).  A replica that led the epoch comes back Resigned (it
        must not lead that epoch again); one that had voted for itself without a known leader
        comes back a Candidate that re-sends its Vote requests (KIP-595 "Vote Response
        Handling" step 2: "upon failover it can just resend the vote request")."""
        qs: QuorumStateFile | None = disk.get(QUORUM_STATE)
        s = self.initial_state(node_id, disk.get(META_PROPERTIES))
        s = self._restore(replace(s, log=disk.get(LOG, ())), qs)
        if qs is not None:
            v, leader = qs.voted_id, qs.leader_id
            if leader == node_id:
                role = Role.RESIGNED
            elif leader is None and v == node_id and self._is_voter(s):
                role = Role.CANDIDATE
            else:
                role = passive_role(v, leader)
            s = replace(s, role=role, epoch=qs.leader_epoch, leader_id=leader, voted_id=v,
                        votes_granted=frozenset((node_id,)) if role is Role.CANDIDATE else frozenset())
        persist: tuple = ()
        log_epoch = last_epoch(s.log)
        if s.epoch < log_epoch:
            # A quorum-state file older than the log (or missing beside a non-empty log):
            # the replica must not act in an epoch below records it holds (its Vote requests
            # would be INVALID_REQUEST: LastOffsetEpoch above the candidate's epoch).  As
            # Kafka's QuorumState.initialize ("Epoch from quorum store file ... is smaller
            # than last written epoch"), it starts Unattached in the log's last epoch, with no
            # leader and no vote, and persists that.  The persist order (quorum-state before
            # the log, KIP-595 "Persistent State") keeps this out of a healthy disk.
            s = replace(s, role=Role.UNATTACHED, epoch=log_epoch, leader_id=None,
                        voted_id=None, votes_granted=frozenset())
            persist = (self._qs(s),)
        timers = self._role_timers(s)
        if s.role is Role.CANDIDATE:
            timers = tuple(x for x in timers if x.name != RESEND) + (SetTimer(RESEND, 0),)
        return Transition(s, action, {"node": node_id}, timers=timers, persist=persist)

    # ------------------------------------------------------------------ helpers

    def _qs(self, s: NodeState) -> Persist:
        """The quorum-state write that must precede acting on a vote or role change."""
        return Persist(QUORUM_STATE, s.quorum_state(self._persisted_voters(s),
                                                     persist_vote=not self.bug_vote_not_persisted))

    def _restore(self, s: NodeState, qs: QuorumStateFile | None) -> NodeState:
        """What a restart derives from the disk beyond KIP-595's fields (KIP-642 subclass:
        the voter set, from the quorum-state file and a forward scan of the log)."""
        return s

    def _voters(self, s: NodeState) -> tuple[str, ...]:
        """The replica's current voter set.  KIP-595: the static quorum.voters; a subclass
        with dynamic reassignment (refimpl/kraft/reassign_node.py, KIP-642) derives it from
        the replica's own log."""
        return self.voters

    def _persisted_voters(self, s: NodeState) -> tuple[str, ...]:
        """CurrentVoters of the quorum-state file (KIP-595 "Quorum State")."""
        return self.voters

    def _is_voter(self, s: NodeState) -> bool:
        return s.node_id in self._voters(s)

    def _election_timer(self, s: NodeState) -> SetTimer:
        """quorum.election.timeout.ms plus a random backoff bounded by
        quorum.election.backoff.max.ms, growing with the failed elections (KIP-595 "Vote")."""
        cfg = self.cfg
        jitter = max(cfg.election_timeout_ms,
                     rules.election_backoff_max(s.election_retries + 1, cfg.retry_backoff_ms,
                                                cfg.election_backoff_max_ms))
        return SetTimer(ELECTION, cfg.election_timeout_ms, jitter)

    def may_time_out(self, node: str) -> bool:
        """Whether a voter's timers may fire (the spec's TimeoutVoters; every voter by
        default)."""
        return self.timeout_voters is None or node in self.timeout_voters

    def _role_timers(self, s: NodeState, prev: NodeState | None = None) -> tuple:
        """The timers of a role just entered (every other timer is cancelled).

        `prev` is the state the replica leaves.  A voter that moves to Unattached in a larger
        epoch from Unattached, Voted or Candidate keeps the election time it had left (Kafka's
        QuorumState.transitionToUnattached: remainingElectionTimeMs), so that a candidate that
        can never win (its log is behind) cannot keep the voters that could win from timing
        out by bumping the epoch over and over (KIP-595 "Vote": the election timeout is what
        lets a better-placed voter stand)."""
        cfg = self.cfg
        voter = self._is_voter(s)
        keep: dict[str, SetTimer] = {}
        if s.role is Role.FOLLOWER:
            if voter and not self.bug_no_fetch_timer:
                keep[ELECTION] = SetTimer(ELECTION, cfg.fetch_timeout_ms)
            elif self.observer_rediscovery:
                keep[FETCH_TIMEOUT] = SetTimer(FETCH_TIMEOUT, cfg.fetch_timeout_ms)
            keep[FETCH] = SetTimer(FETCH, 0)
        elif s.role in (Role.UNATTACHED, Role.VOTED):
            if voter:
                keep[ELECTION] = self._election_timer(s)
            keep[FETCH] = SetTimer(FETCH, 0)
        elif s.role is Role.RESIGNED:
            if voter:
                keep[ELECTION] = self._election_timer(s)
        elif s.role is Role.CANDIDATE:
            keep[ELECTION] = self._election_timer(s)
            keep[RESEND] = SetTimer(RESEND, cfg.request_timeout_ms)
            if is_majority(s.votes_granted, self._voters(s)):
                keep[BECOME_LEADER] = SetTimer(BECOME_LEADER, 0)
        elif s.role is Role.LEADER:
            keep[CHECK_QUORUM] = SetTimer(CHECK_QUORUM, cfg.fetch_timeout_ms)
            keep[RESEND] = SetTimer(RESEND, 0)
        if FETCH in keep and s.fetch_pending:
            # a Fetch is still outstanding (it may get no answer: a replica with nothing to
            # tell sends none): fetch again when quorum.request.timeout.ms expires
            keep[REQUEST] = SetTimer(REQUEST, cfg.request_timeout_ms)
        keeps_time_left = (prev is not None and voter and not self.bug_reset_election_timer
                           and s.role is Role.UNATTACHED
                           and s.epoch > prev.epoch
                           and prev.role in (Role.UNATTACHED, Role.VOTED, Role.CANDIDATE))
        return tuple(keep[t] if t in keep else CancelTimer(t) for t in ALL_TIMERS
                     if not (keeps_time_left and t == ELECTION))

    @staticmethod
    def _clear(s: NodeState, **kw) -> NodeState:
        """Leave the current role: drop candidate / leader bookkeeping (spec:
        ClearCandidateAndLeaderState)."""
        fields = dict(votes_granted=frozenset(), votes_rejected=frozenset(),
                      epoch_start_offset=0, follower_end_offset=_EMPTY_FN,
                      last_fetch_offset=_EMPTY_FN, fetched_since_check=frozenset(),
                      caught_up_now=frozenset(), caught_up_before=frozenset())
        fields.update(kw)
        return replace(s, **fields)

    def step_down(self, s: NodeState, epoch: int, leader: str | None) -> NodeState:
        """Learn epoch `epoch` (>= ours) with leader `leader` (None if unknown) and become a
        passive replica; a new epoch clears the vote (spec: StepDown).  KIP-595 "Vote Request
        Handling", "BeginQuorumEpoch Request Handling", "FetchResponse Handling" step 1."""
        if leader == s.node_id:
            leader = None
        voted = None if epoch > s.epoch else s.voted_id
        new = self._clear(s, role=passive_role(voted, leader), epoch=epoch, leader_id=leader,
                          voted_id=voted)
        if epoch > s.epoch or leader is not None:
            new = replace(new, fetch_attempt=0, election_retries=0 if leader else s.election_retries,
                          rediscovering=False)
        return new

    def _stepped(self, new: NodeState, action: str, sends=(), extra_persist=(),
                 timers=None, prev: NodeState | None = None) -> Transition:
        """A transition into a new role/epoch: quorum-state written first, role timers set
        (`prev`: the state left, see _role_timers)."""
        return Transition(new, action, {"node": new.node_id}, sends=tuple(sends),
                          persist=(self._qs(new),) + tuple(extra_persist),
                          timers=self._role_timers(new, prev) if timers is None else timers)

    def _same(self, s: NodeState, action: str, sends=()) -> Transition:
        return Transition(s, action, {"node": s.node_id}, sends=tuple(sends))

    def _send(self, s: NodeState, dst: str, msg) -> Envelope:
        return Envelope(s.node_id, dst, msg)

    def _cluster_check_fails(self, s: NodeState, cluster_id: str | None) -> bool:
        """KIP-595r "Cluster Bootstrapping": a non-null clusterId must match the cached one."""
        return cluster_id is not None and s.cluster_id is not None and cluster_id != s.cluster_id

    def _leader_hwm(self, s: NodeState) -> int:
        """KIP-595 "FetchRequest Handling" step 4 (spec: NewHighWatermark)."""
        offs = [len(s.log)]
        feo = s.follower_end_offset
        for v in self._voters(s):
            if v != s.node_id:
                offs.append(max(0, feo.get(v, -1)))
        quorum = (len(self._voters(s)) // 2) if self.bug_majority else None
        return rules.leader_high_watermark(offs, len(self._voters(s)), s.epoch_start_offset,
                                           s.high_watermark,
                                           check_current_epoch=not self.bug_hwm_epoch,
                                           quorum=quorum)

    @staticmethod
    def _cache_cluster_id(s: NodeState) -> tuple[NodeState, tuple]:
        """KIP-595r "Cluster Bootstrapping": once a LeaderChange record carrying the clusterId is
        committed, cache it in meta.properties."""
        if s.cluster_id is not None or s.high_watermark == 0:
            return s, ()
        for i in range(min(s.high_watermark, len(s.log)) - 1, -1, -1):
            c = s.log[i].control
            if c is not None:
                s = replace(s, cluster_id=c.cluster_id)
                return s, (Persist(META_PROPERTIES, c.cluster_id),)
        return s, ()

    # ------------------------------------------------------------------ dispatch

    def handle_message(self, s: NodeState, src: str, msg) -> Transition | None:
        if s.role is Role.SHUTDOWN:
            return None
        h = self._handlers.get(type(msg))
        if h is None:
            raise TypeError(f"{s.node_id}: no handler for {type(msg).__name__}")
        return h(self, s, src, msg)

    # ------------------------------------------------------------------ Vote

    def start_election(self, s: NodeState, action: str = "Timeout",
                       epoch: int | None = None) -> Transition | None:
        """KIP-595 "Vote": bump the epoch, vote for itself and write quorum-state; once that
        is persistent, send Vote requests to all other voters.  Also the leader progress
        timeout (KIP-595r) and the first EndQuorumEpoch successor start here."""
        if not self._is_voter(s) or s.role is Role.SHUTDOWN:
            return None
        epoch = s.epoch + 1 if epoch is None else epoch
        new = self._clear(s, role=Role.CANDIDATE, epoch=epoch, leader_id=None,
                          voted_id=s.node_id, votes_granted=frozenset((s.node_id,)))
        req = VoteRequest(s.cluster_id, epoch, s.node_id, last_epoch(s.log), len(s.log))
        sends = [self._send(s, v, req) for v in self._voters(s) if v != s.node_id]
        t = self._stepped(new, action, sends)
        return dataclasses.replace(t, split_sends="SendVoteRequest")

    def _on_vote_request(self, s: NodeState, src: str, m: VoteRequest) -> Transition:
        """KIP-595 "Vote Request Handling" steps 1-4 (KIP-595r "Cluster Bootstrapping" step
        4: INVALID_CLUSTER_ID rejects the vote).  A larger candidate epoch is adopted first;
        a vote already cast in the epoch is only repeated for the same candidate; otherwise
        the vote is granted iff no leader is known, the candidate is a voter and its log is at
        least as up-to-date.  The quorum-state file is written before the response leaves."""
        c = m.candidate_id
        if self._cluster_check_fails(s, m.cluster_id):                         # step 1
            r = VoteResponse(Errors.INVALID_CLUSTER_ID, None, m.candidate_epoch, False)
            return self._same(s, "HandleVoteRequest", [self._send(s, src, r)])
        if not rules.vote_request_is_valid(m.candidate_epoch, m.last_offset_epoch, m.last_offset):
            # a malformed candidate position is neither a vote nor an epoch to adopt (Kafka's
            # KafkaRaftClientTest.testInvalidVoteRequest)
            r = VoteResponse(Errors.INVALID_REQUEST, s.leader_id, s.epoch, False)
            return self._same(s, "HandleVoteRequest", [self._send(s, src, r)])
        if m.candidate_epoch < s.epoch:                                        # step 2
            r = VoteResponse(Errors.FENCED_LEADER_EPOCH, s.leader_id, s.epoch, False)
            return self._same(s, "HandleVoteRequest", [self._send(s, src, r)])
        bump = m.candidate_epoch > s.epoch                                     # step 4
        voted = None if bump else s.voted_id
        leader = None if bump else s.leader_id
        if voted is not None:                                                  # step 3
            grant = voted == c
        else:
            grant = (leader is None and c in self._voters(s) and self._is_voter(s)  # 4a
                     and (self.bug_vote_ignores_log or rules.is_log_up_to_date(  # 4b
                         m.last_offset_epoch, m.last_offset, last_epoch(s.log), len(s.log))))
        new_vote = c if grant else voted
        role = passive_role(new_vote, leader) if bump or s.role is Role.UNATTACHED else s.role
        reply = self._send(s, src, VoteResponse(Errors.NONE, leader, m.candidate_epoch, grant))
        if bump:
            new = self._clear(s, role=role, epoch=m.candidate_epoch, leader_id=leader,
                              voted_id=new_vote, fetch_attempt=0)
        else:
            new = replace(s, role=role, voted_id=new_vote)
        if new.voted_id == s.voted_id and new.epoch == s.epoch and new.role is s.role:
            return self._same(s, "HandleVoteRequest", [reply])
        timers = self._role_timers(new, s) if (bump or role is not s.role) else ()
        return self._stepped(new, "HandleVoteRequest", [reply], timers=timers)

    def _on_vote_response(self, s: NodeState, src: str, m: VoteResponse) -> Transition:
        """KIP-595 "Vote Response Handling" (and KIP-595r step 2a: INVALID_CLUSTER_ID is a
        rejection).  A larger epoch makes the replica step down; a candidate of the response's
        epoch counts the vote in memory, and with a majority becomes leader; when the
        rejections make a majority impossible (the gridlock note) it "can immediately step
        down and backoff": it keeps its persisted self-vote (Voted) and waits for its timer."""
        if m.error is not Errors.INVALID_CLUSTER_ID and m.leader_epoch > s.epoch:
            return self._stepped(self.step_down(s, m.leader_epoch, m.leader_id),
                                 "HandleVoteResponse", prev=s)
        if s.role is not Role.CANDIDATE or m.leader_epoch != s.epoch:
            return self._same(s, "HandleVoteResponse")
        if m.vote_granted:
            granted = s.votes_granted | {src}
            if is_majority(granted, self._voters(s)):
                return self.become_leader(replace(s, votes_granted=granted), "HandleVoteResponse")
            return self._same(replace(s, votes_granted=granted), "HandleVoteResponse")
        rejected = s.votes_rejected | {src}
        if not is_majority(set(self._voters(s)) - rejected, self._voters(s)):
            retries = s.election_retries + 1
            new = replace(self.step_down(s, s.epoch, None), election_retries=retries)
            backoff = rules.election_backoff_max(retries, self.cfg.retry_backoff_ms,
                                                 self.cfg.election_backoff_max_ms)
            timers = tuple(x for x in self._role_timers(new) if x.name != ELECTION) + \
                (SetTimer(ELECTION, 0, backoff),)
            return self._stepped(new, "HandleVoteResponse", timers=timers)
        return self._same(replace(s, votes_rejected=rejected), "HandleVoteResponse")

    def become_leader(self, s: NodeState, action: str = "BecomeLeader") -> Transition | None:
        """KIP-595 "Vote Response Handling" steps 2-3 + the LeaderChangeMessage (KIP-595r):
        with a majority, write quorum-state (LeaderId = itself), append the LeaderChange
        control record (ClusterId, LeaderId, VotedIds; the first leader generates the
        clusterId) whose offset starts the epoch, then send BeginQuorumEpoch to every other
        voter (KIP-595 "BeginQuorumEpoch").  The HWM is only advanced by Fetch handling."""
        if s.role is not Role.CANDIDATE or not is_majority(s.votes_granted, self._voters(s)):
            return None
        cluster = s.cluster_id
        if cluster is None:
            for r in reversed(s.log):
                if r.control is not None:
                    cluster = r.control.cluster_id
                    break
        if cluster is None:
            # a deterministic stand-in for a fresh UUID: unique per (first leader, epoch)
            cluster = f"cluster-{s.node_id}-{s.epoch}"
        rec = Record(s.epoch, control=LeaderChange(cluster, s.node_id, tuple(sorted(s.votes_granted))))
        log = s.log + (rec,)
        new = self._clear(s, role=Role.LEADER, leader_id=s.node_id, log=log,
                          epoch_start_offset=len(s.log), election_retries=0)
        persist: tuple = (Persist(LOG, log),)
        if self.inline_single_voter_hwm and len(self._voters(s)) == 1:  # a quorum of one commits on its own
            new = replace(new, high_watermark=self._leader_hwm(new))
            new, cid = self._cache_cluster_id(new)
            persist += cid
        req = BeginQuorumEpochRequest(new.cluster_id, s.node_id, s.epoch)
        sends = [self._send(s, v, req) for v in self._voters(s) if v != s.node_id]
        t = self._stepped(new, action, sends, persist)
        return dataclasses.replace(t, split_sends="SendBeginQuorumEpoch")

    # ------------------------------------------------------------------ BeginQuorumEpoch

    def _on_begin_epoch_request(self, s: NodeState, src: str,
                                m: BeginQuorumEpochRequest) -> Transition:
        """KIP-595 "BeginQuorumEpoch Request Handling": an inconsistent clusterId from an
        elected leader terminates the broker (KIP-595r "Cluster Bootstrapping" step 3); a lower
        epoch is rejected (FENCED_LEADER_EPOCH); another leader for an epoch whose leader is
        known is rejected (INVALID_QUORUM_STATE); otherwise become a follower of the leader."""
        if self._cluster_check_fails(s, m.cluster_id):
            return Transition(replace(s, role=Role.SHUTDOWN), "HandleBeginQuorumEpochRequest",
                              {"node": s.node_id}, halt=True)
        if m.leader_epoch < s.epoch:
            r = BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, s.leader_id, s.epoch)
            return self._same(s, "HandleBeginQuorumEpochRequest", [self._send(s, src, r)])
        if m.leader_epoch == s.epoch and s.leader_id not in (None, m.leader_id):
            r = BeginQuorumEpochResponse(Errors.INVALID_QUORUM_STATE, s.leader_id, s.epoch)
            return self._same(s, "HandleBeginQuorumEpochRequest", [self._send(s, src, r)])
        new = self.step_down(s, m.leader_epoch, m.leader_id)
        r = BeginQuorumEpochResponse(Errors.NONE, m.leader_id, m.leader_epoch)
        if new == s:
            return self._same(s, "HandleBeginQuorumEpochRequest", [self._send(s, src, r)])
        return self._stepped(new, "HandleBeginQuorumEpochRequest", [self._send(s, src, r)])

    def _on_begin_epoch_response(self, s: NodeState, src: str,
                                 m: BeginQuorumEpochResponse) -> Transition:
        """KIP-595 "BeginQuorumEpoch Response Handling": with no error the leader records the
        voter's endorsement; FENCED_LEADER_EPOCH (a larger epoch) makes it follow the leader
        in the response."""
        if m.leader_epoch > s.epoch:
            return self._stepped(self.step_down(s, m.leader_epoch, m.leader_id),
                                 "HandleBeginQuorumEpochResponse", prev=s)
        if (s.role is Role.LEADER and m.leader_epoch == s.epoch and m.error is Errors.NONE
                and src in self._voters(s)):
            feo = s.follower_end_offset
            if feo.get(src, -1) < 0:
                return self._same(replace(s, follower_end_offset=feo.set(src, 0)),
                                  "HandleBeginQuorumEpochResponse")
        return self._same(s, "HandleBeginQuorumEpochResponse")

    # ------------------------------------------------------------------ EndQuorumEpoch

    def resign(self, s: NodeState) -> Transition | None:
        """KIP-595 "EndQuorumEpoch": a leader shutting down gracefully sends EndQuorumEpoch to
        every other voter, with the preferred successors sorted by replicated offset
        (descending), once, without retrying; it is then Resigned.  A candidate ending its
        election sends it with LeaderId -1 and stops."""
        if s.role is Role.LEADER:
            feo, fetched = s.follower_end_offset, s.last_fetch_offset
            others = [v for v in self._voters(s) if v != s.node_id]
            # by replicated offset, descending (spec SuccessorOrders); among equal offsets a
            # voter that never sent a valid Fetch comes last, as in Kafka's
            # LeaderState.ReplicaState.compareTo (an unknown end offset sorts last)
            succ = tuple(sorted(others, key=lambda v: (-feo.get(v, -1), v not in fetched, v)))
            req = EndQuorumEpochRequest(s.cluster_id, s.node_id, s.node_id, s.epoch, succ)
            new = self._clear(s, role=Role.RESIGNED)
            return Transition(new, "Resign", {"node": s.node_id},
                              sends=tuple(self._send(s, v, req) for v in succ),
                              timers=self._role_timers(new))
        if s.role is Role.CANDIDATE:
            succ = tuple(v for v in self._voters(s) if v != s.node_id)
            req = EndQuorumEpochRequest(s.cluster_id, s.node_id, None, s.epoch, succ)
            return Transition(s, "Resign", {"node": s.node_id},
                              sends=tuple(self._send(s, v, req) for v in succ), halt=True)
        return None

    def _on_end_epoch_request(self, s: NodeState, src: str, m: EndQuorumEpochRequest) -> Transition:
        """KIP-595 "EndQuorumEpoch Request Handling": rejected if the request names no leader,
        the clusterId does not match, the epoch is older, the epoch's leader is known to be
        someone else, or we are not a preferred successor.  Otherwise the first successor
        becomes a candidate at once; the others learn the epoch and leader and start an
        election after MIN(retryBackoffMaxMs, retryBackoffMs * 2^(N-1)).  Quorum-state is
        written before any election starts.  No response is sent: the resigning leader ignores
        it ("best-effort graceful shutdown")."""
        leader = m.leader_id
        succ = m.preferred_successors
        # "If the epoch is smaller than the last known epoch, or the leader id is not known for
        # this epoch, the request is rejected": a candidate's EndQuorumEpoch (LeaderId -1)
        # changes nothing at its receiver (Kafka: KafkaRaftClientTest
        # .testEndQuorumIgnoredIfAlreadyCandidate; only a follower of the resigning leader acts)
        if (leader is None or self._cluster_check_fails(s, m.cluster_id)
                or m.leader_epoch < s.epoch
                or (m.leader_epoch == s.epoch and s.leader_id not in (None, src))
                or s.node_id not in succ or not self._is_voter(s)):
            return self._same(s, "HandleEndQuorumEpochRequest")
        pos = succ.index(s.node_id)
        if (pos == 0 and self.may_time_out(s.node_id)
                and (self.max_epoch is None or m.leader_epoch < self.max_epoch)):
            return self.start_election(s, "HandleEndQuorumEpochRequest", m.leader_epoch + 1)
        new = self.step_down(s, m.leader_epoch, leader)
        delay = rules.successor_backoff_ms(pos, self.cfg.retry_backoff_ms, self.cfg.retry_backoff_max_ms)
        timers = tuple(x for x in self._role_timers(new) if x.name != ELECTION) + \
            (SetTimer(ELECTION, delay),)
        return self._stepped(new, "HandleEndQuorumEpochRequest", timers=timers)

    # ------------------------------------------------------------------ Fetch

    def send_fetch(self, s: NodeState) -> Transition | None:
        """KIP-595 "Fetch": a follower (voter or observer) fetches from its leader with
        FetchOffset = log end and LastFetchedEpoch = its last epoch.  Without a known leader
        (KIP-595r "Cluster Bootstrapping" step 1; observers, KIP-595 "BeginQuorumEpoch") it
        asks the voters in turn.  One Fetch is outstanding at a time."""
        if s.fetch_pending:
            return None
        if s.role is Role.FOLLOWER and s.rediscovering:
            # Kafka's observer after quorum.fetch.timeout.ms: any voter, until one names the
            # new leader (KIP-595 "BeginQuorumEpoch": "observers will discover the new leader
            # through the Fetch API")
            dst = self._voters(s)[s.fetch_attempt % len(self._voters(s))]
        elif s.role is Role.FOLLOWER:
            dst = s.leader_id
        elif s.role in (Role.UNATTACHED, Role.VOTED) and s.leader_id is None:
            others = [v for v in self._voters(s) if v != s.node_id]
            if not others:
                return None
            dst = others[s.fetch_attempt % len(others)]
        else:
            return None
        req = FetchRequest(s.cluster_id, s.node_id, s.epoch, len(s.log), last_epoch(s.log))
        return Transition(replace(s, fetch_pending=True), None, {"node": s.node_id},
                          sends=(self._send(s, dst, req),),
                          timers=(SetTimer(REQUEST, self.cfg.request_timeout_ms),),
                          split_sends="SendFetchRequest")

    def _on_fetch_request(self, s: NodeState, src: str, m: FetchRequest) -> Transition:
        """KIP-595 "FetchRequest Handling" steps 1-4: clusterId check; the epoch must be the
        leader's (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; a non-leader answers
        NOT_LEADER_OR_FOLLOWER with the leader it knows, KIP-595 "BeginQuorumEpoch");
        FetchOffset / LastFetchedEpoch validated against the log (else DivergingEpoch); a
        voter's fetch records its end offset and endorsement and may advance the HWM (majority
        + current-epoch rule); observers' fetches never do."""
        def resp(state, err, leader, epoch, hwm, records=(), div=None):
            return self._send(state, src, FetchResponse(err, leader, epoch, hwm, m.fetch_offset,
                                                        m.last_fetched_epoch, records, div))

        if self._cluster_check_fails(s, m.cluster_id):                          # step 1
            # the response names the responder as leader iff it is the elected leader, so the
            # fetcher can tell whether the error comes from an elected leader (see below)
            leader = s.node_id if s.role is Role.LEADER else None
            return self._same(s, "HandleFetchRequest",
                              [resp(s, Errors.INVALID_CLUSTER_ID, leader, m.current_leader_epoch, -1)])
        if not rules.fetch_request_is_valid(m.current_leader_epoch, m.fetch_offset,
                                            m.last_fetched_epoch):
            # a malformed position is answered before the epoch checks of step 2 and changes
            # nothing (Kafka's KafkaRaftClientTest.testInvalidFetchRequest)
            return self._same(s, "HandleFetchRequest",
                              [resp(s, Errors.INVALID_REQUEST, s.leader_id, s.epoch, -1)])
        if s.role is not Role.LEADER or m.current_leader_epoch != s.epoch:       # step 2
            informative = (m.current_leader_epoch < s.epoch or (
                m.current_leader_epoch == s.epoch and s.leader_id not in (None, src)))
            if not informative:
                # UNKNOWN_LEADER_EPOCH carries an epoch below the fetcher's, and
                # NOT_LEADER_OR_FOLLOWER without a leader carries nothing: the fetcher would
                # ignore either, so (as KRaft.tla's HandleFetchRequest) no response is sent and
                # the fetcher's request timeout makes it fetch again.
                return self._same(s, "HandleFetchRequest")
            if m.current_leader_epoch < s.epoch:
                err = Errors.FENCED_LEADER_EPOCH
            elif m.current_leader_epoch > s.epoch:
                err = Errors.UNKNOWN_LEADER_EPOCH
            else:
                err = Errors.NOT_LEADER_OR_FOLLOWER
            return self._same(s, "HandleFetchRequest", [resp(s, err, s.leader_id, s.epoch, -1)])
        div = rules.diverging_epoch(s.log, m.fetch_offset, m.last_fetched_epoch,
                                    off_by_one=self.bug_div_off_by_one)         # step 3
        valid = div is None
        new = s
        persist: tuple = ()
        timers: tuple = ()
        if src in self._voters(s):                                                  # step 4
            feo = s.follower_end_offset
            off = rules.follower_end_offset(feo.get(src, -1), m.fetch_offset, valid)
            window, progressed = rules.record_fetch(s.fetched_since_check, s.node_id, src,
                                                    self._voters(s))
            if progressed:  # a majority fetched: the leader progress timer restarts
                timers = (SetTimer(CHECK_QUORUM, self.cfg.fetch_timeout_ms),)
            new = replace(s, follower_end_offset=feo.set(src, off) if off != feo.get(src, -1) else feo,
                          fetched_since_check=window)
            if valid:
                new = replace(new, high_watermark=self._leader_hwm(new))
                new, persist = self._cache_cluster_id(new)
        if valid and new.last_fetch_offset.get(src) != m.fetch_offset:
            # DescribeQuorum's LogEndOffset: the last valid FetchOffset, even when lower than
            # before (Kafka's LeaderState.updateReplicaState logs a "non-monotonic update" and
            # takes it); the HWM above uses the spec's never-decreasing followerEndOffset and
            # itself never decreases
            new = replace(new, last_fetch_offset=new.last_fetch_offset.set(src, m.fetch_offset))
        records = s.log[m.fetch_offset:m.fetch_offset + self.cfg.fetch_max_records] if valid else ()
        r = resp(new, Errors.NONE, s.node_id, s.epoch, new.high_watermark, records, div)
        return Transition(new, "HandleFetchRequest", {"node": s.node_id}, sends=(r,),
                          persist=persist, timers=timers)

    def _on_fetch_response(self, s: NodeState, src: str, m: FetchResponse) -> Transition:
        """KIP-595 "FetchResponse Handling" (and KIP-595r "Cluster Bootstrapping": an
        INVALID_CLUSTER_ID from the elected leader is fatal; "we only treat mismatched clusterId
        errors as fatal when the broker's value conflicts with that of an elected leader", so
        the same error from a replica that is not the leader is ignored and the fetcher asks
        again; see docs/spec-kraft.md, Findings).  A larger epoch (FENCED_LEADER_EPOCH) -> write quorum-state and follow the
        leader in the response; the leader of our epoch, unknown so far -> follow it ("Current
        Leader Discovery"); the current leader's answer to our current position -> truncate on
        DivergingEpoch (step 2), else append the records (synced) and take HWM = min(log end,
        leader HWM), never decreasing.  Anything else (stale, duplicate) is ignored."""
        fatal_cluster_id = m.error is Errors.INVALID_CLUSTER_ID and (
            m.leader_id == src or self.bug_cluster_id_fatal_from_non_leader)
        if fatal_cluster_id:
            return Transition(replace(s, role=Role.SHUTDOWN), "HandleFetchResponse",
                              {"node": s.node_id}, halt=True)
        pace = (CancelTimer(REQUEST),)
        if m.error is not Errors.INVALID_CLUSTER_ID and m.leader_epoch > s.epoch:
            new = replace(self.step_down(s, m.leader_epoch, m.leader_id), fetch_pending=False)
            return self._stepped(new, "HandleFetchResponse", prev=s)
        if (m.error is not Errors.INVALID_CLUSTER_ID
                and m.leader_epoch == s.epoch and s.leader_id is None
                and m.leader_id not in (None, s.node_id)
                and s.role in (Role.UNATTACHED, Role.VOTED, Role.CANDIDATE)):
            new = replace(self.step_down(s, m.leader_epoch, m.leader_id), fetch_pending=False)
            return self._stepped(new, "HandleFetchResponse")
        if not (m.error is Errors.NONE and s.role is Role.FOLLOWER and src == s.leader_id
                and m.leader_epoch == s.epoch and m.fetch_offset == len(s.log)
                and m.last_fetched_epoch == last_epoch(s.log)):
            if not s.fetch_pending:
                return self._same(s, "HandleFetchResponse")
            # no leader there (or a stale answer): ask again after an exponential backoff
            attempt = s.fetch_attempt + 1
            backoff = rules.successor_backoff_ms(min(attempt, 30), self.cfg.retry_backoff_ms,
                                                 self.cfg.retry_backoff_max_ms)
            return Transition(replace(s, fetch_pending=False, fetch_attempt=attempt),
                              "HandleFetchResponse", {"node": s.node_id},
                              timers=pace + (SetTimer(FETCH, backoff),))
        if self._is_voter(s):
            alive = ((SetTimer(ELECTION, self.cfg.fetch_timeout_ms),)
                     if not self.bug_no_fetch_timer else ())
        elif self.observer_rediscovery:
            alive = (SetTimer(FETCH_TIMEOUT, self.cfg.fetch_timeout_ms),)
        else:
            alive = ()
        if s.rediscovering:
            s = replace(s, rediscovering=False)
        if m.diverging_epoch is not None:
            de, deo = m.diverging_epoch
            keep = rules.truncation_offset(s.log, de, deo)
            if rules.truncates_committed(keep, s.high_watermark):
                # Kafka's KafkaRaftClient throws ("The leader requested truncation to offset
                # .. which is below the current high watermark"): a committed record would be
                # lost, so the replica stops instead of leaving HWM > log end offset
                new = replace(s, role=Role.SHUTDOWN, fetch_pending=False,
                              fatal_error=f"{TRUNCATION_BELOW_HWM}: DivergingEpoch ({de}, {deo}) "
                                          f"truncates to offset {keep} < HWM {s.high_watermark}")
                return Transition(new, "HandleFetchResponse", {"node": s.node_id}, halt=True)
            log = s.log[:keep]
            new = replace(s, log=log, fetch_pending=False)
            return Transition(new, "HandleFetchResponse", {"node": s.node_id},
                              persist=(Persist(LOG, log),) if len(log) < len(s.log) else (),
                              timers=alive + pace + (SetTimer(FETCH, 0),))
        log = s.log + m.records if m.records else s.log
        hwm = rules.follower_high_watermark(s.high_watermark, m.high_watermark, len(log),
                                            capped=not self.bug_follower_hwm)
        new = replace(s, log=log, high_watermark=hwm, fetch_pending=False)
        new, cid_persist = self._cache_cluster_id(new)
        persist = ((Persist(LOG, log),) if m.records else ()) + cid_persist
        poll = 0 if m.records else self.cfg.fetch_poll_ms
        return Transition(new, "HandleFetchResponse", {"node": s.node_id}, persist=persist,
                          timers=alive + pace + (SetTimer(FETCH, poll),))

    # ------------------------------------------------------------------ DescribeQuorum

    def describe_quorum(self, s: NodeState) -> DescribeQuorumResponse:
        """KIP-595 "DescribeQuorum Request Handling": only the leader answers with the
        replication state; others return NOT_LEADER_FOR_PARTITION with the leader they know.
        Each replica's LogEndOffset is the FetchOffset of its last valid Fetch, as Kafka
        reports it (it may go down after a truncation; -1 before the first Fetch); the HWM
        reported never decreases."""
        if s.role is not Role.LEADER:
            return DescribeQuorumResponse(Errors.NOT_LEADER_FOR_PARTITION, s.leader_id, s.epoch,
                                          s.high_watermark, (), ())
        lfo = s.last_fetch_offset
        voters = tuple(self.replica_state(s, v) for v in self._voters(s))
        observers = tuple(ReplicaState(o, lfo[o]) for o in sorted(lfo) if o not in self._voters(s))
        return DescribeQuorumResponse(Errors.NONE, s.node_id, s.epoch, self.reported_hwm(s),
                                      voters, observers)

    @staticmethod
    def replica_state(s: NodeState, r: str) -> ReplicaState:
        """Replica r as the leader s reports it: its own log end, or the FetchOffset of r's
        last valid Fetch (-1 before one)."""
        return ReplicaState(r, len(s.log) if r == s.node_id else s.last_fetch_offset.get(r, -1))

    @staticmethod
    def reported_hwm(s: NodeState) -> int:
        """The leader's HWM as DescribeQuorum reports it: -1 (unknown) until a majority has
        replicated past the epoch's start (KIP-595 "High Watermark": the leader may only
        advance it with a record of its own epoch), as Kafka's LeaderState reports an empty
        high watermark until then (QuorumStateTest.testCandidateToLeader).  The state keeps
        the value retained from before the election (spec highWatermark is not reset); only
        the report hides it."""
        return (s.high_watermark if rules.covers_current_epoch(s.high_watermark,
                                                                s.epoch_start_offset) else -1)

    def _on_describe_quorum(self, s: NodeState, src: str, m: DescribeQuorumRequest) -> Transition:
        return self._same(s, "HandleDescribeQuorumRequest",
                          [self._send(s, src, self.describe_quorum(s))])

    def _on_describe_quorum_response(self, s: NodeState, src: str, m) -> Transition:
        return self._same(s, "HandleDescribeQuorumResponse")

    # ------------------------------------------------------------------ timers and clients

    def handle_timer(self, s: NodeState, timer: str) -> Transition | None:
        """Timer expiries: election / fetch timeouts (KIP-595 "Vote" conditions 1 and 3, with
        the randomized backoff; spec Timeout), Fetch sending and its request timeout
        (quorum.request.timeout.ms), re-sends of Vote and BeginQuorumEpoch (KIP-595
        "BeginQuorumEpoch Response Handling": until endorsed), and the leader progress
        timeout (KIP-595r)."""
        if s.role is Role.SHUTDOWN:
            return None
        if timer == ELECTION:
            if s.role is Role.LEADER:
                return None
            return self.start_election(s)
        if timer == FETCH:
            return self.send_fetch(s)
        if timer == REQUEST:
            if not s.fetch_pending:
                return None
            new = replace(s, fetch_pending=False, fetch_attempt=s.fetch_attempt + 1)
            return Transition(new, "FetchRequestTimeout", {"node": s.node_id},
                              timers=(SetTimer(FETCH, 0),))
        if timer == RESEND:
            return self._resend(s)
        if timer == CHECK_QUORUM:
            if s.role is not Role.LEADER:
                return None
            if is_majority(s.fetched_since_check | {s.node_id}, self._voters(s)):
                # the leader alone is a majority (a single-voter quorum): it can never lose
                # touch with its quorum, so the progress timeout never fires (spec
                # LeaderProgressTimeout: ~IsQuorumOf(i, fetchedSinceCheck[i] \cup {i});
                # Kafka's LeaderStateTest.testCheckQuorumWithOneVoter)
                return None
            # the window closes (and this timer restarts) whenever a majority has fetched
            # (rules.record_fetch), so expiring means no majority for quorum.fetch.timeout.ms
            return self.start_election(s, "LeaderProgressTimeout")
        if timer == BECOME_LEADER:
            return self.become_leader(s)
        if timer == FETCH_TIMEOUT:
            return self._observer_fetch_timeout(s)
        raise ValueError(f"unknown timer {timer!r}")

    def _observer_fetch_timeout(self, s: NodeState) -> Transition | None:
        """An observer's leader has not answered a Fetch for quorum.fetch.timeout.ms: it goes
        back to discovery and asks the voters in turn, starting after the silent leader,
        until one names the new leader (Kafka's KafkaRaftClient.pollFollowerAsObserver; KIP-595
        "BeginQuorumEpoch": observers discover the leader through the Fetch API).  A voter
        follower starts an election instead (the `election` timer, KIP-595 "Vote" 1)."""
        if not self._observer_may_rediscover(s):
            return None
        return Transition(self._rediscovery(s), "ObserverFetchTimeout", {"node": s.node_id},
                          timers=(CancelTimer(REQUEST), SetTimer(FETCH, 0)))

    def _observer_may_rediscover(self, s: NodeState) -> bool:
        """An observer following a leader, not yet asking the voters in turn (and the
        rediscovery is on: it is Kafka's, not a step of spec/KRaft.tla)."""
        return (s.role is Role.FOLLOWER and not self._is_voter(s) and not s.rediscovering
                and self.observer_rediscovery)

    def _rediscovery(self, s: NodeState) -> NodeState:
        """Start asking the voters in turn, beginning with the one after the silent leader."""
        voters = self._voters(s)
        start = voters.index(s.leader_id) + 1 if s.leader_id in voters else 0
        return replace(s, rediscovering=True, fetch_pending=False, fetch_attempt=start)

    def _resend(self, s: NodeState) -> Transition | None:
        """Vote requests to voters that have not answered (KIP-595 "Vote"); BeginQuorumEpoch
        to voters that have not endorsed the leader."""
        if s.role is Role.CANDIDATE:
            answered = s.votes_granted | s.votes_rejected
            req = VoteRequest(s.cluster_id, s.epoch, s.node_id, last_epoch(s.log), len(s.log))
            dsts = [v for v in self._voters(s) if v not in answered]
            split = "SendVoteRequest"
        elif s.role is Role.LEADER:
            req = BeginQuorumEpochRequest(s.cluster_id, s.node_id, s.epoch)
            dsts = [v for v in self._voters(s)
                    if v != s.node_id and s.follower_end_offset.get(v, -1) < 0]
            split = "SendBeginQuorumEpoch"
        else:
            return None
        if not dsts:
            return None
        return Transition(s, None, {"node": s.node_id},
                          sends=tuple(self._send(s, d, req) for d in dsts),
                          timers=(SetTimer(RESEND, self.cfg.request_timeout_ms),),
                          split_sends=split)

    def client_append(self, s: NodeState, value: str) -> Transition | None:
        """KIP-595 "Client Interactions": the leader appends the record (synced before the
        append returns, KIP-595 "Log Structure"); a single-voter quorum commits at once."""
        if s.role is not Role.LEADER:
            return None
        log = s.log + (Record(s.epoch, value=value),)
        new = replace(s, log=log)
        persist: tuple = (Persist(LOG, log),)
        if self.inline_single_voter_hwm and len(self._voters(s)) == 1:
            new = replace(new, high_watermark=self._leader_hwm(new))
            new, cid = self._cache_cluster_id(new)
            persist += cid
        return Transition(new, "ClientRequest", {"node": s.node_id, "value": value},
                          persist=persist)

    _handlers = {
        VoteRequest: _on_vote_request,
        VoteResponse: _on_vote_response,
        BeginQuorumEpochRequest: _on_begin_epoch_request,
        BeginQuorumEpochResponse: _on_begin_epoch_response,
        EndQuorumEpochRequest: _on_end_epoch_request,
        FetchRequest: _on_fetch_request,
        FetchResponse: _on_fetch_response,
        DescribeQuorumRequest: _on_describe_quorum,
        DescribeQuorumResponse: _on_describe_quorum_response,
    }
