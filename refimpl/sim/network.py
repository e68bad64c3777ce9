"""The simulated network: in-flight messages (a bag), latency, loss, duplication, partitions.

Messages in flight are keyed by a message id; a duplicated message has two copies under one id.
Partitions block directed links, so a one-way (asymmetric) partition blocks A->B but not B->A.
Loss and partitions take effect when a message would be delivered: the delivery becomes a
DropMessage step, so the trace shows the message leaving the network.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from refimpl.sim.faults import FaultProfile
from refimpl.sim.protocol import Envelope

__all__ = ["Network"]


@dataclass
class Network:
    profile: FaultProfile
    rng: random.Random
    allow_loss: bool = True
    allow_duplication: bool = True
    in_flight: dict[int, tuple[Envelope, int]] = field(default_factory=dict)
    blocked: set[tuple[str, str]] = field(default_factory=set)
    _next_id: int = 0
    count: int = 0  # total copies in flight
    _index: dict = field(default_factory=dict)  # envelope -> copies in flight (equal contents)
    quiet: bool = False  # faults stopped (Simulator faults_until_ms): no loss, dup, long delays

    def holds(self, env: Envelope) -> bool:
        """Is a message equal to `env` (same src, dst and contents) in flight?"""
        return env in self._index

    def latency(self) -> int:
        p = self.profile
        lo, hi = p.latency_ms
        d = self.rng.randint(lo, hi)
        if p.long_delay > 0 and not self.quiet and self.rng.random() < p.long_delay:
            a, b = p.long_delay_ms
            d += self.rng.randint(a, b)
        return d

    def add(self, env: Envelope) -> int:
        mid = self._next_id
        self._next_id += 1
        self.in_flight[mid] = (env, 1)
        self.count += 1
        self._index[env] = self._index.get(env, 0) + 1
        return mid

    def add_copy(self, mid: int) -> bool:
        entry = self.in_flight.get(mid)
        if entry is None:
            return False
        self.in_flight[mid] = (entry[0], entry[1] + 1)
        self.count += 1
        self._index[entry[0]] = self._index.get(entry[0], 0) + 1
        return True

    def remove(self, mid: int) -> Envelope | None:
        entry = self.in_flight.get(mid)
        if entry is None:
            return None
        env, copies = entry
        if copies == 1:
            del self.in_flight[mid]
        else:
            self.in_flight[mid] = (env, copies - 1)
        self.count -= 1
        n = self._index[env] - 1
        if n:
            self._index[env] = n
        else:
            del self._index[env]
        return env

    def should_duplicate(self) -> bool:
        return self.allow_duplication and self.profile.duplication > 0 and not self.quiet and \
            self.rng.random() < self.profile.duplication

    def lost(self) -> bool:
        return (self.allow_loss and self.profile.loss > 0 and not self.quiet
                and self.rng.random() < self.profile.loss)

    def is_blocked(self, src: str, dst: str) -> bool:
        return (src, dst) in self.blocked

    def partition(self, nodes: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
        """Start a random partition: a random side A against the rest B; one-way (A->B blocked
        only) with probability profile.asymmetric."""
        k = self.rng.randint(1, len(nodes) - 1)
        side = tuple(sorted(self.rng.sample(list(nodes), k)))
        rest = tuple(n for n in nodes if n not in side)
        one_way = self.rng.random() < self.profile.asymmetric
        for a in side:
            for b in rest:
                self.blocked.add((a, b))
                if not one_way:
                    self.blocked.add((b, a))
        return side, rest, one_way

    def partition_between(self, side, nodes, one_way: bool = False) -> tuple[tuple[str, ...], ...]:
        """A chosen partition: `side` against the other `nodes` (both ways, or only side ->
        rest when `one_way`); the scenario API's partition."""
        side = tuple(sorted(side))
        rest = tuple(n for n in nodes if n not in side)
        for a in side:
            for b in rest:
                self.blocked.add((a, b))
                if not one_way:
                    self.blocked.add((b, a))
        return side, rest

    def heal(self) -> None:
        self.blocked.clear()
