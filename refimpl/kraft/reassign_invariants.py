"""Online invariants of KIP-642 reassignment, checked by the simulator after every step.

Names are spec/KRaftReassign.tla's where the spec has the invariant (ElectionSafety,
SingleMemberChanges, VoterSetFollowsLog); CommittedOnVoterMajority, QuorumStateHoldsCommittedVoters
and NoVoteForNonVoter are the refimpl's own (the spec checks the same rules through its state).

`ReassignMonitor` keeps KIP-595's checks (refimpl/kraft/invariants.py) with the majorities taken
over the voter set of the replica concerned (not a fixed quorum.voters), and adds:

  ElectionSafety               historical: a ghost map epoch -> leader; a second replica ever
                               leading an epoch is a violation (not only two at the same time)
  CommittedOnVoterMajority     a record is committed only once a majority of the committing
                               leader's voter set holds it (a removed replica, an observer or a
                               TargetVoter never counts)
  VoterSetFollowsLog             every replica acts on the voter set of its own log: CurrentVoters
                               of the latest VoterAssignment it has appended (committed or not),
                               else the bootstrap voters (spec VotersOf; KIP-642 draft step 4 and
                               the "main subtlety")
  SingleMemberChanges           a leader appends a VoterAssignment only when its CurrentVoters
                               differ by at most one member from the voters committed in its log
  MembershipChangeAfterEpochCommit  a leader appends a membership change only once it has
                               committed a record of its own epoch (Raft's single-server change
                               rule, the spec's guard of AddVoter / RemoveVoter): the rule itself,
                               checked at the step, since its consequences (two leaders of an
                               epoch, a lost committed record) need rare interleavings
  QuorumStateHoldsCommittedVoters  the quorum-state file's CurrentVoters is a committed
                               configuration (or the bootstrap voters)
  NoVoteForNonVoter            a voter grants its vote only to a voter of its own log
  BootstrapAssignmentCommittedFirst  a replica whose HWM passed a record holds the bootstrap
                               VoterAssignment as its first record and has persisted a
                               committed assignment (quorum-state AppliedOffset > 0): a restart
                               never needs quorum.voters again (draft "Bootstrapping Procedure")
"""

from __future__ import annotations

from refimpl.kraft.invariants import INVARIANTS as KRAFT_INVARIANTS, KRaftMonitor
from refimpl.kraft.log import VoterAssignment
from refimpl.kraft.quorum import holds_majority
from refimpl.kraft.reassign import committed_voters, symmetric_difference, voters_from_log
from refimpl.kraft.state import NodeState, Role
from refimpl.sim.protocol import Violation, World

__all__ = ["ReassignMonitor", "INVARIANTS", "CHANGE_ACTIONS"]

INVARIANTS = KRAFT_INVARIANTS + (
    "ElectionSafety", "CommittedOnVoterMajority", "VoterSetFollowsLog", "SingleMemberChanges",
    "QuorumStateHoldsCommittedVoters", "NoVoteForNonVoter", "MembershipChangeAfterEpochCommit",
    "BootstrapAssignmentCommittedFirst",
)

# refimpl actions that append a VoterAssignment changing CurrentVoters
CHANGE_ACTIONS = frozenset({"AddVoter", "RemoveVoter"})


class ReassignMonitor(KRaftMonitor):
    names = INVARIANTS

    def __init__(self, bootstrap: tuple[str, ...], nodes: tuple[str, ...],
                 cluster_of: dict[str, str | None] | None = None, action_names=None):
        super().__init__(bootstrap, nodes, cluster_of)
        self.bootstrap = tuple(bootstrap)
        self.leader_of: dict[int, str] = {}
        self._voted: dict[str, tuple[int, str | None]] = {}
        self._configs: set[tuple[str, ...]] = {self.bootstrap}
        self._configs_upto = 0
        # spec action name -> refimpl action names (the trace names steps by the spec)
        self._change_actions = frozenset(action_names or CHANGE_ACTIONS)

    # ---- KIP-595 checks, majorities over the committing leader's voter set
    def _majority_holds(self, world: World, hist, why: str, start: int = 0) -> list[Violation]:
        if not why.startswith("the committed history grew"):
            return []   # after a truncation: the committed prefix check covers it
        committed = hist.ghost_committed
        leaders = [world.states[n] for n in self.nodes
                   if world.states[n].role is Role.LEADER
                   and world.states[n].high_watermark >= len(committed)]
        if not leaders:
            return []
        ls = max(leaders, key=lambda x: x.epoch)
        voters = ls.voter_set or self.bootstrap
        logs = [world.states[v].log for v in voters]
        for k in range(start, len(committed)):
            rec = committed[k][0]
            holders = sum(1 for log in logs if len(log) > k and log[k] == rec)
            if not holds_majority(holders, len(voters)):
                return [Violation("CommittedOnVoterMajority",
                                  f"{ls.node_id} committed offset {k} ({rec}) held by only "
                                  f"{holders} of its voters {list(voters)}")]
        return []

    def _committed_configs(self, hist) -> set:
        gc = hist.ghost_committed
        for r, _ in gc[self._configs_upto:]:
            if isinstance(r.control, VoterAssignment):
                self._configs.add(r.control.current_voters)
        self._configs_upto = len(gc)
        return self._configs

    def check(self, world: World, action: str, node: str | None) -> list[Violation]:
        out = [v for v in super().check(world, action, node)
               if v.invariant != "AtMostOneLeaderPerEpoch"]
        hist = world.history.get("kraft")
        nodes = self.nodes if node is None else (node,)
        for n in nodes:
            out += self._check_reassign(world, n, world.states[n], action, hist)
        return out

    def _check_reassign(self, world: World, node: str, s: NodeState, action: str,
                        hist) -> list[Violation]:
        out: list[Violation] = []
        if s.role is Role.SHUTDOWN:
            return out
        if s.role is Role.LEADER:
            first = self.leader_of.setdefault(s.epoch, node)
            if first != node:
                out.append(Violation("ElectionSafety",
                                     f"{first} and {node} both led epoch {s.epoch}"))
        want = voters_from_log(s.log, self.bootstrap)
        if min(s.high_watermark, len(s.log)) > 0 and (
                not isinstance(s.log[0].control, VoterAssignment)
                or s.log[0].control.current_voters != tuple(sorted(self.bootstrap))
                or s.log[0].control.target_voters or not s.qs_offset):
            out.append(Violation("BootstrapAssignmentCommittedFirst",
                                 f"{node} has committed records (HWM {s.high_watermark}) but "
                                 "its first record is not the bootstrap VoterAssignment or its "
                                 f"quorum-state holds none (AppliedOffset {s.qs_offset})"))
        if s.qs_voters is not None and hist is not None:
            if tuple(s.qs_voters) not in self._committed_configs(hist):
                out.append(Violation("QuorumStateHoldsCommittedVoters",
                                     f"{node}'s quorum-state holds voters {list(s.qs_voters)}, "
                                     "never committed"))
        if s.voter_set is not None and s.voter_set != want:
            out.append(Violation("VoterSetFollowsLog",
                                 f"{node} acts on voters {list(s.voter_set)} but its log says "
                                 f"{list(want)}"))
        if s.role is Role.LEADER and action in self._change_actions:
            done = committed_voters(s.log, s.high_watermark, self.bootstrap)[0]
            hwm = s.high_watermark
            if not (0 < hwm <= len(s.log) and s.log[hwm - 1].epoch == s.epoch):
                out.append(Violation("MembershipChangeAfterEpochCommit",
                                     f"{node}, leader of epoch {s.epoch}, changed the voters "
                                     f"with no record of its epoch committed (HWM {hwm})"))
            if symmetric_difference(want, done) > 1:
                out.append(Violation("SingleMemberChanges",
                                     f"{node} appended voters {list(want)} while {list(done)} "
                                     "is the latest committed voter set"))
        last = self._voted.get(node)
        cur = (s.epoch, s.voted_id)
        if last != cur:
            self._voted[node] = cur
            if (s.voted_id is not None and s.voted_id != node
                    and s.voted_id not in (s.voter_set or want)):
                out.append(Violation("NoVoteForNonVoter",
                                     f"{node} voted for {s.voted_id} in epoch {s.epoch}, not "
                                     f"a voter of its log {list(s.voter_set or want)}"))
        return out
