"""THE mapping from the reassignment refimpl's state to the variables of spec/KRaftReassign.tla.

It extends refimpl/kraft/spec_mapping.py (spec/KRaft.tla): the same per-replica variables,
messages and history, plus what KIP-642 adds (see the contract of issue 12 and the spec):

* log records: a VoterAssignment control record is
  [epoch |-> e, value |-> VoterAssignment, voters |-> CurrentVoters, target |-> TargetVoters]
  (TargetVoters null is the empty set: a reassignment to no voter is never accepted);
  client and LeaderChange records keep KRaft.tla's [epoch, value];
* followerEndOffset is a function over every replica (voters change), -1 for a non-voter;
* the quorum-state file's voters and applied offset (`qsVoters`, `qsApplied`), what a restart
  recovers from;
* the ghost map epoch -> leader (`ghostLeaders`, every epoch ever led);
* the Fetch request's isFollower flag and the NOT_FOLLOWER error.

Action names: the refimpl's KIP-642 steps are AlterQuorum (the admin request), AddVoter,
RemoveVoter, CompleteReassignment (TargetVoters cleared) and ResignForRemoval (the leader as the
last RemovingVoter), each named as the spec names them (ACTION_NAMES).
"""

from __future__ import annotations

from typing import Any, Mapping

from kraftcheck.values import Fn, canonical, to_itf
from refimpl.kraft import spec_mapping as km
from refimpl.kraft.log import Record, VoterAssignment
from refimpl.kraft.messages import FetchRequest, FetchResponse
from refimpl.kraft.state import QUORUM_STATE, NodeState, Role
from refimpl.sim.bounds import Bounds, BoundsError
from refimpl.sim.protocol import Envelope, World, dumps

__all__ = ["SPEC_MODULE", "VARIABLES", "ACTION_NAMES", "EXTRA_MODEL_VALUES", "History",
           "project", "message_value", "params_json", "record_plain", "targets_from_cfg",
           "VOTER_ASSIGNMENT"]

SPEC_MODULE = "KRaftReassign"
VOTER_ASSIGNMENT = "VoterAssignment"   # model value: the value of a VoterAssignment record
EXTRA_MODEL_VALUES = (VOTER_ASSIGNMENT,)

PER_NODE_VARIABLES = km.PER_NODE_VARIABLES + ("qsVoters", "qsApplied")
GLOBAL_VARIABLES = km.GLOBAL_VARIABLES + ("ghostLeaders",)
VARIABLES = PER_NODE_VARIABLES + GLOBAL_VARIABLES

ACTION_NAMES: dict[str, str] = {
    **km.ACTION_NAMES,
    "AlterQuorum": "AlterQuorum",
    "AddVoter": "AddVoter",
    "RemoveVoter": "RemoveVoter",
    "CompleteReassignment": "CompleteReassignment",
    "ResignForRemoval": "ResignForRemoval",
}


def record_plain(r: Record) -> dict:
    c = r.control
    if isinstance(c, VoterAssignment):
        return {"epoch": r.epoch, "value": VOTER_ASSIGNMENT,
                "voters": frozenset(c.current_voters),
                "target": frozenset(c.target_voters or ())}
    return km._record_plain(r)


def node_values(s: NodeState, nodes: tuple[str, ...], disk: Mapping[str, Any],
                bootstrap: tuple[str, ...]) -> dict:
    d = km.node_values(s, nodes)
    d["log"] = tuple(Fn(record_plain(r)) for r in s.log)
    voters = s.voter_set or bootstrap
    feo = s.follower_end_offset
    d["followerEndOffset"] = Fn({v: feo.get(v, -1) if v in voters else -1 for v in nodes})
    qs = disk.get(QUORUM_STATE)
    d["qsVoters"] = frozenset(qs.current_voters if qs is not None and qs.current_voters
                              else bootstrap)
    d["qsApplied"] = qs.applied_offset if qs is not None else 0
    return d


def message_fields(env: Envelope) -> dict:
    d = km.message_fields(env)
    m = env.payload
    if isinstance(m, FetchRequest):
        d["isFollower"] = m.is_follower
    elif isinstance(m, FetchResponse):
        d["records"] = [record_plain(r) for r in m.records]
    return d


def message_value(env: Envelope) -> Fn:
    return canonical(message_fields(env))


class History(km.History):
    """KRaft's history variables plus ghostLeaders: epoch -> the replica that led it."""

    def __init__(self, cluster_of):
        super().__init__(cluster_of)
        self.leaders: dict[int, str] = {}

    def after_step(self, world: World, node: str | None, action: str) -> None:
        super().after_step(world, node, action)
        if node is None:
            return
        s: NodeState = world.states[node]
        if s.role is Role.LEADER and s.epoch not in self.leaders:
            self.leaders[s.epoch] = node
            self.version += 1

    def values(self) -> dict:
        v = super().values()
        v["ghostCommitted"] = tuple(Fn({"entry": Fn(record_plain(r)), "epoch": e})
                                    for r, e in self.ghost_committed)
        v["ghostLeaders"] = Fn(dict(self.leaders))
        return v


def project(world: World, nodes: tuple[str, ...], bootstrap: tuple[str, ...]) -> dict:
    per = {n: node_values(world.states[n], nodes, world.disks.get(n, {}), bootstrap)
           for n in nodes}
    out = {v: Fn({n: per[n][v] for n in nodes}) for v in PER_NODE_VARIABLES}
    counts: dict = {}
    for env, copies in world.in_flight.values():
        k = message_value(env)
        counts[k] = counts.get(k, 0) + copies
    out["msgs"] = Fn(counts) if counts else ()
    out.update(world.history["kraft"].values())
    return out


def params_json(params: Mapping[str, Any], env: Envelope | None = None) -> str:
    d = {k: to_itf(canonical(v)) for k, v in params.items() if v is not None}
    if "target" in params and params["target"] is None:
        d["target"] = to_itf(canonical(frozenset()))
    if env is not None:
        d["msg"] = to_itf(message_value(env))
    return dumps(d)


def targets_from_cfg(b: Bounds, kb) -> tuple | None:
    """The admin requests' target sets of a bounded run: the config's `Targets` (a set of
    sets of replicas), else None (random subsets)."""
    r = b.first(("Targets", "TargetVoterSets"), "set")
    if r is None:
        return None
    name, v = r
    nodes = set(kb.voters) | set(kb.observers)
    out = []
    for t in v:
        if not isinstance(t, frozenset) or not t or not set(t) <= nodes:
            raise BoundsError(f"{b.where(name)}: {name} must be a set of non-empty sets of "
                              "replicas")
        out.append(tuple(sorted(t)))
    return tuple(sorted(out))
