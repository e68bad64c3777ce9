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

from . import liveness, spec_mapping
from .broker import FETCH_TIMER, HEARTBEAT_TIMER, HWM_CHECKPOINT_TIMER, ISR_TIMER, Broker
from .client import Client
from .config import config_from_bounds
from .controller import RECOVERY_TIMER, SESSION_TIMER, Controller
from .invariants import ElrMonitor
from .log import ReplicaLog
from .messages import (ACKS_ALL_OR_ONE, AlterPartitionRequest, AlterPartitionResponse,
                       BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                       BrokerRegistrationRequest, BrokerRegistrationResponse, FetchResponse,
                       GetReplicaLogInfoRequest, GetReplicaLogInfoResponse, PartitionMetadata,
                       ProduceResponse)
from .types import ElrConfig, NO_LEADER

__all__ = ["ELRAdapter"]

#: A fetch round stops after this many request/answer pairs (each diverging answer truncates
#: at least one record, so a round needs at most the log length plus one).
_MAX_FETCHES = 64

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
            self.deliver(env, absorb=t.action == "UnfenceBroker")
        for n, part in t.chain:
            if n == node and self.state(node) is not t.state:
                raise RuntimeError(f"{node}: a chained part of {t.action} would overwrite "
                                   f"what a synchronous message changed")
            self.run(n, part, spec_mapping.boundary(part.action))

    def deliver(self, env: Envelope, absorb: bool = False) -> None:
        """Deliver `env` within the event; `absorb`: the receiver's step continues the sender's
        spec step (an unfenced broker installs the metadata in UnfenceBroker, spec A8)."""
        if self.up(env.dst):
            t = self.a._handle(env.dst, self.state(env.dst), env, self.now)
            label = None if absorb or t is None else spec_mapping.boundary(t.action)
            self.run(env.dst, t, label, reply_to=env.src)

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
        self._reset_liveness()
        self._encoder = spec_mapping.StateEncoder(self.config)
        # FetchTriggeredIsrExpand: a fetch round in which the leader proposes is one spec
        # ProposeIsrExpand step; the replay driver (trace_checker/replay/elr.py) takes the
        # proposal as the held rest of the round itself and turns this off
        self.merge_fetch_proposal = self.config.fetch_triggered_expand

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
        self.broker.leader_hwm_start = self._leader_hwm_start
        self.broker.alter_channel_busy = self._alter_channel_busy

    def _leader_hwm_start(self, s: Any) -> int:
        """Spec abstraction A12: a broker starting a new leader epoch serves the
        consumer-visible prefix it holds (CommonPrefixLen(log[b], committedLog))."""
        committed = self.world.history.get("committed", ())
        return spec_mapping.common_prefix_len(s.log.entries, committed)

    def _alter_channel_busy(self, b: str) -> bool:
        """spec alterPartition[b] /= NoMessage: b's request or its answer is in flight (a
        request outlives its sender's restart)."""
        return spec_mapping.alter_partition_slot(self.config, self.world, b) is not None

    def reliable(self, env: Envelope) -> bool:
        """The AlterPartition channel is the spec's one slot per broker: a request is never
        lost, nor its answer to the incarnation that sent it while that one runs."""
        m = env.payload
        if isinstance(m, AlterPartitionRequest):
            return True
        if isinstance(m, AlterPartitionResponse):
            st = self.world.states.get(env.dst)
            return bool(self.world.up.get(env.dst)) and st is not None and \
                st.broker_epoch == m.broker_epoch
        return False

    # ---- behaviour --------------------------------------------------------------------
    def init(self):
        """The cluster starts registered (the topic is created once the brokers have
        registered): every broker holds its broker epoch, unfenced, every broker in the ISR and
        the first broker the leader in leader epoch 1 (spec Init)."""
        self._power_losses = 0
        self._reset_liveness()
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
                (sync if (env.dst == reply_to and not self.config.fence_running_brokers)
                 or t.action == "UnfenceBroker" else rest).append(env)
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
        m = env.payload
        if node in c.brokers and isinstance(m, (PartitionMetadata, BrokerHeartbeatResponse)):
            # Spec abstraction A10: a broker catching up with the metadata log replays it to
            # its end -- the controller's current partition state, never an intermediate one.
            ctrl = self.world.states[c.controller]
            reg = ctrl.registration(node)
            if reg is None or reg.broker_epoch != state.broker_epoch or reg.fenced:
                # a fenced running broker is cut off from the controller: it learns the
                # state when it is unfenced (spec UnfenceBroker)
                return None
            cur = ctrl.metadata_for(node)
            env = replace(env, payload=cur if isinstance(m, PartitionMetadata)
                          else replace(m, metadata=cur))
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
            if timer == FETCH_TIMER:
                return self._fetch_round(node, state, now_ms)
            handler = {HEARTBEAT_TIMER: self.broker.on_heartbeat_timer,
                       ISR_TIMER: self.broker.on_isr_timer,
                       HWM_CHECKPOINT_TIMER: self.broker.on_hwm_checkpoint_timer}.get(timer)
            return self._step(node, handler(state, now_ms), now_ms) if handler else None
        return None

    def _fetch_round(self, f: str, state: Any, now_ms: int) -> Transition:
        """Follower `f`'s fetch round (spec FollowerFetch): the Fetch to the leader of f's
        view, the leader's answer (a diverging epoch and the truncation, repeated until the
        logs match: the leader then learns f's fetch offset -- the part of f's log matching
        its own -- and applies its HWM rule), and the copy of the leader's log.  The records
        copied now count at f's next fetch.  Then the leader's ISR expansion proposal if f
        is in sync (spec ProposeIsrExpand, a step of its own; with FetchTriggeredIsrExpand
        the round and the proposal are one ProposeIsrExpand step).  The round needs the link
        between the two brokers (both ways)."""
        t0 = self.broker.on_fetch_timer(state, now_ms)
        ev = _Event(self, now_ms)
        if not t0.sends:
            ev.add(f, t0, "Stutter")
            return ev.result()
        req = t0.sends[0]
        leader = req.dst
        ev.add(f, replace(t0, sends=()), "FollowerFetch")
        blocked = self.world.blocked
        for _ in range(_MAX_FETCHES):
            if not ev.up(leader) or (f, leader) in blocked or (leader, f) in blocked:
                break
            tl = self.broker.on_fetch(ev.state(leader), f, req.payload, now_ms)
            if tl is None:
                break
            resp = next((e for e in tl.sends if e.dst == f
                         and isinstance(e.payload, FetchResponse)), None)
            ev.add(leader, replace(tl, sends=tuple(e for e in tl.sends if e is not resp)), None)
            tf = self.broker.on_fetch_response(ev.state(f), leader, resp.payload, now_ms) \
                if resp is not None else None
            if tf is not None:
                ev.add(f, tf, None)
            if tf is None or tf.action != "TruncateLog":
                for n, part in tl.chain:   # the leader's proposal, after the copy
                    if self.merge_fetch_proposal and part.action == "ProposeIsrExpand":
                        ev.run(n, part, None)
                        head_node, head = ev.parts[0]
                        ev.parts[0] = (head_node, replace(head, action="ProposeIsrExpand"))
                    else:
                        ev.run(n, part, spec_mapping.boundary(part.action))
                break
            req = self.broker.fetch_request(ev.state(f))
            if req is None:
                break
        else:
            raise RuntimeError(f"{f}: fetch round from {leader} did not converge")
        return ev.result()

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
        MaxLeaderEpoch).  The records the restart lost that counted -- b's log up to what a
        leader learned from its fetches or up to the consumer-visible log it held (spec
        CountedPrefix) -- join the ghost `ghost_lost_committed` on the broker's disk (spec
        lostCommitted[b]); fetch rounds remove those found again (after_step)."""
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
        reported = max([spec_mapping.reported_leo(self.world, ldr, node)
                        for ldr in c.brokers] + [0])
        counted = min(len(before), max(held, reported))
        lost = set(disk.get("ghost_lost_committed", frozenset()))
        lost |= {(o, before[o]) for o in range(k, counted)}
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

    # ---- liveness (refimpl/elr/liveness.py: spec/ELR.tla's properties) --------------------
    def _bounded(self) -> bool:
        c = self.config
        return any(x is not None for x in (c.max_leader_epoch, c.max_partition_epoch,
                                           c.max_broker_epoch))

    def has_leader(self, world: World) -> bool:
        return liveness.live_leader(self.config, world.states, world.up) is not None

    def _reset_liveness(self) -> None:
        # liveness (set once the faults stop, liveness_snapshot): whether they have stopped;
        # the HWM watch (leader, leader epoch, HWM, log end offset) of the live leader when
        # first seen since (HwmEventuallyAdvances); the recovery target (leader, leader epoch,
        # the log end offset every replica's HWM must reach)
        self._stopped = False
        self._hwm_watch: tuple[str, int, int, int] | None = None
        self._hwm_target: tuple[str, int, int] | None = None

    def _watch(self, world: World, lid: str | None) -> None:
        if lid is None:
            return
        epoch = world.states[self.config.controller].partition.leader_epoch
        w = self._hwm_watch
        if w is None or w[:2] != (lid, epoch):
            ls = world.states[lid]
            self._hwm_watch = (lid, epoch, ls.hwm, ls.log.end_offset)

    def liveness_snapshot(self, world: World) -> None:
        self._reset_liveness()
        self._stopped = True
        self._watch(world, liveness.live_leader(self.config, world.states, world.up))

    def liveness_properties(self, world: World) -> dict[str, str | None]:
        return liveness.judge(self.config, world.states, world.up, self._hwm_watch)

    def recovered(self, world: World) -> bool | None:
        """liveness.settled once the faults have stopped (False before: the simulator's
        probe at Init must not fix a target).  The target is the leader's log end offset when
        a live leader first has the full ISR after the faults stopped (a new leader or leader
        epoch sets a new one): the full ISR meets any min ISR, so those records must be
        committed, and every replica must learn it.  None in bounded mode: MaxLeaderEpoch,
        MaxPartitionEpoch and MaxBrokerEpoch may stop the protocol for good (the spec's
        properties carry those bounds in their premises)."""
        if self._bounded():
            return None
        if not self._stopped:
            return False
        c = self.config
        lid = liveness.live_leader(c, world.states, world.up)
        self._watch(world, lid)
        p = world.states[c.controller].partition
        t = self._hwm_target
        if lid is None:
            self._hwm_target = t = None
        elif p.isr == frozenset(c.brokers) and (t is None or t[:2] != (lid, p.leader_epoch)):
            self._hwm_target = t = (lid, p.leader_epoch, world.states[lid].log.end_offset)
        return liveness.settled(c, world.states, world.up, None if t is None else t[2])

    # ---- observation ------------------------------------------------------------------
    def after_step(self, world: World, node: str | None, action: str) -> None:
        """The ghost `committedLog` (spec): the consumer-visible log.
        * An election (a new leader epoch at the controller) keeps the part of it the elected
          leader holds (spec CommittedAfter).
        * A broker that starts leading a new leader epoch keeps the part it holds too, and
          serves it as its HWM (abstraction A12: Broker.leader_hwm_start).
        * When a broker acting as leader (in its own view, also a stale one) advances its HWM
          beyond the consumer-visible log, that log becomes its log up to its HWM (spec
          LeaderHwm)."""
        h = world.history
        c = self.config
        p = world.states[c.controller].partition
        committed = h.get("committed", ())
        acked = spec_mapping.acked_entries(world, c.brokers)
        key = spec_mapping.fetch_key(world, c.brokers, acked)
        if action == "FollowerFetch" and key != h.get("fetch_key"):
            # spec FollowerFetch's StillMissing, with acked and committedLog before the step
            logs = [world.states[b].log.entries for b in c.brokers]
            prev_acked = h.get("acked", frozenset())
            for b in c.brokers:
                lost = world.disks[b].get("ghost_lost_committed", frozenset())
                if not lost:
                    continue
                mine = world.states[b].log.entries
                keep = frozenset(e for e in lost if not spec_mapping.holds(mine, e) and (
                    e in prev_acked or spec_mapping.holds(committed, e)
                    or any(spec_mapping.holds(lg, e) for lg in logs)))
                if keep != lost:
                    world.disks[b]["ghost_lost_committed"] = keep
        h["fetch_key"] = key
        h["acked"] = acked
        if "epoch" in h and p.leader_epoch != h["epoch"] and p.leader in world.states:
            lg = world.states[p.leader].log.entries
            committed = committed[:spec_mapping.common_prefix_len(lg, committed)]
        h["epoch"] = p.leader_epoch
        terms = h.setdefault("terms", {})
        hwms = h.setdefault("hwms", {})
        for b in c.brokers:
            st = world.states[b]
            leads = world.up.get(b, False) and st.is_leader
            term = (st.incarnation, st.metadata.leader_epoch) if leads else None
            if leads and terms.get(b) != term:
                committed = committed[:spec_mapping.common_prefix_len(st.log.entries, committed)]
            terms[b] = term
            hwm = st.hwm if leads else 0
            if leads and hwm > hwms.get(b, 0) and hwm > len(committed):
                committed = st.log.entries[:hwm]
            hwms[b] = hwm
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
