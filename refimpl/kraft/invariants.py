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
  NoCorrectReplicaShutDown  a replica with the quorum's clusterId is never stopped by a
                            clusterId error
  HighWatermarkMonotonic    a replica's HWM only decreases on Restart or LoseDisk (to 0)
  KnownLeadersAgree         two replicas that know a leader of the same epoch know the same one
  KnownLeaderIsLeader       a known leader of epoch e is still in e knowing itself as its leader,
                            or has moved on to a later epoch (a leader that lost its disk is
                            exempt for the epochs it had reached: the spec does not check this
                            invariant with disk loss, KnownLeaderWasElected holds instead)
  LeaderHoldsItsLeaderChange  a leader's log holds its own LeaderChange record as the first
                            record of its epoch
  EndOffsetsAreCommonPrefixes  the end offset a leader records for a voter of its epoch is a
                            true common prefix of the two logs
  ElectionSafety            KRaftHistory.tla: no two replicas ever led the same epoch (the
                            monitor keeps the spec's ghost map epoch -> leaders)

A replica stopped by a fatal error instead of truncating below its HWM (NodeState.fatal_error,
KIP-595 "FetchResponse Handling" step 2 as Kafka enforces it) is reported as
HighWatermarkWithinLog: the truncation it refused would have left HWM > log end offset.
"""

from __future__ import annotations

from bisect import bisect_right

from refimpl.kraft.quorum import holds_majority
from refimpl.kraft.view_invariants import ViewMonitor
from refimpl.kraft.spec_mapping import RESTART_ACTIONS
from refimpl.kraft.state import NodeState, Role
from refimpl.sim.protocol import Monitor, Violation, World

__all__ = ["KRaftMonitor", "INVARIANTS"]

INVARIANTS = (
    "AtMostOneLeaderPerEpoch", "LogMatching", "LeaderCompleteness", "NoCommittedRecordLost",
    "HighWatermarkWithinLog", "NoDoubleVote", "ClusterIdIsolation", "NoCorrectReplicaShutDown",
    "HighWatermarkMonotonic", "KnownLeadersAgree", "KnownLeaderIsLeader",
    "LeaderHoldsItsLeaderChange", "EndOffsetsAreCommonPrefixes", "ElectionSafety",
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
        self.quorum_clusters = {c for c in ids if holds_majority(ids.count(c), len(voters))}
        self.last_hwm: dict[str, int] = {}
        self._seen: dict[str, NodeState] = {}
        self._votes: dict[tuple[str, int], str] = {}
        self._checked_votes = 0
        self._checked_commits = 0
        self._ctup: tuple = ()
        self._cepochs: list[int] = []
        self._epochs_sorted = True
        self._views = ViewMonitor(voters, nodes)

    def check(self, world: World, action: str, node: str | None) -> list[Violation]:
        out: list[Violation] = []
        hist = world.history.get("kraft")
        if hist is not None:
            out += self._history(world, hist)
        if node is None:
            if action == "Init":
                for n in self.nodes:
                    out += self._check_node(world, n, world.states[n], action, hist)
                    out += self._views.check(world, n, action)
            return out
        s = world.states[node]
        if self._seen.get(node) is not s or action in RESTART_ACTIONS:
            out += self._check_node(world, node, s, action, hist)
        out += self._views.check(world, node, action)
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
            start = self._checked_commits
            self._checked_commits = len(hist.ghost_committed)
            out += self._majority_holds(world, hist, "the committed history grew", start)
        return out

    def _majority_holds(self, world: World, hist, why: str, start: int = 0) -> list[Violation]:
        """Offsets start.. of the committed history are each held by a majority of voters.
        (Offsets below `start` were checked before and only a truncation can change them.)"""
        committed = hist.ghost_committed
        logs = [world.states[v].log for v in self.voters]
        for k in range(start, len(committed)):
            rec = committed[k][0]
            holders = sum(1 for log in logs if len(log) > k and log[k] == rec)
            if not holds_majority(holders, len(self.voters)):
                return [Violation("NoCommittedRecordLost",
                                  f"{why}: committed record at offset {k} ({rec}) is held by "
                                  f"only {holders} of {len(self.voters)} voters")]
        return []

    def _committed_records(self, committed) -> tuple:
        """The committed records as a tuple (extended incrementally)."""
        if len(self._ctup) != len(committed):
            self._ctup = self._ctup + tuple(r for r, _ in committed[len(self._ctup):])
            self._cepochs.extend(e for _, e in committed[len(self._cepochs):])
            self._epochs_sorted = all(self._cepochs[i] <= self._cepochs[i + 1]
                                      for i in range(len(self._cepochs) - 1))
        return self._ctup

    def _committed_by(self, committed, epoch: int) -> int | None:
        """How many committed records were committed in an epoch <= `epoch` (a prefix when
        commit epochs are non-decreasing, the normal case); None otherwise."""
        if not self._epochs_sorted:
            return None
        return bisect_right(self._cepochs, epoch)

    @staticmethod
    def _first_change(old: tuple, new: tuple) -> int:
        n = min(len(old), len(new))
        if old[:n] == new[:n]:
            return n
        return next(i for i in range(n) if old[i] != new[i])

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
        if hwm < last and not (action in RESTART_ACTIONS and hwm == 0):
            out.append(Violation("HighWatermarkMonotonic",
                                 f"{node}: high watermark went from {last} to {hwm}"))
        self.last_hwm[node] = hwm
        if hwm > len(s.log):
            out.append(Violation("HighWatermarkWithinLog",
                                 f"{node}: high watermark {hwm} > log end offset {len(s.log)}"))
        if s.fatal_error is not None and (prev is None or prev.fatal_error is None):
            # the replica stopped rather than truncate below its HWM (Kafka's fatal error):
            # the truncation it refused would have left HWM > log end offset
            out.append(Violation("HighWatermarkWithinLog", f"{node} stopped: {s.fatal_error}"))
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
        # NoCorrectReplicaShutDown (KIP-595r "Cluster Bootstrapping")
        if s.role is Role.SHUTDOWN and s.fatal_error is None and (
                prev is None or prev.role is not Role.SHUTDOWN) and (
                not self.quorum_clusters or mine in self.quorum_clusters):
            out.append(Violation("NoCorrectReplicaShutDown",
                                 f"{node} ({mine}) has the quorum's clusterId but was shut down "
                                 "by a clusterId error"))
        log = s.log
        log_changed = prev is None or prev.log is not log
        if hist is not None:
            committed = hist.ghost_committed
            ctup = self._committed_records(committed)
            # NoCommittedRecordLost, second half: the committed prefix is the history
            upto = min(hwm, len(log))
            if log_changed or prev.high_watermark != hwm:
                if upto > len(committed):
                    out.append(Violation("NoCommittedRecordLost",
                                         f"{node}: high watermark {hwm} is beyond the "
                                         f"{len(committed)} records any leader committed"))
                elif log[:upto] != ctup[:upto]:
                    k = next(i for i in range(upto) if log[i] != ctup[i])
                    out.append(Violation(
                        "NoCommittedRecordLost",
                        f"{node}: record at offset {k} below its high watermark is "
                        f"{log[k]}, but {ctup[k]} was committed"))
            # LeaderCompleteness
            if s.role is Role.LEADER and (log_changed or prev.role is not Role.LEADER):
                need = self._committed_by(committed, s.epoch)
                if need is None:  # commit epochs out of order (a planted bug): check each
                    need = [k for k, (_, e) in enumerate(committed) if e <= s.epoch]
                    bad = next((k for k in need if k >= len(log) or log[k] != ctup[k]), None)
                elif len(log) < need or log[:need] != ctup[:need]:
                    bad = next((k for k in range(need) if k >= len(log) or log[k] != ctup[k]), None)
                else:
                    bad = None
                if bad is not None:
                    out.append(Violation("LeaderCompleteness",
                                         f"{node}, leader of epoch {s.epoch}, lacks the record "
                                         f"committed at offset {bad} in epoch {committed[bad][1]}"))
            # NoCommittedRecordLost, first half, after a truncation
            if (prev is not None and log_changed and node in self.voters
                    and (len(log) < len(prev.log) or log[:len(prev.log)] != prev.log)):
                out += self._majority_holds(world, hist, f"after {node} truncated its log",
                                            self._first_change(prev.log, log))
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
