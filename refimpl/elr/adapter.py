"""The simulator adapter for KIP-966 (`kraftcheck simulate --protocol elr`).

Nodes: the brokers (named by the spec's broker model values), the controller and the client.
Every handler delegates to the pure state machines (controller.py, broker.py, client.py); the
adapter only routes inputs, renames each step to its spec action (spec_mapping.spec_action),
applies the unclean-shutdown disk model (the unflushed log suffix is lost), and enforces the
bounds of a TLC config (brokers, values, min ISR, max log length, max unclean shutdowns...).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from refimpl.sim.protocol import (Envelope, Monitor, ProtocolAdapter, SetTimer, SimLimits,
                                  Transition, World)

from . import spec_mapping
from .broker import FETCH_TIMER, FLUSH_TIMER, HEARTBEAT_TIMER, ISR_TIMER, Broker
from .client import Client
from .config import config_from_bounds
from .controller import RECOVERY_TIMER, SESSION_TIMER, Controller
from .invariants import ElrMonitor
from .log import ReplicaLog
from .types import ElrConfig, NO_LEADER

__all__ = ["ELRAdapter"]


class ELRAdapter(ProtocolAdapter):
    name = "elr"
    spec_module = "ELR"
    supports_unclean_shutdown = True

    def __init__(self, config: ElrConfig | None = None, max_restarts: int | None = None,
                 max_client_requests: int | None = None):
        self.config = config or ElrConfig()
        self.controller = Controller(self.config)
        self.broker = Broker(self.config)
        self.client = Client(self.config)
        self._max_restarts = max_restarts
        self._max_clients = max_client_requests
        self._unclean = 0

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
        """With FenceRunningBrokers = FALSE the spec fences only dead brokers; the refimpl
        cannot tell a dead broker from a silent one, so the simulator is asked not to lose
        messages (lost heartbeats would fence running brokers).  Partitions still can: a
        documented gap (docs/refimpl-elr.md)."""
        return SimLimits(max_restarts=self._max_restarts,
                         max_client_requests=self._max_clients,
                         allow_loss=self.config.fence_running_brokers)

    # ---- behaviour --------------------------------------------------------------------
    def init(self):
        """The cluster starts registered (the topic is created once the brokers have
        registered): every broker holds its broker epoch, fenced until its first heartbeat; the
        partition has every broker in the ISR and no leader yet."""
        self._unclean = 0
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

    def _named(self, t: Transition | None) -> Transition | None:
        if t is None:
            return None
        return replace(t, action=spec_mapping.spec_action(t.action, t.params),
                       params=spec_mapping.spec_params(t.action, t.params))

    def deliver(self, node: str, state: Any, env: Envelope, now_ms: int) -> Transition | None:
        c = self.config
        if node == c.controller:
            return self._named(self.controller.on_message(state, env.src, env.payload, now_ms))
        if node == c.producer:
            return self._named(self.client.on_message(state, env.src, env.payload, now_ms))
        return self._named(self.broker.on_message(state, env.src, env.payload, now_ms))

    def fire_timer(self, node: str, state: Any, timer: str, now_ms: int) -> Transition | None:
        c = self.config
        if node == c.controller:
            if timer == SESSION_TIMER:
                return self._named(self.controller.on_session_timer(state, now_ms))
            if timer == RECOVERY_TIMER:
                return self._named(self.controller.on_recovery_timer(state, now_ms))
            return None
        if node in c.brokers:
            handler = {HEARTBEAT_TIMER: self.broker.on_heartbeat_timer,
                       FETCH_TIMER: self.broker.on_fetch_timer,
                       ISR_TIMER: self.broker.on_isr_timer,
                       FLUSH_TIMER: self.broker.on_flush_timer}.get(timer)
            return self._named(handler(state, now_ms)) if handler else None
        return None

    def client_request(self, world: World, rng: random.Random) -> tuple[str, Transition] | None:
        """A produce request (acks chosen by `acks_policy`) to the leader the controller
        names (a random broker when there is none: the client's metadata may be stale), or, when
        the config allows min ISR changes, now and then an AlterMinIsr to the controller."""
        c = self.config
        ctrl = world.states[c.controller]
        cl = world.states[c.producer]
        if c.min_isr_choices and rng.random() < 0.05:
            choices = [m for m in c.min_isr_choices if m != ctrl.min_isr]
            if choices:
                return c.producer, self._named(self.client.alter_min_isr(cl, rng.choice(choices)))
        leader = ctrl.partition.leader
        if leader == NO_LEADER:
            leader = rng.choice(c.brokers)
        value = rng.choice(c.values)
        if c.acks_policy == "spec":
            acks = "all" if len(ctrl.partition.isr) >= ctrl.eff_min_isr else "one"
        else:
            acks = rng.choice(("all", "all", "one"))
        return c.producer, self._named(self.client.produce(cl, leader, value, acks))

    def restart(self, node: str, disk: Mapping[str, Any], now_ms: int) -> Transition:
        c = self.config
        if node == c.controller:
            s = self.controller.restore(dict(disk), now_ms)
            return self._named(Transition(state=s, action="ControllerStart", params={},
                                          timers=self.controller.initial_timers()))
        if node == c.producer:
            return self._named(Transition(state=self.client.restart(dict(disk)),
                                          action="ClientStart", params={}))
        return self._named(self.broker.restart(node, dict(disk), now_ms))

    def graceful_shutdown(self, node: str, state: Any, now_ms: int) -> Transition | None:
        if node in self.config.brokers:
            return self._named(self.broker.graceful_shutdown(state, now_ms))
        return None

    def unclean_shutdown(self, node: str, disk: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        """Power loss (KIP-966 "Motivation"): a broker keeps only the flushed prefix of its log;
        the controller's metadata log and the client's acknowledgements are durable.  Past the
        bound MaxUncleanShutdowns (by default min ISR - 1, the KIP's fault model) the crash is
        a plain crash (the page cache survives; the broker still registers without a
        CleanShutdownFile)."""
        c = self.config
        if node not in c.brokers:
            return disk
        if self._unclean >= c.unclean_shutdown_budget:
            return disk
        self._unclean += 1
        d = dict(disk)
        log = d.get("log", ReplicaLog())
        d["log"] = log.after_power_loss()
        d["ghost_unclean_shutdowns"] = d.get("ghost_unclean_shutdowns", 0) + 1
        if d["log"].end_offset < log.end_offset:   # "data loss unclean shutdown events"
            d["ghost_data_loss_shutdowns"] = d.get("ghost_data_loss_shutdowns", 0) + 1
        return d

    # ---- observation ------------------------------------------------------------------
    def project(self, world: World) -> dict[str, Any]:
        return spec_mapping.project(self.config, world)

    def message_value(self, env: Envelope) -> Any:
        return spec_mapping.message_value(env)

    def network_action(self, generic: str) -> str:
        return spec_mapping.network_action(generic)

    def monitor(self) -> Monitor:
        return ElrMonitor(self.config)


