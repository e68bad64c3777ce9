"""THE mapping from the reassignment refimpl's state to the variables of spec/KRaftReassign.tla
(the contract of issue 12 between the spec and the refimpl).

It extends refimpl/kraft/spec_mapping.py (spec/KRaft.tla): the same variables, messages and
history, plus what KIP-642 adds:

* log records: a VoterAssignment control record is
  [epoch |-> e, value |-> "VoterAssignment", currentVoters |-> S, targetVoters |-> T]
  (value is a STRING; T = {} is the draft's TargetVoters = null); client and LeaderChange
  records keep KRaft.tla's [epoch, value];
* followerEndOffset is a function over every replica (voters change); the leader tracks its
  voters and its TargetVoters, -1 elsewhere;
* voterSet: the voter set each replica acts on; quorumState: the persisted [offset, voters]
  (offset = 1-based index of the committed VoterAssignment, 0 = the bootstrap voters);
  ghostLeaders: epoch -> every replica that ever led it, over the epochs that had a leader
  (the spec's domain grows with them, so a trace does not depend on MaxEpoch);
* the admin client's AlterPartitionReassignments request / response (src / dest `admin`) and
  the NOT_FOLLOWER Fetch error (a NONE response in every other field).

Action names (ACTION_NAMES): the refimpl's KIP-642 steps are named as the spec names them.
"""

from __future__ import annotations

from typing import Any, Mapping

from kraftcore.values import Fn, canonical, to_itf
from refimpl.kraft import spec_mapping as km
from refimpl.kraft.log import Record, VoterAssignment
from refimpl.kraft.messages import (
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, Errors, FetchResponse,
)
from refimpl.kraft.state import NodeState, Role
from refimpl.sim.bounds import Bounds, BoundsError
from refimpl.sim.protocol import Envelope, World, dumps

__all__ = ["SPEC_MODULE", "VARIABLES", "ACTION_NAMES", "EXTRA_MODEL_VALUES", "History",
           "project", "message_value", "params_json", "record_plain", "targets_from_cfg",
           "VOTER_ASSIGNMENT", "ADMIN", "NULL_REPLICAS", "request_target"]

SPEC_MODULE = "KRaftReassign"
VOTER_ASSIGNMENT = "VoterAssignment"   # a STRING: the value of a VoterAssignment record
ADMIN = "admin"                        # model value: the admin client (CONSTANT Admin)
NULL_REPLICAS = "NullReplicas"         # model value: a request's Replicas = null (CONSTANT
                                       # NullReplicas, KIP-642 draft "Cancellation")
EXTRA_MODEL_VALUES = (ADMIN, NULL_REPLICAS)

PER_NODE_VARIABLES = km.PER_NODE_VARIABLES + ("voterSet", "quorumState")
GLOBAL_VARIABLES = km.GLOBAL_VARIABLES + ("ghostLeaders",)
VARIABLES = km.VARIABLES + ("voterSet", "quorumState", "ghostLeaders")

ACTION_NAMES: dict[str, str] = {
    **km.ACTION_NAMES,
    "SendAlterPartitionReassignments": "SendAlterPartitionReassignments",
    "HandleAlterPartitionReassignmentsRequest": "ReceiveAlterPartitionReassignmentsRequest",
    "HandleAlterPartitionReassignmentsResponse": "ReceiveAlterPartitionReassignmentsResponse",
    "AddVoter": "AddVoter",
    "RemoveVoter": "RemoveVoter",
    "CompleteReassignment": "CompleteReassignment",
    "ResignAsLastRemovingVoter": "ResignAsLastRemovingVoter",
    "UpdateHighWatermark": "UpdateHighWatermark",
    "PromotionWindow": "PromotionWindow",  # always a stutter (the leader's promotion window)
}


def record_plain(r: Record) -> dict:
    c = r.control
    if isinstance(c, VoterAssignment):
        return {"epoch": r.epoch, "value": VOTER_ASSIGNMENT,
                "currentVoters": frozenset(c.current_voters),
                "targetVoters": frozenset(c.target_voters or ())}
    return km._record_plain(r)


def node_values(s: NodeState, nodes: tuple[str, ...], bootstrap: tuple[str, ...]) -> dict:
    d = km.node_values(s, nodes)
    d["log"] = tuple(Fn(record_plain(r)) for r in s.log)
    d["voterSet"] = frozenset(s.voter_set if s.voter_set is not None else bootstrap)
    d["quorumState"] = Fn({"offset": s.qs_offset,
                           "voters": frozenset(s.qs_voters if s.qs_voters is not None
                                               else bootstrap)})
    return d


def request_target(target: tuple[str, ...] | None):
    """The targetVoters field of an admin request / response: the sorted replicas, or the
    model value NullReplicas for a cancellation (Replicas = null)."""
    return NULL_REPLICAS if target is None else sorted(target)


def message_fields(env: Envelope) -> dict:
    m = env.payload
    if isinstance(m, AlterPartitionReassignmentsRequest):
        return {"type": "AlterPartitionReassignmentsRequest", "src": env.src, "dest": env.dst,
                "targetVoters": request_target(m.target_voters)}
    if isinstance(m, AlterPartitionReassignmentsResponse):
        return {"type": "AlterPartitionReassignmentsResponse", "src": env.src, "dest": env.dst,
                "targetVoters": request_target(m.target_voters), "error": m.error.value,
                "leaderId": km._id(m.leader_id)}
    d = km.message_fields(env)
    if isinstance(m, FetchResponse):
        d["records"] = [record_plain(r) for r in m.records]
        if m.error is Errors.NOT_FOLLOWER:   # a NONE response in every other field
            d.update(fetchOffset=m.fetch_offset, lastFetchedEpoch=m.last_fetched_epoch)
    return d


def _canonical_message(d: dict) -> Fn:
    """Sets of ids as sets (JSON lists are sequences otherwise)."""
    out = dict(d)
    if isinstance(out.get("targetVoters"), list):
        out["targetVoters"] = frozenset(out["targetVoters"])
    if "records" in out:
        out["records"] = [Fn({k: (frozenset(v) if k in ("currentVoters", "targetVoters") else v)
                              for k, v in r.items()}) for r in out["records"]]
    return canonical(out)


def message_value(env: Envelope) -> Fn:
    return _canonical_message(message_fields(env))


class History(km.History):
    """KRaft's history variables plus ghostLeaders: epoch -> every replica that ever led it,
    over the epochs that had a leader (spec/KRaftReassign.tla RecordLeaders).  max_epoch is
    accepted for the adapters' uniform signature; the ghost does not depend on it."""

    def __init__(self, cluster_of, max_epoch: int | None = None):
        super().__init__(cluster_of)
        self.max_epoch = max_epoch
        self.leaders: dict[int, frozenset] = {}

    def after_step(self, world: World, node: str | None, action: str) -> None:
        super().after_step(world, node, action)
        if node is None:
            return
        s: NodeState = world.states[node]
        if s.role is Role.LEADER and node not in self.leaders.get(s.epoch, frozenset()):
            self.leaders[s.epoch] = self.leaders.get(s.epoch, frozenset()) | {node}
            self.version += 1

    def values(self) -> dict:
        v = super().values()
        v["ghostCommitted"] = tuple(Fn({"entry": Fn(record_plain(r)), "epoch": e})
                                    for r, e in self.ghost_committed)
        v["ghostLeaders"] = Fn(dict(self.leaders))
        return v


def project(world: World, nodes: tuple[str, ...], bootstrap: tuple[str, ...]) -> dict:
    per = {n: node_values(world.states[n], nodes, bootstrap) for n in nodes}
    out = {v: Fn({n: per[n][v] for n in nodes}) for v in PER_NODE_VARIABLES}
    counts: dict = {}
    for env, copies in world.in_flight.values():
        k = message_value(env)
        counts[k] = counts.get(k, 0) + copies
    out["msgs"] = Fn(counts) if counts else ()
    out.update(world.history["kraft"].values())
    return out


def params_json(params: Mapping[str, Any], env: Envelope | None = None) -> str:
    d = {k: to_itf(canonical(v)) for k, v in params.items()}
    if env is not None:
        d["msg"] = to_itf(message_value(env))
    return dumps(d)


def targets_from_cfg(b: Bounds, kb) -> tuple | None:
    """The admin requests' target sets of a bounded run: the config's `Targets` (a set of
    sets of replicas, and the model value NullReplicas for a cancellation: None), else None
    (random subsets)."""
    r = b.first(("TargetSets", "Targets"), "set")
    if r is None:
        return None
    name, v = r
    nodes = set(kb.voters) | set(kb.observers)
    out = []
    cancel = False
    for t in v:
        if t == NULL_REPLICAS:
            cancel = True
            continue
        if not isinstance(t, frozenset) or not t or not set(t) <= nodes:
            raise BoundsError(f"{b.where(name)}: {name} must be a set of non-empty sets of "
                              f"replicas and {NULL_REPLICAS}")
        out.append(tuple(sorted(t)))
    return tuple(sorted(out)) + ((None,) if cancel else ())
