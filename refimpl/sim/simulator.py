"""The deterministic discrete-event simulator (protocol-agnostic; see refimpl/sim/protocol.py).

One `random.Random(seed)` drives everything (latency, loss, duplication, partitions, crashes,
timer jitter, client workload); the virtual clock only advances to the next event.  The same
seed, adapter options and fault profile therefore give the same steps and a byte-identical
trace.

Each step is one event: a message delivery (or its loss -> DropMessage), a duplication, a timer
expiry, a client request, a crash / restart (or a disk loss), a partition / heal.  After every
step the adapter's online invariants are checked; the run stops at the first violation
(end_reason "violation"), after `max_steps` steps, or when nothing is left to happen.

Liveness (`faults_until_ms=T`): at T the random faults stop (partitions heal, no more loss,
duplication, long delays, crashes; nodes already down still come back), and the run must reach
a recovered state (the adapter's `recovered`: a leader elected and every replica's HWM equal to
the leader's) by T + `liveness_bound_ms`, else the property LIVENESS is violated.  With
`stop_when_recovered` the run ends there (end_reason "recovered").  The simulator also
measures the leaderless time (the adapter's `has_leader`) of a liveness run, or of any run
with `measure_leaderless=True`: `SimResult.liveness`.

A `Scenario` (refimpl/sim/scenario.py) adds faults at chosen times.
"""

from __future__ import annotations

import heapq
import json
import random
from dataclasses import dataclass
from typing import Any, Callable

from refimpl.sim.faults import FaultProfile
from refimpl.sim.network import Network
from refimpl.sim.protocol import (
    CancelTimer, Envelope, ProtocolAdapter, SetTimer, Transition, World, dumps,
)
from refimpl.sim.scenario import Scenario, ScenarioError
from refimpl.trace.format import footer_obj, header_obj, step_line

__all__ = ["Simulator", "SimResult", "run_one", "first_flagged_seed", "LIVENESS",
           "DEFAULT_LIVENESS_BOUND_MS"]

# event kinds (the order breaks no ties: (time, seq) does)
(_DELIVER, _DUPLICATE, _TIMER, _CLIENT, _CRASH, _RESTART, _PARTITION, _HEAL, _SCENARIO,
 _FAULTS_STOP, _LIVENESS_DEADLINE) = range(11)

# The liveness property checked online when the faults stop (faults_until_ms): KIP-595's
# quorum elects a leader again and every replica catches up (Kafka's RaftEventSimulationTest
# waits for hasConsistentLeader and allReachedHighWatermark).
LIVENESS = "LeaderElectedAndReplicasCaughtUp"
# A crash just before T keeps a node down up to 3 s (profiles' downtime), its fetch timeout is
# 2 s, an election with backoff takes up to 2 s a round: 15 s leaves room for a few rounds.
DEFAULT_LIVENESS_BOUND_MS = 15_000
_REJOIN_RETRY_MS = 100  # a wiped node waiting for the quorum to move on checks again this often

_RETRY_MS = 25  # an event refused by the in-flight bound is tried again this much later
_RESTART_RETRY_MS = 500  # a node whose restart the adapter refused tries again this much later
_MAX_IDLE_EVENTS = 5000  # this many events in a row without a step: nothing can happen any more


@dataclass
class SimResult:
    trace_id: str
    seed: int
    steps: int
    end_reason: str
    invariants: dict[str, str]
    violations: list[dict]
    lines: list[str] | None = None
    time_ms: int = 0
    events: int = 0
    trace_steps: int = 0  # steps written (stutters are not); `steps` counts every action
    # leaderless time and recovery (only when the adapter says what a leader is):
    # {"leaderless_ms", "longest_leaderless_ms", "leaderless_intervals", "first_leader_ms",
    #  "faults_until_ms", "recovered_ms" (time after faults_until_ms, or None), "verdict"
    #  ("recovered" | "not_recovered" | "undecided")}
    liveness: dict | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    def text(self) -> str:
        return "\n".join(self.lines or ()) + "\n"


@dataclass
class _Stats:
    restarts: int = 0
    clients: int = 0


class Simulator:
    def __init__(self, adapter: ProtocolAdapter, seed: int, profile: FaultProfile,
                 max_steps: int, *, trace: bool = True, trace_id: str | None = None,
                 bounds_label: Any = None, bug: str | None = None,
                 stop_on_violation: bool = True, scenario: Scenario | None = None,
                 faults_until_ms: int | None = None,
                 liveness_bound_ms: int = DEFAULT_LIVENESS_BOUND_MS,
                 stop_when_recovered: bool = False, measure_leaderless: bool | None = None):
        self.a = adapter
        self.seed = seed
        self.profile = profile
        self.max_steps = max_steps
        self.tracing = trace
        self.bug = bug
        self.stop_on_violation = stop_on_violation
        self.trace_id = trace_id or f"{adapter.name}-{profile.name}-{seed}"
        self.bounds_label = bounds_label
        self.rng = random.Random(seed)
        adapter.use_profile(profile)
        lim = adapter.sim_limits()
        self.limits = lim
        self.net = Network(profile, self.rng, allow_loss=lim.allow_loss,
                           allow_duplication=lim.allow_duplication)
        self.nodes = adapter.nodes()
        self.now = 0
        self._seq = 0
        self._heap: list = []
        self._timers: dict[tuple[str, str], int] = {}
        self._gen = 0
        self.stats = _Stats()
        self.lines: list[str] = []
        self.step_no = 0
        self.monitor = adapter.monitor()
        self.violations: list[dict] = []
        self._tid_json = json.dumps(self.trace_id)
        self._permanently_down: set[str] = set()
        self.events = 0  # simulator events processed (steps + events that changed nothing)
        self.trace_steps = 0  # steps written to the trace (actions minus stutters)
        self._last_state = ""
        self.scenario = scenario
        if scenario is not None:
            scenario.check(self.nodes)
            if not adapter.supports_disk_loss and any(e.kind == "wipe" for e in scenario.events):
                raise ScenarioError(f"wipe: protocol {adapter.name!r} does not model disk loss")
        if faults_until_ms is not None and faults_until_ms < 0:
            raise ValueError("faults_until_ms must be >= 0")
        self.faults_until_ms = faults_until_ms
        self.liveness_bound_ms = liveness_bound_ms
        self.stop_when_recovered = stop_when_recovered
        self._faults_on = True
        # stopped nodes whose disk is lost: True = the fault profile's (the loss takes effect
        # at the restart, under the adapter's `rejoin_allowed`), False = a scenario `wipe`
        # (already wiped; restarts when the scenario says)
        self._lost_disk: dict[str, bool] = {}
        # leaderless time measured (when the adapter supports it): by default in liveness runs
        self._measure = faults_until_ms is not None if measure_leaderless is None \
            else measure_leaderless
        self._track = False
        self._leaderless_since: int | None = 0
        self._leaderless_ms = 0
        self._longest_leaderless = 0
        self._leaderless_intervals = 0
        self._first_leader_ms: int | None = None
        self.recovered_at: int | None = None
        # the adapter's named liveness properties, judged at recovery or at the deadline
        self._properties: dict[str, str | None] | None = None

    # ------------------------------------------------------------------ scheduling

    def _push(self, at: int, kind: int, a: Any = None, b: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, kind, a, b))

    def _exp(self, mean: int) -> int:
        return max(1, int(self.rng.expovariate(1.0 / mean)))

    # ------------------------------------------------------------------ applying transitions

    def _apply(self, node: str, t: Transition) -> None:
        """State, disk, timers; and the messages unless they are split into their own steps."""
        self.states[node] = t.state
        if t.persist:  # the disk is written before anything is sent
            disk = self.disks[node]
            for p in t.persist:
                disk[p.key] = p.value
        for tm in t.timers:
            key = (node, tm.name)
            if type(tm) is SetTimer:
                self._gen += 1
                self._timers[key] = self._gen
                d = tm.delay_ms + (self.rng.randint(0, tm.jitter_ms) if tm.jitter_ms > 0 else 0)
                self._push(self.now + d, _TIMER, key, self._gen)
            elif type(tm) is CancelTimer:
                self._timers.pop(key, None)
        if t.split_sends is None:
            for env in t.sends:
                self._transmit(env)

    def _transmit(self, env: Envelope) -> None:
        net = self.net
        mid = net.add(env)
        self._push(self.now + net.latency(), _DELIVER, mid)
        if not self.a.reliable(env) and net.should_duplicate():
            self._push(self.now + net.latency(), _DUPLICATE, mid)

    def _take(self, node: str, t: Transition, env: Envelope | None = None,
              stop_node: bool = False) -> bool:
        """Apply a transition and record its step(s); True when the run must stop.
        `stop_node`: the node stops (graceful shutdown) within the step itself."""
        self._apply(node, t)
        if t.halt:
            self._crash(node)
            self._permanently_down.add(node)
        if stop_node:
            self._crash(node)
        if t.chain:
            return self._take_chain(node, t, env)
        stop = False
        if t.action is not None:
            stop = self._record(t.action, t.params, node, env)
        if t.split_sends is not None and not stop:
            m = self.limits.max_in_flight
            for e in t.sends:
                if self.step_no >= self.max_steps:
                    break  # the rest is not sent: the spec's Send steps simply not taken
                if self.net.holds(e) or (m is not None and self.net.count >= m):
                    continue  # the spec's Send guard: not taken now (a re-send comes later)
                self._transmit(e)
                if self._record(t.split_sends, {"node": e.src}, node, e):
                    return True
        return stop

    def _take_chain(self, node: str, t: Transition, env: Envelope | None) -> bool:
        """The rest of a composite (`t` is applied): each part in order; a step is recorded
        after the last part of each group (a part with an action starts a new group)."""
        action, params, at, msg = t.action, t.params, node, env
        for n, part in t.chain:
            if part.action is not None:
                if action is not None and self._record(action, params, at, msg):
                    return True
                action, params, at, msg = part.action, part.params, n, None
            self._apply(n, part)
        return action is not None and self._record(action, params, at, msg)

    def _fits(self, t: Transition, consumed: int = 0) -> bool:
        """The in-flight bound for messages sent within the step itself (replies and
        broadcasts); split requests are checked one by one when sent."""
        m = self.limits.max_in_flight
        if m is None or t.split_sends is not None:
            return True
        after = self.net.count - consumed + len(t.sends)
        return after <= m or len(t.sends) <= consumed

    def _crash(self, node: str) -> None:
        self.up[node] = False
        for key in [k for k in self._timers if k[0] == node]:
            del self._timers[key]

    # ------------------------------------------------------------------ recording

    def _record(self, action: str, params: Any, node: str | None, env: Envelope | None = None) -> bool:
        """Write the step and check the invariants; True when the run must stop.

        A step that leaves every spec variable unchanged (a crash, a partition, a request
        timeout...) is a stutter: it counts as an action but is not written to the trace, so
        every written step is a transition of the spec."""
        self.step_no += 1
        self.a.after_step(self.world, node, action)
        if self.tracing:
            state = self.a.encode_state(self.world)
            if state != self._last_state:
                self.trace_steps += 1
                self._last_state = state
                self.lines.append(step_line(self._tid_json, self.trace_steps, self.now, action,
                                            self.a.params_json(params, env), state))
        found = self.monitor.check(self.world, action, node)
        if found:
            at = self.trace_steps if self.tracing else self.step_no
            for v in found:
                self.violations.append({"invariant": v.invariant, "step": at,
                                        "action": action, "detail": v.detail})
            return self.stop_on_violation
        return False

    # ------------------------------------------------------------------ the run

    def run(self) -> SimResult:
        a, p = self.a, self.profile
        states, disks, init_timers = a.init()
        self.states = dict(states)
        self.disks = {n: dict(d) for n, d in disks.items()}
        self.up = {n: True for n in self.nodes}
        self.world = World(0, self.states, self.up, self.disks, self.net.in_flight,
                           blocked=self.net.blocked)
        a.bind(self.world)
        for node, tm in init_timers:
            self._apply(node, Transition(self.states[node], "Init", timers=(tm,)))
        a.after_step(self.world, None, "Init")
        if self.tracing:
            self.lines.append(dumps(header_obj(
                trace_id=self.trace_id, protocol=a.name, seed=self.seed, fault_profile=p.name,
                bug=self.bug, bounds=self.bounds_label, spec_module=a.spec_module,
                model_values=a.model_values(), variables=a.spec_variables())))
            self._last_state = a.encode_state(self.world)
            self.lines.append(step_line(self._tid_json, 0, 0, "Init", "{}", self._last_state))
        init_v = self.monitor.check(self.world, "Init", None)
        for v in init_v:
            self.violations.append({"invariant": v.invariant, "step": 0, "detail": v.detail})
        if p.client_every_ms:
            self._push(self._exp(p.client_every_ms), _CLIENT)
        if p.crash_every_ms and len(self.nodes) > 1:
            self._push(self._exp(p.crash_every_ms), _CRASH)
        if p.partition_every_ms and len(self.nodes) > 1:
            self._push(self._exp(p.partition_every_ms), _PARTITION)
        if self.scenario is not None:
            for ev in self.scenario.events:
                self._push(ev.at_ms, _SCENARIO, ev)
        self._track = self._measure and a.has_leader(self.world) is not None
        if self.faults_until_ms is not None:
            if a.recovered(self.world) is None:
                raise ValueError(f"{a.name}: the adapter cannot judge recovery (liveness)")
            self._push(self.faults_until_ms, _FAULTS_STOP)
            self._push(self.faults_until_ms + self.liveness_bound_ms, _LIVENESS_DEADLINE)
        end = "violation" if init_v and self.stop_on_violation else None
        idle = 0
        while end is None:
            if self.step_no >= self.max_steps:
                end = "max_steps"
                break
            if not self._heap:
                end = "quiescent"
                break
            at, _, kind, x, y = heapq.heappop(self._heap)
            self.events += 1
            self.now = at
            self.world.now_ms = at
            before = self.step_no
            stop = self._handlers[kind](self, x, y)
            if self._track:
                self._observe_leader()
            if stop:
                end = "violation"
            elif self.recovered_at is not None and self.stop_when_recovered:
                end = "recovered"
            elif self.step_no == before:
                idle += 1
                if idle > _MAX_IDLE_EVENTS:
                    end = "quiescent"
            else:
                idle = 0
        names = self.monitor.names
        if self.faults_until_ms is not None:
            names = tuple(names) + (LIVENESS,)
        bad = {v["invariant"] for v in self.violations}
        inv = {n: ("violated" if n in bad else "ok") for n in names}
        for n in bad:
            inv.setdefault(n, "violated")
        if self.tracing:
            self.lines.append(dumps(footer_obj(trace_id=self.trace_id, steps=self.trace_steps,
                                               end_reason=end, invariants=inv,
                                               violations=self.violations,
                                               actions=self.step_no)))
        return SimResult(self.trace_id, self.seed, self.step_no, end, inv, self.violations,
                         self.lines if self.tracing else None, self.now, self.events,
                         self.trace_steps, self._liveness_summary())

    # ------------------------------------------------------------------ liveness

    def _observe_leader(self) -> None:
        """Leaderless intervals and, once the faults stopped, recovery (after every event)."""
        led = self.a.has_leader(self.world)
        now = self.now
        if led:
            if self._first_leader_ms is None:
                self._first_leader_ms = now
            if self._leaderless_since is not None:
                d = now - self._leaderless_since
                self._leaderless_ms += d
                self._longest_leaderless = max(self._longest_leaderless, d)
                self._leaderless_intervals += 1
                self._leaderless_since = None
        elif self._leaderless_since is None:
            self._leaderless_since = now
        if (self.faults_until_ms is not None and self.recovered_at is None
                and now >= self.faults_until_ms and self.a.recovered(self.world)):
            self.recovered_at = now
            self._properties = self.a.liveness_properties(self.world)

    def _liveness_summary(self) -> dict | None:
        if not self._track:
            return None
        total, longest = self._leaderless_ms, self._longest_leaderless
        open_ms = 0 if self._leaderless_since is None else self.now - self._leaderless_since
        T = self.faults_until_ms
        if T is None:
            verdict = None
        elif self.recovered_at is not None:
            verdict = "recovered"
        elif self.now >= T + self.liveness_bound_ms:
            verdict = "not_recovered"
        else:
            verdict = "undecided"   # the step budget ended before the deadline
        return {"leaderless_ms": total + open_ms,
                "longest_leaderless_ms": max(longest, open_ms),
                "leaderless_intervals": self._leaderless_intervals + (1 if open_ms else 0),
                "first_leader_ms": self._first_leader_ms,
                "faults_until_ms": T,
                "recovered_ms": None if self.recovered_at is None else self.recovered_at - T,
                "liveness_bound_ms": None if T is None else self.liveness_bound_ms,
                "verdict": verdict,
                # spec/KRaftBackoff.tla's properties: "ok" or why not (None: not judged yet)
                "properties": None if self._properties is None else
                {k: ("ok" if v is None else v) for k, v in sorted(self._properties.items())}}

    def _on_faults_stop(self, _x, _y) -> bool:
        """The faults stop: partitions heal, the network stops losing, duplicating and holding
        back messages, no new crash or partition starts; nodes already down come back."""
        self._faults_on = False
        self.net.quiet = True
        self.a.liveness_snapshot(self.world)
        if self.net.blocked:
            return self._on_heal(None, None)
        return False

    def _on_liveness_deadline(self, _x, _y) -> bool:
        if self.recovered_at is not None:
            return False
        state = self.a.recovered(self.world)
        self._properties = self.a.liveness_properties(self.world)
        if state:
            self.recovered_at = self.now
            return False
        T = self.faults_until_ms
        failing = sorted(k for k, v in (self._properties or {}).items() if v is not None)
        self.violations.append({
            "invariant": LIVENESS, "step": self.trace_steps if self.tracing else self.step_no,
            "action": "LivenessDeadline",
            "detail": f"faults stopped at {T} ms, but {self.liveness_bound_ms} ms later "
                      f"{'no leader is elected' if not self.a.has_leader(self.world) else 'a replica has not caught up with the leader'}"
                      f" ({self._describe_nodes()})"
                      + (f"; failing: {', '.join(failing)}" if failing else "")})
        return self.stop_on_violation

    def _describe_nodes(self) -> str:
        out = []
        for n in self.nodes:
            st = self.states[n]
            role = getattr(st, "role", None)
            role = getattr(role, "value", role)
            out.append(f"{n}:{'up' if self.up[n] else 'down'}"
                       + (f",{role}" if role is not None else "")
                       + (f",e{st.epoch}" if hasattr(st, "epoch") else "")
                       + (f",hwm{st.high_watermark}" if hasattr(st, "high_watermark") else ""))
        return " ".join(out)

    # ------------------------------------------------------------------ event handlers
    # Each returns True when the run must stop (an invariant was violated).

    def _on_deliver(self, mid: int, _y) -> bool:
        entry = self.net.in_flight.get(mid)
        if entry is None:
            return False
        env = entry[0]
        dst = env.dst
        if self.a.reliable(env) and self.up.get(dst):
            # A reliable message (the adapter's one-slot channels) is never lost: a cut link
            # or a receiver that cannot take it yet holds it back (it is tried again later).
            if not self.net.is_blocked(env.src, dst):
                t = self.a.deliver(dst, self.states[dst], env, self.now)
                if t is not None and self._fits(t, consumed=1):
                    self.net.remove(mid)
                    return self._take(dst, t, env)
            self._push(self.now + _RETRY_MS, _DELIVER, mid)
            return False
        if self.up.get(dst) and not self.net.is_blocked(env.src, dst) and not self.net.lost():
            t = self.a.deliver(dst, self.states[dst], env, self.now)
            if t is not None and self._fits(t, consumed=1):
                self.net.remove(mid)
                return self._take(dst, t, env)
        self.net.remove(mid)
        return self._record(self.a.network_action("DropMessage"), {}, None, env)

    def _on_duplicate(self, mid: int, _y) -> bool:
        m = self.limits.max_in_flight
        if m is not None and self.net.count + 1 > m:
            return False
        if not self.net.add_copy(mid):
            return False
        env = self.net.in_flight[mid][0]
        self._push(self.now + self.net.latency(), _DELIVER, mid)
        return self._record(self.a.network_action("DuplicateMessage"), {}, None, env)

    def _on_timer(self, key: tuple[str, str], gen: int) -> bool:
        if self._timers.get(key) != gen:
            return False
        node, name = key
        if not self.up[node]:
            return False
        t = self.a.fire_timer(node, self.states[node], name, self.now)
        if t is None:
            del self._timers[key]
            return False
        if not self._fits(t):
            self._push(self.now + _RETRY_MS, _TIMER, key, gen)
            return False
        del self._timers[key]
        return self._take(node, t)

    def _on_client(self, _x, _y) -> bool:
        p = self.profile
        lim = self.limits.max_client_requests
        if lim is not None and self.stats.clients >= lim:
            return False
        self._push(self.now + self._exp(p.client_every_ms), _CLIENT)
        r = self.a.client_request(self.world, self.rng)
        if r is None:
            return False
        node, t = r
        if not self.up.get(node) or not self._fits(t):
            return False
        self.stats.clients += 1
        return self._take(node, t)

    def _on_crash(self, _x, _y) -> bool:
        p = self.profile
        if not self._faults_on:
            return False
        self._push(self.now + self._exp(p.crash_every_ms), _CRASH)
        lim = self.limits.max_restarts
        if lim is not None and self.stats.restarts >= lim:
            return False
        candidates = [n for n in self.nodes
                      if self.up[n] and self.a.crash_allowed(n, self.states[n])]
        if not candidates:
            return False
        node = self.rng.choice(candidates)
        r = self.rng.random()
        if r < p.graceful:
            kind = "graceful"
        elif r < p.graceful + p.unclean and self.a.supports_unclean_shutdown:
            kind = "unclean"
        elif (p.disk_loss > 0 and self.a.supports_disk_loss
              and p.graceful + p.unclean <= r < p.graceful + p.unclean + p.disk_loss):
            kind = "disk-loss"
        else:
            kind = "crash"
        kind = self.a.crash_kind(node, kind)
        if kind is None:
            return False
        if kind == "disk-loss" and self._lost_disk:
            kind = "crash"   # one wiped node at a time
        self.stats.restarts += 1
        if kind == "graceful":
            t = self.a.graceful_shutdown(node, self.states[node], self.now)
            if t is not None and self._fits(t):
                if self.a.atomic_graceful_shutdown:
                    stop = self._take(node, t, stop_node=True)
                    self._schedule_restart(node)
                    return stop
                if self._take(node, t):
                    return True
        elif kind == "unclean":
            self.disks[node] = self.a.unclean_shutdown(node, dict(self.disks[node]), self.rng)
        elif kind == "disk-loss":
            # the disk is found lost when the node starts again (the spec's LoseDisk is one
            # atomic crash-and-restart step); until then it is a stopped node like any other
            self.disks[node] = self.a.plain_crash(node, self.disks[node])
            self._lost_disk[node] = True
        else:
            self.disks[node] = self.a.plain_crash(node, self.disks[node])
        self._crash(node)
        if not self._schedule_restart(node):
            return False
        return self._record(self.a.network_action("Crash"), {"node": node}, node)

    def _schedule_restart(self, node: str) -> bool:
        """The stopped node's restart, after its downtime (False: it stays down for good)."""
        if node in self._permanently_down:
            return False
        lo, hi = self.profile.downtime_ms
        self._push(self.now + self.rng.randint(lo, hi), _RESTART, node)
        return True

    def _on_restart(self, node: str, _y) -> bool:
        if self.up[node] or node in self._permanently_down:
            return False
        if self._lost_disk.get(node) and not self.a.rejoin_allowed(node):
            if self._faults_on:      # wait for the quorum to move on
                self._push(self.now + _REJOIN_RETRY_MS, _RESTART, node)
                return False
            # the faults stopped and it never could: the disk survived (a plain crash)
            del self._lost_disk[node]
        if node in self._lost_disk:
            disk = self.disks[node]
            if self._lost_disk[node]:
                disk = self.a.lose_disk(node, dict(disk))
            t = self.a.restart_after_disk_loss(node, disk, self.now)
            if t is not None:
                self.disks[node] = disk
                del self._lost_disk[node]
        else:
            t = self.a.restart(node, self.disks[node], self.now)
        if t is None:   # cannot start now (bounded mode): try again later
            self._push(self.now + _RESTART_RETRY_MS, _RESTART, node)
            return False
        self.up[node] = True
        return self._take(node, t)

    def _on_partition(self, _x, _y) -> bool:
        p = self.profile
        if not self._faults_on:
            return False
        self._push(self.now + self._exp(p.partition_every_ms), _PARTITION)
        if self.net.blocked:
            return False
        side, rest, one_way = self.net.partition(self.nodes)
        lo, hi = p.partition_duration_ms
        self._push(self.now + self.rng.randint(lo, hi), _HEAL)
        return self._record(self.a.network_action("Partition"),
                            {"side": frozenset(side), "rest": frozenset(rest),
                             "one_way": one_way}, None)

    def _on_heal(self, _x, _y) -> bool:
        self.net.heal()
        return self._record(self.a.network_action("Heal"), {}, None)

    def _on_scenario(self, ev, _y) -> bool:
        """A fault of the user's scenario (refimpl/sim/scenario.py)."""
        if ev.kind == "partition":
            side, rest = self.net.partition_between(ev.nodes, self.nodes, ev.one_way)
            return self._record(self.a.network_action("Partition"),
                                {"side": frozenset(side), "rest": frozenset(rest),
                                 "one_way": ev.one_way}, None)
        if ev.kind == "heal":
            return self._on_heal(None, None)
        node = ev.nodes[0]
        if ev.kind == "restart":
            return self._on_restart(node, None)
        if not self.up[node]:
            return False
        if ev.kind == "graceful":
            t = self.a.graceful_shutdown(node, self.states[node], self.now)
            if t is not None:
                if self.a.atomic_graceful_shutdown:
                    return self._take(node, t, stop_node=True)
                if self._take(node, t):
                    return True
        elif ev.kind == "wipe":
            self.disks[node] = self.a.lose_disk(node, dict(self.disks[node]))
            self._lost_disk[node] = False   # the scenario says when it restarts
        else:
            self.disks[node] = self.a.plain_crash(node, self.disks[node])
        self._crash(node)
        return self._record(self.a.network_action("Crash"), {"node": node}, node)

    _handlers: dict[int, Callable] = {
        _DELIVER: _on_deliver, _DUPLICATE: _on_duplicate, _TIMER: _on_timer,
        _CLIENT: _on_client, _CRASH: _on_crash, _RESTART: _on_restart,
        _PARTITION: _on_partition, _HEAL: _on_heal, _SCENARIO: _on_scenario,
        _FAULTS_STOP: _on_faults_stop, _LIVENESS_DEADLINE: _on_liveness_deadline,
    }


def run_one(adapter: ProtocolAdapter, seed: int, profile: FaultProfile, max_steps: int,
            **kw) -> SimResult:
    return Simulator(adapter, seed, profile, max_steps, **kw).run()


def first_flagged_seed(make_adapter: Callable[[], ProtocolAdapter], bug: str, seeds: int,
                       profile: FaultProfile, max_steps: int,
                       on_seed: Callable[[int], None] | None = None) -> tuple[int, str] | None:
    """A planted bug's detection: runs seeds 0, 1, ... (untraced) until the online invariants
    flag one; (that seed, the first violated invariant), or None within `seeds` seeds.
    `on_seed` is called after each run (progress)."""
    for seed in range(seeds):
        r = run_one(make_adapter(), seed, profile, max_steps, trace=False, bug=bug)
        if on_seed is not None:
            on_seed(seed)
        if r.violations:
            return seed, r.violations[0]["invariant"]
    return None
