"""explain.py's Kafka finding rules on hand-made edges (no TLC, no Kafka): each rule names its
class on the case it describes and stays silent on a near miss (another error, epoch or
Kafka step), so a rule can neither lose its divergences nor swallow another class's."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kraftcore.values import make_fn
from trace_checker.replay.driver import Applied
from trace_checker.replay.explain import (explainer,
                                          kafka_fenced_begin_quorum_epoch_response_not_awaited,
                                          kafka_fenced_vote_response_ignored,
                                          kafka_rejected_candidate_backs_off)

NODES = ("n1", "n2")


@dataclass
class _Graph:
    """The part of StateGraph the rules read: action labels, decoded states, successors."""

    actions: list
    states: list
    succ: list = field(default_factory=list)

    def state(self, s: int) -> dict:
        return self.states[s]


def _state(msgs=(), **per_node) -> dict:
    """A KRaft state of n1, n2: per-node values given as {node: value}, the rest defaults."""
    base = {"currentEpoch": 2, "role": "Follower", "votedId": "Nil", "leaderId": "Nil",
            "votesGranted": frozenset(), "votesRejected": frozenset()}
    st = {v: make_fn({n: per_node.get(v, {}).get(n, x) for n in NODES})
          for v, x in base.items()}
    st["msgs"] = make_fn({m: 1 for m in msgs})
    return st


def _msg(**kw):
    return make_fn(kw)


def _case(action: str, src: dict, expected: dict, reached: dict, label: str):
    """(graph, edge, applied, diag) of one failed edge src -> expected whose Kafka step
    `label` reached `reached`."""
    g = _Graph([action], [src, expected], [[(0, 1)], []])
    diff = sorted(v for v in expected if expected[v] != reached[v])
    diag = {"differing_variables": diff,
            "diff": {v: {"paths": []} for v in diff}}
    return g, (0, 0, 1), Applied(False, '{"cmd": "deliver"}', reached, label), diag


def _vote_response(error: str, epoch: int = 2, granted: bool = False):
    return _msg(type="VoteResponse", src="n2", dest="n1", epoch=epoch, voteGranted=granted,
                error=error, leaderId="Nil")


def _candidate(msgs=(), rejected=frozenset()) -> dict:
    return _state(msgs, role={"n1": "Candidate"}, votedId={"n1": "n1"},
                  votesGranted={"n1": frozenset({"n1"})}, votesRejected={"n1": rejected})


def _stepped_down() -> dict:
    """The spec's 2-voter candidate rejected: Voted (for itself) in the same epoch."""
    return _state(role={"n1": "Voted"}, votedId={"n1": "n1"})


# ---- F5 KafkaRejectedCandidateBacksOff --------------------------------------------------

def test_f5_fires_on_a_rejected_candidate_that_stays_candidate():
    m = _vote_response("NONE")
    case = _case("ReceiveVoteResponse", _candidate([m]), _stepped_down(),
                 _candidate(rejected=frozenset({"n2"})), "ReceiveVoteResponse")
    why = kafka_rejected_candidate_backs_off(*case)
    assert why is not None and why.startswith("finding F5 KafkaRejectedCandidateBacksOff:")
    assert "candidate n1 rejected by n2" in why
    assert explainer("kraft", "kafka")(*case) == why


@pytest.mark.parametrize("near_miss", ["rejection not recorded", "fenced error",
                                       "epoch also differs"])
def test_f5_silent_on_a_near_miss(near_miss):
    if near_miss == "rejection not recorded":
        # Kafka stayed Candidate but did not count n2's rejection: not F5's back-off
        case = _case("ReceiveVoteResponse", _candidate([_vote_response("NONE")]),
                     _stepped_down(), _candidate(), "ReceiveVoteResponse")
    elif near_miss == "fenced error":
        # a FENCED_LEADER_EPOCH answer is H4's, not a rejection
        case = _case("ReceiveVoteResponse", _candidate([_vote_response("FENCED_LEADER_EPOCH")]),
                     _stepped_down(), _candidate(rejected=frozenset({"n2"})),
                     "ReceiveVoteResponse")
    else:
        reached = _candidate(rejected=frozenset({"n2"}))
        reached["currentEpoch"] = make_fn({"n1": 3, "n2": 2})
        case = _case("ReceiveVoteResponse", _candidate([_vote_response("NONE")]),
                     _stepped_down(), reached, "ReceiveVoteResponse")
    assert kafka_rejected_candidate_backs_off(*case) is None


# ---- H4 fenced-vote-response-ignored ----------------------------------------------------

@pytest.mark.parametrize("label", ["DropMessage", "ReceiveVoteResponse"])
def test_h4_fires_on_a_fenced_vote_response_of_the_candidates_epoch(label):
    m = _vote_response("FENCED_LEADER_EPOCH")
    case = _case("ReceiveVoteResponse", _candidate([m]), _stepped_down(), _candidate(), label)
    why = kafka_fenced_vote_response_ignored(*case)
    assert why is not None and why.startswith("finding H4 fenced-vote-response-ignored:")
    assert ("ignores it unread" in why) == (label == "DropMessage")
    assert kafka_rejected_candidate_backs_off(*case) is None
    assert explainer("kraft", "kafka")(*case) == why


@pytest.mark.parametrize("near_miss", ["older epoch", "error NONE", "rejection counted"])
def test_h4_silent_on_a_near_miss(near_miss):
    m = _vote_response("NONE" if near_miss == "error NONE" else "FENCED_LEADER_EPOCH",
                       epoch=1 if near_miss == "older epoch" else 2)
    reached = _candidate(rejected=frozenset({"n2"}) if near_miss == "rejection counted"
                         else frozenset())
    case = _case("ReceiveVoteResponse", _candidate([m]), _stepped_down(), reached,
                 "ReceiveVoteResponse")
    assert kafka_fenced_vote_response_ignored(*case) is None


# ---- H5 fenced-begin-quorum-epoch-response-not-awaited ----------------------------------

def _bqe_response(error: str = "FENCED_LEADER_EPOCH", epoch: int = 2):
    return _msg(type="BeginQuorumEpochResponse", src="n2", dest="n1", epoch=epoch,
                leaderId="Nil", error=error)


def _leader(msgs=(), role: str = "Resigned") -> dict:
    """n1 the leader of epoch 1 (by default resigned since: LeaderProgressTimeout / Resign),
    n2 already in epoch 2."""
    return _state(msgs, currentEpoch={"n1": 1, "n2": 2}, role={"n1": role, "n2": "Candidate"},
                  leaderId={"n1": "n1"})


def _leader_stepped_down() -> dict:
    """KRaft.tla's HandleBeginQuorumEpochResponse: n1 Unattached in the response's epoch."""
    return _state(currentEpoch={"n1": 2, "n2": 2}, role={"n1": "Unattached",
                                                         "n2": "Candidate"})


@pytest.mark.parametrize("role,why", [
    ("Resigned", "it resigned since it sent the request"),      # the judge graph's 28 edges
    ("Leader", "the request was re-sent since"),                # the harness's re-send case
])
def test_h5_fires_on_a_fenced_begin_quorum_epoch_response_kafka_drops(role, why):
    case = _case("ReceiveBeginQuorumEpochResponse", _leader([_bqe_response()], role),
                 _leader_stepped_down(), _leader(role=role), "DropMessage")
    found = kafka_fenced_begin_quorum_epoch_response_not_awaited(*case)
    assert found is not None and found.startswith(
        "finding H5 fenced-begin-quorum-epoch-response-not-awaited:")
    assert f"{role} n1 (epoch 1)" in found and "of epoch 2" in found and why in found
    assert kafka_fenced_vote_response_ignored(*case) is None
    assert explainer("kraft", "kafka")(*case) == found


@pytest.mark.parametrize("near_miss", ["read by Kafka", "same epoch", "error NONE",
                                       "Kafka stepped down elsewhere"])
def test_h5_silent_on_a_near_miss(near_miss):
    m = _bqe_response("NONE" if near_miss == "error NONE" else "FENCED_LEADER_EPOCH",
                      epoch=1 if near_miss == "same epoch" else 2)
    reached = _leader()
    if near_miss == "Kafka stepped down elsewhere":
        reached["role"] = make_fn({"n1": "Candidate", "n2": "Candidate"})
    label = "ReceiveBeginQuorumEpochResponse" if near_miss == "read by Kafka" else "DropMessage"
    case = _case("ReceiveBeginQuorumEpochResponse", _leader([m]), _leader_stepped_down(),
                 reached, label)
    assert kafka_fenced_begin_quorum_epoch_response_not_awaited(*case) is None
