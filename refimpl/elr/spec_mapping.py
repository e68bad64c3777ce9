"""The ONE mapping from the reference implementation onto spec/ELR.tla.

* `VARIABLES` / `project(config, world)`: the refimpl state -> the spec's 21 variables.
* `spec_action(step, params)`: the spec action a simulator step (led by refimpl step `step`)
  implements, or "Stutter" for a step that changes no spec variable (a heartbeat, a rejected
  request, a timer with nothing to do...; such a step is never written to a trace).
* `boundary(step)`: the refimpl steps that start a spec step of their own inside a composite
  simulator step (see below).
* `message_value(env)`: a message as a canonical TLA+ record (trace parameters).

The spec is more abstract than the refimpl (its abstractions A1-A9: instantaneous metadata
propagation, no partition epoch, a fetch copies the whole log, the surviving part of the
unflushed log is chosen at restart, one controller, registration and unfencing in one step,
the leader knows its followers' logs...).  Where one spec step is carried out by several
refimpl steps, the ELR adapter runs them in one simulator event, synchronously, and the
simulator writes one trace line for them (refimpl/elr/adapter.py; docs/refimpl-elr.md lists
the compositions):

    FollowerFetch    SendFetch, HandleFetch(Diverging), TruncateLog, HandleFetchResponse and
                     the follower's next fetch (the leader learns its log end: HWM, acks)
    ShrinkIsr        the leader's ShrinkIsr, the controller's HandleAlterPartition, metadata
    RestartBroker    BrokerStart (log recovery), HandleBrokerRegistration (unfenced at once),
                     BrokerRegistered, metadata
    CleanShutdown    the broker's CleanShutdown, the controller's ControlledShutdown, metadata,
                     and the broker's stop
    every controller step: the metadata it publishes, applied by every running broker (A1)

Inside such an event a few refimpl steps are spec steps of their own (`boundary`): the
leader's ProposeIsrExpand after the fetch that caught the follower up, the controller's
GetReplicaLogInfo reply handling (SendReplicaLogInfo) and the recovery's election
(CompleteUncleanRecovery), and the unclean leader election after the step that left the
partition leaderless (UncleanLeaderElection).
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from typing import Any

from kraftcheck.values import Fn, canonical, to_itf

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
    "brokerEpoch", "fenced", "leader", "leaderEpoch", "isr", "elr", "lastKnownElr",
    "lastKnownLeader", "minIsr", "replies",
    "hwm", "pendingIsr", "pendingAcks",
    "acked", "committedLog", "uncleanShutdowns", "lostCommitted",
)

#: The disjuncts of spec/ELR.tla's Next (the action labels TLC gives its transitions).
SPEC_ACTIONS: frozenset[str] = frozenset({
    "Produce", "FollowerFetch", "ShrinkIsr", "ProposeIsrExpand", "CommitAlterPartition",
    "FenceBroker", "UnfenceBroker", "CleanShutdown", "UncleanShutdown", "RestartBroker",
    "ChangeMinIsr", "SendReplicaLogInfo", "CompleteUncleanRecovery", "UncleanLeaderElection",
})

NO_REPLY = "NoReply"

PROVISIONAL = frozenset({"HandleFetch", "HandleFetchDiverging", "HandleFetchResponse",
                         "TruncateLog", "ReceiveMetadata", "AlterPartitionRejected",
                         "ReceiveAlterPartitionResponse", "SendAlterPartition", "RejectFetch"})

#: The refimpl step leading a simulator step -> the spec action of the whole (composite) step.
ACTION_MAP: dict[str, str] = {
    "Produce": "Produce",
    "SendFetch": "FollowerFetch",                   # the fetch round (see the module doc)
    "ShrinkIsr": "ShrinkIsr",                       # the leader's request, committed at once
    "ProposeIsrExpand": "ProposeIsrExpand",
    "HandleAlterPartition": "CommitAlterPartition",  # an expansion (a shrink is ShrinkIsr's)
    "FenceBroker": "FenceBroker",                   # session expiry
    "UnfenceBroker": "UnfenceBroker",
    "CleanShutdown": "CleanShutdown",               # the broker's clean shutdown (composite)
    "BrokerStart": "RestartBroker",                 # the broker's start (composite)
    "AlterMinIsr": "ChangeMinIsr",
    "HandleGetReplicaLogInfoResponse": "SendReplicaLogInfo",
    "UncleanRecoveryElect": "CompleteUncleanRecovery",
    "UncleanLeaderElect": "UncleanLeaderElection",
}

#: Refimpl steps that are spec steps of their own when they occur inside a composite step.
BOUNDARIES: frozenset[str] = frozenset({
    "ProposeIsrExpand", "HandleGetReplicaLogInfoResponse", "UncleanRecoveryElect",
    "UncleanLeaderElect",
})

#: Refimpl steps that change no spec variable when they lead a simulator step.
STUTTERS = frozenset({
    "HandleBrokerHeartbeat", "SessionCheck", "RejectAlterPartition", "UncleanRecoveryTimeout",
    "RejectGetReplicaLogInfoResponse", "SendBrokerRegistration", "SendBrokerHeartbeat",
    "BrokerRegistered", "ReceiveMetadata", "ReceiveAlterPartitionResponse", "FetchIdle",
    "IsrCheckIdle", "SendAlterPartition", "RejectFetch", "RejectProduce",
    "SendGetReplicaLogInfoResponse", "SendProduce", "SendAlterMinIsr", "ProduceFailed",
    "ProduceAcked", "ControllerStart", "ClientStart", "CheckpointHighWatermark",
    "HandleBrokerRegistration", "ControlledShutdown", "HandleFetch", "HandleFetchDiverging",
    "HandleFetchResponse", "TruncateLog",
})


def spec_action(step: str, params: dict | None = None) -> str:
    """The spec action of a simulator step led by refimpl step `step` (with its params)."""
    params = params or {}
    if step == "HandleAlterPartition":
        if params.get("duplicate"):
            return "Stutter"
        return "ShrinkIsr" if params.get("shrink") else "CommitAlterPartition"
    if step in ACTION_MAP:
        return ACTION_MAP[step]
    if step in PROVISIONAL:
        return step
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
    return tuple(config.brokers) + tuple(config.values) + (NO_LEADER, NO_REPLY)


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


def acting_leader(config: ElrConfig, world) -> Any:
    """The state of the controller's leader if it acts as the leader of the current leader
    epoch (up or, for a crashed one, when it crashed), else None."""
    p = world.states[config.controller].partition
    ldr = world.states.get(p.leader)
    if ldr is not None and ldr.is_leader and ldr.metadata.leader_epoch == p.leader_epoch:
        return ldr
    return None


def _pending_isr(ctrl, ldr) -> frozenset:
    """spec `pendingIsr`: the leader's proposed ISR expansion while the controller would
    still commit it (same partition epoch and leader incarnation, every added replica
    unfenced with the epochs the leader named); {} otherwise (spec A2: the request is
    dropped)."""
    if ldr is None or ldr.pending_isr is None:
        return frozenset()
    p = ctrl.partition
    md = ldr.metadata
    reg = ctrl.registration(ldr.broker_id)
    added = ldr.pending_isr - p.isr
    if not added or md.partition_epoch != p.partition_epoch or reg is None or \
            reg.broker_epoch != ldr.broker_epoch:
        return frozenset()
    for r in added:
        x = ctrl.registration(r)
        if x is None or x.fenced or md.live(r) != (r, x.broker_epoch, x.fence_epoch):
            return frozenset()
    return frozenset(ldr.pending_isr)


class _View:
    """What the projection reads of a World, computed once per projection."""

    def __init__(self, config: ElrConfig, world):
        self.c = config
        self.w = world
        self.brokers = config.brokers
        self.ctrl = world.states[config.controller]
        self.p = self.ctrl.partition
        self.disks = world.disks
        self.ldr = acting_leader(config, world)
        self.live = self.ldr if self.ldr is not None and \
            world.up.get(self.ldr.broker_id, False) else None
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
    "isr": lambda v: frozenset(v.p.isr),
    "elr": lambda v: frozenset(v.p.elr),
    "lastKnownElr": lambda v: frozenset(v.p.last_known_elr),
    "lastKnownLeader": lambda v: v.p.last_known_leader,
    "minIsr": lambda v: v.ctrl.min_isr,
    "replies": lambda v: _fn(v, lambda b: _reply(v.ctrl.reply(b)) if v.ctrl.reply(b)
                             else NO_REPLY),
    "hwm": lambda v: len(v.committed),
    "pendingIsr": lambda v: _pending_isr(v.ctrl, v.ldr),
    "pendingAcks": lambda v: frozenset(a.offset + 1 for a in v.live.pending_acks)
    if v.live else frozenset(),
    "acked": _acked,
    "committedLog": lambda v: tuple(_record(e) for e in v.committed),
    "uncleanShutdowns": lambda v: sum(v.disk("ghost_unclean_shutdowns", 0)),
    "lostCommitted": lambda v: _fn(v, lambda b: frozenset(
        (o + 1, _record(e)) for o, e in still_missing(
            v.disks[b].get("ghost_lost_committed", frozenset()), v.w.states[b].log.entries))),
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
    "isr": lambda v: (v.p,),
    "elr": lambda v: (v.p,),
    "lastKnownElr": lambda v: (v.p,),
    "lastKnownLeader": lambda v: (v.p,),
    "minIsr": lambda v: (v.ctrl.min_isr,),
    "replies": lambda v: (v.ctrl.replies,),
    "hwm": lambda v: (v.committed,),
    "pendingIsr": lambda v: (v.p, v.ctrl.registrations, v.ldr),
    "pendingAcks": lambda v: (v.live,),
    "acked": lambda v: v.disk("ghost_acked"),
    "uncleanShutdowns": lambda v: v.disk("ghost_unclean_shutdowns", 0),
    "lostCommitted": lambda v: v.disk("ghost_lost_committed") + tuple(
        v.w.states[b].log for b in v.brokers),
}
_SCALARS = (int, bool, str, type(None))


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
