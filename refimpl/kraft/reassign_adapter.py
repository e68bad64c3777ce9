"""KIP-642 reassignment plugged into the simulator: `ReassignAdapter` (protocol "reassign").

The cluster: the bootstrap voters (quorum.voters) and spare replicas that start as observers
and may be added.  The workload is KIP-595's client appends plus admin requests: now and then
the admin client sends an AlterPartitionReassignments (the early revision's AlterQuorum) with a
random target voter set, or (cancel_share) Replicas = null, the draft's "Cancellation", drawn
from the simulator's seeded RNG, to the replica it believes leads (sometimes to any replica;
resubmitting the current voters cancels too), over the same lossy
network, so the chaos fault profiles (loss, duplication, partitions, crashes) hit
reassignments in every phase.  The admin is stateless and retries by sending again; its
responses are consumed by the network (the spec's DropMessage).

Every replica's timers may fire (a replica added to the quorum needs its election timer); disk
loss and KIP-595's graceful Resign are not part of this workload (a graceful stop is a crash).  Liveness (`recovered`): a leader a majority of ITS voters
follows has committed a record of its epoch, no reassignment is pending in its log (TargetVoters
cleared and committed), and every running replica follows it at its HWM.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from refimpl.kraft import reassign_mapping as rm
from refimpl.kraft.adapter import KRaftAdapter, KRaftBounds
from refimpl.kraft.config import QuorumConfig
from refimpl.kraft.reassign import latest_assignment, target_from_log
from refimpl.kraft.reassign_invariants import ReassignMonitor
from refimpl.kraft.reassign_node import ReassignNode
from refimpl.kraft.messages import AlterPartitionReassignmentsRequest
from refimpl.kraft.state import NodeState, Role
from refimpl.sim.bounds import Bounds
from refimpl.sim.protocol import Envelope, Monitor, ProtocolAdapter, Transition, World

__all__ = ["ReassignAdapter", "ReassignWorkload"]


@dataclass(frozen=True)
class ReassignWorkload:
    """How often a client request is an admin reassignment, and the target sizes drawn."""

    admin_share: float = 0.02      # share of client requests that are AlterQuorum
    to_leader: float = 0.8         # share of those sent to a leader (else to any replica)
    min_size: int = 1
    max_size: int = 4
    cancel_share: float = 0.15     # share of admin requests with Replicas = null (cancel)


class ReassignAdapter(KRaftAdapter):
    name = "reassign"
    spec_module = rm.SPEC_MODULE
    supports_disk_loss = False

    def __init__(self, bounds: KRaftBounds | None = None, bug: str | None = None,
                 workload: ReassignWorkload = ReassignWorkload(),
                 observer_rediscovery: bool = True, targets: tuple | None = None,
                 fetch_max_records: int = 8, any_replica_votes: bool = False):
        """`targets`: the admin requests' possible target sets (bounded runs: the config's
        reassignment targets); None draws random subsets of all replicas.
        `any_replica_votes`: the cure of the draft's availability finding (ReassignNode); its
        traces are not the draft's (an observer's granted vote is no transition of it)."""
        bounds = bounds or KRaftBounds(voters=("n1", "n2", "n3"), observers=("n4", "n5"),
                                       values=("v1", "v2"))
        nodes = bounds.voters + bounds.observers
        bounds = replace(bounds, timeout_voters=bounds.timeout_voters or nodes)
        # unbounded runs fetch up to 8 records at a time, so followers and the observers to be
        # promoted can catch up with the chaos profiles' client load; bounded runs one, as the
        # spec's FetchResponse carries
        cfg = QuorumConfig(voters=bounds.voters, fetch_max_records=fetch_max_records,
                           request_timeout_ms=400)
        super().__init__(bounds, bug, config=cfg, observer_rediscovery=observer_rediscovery)
        self.node = ReassignNode(cfg, bug, max_epoch=bounds.max_epoch,
                                 timeout_voters=nodes, observer_rediscovery=observer_rediscovery,
                                 any_replica_votes=any_replica_votes)
        self._timeout_voters = set(nodes)
        self.workload = workload
        self.targets = targets
        self.history = rm.History(self.cluster_of, bounds.max_epoch)

    @classmethod
    def from_options(cls, bounds: Bounds | None, bug: str | None) -> "ReassignAdapter":
        if bounds is None:
            return cls(None, bug)
        kb = KRaftBounds.from_cfg(bounds, reassign=True)
        targets = rm.targets_from_cfg(bounds, kb)
        # a config whose administrator may cancel (NullReplicas in TargetSets) and that has no
        # client records (Values = {}): a quarter of the client requests are the admin's, so
        # that runs of a few hundred steps reach a cancellation (the default 2% rarely does)
        workload = ReassignWorkload(admin_share=0.25) \
            if targets is not None and None in targets and kb.values == () else ReassignWorkload()
        return cls(kb, bug, observer_rediscovery=False, targets=targets, workload=workload,
                   fetch_max_records=1)

    # ---- static facts
    def model_values(self) -> tuple[str, ...]:
        return tuple(sorted(set(super().model_values()) | set(rm.EXTRA_MODEL_VALUES)))

    def spec_variables(self) -> tuple[str, ...]:
        return rm.VARIABLES

    # ---- behaviour
    ACTION_NAMES = rm.ACTION_NAMES

    def init(self):
        out = super().init()
        self.history = rm.History(self.cluster_of, self.bounds.max_epoch)
        return out

    def crash_kind(self, node: str, kind: str) -> str | None:
        return "crash"   # KIP-595's Resign is not a step of the reassignment spec

    def graceful_shutdown(self, node: str, state: NodeState, now_ms: int) -> Transition | None:
        return None

    def _draw_target(self, rng: random.Random) -> tuple[str, ...] | None:
        """A target voter set, or None: the draft's cancellation (Replicas = null)."""
        w = self.workload
        if self.targets is not None:
            return rng.choice(self.targets)
        if rng.random() < w.cancel_share:
            return None
        size = rng.randint(w.min_size, min(w.max_size, len(self._nodes)))
        return tuple(sorted(rng.sample(self._nodes, size)))

    def client_request(self, world: World, rng: random.Random):
        """A client append, or (admin_share) the admin's AlterPartitionReassignments: the
        spec's SendAlterPartitionReassignments(i, T), a step that only puts the request in
        flight (its handling is ReceiveAlterPartitionReassignmentsRequest at i)."""
        if rng.random() >= self.workload.admin_share:
            if self.bounds.values == ():
                return None          # Values = {}: no client appends in this model
            return super().client_request(world, rng)
        leaders = [n for n in self._nodes
                   if world.up[n] and world.states[n].role is Role.LEADER]
        if leaders and rng.random() < self.workload.to_leader:
            node = leaders[0] if len(leaders) == 1 else rng.choice(leaders)
        else:
            node = rng.choice(self._nodes)
        env = Envelope(rm.ADMIN, node, AlterPartitionReassignmentsRequest(self._draw_target(rng)))
        # like Kafka's AdminClient, one request outstanding: none of its requests or responses
        # is in flight (a lost one counts as timed out); and the in-flight bound
        lim = self.bounds.limits.max_in_flight
        if any(rm.ADMIN in (e.src, e.dst) for e, _ in world.in_flight.values()) or (
                lim is not None and sum(c for _, c in world.in_flight.values()) >= lim):
            return None
        return node, Transition(world.states[node], "SendAlterPartitionReassignments",
                                {"node": node,
                                 "target": rm.NULL_REPLICAS if env.payload.target_voters is None
                                 else frozenset(env.payload.target_voters)},
                                sends=(env,))

    _APPENDS = frozenset({"ReceiveAlterPartitionReassignmentsRequest", "AddVoter",
                          "RemoveVoter", "CompleteReassignment"})

    def _within(self, t: Transition | None) -> Transition | None:
        """Bounded runs: the reassignment appends need room below MaxLogLength (spec
        HasRoom), as client appends do."""
        t = super()._within(t)
        b = self.bounds
        if (t is not None and b.max_log is not None and t.action in self._APPENDS
                and len(t.state.log) > b.max_log):
            return None
        return t

    # ---- liveness
    def _leader_candidates(self) -> tuple[str, ...]:
        """Any replica may lead once a VoterAssignment made it a voter."""
        return tuple(self._nodes)

    def _voters_of_leader(self, ls: NodeState):
        """The leader's own voter set (from its log), else the bootstrap voters."""
        return ls.voter_set or self.bounds.voters

    def recovered(self, world: World) -> bool:
        """KIP-595's recovery, and no reassignment pending: the leader's latest assignment has
        TargetVoters null and is committed (the draft's "the reassignment is done")."""
        lid = self._stable_leader(world)
        if lid is not None:
            ls = world.states[lid]
            a = latest_assignment(ls.log)
            if target_from_log(ls.log) is not None or (a is not None and a[0] >= ls.high_watermark):
                return False
        return super().recovered(world)

    # ---- observation
    def project(self, world: World) -> dict[str, Any]:
        return rm.project(world, self._nodes, self.bounds.voters)

    def encode_state(self, world: World) -> str:
        return ProtocolAdapter.encode_state(self, world)

    def message_value(self, env):
        return rm.message_value(env)

    def params_json(self, params, env=None) -> str:
        return rm.params_json(params, env)

    def after_step(self, world: World, node: str | None, action: str) -> None:
        if action == "Init" or "kraft" not in world.history:
            world.history["kraft"] = self.history
        self.history.after_step(world, node, action)

    def monitor(self) -> Monitor:
        return ReassignMonitor(self.bounds.voters, self._nodes, self.cluster_of,
                               action_names={rm.ACTION_NAMES[a] for a in ("AddVoter", "RemoveVoter")})
