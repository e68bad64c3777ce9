"""Drivers: an implementation driven one spec step at a time.

A driver plugs into the replay engine (engine.py) through the small `Driver` protocol:

    reset()            -> the projected initial state (a dict: spec variable -> canonical value)
    snapshot()         -> an opaque value; restore(snapshot) goes back to it (the engine branches
                          the paths of several edges from one saved state)
    apply(step)        -> Applied: the driver takes the ONE event that should produce the spec
                          step `step` (its action label and the state the spec expects) and
                          reports the projected state it reached
    close()

`RefimplDriver` drives any refimpl protocol adapter (refimpl.sim.protocol.ProtocolAdapter)
without the simulator's clock: it owns a World (node states, disks, the network's bag of
messages, armed timers) and turns a spec step into one driver event:

    Receive*            deliver this in-flight message to its destination
    Timeout, ...        fire this node's timer (only an armed one)
    Send*               release this request from the node's outbox (the requests a
                        transition sent, which the spec sends in separate Send* steps), or fire
                        the timer that (re)sends requests and send one of them
    ClientRequest       append this client value at this node
    Resign              the node's graceful shutdown (KIP-595 EndQuorumEpoch)
    Restart / LoseDisk  crash this node (keeping / losing its disk) and restart it
    DropMessage / DuplicateMessage   drop / duplicate this in-flight message

The event taken is the one, among the enabled events whose step carries the spec step's label,
whose result is the spec's expected state (the dumped graph's labels do not name the step's
parameters -- which message, which node --, the state difference does); when none is, the
nearest result is reported.  Events that change no spec variable (a fetch request timeout that
only clears a pending fetch) may precede the step, at most MAX_SILENT_PREFIX of them: the
implementation's clock may fire them at any moment.

The refimpl's node states are immutable Python values, so a snapshot is a few dict copies; the
adapter's history (ghost) variables are copied on write, before a step changes them.

trace_checker/replay/kafka.py implements the same protocol over the Kafka harness.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any, Protocol

from kraftcore.values import canonical
from refimpl.sim.protocol import (
    CancelTimer, Envelope, ProtocolAdapter, SetTimer, Transition, World,
)

__all__ = ["SpecStep", "Applied", "Driver", "RefimplDriver", "DriverError",
           "MAX_SILENT_PREFIX"]

MAX_SILENT_PREFIX = 2
_TICK_MS = 10


class DriverError(RuntimeError):
    """The driver cannot run (the implementation or its harness is missing or broken)."""


@dataclass(frozen=True)
class SpecStep:
    """Step k of a path: the spec's action label and the state it leads to."""

    index: int
    action: str
    expected: dict            # spec variable -> canonical value


@dataclass
class Applied:
    """What the driver did for one spec step."""

    matched: bool                   # the projected state equals the expected one
    event: str | None = None        # the event taken (matched) or the nearest one tried
    state: dict | None = None       # the projected state reached (the nearest when not matched)
    label: str | None = None        # the action of the event's step (the implementation's)
    params: dict = field(default_factory=dict)   # trace parameters of the event
    drivable: bool = True           # False: the driver has no event for this action at all
    reason: str | None = None       # why not matched / not drivable
    enabled: list[str] = field(default_factory=list)   # labels of the events enabled here
    silent: list[str] = field(default_factory=list)    # silent events taken before the step


class Driver(Protocol):
    impl: str
    variables: tuple[str, ...]

    def reset(self) -> dict: ...

    def snapshot(self) -> Any: ...

    def restore(self, snap: Any) -> None: ...

    def apply(self, step: SpecStep) -> Applied: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- copying

_IMMUTABLE: dict[type, bool] = {}


def _immutable(v: Any) -> bool:
    t = type(v)
    r = _IMMUTABLE.get(t)
    if r is None:
        if v is None or issubclass(t, (bool, int, float, str, bytes, tuple, frozenset)):
            r = True
        elif dataclasses.is_dataclass(t):
            r = bool(t.__dataclass_params__.frozen)
        else:
            r = t.__name__ == "Fn"      # kraftcore.values.Fn: immutable
        _IMMUTABLE[t] = r
    return r


def _copy(v: Any, memo: dict) -> Any:
    """A copy of the mutable containers and plain objects inside `v`; immutable values
    (tuples, frozensets, frozen dataclasses, canonical TLA+ values) are shared."""
    t = type(v)
    imm = _IMMUTABLE.get(t)
    if imm is None:
        imm = _immutable(v)
    if imm:
        return v
    i = id(v)
    if i in memo:
        return memo[i]
    if t is dict:
        if all(_IMMUTABLE.get(type(x)) for x in v.values()):
            out: Any = dict(v)
            memo[i] = out
            return out
        out = {}
        memo[i] = out
        for k, x in v.items():
            out[k] = x if _IMMUTABLE.get(type(x)) else _copy(x, memo)
    elif t is list:
        if all(_IMMUTABLE.get(type(x)) for x in v):
            out = list(v)
            memo[i] = out
            return out
        out = []
        memo[i] = out
        out.extend(_copy(x, memo) for x in v)
    elif t is set:
        out = set(v)        # set elements are hashable, i.e. immutable here
        memo[i] = out
    elif hasattr(v, "__dict__") and not callable(v):
        out = object.__new__(t)
        memo[i] = out
        out.__dict__.update({k: x if _IMMUTABLE.get(type(x)) else _copy(x, memo)
                             for k, x in vars(v).items()})
    else:
        out = copy.deepcopy(v)
        memo[i] = out
    return out


@dataclass(frozen=True)
class _Snap:
    states: dict
    disks: dict
    up: dict
    in_flight: dict
    next_mid: int
    timers: frozenset
    outbox: dict             # node -> tuple of (split label, Envelope)
    history: dict            # never changed once in a snapshot (copy on write)
    adapter_attrs: dict      # immutable attributes of the adapter (counters, ...)
    adapter_hist: tuple      # (attribute, history key) of attributes naming history objects
    now: int
    restarts: int
    extra: Any = None        # a subclass's own driver state (`_extra_state`), immutable


@dataclass
class _Outcome:
    event: tuple
    label: str | None
    describe: str
    params: dict
    state: dict | None = None    # the projected state after the event (computed when needed)


class RefimplDriver:
    """A refimpl protocol adapter driven event by event (see the module docstring)."""

    impl = "refimpl"

    def __init__(self, adapter: ProtocolAdapter, variables: tuple[str, ...] | None = None):
        self.a = adapter
        own = tuple(adapter.spec_variables())
        if variables is not None and set(variables) != set(own):
            raise DriverError(f"the refimpl adapter {adapter.name!r} projects onto "
                              f"{sorted(own)}, the graph has {sorted(variables)}")
        self.variables = tuple(variables or own)
        self.nodes = tuple(adapter.nodes())
        self.labels = self._labels()
        self._current: _Snap | None = None
        self._dirty = True
        self._memo_base: _Snap | None = None
        self._memo: dict[str, Any] = {}
        self._hist_shared = False
        self._clients: tuple = (None, [])
        self.events_applied = 0

    def _labels(self) -> frozenset[str] | None:
        """Every spec action label the adapter's events can give (None: not known)."""
        names = getattr(self.a, "ACTION_NAMES", None)
        if not names:
            return None
        out = set(names.values()) | {"SendVoteRequest", "SendBeginQuorumEpoch",
                                     "SendFetchRequest"}
        out |= {self.a.network_action(x) for x in ("DropMessage", "DuplicateMessage")}
        return frozenset(out)

    # ---- the World ----------------------------------------------------------------
    def reset(self) -> dict:
        a = self.a
        states, disks, timers = a.init()
        self.world = World(0, dict(states), {n: True for n in self.nodes},
                           {n: dict(d) for n, d in disks.items()}, {})
        self.next_mid = 0
        self.timers: set[tuple[str, str]] = set()
        self.outbox: dict[str, tuple] = {}
        self.restarts = 0
        a.bind(self.world)
        for node, tm in timers:
            self._timer(node, tm)
        a.after_step(self.world, None, "Init")
        self._hist_shared = False
        self._current, self._dirty = None, True
        self._memo_base, self._memo = None, {}
        return self.project()

    def project(self) -> dict:
        return self.a.project(self.world)

    @staticmethod
    def canonical_state(st: dict) -> dict:
        """The projected state with every value in canonical form."""
        return {k: canonical(v) for k, v in st.items()}

    def _matches(self, st: dict, expected: dict) -> bool:
        """Does the projected state equal the expected one?  A variable that differs is first
        put in canonical form (an adapter may project an empty function as an empty Fn, which
        TLA+ -- and kraftcore.values.canonical -- take as the empty sequence); the state keeps
        the canonical value."""
        same = True
        for v in self.variables:
            x = st.get(v)
            e = expected.get(v)
            if x != e:
                try:
                    c = canonical(x)
                except ValueError:
                    c = x
                st[v] = c
                if c != e:
                    same = False
        return same

    def snapshot(self) -> _Snap:
        if not self._dirty and self._current is not None:
            return self._current
        w, a = self.world, self.a
        hist_ids = {id(v): k for k, v in w.history.items()}
        attrs, hattrs = {}, []
        for k, v in vars(a).items():
            if k == "world":
                continue
            if id(v) in hist_ids:
                hattrs.append((k, hist_ids[id(v)]))
            elif _immutable(v):
                attrs[k] = v
        snap = _Snap(dict(w.states), {n: dict(d) for n, d in w.disks.items()}, dict(w.up),
                     dict(w.in_flight), self.next_mid, frozenset(self.timers), dict(self.outbox),
                     w.history, attrs, tuple(hattrs), w.now_ms, self.restarts,
                     self._extra_state())
        self._hist_shared = True        # the snapshot owns it now: copy before changing it
        self._current, self._dirty = snap, False
        return snap

    def restore(self, snap: _Snap) -> None:
        if snap is self._current and not self._dirty:
            return
        w, a = self.world, self.a
        w.states = dict(snap.states)
        w.disks = {n: dict(d) for n, d in snap.disks.items()}
        w.up = dict(snap.up)
        w.in_flight = dict(snap.in_flight)
        w.history = snap.history        # shared with the snapshot until a step changes it
        self._hist_shared = True
        w.now_ms = snap.now
        self.next_mid = snap.next_mid
        self.timers = set(snap.timers)
        self.outbox = dict(snap.outbox)
        self.restarts = snap.restarts
        for k, v in snap.adapter_attrs.items():
            setattr(a, k, v)
        for k, hk in snap.adapter_hist:
            setattr(a, k, w.history[hk])
        self._restore_extra(snap.extra)
        self._current, self._dirty = snap, False

    def _extra_state(self) -> Any:
        """A subclass's own driver state, kept in snapshots (an immutable value)."""
        return None

    def _restore_extra(self, extra: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def variant_key(self) -> tuple:
        """What the implementation holds beyond the spec's variables (node states with their
        volatile fields, armed timers, held requests): two driver states of one spec state
        with different keys may enable different steps."""
        w = self.world
        return (tuple(w.states[n] for n in self.nodes), tuple(w.up[n] for n in self.nodes),
                frozenset(self.timers), tuple(sorted(self.outbox.items())))

    def _own_history(self) -> None:
        """Copy the history (ghost) variables before a step changes them (copy on write)."""
        if not self._hist_shared:
            return
        w, a = self.world, self.a
        memo: dict = {}
        w.history = _copy(w.history, memo)
        for k, v in list(vars(a).items()):
            if k != "world" and id(v) in memo:
                setattr(a, k, memo[id(v)])
        self._hist_shared = False

    def _after(self, node: str | None, action: str) -> None:
        self._own_history()
        self.a.after_step(self.world, node, action)

    # ---- applying transitions -------------------------------------------------------
    def _client_label(self, env: Envelope) -> str | None:
        """A message to a party the adapter does not run (KIP-642's admin client): the
        environment consumes it, a step named by the adapter's handler for its type
        (ACTION_NAMES["Handle<Type>"]), e.g. ReceiveAlterPartitionReassignmentsResponse."""
        names = getattr(self.a, "ACTION_NAMES", None) or {}
        return names.get("Handle" + type(env.payload).__name__)

    def _client_inputs(self) -> list:
        """The client inputs possible now (memoised per driver state)."""
        key = self._current if not self._dirty else None
        c = self._clients
        if key is not None and c[0] is key:
            return c[1]
        inputs = client_inputs(self.a, self.world)
        if key is not None:
            self._clients = (key, inputs)
        return inputs

    def _timer(self, node: str, tm) -> None:
        if type(tm) is SetTimer:
            self.timers.add((node, tm.name))
        elif type(tm) is CancelTimer:
            self.timers.discard((node, tm.name))

    def _transmit(self, env: Envelope) -> None:
        w = self.world
        for mid, (e, c) in w.in_flight.items():
            if e == env:
                w.in_flight[mid] = (e, c + 1)
                return
        w.in_flight[self.next_mid] = (env, 1)
        self.next_mid += 1

    def _stop(self, node: str) -> None:
        self.world.up[node] = False
        self.timers = {k for k in self.timers if k[0] != node}
        self.outbox.pop(node, None)

    def _take(self, node: str, t: Transition, hold_split: bool = True) -> None:
        """State, disk, timers and messages of a transition (split requests go to the outbox
        when `hold_split`), and the history update of its step."""
        w = self.world
        w.states[node] = t.state
        if t.persist:
            disk = w.disks[node]
            for p in t.persist:
                disk[p.key] = p.value
        for tm in t.timers:
            self._timer(node, tm)
        if t.split_sends is None:
            for env in t.sends:
                self._transmit(env)
        elif hold_split:
            kept = tuple(x for x in self.outbox.get(node, ()) if x[0] != t.split_sends)
            self.outbox[node] = kept + tuple((t.split_sends, e) for e in t.sends)
        if t.halt:
            self._stop(node)
        for n, part in t.chain:
            self._take(n, part)
        if t.action is not None:
            self._after(node, t.action)

    def _consume(self, mid: int) -> None:
        w = self.world
        env, c = w.in_flight[mid]
        if c > 1:
            w.in_flight[mid] = (env, c - 1)
        else:
            del w.in_flight[mid]

    # ---- events -----------------------------------------------------------------------
    def events(self) -> list[tuple]:
        """Every event enabled now, as tuples the driver can apply again from the same
        state."""
        w, a = self.world, self.a
        out: list[tuple] = []
        for mid in sorted(w.in_flight):
            env = w.in_flight[mid][0]
            if w.up.get(env.dst):
                out.append(("deliver", mid))
            elif env.dst not in w.up and self._client_label(env) is not None:
                out.append(("consume", mid))
            out.append(("drop", mid))
            if not a.reliable(env):
                out.append(("duplicate", mid))
        for node, name in sorted(self.timers):
            if w.up.get(node):
                out.append(("timer", node, name))
        for node in sorted(self.outbox):
            for i in range(len(self.outbox[node])):
                out.append(("send", node, i))
        for i in range(len(self._client_inputs())):
            out.append(("client", i))
        for node in self.nodes:
            if not w.up.get(node):
                continue
            out.append(("resign", node))
            out.append(("restart", node))
            if a.supports_disk_loss:
                out.append(("lose_disk", node))
        return out

    def _do(self, ev: tuple) -> _Outcome | list[tuple] | None:
        """Apply event `ev`; its outcome (label, parameters), None when it is not enabled, or
        (a timer that only sends requests) the events sending each of its requests."""
        w, a = self.world, self.a
        kind = ev[0]
        desc = self.describe(ev)
        inputs = self._client_inputs() if kind == "client" else None
        self._dirty = True
        w.now_ms += _TICK_MS
        now = w.now_ms
        self.events_applied += 1
        if kind == "deliver":
            env = w.in_flight[ev[1]][0]
            t = a.deliver(env.dst, w.states[env.dst], env, now)
            if t is None:
                return None
            self._consume(ev[1])
            self._take(env.dst, t)
            return _Outcome(ev, t.action, desc, {"msg": env})
        if kind == "consume":
            env = w.in_flight[ev[1]][0]
            self._consume(ev[1])
            label = self._client_label(env)
            self._after(None, label)
            return _Outcome(ev, label, desc, {"msg": env})
        if kind in ("drop", "duplicate"):
            env, c = w.in_flight[ev[1]]
            if kind == "drop":
                self._consume(ev[1])
            else:
                w.in_flight[ev[1]] = (env, c + 1)
            label = a.network_action("DropMessage" if kind == "drop" else "DuplicateMessage")
            self._after(None, label)
            return _Outcome(ev, label, desc, {"msg": env})
        if kind in ("timer", "timer-send"):
            node, name = ev[1], ev[2]
            self.timers.discard((node, name))
            t = a.fire_timer(node, w.states[node], name, now)
            if t is None:
                return None
            if t.action is None and t.split_sends is not None:
                # the timer only (re)sends requests: each request is a spec Send step
                if kind == "timer":
                    return [("timer-send", node, name, i) for i in range(len(t.sends))]
                self._take(node, dataclasses.replace(t, sends=()), hold_split=False)
                env = t.sends[ev[3]]
                self._transmit(env)
                self._after(node, t.split_sends)
                return _Outcome(ev, t.split_sends, desc, {"node": node, "msg": env})
            self._take(node, t)
            return _Outcome(ev, t.action, desc, {"node": node})
        if kind == "send":
            node, i = ev[1], ev[2]
            box = self.outbox[node]
            label, env = box[i]
            self.outbox[node] = box[:i] + box[i + 1:]
            self._transmit(env)
            self._after(node, label)
            return _Outcome(ev, label, desc, {"node": node, "msg": env})
        if kind == "client":
            node, t = inputs[ev[1]]
            self._take(node, t)
            return _Outcome(ev, t.action, desc, dict(t.params))
        node = ev[1]
        if kind == "resign":
            t = a.graceful_shutdown(node, w.states[node], now)
            if t is None:
                return None
            self._take(node, t)
            return _Outcome(ev, t.action, desc, {"node": node})
        if kind in ("restart", "lose_disk"):
            disk = a.plain_crash(node, dict(w.disks[node]))
            self._stop(node)
            if kind == "restart":
                t = a.restart(node, disk, now)
            else:
                disk = a.lose_disk(node, disk)
                t = a.restart_after_disk_loss(node, disk, now)
            if t is None:
                return None
            w.disks[node] = dict(disk)
            w.up[node] = True
            self.restarts += 1
            self._take(node, t)
            return _Outcome(ev, t.action, desc, {"node": node})
        raise ValueError(f"unknown event {ev!r}")

    def describe(self, ev: tuple) -> str:
        kind = ev[0]
        w = self.world
        if kind in ("deliver", "drop", "duplicate", "consume"):
            entry = w.in_flight.get(ev[1])
            what = (f"{type(entry[0].payload).__name__} {entry[0].src}->{entry[0].dst}"
                    if entry else f"message #{ev[1]}")
            return f"{kind} {what}"
        if kind == "timer":
            return f"fire {ev[1]}'s {ev[2]} timer"
        if kind == "timer-send":
            return f"fire {ev[1]}'s {ev[2]} timer and send its request {ev[3] + 1}"
        if kind == "send":
            box = self.outbox.get(ev[1], ())
            if ev[2] < len(box):
                env = box[ev[2]][1]
                return f"send {type(env.payload).__name__} {env.src}->{env.dst}"
            return f"send request {ev[2] + 1} of {ev[1]}"
        if kind == "client":
            inputs = self._client_inputs()
            if ev[1] < len(inputs):
                node, t = inputs[ev[1]]
                what = ", ".join(f"{k} {v}" for k, v in sorted(t.params.items()) if k != "node")
                return f"client input at {node}: {t.action} {what}".rstrip()
            return f"client input {ev[1] + 1}"
        return {"resign": "shut {} down gracefully", "restart": "crash and restart {}",
                "lose_disk": "wipe {}'s disk and restart it"}[kind].format(ev[1])

    # ---- one spec step ---------------------------------------------------------------
    def _kinds(self, label: str) -> tuple[str, ...]:
        """The event kinds that may give a step labelled `label`."""
        if label == self.a.network_action("DropMessage"):
            return ("drop",)
        if label == self.a.network_action("DuplicateMessage"):
            return ("duplicate",)
        if self.labels is not None:
            # the adapter names its actions (ACTION_NAMES): local events give only theirs
            special = {"Resign": "resign", "Restart": "restart", "LoseDisk": "lose_disk"}
            if label in special:
                return (special[label],)
            if label.startswith("Receive"):
                return ("deliver", "consume", "timer")
            return ("deliver", "timer", "send", "client")
        return ("deliver", "consume", "timer", "send", "client", "resign", "restart",
                "lose_disk")

    def _outcomes(self, base: _Snap, kinds: tuple[str, ...]) -> list[_Outcome]:
        """The outcomes of the enabled events of these kinds from `base` (memoised)."""
        if self._memo_base is not base:
            self._memo_base, self._memo = base, {}
        todo = [k for k in kinds if k not in self._memo]
        if todo:
            self.restore(base)
            fresh: dict[str, list] = {k: [] for k in todo}
            pending = [ev for ev in self.events() if ev[0] in fresh]
            while pending:
                ev = pending.pop(0)
                r = self._do(ev)
                if isinstance(r, list):
                    pending[:0] = r
                elif r is not None:
                    fresh["timer" if ev[0] == "timer-send" else ev[0]].append(r)
                self.restore(base)
            self._memo.update(fresh)
        out: list[_Outcome] = []
        for k in kinds:
            out.extend(self._memo[k])
        return out

    def _base_state(self, base: _Snap) -> dict:
        if self._memo_base is not base:
            self._memo_base, self._memo = base, {}
        st = self._memo.get("_state")
        if st is None:
            self.restore(base)
            st = self._memo["_state"] = self.project()
        return st

    def _state_of(self, base: _Snap, r: _Outcome) -> dict:
        """The projected state after outcome `r` (re-applied from `base`, then memoised).
        (Not the adapters' encode_state: its caches assume one linear run, not branches.)"""
        if r.state is None:
            self.restore(base)
            self._replay(r.event)
            r.state = self.project()
            self.restore(base)
        return r.state

    def apply(self, step: SpecStep) -> Applied:
        return self._apply_from(self.snapshot(), step, [], MAX_SILENT_PREFIX)

    def _apply_from(self, base: _Snap, step: SpecStep, silent: list, depth: int) -> Applied:
        if self.labels is not None and step.action not in self.labels:
            self.restore(base)
            return Applied(False, drivable=False, reason=(
                f"the {self.a.name} driver has no event for {step.action} (its events give "
                f"{', '.join(sorted(self.labels))})"))
        results = self._outcomes(base, self._kinds(step.action))
        same = [r for r in results if r.label == step.action]
        for r in same:
            if self._matches(self._state_of(base, r), step.expected):
                self.restore(base)
                self._replay(r.event)
                state = self.project()
                self.snapshot()
                return Applied(True, r.describe, state, r.label, self._params(r),
                               silent=list(silent))
        enabled = sorted({r.label for r in results if r.label is not None})
        if depth > 0:
            # events that change no spec variable first (a request timeout, ...)
            current = self._base_state(base)
            for r in list(self._outcomes(base, ("timer",))):
                if r.label == step.action or not self._matches(self._state_of(base, r),
                                                                   current):
                    continue
                self.restore(base)
                self._replay(r.event)
                got = self._apply_from(self.snapshot(), step, silent + [r.describe], depth - 1)
                if got.matched:
                    return got
        # not matched: the nearest outcome with the step's label
        best = None
        for r in same:
            st = self._state_of(base, r)
            self._matches(st, step.expected)
            d = sum(1 for v in self.variables if st.get(v) != step.expected.get(v))
            if best is None or d < best[0]:
                best = (d, r, st)
        self.restore(base)
        if best is None:
            return Applied(False, reason=(
                f"no enabled event of the implementation is a {step.action} step here "
                f"(enabled: {', '.join(enabled) or 'none'})"), enabled=enabled,
                state=self.canonical_state(self.project()))
        _, r, st = best
        return Applied(False, r.describe, st, r.label, self._params(r), enabled=enabled,
                       reason=f"the nearest {step.action} event ({r.describe}) reaches "
                              f"another state")

    def _params(self, r: _Outcome) -> dict:
        """The trace parameters of an outcome (messages as the spec's records)."""
        return {k: self.a.message_value(v) if isinstance(v, Envelope) else v
                for k, v in r.params.items()}

    def _replay(self, ev: tuple) -> None:
        r = self._do(ev)
        if r is None or isinstance(r, list):
            raise DriverError(f"event {ev!r} is not re-playable")


class _Steered:
    """A stand-in for the simulator's RNG in `client_request` that makes the choices of a
    given prefix (an index per draw) and the first option after it, recording how many options
    each draw had: `client_inputs` enumerates every input the adapter can pick this way."""

    RANDOM = (0.0, 0.5, 0.999999)       # random(): below, between and above any threshold

    def __init__(self, prefix: list[int]):
        self.prefix, self.made, self.widths = prefix, [], []

    def _pick(self, n: int) -> int:
        k = len(self.made)
        i = self.prefix[k] if k < len(self.prefix) else 0
        self.made.append(i)
        self.widths.append(n)
        return i

    def random(self) -> float:
        return self.RANDOM[self._pick(len(self.RANDOM))]

    def choice(self, seq):
        seq = list(seq)
        return seq[self._pick(len(seq))]

    def randint(self, a: int, b: int) -> int:
        return a + self._pick(b - a + 1)

    def sample(self, population, k: int):
        combos = list(itertools.combinations(list(population), k))
        return list(combos[self._pick(len(combos))])


def client_inputs(adapter: ProtocolAdapter, world: World, limit: int = 2000) -> list:
    """Every distinct (node, Transition) `adapter.client_request` can return in `world`, by
    enumerating the choices its RNG draws (depth first over the draws)."""
    out: dict = {}
    todo: list[list[int]] = [[]]
    runs = 0
    while todo and runs < limit:
        prefix = todo.pop()
        rng = _Steered(prefix)
        r = adapter.client_request(world, rng)   # type: ignore[arg-type]
        runs += 1
        if r is not None:
            node, t = r
            key = (node, t.action, repr(sorted(t.params.items())), t.sends, t.state)
            out.setdefault(key, r)
        for k in range(len(prefix), len(rng.made)):
            for alt in range(1, rng.widths[k]):
                todo.append(rng.made[:k] + [alt])
    return list(out.values())
