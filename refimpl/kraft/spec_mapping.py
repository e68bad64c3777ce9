"""THE mapping from refimpl state to the variables of the TLA+ spec (spec/KRaft.tla).

This is the only module that knows the spec's variable names, value encodings and action
names; everything else in refimpl/kraft speaks Kafka.  docs/refimpl.md has the correspondence
table of actions.

Values: servers are the model values named by the node ids ("n1", ...); "no leader" / "not
voted" is the model value Nil.  Log records are [epoch |-> e, value |-> v] where v is a client
value, or the model value LeaderChange for the LeaderChange control record.  Messages are the
spec's records (type, src, dest, epoch, ...; KRaft.tla "MESSAGES"), `msgs` is a bag (a function
from message to its number of copies in flight), clusterIds are strings.

The spec's history variables come from the adapter (world.history): restartCount, and the ghost
variables ghostCommitted (Seq of [entry, epoch]) and ghostVotes ([Server -> SUBSET Server]: the
candidates each replica voted for in its current epoch, surviving restarts), maintained by
`History.after_step` exactly as the spec's actions update them.
"""

from __future__ import annotations

import json

from kraftcore.values import Fn, canonical
from refimpl.kraft.log import Record
from refimpl.kraft.messages import (
    BeginQuorumEpochRequest, BeginQuorumEpochResponse, DescribeQuorumRequest,
    DescribeQuorumResponse, EndQuorumEpochRequest, FetchRequest, FetchResponse, VoteRequest,
    VoteResponse,
)
from refimpl.kraft.state import NodeState, Role
from refimpl.sim.protocol import Envelope, World, dumps
from refimpl.trace.logjson import LogJson

__all__ = [
    "SPEC_MODULE", "NIL", "LEADER_CHANGE", "VARIABLES", "PER_NODE_VARIABLES", "ROLE_NAMES",
    "ACTION_NAMES", "NETWORK_ACTIONS", "RESTART_ACTIONS", "node_values", "message_fields", "message_value",
    "project", "StateEncoder", "History", "NO_DIVERGENCE",
]

SPEC_MODULE = "KRaft"
NIL = "Nil"                     # model value: no leader / no vote
LEADER_CHANGE = "LeaderChange"  # model value: the value of a LeaderChange control record
NO_DIVERGENCE = {"epoch": -1, "endOffset": -1}   # KRaftLog!NoDivergence

ROLE_NAMES = {r: r.value for r in Role}  # Unattached, Voted, Candidate, Leader, Follower,
#                                           Resigned, Shutdown: the spec's role strings

# Spec variables that are functions of the server, in the spec's order.
PER_NODE_VARIABLES = (
    "currentEpoch", "votedId", "leaderId", "log", "role", "highWatermark", "votesGranted",
    "votesRejected", "followerEndOffset", "fetchedSinceCheck",
)
GLOBAL_VARIABLES = ("msgs", "restartCount", "ghostCommitted", "ghostVotes")
VARIABLES = PER_NODE_VARIABLES + GLOBAL_VARIABLES

# refimpl action name -> spec action name: the TLC action labels of spec/KRaft.tla's Next
# (message handling is labelled by the Receive* operators).  Send* steps come from
# Transition.split_sends.
ACTION_NAMES: dict[str, str] = {
    "Init": "Init",
    "Timeout": "Timeout",
    "LeaderProgressTimeout": "LeaderProgressTimeout",
    "Resign": "Resign",
    "ClientRequest": "ClientRequest",
    "Restart": "Restart",
    # a restart with an empty log and quorum-state (KIP-595 "Cluster Bootstrapping": "a broker
    # with empty state is started with the ID of an existing voter"); spec action LoseDisk(i)
    "LoseDisk": "LoseDisk",
    "SendVoteRequest": "SendVoteRequest",
    "SendBeginQuorumEpoch": "SendBeginQuorumEpoch",
    "SendFetchRequest": "SendFetchRequest",
    "HandleVoteRequest": "ReceiveVoteRequest",
    "HandleVoteResponse": "ReceiveVoteResponse",
    "BecomeLeader": "ReceiveVoteResponse",     # single-voter quorum only (spec: >= 2 voters)
    "HandleBeginQuorumEpochRequest": "ReceiveBeginQuorumEpochRequest",
    "HandleBeginQuorumEpochResponse": "ReceiveBeginQuorumEpochResponse",
    "HandleEndQuorumEpochRequest": "ReceiveEndQuorumEpochRequest",
    "HandleFetchRequest": "ReceiveFetchRequest",
    "HandleFetchResponse": "ReceiveFetchResponse",
    "FetchRequestTimeout": "FetchRequestTimeout",  # always a stutter (volatile pacing only)
    "ObserverFetchTimeout": "ObserverFetchTimeout",  # always a stutter (volatile pacing only)
    "HandleDescribeQuorumRequest": "ReceiveDescribeQuorumRequest",    # not in the spec
    "HandleDescribeQuorumResponse": "ReceiveDescribeQuorumResponse",  # not in the spec
}

# the steps that restart a replica (restartCount + 1; volatile state lost)
RESTART_ACTIONS = frozenset({"Restart", "LoseDisk"})

# simulator-level steps -> spec action names
NETWORK_ACTIONS: dict[str, str] = {
    "DropMessage": "DropMessage",
    "DuplicateMessage": "DuplicateMessage",
    "Crash": "Crash",          # always a stutter: the spec's Restart is crash + restart
    "Partition": "Partition",  # always a stutter (environment)
    "Heal": "Heal",            # always a stutter (environment)
}


def _id(x: str | None) -> str:
    return NIL if x is None else x


def _record_plain(r: Record) -> dict:
    return {"epoch": r.epoch, "value": LEADER_CHANGE if r.control is not None else r.value}


def node_values(s: NodeState, voters: tuple[str, ...]) -> dict:
    """The per-node spec variables of one replica (canonical values)."""
    feo = s.follower_end_offset
    return {
        "currentEpoch": s.epoch,
        "votedId": _id(s.voted_id),
        "leaderId": _id(s.leader_id),
        "log": tuple(Fn(_record_plain(r)) for r in s.log),
        "role": ROLE_NAMES[s.role],
        "highWatermark": s.high_watermark,
        "votesGranted": frozenset(s.votes_granted),
        "votesRejected": frozenset(s.votes_rejected),
        "followerEndOffset": Fn({v: feo.get(v, -1) for v in voters}),
        "fetchedSinceCheck": frozenset(s.fetched_since_check),
    }


def message_fields(env: Envelope) -> dict:
    """A message as the spec's record, in plain JSON data (which is its ITF encoding too)."""
    m = env.payload
    d: dict = {"type": type(m).__name__, "src": env.src, "dest": env.dst}
    if isinstance(m, VoteRequest):
        d.update(epoch=m.candidate_epoch, lastOffsetEpoch=m.last_offset_epoch,
                 lastOffset=m.last_offset, clusterId=_id(m.cluster_id))
    elif isinstance(m, VoteResponse):
        d.update(epoch=m.leader_epoch, leaderId=_id(m.leader_id), voteGranted=m.vote_granted,
                 error=m.error.value)
    elif isinstance(m, BeginQuorumEpochRequest):
        d.update(epoch=m.leader_epoch, clusterId=_id(m.cluster_id))
    elif isinstance(m, BeginQuorumEpochResponse):
        d.update(epoch=m.leader_epoch, leaderId=_id(m.leader_id), error=m.error.value)
    elif isinstance(m, EndQuorumEpochRequest):
        d.update(epoch=m.leader_epoch, preferredSuccessors=list(m.preferred_successors),
                 clusterId=_id(m.cluster_id))
    elif isinstance(m, FetchRequest):
        d.update(epoch=m.current_leader_epoch, fetchOffset=m.fetch_offset,
                 lastFetchedEpoch=m.last_fetched_epoch, clusterId=_id(m.cluster_id))
    elif isinstance(m, FetchResponse):
        div = m.diverging_epoch
        d.update(epoch=m.leader_epoch, leaderId=_id(m.leader_id), error=m.error.value,
                 highWatermark=m.high_watermark, records=[_record_plain(r) for r in m.records],
                 divergingEpoch=({"epoch": div[0], "endOffset": div[1]} if div else NO_DIVERGENCE),
                 fetchOffset=m.fetch_offset, lastFetchedEpoch=m.last_fetched_epoch)
        if m.error.value != "NONE":  # KRaft.tla NoEcho: nothing reads an error's position
            d.update(fetchOffset=-1, lastFetchedEpoch=-1)
    elif isinstance(m, DescribeQuorumRequest):
        d.update(epoch=-1)
    elif isinstance(m, DescribeQuorumResponse):
        d.update(epoch=m.leader_epoch, leaderId=_id(m.leader_id), error=m.error.value,
                 highWatermark=m.high_watermark)
    else:
        raise TypeError(f"no spec encoding for message {type(m).__name__}")
    return d


def message_value(env: Envelope) -> Fn:
    """A message as a spec record (canonical TLA+ value)."""
    return canonical(message_fields(env))


# --------------------------------------------------------------------------- history

class History:
    """The spec's history variables, updated after every step as the spec updates them:
    restartCount (Restart), ghostVotes (StartElection, granted votes), ghostCommitted (a
    leader's HWM passing the committed history: RecordCommitted)."""

    def __init__(self, cluster_of: dict[str, str | None]):
        self.restart_count = 0
        self.ghost_committed: list[tuple[Record, int]] = []
        self.ghost_votes: set[tuple[str, int, str]] = set()   # every vote ever (monitor)
        # the spec's ghostVotes: per replica, (its epoch, the candidates it voted for in it)
        self.current_votes: dict[str, tuple[int, frozenset]] = {
            n: (0, frozenset()) for n in cluster_of}
        self.cluster_of = dict(cluster_of)
        self.version = 0  # bumped whenever a history variable changes

    def after_step(self, world: World, node: str | None, action: str) -> None:
        if node is None:
            return
        s: NodeState = world.states[node]
        changed = False
        if action in RESTART_ACTIONS:
            self.restart_count += 1
            changed = True
        epoch, cands = self.current_votes.get(node, (0, frozenset()))
        if action == "LoseDisk":
            # the replica's epoch went back to 0 with its quorum-state file; the ghost votes
            # stay (history survives crashes) and are cleared by the next larger epoch, as
            # the spec's StepDown / StartElection compare with currentEpoch
            epoch = s.epoch
            self.current_votes[node] = (epoch, cands)
        if s.epoch > epoch:  # a new epoch clears the vote (StepDown, StartElection, Vote)
            epoch, cands = s.epoch, frozenset()
            self.current_votes[node] = (epoch, cands)
            changed = True
        if s.voted_id is not None and s.role is not Role.SHUTDOWN and action not in RESTART_ACTIONS:
            key = (node, s.epoch, s.voted_id)
            if key not in self.ghost_votes:
                self.ghost_votes.add(key)
                changed = True
            if s.voted_id not in cands:
                self.current_votes[node] = (epoch, cands | {s.voted_id})
                changed = True
        if s.role is Role.LEADER and s.high_watermark > len(self.ghost_committed):
            n = len(self.ghost_committed)
            self.ghost_committed.extend((s.log[k], s.epoch) for k in range(n, s.high_watermark))
            changed = True
        if changed:
            self.version += 1

    def values(self) -> dict:
        return {
            "restartCount": self.restart_count,
            "ghostCommitted": tuple(Fn({"entry": Fn(_record_plain(r)), "epoch": e})
                                    for r, e in self.ghost_committed),
            "ghostVotes": Fn({n: c for n, (_, c) in self.current_votes.items()}),
        }


def _bag(counts: dict) -> object:
    return Fn(counts) if counts else ()


def project(world: World, nodes: tuple[str, ...], voters: tuple[str, ...]) -> dict:
    """All spec variables for the whole system (canonical values).  Crashed nodes show their
    last state (the spec's Restart, not the crash, resets volatile state)."""
    per = {n: node_values(world.states[n], voters) for n in nodes}
    out = {v: Fn({n: per[n][v] for n in nodes}) for v in PER_NODE_VARIABLES}
    counts: dict = {}
    for env, copies in world.in_flight.values():
        k = message_value(env)
        counts[k] = counts.get(k, 0) + copies
    out["msgs"] = _bag(counts)
    out.update(world.history["kraft"].values())
    return out


# --------------------------------------------------------------------------- fast encoding

class _Quoted(dict):
    """name -> its JSON string literal, memoised."""

    def __missing__(self, k: str) -> str:
        v = self[k] = json.dumps(k)
        return v


def _record_text(r: Record) -> str:
    v = LEADER_CHANGE if r.control is not None else r.value
    return '{"epoch":' + str(r.epoch) + ',"value":' + json.dumps(v) + "}"


class StateEncoder:
    """Fast, cached ITF JSON text of `project(world)`: per-node fragments are recomputed only
    when a node's state object changes, logs are extended incrementally, message texts are
    computed once per message.  Produces exactly
    dumps({k: to_itf(v) for k, v in project(world).items()}) (tests/test_trace_format.py)."""

    def __init__(self, nodes: tuple[str, ...], voters: tuple[str, ...]):
        self.nodes = tuple(sorted(nodes))       # ITF records: keys sorted
        self.voters = tuple(sorted(voters))
        q = self._q = _Quoted()
        self._frag: dict[str, tuple[object, dict[str, str]]] = {}
        self._msg: dict[int, tuple[Envelope, str]] = {}
        self._logjson = LogJson(_record_text)
        self._keys_list = [q[n] + ":" for n in self.nodes]
        self._sorted_vars = sorted(VARIABLES)
        self._msgs_slot = 2 * self._sorted_vars.index("msgs") + 1
        self._last_key: list | None = None
        self._last_hist = -1
        self._last_parts: list[str] = []
        self._hist_parts: dict[str, str] = {}
        self._gc: tuple[int, str] = (0, "[]")
        self._sets: dict[frozenset, str] = {}
        self._feo: tuple = (None, "")
        self._var_cache: dict[str, tuple[tuple, str]] = {}

    def record_json(self, r: Record) -> str:
        return self._logjson.record(r)

    def log_json(self, n: str, log: tuple) -> str:
        """The log's JSON array, extended incrementally while the log only grows."""
        return self._logjson.log(n, log)

    def _set(self, names: frozenset) -> str:
        t = self._sets.get(names)
        if t is None:
            q = self._q
            t = '{"#set":[' + ",".join([q[m] for m in sorted(names)]) + "]}"
            if len(self._sets) > 10_000:
                self._sets.clear()
            self._sets[names] = t
        return t

    def _end_offsets(self, feo: Fn) -> str:
        c = self._feo
        if c[0] is feo:
            return c[1]
        q = self._q
        t = "{" + ",".join([q[v] + ":" + str(feo.get(v, -1)) for v in self.voters]) + "}"
        self._feo = (feo, t)
        return t

    def node_fragments(self, n: str, s: NodeState) -> dict[str, str]:
        c = self._frag.get(n)
        if c is not None and c[0] is s:
            return c[1]
        q = self._q
        feo = s.follower_end_offset
        frags = {
            "currentEpoch": str(s.epoch),
            "votedId": q[_id(s.voted_id)],
            "leaderId": q[_id(s.leader_id)],
            "log": self.log_json(n, s.log),
            "role": q[ROLE_NAMES[s.role]],
            "highWatermark": str(s.high_watermark),
            "votesGranted": self._set(s.votes_granted),
            "votesRejected": self._set(s.votes_rejected),
            "followerEndOffset": self._end_offsets(feo),
            "fetchedSinceCheck": self._set(s.fetched_since_check),
        }
        self._frag[n] = (s, frags)
        return frags

    def message_json(self, env: Envelope) -> str:
        key = id(env)
        c = self._msg.get(key)
        if c is not None and c[0] is env:
            return c[1]
        txt = dumps(message_fields(env))
        if len(self._msg) > 8192:  # forget old messages now and then (keys are object ids)
            self._msg = {}
        self._msg[key] = (env, txt)
        return txt

    def _history_parts(self, h: History) -> dict[str, str]:
        """History variables as JSON, extended incrementally (they only grow)."""
        if h.version == self._last_hist:
            return self._hist_parts
        q = self._q
        gc = h.ghost_committed
        n, txt = self._gc
        if n > len(gc):
            n, txt = 0, "[]"
        if n < len(gc):
            add = ",".join(['{"entry":' + self.record_json(r) + ',"epoch":' + str(e) + "}"
                            for r, e in gc[n:]])
            txt = txt[:-1] + ("," if n else "") + add + "]"
            self._gc = (len(gc), txt)
        cv = h.current_votes
        votes = "{" + ",".join([k + self._set(cv[n][1] if n in cv else frozenset())
                                for k, n in zip(self._keys_list, self.nodes)]) + "}"
        self._hist_parts = {"restartCount": str(h.restart_count), "ghostCommitted": txt,
                            "ghostVotes": votes}
        self._last_hist = h.version
        return self._hist_parts

    def _parts(self, world: World) -> list[str]:
        """The JSON texts of every variable but msgs, in sorted order, interleaved with their
        keys; rebuilt only for the variables whose fragments changed."""
        states = world.states
        key = [states[n] for n in self.nodes]
        h = world.history["kraft"]
        last = self._last_key
        if (last is not None and h.version == self._last_hist
                and all(a is b for a, b in zip(key, last))):
            return self._last_parts
        frag = [self.node_fragments(n, st) for n, st in zip(self.nodes, key)]
        keys = self._keys_list
        parts = dict(self._history_parts(h))
        vc = self._var_cache
        for v in PER_NODE_VARIABLES:
            ident = tuple([f[v] for f in frag])
            c = vc.get(v)
            if c is not None and c[0] == ident:
                parts[v] = c[1]
            else:
                txt = "{" + ",".join([k + x for k, x in zip(keys, ident)]) + "}"
                vc[v] = (ident, txt)
                parts[v] = txt
        q = self._q
        out: list[str] = []
        for i, k in enumerate(self._sorted_vars):
            out.append(("{" if i == 0 else ",") + q[k] + ":")
            out.append(parts.get(k, ""))  # msgs is filled in by encode
        out.append("}")
        self._last_key = key
        self._last_parts = out
        return out

    def messages_json(self, world: World) -> str:
        if not world.in_flight:
            return "[]"
        counts: dict[str, int] = {}
        mj = self.message_json
        for env, copies in world.in_flight.values():
            t = mj(env)
            counts[t] = counts.get(t, 0) + copies
        pairs = sorted(["[" + t + "," + str(c) + "]" for t, c in counts.items()])
        return '{"#map":[' + ",".join(pairs) + "]}"

    def encode(self, world: World) -> str:
        parts = self._parts(world)
        parts[self._msgs_slot] = self.messages_json(world)
        return "".join(parts)
