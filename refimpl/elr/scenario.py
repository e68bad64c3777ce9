"""A scripted, deterministic driver for KIP-966 scenarios (the KIP's own examples, unit tests).

Unlike the simulator (random faults), a scenario says exactly what happens: which links are cut,
who crashes (cleanly, by a plain crash, or by power loss), when the client produces.  It drives
the same adapter (adapter.ELRAdapter) and runs the same online monitor after every step, so a
scenario shows both the behaviour and the invariants' verdict.  Messages are delivered in FIFO
order with no latency; timers fire at their due time (no jitter).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from refimpl.sim.protocol import CancelTimer, Envelope, SetTimer, Transition, Violation, World

from .adapter import ELRAdapter
from .types import NO_LEADER, ElrConfig

__all__ = ["Cluster", "Step"]


@dataclass
class Step:
    """A part of a step: `action` is the spec action it starts (None: it continues the one
    before it, see refimpl/sim/protocol.py "Composite steps"), params["step"] the refimpl
    step."""

    time_ms: int
    node: str | None
    action: str | None
    params: dict


@dataclass
class Cluster:
    config: ElrConfig = field(default_factory=ElrConfig)

    def __post_init__(self):
        self.adapter = ELRAdapter(self.config)
        states, disks, timers = self.adapter.init()
        self.states: dict[str, Any] = dict(states)
        self.disks: dict[str, dict] = {n: dict(d) for n, d in disks.items()}
        self.up = {n: True for n in self.adapter.nodes()}
        self.now = 0
        self.queue: deque[Envelope] = deque()
        self.blocked: set[tuple[str, str]] = set()
        self.timers: dict[tuple[str, str], int] = {}
        self.monitor = self.adapter.monitor()
        self.violations: list[Violation] = []
        self.steps: list[Step] = []
        self.rng = random.Random(0)
        for node, t in timers:
            self.timers[(node, t.name)] = t.delay_ms
        self._world = World(self.now, self.states, self.up, self.disks, {},
                            blocked=self.blocked)
        self.adapter.bind(self._world)
        self._check("Init", None)

    # ---- plumbing ---------------------------------------------------------------------
    @property
    def world(self) -> World:
        self._world.now_ms = self.now
        return self._world

    def _check(self, action: str, node: str | None) -> None:
        self.adapter.after_step(self.world, node, action)    # the ghosts, as the simulator
        self.violations += self.monitor.check(self.world, action, node)

    def _apply(self, node: str, t: Transition | None) -> bool:
        """Apply a (possibly composite) transition part by part; the monitor runs after each
        step (a part with an action starts a step, see refimpl/sim/protocol.py)."""
        if t is None:
            return False
        self._world.now_ms = self.now
        parts = ((node, t),) + tuple(t.chain)
        step = (t.action, node)
        for i, (n, p) in enumerate(parts):
            if i and p.action is not None:
                step = (p.action, n)
            self.states[n] = p.state
            for w in p.persist:
                self.disks[n][w.key] = w.value
            for tm in p.timers:
                if isinstance(tm, SetTimer):
                    self.timers[(n, tm.name)] = self.now + tm.delay_ms
                elif isinstance(tm, CancelTimer):
                    self.timers.pop((n, tm.name), None)
            self.queue.extend(p.sends)
            # every part (a continuation part has action None; params["step"] names the
            # refimpl step)
            self.steps.append(Step(self.now, n, p.action, dict(p.params)))
            if (i + 1 == len(parts) or parts[i + 1][1].action is not None) and step[0]:
                self._check(*step)
        return True

    def deliver_all(self, limit: int = 10_000) -> None:
        """Deliver every message in flight (and those they cause), FIFO."""
        n = 0
        held: list[Envelope] = []
        while self.queue and n < limit:
            env = self.queue.popleft()
            n += 1
            if not self.up.get(env.dst):
                continue
            reliable = self.adapter.reliable(env)
            if (env.src, env.dst) in self.blocked:
                if reliable:           # a one-slot channel waits for the link (never lost)
                    held.append(env)
                continue
            t = self.adapter.deliver(env.dst, self.states[env.dst], env, self.now)
            if t is None and reliable:
                held.append(env)
                continue
            self._apply(env.dst, t)
        self.queue.extend(held)

    def run_for(self, ms: int) -> None:
        """Advance the clock by `ms`, firing due timers in time order and delivering."""
        end = self.now + ms
        self.deliver_all()
        while True:
            due = [(t, k) for k, t in self.timers.items() if t <= end and self.up.get(k[0])]
            if not due:
                break
            t, key = min(due)
            self.now = max(self.now, t)
            del self.timers[key]
            node, name = key
            self._apply(node, self.adapter.fire_timer(node, self.states[node], name, self.now))
            self.deliver_all()
        self.now = end

    # ---- faults -------------------------------------------------------------------------
    def isolate(self, node: str) -> None:
        """Cut every link to and from `node` (a network partition)."""
        for other in self.adapter.nodes():
            if other != node:
                self.blocked |= {(node, other), (other, node)}

    def heal(self) -> None:
        self.blocked.clear()

    def crash(self, node: str, power_loss: bool = False) -> None:
        """A crash; with `power_loss` the unflushed log suffix is lost (unclean shutdown)."""
        if power_loss:
            self.disks[node] = self.adapter.unclean_shutdown(node, dict(self.disks[node]), self.rng)
        else:
            self.disks[node] = self.adapter.plain_crash(node, self.disks[node])
        self._down(node, "UncleanShutdown")

    def clean_shutdown(self, node: str) -> None:
        """A clean shutdown and its controlled shutdown at the controller (one step)."""
        t = self.adapter.graceful_shutdown(node, self.states[node], self.now)
        if t is None:
            raise RuntimeError(f"{node} cannot shut down cleanly now")
        self.up[node] = False
        self.queue = deque(e for e in self.queue if e.dst != node)
        for k in [k for k in self.timers if k[0] == node]:
            del self.timers[k]
        self._apply(node, t)
        self.deliver_all()

    def _down(self, node: str, action: str) -> None:
        self.up[node] = False
        self.queue = deque(e for e in self.queue if e.dst != node)
        for k in [k for k in self.timers if k[0] == node]:
            del self.timers[k]
        self.steps.append(Step(self.now, node, action, {}))
        self._check(action, node)

    def restart(self, node: str) -> None:
        """A broker's start and registration (one step); the controller's answer included."""
        t = self.adapter.restart(node, self.disks[node], self.now)
        if t is None:
            raise RuntimeError(f"{node} cannot start now")
        self.up[node] = True
        self._apply(node, t)
        self.deliver_all()

    # ---- client -------------------------------------------------------------------------
    def produce(self, value: str, acks: str = "all") -> None:
        """The client sends one produce request to the controller's current leader."""
        c = self.config
        leader = self.states[c.controller].partition.leader
        if leader == NO_LEADER:
            leader = c.brokers[0]
        client = self.adapter.client
        self._apply(c.producer, client.produce(self.states[c.producer], leader, value, acks))
        self.deliver_all()

    def alter_min_isr(self, m: int) -> None:
        c = self.config
        self._apply(c.producer, self.adapter.client.alter_min_isr(self.states[c.producer], m))
        self.deliver_all()

    # ---- views --------------------------------------------------------------------------
    @property
    def partition(self):
        return self.states[self.config.controller].partition

    def log(self, b: str) -> tuple:
        return tuple(e.value for e in self.states[b].log.entries)

    def acked(self) -> tuple:
        return tuple(a.entry.value for a in self.states[self.config.producer].acked_all())

    def violated(self) -> set[str]:
        return {v.invariant for v in self.violations}
