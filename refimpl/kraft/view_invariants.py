"""The view-level invariants of spec/KRaft.tla and the historical ElectionSafety of
spec/KRaftHistory.tla, checked online by KRaftMonitor (refimpl/kraft/invariants.py).

KIP-595 "Key Concepts": "For each epoch there will be only one leader".  The replicas learn
(epoch, leader) pairs from one another (BeginQuorumEpoch, EndQuorumEpoch and the responses that
piggyback the responder's epoch and leader, "Leader Election and Data Replication" attribute 2),
so a wrong pair would spread; these checks say that none arises:

  KnownLeadersAgree            two replicas that know a leader of the same epoch know the same one
  KnownLeaderIsLeader          a known leader l of epoch e is still in e and knows itself as its
                               leader (Leader, or Resigned / restarted), or has moved to a later
                               epoch
  LeaderHoldsItsLeaderChange   "Vote Response Handling" step 3: a leader's log holds its own
                               LeaderChange record as the first record of its epoch
  EndOffsetsAreCommonPrefixes  "FetchRequest Handling" step 4: the end offset a leader records
                               for a voter of its epoch is a true common prefix of the two logs
  ElectionSafety               the historical form: no two replicas ever led the same epoch (the
                               spec's ghost map ghostLeaders, epoch -> the replicas that led it)

Only the node that acted in a step changes, so each step checks the pairs that involve it.

Disk loss (spec LoseDisk).  The spec checks these invariants with disk loss when the wiped
replica rejoins after a new leader of an epoch it never reached has committed
(kraft-deep-disk-loss-after-commit), all of them but KnownLeaderIsLeader; the simulator's
disk-loss profile follows the same rule (refimpl/kraft/adapter.py `rejoin_allowed`).  So, as
in the spec, KnownLeaderIsLeader is not checked for a replica that lost its disk as the known
leader of an epoch it had reached before (the spec checks KnownLeaderWasElected instead).
EndOffsetsAreCommonPrefixes is checked everywhere: no leader that recorded an end offset for
the replica before the loss is left when it rejoins.
"""

from __future__ import annotations

from refimpl.kraft.state import NodeState, Role
from refimpl.sim.protocol import Violation, World

__all__ = ["ViewMonitor", "VIEW_INVARIANTS"]

VIEW_INVARIANTS = ("KnownLeadersAgree", "KnownLeaderIsLeader", "LeaderHoldsItsLeaderChange",
                   "EndOffsetsAreCommonPrefixes", "ElectionSafety")


def holds_its_leader_change(s: NodeState) -> bool:
    """The first record of the leader's epoch in its log is a LeaderChange control record."""
    for r in s.log:
        if r.epoch == s.epoch:
            return r.control is not None
        if r.epoch > s.epoch:
            return False
    return False


def common_prefix_violation(leader: NodeState, voter: str, vs: NodeState) -> str | None:
    """EndOffsetsAreCommonPrefixes for one (leader, voter of its epoch) pair."""
    o = leader.follower_end_offset.get(voter, -1)
    if o > len(vs.log) or o > len(leader.log):
        return (f"{leader.node_id}, leader of epoch {leader.epoch}, records end offset {o} for "
                f"{voter}, whose log has {len(vs.log)} records (the leader's {len(leader.log)})")
    if o > 0 and vs.log[:o] != leader.log[:o]:
        k = next(i for i in range(o) if vs.log[i] != leader.log[i])
        return (f"{leader.node_id}, leader of epoch {leader.epoch}, records end offset {o} for "
                f"{voter}, but their logs differ at offset {k}")
    return None


class ViewMonitor:
    """The five checks above; `check` after a step of `node` (or for every node at Init)."""

    def __init__(self, voters: tuple[str, ...], nodes: tuple[str, ...]):
        self.voters = voters
        self.nodes = nodes
        self.ghost_leaders: dict[int, set[str]] = {}   # ElectionSafety's ghost map
        self._wiped: dict[str, int] = {}   # node -> the largest epoch it knew before a LoseDisk
        self._seen: dict[str, NodeState] = {}

    def check(self, world: World, node: str, action: str) -> list[Violation]:
        s = world.states[node]
        prev = self._seen.get(node)
        if prev is s:
            return []
        self._seen[node] = s
        if action == "LoseDisk" and prev is not None:
            self._wiped[node] = max(self._wiped.get(node, 0), prev.epoch)
        out: list[Violation] = []
        states = world.states
        # ElectionSafety (historical)
        if s.role is Role.LEADER:
            led = self.ghost_leaders.setdefault(s.epoch, set())
            led.add(node)
            if len(led) > 1:
                out.append(Violation("ElectionSafety",
                                     f"{' and '.join(sorted(led))} both led epoch {s.epoch}"))
        # KnownLeadersAgree
        if s.leader_id is not None:
            for other in self.nodes:
                o = states[other]
                if (other != node and o.epoch == s.epoch and o.leader_id is not None
                        and o.leader_id != s.leader_id):
                    out.append(Violation("KnownLeadersAgree",
                                         f"{node} knows {s.leader_id} and {other} knows "
                                         f"{o.leader_id} as the leader of epoch {s.epoch}"))
                    break
        # KnownLeaderIsLeader: node's own leader, and every replica that names node
        if s.leader_id is not None:
            bad = self._not_a_leader(states, node, s)
            if bad:
                out.append(Violation("KnownLeaderIsLeader", bad))
        for other in self.nodes:
            o = states[other]
            if other != node and o.leader_id == node:
                bad = self._not_a_leader(states, other, o)
                if bad:
                    out.append(Violation("KnownLeaderIsLeader", bad))
                    break
        # LeaderHoldsItsLeaderChange
        if s.role is Role.LEADER and not holds_its_leader_change(s):
            out.append(Violation("LeaderHoldsItsLeaderChange",
                                 f"{node}, leader of epoch {s.epoch}, has no LeaderChange record "
                                 "as the first record of its epoch"))
        # EndOffsetsAreCommonPrefixes: node as the leader, and node as a voter of a leader's epoch
        if s.role is Role.LEADER:
            for v in self.voters:
                if v != node and states[v].epoch == s.epoch:
                    bad = common_prefix_violation(s, v, states[v])
                    if bad:
                        out.append(Violation("EndOffsetsAreCommonPrefixes", bad))
                        break
        if node in self.voters:
            for other in self.nodes:
                o = states[other]
                if other != node and o.role is Role.LEADER and o.epoch == s.epoch:
                    bad = common_prefix_violation(o, node, s)
                    if bad:
                        out.append(Violation("EndOffsetsAreCommonPrefixes", bad))
                        break
        return out

    def _wiped_in(self, node: str, epoch: int) -> bool:
        """`node` lost its disk after reaching `epoch` or a later one."""
        return node in self._wiped and epoch <= self._wiped[node]

    def _not_a_leader(self, states, i: str, si: NodeState) -> str | None:
        l = si.leader_id
        if l not in states or self._wiped_in(l, si.epoch):
            return None
        sl = states[l]
        if sl.epoch > si.epoch or (sl.epoch == si.epoch and sl.leader_id == l):
            return None
        return (f"{i} knows {l} as the leader of epoch {si.epoch}, but {l} is in epoch "
                f"{sl.epoch} knowing {sl.leader_id} as its leader")
