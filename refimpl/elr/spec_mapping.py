"""The ONE mapping from the reference implementation onto spec/ELR.tla.

* `VARIABLES` and `project(config, world)`: the refimpl state -> the spec's variables.
* `spec_action(step)`: each refimpl step -> the spec action it implements (or a documented
  stutter / composition), and `spec_params` its parameters.
* `message_value(env)`: a message as a canonical TLA+ record (trace parameters).

docs/refimpl-elr.md documents the correspondence and its gaps.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from kraftcheck.values import Fn, canonical

from .log import ReplicaLog
from .types import NO_LEADER, ElrConfig, LogEntry

__all__ = ["VARIABLES", "ACTION_MAP", "STUTTERS", "project", "spec_action", "spec_params",
           "message_value", "model_values", "network_action"]

VARIABLES: tuple[str, ...] = (
    "isr", "elr", "lastKnownElr", "lastKnownLeader", "leader", "leaderEpoch", "partitionEpoch",
    "minIsr", "brokerEpoch", "fenced", "brokerUp", "log", "flushed", "hwm", "acked",
    "uncleanShutdowns",
)

#: refimpl step -> spec action.
ACTION_MAP: dict[str, str] = {
    "HandleBrokerRegistration": "HandleBrokerRegistration",
    "UnfenceBroker": "UnfenceBroker",
    "FenceBroker": "FenceBroker",
    "ControlledShutdown": "FenceBroker",
    "HandleAlterPartition": "HandleAlterPartition",
    "AlterMinIsr": "AlterMinIsr",
    "HandleGetReplicaLogInfoResponse": "HandleGetReplicaLogInfoResponse",
    "UncleanRecoveryTimeout": "HandleGetReplicaLogInfoResponse",
    "UncleanRecoveryElect": "UncleanRecoveryElect",
    "Produce": "Produce",
    "HandleFetch": "HandleFetch",
    "HandleFetchResponse": "HandleFetchResponse",
    "TruncateLog": "TruncateLog",
    "ShrinkIsr": "ShrinkIsr",
    "FlushLog": "FlushLog",
    "CleanShutdown": "CleanShutdown",
    "BrokerStart": "BrokerRestart",
    "ProduceAcked": "Ack",
}

#: refimpl steps that change no spec variable (message sends, bookkeeping): stutters.
STUTTERS = frozenset({
    "HandleBrokerHeartbeat", "SessionCheck", "RejectAlterPartition",
    "RejectGetReplicaLogInfoResponse", "SendBrokerRegistration", "SendBrokerHeartbeat",
    "BrokerRegistered", "ReceiveMetadata", "ReceiveAlterPartitionResponse", "FetchIdle",
    "SendFetch", "IsrCheckIdle", "SendAlterPartition", "RejectFetch", "HandleFetchDiverging",
    "RejectProduce", "SendGetReplicaLogInfoResponse", "SendProduce", "SendAlterMinIsr",
    "ProduceFailed", "ControllerStart", "ClientStart",
})


def spec_action(step: str) -> str:
    if step in ACTION_MAP:
        return ACTION_MAP[step]
    if step in STUTTERS:
        return "Stutter"
    raise KeyError(f"refimpl step {step!r} has no spec action (add it to spec_mapping)")


def spec_params(step: str, params: dict) -> dict:
    return dict(params, step=step)


def network_action(generic: str) -> str:
    return "Stutter" if generic in ("DropMessage", "DuplicateMessage", "Partition", "Heal") \
        else "Crash" if generic == "Crash" else generic


def model_values(config: ElrConfig) -> tuple[str, ...]:
    return tuple(config.brokers) + (NO_LEADER,)


def _record(e: LogEntry) -> Fn:
    return Fn({"epoch": e.epoch, "value": e.value})


def project(config: ElrConfig, world) -> dict[str, Any]:
    ctrl = world.states[config.controller]
    client = world.states[config.producer]
    p = ctrl.partition
    brokers = config.brokers
    regs = {r.broker_id: r for r in ctrl.registrations}

    def log_of(b: str) -> ReplicaLog:
        s = world.states[b]
        if world.up.get(b, False):
            return s.log
        return world.disks[b].get("log", ReplicaLog())

    logs = {b: log_of(b) for b in brokers}
    return {
        "isr": frozenset(p.isr),
        "elr": frozenset(p.elr),
        "lastKnownElr": frozenset(p.last_known_elr),
        "lastKnownLeader": p.last_known_leader,
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "partitionEpoch": p.partition_epoch,
        "minIsr": ctrl.min_isr,
        "brokerEpoch": Fn({b: regs[b].broker_epoch if b in regs else -1 for b in brokers}),
        "fenced": Fn({b: regs[b].fenced if b in regs else True for b in brokers}),
        "brokerUp": Fn({b: bool(world.up.get(b, False)) for b in brokers}),
        "log": Fn({b: tuple(_record(e) for e in logs[b].entries) for b in brokers}),
        "flushed": Fn({b: logs[b].flushed for b in brokers}),
        "hwm": Fn({b: world.states[b].hwm if world.up.get(b) else 0 for b in brokers}),
        "acked": frozenset(Fn({"offset": a.offset, "record": _record(a.entry)})
                           for a in client.acked_all()),
        "uncleanShutdowns": sum(world.disks[b].get("ghost_unclean_shutdowns", 0)
                                for b in brokers),
    }


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
    msg = env.payload
    v = _value(msg)
    return canonical(Fn(dict(v.items(), type=type(msg).__name__, src=env.src, dst=env.dst)))
