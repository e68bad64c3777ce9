"""The KIP-966 driver: spec/ELR.tla's actions as events of the refimpl's ELR adapter.

The ELR adapter (refimpl/elr/adapter.py) is written for the simulator: a clock fires the
brokers' and the controller's timers, a crash is followed by a restart after a downtime, the
controller fences a broker whose session expired.  Replay has no clock, and spec/ELR.tla
takes a broker's stop and its start as separate steps, so `ElrDriver` (a RefimplDriver)
gives each spec action its own event:

| spec action | driver event |
|---|---|
| `Produce(b, v)` | the producer sends value v to broker b (any broker acting as leader in its own view, also a stale one) and b handles the request at once |
| `FollowerFetch(f)` | f's fetch timer: the adapter's fetch round (FollowerFetch) |
| `ProposeIsrExpand(b, f)` | the rest of the fetch round that found f in sync (fetch offset at the HWM and the leader epoch's start: Kafka's isFollowerInSync): the refimpl's leader proposes within that fetch (below); when b's metadata cache had f fenced or with another broker epoch and the controller has f unfenced with the fetch's epoch, the fetch is redone after b's cache caught up with the metadata log (below).  In a graph with `FetchTriggeredIsrExpand = TRUE` the spec step is the fetch round and the proposal together: f's fetch timer and the proposal its leader makes in that round, as one event (`fetch-propose`; `_fetch_with_fresh_cache` catches b's cache up first where that is silent) |
| `ShrinkIsr(b, f)` | b's ISR-check timer, fired once the lag time has passed (the clock jumps: `LAG_JUMP_MS`) |
| `ReceiveMetadata(b)` | b catches up with the metadata log (a PartitionMetadata delivered now: abstraction A10) |
| `HandleAlterPartition(b)` / `HandleAlterPartitionResponse(b)` | deliver b's AlterPartition request to the controller / its answer to b |
| `FenceBroker(b)` | b's session expires (the other brokers' heartbeats arrived; the controller's session check) |
| `UnfenceBroker(b)` | b's heartbeat reaches the controller (its answer, with the metadata, is synchronous) |
| `CleanShutdown(b)` | the adapter's graceful shutdown of b (controlled shutdown), b stops |
| `UncleanShutdown(b)` | b crashes (no CleanShutdownFile); budget MaxUncleanShutdowns as the adapter's `crash_kind` |
| `RestartBroker(b, k)` | b starts from a disk holding the first k records of its log (flushed <= k: the page cache lost the rest, spec abstraction A4), registers (budget MaxRestarts) |
| `ChangeMinIsr(m)` | the admin's AlterMinIsr reaches the controller |
| `SendReplicaLogInfo`, `CompleteUncleanRecovery`, `UncleanLeaderElection` | the controller's recovery timer / the step the adapter chains them to |
| `IdleAtBounds` | nothing happens (MCELR's stutter once a bound stops the model) |

Composite events.  Where the adapter runs several spec steps in one simulator event (the fetch
round that catches a follower up proposes its ISR expansion; a fence that leaves the
partition leaderless runs the unclean election...), the event gives its first spec step and
the rest is held: the held parts are the ONLY event enabled next (the refimpl takes them at
the same instant), so a spec path that takes another step in between is one the refimpl does
not follow (`composite-step`).

The leader's metadata cache.  KIP-841: the leader proposes only replicas its metadata cache
has unfenced (with the fetch's broker epoch, KIP-903); the cache "is eventually consistent",
the controller re-checks (INELIGIBLE_REPLICA).  spec/ELR.tla does not model the broker
records of the cache: its ProposeIsrExpand leaves the check to the controller.  The refimpl's
cache is the metadata log as of the leader's last catch-up (its ReceiveMetadata steps, which
the spec takes only when the partition view changes).  A ProposeIsrExpand(b, f) right after
f's FollowerFetch that b did not propose because its cache is behind the controller's record
of f is driven by catching b's cache up before that fetch -- when b's partition view is the
controller's current one, so the catch-up changes no spec variable -- and redoing the fetch
(`_propose_with_fresh_cache`).  What stays `leader-checks-isr-eligibility`: the controller
has f fenced (or another broker epoch) and b's cache already holds that; Kafka's leader with
that cache does not propose either (one whose cache stopped before those records would: the
refimpl keeps no older cache to go back to).  With `LeaderCacheIsrEligibility = TRUE` the
spec's views carry the cache's broker registrations (the adapter projects the refimpl's
`PartitionMetadata.live_brokers`: `config.view_registrations`) and its leader checks them as
the refimpl's does, so neither class arises: a catch-up is then a spec ReceiveMetadata step.

Messages the spec does not see -- metadata pushes and heartbeats (replaced by the events
above), the producer's acknowledgements (the ghost `acked` is written by the leader that
sends them), AlterPartition answers to a stopped incarnation (lost: spec HandleAlterPartition)
-- are taken out of the network after each event, so the driver's state holds only what a
later spec step may need.

Initial states: spec Init lets any broker lead epoch 1; the adapter's cluster starts with the
first; `reset_to(state)` starts it with the initial state's leader instead (the controller's
registration record and every broker's view name it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from refimpl.elr.broker import FETCH_TIMER, ISR_TIMER
from refimpl.elr.controller import RECOVERY_TIMER, SESSION_TIMER
from refimpl.elr.log import ReplicaLog
from refimpl.elr.messages import (ACKS_ALL_OR_ONE, AlterPartitionResponse,
                                  BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                                  PartitionMetadata)
from refimpl.elr.spec_mapping import SPEC_ACTIONS
from refimpl.sim.protocol import Envelope, Transition

from trace_checker.replay.driver import RefimplDriver, _Outcome

__all__ = ["ElrDriver", "LAG_JUMP_MS", "IDLE", "CHOICES"]

#: The clock jump before an ISR check: past replica.lag.time.max.ms, every follower behind
#: the leader's log end lags (spec ShrinkIsr: followerState[b][f].leo < Len(log[b])).
LAG_JUMP_MS = 1_000_000
#: MCELR's stutter at the bounds (not a KIP-966 action).
IDLE = "IdleAtBounds"
#: The classes of the refimpl's known choices (the driver's reasons; explain.py).
HELD = "composite-step"
ELIGIBLE = "leader-checks-isr-eligibility"
ON_FETCH = "isr-expand-on-fetch"
CHOICES = (HELD, ELIGIBLE, ON_FETCH)

_KINDS: dict[str, tuple[str, ...]] = {
    "Produce": ("produce",),
    "FollowerFetch": ("timer",),
    "ProposeIsrExpand": (),
    "ShrinkIsr": ("isr",),
    "ReceiveMetadata": ("metadata",),
    "HandleAlterPartition": ("deliver",),
    "HandleAlterPartitionResponse": ("deliver",),
    "FenceBroker": ("fence",),
    "UnfenceBroker": ("unfence",),
    "CleanShutdown": ("clean",),
    "UncleanShutdown": ("crash",),
    "RestartBroker": ("restart",),
    "ChangeMinIsr": ("min_isr",),
    "SendReplicaLogInfo": ("timer", "deliver"),
    "CompleteUncleanRecovery": ("timer", "deliver"),
    "UncleanLeaderElection": ("timer", "deliver", "fence", "crash", "clean"),
    IDLE: ("idle",),
}
#: Timers fired as events (the others -- heartbeats, session checks, HWM checkpoints -- are
#: replaced by the events above or change no spec variable).
_TIMERS = frozenset({FETCH_TIMER, RECOVERY_TIMER})


class ElrDriver(RefimplDriver):
    """The ELR adapter driven one spec step at a time (see the module docstring)."""

    def __init__(self, adapter, variables: tuple[str, ...] | None = None):
        super().__init__(adapter, variables)
        self.c = adapter.config
        adapter.merge_fetch_proposal = False   # the driver holds the proposal itself (below)
        # the graph's FetchTriggeredIsrExpand (the adapter's config, read from the graph's
        # cfg): a spec ProposeIsrExpand step is f's fetch round with the leader's proposal
        # (`fetch-propose`), not the held rest of an earlier fetch
        self.fetch_triggered = self.c.fetch_triggered_expand
        self.held: tuple = ()          # the parts of a composite event still to take
        # (snapshot before, event) of the FollowerFetch step just taken (None after any other
        # step): a ProposeIsrExpand that needs the leader's metadata cache caught up redoes it
        self.fetched: tuple | None = None
        self._last_event: tuple | None = None
        limit = adapter.sim_limits().max_restarts
        self.max_restarts = limit

    def _labels(self) -> frozenset[str]:
        return frozenset(SPEC_ACTIONS | {IDLE})

    def _kinds(self, label: str) -> tuple[str, ...]:
        if label == "ProposeIsrExpand" and self.fetch_triggered:
            return ("held", "fetch-propose")
        return ("held",) + _KINDS.get(label, ())

    def _extra_state(self) -> Any:
        return (self.held, self.fetched)

    def _restore_extra(self, extra: Any) -> None:
        self.held, self.fetched = extra or ((), None)

    # ---- initial states ------------------------------------------------------------------
    def reset(self) -> dict:
        self.held, self.fetched = (), None
        return super().reset()

    def reset_to(self, expected: dict) -> dict | None:
        """Start in the spec initial state `expected` (its leader of epoch 1 instead of the
        adapter's first broker); None when the adapter has no such start."""
        leader = expected.get("leader")
        if leader not in self.c.brokers:
            return None
        self.reset()
        w, a = self.world, self.a
        ctrl = w.states[self.c.controller]
        ctrl = replace(ctrl, partition=ctrl.partition.with_(leader=leader))
        w.states[self.c.controller] = ctrl
        w.disks[self.c.controller] = a.controller.disk_of(ctrl)
        for b in self.c.brokers:
            w.states[b] = replace(w.states[b], metadata=ctrl.metadata_for(b))
        w.history = {}
        a.after_step(w, None, "Init")
        self._hist_shared = False
        self._current, self._dirty = None, True
        self._memo_base, self._memo = None, {}
        return self.project()

    def variant_key(self) -> tuple:
        return super().variant_key() + (tuple((n, p.action, p.state) for n, p in self.held),)

    # ---- one spec step ---------------------------------------------------------------------
    def apply(self, step):
        base = self.snapshot()
        res = super().apply(step)
        if not res.matched and res.drivable:
            if step.action == "ProposeIsrExpand":
                got = (self._fetch_with_fresh_cache(base, step) if self.fetch_triggered
                       else self._propose_with_fresh_cache(base, step))
                if got is not None:
                    return got
            self.restore(base)
            why = self._why_not(step)
            if why is not None:
                res.reason = f"{why} ({res.reason})" if res.reason else why
        fetched = (base, self._last_event) if (
            res.matched and res.label == "FollowerFetch" and not res.silent) else None
        if res.matched and (fetched is not None or self.fetched is not None):
            self.fetched = fetched
            self._dirty = True
            self.snapshot()
        return res

    def _replay(self, ev: tuple) -> None:
        self._last_event = ev
        super()._replay(ev)

    def _propose_with_fresh_cache(self, base, step) -> Any:
        """ProposeIsrExpand(b, f) right after f's FollowerFetch, where b's fetch handling did
        not propose f because b's metadata cache has f fenced or with another broker epoch,
        while the controller has f unfenced with the broker epoch f's fetch named: KIP-841's
        leader checks eligibility against its metadata cache, which "is eventually
        consistent" -- the cache catching up with the metadata log before the fetch is a
        schedule Kafka allows (Partition.isReplicaIsrEligible then holds).  When b's partition
        view is the controller's current one, that catch-up changes no spec variable: the
        fetch is redone after it (the same projected state) and the proposal taken.  The
        applied step, or None (the driver back at `base`)."""
        bf = self._proposer(step) if self.fetched is not None else None
        if bf is None:
            return None
        b, f = bf
        cur = self.project()
        w, c = self.world, self.c
        md = w.states[b].metadata
        ctrl = w.states[c.controller]
        prog = w.states[b].progress()
        if md is None or f not in prog:
            return None
        reg = ctrl.registration(f)
        live = md.live(f)
        if reg is None or reg.fenced or reg.broker_epoch != prog[f].broker_epoch or (
                live is not None and live[1] == prog[f].broker_epoch):
            return None            # not the cache's doing: the controller would refuse too
        snap, ev = self.fetched
        self.restore(snap)
        ok = self._silent_catch_up(b)
        if ok:
            r = self._do(ev)
            ok = isinstance(r, _Outcome) and r.label == "FollowerFetch" and \
                self._matches(self.project(), cur) and bool(self.held)
        if ok:
            self.fetched = None
            res = super().apply(step)
            if res.matched:
                res.silent = [f"{self.describe(('metadata', b))} (before {f}'s fetch, which is "
                              f"redone: {f} unfenced with broker epoch {reg.broker_epoch} in "
                              f"{b}'s cache)"] + res.silent
                return res
        self.restore(base)
        return None

    def _silent_catch_up(self, b: str) -> bool:
        """b catches up with the metadata log; True when that changed no spec variable (b's
        partition view was already the controller's current one)."""
        before = self.project()
        return self._do(("metadata", b)) is not None and self._matches(self.project(), before)

    def _holds_proposal(self) -> bool:
        """The event just taken left the leader's ISR proposal as its held next part."""
        return bool(self.held) and self.held[0][1].action == "ProposeIsrExpand"

    def _proposer(self, step) -> tuple[str, str] | None:
        """(b, f) of a spec ProposeIsrExpand(b, f) step from the current driver state: the one
        broker whose pending ISR the step sets, and the one member it adds to b's view."""
        cur = self.project()
        w = self.world
        leaders = [b for b in self.c.brokers
                   if step.expected["pendingIsr"][b] and
                   step.expected["pendingIsr"][b] != cur["pendingIsr"][b]]
        if len(leaders) != 1:
            return None
        b = leaders[0]
        md = w.states[b].metadata
        added = sorted(set(step.expected["pendingIsr"][b]) - set(md.isr if md else ()))
        return (b, added[0]) if len(added) == 1 else None

    def _fetch_with_fresh_cache(self, base, step) -> Any:
        """FetchTriggeredIsrExpand: ProposeIsrExpand(b, f) is f's fetch round in which b
        proposes f.  Where b's fetch handling does not propose because its metadata cache is
        behind the metadata log (KIP-841: the cache "is eventually consistent"), b catches up
        first -- when b's partition view is the controller's current one, so the catch-up
        changes no spec variable -- and the round runs after it.  The applied step, or None
        (the driver back at `base`)."""
        bf = self._proposer(step)
        if bf is None:
            return None
        b, f = bf
        if self._silent_catch_up(b):
            res = super().apply(step)
            if res.matched:
                res.silent = [self.describe(("metadata", b)) + f" (before {f}'s fetch)"] + \
                    res.silent
                return res
        self.restore(base)
        return None

    def _why_not_fetch_triggered(self, step) -> str | None:
        """Why f's fetch round does not give the spec's ProposeIsrExpand(b, f) (the
        FetchTriggeredIsrExpand graph), when it is one of the refimpl's known choices."""
        bf = self._proposer(step)
        if bf is None:
            return None
        b, f = bf
        w = self.world
        if self.held:
            # the FollowerFetch step just taken was f's fetch in which b proposed f
            return (f"{HELD}: the refimpl's leader {b} proposed {f} within {f}'s fetch "
                    "round, the spec's FollowerFetch step just taken (Kafka's maybeExpandIsr "
                    "in updateFollowerFetchState); the spec's path lets that fetch end without "
                    f"a proposal and proposes in a later fetch round of {f}, which changes "
                    "the state again")
        if not w.up.get(f) or (f, FETCH_TIMER) not in self.timers:
            return None
        base = self.snapshot()
        r = self._do(("timer", f, FETCH_TIMER))
        st = w.states[b]
        md, prog = st.metadata, st.progress().get(f)
        proposed = self._holds_proposal()
        self.restore(base)
        if not isinstance(r, _Outcome) or proposed or md is None or prog is None:
            return None
        live = md.live(f)
        if live is not None and live[1] == prog.broker_epoch:
            return None
        reg = w.states[self.c.controller].registration(f)
        ctrl = ("unregistered" if reg is None else "fenced" if reg.fenced else
                f"unfenced with broker epoch {reg.broker_epoch}")
        return (f"{ELIGIBLE}: in {f}'s fetch, {b}'s metadata cache has {f} "
                f"{'fenced' if live is None else 'with broker epoch ' + str(live[1])} (the fetch "
                f"named broker epoch {prog.broker_epoch}; the controller has {f} {ctrl}; "
                f"catching {b}'s cache up is not silent here or does not help): the refimpl's "
                "leader does not propose it (KIP-841; Kafka's Partition.isReplicaIsrEligible), "
                "the spec's leader proposes and leaves the check to the controller")

    def _why_not(self, step) -> str | None:
        """Why the refimpl takes no such step here, when it is one of its known choices (the
        classes of explain.py's `elr_refimpl_choice`); None otherwise."""
        if self.held and step.action != self.held[0][1].action:
            return (f"{HELD}: the refimpl takes {self.held[0][1].action} within the event "
                    f"of the step before (the adapter's composite step); the spec's path "
                    f"takes {step.action} in between")
        if step.action != "ProposeIsrExpand":
            return None
        if self.fetch_triggered:
            return self._why_not_fetch_triggered(step)
        cur = self.project()
        w = self.world
        for b in self.c.brokers:
            pend = step.expected["pendingIsr"][b]
            if not pend or pend == cur["pendingIsr"][b]:
                continue
            st = w.states[b]
            md = st.metadata
            for f in sorted(set(pend) - set(md.isr if md else ())):
                live = md.live(f) if md else None
                prog = st.progress().get(f)
                if prog is None:
                    continue
                if self.fetched is None or self.fetched[1][:2] != ("timer", f):
                    return (f"{ON_FETCH}: the refimpl's leader proposes {f} within a fetch of "
                            f"{f} only (Kafka's maybeExpandIsr runs on a fetch; KIP-841: \"when "
                            "a broker is unfenced by the controller, the leader does nothing\" "
                            f"until the follower's next fetch); the spec's path proposes it "
                            f"without a fetch of {f} just before (a fetch now would change the "
                            "spec's state)")
                if live is None or live[1] != prog.broker_epoch:
                    reg = w.states[self.c.controller].registration(f)
                    ctrl = ("unregistered" if reg is None else "fenced" if reg.fenced else
                            f"unfenced with broker epoch {reg.broker_epoch}")
                    why = ("the controller would refuse it (INELIGIBLE_REPLICA); the "
                           f"refimpl's cache is the metadata log as of {b}'s last catch-up, "
                           "which holds that: Kafka's leader at that log offset does not "
                           "propose it either, one whose cache stopped before those records "
                           "(with the same partition state) would"
                           if reg is None or reg.fenced or reg.broker_epoch != prog.broker_epoch
                           else f"{b}'s partition view is not the controller's current one: "
                           "catching its cache up is a ReceiveMetadata step of the spec")
                    return (f"{ELIGIBLE}: {b}'s metadata cache has {f} "
                            f"{'fenced' if live is None else 'with broker epoch ' + str(live[1])}"
                            f" (the fetch named broker epoch {prog.broker_epoch}; the "
                            f"controller has {f} {ctrl}; {why}): the refimpl's leader does "
                            "not propose it (KIP-841; Kafka's Partition.isReplicaIsrEligible), "
                            "the spec's leader proposes and leaves the check to the controller "
                            "(spec ProposeIsrExpand)")
        return None

    # ---- applying transitions ------------------------------------------------------------
    def _take(self, node: str, t: Transition, hold_split: bool = True) -> None:
        """As RefimplDriver's, but a composite transition gives its first spec step only: the
        parts from the next labelled one on are held (`held`)."""
        cut = next((i for i, (_, p) in enumerate(t.chain) if p.action is not None), None)
        if cut is None:
            super()._take(node, t, hold_split)
            return
        self.held = t.chain[cut:] + self.held
        super()._take(node, replace(t, chain=t.chain[:cut]), hold_split)

    def _purge(self) -> None:
        """Take the messages no spec step needs out of the network (module docstring)."""
        w, c = self.world, self.c
        drop = []
        for mid, (env, _) in w.in_flight.items():
            m = env.payload
            if isinstance(m, (PartitionMetadata, BrokerHeartbeatRequest,
                              BrokerHeartbeatResponse)) or env.dst == c.producer:
                drop.append(mid)
            elif isinstance(m, AlterPartitionResponse) and not (
                    w.up.get(env.dst) and w.states[env.dst].broker_epoch == m.broker_epoch):
                drop.append(mid)
        for mid in drop:
            del w.in_flight[mid]

    # ---- events --------------------------------------------------------------------------
    def events(self) -> list[tuple]:
        if self.held:
            return [("held",)]
        w, c = self.world, self.c
        ctrl = w.states[c.controller]
        out: list[tuple] = [("deliver", mid) for mid in sorted(w.in_flight)
                            if w.up.get(w.in_flight[mid][0].dst)]
        for node, name in sorted(self.timers):
            if name in _TIMERS and w.up.get(node):
                out.append(("timer", node, name))
        for b in c.brokers:
            st = w.states[b]
            reg = ctrl.registration(b)
            if w.up.get(b):
                if st.is_leader:
                    out += [("produce", b, v) for v in c.values]
                    if (b, ISR_TIMER) in self.timers:
                        out.append(("isr", b))
                out.append(("metadata", b))
                if self.fetch_triggered and (b, FETCH_TIMER) in self.timers:
                    out.append(("fetch-propose", b))
                if reg is not None and reg.fenced:
                    out.append(("unfence", b))
                out += [("clean", b), ("crash", b)]
            else:
                lg = st.log
                out += [("restart", b, k) for k in range(lg.flushed, lg.end_offset + 1)]
            if reg is not None and not reg.fenced and (
                    c.fence_running_brokers or not w.up.get(b)):
                out.append(("fence", b))
        out += [("min_isr", m) for m in c.min_isr_choices if m != ctrl.min_isr]
        out.append(("idle",))
        return out

    def _do(self, ev: tuple) -> _Outcome | list[tuple] | None:
        kind = ev[0]
        if kind == "fetch-propose":
            # f's fetch round and the proposal its leader makes in it: one spec step
            desc = self.describe(ev)
            r = self._do(("timer", ev[1], FETCH_TIMER))
            if not isinstance(r, _Outcome) or not self._holds_proposal():
                return None
            p = self._do(("held",))
            if not isinstance(p, _Outcome):
                return None
            return _Outcome(ev, "ProposeIsrExpand", desc, p.params)
        if kind in ("deliver", "timer"):
            r = super()._do(ev)
        else:
            self._dirty = True
            self.world.now_ms += 10
            self.events_applied += 1
            r = self._event(ev)
        if r is not None:
            self._purge()
        return r

    def _event(self, ev: tuple) -> _Outcome | None:
        w, a, c = self.world, self.a, self.c
        kind = ev[0]
        now = w.now_ms
        desc = self.describe(ev)
        if kind == "held":
            (node, part), rest = self.held[0], self.held[1:]
            cut = next((i for i, (_, p) in enumerate(rest) if p.action is not None), len(rest))
            self.held = ()
            self._take(node, replace(part, chain=rest[:cut]))
            self.held = rest[cut:] + self.held
            return _Outcome(ev, part.action, desc, {"node": node})
        if kind == "idle":
            return _Outcome(ev, IDLE, desc, {})
        if kind == "min_isr":
            tc = a.client.alter_min_isr(w.states[c.producer], ev[1])
            env = tc.sends[0]
            t = a.deliver(c.controller, w.states[c.controller], env, now)
            if t is None:
                return None
            self._take(c.controller, t)
            return _Outcome(ev, t.action, desc, {"msg": env})
        b = ev[1]
        st = w.states[b]
        if kind == "produce":
            acks = ACKS_ALL_OR_ONE if c.acks_policy == "spec" else "all"
            tc = a.client.produce(w.states[c.producer], b, ev[2], acks)
            env = tc.sends[0]
            t = a.deliver(b, st, env, now)
            if t is None:
                return None
            self._take(c.producer, replace(tc, sends=(), action=None))
            self._take(b, t)
            return _Outcome(ev, t.action, desc, {"msg": env})
        if kind == "isr":
            w.now_ms = now = now + LAG_JUMP_MS
            t = a.fire_timer(b, st, ISR_TIMER, now)
            if t is None:
                return None
            self._take(b, t)
            return _Outcome(ev, t.action, desc, {"node": b})
        if kind == "metadata":
            ctrl = w.states[c.controller]
            env = Envelope(c.controller, b, ctrl.metadata_for(b))
            t = a.deliver(b, st, env, now)
            if t is None:
                return None
            self._take(b, t)
            return _Outcome(ev, t.action, desc, {"node": b})
        if kind == "fence":
            # b's session expired: every other registered broker heartbeated just now
            ctrl = w.states[c.controller]
            late = now - c.session_timeout_ms - 1
            regs = tuple(replace(r, last_heartbeat_ms=late if r.broker_id == b else now)
                         for r in ctrl.registrations)
            t = a.fire_timer(c.controller, replace(ctrl, registrations=regs), SESSION_TIMER,
                             now)
            if t is None or t.action is None or t.action == "Stutter":
                return None
            self._take(c.controller, t)
            return _Outcome(ev, t.action, desc, {"node": b})
        if kind == "unfence":
            env = Envelope(b, c.controller, BrokerHeartbeatRequest(b, st.broker_epoch))
            t = a.deliver(c.controller, w.states[c.controller], env, now)
            if t is None:
                return None
            self._take(c.controller, t)
            return _Outcome(ev, t.action, desc, {"node": b})
        if kind == "clean":
            t = a.graceful_shutdown(b, st, now)
            if t is None:
                return None
            self._take(b, replace(t, halt=True))
            self.world.up[b] = False
            return _Outcome(ev, t.action, desc, {"node": b})
        if kind == "crash":
            if a.crash_kind(b, "crash") != "crash":
                return None          # MaxUncleanShutdowns reached
            w.disks[b] = a.plain_crash(b, dict(w.disks[b]))
            self._stop(b)
            self._after(b, "UncleanShutdown")
            return _Outcome(ev, "UncleanShutdown", desc, {"node": b})
        if kind == "restart":
            if self.max_restarts is not None and self.restarts >= self.max_restarts:
                return None
            k = ev[2]
            disk = dict(w.disks[b])
            lg = st.log
            disk["log"] = ReplicaLog(lg.entries[:k], min(lg.flushed, k))
            t = a.restart(b, disk, now)
            if t is None:
                return None
            w.disks[b] = disk
            w.up[b] = True
            self.restarts += 1
            self._take(b, t)
            return _Outcome(ev, t.action, desc, {"node": b, "k": k})
        raise ValueError(f"unknown event {ev!r}")

    def describe(self, ev: tuple) -> str:
        kind = ev[0]
        if kind in ("deliver", "timer", "timer-send"):
            return super().describe(ev)
        if kind == "held":
            part = self.held[0][1] if self.held else None
            return f"the rest of the composite step: {part.action if part else '?'}"
        return {
            "idle": "nothing happens",
            "min_isr": "the admin sets min.insync.replicas to {1}",
            "produce": "the producer sends {2} to {1}",
            "isr": "{1}'s ISR check once the lag time has passed",
            "metadata": "{1} catches up with the metadata",
            "fetch-propose": "{1}'s fetch round, in which its leader proposes it for the ISR",
            "fence": "{1}'s session expires",
            "unfence": "{1}'s heartbeat reaches the controller",
            "clean": "{1} shuts down cleanly",
            "crash": "{1} crashes",
            "restart": "{1} restarts keeping {2} records",
        }[kind].format(*ev)
