"""The adapter interface between the deterministic simulator and a protocol.

The simulator (refimpl/sim/simulator.py) knows nothing about KRaft or ELR.  It owns the virtual
clock, the network, the disks and the fault schedule; a protocol plugs in by implementing
`ProtocolAdapter` below.  KIP-595 implements it in refimpl/kraft/adapter.py (`KRaftAdapter`),
KIP-966 in refimpl/elr/adapter.py (class `ELRAdapter`, found by `kraftcheck simulate --protocol
elr`).

Contract (read this before implementing an adapter)
--------------------------------------------------
* Nodes are named by strings that are also the TLA+ model values of the spec (e.g. "n1").
* A node's state is an immutable Python value (a frozen dataclass).  Every handler is PURE with
  respect to the simulator: it returns a `Transition` describing the new state, the outgoing
  messages, the persistence effects and the timer changes.  The simulator applies them in this
  order: persistence effects (the node's "disk"), timers, then messages.  So a protocol that
  writes its quorum-state file "before acting" just returns the write as a `Persist` effect.
* Handlers return None when the input is not enabled (e.g. a client append on a non-leader, an
  election past the bound MaxEpoch).  Then nothing happens and no trace step is written (a timer
  that returns None is simply consumed).
* Randomness: an adapter never uses `random` or time.  Timers may ask for a random jitter
  (`SetTimer.jitter_ms`), drawn by the simulator from its seeded RNG; `client_request` and
  `unclean_shutdown` receive that RNG (`rng`) and must draw only from it.
* `Transition.action` / `Transition.params` name the spec action the step corresponds to
  (e.g. "HandleVoteRequest", {"node": "n2", "msg": {...}}).  Params must be canonical TLA+
  values (see kraftcore.values) so they can be written to traces.  `split_sends` makes each
  outgoing request its own step (for specs whose Send actions are separate).
* `after_step(world, node, action)` runs after each step (ghost/history variables live in
  `world.history`); `crash_allowed(node, state)` lets bounded mode veto a crash.
* Crash: the simulator keeps the node's last state for projection, discards its timers and
  drops messages addressed to it.  It picks the kind of stop ("graceful", "unclean" or "crash")
  and `crash_kind(node, kind)` may change it (bounded mode: a bound on unclean shutdowns) or
  veto it (None).  Restart: `restart(node, disk)` builds a fresh state from the disk (the dict
  of everything written with `Persist`); it may return None when the node cannot start now
  (bounded mode), and the simulator tries again later.  Unclean shutdown: if
  `supports_unclean_shutdown`, `unclean_shutdown(node, disk, rng)` returns the disk as it is
  after power loss (e.g. unsynced data lost) before the restart; `plain_crash(node, disk)`
  does the same for a plain crash (the default keeps the disk).  With
  `atomic_graceful_shutdown` a graceful shutdown and the node's stop are one step (the spec
  has one action for both); otherwise the shutdown's own step is followed by a Crash step.
* Disk loss: if `supports_disk_loss`, a crash may lose the node's disk: `lose_disk(node, disk)`
  returns what is left (e.g. only the formatted meta.properties) and the node comes back
  through `restart_after_disk_loss` (its own spec action, KRaft's LoseDisk).  A fault
  profile's disk loss takes effect at the node's restart, and only when
  `rejoin_allowed(node)` (the discipline under which the protocol can stay safe; KRaft: the
  spec's "AfterNewLeaderCommitted"); until then the node stays down, and if the faults stop
  first its disk survived.  The scenario API wipes and restarts exactly when told.
* Liveness: `has_leader(world)` (the quorum works: a leader a majority follows) and
  `recovered(world)` (a leader is elected and every replica's HWM reached the leader's) let the
  simulator measure leaderless time and check, once the faults stop, that the system recovers
  within a bound.  None: not supported (no liveness check).
* Composite steps: a spec may take as one step what several nodes do (KIP-966's abstraction
  A1: the controller's metadata reaches every broker at once).  `bind(world)` gives the
  adapter the simulator's World (the same object throughout the run, updated in place) so
  that a handler can run the other nodes' handlers synchronously; it returns the parts in
  `Transition.chain`, (node, Transition) pairs the simulator applies right after the head, in
  order.  A part whose `action` is None continues the step before it; a part with an action
  starts a step of its own (one trace line per step, written after its last part).
* Trace parameters: `params_json(params, env)` renders a step's parameters (plus the message
  for deliveries, via `message_value`); `network_action` names simulator-level steps.
* `project(world)` maps the whole system to the spec's variables (name -> canonical value).
  `encode_state(world, changed)` may return the same as a JSON object text (sorted keys, no
  spaces) faster, with caches; the default builds it from `project`.
* `monitor()` returns a fresh `Monitor`: the online invariants, checked after every step.
  Invariant names are the spec's names.
* Bounds: `from_options(bounds, bug)` receives the parsed TLC config (refimpl.sim.bounds.Bounds
  or None) and a planted bug name (refimpl.bugs) or None; an adapter that switches a bug on
  from the config (a spec bug switch) says so in `planted_bug`.  The adapter keeps its own steps inside
  the bounds by returning None; `sim_limits()` tells the simulator the bounds it enforces itself
  (in-flight messages, restarts, client requests).
"""

from __future__ import annotations

import json
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftcore.values import canonical, to_itf

__all__ = [
    "Envelope",
    "SetTimer",
    "CancelTimer",
    "Persist",
    "Transition",
    "World",
    "Monitor",
    "Violation",
    "SimLimits",
    "ProtocolAdapter",
    "dumps",
]


def dumps(obj: Any) -> str:
    """The one JSON serialisation used for traces: sorted keys, no whitespace."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Envelope:
    """A message on the network.  `payload` is protocol-defined (usually a frozen dataclass)."""

    src: str
    dst: str
    payload: Any


@dataclass(frozen=True)
class SetTimer:
    """(Re)arm timer `name` to fire after delay_ms + uniform(0, jitter_ms) virtual ms."""

    name: str
    delay_ms: int
    jitter_ms: int = 0


@dataclass(frozen=True)
class CancelTimer:
    name: str


@dataclass(frozen=True)
class Persist:
    """Write `value` under `key` on the node's disk, durably, before messages are sent."""

    key: str
    value: Any


@dataclass(frozen=True)
class Transition:
    """The result of one handler: exactly one spec action (or a documented stutter)."""

    state: Any
    action: str | None
    params: Mapping[str, Any] = field(default_factory=dict)
    sends: tuple[Envelope, ...] = ()
    persist: tuple[Persist, ...] = ()
    timers: tuple[SetTimer | CancelTimer, ...] = ()
    halt: bool = False  # the node shuts itself down (fatal error, graceful shutdown)
    # When set, `sends` are requests the spec sends in separate actions (e.g. SendVoteRequest):
    # the simulator records the state change as `action` (skipped when action is None) and
    # then each message as its own step named `split_sends`, with params {node, msg}.  Such a
    # request is not sent (the step is skipped) while an identical message is in flight or
    # the in-flight bound is reached, as the spec's Send guard requires.
    split_sends: str | None = None
    # Further parts of the same simulator event (see "Composite steps" above): (node,
    # Transition) pairs applied in order after this one; a part with action None continues
    # the step before it.  Parts carry no split_sends and no chain of their own.
    chain: tuple[tuple[str, "Transition"], ...] = ()


@dataclass
class World:
    """What the simulator shows the adapter: the whole system after the current step."""

    now_ms: int
    states: dict[str, Any]  # every node's (last) state, crashed nodes included
    up: dict[str, bool]
    disks: dict[str, dict[str, Any]]
    in_flight: dict[int, tuple[Envelope, int]]  # message id -> (envelope, copies in flight)
    history: dict[str, Any] = field(default_factory=dict)  # adapter-owned ghost state
    blocked: set[tuple[str, str]] = field(default_factory=set)  # partitioned links (src, dst)


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


class Monitor(ABC):
    """Online invariants.  `names` lists every invariant checked; `check` runs after each step
    with the step's action name and returns the violations found in the new state."""

    names: tuple[str, ...] = ()

    @abstractmethod
    def check(self, world: World, action: str, node: str | None) -> list[Violation]: ...


@dataclass(frozen=True)
class SimLimits:
    """Bounds the simulator enforces for the adapter (None = unbounded)."""

    max_in_flight: int | None = None
    max_restarts: int | None = None
    max_client_requests: int | None = None
    allow_loss: bool = True
    allow_duplication: bool = True


class ProtocolAdapter(ABC):
    """One protocol, as the simulator sees it.  See the module docstring for the contract."""

    name: str = ""          # "kraft", "elr"
    spec_module: str = ""   # the TLA+ module the traces refer to, e.g. "KRaft"
    supports_unclean_shutdown: bool = False
    atomic_graceful_shutdown: bool = False  # graceful shutdown + stop = one step
    supports_disk_loss: bool = False
    # The planted bug in effect when the adapter chose one itself (a Bug* switch of the bounds
    # config), so that the runner records it; None: only the bug it was given, if any.
    planted_bug: str | None = None

    # ---- construction -------------------------------------------------------------
    @classmethod
    @abstractmethod
    def from_options(cls, bounds: Any | None, bug: str | None) -> "ProtocolAdapter": ...

    # ---- static facts -------------------------------------------------------------
    @abstractmethod
    def nodes(self) -> tuple[str, ...]: ...

    @abstractmethod
    def model_values(self) -> tuple[str, ...]:
        """Every string in the traces that is a TLA+ model value (server ids, NoLeader...)."""

    @abstractmethod
    def spec_variables(self) -> tuple[str, ...]: ...

    def sim_limits(self) -> SimLimits:
        return SimLimits()

    def crash_allowed(self, node: str, state: Any) -> bool:
        """Bounded mode may forbid some crashes (KRaft: a leader of MaxEpoch)."""
        return True

    def crash_kind(self, node: str, kind: str) -> str | None:
        """The kind of stop to apply when the simulator picked `kind` ("graceful", "unclean",
        "crash") for `node`: another kind, or None for no stop at all."""
        return kind

    def bind(self, world: World) -> None:
        """Called once, before the first step, with the World the run updates in place."""

    def reliable(self, env: Envelope) -> bool:
        """A message the network never loses nor duplicates (a spec channel with one slot):
        a cut link or a receiver whose handler returns None holds it back until it can be
        taken; it is dropped only when its receiver is down.  Asked when it is sent and at
        each delivery attempt.  Default: none."""
        return False

    def use_profile(self, profile: Any) -> None:
        """Called once by the simulator with the run's fault profile (refimpl.sim.faults), for
        schedule choices the adapter makes itself (KIP-966: asynchronous GetReplicaLogInfo)."""

    def after_step(self, world: World, node: str | None, action: str) -> None:
        """Called after every step, before the state is projected: update history (ghost)
        variables kept in `world.history`."""

    # ---- behaviour ---------------------------------------------------------------
    @abstractmethod
    def init(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[tuple[str, SetTimer]]]:
        """Initial states, initial disks, and the initial timers (node, SetTimer)."""

    @abstractmethod
    def deliver(self, node: str, state: Any, env: Envelope, now_ms: int) -> Transition | None: ...

    @abstractmethod
    def fire_timer(self, node: str, state: Any, timer: str, now_ms: int) -> Transition | None: ...

    @abstractmethod
    def client_request(self, world: World, rng: random.Random) -> tuple[str, Transition] | None:
        """Pick a target node and a client input (e.g. an append); None when none applies."""

    @abstractmethod
    def restart(self, node: str, disk: Mapping[str, Any], now_ms: int) -> Transition | None:
        """A fresh state from the disk; the Transition's timers are the node's initial timers.
        None: the node cannot start now (the simulator tries again later)."""

    def graceful_shutdown(self, node: str, state: Any, now_ms: int) -> Transition | None:
        """A clean stop that lets the node say goodbye (KRaft: EndQuorumEpoch).  The simulator
        crashes the node after applying the returned transition."""
        return None

    def unclean_shutdown(self, node: str, disk: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        return disk

    def plain_crash(self, node: str, disk: dict[str, Any]) -> dict[str, Any]:
        """The disk after a plain crash (process killed, page cache kept)."""
        return disk

    def lose_disk(self, node: str, disk: dict[str, Any]) -> dict[str, Any]:
        """The disk after it was lost and the node re-formatted (`supports_disk_loss`)."""
        return {}

    def rejoin_allowed(self, node: str) -> bool:
        """May the stopped `node`, whose disk a fault profile lost, start again now, empty
        (the world is the one given to `bind`)?"""
        return True

    def restart_after_disk_loss(self, node: str, disk: Mapping[str, Any],
                                now_ms: int) -> Transition | None:
        """The restart of a node whose disk was lost (its own spec action when the spec has
        one); the default is a plain restart."""
        return self.restart(node, disk, now_ms)

    # ---- liveness -----------------------------------------------------------------
    def has_leader(self, world: World) -> bool | None:
        """Is the quorum led now (None: the adapter does not say)?"""
        return None

    def recovered(self, world: World) -> bool | None:
        """Is the system recovered now: a leader elected and every running replica caught up
        with it (None: the adapter does not say)?"""
        return None

    def liveness_snapshot(self, world: World) -> None:
        """The faults stop now: note what the liveness properties will be judged against."""

    def liveness_properties(self, world: World) -> dict[str, str | None] | None:
        """The spec's named liveness properties, judged now: name -> None (holds) or why not
        (None: the adapter names none)."""
        return None

    # ---- observation --------------------------------------------------------------
    @abstractmethod
    def project(self, world: World) -> dict[str, Any]:
        """The spec's variables (name -> canonical TLA+ value) for the whole system."""

    def encode_state(self, world: World) -> str:
        """The projected state as ITF JSON text (sorted keys, compact).  Override for speed,
        but the bytes must equal this default."""
        return dumps({k: to_itf(v) for k, v in self.project(world).items()})

    def message_value(self, env: Envelope) -> Any:
        """A message as a canonical TLA+ value (for trace action parameters)."""
        return canonical(env.payload)

    def params_json(self, params: Mapping[str, Any], env: Envelope | None = None) -> str:
        """The trace's `params` object as JSON text: the action's parameters (canonical values)
        plus, for a message step, "msg" (the message).  Override to cache message encodings."""
        d = {k: to_itf(canonical(v)) for k, v in params.items()}
        if env is not None:
            d["msg"] = to_itf(self.message_value(env))
        return dumps(d)

    def network_action(self, generic: str) -> str:
        """The spec's name for a simulator-level step: DropMessage, DuplicateMessage, Crash,
        Partition, Heal (the last three are stutters unless the spec models them)."""
        return generic

    @abstractmethod
    def monitor(self) -> Monitor: ...
