"""The ONE mapping from the reference implementation onto spec/ELR.tla.

* `VARIABLES` / `project(config, world)`: the refimpl state -> the spec's 25 variables.
* `spec_action(step, params)`: the spec action a simulator step (led by refimpl step `step`)
  implements, or "Stutter" for a step that changes no spec variable (a heartbeat, a rejected
  request, a timer with nothing to do...; such a step is never written to a trace).
* `boundary(step)`: the refimpl steps that start a spec step of their own inside a composite
  simulator step (see below).
* `message_value(env)`: a message as a canonical TLA+ record (trace parameters).

The spec (issue 14: asynchronous metadata) is more abstract than the refimpl in a few
places -- A3 a fetch round copies the leader's whole log, A4 the surviving part of the
unflushed log is chosen at restart, A6 one controller, A8 registration and unfencing in one
step with the broker caught up, A10 metadata delivered "jump to latest", A11 the topic's min
ISR travels with the partition state in the metadata, A12 a new leader serves the
consumer-visible prefix it holds.  Where one
spec step is carried out by several refimpl steps, the ELR adapter runs them in one simulator
event, synchronously, and the simulator writes one trace line for them
(refimpl/elr/adapter.py; docs/refimpl-elr.md lists the compositions):

    FollowerFetch    SendFetch, HandleFetch(Diverging) + TruncateLog (repeated until the logs
                     match), HandleFetch (the leader learns the follower's matching log end:
                     HWM, acks), HandleFetchResponse (the copy)
    RestartBroker    BrokerStart (log recovery), HandleBrokerRegistration (unfenced at once),
                     BrokerRegistered (with the current metadata)
    CleanShutdown    the broker's CleanShutdown, the controller's ControlledShutdown, and the
                     broker's stop
    UnfenceBroker    the controller's UnfenceBroker and the broker installing the answer's
                     metadata

Every other message -- PartitionMetadata (ReceiveMetadata at its delivery), AlterPartition
requests (HandleAlterPartition at the controller) and responses (HandleAlterPartitionResponse
at the leader), produce requests -- travels the simulated network.  The AlterPartition channel
is the spec's one slot per broker (`alter_partition_slot`: never lost nor duplicated, one
request at a time, a request outlives its sender's restart).

Inside an event a few refimpl steps are spec steps of their own (`boundary`): the leader's
ProposeIsrExpand after the fetch that caught the follower up, the controller's
GetReplicaLogInfo reply handling (SendReplicaLogInfo) and the recovery's election
(CompleteUncleanRecovery), the unclean leader election after the step that left the partition
leaderless (UncleanLeaderElection), and a broker's ReceiveMetadata from a synchronous heartbeat
answer (FenceRunningBrokers = FALSE).
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from typing import Any

from kraftcore.values import Fn, canonical, to_itf

from refimpl.trace.logjson import LogJson

from .types import NO_EPOCH, NO_LEADER, ElrConfig, LogEntry

__all__ = ["VARIABLES", "NO_REPLY", "ACTION_MAP", "BOUNDARIES", "STUTTERS", "project",
           "spec_action", "boundary", "spec_params", "message_value", "model_values",
           "network_action", "acting_leader", "common_prefix_len", "still_missing",
           "SPEC_ACTIONS",
           "StateEncoder"]

#: spec/ELR.tla VARIABLES, in its order.
VARIABLES: tuple[str, ...] = (
    "alive", "log", "flushed", "shutdownFile",
    "brokerEpoch", "fenced", "leader", "leaderEpoch", "partitionEpoch", "isr", "elr",
    "lastKnownElr", "lastKnownLeader", "minIsr", "replies",
    "metadata", "hwm", "pendingIsr", "pendingAcks", "followerState", "alterPartition",
    "acked", "committedLog", "uncleanShutdowns", "lostCommitted",
)

#: The disjuncts of spec/ELR.tla's Next (the action labels TLC gives its transitions).
SPEC_ACTIONS: frozenset[str] = frozenset({
    "Produce", "FollowerFetch", "ReceiveMetadata", "ShrinkIsr", "ProposeIsrExpand",
    "HandleAlterPartition", "HandleAlterPartitionResponse",
    "FenceBroker", "UnfenceBroker", "CleanShutdown", "UncleanShutdown", "RestartBroker",
    "ChangeMinIsr", "SendReplicaLogInfo", "CompleteUncleanRecovery", "UncleanLeaderElection",
})

NO_REPLY = "NoReply"
#: spec NoMessage: an empty AlterPartition slot.
NO_MESSAGE = "NoMessage"

#: The refimpl step leading a simulator step -> the spec action of the whole (composite) step.
ACTION_MAP: dict[str, str] = {
    "Produce": "Produce",
    "SendFetch": "FollowerFetch",                   # the fetch round (see the module doc)
    "ReceiveMetadata": "ReceiveMetadata",           # a broker installs the current state (A10)
    "ShrinkIsr": "ShrinkIsr",                       # the leader sends its shrink request
    "ProposeIsrExpand": "ProposeIsrExpand",         # the leader sends its expand request
    "HandleAlterPartition": "HandleAlterPartition",  # the controller commits a request
    "RejectAlterPartition": "HandleAlterPartition",  # ... or answers it with an error
    "ReceiveAlterPartitionResponse": "HandleAlterPartitionResponse",
    "FenceBroker": "FenceBroker",                   # session expiry
    "UnfenceBroker": "UnfenceBroker",               # + the broker installs the metadata (A8)
    "CleanShutdown": "CleanShutdown",               # the broker's clean shutdown (composite)
    "BrokerStart": "RestartBroker",                 # the broker's start (composite)
    "AlterMinIsr": "ChangeMinIsr",                  # + every broker sees the config (A11)
    "HandleGetReplicaLogInfoResponse": "SendReplicaLogInfo",
    "UncleanRecoveryElect": "CompleteUncleanRecovery",
    "UncleanLeaderElect": "UncleanLeaderElection",
}

#: Refimpl steps that are spec steps of their own when they occur inside a composite step.
BOUNDARIES: frozenset[str] = frozenset({
    "ProposeIsrExpand", "HandleGetReplicaLogInfoResponse", "UncleanRecoveryElect",
    "UncleanLeaderElect", "ReceiveMetadata",
})

#: Refimpl steps that change no spec variable when they lead a simulator step.
STUTTERS = frozenset({
    "HandleBrokerHeartbeat", "SessionCheck", "UncleanRecoveryTimeout",
    "RejectGetReplicaLogInfoResponse", "SendBrokerRegistration", "SendBrokerHeartbeat",
    "BrokerRegistered", "FetchIdle", "IsrCheckIdle", "RejectFetch", "RejectProduce",
    "SendGetReplicaLogInfoResponse", "SendProduce", "SendAlterMinIsr", "ProduceFailed",
    "ProduceAcked", "ControllerStart", "ClientStart", "CheckpointHighWatermark",
    "HandleBrokerRegistration", "ControlledShutdown", "HandleFetch", "HandleFetchDiverging",
    "HandleFetchResponse", "TruncateLog",
})


def spec_action(step: str, params: dict | None = None) -> str:
    """The spec action of a simulator step led by refimpl step `step` (with its params)."""
    if step in ACTION_MAP:
        return ACTION_MAP[step]
    if step in STUTTERS:
        return "Stutter"
    raise KeyError(f"refimpl step {step!r} has no spec action (add it to spec_mapping)")


def boundary(step: str | None) -> str | None:
    """The spec action refimpl step `step` starts inside a composite step, or None when it
    continues the step before it."""
    return ACTION_MAP[step] if step in BOUNDARIES else None


def spec_params(step: str, params: dict) -> dict:
    """The trace parameters: the refimpl's own, plus the refimpl step name."""
    return dict(params, step=step)


def network_action(generic: str) -> str:
    """A crash of a broker is the spec's UncleanShutdown (its restart may keep the whole log:
    a plain crash, or lose the unflushed suffix: a power loss); a crash of the client, message
    loss / duplication and partitions change no spec variable (the controller never crashes:
    spec A6, see the adapter)."""
    return "UncleanShutdown" if generic == "Crash" else "Stutter"


def model_values(config: ElrConfig) -> tuple[str, ...]:
    return tuple(config.brokers) + tuple(config.values) + (NO_LEADER, NO_REPLY, NO_MESSAGE)


def _record(e: LogEntry) -> Fn:
    return Fn({"epoch": e.epoch, "value": e.value})


def _reply(info) -> Fn:
    return Fn({"brokerEpoch": info.broker_epoch, "leaderEpoch": info.current_leader_epoch,
               "lastEpoch": info.last_written_leader_epoch, "leo": info.log_end_offset})


def common_prefix_len(a: tuple, b: tuple) -> int:
    """Spec `CommonPrefixLen`."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def still_missing(lost: frozenset, log: tuple) -> frozenset:
    """The (0-based offset, entry) pairs of `lost` that `log` does not hold (spec
    `StillMissing`: a broker that fetched its lost committed records back has caught up)."""
    return frozenset((o, e) for o, e in lost if not (o < len(log) and log[o] == e))


def holds(log: tuple, e: tuple) -> bool:
    """spec HoldsRecord for a 0-based (offset, entry) pair."""
    o, entry = e
    return o < len(log) and log[o] == entry


def reported_leo(world, leader: str, f: str) -> int:
    """spec followerState[leader][f].leo: what `leader`, acting as leader, learned of f's log
    end from f's last fetch (0 when unknown)."""
    st = world.states[leader]
    if leader == f or not world.up.get(leader, False) or not st.is_leader:
        return 0
    p = st.progress().get(f)
    return p.log_end_offset if p is not None else 0


def acked_entries(world, brokers) -> frozenset:
    """spec acked as 0-based (offset, entry) pairs: every acks=all acknowledgement sent."""
    out: set = set()
    for b in brokers:
        out |= {(o - 1, e) for o, e in world.disks[b].get("ghost_acked", frozenset())}
    return frozenset(out)


def fetch_key(world, brokers, acked: frozenset) -> tuple:
    """What a spec FollowerFetch step must change (log, followerState, hwm, acked,
    pendingAcks): a fetch round that changes none of it is no spec step."""
    parts = []
    for b in brokers:
        st = world.states[b]
        acting = world.up.get(b, False) and st.is_leader
        parts.append((st.log.entries,
                      tuple((f, x.log_end_offset, x.broker_epoch) for f, x in st.followers)
                      if acting else (),
                      st.hwm if acting else 0,
                      st.pending_acks if world.up.get(b, False) else ()))
    return (tuple(parts), acked)


def acting_leader(config: ElrConfig, world) -> Any:
    """The state of the controller's leader if it acts as the leader of the current leader
    epoch (up or, for a crashed one, when it crashed), else None."""
    p = world.states[config.controller].partition
    ldr = world.states.get(p.leader)
    if ldr is not None and ldr.is_leader and ldr.metadata.leader_epoch == p.leader_epoch:
        return ldr
    return None


def empty_view(config: ElrConfig) -> Fn:
    """spec EmptyView: a down broker's metadata cache, an error response's partition."""
    v = {"leader": NO_LEADER, "leaderEpoch": 1, "partitionEpoch": 0,
         "isr": frozenset(), "elr": frozenset(), "minIsr": config.min_isr}
    if config.view_registrations:
        v["registrations"] = Fn({b: 0 for b in config.brokers})
    return Fn(v)
#: spec Unknown: what a leader knows of a follower that has not fetched from it.
UNKNOWN_FOLLOWER = Fn({"leo": 0, "brokerEpoch": 0})


def view(config: ElrConfig, md) -> Fn:
    """A PartitionMetadata as the spec's View record; with LeaderCacheIsrEligibility
    (`config.view_registrations`) also its broker registrations: each broker's epoch in
    `live_brokers`, 0 for a fenced one (spec Registrations)."""
    v = {"leader": md.leader, "leaderEpoch": md.leader_epoch,
         "partitionEpoch": md.partition_epoch, "isr": frozenset(md.isr),
         "elr": frozenset(md.elr), "minIsr": md.topic_min_isr}
    if config.view_registrations:
        live = {x[0]: x[1] for x in md.live_brokers}
        v["registrations"] = Fn({b: live.get(b, 0) for b in config.brokers})
    return Fn(v)


def alter_partition_slot(config: ElrConfig, world, b: str):
    """spec alterPartition[b]: broker b's AlterPartition request in flight (it outlives its
    sender's restart), or the controller's answer to b's running incarnation, or None."""
    for env, _ in world.in_flight.values():
        m = env.payload
        if type(m).__name__ == "AlterPartitionRequest" and env.src == b:
            return m
        if type(m).__name__ == "AlterPartitionResponse" and env.dst == b and \
                world.up.get(b, False) and world.states[b].broker_epoch == m.broker_epoch:
            return m
    return None


def alter_partition_value(config: ElrConfig, m) -> Any:
    if m is None:
        return NO_MESSAGE
    if type(m).__name__ == "AlterPartitionRequest":
        named = dict(m.broker_epochs)
        return Fn({"type": "Request", "leaderEpoch": m.leader_epoch,
                   "partitionEpoch": m.partition_epoch, "isr": frozenset(m.new_isr),
                   "brokerEpochs": Fn({x: named.get(x, 0) for x in config.brokers})})
    return Fn({"type": "Response", "error": m.error,
               "partition": view(config, m.metadata) if m.error == "NONE" and m.metadata is not None
               else empty_view(config)})


def _acting(v, b: str):
    """b's state when it runs and its own view names it leader (spec ActsAsLeader), else
    None."""
    st = v.w.states[b]
    return st if v.w.up.get(b, False) and st.is_leader else None


def _metadata(v, b: str) -> Fn:
    st = v.w.states[b]
    if not v.w.up.get(b, False) or st.metadata is None:
        return empty_view(v.c)
    return view(v.c, st.metadata)


def _follower_state(v, l: str) -> Fn:
    st = _acting(v, l)
    prog = st.progress() if st is not None else {}
    return Fn({f: Fn({"leo": prog[f].log_end_offset, "brokerEpoch": prog[f].broker_epoch})
               if f in prog and f != l else UNKNOWN_FOLLOWER for f in v.brokers})


class _View:
    """What the projection reads of a World, computed once per projection."""

    def __init__(self, config: ElrConfig, world):
        self.c = config
        self.w = world
        self.brokers = config.brokers
        self.ctrl = world.states[config.controller]
        self.p = self.ctrl.partition
        self.disks = world.disks
        self.committed = world.history.get("committed", ())

    def regs(self) -> dict:
        return {r.broker_id: r for r in self.ctrl.registrations}

    def disk(self, key: str, default: Any = None) -> tuple:
        return tuple(self.disks[b].get(key, default) for b in self.brokers)


def _acked(v: _View) -> frozenset:
    acked: set = set()
    for x in v.disk("ghost_acked", frozenset()):
        acked |= x
    return frozenset((o, _record(e)) for o, e in acked)


def _fn(v: _View, f) -> Fn:
    return Fn({b: f(b) for b in v.brokers})


#: spec variable -> its value (from a _View), in VARIABLES order.
_PROJECTION: dict[str, Any] = {
    "alive": lambda v: _fn(v, lambda b: bool(v.w.up.get(b, False))),
    "log": lambda v: _fn(v, lambda b: tuple(_record(e) for e in v.w.states[b].log.entries)),
    "flushed": lambda v: _fn(v, lambda b: v.w.states[b].log.flushed),
    "shutdownFile": lambda v: _fn(v, lambda b: NO_EPOCH if v.disks[b].get("clean_shutdown")
                                  is None else v.disks[b]["clean_shutdown"]),
    "brokerEpoch": lambda v: _fn(v, lambda b, r=v.regs(): r[b].broker_epoch if b in r else 0),
    "fenced": lambda v: _fn(v, lambda b, r=v.regs(): r[b].fenced if b in r else True),
    "leader": lambda v: v.p.leader,
    "leaderEpoch": lambda v: v.p.leader_epoch,
    "partitionEpoch": lambda v: v.p.partition_epoch,
    "isr": lambda v: frozenset(v.p.isr),
    "elr": lambda v: frozenset(v.p.elr),
    "lastKnownElr": lambda v: frozenset(v.p.last_known_elr),
    "lastKnownLeader": lambda v: v.p.last_known_leader,
    "minIsr": lambda v: v.ctrl.min_isr,
    "replies": lambda v: _fn(v, lambda b: _reply(v.ctrl.reply(b)) if v.ctrl.reply(b)
                             else NO_REPLY),
    "metadata": lambda v: _fn(v, lambda b: _metadata(v, b)),
    "hwm": lambda v: _fn(v, lambda b: _acting(v, b).hwm if _acting(v, b) else 0),
    "pendingIsr": lambda v: _fn(v, lambda b: frozenset(v.w.states[b].pending_isr or ())
                                if v.w.up.get(b, False) else frozenset()),
    "pendingAcks": lambda v: _fn(v, lambda b: frozenset(a.offset + 1 for a in
                                                        v.w.states[b].pending_acks)
                                 if v.w.up.get(b, False) else frozenset()),
    "followerState": lambda v: _fn(v, lambda b: _follower_state(v, b)),
    "alterPartition": lambda v: _fn(v, lambda b: alter_partition_value(
        v.c, alter_partition_slot(v.c, v.w, b))),
    "acked": _acked,
    "committedLog": lambda v: tuple(_record(e) for e in v.committed),
    "uncleanShutdowns": lambda v: sum(v.disk("ghost_unclean_shutdowns", 0)),
    "lostCommitted": lambda v: _fn(v, lambda b: frozenset(
        (o + 1, _record(e)) for o, e in v.disks[b].get("ghost_lost_committed", frozenset()))),
}
assert tuple(_PROJECTION) == VARIABLES


def project(config: ElrConfig, world) -> dict[str, Any]:
    """The spec's variables.  Offsets become 1-based.  A crashed broker keeps the log it last
    had (spec A4) until it restarts.  The ghost variables are the spec's: `committedLog` the
    consumer-visible log (world.history, kept by the adapter: a newly elected leader starts
    from the part of it it holds, the running leader's HWM rule grows it), `hwm` its length,
    `acked` the acks=all acknowledgements the leaders sent (ghost_acked on their disks),
    `uncleanShutdowns` a counter on the brokers' disks, `lostCommitted` the committed records
    each broker lost in its last unclean restarts (ghost_lost_committed on its disk) that its
    log does not hold again."""
    v = _View(config, world)
    return {k: f(v) for k, f in _PROJECTION.items()}


#: spec variable -> the objects its value is projected from (the refimpl's states are
#: immutable: the same objects give the same value).
_SOURCES: dict[str, Any] = {
    "alive": lambda v: tuple(v.w.up.get(b, False) for b in v.brokers),
    "flushed": lambda v: tuple(v.w.states[b].log.flushed for b in v.brokers),
    "shutdownFile": lambda v: v.disk("clean_shutdown"),
    "brokerEpoch": lambda v: (v.ctrl.registrations,),
    "fenced": lambda v: (v.ctrl.registrations,),
    "leader": lambda v: (v.p,),
    "leaderEpoch": lambda v: (v.p,),
    "partitionEpoch": lambda v: (v.p,),
    "isr": lambda v: (v.p,),
    "elr": lambda v: (v.p,),
    "lastKnownElr": lambda v: (v.p,),
    "lastKnownLeader": lambda v: (v.p,),
    "minIsr": lambda v: (v.ctrl.min_isr,),
    "replies": lambda v: (v.ctrl.replies,),
    "acked": lambda v: v.disk("ghost_acked"),
    "uncleanShutdowns": lambda v: v.disk("ghost_unclean_shutdowns", 0),
    "metadata": lambda v: _broker_sources(v),
    "hwm": lambda v: _broker_sources(v),
    "pendingIsr": lambda v: _broker_sources(v),
    "pendingAcks": lambda v: _broker_sources(v),
    "followerState": lambda v: _broker_sources(v),
    "alterPartition": lambda v: _broker_sources(v) + tuple(
        alter_partition_slot(v.c, v.w, b) for b in v.brokers),
    "lostCommitted": lambda v: v.disk("ghost_lost_committed"),
}
_SCALARS = (int, bool, str, type(None))


def _broker_sources(v: _View) -> tuple:
    """The brokers' (immutable) states and whether they run."""
    return tuple(v.w.states[b] for b in v.brokers) + tuple(bool(v.w.up.get(b, False))
                                                          for b in v.brokers)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y or (type(x) in _SCALARS and x == y)
                                    for x, y in zip(a, b))


class StateEncoder:
    """The ITF JSON text of `project(config, world)` (exactly
    dumps({k: to_itf(v) for k, v in project(config, world).items()})), fast: a variable's
    text is recomputed only when the objects it is projected from change (_SOURCES), and the
    logs' texts are extended while they only grow."""

    def __init__(self, config: ElrConfig):
        self.c = config
        self._vars = sorted(VARIABLES)
        self._brokers = sorted(config.brokers)
        self._cache: dict[str, tuple[tuple, str]] = {}
        self._logjson = LogJson(lambda e: '{"epoch":' + str(e.epoch) + ',"value":'
                                + json.dumps(e.value) + "}")

    def encode(self, world) -> str:
        v = _View(self.c, world)
        parts = []
        for k in self._vars:
            if k == "log":
                txt = "{" + ",".join([json.dumps(b) + ":" + self._logjson.log(
                    b, world.states[b].log.entries) for b in self._brokers]) + "}"
            elif k == "committedLog":
                txt = self._logjson.log("", v.committed)
            elif k not in _SOURCES:
                txt = json.dumps(to_itf(_PROJECTION[k](v)), sort_keys=True,
                                 separators=(",", ":"))
            else:
                src = _SOURCES[k](v)
                hit = self._cache.get(k)
                if hit is None or not _same(hit[0], src):
                    hit = (src, json.dumps(to_itf(_PROJECTION[k](v)), sort_keys=True,
                                           separators=(",", ":")))
                    self._cache[k] = hit
                txt = hit[1]
            parts.append('"' + k + '":' + txt)
        return "{" + ",".join(parts) + "}"


def _value(x: Any) -> Any:
    if isinstance(x, LogEntry):
        return _record(x)
    if is_dataclass(x):
        return Fn({f.name: _value(getattr(x, f.name)) for f in fields(x)
                   if getattr(x, f.name) is not None})
    if isinstance(x, (tuple, list)):
        return tuple(_value(v) for v in x)
    if isinstance(x, (frozenset, set)):
        return frozenset(_value(v) for v in x)
    return x


def message_value(env) -> Any:
    """A message: its fields as a record, plus its type, source and destination."""
    msg = env.payload
    v = _value(msg)
    return canonical(Fn(dict(v.items(), type=type(msg).__name__, src=env.src, dst=env.dst)))
