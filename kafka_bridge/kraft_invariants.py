"""The online invariants of spec/KRaft.tla, as pure functions over decoded spec STATES.

The refimpl's monitor (refimpl/kraft/invariants.py) checks its own NodeState objects; a run of
another implementation (Apache Kafka's raft client, driven by kafka_harness/raft) is only seen
through its projection onto the spec's variables.  Here each invariant of KRaft.tla's INVARIANTS
(and the action property HighWatermarkMonotonic, and KRaftHistory.tla's ElectionSafety) is a
function of the state (a dict: variable -> canonical value, kraftcore.values) that returns why it
fails, or None; the names and meanings are the spec's, the same the refimpl's footers use, so the
two implementations' footers compare.  The quorum rule is the refimpl's (refimpl.kraft.quorum).

  AtMostOneLeaderPerEpoch, LogMatching, LeaderCompleteness, NoCommittedRecordLost,
  HighWatermarkWithinLog, NoDoubleVote, ClusterIdIsolation, NoCorrectReplicaShutDown,
  KnownLeadersAgree, KnownLeaderIsLeader, LeaderHoldsItsLeaderChange,
  EndOffsetsAreCommonPrefixes      state invariants (KRaft.tla "INVARIANTS")
  HighWatermarkMonotonic           action property: a replica's HWM only drops to 0, in a
                                   Restart / LoseDisk step of that replica
  ElectionSafety                   KRaftHistory.tla: no two replicas ever led the same epoch

History the state does not hold (ElectionSafety's ghost map of leaders, the epochs a replica had
reached before it lost its disk) is kept by `StateMonitor`, which also skips an invariant when
none of the variables it reads changed in the step (the result would be the same).

Liveness (`stable_leader`, `Recovery`): after the faults stop, a leader a majority of the voters
follows has committed a record of its epoch and every other replica follows it with a high
watermark at least the leader's when that leader was first so: the refimpl's
`KRaftAdapter.recovered` (Kafka's RaftEventSimulationTest: hasConsistentLeader and
allReachedHighWatermark), judged on the projected states.  The spec has no "up" variable: a
crashed replica shows its last state until its Restart step (as in the spec).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kraftcore.values import Fn
from refimpl.kraft.quorum import holds_majority
from refimpl.kraft.spec_mapping import LEADER_CHANGE, NIL, RESTART_ACTIONS

__all__ = ["INVARIANTS", "STATE_INVARIANTS", "READS", "StateMonitor", "stable_leader",
           "Recovery", "cluster_of_constants", "type_problem", "StateTypeError"]

State = Mapping[str, object]


class StateTypeError(ValueError):
    """A projected state without the spec's types (a harness / projection defect)."""

    def __init__(self, variable: str, why: str):
        super().__init__(f"{variable}: {why}")
        self.variable, self.why = variable, why
LEADER, SHUTDOWN = "Leader", "Shutdown"


# --------------------------------------------------------------------------- helpers

def _servers(s: State) -> list[str]:
    return sorted(s["currentEpoch"])


def _log_matching(a: tuple, b: tuple) -> tuple[bool, int]:
    """The largest offset where both logs hold a record of the same epoch; the logs must be
    identical up to there (refimpl.kraft.invariants._log_matching, on spec records)."""
    for i in range(min(len(a), len(b)) - 1, -1, -1):
        if a[i]["epoch"] == b[i]["epoch"]:
            return a[:i + 1] == b[:i + 1], i
    return True, -1


def _entries(s: State) -> tuple:
    return tuple(c["entry"] for c in s["ghostCommitted"])


def _quorum_clusters(cluster_of: Mapping[str, str], voters: tuple[str, ...]) -> set[str]:
    ids = [cluster_of.get(v) for v in voters]
    return {c for c in ids if holds_majority(ids.count(c), len(voters))}


def cluster_of_constants(constants: Mapping, servers: list[str]) -> dict[str, str]:
    """The spec's ClusterOf from a run's constants: `ClusterOf` when given as a map, else
    MCKRaft's MCClusterOf (cluster-B for the MisconfiguredServers, cluster-A for the others)."""
    given = constants.get("ClusterOf")
    if isinstance(given, Mapping):
        return {n: str(given.get(n, "cluster-A")) for n in servers}
    bad = set(constants.get("MisconfiguredServers") or ())
    return {n: "cluster-B" if n in bad else "cluster-A" for n in servers}


@dataclass(frozen=True)
class Context:
    """The constants the invariants read."""

    voters: tuple[str, ...]
    cluster_of: Mapping[str, str]

    @property
    def quorum_clusters(self) -> set[str]:
        return _quorum_clusters(self.cluster_of, self.voters)


# --------------------------------------------------------------------------- types

ROLES = frozenset({"Unattached", "Voted", "Candidate", "Leader", "Follower", "Resigned",
                   "Shutdown"})


def _is_int(x) -> bool:
    return type(x) is int


def _is_record(r) -> bool:
    return isinstance(r, Fn) and set(r) == {"epoch", "value"} and _is_int(r["epoch"]) \
        and isinstance(r["value"], str)


def _is_log(x) -> bool:
    return isinstance(x, tuple) and all(_is_record(r) for r in x)


def _is_ids(x) -> bool:
    return isinstance(x, frozenset) and all(isinstance(i, str) for i in x)


# per-replica variable -> the type of one replica's value (KRaft.tla TypeOK, without bounds)
_PER_NODE: dict[str, Callable[[object], bool]] = {
    "currentEpoch": lambda x: _is_int(x) and x >= 0,
    "votedId": lambda x: isinstance(x, str),
    "leaderId": lambda x: isinstance(x, str),
    "log": _is_log,
    "role": lambda x: x in ROLES,
    "highWatermark": lambda x: _is_int(x) and x >= 0,
    "votesGranted": _is_ids,
    "votesRejected": _is_ids,
    "followerEndOffset": lambda x: isinstance(x, Fn) and all(_is_int(v) for v in x.values()),
    "fetchedSinceCheck": _is_ids,
    "ghostVotes": _is_ids,
}


def type_problem(s: State, servers: tuple[str, ...], voters: tuple[str, ...],
                 variables: Iterable[str] | None = None) -> tuple[str, str] | None:
    """(variable, why) when a decoded state does not have the spec's types (TypeOK's shape:
    the invariants read it), or None; only `variables` are checked when given."""
    for var in (variables if variables is not None else s):
        v = s[var]
        if var in _PER_NODE:
            if not isinstance(v, Fn) or set(v) != set(servers):
                return var, f"expected a function of the servers {', '.join(servers)}"
            bad = next((n for n in servers if not _PER_NODE[var](v[n])), None)
            if bad is not None:
                return f"{var}.{bad}", "not of the spec's type"
            if var == "followerEndOffset" and any(set(v[n]) != set(voters) for n in servers):
                return var, f"expected a function of the voters {', '.join(voters)} per server"
        elif var == "ghostCommitted":
            if not isinstance(v, tuple) or not all(
                    isinstance(c, Fn) and set(c) == {"entry", "epoch"} and _is_record(c["entry"])
                    and _is_int(c["epoch"]) for c in v):
                return var, "expected a sequence of [entry |-> record, epoch |-> e]"
        elif var == "restartCount":
            if not (_is_int(v) and v >= 0):
                return var, "expected a natural number"
        elif var == "msgs":
            if not (v == () or isinstance(v, Fn) and all(
                    isinstance(m, Fn) and _is_int(c) and c > 0 for m, c in v.items())):
                return var, "expected a bag of message records"
    return None


# --------------------------------------------------------------------------- state invariants
# Each: (state, context) -> why it fails, or None.

def at_most_one_leader_per_epoch(s: State, c: Context) -> str | None:
    seen: dict[int, str] = {}
    for i in _servers(s):
        if s["role"][i] == LEADER:
            e = s["currentEpoch"][i]
            if e in seen:
                return f"{seen[e]} and {i} are both leader of epoch {e}"
            seen[e] = i
    return None


def log_matching(s: State, c: Context) -> str | None:
    ns = _servers(s)
    for x, i in enumerate(ns):
        for j in ns[x + 1:]:
            ok, k = _log_matching(s["log"][i], s["log"][j])
            if not ok:
                return (f"{i} and {j} both hold an epoch-{s['log'][i][k]['epoch']} record at "
                        f"offset {k} but their logs differ before it")
    return None


def leader_completeness(s: State, c: Context) -> str | None:
    committed = s["ghostCommitted"]
    for i in _servers(s):
        if s["role"][i] != LEADER:
            continue
        log, e = s["log"][i], s["currentEpoch"][i]
        for k, rec in enumerate(committed):
            if rec["epoch"] <= e and (k >= len(log) or log[k] != rec["entry"]):
                return (f"{i}, leader of epoch {e}, lacks the record committed at offset {k} "
                        f"in epoch {rec['epoch']}")
    return None


def no_committed_record_lost(s: State, c: Context) -> str | None:
    entries = _entries(s)
    logs = [s["log"][v] for v in c.voters]
    for k, rec in enumerate(entries):
        holders = sum(1 for log in logs if len(log) > k and log[k] == rec)
        if not holds_majority(holders, len(c.voters)):
            return (f"committed record at offset {k} ({_rec(rec)}) is held by only {holders} "
                    f"of {len(c.voters)} voters")
    for i in _servers(s):
        log = s["log"][i]
        upto = min(s["highWatermark"][i], len(log))
        if upto > len(entries):
            return (f"{i}: high watermark {s['highWatermark'][i]} is beyond the "
                    f"{len(entries)} records any leader committed")
        if log[:upto] != entries[:upto]:
            k = next(k for k in range(upto) if log[k] != entries[k])
            return (f"{i}: record at offset {k} below its high watermark is {_rec(log[k])}, "
                    f"but {_rec(entries[k])} was committed")
    return None


def high_watermark_within_log(s: State, c: Context) -> str | None:
    for i in _servers(s):
        if s["highWatermark"][i] > len(s["log"][i]):
            return (f"{i}: high watermark {s['highWatermark'][i]} > log end offset "
                    f"{len(s['log'][i])}")
    return None


def no_double_vote(s: State, c: Context) -> str | None:
    for i in _servers(s):
        votes = s["ghostVotes"][i]
        if len(votes) > 1:
            return f"{i} voted for {' and '.join(sorted(votes))} in epoch {s['currentEpoch'][i]}"
    return None


def cluster_id_isolation(s: State, c: Context) -> str | None:
    quorum = c.quorum_clusters
    for i in _servers(s):
        mine = c.cluster_of.get(i)
        for other in (s["votedId"][i], s["leaderId"][i]):
            if other != NIL and c.cluster_of.get(other) != mine:
                return f"{i} ({mine}) votes for / follows {other} ({c.cluster_of.get(other)})"
        if mine not in quorum and s["log"][i]:
            return f"{i} ({mine}) obtained records of another cluster"
    return None


def no_correct_replica_shut_down(s: State, c: Context) -> str | None:
    quorum = c.quorum_clusters
    for i in _servers(s):
        if c.cluster_of.get(i) in quorum and s["role"][i] == SHUTDOWN:
            return f"{i} ({c.cluster_of.get(i)}) has the quorum's clusterId but was shut down"
    return None


def known_leaders_agree(s: State, c: Context) -> str | None:
    known: dict[int, tuple[str, str]] = {}
    for i in _servers(s):
        lid = s["leaderId"][i]
        if lid == NIL:
            continue
        e = s["currentEpoch"][i]
        if e in known and known[e][1] != lid:
            return (f"{known[e][0]} knows {known[e][1]} and {i} knows {lid} as the leader of "
                    f"epoch {e}")
        known.setdefault(e, (i, lid))
    return None


def known_leader_is_leader(s: State, c: Context,
                           wiped_in: Callable[[str, int], bool] = lambda n, e: False) -> str | None:
    """`wiped_in(l, e)`: l lost its disk after reaching epoch e (exempt, as in the spec, which
    checks KnownLeaderWasElected instead with disk loss; refimpl/kraft/view_invariants.py)."""
    ep, lead = s["currentEpoch"], s["leaderId"]
    for i in _servers(s):
        l = lead[i]
        if l == NIL or l not in ep or wiped_in(l, ep[i]):
            continue
        if not (ep[l] > ep[i] or (ep[l] == ep[i] and lead[l] == l)):
            return (f"{i} knows {l} as the leader of epoch {ep[i]}, but {l} is in epoch "
                    f"{ep[l]} knowing {lead[l]} as its leader")
    return None


def leader_holds_its_leader_change(s: State, c: Context) -> str | None:
    for i in _servers(s):
        if s["role"][i] != LEADER:
            continue
        e = s["currentEpoch"][i]
        first = next((r for r in s["log"][i] if r["epoch"] >= e), None)
        if first is None or first["epoch"] != e or first["value"] != LEADER_CHANGE:
            return (f"{i}, leader of epoch {e}, has no LeaderChange record as the first record "
                    "of its epoch")
    return None


def end_offsets_are_common_prefixes(s: State, c: Context) -> str | None:
    ep, logs = s["currentEpoch"], s["log"]
    for i in _servers(s):
        if s["role"][i] != LEADER:
            continue
        for v in c.voters:
            if v == i or ep[v] != ep[i]:
                continue
            o = s["followerEndOffset"][i][v]
            if o > len(logs[v]) or o > len(logs[i]):
                return (f"{i}, leader of epoch {ep[i]}, records end offset {o} for {v}, whose "
                        f"log has {len(logs[v])} records (the leader's {len(logs[i])})")
            if o > 0 and logs[v][:o] != logs[i][:o]:
                k = next(k for k in range(o) if logs[v][k] != logs[i][k])
                return (f"{i}, leader of epoch {ep[i]}, records end offset {o} for {v}, but "
                        f"their logs differ at offset {k}")
    return None


def _rec(r) -> str:
    return f"[epoch {r['epoch']}, {r['value']}]"


# name -> (function, the variables it reads): an invariant is re-evaluated only in a step that
# changed one of them
STATE_INVARIANTS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "AtMostOneLeaderPerEpoch": (at_most_one_leader_per_epoch, ("role", "currentEpoch")),
    "LogMatching": (log_matching, ("log",)),
    "LeaderCompleteness": (leader_completeness,
                           ("role", "log", "currentEpoch", "ghostCommitted")),
    "NoCommittedRecordLost": (no_committed_record_lost,
                              ("log", "highWatermark", "ghostCommitted")),
    "HighWatermarkWithinLog": (high_watermark_within_log, ("log", "highWatermark")),
    "NoDoubleVote": (no_double_vote, ("ghostVotes",)),
    "ClusterIdIsolation": (cluster_id_isolation, ("votedId", "leaderId", "log")),
    "NoCorrectReplicaShutDown": (no_correct_replica_shut_down, ("role",)),
    "KnownLeadersAgree": (known_leaders_agree, ("currentEpoch", "leaderId")),
    "KnownLeaderIsLeader": (known_leader_is_leader, ("currentEpoch", "leaderId")),
    "LeaderHoldsItsLeaderChange": (leader_holds_its_leader_change,
                                   ("role", "currentEpoch", "log")),
    "EndOffsetsAreCommonPrefixes": (end_offsets_are_common_prefixes,
                                    ("role", "currentEpoch", "log", "followerEndOffset")),
}
# the same names, in the same order, as the refimpl's monitor (refimpl.kraft.invariants)
INVARIANTS = (
    "AtMostOneLeaderPerEpoch", "LogMatching", "LeaderCompleteness", "NoCommittedRecordLost",
    "HighWatermarkWithinLog", "NoDoubleVote", "ClusterIdIsolation", "NoCorrectReplicaShutDown",
    "HighWatermarkMonotonic", "KnownLeadersAgree", "KnownLeaderIsLeader",
    "LeaderHoldsItsLeaderChange", "EndOffsetsAreCommonPrefixes", "ElectionSafety",
)
READS = {n: r for n, (_, r) in STATE_INVARIANTS.items()}


def high_watermark_monotonic(prev: State, s: State, action: str, node: str | None) -> str | None:
    """KRaft.tla HighWatermarkMonotonic: highWatermark'[i] < highWatermark[i] only as
    highWatermark'[i] = 0 in a restart step of i itself (Restart / LoseDisk)."""
    for i in _servers(s):
        a, b = prev["highWatermark"][i], s["highWatermark"][i]
        if b < a and not (b == 0 and action in RESTART_ACTIONS and node in (None, i)):
            return f"{i}: high watermark went from {a} to {b} in a {action} step"
    return None


# --------------------------------------------------------------------------- the monitor

@dataclass
class StateMonitor:
    """Every invariant above, after every step of one run.  `check` returns [(name, detail)]."""

    voters: tuple[str, ...]
    cluster_of: Mapping[str, str]
    servers: tuple[str, ...] = ()      # every replica (voters and observers); () = as at Init
    ghost_leaders: dict[int, set[str]] = field(default_factory=dict)
    wiped: dict[str, int] = field(default_factory=dict)   # node -> largest epoch before a LoseDisk
    _prev: State | None = None

    names = INVARIANTS

    def check(self, s: State, action: str, node: str | None,
              changed: set[str] | None = None) -> list[tuple[str, str]]:
        """The invariants violated in state `s`, reached by `action` of `node`; `changed`: the
        variables the step changed (None: all, as at Init)."""
        bad = type_problem(s, self.servers or tuple(sorted(s["currentEpoch"])), self.voters,
                           changed)
        if bad is not None:
            raise StateTypeError(*bad)
        ctx = Context(self.voters, self.cluster_of)
        prev = self._prev
        if action == "LoseDisk" and node is not None and prev is not None:
            self.wiped[node] = max(self.wiped.get(node, 0), prev["currentEpoch"][node])
        out: list[tuple[str, str]] = []
        for name, (fn, reads) in STATE_INVARIANTS.items():
            # unchanged inputs give the same result as in the step before (already reported)
            if changed is not None and changed.isdisjoint(reads) and not (
                    name == "KnownLeaderIsLeader" and action == "LoseDisk"):
                continue
            why = fn(s, ctx, self._wiped_in) if name == "KnownLeaderIsLeader" else fn(s, ctx)
            if why is not None:
                out.append((name, why))
        if prev is not None:
            why = high_watermark_monotonic(prev, s, action, node)
            if why:
                out.append(("HighWatermarkMonotonic", why))
        for i in _servers(s):                       # ElectionSafety (KRaftHistory.tla)
            if s["role"][i] == LEADER:
                led = self.ghost_leaders.setdefault(s["currentEpoch"][i], set())
                if i not in led:
                    led.add(i)
                    if len(led) > 1:
                        out.append(("ElectionSafety", f"{' and '.join(sorted(led))} both led "
                                                      f"epoch {s['currentEpoch'][i]}"))
        self._prev = s
        return out

    def _wiped_in(self, node: str, epoch: int) -> bool:
        return node in self.wiped and epoch <= self.wiped[node]


# --------------------------------------------------------------------------- liveness

def stable_leader(s: State, voters: tuple[str, ...]) -> str | None:
    """The leader a majority of the voters follows (it included: same epoch, same leaderId),
    or None (refimpl.kraft.adapter.KRaftAdapter._stable_leader on the spec state)."""
    ep, lead = s["currentEpoch"], s["leaderId"]
    for lid in voters:
        if s["role"][lid] != LEADER:
            continue
        n = sum(1 for v in voters if v == lid or (ep[v] == ep[lid] and lead[v] == lid))
        if holds_majority(n, len(voters)):
            return lid
    return None


@dataclass
class Recovery:
    """KIP-595's quorum recovered (refimpl.kraft.adapter.KRaftAdapter.recovered on the spec
    state): a stable leader has committed a record of its epoch (its HWM is past the epoch's
    first record, the LeaderChange) and every other replica not stopped for good follows it in
    its epoch with a HWM at least the leader's when it first was so (the target is fixed then:
    the workload keeps appending; a change of leader sets a new one)."""

    voters: tuple[str, ...]
    _target: tuple | None = None

    def recovered(self, s: State) -> bool:
        lid = stable_leader(s, self.voters)
        if lid is None:
            self._target = None
            return False
        e, log, hwm = s["currentEpoch"][lid], s["log"][lid], s["highWatermark"][lid]
        start = next((k for k, r in enumerate(log) if r["epoch"] >= e), len(log))
        if hwm <= start:
            return False
        if self._target is None or self._target[:2] != (lid, e):
            self._target = (lid, e, hwm)
        return all(n == lid or s["role"][n] == SHUTDOWN
                   or (s["currentEpoch"][n] == e and s["leaderId"][n] == lid
                       and s["highWatermark"][n] >= self._target[2])
                   for n in _servers(s))
