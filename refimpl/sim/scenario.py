"""Scenario tests: the faults a user writes first, at chosen times (Kafka's
RaftEventSimulationTest style: partition a set of nodes for a window, heal, crash or wipe a
chosen node at a chosen time and restart it later).

    sc = (Scenario()
          .partition({"n1"}, start_ms=3000, end_ms=6000)      # n1 cut off both ways
          .crash("n2", at_ms=8000, restart_ms=9000)
          .wipe("n3", at_ms=12000, restart_ms=14000))         # disk loss (spec LoseDisk)
    r = Simulator(KRaftAdapter(), seed, get_profile("none"), 20_000, scenario=sc,
                  faults_until_ms=15_000).run()

The events are applied by the simulator at their times, in the order given when two share a
time; they are driver actions (stutters in the trace, except the restart, which is the spec's
Restart or LoseDisk step).  A scenario wipe restarts exactly when told (the fault profile's
disk-loss discipline is not applied: the scenario is the user's).  Combine a scenario with the
fault profile `none` to get exactly the faults written, or with another profile to add random
faults on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Scenario", "ScenarioEvent", "ScenarioError"]

KINDS = ("partition", "heal", "crash", "wipe", "graceful", "restart")


class ScenarioError(ValueError):
    pass


@dataclass(frozen=True)
class ScenarioEvent:
    at_ms: int
    kind: str                         # one of KINDS
    nodes: tuple[str, ...] = ()       # partition: the cut-off side; others: (node,)
    one_way: bool = False             # partition: only side -> rest is blocked


@dataclass
class Scenario:
    events: list[ScenarioEvent] = field(default_factory=list)

    def _add(self, at_ms: int, kind: str, nodes=(), one_way: bool = False) -> "Scenario":
        if not isinstance(at_ms, int) or at_ms < 0:
            raise ScenarioError(f"{kind}: time must be an integer >= 0 ms, got {at_ms!r}")
        self.events.append(ScenarioEvent(at_ms, kind, tuple(sorted(nodes)), one_way))
        return self

    def partition(self, nodes, start_ms: int, end_ms: int | None = None,
                  one_way: bool = False) -> "Scenario":
        """Cut `nodes` off from every other node from start_ms (both directions, or only
        nodes -> others when one_way) until end_ms (None: until a `heal`)."""
        nodes = set(nodes)
        if not nodes:
            raise ScenarioError("partition: no nodes")
        if end_ms is not None and end_ms <= start_ms:
            raise ScenarioError(f"partition: end {end_ms} ms is not after start {start_ms} ms")
        self._add(start_ms, "partition", nodes, one_way)
        if end_ms is not None:
            self._add(end_ms, "heal")
        return self

    def heal(self, at_ms: int) -> "Scenario":
        """Remove every partition at at_ms."""
        return self._add(at_ms, "heal")

    def _stop(self, kind: str, node: str, at_ms: int, restart_ms: int | None) -> "Scenario":
        if restart_ms is not None and restart_ms <= at_ms:
            raise ScenarioError(f"{kind} {node}: restart {restart_ms} ms is not after {at_ms} ms")
        self._add(at_ms, kind, (node,))
        if restart_ms is not None:
            self._add(restart_ms, "restart", (node,))
        return self

    def crash(self, node: str, at_ms: int, restart_ms: int | None = None) -> "Scenario":
        """Kill `node` at at_ms (its disk survives); restart it at restart_ms if given."""
        return self._stop("crash", node, at_ms, restart_ms)

    def graceful(self, node: str, at_ms: int, restart_ms: int | None = None) -> "Scenario":
        """Shut `node` down gracefully (a KRaft leader resigns with EndQuorumEpoch)."""
        return self._stop("graceful", node, at_ms, restart_ms)

    def wipe(self, node: str, at_ms: int, restart_ms: int | None = None) -> "Scenario":
        """Kill `node` at at_ms and lose its disk; it restarts empty at restart_ms."""
        return self._stop("wipe", node, at_ms, restart_ms)

    def restart(self, node: str, at_ms: int) -> "Scenario":
        return self._add(at_ms, "restart", (node,))

    def check(self, nodes) -> None:
        """Every node named is one of `nodes` (raises ScenarioError otherwise)."""
        known = set(nodes)
        for e in self.events:
            bad = [n for n in e.nodes if n not in known]
            if bad:
                raise ScenarioError(f"{e.kind} at {e.at_ms} ms: unknown node(s) {', '.join(bad)}; "
                                    f"the cluster has {', '.join(sorted(known))}")
            if e.kind == "partition" and set(e.nodes) >= known:
                raise ScenarioError(f"partition at {e.at_ms} ms: every node is on one side")

    @property
    def last_fault_ms(self) -> int:
        return max((e.at_ms for e in self.events), default=0)
