"""KIP-595 plugged into the simulator: `KRaftAdapter` implements refimpl.sim.protocol.

It owns a `KRaftNode` (the pure handlers), the spec mapping and the online invariants, and
applies the bounds of a TLC config (`--bounds`): the servers, the maximum epoch, the maximum log
length, the client values, and the simulator-enforced limits (restarts, in-flight messages,
client requests).  A handler whose result would leave the bounds is not enabled (None).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Mapping

from kraftcore.values import canonical, to_itf
from refimpl.kraft import spec_mapping as sm
from refimpl.kraft.liveness import client_records, judge as judge_liveness
from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.invariants import KRaftMonitor
from refimpl.kraft.node import CHECK_QUORUM, ELECTION, KRaftNode
from refimpl.kraft.quorum import holds_majority
from refimpl.kraft.messages import VoteRequest
from refimpl.kraft.state import META_PROPERTIES, QUORUM_STATE, NodeState, Role
from refimpl.sim.bounds import Bounds, BoundsError
from refimpl.sim.protocol import (
    Envelope, Monitor, ProtocolAdapter, SetTimer, SimLimits, Transition, World, dumps,
)

__all__ = ["KRaftAdapter", "KRaftBounds", "BOUND_NAMES"]

# Accepted constant names in a TLC config (spec/KRaft.tla names first), first match wins.
BOUND_NAMES: dict[str, tuple[str, ...]] = {
    "servers": ("Voters", "Server", "Servers", "Replicas"),
    "observers": ("Observers", "Observer"),
    "timeout_voters": ("TimeoutVoters",),
    "misconfigured": ("MisconfiguredServers",),
    "max_epoch": ("MaxEpoch", "MaxTerm"),
    "max_log": ("MaxLogLength", "MaxLogLen", "MaxLog"),
    "values": ("Values", "Value", "ClientValues"),
    "max_restarts": ("MaxRestarts", "MaxCrashes"),
    "max_in_flight": ("MaxInFlight", "MaxMessages", "MaxMsgs"),
    "max_client_requests": ("MaxClientRequests", "MaxAppends"),
}

CLUSTER_A, CLUSTER_B = "cluster-A", "cluster-B"   # MCKRaft!MCClusterOf


@dataclass(frozen=True)
class KRaftBounds:
    """The cluster and the bounds of a run.  Unbounded runs use the defaults (3 voters)."""

    voters: tuple[str, ...]
    observers: tuple[str, ...] = ()
    max_epoch: int | None = None
    max_log: int | None = None
    values: tuple[str, ...] | None = None
    timeout_voters: tuple[str, ...] | None = None   # None: every voter's timers may fire
    misconfigured: tuple[str, ...] = ()              # replicas formatted with cluster-B
    limits: SimLimits = SimLimits()

    @classmethod
    def from_cfg(cls, b: Bounds, reassign: bool = False) -> "KRaftBounds":
        """`reassign` (KIP-642 configs): an empty Values set means no client appends (logs of
        control records only), and TimeoutVoters may name observers (they may be promoted)."""
        def pick(key, kind):
            r = b.first(BOUND_NAMES[key], kind)
            return None if r is None else r[1]

        def at(key) -> str:
            """`file:line: Name` of the constant that sets bound `key`."""
            name = next(n for n in BOUND_NAMES[key] if b.has(n))
            return f"{b.where(name)}: {name}"

        def names(key) -> tuple[str, ...] | None:
            v = pick(key, "set")
            if v is None:
                return None
            if not all(isinstance(x, str) for x in v):
                raise BoundsError(f"{at(key)} must be a set of model values")
            return tuple(sorted(v))

        servers = names("servers")
        if not servers:
            raise BoundsError(f"{b.path}: no server set (one of {', '.join(BOUND_NAMES['servers'])})")
        observers = tuple(x for x in (names("observers") or ()) if x not in servers)
        values = pick("values", "set")
        if values is not None:
            values = tuple(sorted(str(v) for v in values))
            if not values and not reassign:
                raise BoundsError(f"{at('values')}: the value set is empty")
        for key in ("max_epoch", "max_log", "max_restarts", "max_in_flight", "max_client_requests"):
            v = pick(key, "int")
            if v is not None and v < 0:
                raise BoundsError(f"{at(key)} must be >= 0")
        tv = names("timeout_voters")
        if tv is not None and not set(tv) <= set(servers) | (set(observers) if reassign else set()):
            raise BoundsError(f"{at('timeout_voters')} must be a subset of the voters")
        return cls(
            voters=servers, observers=observers,
            max_epoch=pick("max_epoch", "int"), max_log=pick("max_log", "int"),
            values=values, timeout_voters=tv, misconfigured=names("misconfigured") or (),
            limits=SimLimits(max_in_flight=pick("max_in_flight", "int"),
                             max_restarts=pick("max_restarts", "int"),
                             max_client_requests=pick("max_client_requests", "int")),
        )


class KRaftAdapter(ProtocolAdapter):
    name = "kraft"
    spec_module = sm.SPEC_MODULE
    supports_unclean_shutdown = False  # KIP-595 fsyncs every append: nothing to lose
    supports_disk_loss = True          # LoseDisk: empty log and quorum-state

    def __init__(self, bounds: KRaftBounds | None = None, bug: str | None = None,
                 config: QuorumConfig | None = None, bootstrap_cluster_id: bool = False,
                 observer_rediscovery: bool = True):
        """`bootstrap_cluster_id`: start every replica without a cached clusterId (a brand new
        cluster, KIP-595r "Cluster Bootstrapping": the first leader generates it).  The default
        formats every replica with the spec's ClusterOf (cluster-A, or cluster-B for the
        MisconfiguredServers), as the spec's model does.  `observer_rediscovery`: an observer
        whose leader is silent for quorum.fetch.timeout.ms asks the voters again (Kafka); off
        under `--bounds`, whose spec has a Follower fetch only from its leader."""
        self.bounds = bounds or KRaftBounds(voters=("n1", "n2", "n3"), values=("v1", "v2"))
        self.bug = bug
        self.cfg = config or QuorumConfig(voters=self.bounds.voters, fetch_max_records=1,
                                          request_timeout_ms=400)
        if self.cfg.voters != self.bounds.voters:
            raise ValueError("config voters differ from the bounds' servers")
        self.node = KRaftNode(self.cfg, bug, max_epoch=self.bounds.max_epoch,
                              timeout_voters=self.bounds.timeout_voters,
                              observer_rediscovery=observer_rediscovery)
        self._nodes = self.bounds.voters + self.bounds.observers
        self._timeout_voters = set(self.bounds.timeout_voters or self.bounds.voters)
        self._encoder = sm.StateEncoder(self._nodes, self.bounds.voters)
        self._counter = 0
        self.cluster_of = {n: (None if bootstrap_cluster_id else
                               CLUSTER_B if n in self.bounds.misconfigured else CLUSTER_A)
                           for n in self._nodes}
        self.history = sm.History(self.cluster_of)
        self.world: World | None = None
        self._catch_up_target: tuple | None = None  # (leader, epoch, HWM) replicas must reach
        self._pending: frozenset = frozenset()  # client records held when the faults stopped

    @classmethod
    def from_options(cls, bounds: Bounds | None, bug: str | None) -> "KRaftAdapter":
        if bounds is None:
            return cls(None, bug)
        return cls(KRaftBounds.from_cfg(bounds), bug, observer_rediscovery=False)

    def bind(self, world: World) -> None:
        self.world = world

    # ---- static facts
    def nodes(self) -> tuple[str, ...]:
        return self._nodes

    def model_values(self) -> tuple[str, ...]:
        return tuple(sorted(self._nodes + (sm.NIL, sm.LEADER_CHANGE) + (self.bounds.values or ())))

    def spec_variables(self) -> tuple[str, ...]:
        return sm.VARIABLES

    def sim_limits(self) -> SimLimits:
        return self.bounds.limits

    # ---- behaviour
    def _within(self, t: Transition | None) -> Transition | None:
        if t is None:
            return None
        b = self.bounds
        if b.max_epoch is not None and t.state.epoch > b.max_epoch:
            return None
        return self._named(t)

    ACTION_NAMES: Mapping[str, str] = sm.ACTION_NAMES   # refimpl action -> spec action

    def _named(self, t: Transition) -> Transition:
        if t.action is None:
            return t
        spec_name = self.ACTION_NAMES[t.action]
        return t if spec_name == t.action else replace(t, action=spec_name)

    def init(self):
        self._counter = 0
        self._catch_up_target = None
        self.history = sm.History(self.cluster_of)
        self._encoder = sm.StateEncoder(self._nodes, self.bounds.voters)
        states, disks, timers = {}, {}, []
        for n in self._nodes:
            cid = self.cluster_of[n]
            s = self.node.initial_state(n, cid)
            states[n] = s
            disks[n] = {META_PROPERTIES: cid} if cid is not None else {}
            timers += [(n, t) for t in self.node.initial_timers(s) if isinstance(t, SetTimer)
                       and self._timer_allowed(n, t.name)]
        return states, disks, timers

    def _timer_allowed(self, node: str, timer: str) -> bool:
        # TimeoutVoters: only these voters' election / progress timers may fire
        return timer not in (ELECTION, CHECK_QUORUM) or node in self._timeout_voters

    def deliver(self, node: str, state: NodeState, env: Envelope, now_ms: int) -> Transition | None:
        return self._within(self.node.handle_message(state, env.src, env.payload))

    def fire_timer(self, node: str, state: NodeState, timer: str, now_ms: int) -> Transition | None:
        if not self._timer_allowed(node, timer):
            return None
        return self._within(self.node.handle_timer(state, timer))

    def client_request(self, world: World, rng: random.Random):
        leaders = [n for n in self.bounds.voters
                   if world.up[n] and world.states[n].role is Role.LEADER]
        if not leaders:
            return None
        node = leaders[0] if len(leaders) == 1 else rng.choice(leaders)
        if self.bounds.max_log is not None and len(world.states[node].log) >= self.bounds.max_log:
            return None  # spec ClientRequest: Len(log[i]) < MaxLogLength
        if self.bounds.values is not None:
            value = rng.choice(self.bounds.values)
        else:
            self._counter += 1
            value = f"v{self._counter}"
        t = self._within(self.node.client_append(world.states[node], value))
        return None if t is None else (node, t)

    def restart(self, node: str, disk: Mapping[str, Any], now_ms: int) -> Transition:
        t = self.node.restart(node, disk)
        timers = tuple(x for x in t.timers
                       if not isinstance(x, SetTimer) or self._timer_allowed(node, x.name))
        return self._named(replace(t, timers=timers))

    # ---- disk loss (spec LoseDisk)
    def lose_disk(self, node: str, disk: dict[str, Any]) -> dict[str, Any]:
        """The log and the quorum-state file are gone; the operator re-formats the storage
        with the cluster's id (meta.properties), as `kafka-storage format` would."""
        cid = disk.get(META_PROPERTIES, self.cluster_of.get(node))
        return {META_PROPERTIES: cid} if cid is not None else {}

    def restart_after_disk_loss(self, node: str, disk: Mapping[str, Any], now_ms: int) -> Transition:
        t = self.node.restart(node, disk, action="LoseDisk")
        timers = tuple(x for x in t.timers
                       if not isinstance(x, SetTimer) or self._timer_allowed(node, x.name))
        return self._named(replace(t, timers=timers))

    def rejoin_allowed(self, node: str) -> bool:
        """May the fault profile's disk loss of the stopped `node` take effect now (the node
        restarts empty)?  spec/KRaftHistory.tla's MayLoseDisk under "AfterNewLeaderCommitted",
        the discipline of Kafka's canRecoverFromSingleNodeCommittedDataLoss ("we lose no
        committed data as long as a new leader is elected before the failed node is
        restarted"): a voter l other than `node` leads an epoch `node` never reached, every
        other replica is up, in that epoch and follows l, and l's high watermark has passed a
        record of its epoch (KIP-595 "Extra condition on commitment": l's log up to there is
        on a majority, none of which is `node`).  Then no leader holds an end offset recorded
        for `node` before the loss (a leader records offsets only in its own epoch: stale
        ones would count records the empty replica no longer has), and, with no Vote request
        to it in flight, it cannot vote again in an epoch it voted in (NoDoubleVote)."""
        w = self.world
        reached = w.states[node].epoch          # a stopped node's state is the one it stopped in
        for l in self.bounds.voters:
            ls = w.states[l]
            if l == node or not w.up[l] or ls.role is not Role.LEADER or ls.epoch <= reached:
                continue
            if not all(w.up[v] and w.states[v].epoch == ls.epoch and w.states[v].leader_id == l
                       for v in self._nodes if v != node):
                continue
            hwm = ls.high_watermark
            if hwm > 0 and ls.log[hwm - 1].epoch == ls.epoch:
                return not any(env.dst == node and isinstance(env.payload, VoteRequest)
                               for env, _ in w.in_flight.values())
        return False

    # ---- liveness
    def _stable_leader(self, w: World, exclude: str | None = None) -> str | None:
        """The leader a majority of the voters follows (it included), among the running
        replicas, or None."""
        for lid in self._leader_candidates():
            if lid == exclude or not w.up[lid]:
                continue
            ls = w.states[lid]
            if ls.role is not Role.LEADER:
                continue
            voters = self._voters_of_leader(ls)
            n = sum(1 for v in voters if v == lid or (
                v != exclude and w.up[v] and w.states[v].epoch == ls.epoch
                and w.states[v].leader_id == lid))
            if holds_majority(n, len(voters)):
                return lid
        return None

    def _leader_candidates(self) -> tuple[str, ...]:
        """The replicas that may lead: the (fixed) voters."""
        return tuple(self.bounds.voters)

    def _voters_of_leader(self, ls: NodeState):
        """The voters whose majority a leader needs: the (fixed) voters."""
        return self.bounds.voters

    def has_leader(self, world: World) -> bool:
        return self._stable_leader(world) is not None

    def liveness_snapshot(self, world: World) -> None:
        self._pending = client_records(world.states[n] for n in self._nodes)

    def liveness_properties(self, world: World) -> dict[str, str | None]:
        """spec/KRaftBackoff.tla's ClientValueCommittedOrTruncated, ObserverFindsLeaderAndCatchesUp
        and FollowersConverge (refimpl/kraft/liveness.py)."""
        lid = self._stable_leader(world)
        t = self._catch_up_target
        target = t[2] if t is not None and lid is not None and t[:2] == (
            lid, world.states[lid].epoch) else None
        return judge_liveness(world.states, world.up, self.bounds.voters, self.bounds.observers,
                              lid, self._pending, target)

    def recovered(self, world: World) -> bool:
        """A leader a majority follows has committed a record of its epoch (its LeaderChange
        record), and every other replica that can run (not stopped for good by a fatal error)
        is up, follows it in its epoch and has reached the high watermark the leader had when
        it first was so (Kafka's allReachedHighWatermark: the workload keeps appending, so the
        target is fixed when it is set; a change of leader sets a new one)."""
        lid = self._stable_leader(world)
        if lid is None:
            self._catch_up_target = None
            return False
        ls = world.states[lid]
        if ls.high_watermark <= ls.epoch_start_offset:
            return False
        t = self._catch_up_target
        if t is None or t[:2] != (lid, ls.epoch):
            t = self._catch_up_target = (lid, ls.epoch, ls.high_watermark)
        for n in self._nodes:
            s = world.states[n]
            if n == lid or s.role is Role.SHUTDOWN:
                continue
            if not world.up[n] or s.epoch != ls.epoch or s.leader_id != lid \
                    or s.high_watermark < t[2]:
                return False
        return True

    def crash_allowed(self, node: str, state: NodeState) -> bool:
        # spec Restart: not a Shutdown replica; bounded: a leader of MaxEpoch does not crash
        if state.role is Role.SHUTDOWN:
            return False
        b = self.bounds
        return not (b.max_epoch is not None and state.leader_id == node
                    and state.epoch >= b.max_epoch)

    def graceful_shutdown(self, node: str, state: NodeState, now_ms: int) -> Transition | None:
        # spec Resign: leaders only, and not in MaxEpoch
        if state.role is not Role.LEADER:
            return None
        b = self.bounds
        if b.max_epoch is not None and state.epoch >= b.max_epoch:
            return None
        return self._within(self.node.resign(state))

    def after_step(self, world: World, node: str | None, action: str) -> None:
        if action == "Init" or "kraft" not in world.history:
            world.history["kraft"] = self.history
        self.history.after_step(world, node, action)

    # ---- observation
    def project(self, world: World) -> dict[str, Any]:
        return sm.project(world, self._nodes, self.bounds.voters)

    def encode_state(self, world: World) -> str:
        return self._encoder.encode(world)

    def message_value(self, env: Envelope) -> Any:
        return sm.message_value(env)

    def params_json(self, params: Mapping[str, Any], env: Envelope | None = None) -> str:
        if env is None:
            if len(params) == 1 and "node" in params:
                return '{"node":' + dumps(params["node"]) + "}"
            return dumps({k: to_itf(canonical(v)) for k, v in params.items()})
        msg = self._encoder.message_json(env)
        if not params:
            return '{"msg":' + msg + "}"
        if len(params) == 1 and "node" in params:
            return '{"msg":' + msg + ',"node":' + dumps(params["node"]) + "}"
        d = {k: to_itf(canonical(v)) for k, v in params.items()}
        d["msg"] = to_itf(sm.message_value(env))
        return dumps(d)

    def network_action(self, generic: str) -> str:
        return sm.NETWORK_ACTIONS.get(generic, generic)

    def monitor(self) -> Monitor:
        return KRaftMonitor(self.bounds.voters, self._nodes, self.cluster_of)
