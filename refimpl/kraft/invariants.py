"""Online invariants of KIP-595, checked by the simulator after every step.

The names and meanings are those of spec/KRaft.tla's INVARIANTS and its action property
HighWatermarkMonotonic.  The history they need (committed records, votes cast) is the spec's
ghost variables, kept by the adapter in world.history["kraft"] (spec_mapping.History).

Only the node that acted in a step can have changed, so each check looks at that node (against
the history and the other nodes), which keeps the cost per step small; at Init every node is
checked.

  AtMostOneLeaderPerEpoch   no two replicas are leader of the same epoch at the same time
  LogMatching               two logs with a record of the same epoch at the same offset are
                            identical up to that offset
  LeaderCompleteness        a leader holds every record committed in its epoch or earlier
  NoCommittedRecordLost     every committed record is on a majority of the voters, and every
                            replica's committed prefix (below its HWM) is the committed history
  HighWatermarkWithinLog    a replica's HWM never exceeds its log end offset
  NoDoubleVote              no replica votes for two candidates in one epoch
  ClusterIdIsolation        a replica never votes for / follows a replica of another cluster,
                            and a replica outside the quorum's cluster keeps an empty log
  HighWatermarkMonotonic    a replica's HWM only decreases on Restart (to 0)
"""

from __future__ import annotations

from refimpl.kraft.state import NodeState, Role
from refimpl.sim.protocol import Monitor, Violation, World

__all__ = ["KRaftMonitor", "INVARIANTS"]

INVARIANTS = (
    "AtMostOneLeaderPerEpoch", "LogMatching", "LeaderCompleteness", "NoCommittedRecordLost",
    "HighWatermarkWithinLog", "NoDoubleVote", "ClusterIdIsolation", "HighWatermarkMonotonic",
)


def _log_matching(a: tuple, b: tuple) -> tuple[bool, int]:
    """Find the largest offset where both logs hold a record of the same epoch; the logs must
    be identical up to there.  Returns (ok, offset)."""
    for i in range(min(len(a), len(b)) - 1, -1, -1):
        if a[i].epoch == b[i].epoch:
            return a[:i + 1] == b[:i + 1], i
    return True, -1


class KRaftMonitor(Monitor):
    names = INVARIANTS

    def __init__(self, voters: tuple[str, ...], nodes: tuple[str, ...],
                 cluster_of: dict[str, str | None] | None = None):
        self.voters = voters
        self.nodes = nodes
        self.cluster_of = cluster_of or {n: None for n in nodes}
        ids = [self.cluster_of.get(v) for v in voters]
        self.quorum_clusters = {c for c in ids if ids.count(c) * 2 > len(voters)}
        self.last_hwm: dict[str, int] = {}
        self._seen: dict[str, NodeState] = {}
        self._votes: dict[tuple[str, int], str] = {}
        self._checked_votes = 0
        self._checked_commits = 0

    def check(self, world: World, action: str, node: str | None) -> list[Violation]:
        out: list[Violation] = []
        hist = world.history.get("kraft")
        if hist is not None:
            out += self._history(world, hist)
        if node is None:
            if action == "Init":
                for n in self.nodes:
                    out += self._check_node(world, n, world.states[n], action, hist)
            return out
        s = world.states[node]
        if self._seen.get(node) is not s or action == "Restart":
            out += self._check_node(world, node, s, action, hist)
        return out

    def _history(self, world: World, hist) -> list[Violation]:
        out = []
        # NoDoubleVote over the ghost votes
        if len(hist.ghost_votes) != self._checked_votes:
            for v, e, c in hist.ghost_votes:
                first = self._votes.setdefault((v, e), c)
                if first != c:
                    out.append(Violation("NoDoubleVote",
                                         f"{v} voted for {first} and {c} in epoch {e}"))
                    break
            self._checked_votes = len(hist.ghost_votes)
        # NoCommittedRecordLost, first half, when the committed history grows
        if len(hist.ghost_committed) != self._checked_commits:
            self._checked_commits = len(hist.ghost_committed)
            out += self._majority_holds(world, hist, "the committed history grew")
        return out

    def _majority_holds(self, world: World, hist, why: str) -> list[Violation]:
        c = [r for r, _ in hist.ghost_committed]
        n = len(c)
        if not n:
            return []
        tc = tuple(c)
        for k in range(n):
            holders = sum(1 for v in self.voters
                          if len(world.states[v].log) > k and world.states[v].log[k] == tc[k])
            if holders * 2 <= len(self.voters):
                return [Violation("NoCommittedRecordLost",
                                  f"{why}: committed record at offset {k} ({tc[k]}) is held by "
                                  f"only {holders} of {len(self.voters)} voters")]
        return []

    def _check_node(self, world: World, node: str, s: NodeState, action: str, hist) -> list[Violation]:
        out: list[Violation] = []
        prev = self._seen.get(node)
        self._seen[node] = s
        # AtMostOneLeaderPerEpoch (state invariant, as in the spec)
        if s.role is Role.LEADER:
            for other in self.nodes:
                o = world.states[other]
                if other != node and o.role is Role.LEADER and o.epoch == s.epoch:
                    out.append(Violation("AtMostOneLeaderPerEpoch",
                                         f"{other} and {node} are both leader of epoch {s.epoch}"))
                    break
        # HighWatermarkMonotonic / HighWatermarkWithinLog
        hwm = s.high_watermark
        last = self.last_hwm.get(node, 0)
        if hwm < last and not (action == "Restart" and hwm == 0):
            out.append(Violation("HighWatermarkMonotonic",
                                 f"{node}: high watermark went from {last} to {hwm}"))
        self.last_hwm[node] = hwm
        if hwm > len(s.log):
            out.append(Violation("HighWatermarkWithinLog",
                                 f"{node}: high watermark {hwm} > log end offset {len(s.log)}"))
        # ClusterIdIsolation
        mine = self.cluster_of.get(node)
        if mine is not None:
            for other in (s.voted_id, s.leader_id):
                if other is not None and self.cluster_of.get(other) not in (None, mine):
                    out.append(Violation("ClusterIdIsolation",
                                         f"{node} ({mine}) votes for / follows {other} "
                                         f"({self.cluster_of.get(other)})"))
                    break
            if self.quorum_clusters and mine not in self.quorum_clusters and s.log:
                out.append(Violation("ClusterIdIsolation",
                                     f"{node} ({mine}) obtained records of another cluster"))
        log = s.log
        log_changed = prev is None or prev.log is not log
        if hist is not None:
            committed = hist.ghost_committed
            # NoCommittedRecordLost, second half: the committed prefix is the history
            upto = min(hwm, len(log))
            if log_changed or prev.high_watermark != hwm:
                if upto > len(committed):
                    out.append(Violation("NoCommittedRecordLost",
                                         f"{node}: high watermark {hwm} is beyond the "
                                         f"{len(committed)} records any leader committed"))
                else:
                    for k in range(upto - 1, -1, -1):
                        if log[k] != committed[k][0]:
                            out.append(Violation(
                                "NoCommittedRecordLost",
                                f"{node}: record at offset {k} below its high watermark is "
                                f"{log[k]}, but {committed[k][0]} was committed"))
                            break
            # LeaderCompleteness
            if s.role is Role.LEADER and (log_changed or prev.role is not Role.LEADER):
                for k, (rec, e) in enumerate(committed):
                    if e <= s.epoch and (k >= len(log) or log[k] != rec):
                        out.append(Violation("LeaderCompleteness",
                                             f"{node}, leader of epoch {s.epoch}, lacks the record "
                                             f"committed at offset {k} in epoch {e}"))
                        break
            # NoCommittedRecordLost, first half, after a truncation
            if (prev is not None and log_changed and node in self.voters
                    and (len(log) < len(prev.log) or log[:len(prev.log)] != prev.log)):
                out += self._majority_holds(world, hist, f"after {node} truncated its log")
        if not log_changed:
            return out
        # LogMatching against every other replica
        for other in self.nodes:
            if other == node:
                continue
            ok, i = _log_matching(log, world.states[other].log)
            if not ok:
                out.append(Violation("LogMatching",
                                     f"{node} and {other} both hold an epoch-{log[i].epoch} "
                                     f"record at offset {i} but their logs differ before it"))
                break
        return out
