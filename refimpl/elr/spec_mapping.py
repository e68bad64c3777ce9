"""The ONE mapping from the reference implementation onto spec/ELR.tla.

* `VARIABLES` / `project(config, world)`: the refimpl state -> the spec's 21 variables.
* `spec_action(step, params)`: each refimpl step -> the spec action it implements, or
  "Stutter" for a step that changes no spec variable (a message send, a rejected request...).
* `message_value(env)`: a message as a canonical TLA+ record (trace parameters).

The spec is more abstract than the refimpl (its abstractions A1-A6: instantaneous metadata
propagation, no partition epoch, a fetch copies the whole log, the surviving part of the
unflushed log is chosen at restart, one controller).  Where one spec step is carried out by
several refimpl steps, every part is labelled with that spec action; docs/refimpl-elr.md lists
these compositions and the remaining gaps.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from kraftcheck.values import Fn, canonical

from .types import NO_EPOCH, NO_LEADER, ElrConfig, LogEntry

__all__ = ["VARIABLES", "NO_REPLY", "ACTION_MAP", "STUTTERS", "project", "spec_action",
           "spec_params", "message_value", "model_values", "network_action"]

#: spec/ELR.tla VARIABLES, in its order.
VARIABLES: tuple[str, ...] = (
    "alive", "log", "flushed", "shutdownFile",
    "brokerEpoch", "fenced", "leader", "leaderEpoch", "isr", "elr", "lastKnownElr",
    "lastKnownLeader", "minIsr", "replies",
    "hwm", "pendingIsr", "pendingAcks",
    "acked", "committedLog", "uncleanShutdowns", "dataLossShutdowns",
)

NO_REPLY = "NoReply"

#: refimpl step -> spec action (steps whose spec action depends on what happened are
#: resolved in `spec_action`).
ACTION_MAP: dict[str, str] = {
    # controller
    "HandleBrokerRegistration": "RestartBroker",     # controller half of RestartBroker
    "UnfenceBroker": "UnfenceBroker",
    "FenceBroker": "FenceBroker",                   # session expiry
    "ControlledShutdown": "CleanShutdown",          # controller half of CleanShutdown
    "AlterMinIsr": "ChangeMinIsr",
    "HandleGetReplicaLogInfoResponse": "SendReplicaLogInfo",
    "UncleanRecoveryElect": "CompleteUncleanRecovery",
    # brokers
    "Produce": "Produce",
    "HandleFetchResponse": "FollowerFetch",         # the follower copies the leader's log
    "TruncateLog": "FollowerFetch",                 # ... after truncating its divergent suffix
    "HandleFetch": "FollowerFetch",                 # the leader's HWM rule after the fetch
    "BrokerStart": "RestartBroker",                 # broker half of RestartBroker
    "CleanShutdown": "CleanShutdown",               # broker half of CleanShutdown
}

#: refimpl steps that change no spec variable.
STUTTERS = frozenset({
    "HandleBrokerHeartbeat", "SessionCheck", "RejectAlterPartition", "UncleanRecoveryTimeout",
    "RejectGetReplicaLogInfoResponse", "SendBrokerRegistration", "SendBrokerHeartbeat",
    "BrokerRegistered", "ReceiveMetadata", "ReceiveAlterPartitionResponse", "FetchIdle",
    "SendFetch", "IsrCheckIdle", "SendAlterPartition", "RejectFetch", "HandleFetchDiverging",
    "RejectProduce", "SendGetReplicaLogInfoResponse", "SendProduce", "SendAlterMinIsr",
    "ProduceFailed", "ProduceAcked", "ControllerStart", "ClientStart", "ShrinkIsr",
    "FlushLog",
})

#: The election the controller ran inside a step (params["election"]) -> the spec action that
#: step composes with.
_ELECTIONS = {"UncleanElection": "UncleanLeaderElection"}


def spec_action(step: str, params: dict | None = None) -> str:
    """The spec action of refimpl step `step` (with its params)."""
    params = params or {}
    if step == "HandleAlterPartition":
        if params.get("duplicate"):
            return "Stutter"
        # A shrink is requested and committed in one spec step; an expansion is proposed
        # (ProposeIsrExpand, at the leader's HandleFetch) and committed here.
        return "ShrinkIsr" if params.get("shrink") else "CommitAlterPartition"
    if step == "HandleFetch" and params.get("proposeExpand"):
        return "ProposeIsrExpand"
    if step == "HandleBrokerRegistration" and params.get("duplicate"):
        return "Stutter"
    if step in ("FenceBroker",) and not params.get("brokers"):
        return "Stutter"
    if params.get("election") in _ELECTIONS and step in ("FenceBroker", "UnfenceBroker",
                                                          "HandleBrokerRegistration"):
        return _ELECTIONS[params["election"]]
    if step in ACTION_MAP:
        return ACTION_MAP[step]
    if step in STUTTERS:
        return "Stutter"
    raise KeyError(f"refimpl step {step!r} has no spec action (add it to spec_mapping)")


def spec_params(step: str, params: dict) -> dict:
    """The trace parameters: the refimpl's own, plus the refimpl step name."""
    return dict(params, step=step)


def network_action(generic: str) -> str:
    """A crash of a broker is the spec's UncleanShutdown (its restart may keep the whole log:
    a plain crash, or lose the unflushed suffix: a power loss); a crash of the controller or
    the client, message loss / duplication and partitions change no spec variable."""
    return "UncleanShutdown" if generic == "Crash" else "Stutter"


def model_values(config: ElrConfig) -> tuple[str, ...]:
    return tuple(config.brokers) + tuple(config.values) + (NO_LEADER, NO_REPLY)


def _record(e: LogEntry) -> Fn:
    return Fn({"epoch": e.epoch, "value": e.value})


def _reply(info) -> Fn:
    return Fn({"brokerEpoch": info.broker_epoch, "leaderEpoch": info.current_leader_epoch,
               "lastEpoch": info.last_written_leader_epoch, "leo": info.log_end_offset})


def project(config: ElrConfig, world) -> dict[str, Any]:
    """The spec's variables.  Offsets become 1-based.  A crashed broker keeps the log it last
    had (spec A4) until it restarts; the leader-side variables are those of the controller's
    leader (its last state if it is down)."""
    ctrl = world.states[config.controller]
    client = world.states[config.producer]
    p = ctrl.partition
    brokers = config.brokers
    regs = {r.broker_id: r for r in ctrl.registrations}
    states = {b: world.states[b] for b in brokers}
    replies = {r.broker_id: r for r in ctrl.recovery.replies} if ctrl.recovery else {}
    ldr = states.get(p.leader)
    if ldr is not None and ldr.is_leader and ldr.metadata.leader_epoch == p.leader_epoch:
        hwm = ldr.hwm
        committed = tuple(_record(e) for e in ldr.log.entries[:hwm])
        extra = (ldr.pending_isr or frozenset()) - ldr.committed_isr
        pending_isr = frozenset(ldr.pending_isr) if extra else frozenset()
        pending_acks = frozenset(a.offset + 1 for a in ldr.pending_acks)
    else:
        hwm, committed, pending_isr, pending_acks = 0, (), frozenset(), frozenset()
    disks = world.disks
    return {
        "alive": Fn({b: bool(world.up.get(b, False)) for b in brokers}),
        "log": Fn({b: tuple(_record(e) for e in states[b].log.entries) for b in brokers}),
        "flushed": Fn({b: states[b].log.flushed for b in brokers}),
        "shutdownFile": Fn({b: (NO_EPOCH if disks[b].get("clean_shutdown") is None
                                else disks[b]["clean_shutdown"]) for b in brokers}),
        "brokerEpoch": Fn({b: regs[b].broker_epoch if b in regs else 0 for b in brokers}),
        "fenced": Fn({b: regs[b].fenced if b in regs else True for b in brokers}),
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "isr": frozenset(p.isr),
        "elr": frozenset(p.elr),
        "lastKnownElr": frozenset(p.last_known_elr),
        "lastKnownLeader": p.last_known_leader,
        "minIsr": ctrl.min_isr,
        "replies": Fn({b: _reply(replies[b]) if b in replies else NO_REPLY for b in brokers}),
        "hwm": hwm,
        "pendingIsr": pending_isr,
        "pendingAcks": pending_acks,
        "acked": frozenset((a.offset + 1, _record(a.entry)) for a in client.acked_all()),
        "committedLog": committed,
        "uncleanShutdowns": sum(disks[b].get("ghost_unclean_shutdowns", 0) for b in brokers),
        "dataLossShutdowns": sum(disks[b].get("ghost_data_loss_shutdowns", 0) for b in brokers),
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
    """A message: its fields as a record, plus its type, source and destination."""
    msg = env.payload
    v = _value(msg)
    return canonical(Fn(dict(v.items(), type=type(msg).__name__, src=env.src, dst=env.dst)))
