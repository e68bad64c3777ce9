"""The simulator adapter for KIP-966 (`kraftcheck simulate --protocol elr`).

Nodes: the brokers (named by the spec's broker model values), the controller and the client.
Every handler delegates to the pure state machines (controller.py, broker.py, client.py); the
adapter routes inputs, names each step after its spec action (spec_mapping), applies the
unclean-shutdown disk model, enforces the bounds of a TLC config (brokers, values, min ISR, max
log length, max unclean shutdowns...), and composes the refimpl steps that spec/ELR.tla takes
as one step.

Asynchronous metadata (issue 14).  The controller's PartitionMetadata pushes, AlterPartition
requests and responses, fetch requests and responses, produce requests and answers, min ISR
changes and (with FenceRunningBrokers = TRUE) heartbeats all travel the simulated network
(latency, loss, duplication, reordering, partitions): every broker acts on its own view of
the partition (leader, leader epoch, partition epoch, ISR), which may lag the controller's; a
replaced leader keeps serving until it learns the new epoch; the leader learns a follower's
log end offset from the follower's next fetch.

Composite steps (refimpl/sim/protocol.py, "Composite steps") remain only where one simulator
event stands for what the spec takes as one step:

* a broker's start: the log recovery, the registration (the controller detects an unclean
  shutdown and registers the new incarnation unfenced) and its answer, which carries the
  metadata the new incarnation starts from -- `RestartBroker`;
* a clean shutdown: the flush, the CleanShutdownFile, the controlled shutdown at the
  controller, and the broker's stop -- `CleanShutdown`;
* GetReplicaLogInfo requests and their replies (each reply the controller takes is a step of
  its own); with a profile's `async_log_info` (`delays`) the requests go through the network
  and only the reply is synchronous with its request;
* the leader's ISR expansion proposal after the fetch that caught a follower up (a step of
  its own within the same event);
* heartbeats (and their answers) when FenceRunningBrokers = FALSE (a running broker's
  session never expires).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from refimpl.sim.protocol import (Envelope, Monitor, Persist, ProtocolAdapter, SetTimer,
                                  SimLimits, Transition, World)

from . import spec_mapping
from .broker import FETCH_TIMER, HEARTBEAT_TIMER, HWM_CHECKPOINT_TIMER, ISR_TIMER, Broker
from .client import Client
from .config import config_from_bounds
from .controller import RECOVERY_TIMER, SESSION_TIMER, Controller
from .invariants import ElrMonitor
from .log import ReplicaLog
from .messages import (ACKS_ALL_OR_ONE, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                       BrokerRegistrationRequest, BrokerRegistrationResponse,
                       GetReplicaLogInfoRequest, GetReplicaLogInfoResponse, ProduceResponse)
from .types import ElrConfig, NO_LEADER

__all__ = ["ELRAdapter"]

#: Messages always delivered synchronously (see the module docstring).
_SYNC = (BrokerRegistrationRequest, BrokerRegistrationResponse,
         GetReplicaLogInfoRequest, GetReplicaLogInfoResponse)
#: ... unless the fault profile asks for asynchronous GetReplicaLogInfo (`delays`): then the
#: requests go through the network (latency, loss, long delays, partitions) and the reply is
#: taken at the request's delivery, in one step with the broker's answer (spec
#: SendReplicaLogInfo: replies[b] := LogInfo(b) when it is taken).  Between the request and
#: the controller's decision brokers restart, are fenced and unfenced, and late requests carry
#: an older partition leader epoch (fenced replies).
_SYNC_ASYNC_LOG_INFO = tuple(m for m in _SYNC if m is not GetReplicaLogInfoRequest)


class _Event:
    """The parts of one simulator event: refimpl transitions of several nodes, in the order
    they happen, each labelled with the spec action it starts (None: it continues the step
    before it).  Node states are read through the event, so a handler sees what the earlier
    parts did."""

    def __init__(self, adapter: "ELRAdapter", now: int, starting: tuple[str, ...] = (),
                 stopping: tuple[str, ...] = ()):
        self.a = adapter
        self.w = adapter.world
        self.now = now
        self.states: dict[str, Any] = {}
        self.acked: dict[str, frozenset] = {}
        self.parts: list[tuple[str, Transition]] = []
        self.starting = frozenset(starting)
        self.stopping = frozenset(stopping)

    def state(self, n: str) -> Any:
        return self.states[n] if n in self.states else self.w.states[n]

    def up(self, n: str) -> bool:
        return n not in self.stopping and (n in self.starting or self.w.up.get(n, False))

    def add(self, node: str, t: Transition, label: str | None) -> None:
        """Append `t` (refimpl transition of `node`, its sends already split) as a part; the
        acks=all acknowledgements it sends are added to the node's ghost `acked`."""
        persist = t.persist
        if node in self.a.config.brokers:
            done = frozenset((e.payload.offset + 1, e.payload.entry) for e in t.sends
                             if isinstance(e.payload, ProduceResponse)
                             and e.payload.error == "NONE" and e.payload.acks == "all")
            if done:
                old = self.acked.get(node, self.w.disks[node].get("ghost_acked", frozenset()))
                self.acked[node] = old | done
                persist = persist + (Persist("ghost_acked", self.acked[node]),)
        self.parts.append((node, replace(t, action=label,
                                         params=spec_mapping.spec_params(t.action, t.params),
                                         persist=persist, chain=())))
        self.states[node] = t.state

    def run(self, node: str, t: Transition | None, label: str | None,
            reply_to: str | None = None) -> None:
        """Apply `t` and everything it causes synchronously: its synchronous messages are
        delivered (depth first), then its chained parts run."""
        if t is None:
            return
        sync, rest = self.a._split(t, reply_to)
        self.add(node, replace(t, sends=rest), label)
        for env in sync:
            self.deliver(env)
        for n, part in t.chain:
            if n == node and self.state(node) is not t.state:
                raise RuntimeError(f"{node}: a chained part of {t.action} would overwrite "
                                   f"what a synchronous message changed")
            self.run(n, part, spec_mapping.boundary(part.action))

    def deliver(self, env: Envelope) -> None:
        if self.up(env.dst):
            t = self.a._handle(env.dst, self.state(env.dst), env, self.now)
            self.run(env.dst, t, spec_mapping.boundary(t.action) if t else None,
                     reply_to=env.src)

    def result(self) -> Transition | None:
        if not self.parts:
            return None
        head = self.parts[0][1]
        return replace(head, chain=tuple(self.parts[1:]))


class ELRAdapter(ProtocolAdapter):
    name = "elr"
    spec_module = "ELR"
    supports_unclean_shutdown = True
    atomic_graceful_shutdown = True
    async_log_info = False   # set by use_profile: GetReplicaLogInfo requests via the network

    def use_profile(self, profile) -> None:
        self.async_log_info = bool(getattr(profile, "async_log_info", False))

    def __init__(self, config: ElrConfig | None = None, max_restarts: int | None = None,
                 max_client_requests: int | None = None):
        self.config = config or ElrConfig()
        self.controller = Controller(self.config)
        self.broker = Broker(self.config)
        self.client = Client(self.config)
        self._max_restarts = max_restarts
        self._max_clients = max_client_requests
        self._power_losses = 0
        self.world: World | None = None
        self._encoder = spec_mapping.StateEncoder(self.config)

    @property
    def planted_bug(self) -> str | None:
        """The planted bug in effect (--bug, or the one a Bug* switch of --bounds selects)."""
        return self.config.bug

    @classmethod
    def from_options(cls, bounds: Any | None, bug: str | None) -> "ELRAdapter":
        config, limits = config_from_bounds(bounds, bug)
        return cls(config, **limits)

    # ---- static facts -----------------------------------------------------------------
    def nodes(self) -> tuple[str, ...]:
        c = self.config
        return c.brokers + (c.controller, c.producer)

    def model_values(self) -> tuple[str, ...]:
        return spec_mapping.model_values(self.config)

    def spec_variables(self) -> tuple[str, ...]:
        return spec_mapping.VARIABLES

    def sim_limits(self) -> SimLimits:
        return SimLimits(max_restarts=self._max_restarts,
                         max_client_requests=self._max_clients)

    def crash_allowed(self, node: str, state: Any) -> bool:
        """The controller never stops (spec A6: one controller, no failover)."""
        return node != self.config.controller

    def crash_kind(self, node: str, kind: str) -> str | None:
        """A broker's stop.  A graceful shutdown the spec does not allow now (its controlled
        shutdown would need an election beyond MaxLeaderEpoch) becomes a crash.  Once
        MaxUncleanShutdowns brokers stopped uncleanly (bounded mode), a crash becomes a clean
        shutdown, or no stop at all."""
        c = self.config
        if node not in c.brokers:
            return kind
        if kind == "graceful":
            if self.graceful_shutdown(node, self.world.states[node], self.world.now_ms):
                return kind
            kind = "crash"
        if c.max_unclean_shutdowns is not None and \
                self._unclean_shutdowns() >= c.max_unclean_shutdowns:
            ok = self.graceful_shutdown(node, self.world.states[node], self.world.now_ms)
            return "graceful" if ok is not None else None
        return kind

    def bind(self, world: World) -> None:
        self.world = world
        self._encoder = spec_mapping.StateEncoder(self.config)

    # ---- behaviour --------------------------------------------------------------------
    def init(self):
        """The cluster starts registered (the topic is created once the brokers have
        registered): every broker holds its broker epoch, unfenced, every broker in the ISR and
        the first broker the leader in leader epoch 1 (spec Init)."""
        self._power_losses = 0
        c = self.config
        ctrl = self.controller.initial_registered()
        states: dict[str, Any] = {c.controller: ctrl, c.producer: self.client.initial()}
        disks: dict[str, dict[str, Any]] = {c.controller: self.controller.disk_of(ctrl),
                                            c.producer: {}}
        timers: list[tuple[str, SetTimer]] = [(c.controller, t)
                                              for t in self.controller.initial_timers()]
        for b in c.brokers:
            states[b] = replace(self.broker.initial(b), broker_epoch=1,
                                metadata=ctrl.metadata_for(b))
            disks[b] = {"incarnation": 0, "log": ReplicaLog()}
            timers += [(b, t) for t in self.broker.timers()]
        return states, disks, timers

    def _handle(self, node: str, state: Any, env: Envelope, now_ms: int) -> Transition | None:
        """The refimpl's handler of a message."""
        c = self.config
        if node == c.controller:
            return self.controller.on_message(state, env.src, env.payload, now_ms)
        if node == c.producer:
            return self.client.on_message(state, env.src, env.payload, now_ms)
        return self.broker.on_message(state, env.src, env.payload, now_ms)

    def _split(self, t: Transition, reply_to: str | None
               ) -> tuple[tuple[Envelope, ...], tuple[Envelope, ...]]:
        """(synchronous, network) sends of `t`; `reply_to`: the sender of the synchronous
        message `t` answers (its answers to it are synchronous too)."""
        sync, rest = [], []
        always = _SYNC_ASYNC_LOG_INFO if self.async_log_info else _SYNC
        for env in t.sends:
            m = env.payload
            if isinstance(m, always):
                sync.append(env)
            elif isinstance(m, BrokerHeartbeatRequest):
                (sync if m.want_shutdown or not self.config.fence_running_brokers
                 else rest).append(env)
            elif isinstance(m, BrokerHeartbeatResponse):
                (sync if env.dst == reply_to and not self.config.fence_running_brokers
                 else rest).append(env)
            else:
                rest.append(env)
        return tuple(sync), tuple(rest)

    def _step(self, node: str, t: Transition | None, now_ms: int) -> Transition | None:
        """The simulator step of refimpl transition `t`: `t` and what it causes."""
        if t is None:
            return None
        ev = _Event(self, now_ms)
        ev.run(node, t, spec_mapping.spec_action(t.action, t.params))
        return ev.result()

    def deliver(self, node: str, state: Any, env: Envelope, now_ms: int) -> Transition | None:
        c = self.config
        if node == c.controller and isinstance(env.payload, BrokerHeartbeatRequest) and \
                not self.world.up.get(env.src, False):
            reg = state.registration(env.src)
            if reg is not None and reg.fenced:
                # A heartbeat sent just before its broker stopped does not unfence it (spec
                # UnfenceBroker: the broker is alive).
                return None
        return self._step(node, self._handle(node, state, env, now_ms), now_ms)

    def fire_timer(self, node: str, state: Any, timer: str, now_ms: int) -> Transition | None:
        c = self.config
        if node == c.controller:
            if timer == SESSION_TIMER:
                return self._step(node, self.controller.on_session_timer(state, now_ms), now_ms)
            if timer == RECOVERY_TIMER:
                return self._step(node, self.controller.on_recovery_timer(state, now_ms), now_ms)
            return None
        if node in c.brokers:
            handler = {HEARTBEAT_TIMER: self.broker.on_heartbeat_timer,
                       FETCH_TIMER: self.broker.on_fetch_timer,
                       ISR_TIMER: self.broker.on_isr_timer,
                       HWM_CHECKPOINT_TIMER: self.broker.on_hwm_checkpoint_timer}.get(timer)
            return self._step(node, handler(state, now_ms), now_ms) if handler else None
        return None

    def client_request(self, world: World, rng: random.Random) -> tuple[str, Transition] | None:
        """A produce request to the leader the controller names (a random broker when there is
        none: the client's metadata may be stale), or, when the config allows min ISR changes,
        now and then an AlterMinIsr to the controller.  With acks_policy "spec" the request
        asks for acks=all with the fallback to acks=1 (spec A7); with "mixed" acks=all or
        acks=1 at random."""
        c = self.config
        ctrl = world.states[c.controller]
        cl = world.states[c.producer]
        if c.min_isr_choices and rng.random() < 0.05:
            choices = [m for m in c.min_isr_choices if m != ctrl.min_isr]
            if choices:
                t = self.client.alter_min_isr(cl, rng.choice(choices))
                return c.producer, self._step(c.producer, t, world.now_ms)
        leader = ctrl.partition.leader
        if leader == NO_LEADER:
            leader = rng.choice(c.brokers)
        value = rng.choice(c.values)
        if c.acks_policy == "spec":
            acks = ACKS_ALL_OR_ONE
        else:
            acks = rng.choice(("all", "all", "one"))
        t = self.client.produce(cl, leader, value, acks)
        return c.producer, self._step(c.producer, t, world.now_ms)

    def restart(self, node: str, disk: Mapping[str, Any], now_ms: int) -> Transition | None:
        """A broker's start, registration included (spec RestartBroker; None when the
        controller would not register it now: MaxBrokerEpoch, or an election beyond
        MaxLeaderEpoch).  The committed records the restart lost (a power loss) are kept on the
        broker's disk as the ghost `ghost_lost_committed` (spec lostCommitted[b], set at the
        restart as the spec does: what it still missed plus the committed records it held and
        lost now; spec_mapping shows those its log does not hold again)."""
        c = self.config
        if node == c.controller:
            s = self.controller.restore(dict(disk), now_ms)
            return self._step(node, Transition(state=s, action="ControllerStart", params={},
                                               timers=self.controller.initial_timers()), now_ms)
        if node == c.producer:
            return self._step(node, Transition(state=self.client.restart(dict(disk)),
                                               action="ClientStart", params={}), now_ms)
        t0 = self.broker.restart(node, dict(disk), now_ms)
        reg = self.broker.registration_request(t0.state)
        tc = self.controller.on_registration(self.world.states[c.controller], reg.payload,
                                             now_ms)
        if tc is None:
            return None
        before = self.world.states[node].log.entries       # spec log[b]: its last log
        k = t0.state.log.end_offset
        committed = self.world.history.get("committed", ())
        held = spec_mapping.common_prefix_len(before, committed)
        lost = spec_mapping.still_missing(disk.get("ghost_lost_committed", frozenset()), before)
        lost |= {(o, committed[o]) for o in range(k, held)}
        persist = t0.persist + (Persist("ghost_lost_committed", frozenset(lost)),)
        ev = _Event(self, now_ms, starting=(node,))
        ev.add(node, replace(t0, persist=persist, params=dict(t0.params, k=k)), "RestartBroker")
        ev.run(c.controller, tc, None, reply_to=node)
        return ev.result()

    def graceful_shutdown(self, node: str, state: Any, now_ms: int) -> Transition | None:
        """A broker's clean shutdown with its controlled shutdown (spec CleanShutdown); None
        when the controller would not take it now (an election beyond MaxLeaderEpoch)."""
        c = self.config
        if node not in c.brokers:
            return None
        t0 = self.broker.graceful_shutdown(state, now_ms)
        ev = _Event(self, now_ms, stopping=(node,))
        sync, rest = self._split(t0, None)
        tc = None
        for env in sync:
            tc = self.controller.on_message(self.world.states[c.controller], node,
                                            env.payload, now_ms)
            if tc is None:
                return None
        ev.add(node, replace(t0, sends=rest), "CleanShutdown")
        ev.run(c.controller, tc, None, reply_to=node)
        return ev.result()

    def unclean_shutdown(self, node: str, disk: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        """Power loss (KIP-966 "Motivation"): a broker keeps only the flushed prefix of its log;
        the controller's metadata log and the client's acknowledgements are durable.  Past the
        power-loss budget (MaxUncleanShutdowns in bounded mode, else min ISR - 1: the KIP's
        fault model) the crash is a plain crash (the page cache survives).  Either way the
        broker registers without a CleanShutdownFile: spec UncleanShutdown."""
        c = self.config
        if node not in c.brokers:
            return disk
        d = self.plain_crash(node, disk)
        if self._power_losses < c.unclean_shutdown_budget:
            self._power_losses += 1
            d["log"] = d.get("log", ReplicaLog()).after_power_loss()
        return d

    def plain_crash(self, node: str, disk: dict[str, Any]) -> dict[str, Any]:
        """A broker's process crash (page cache kept): spec UncleanShutdown, counted."""
        if node not in self.config.brokers:
            return disk
        d = dict(disk)
        d["ghost_unclean_shutdowns"] = d.get("ghost_unclean_shutdowns", 0) + 1
        return d

    def _unclean_shutdowns(self) -> int:
        return sum(self.world.disks[b].get("ghost_unclean_shutdowns", 0)
                   for b in self.config.brokers)

    # ---- observation ------------------------------------------------------------------
    def after_step(self, world: World, node: str | None, action: str) -> None:
        """The ghost `committedLog` (spec): the consumer-visible log.  A newly elected leader
        starts from the part of it that it holds (spec ApplyOutcome's baseHwm); the running
        leader's HWM rule (Broker.next_hwm: rules.next_high_watermark over what the leader
        knows of its followers) grows it.  The leader's own HWM follows the same rule from
        its own starting point, which may lag (a new leader learns the HWM from its followers'
        fetches) or, after an unclean election, lead (Kafka keeps a new leader's stale HWM):
        the spec's HWM is the consumer-visible one."""
        h = world.history
        p = world.states[self.config.controller].partition
        committed = h.get("committed", ())
        if "epoch" in h and p.leader_epoch != h["epoch"] and p.leader in world.states:
            lg = world.states[p.leader].log.entries
            committed = committed[:spec_mapping.common_prefix_len(lg, committed)]
        h["epoch"] = p.leader_epoch
        ldr = spec_mapping.acting_leader(self.config, world)
        if ldr is not None and world.up.get(ldr.broker_id, False):
            hwm = self.broker.next_hwm(ldr, len(committed))
            if hwm > len(committed):
                committed = ldr.log.entries[:hwm]
        h["committed"] = committed

    def project(self, world: World) -> dict[str, Any]:
        return spec_mapping.project(self.config, world)

    def encode_state(self, world: World) -> str:
        """The default's bytes, from spec_mapping.StateEncoder's caches."""
        return self._encoder.encode(world)

    def message_value(self, env: Envelope) -> Any:
        return spec_mapping.message_value(env)

    def network_action(self, generic: str) -> str:
        return spec_mapping.network_action(generic)

    def monitor(self) -> Monitor:
        return ElrMonitor(self.config)
