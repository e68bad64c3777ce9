"""Liveness on traces (trace_checker/liveness.py): timer obligations against virtual time,
on hand-made KRaft traces and on the reference implementation with the planted bug
`follower-fetch-timer-not-armed` (every step a spec transition; only liveness catches it)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from refimpl.sim.runner import RunSpec, run_seeds
from trace_checker.liveness import (LivenessJudge, NotJudged, TimerBounds, check_liveness,
                                    judge_liveness)
from trace_checker.traces import Step, Trace, read_trace

VOTERS = ("n1", "n2", "n3")
B = TimerBounds()


def _state(**over) -> dict:
    s = {"role": {v: "Follower" for v in VOTERS}, "currentEpoch": {v: 1 for v in VOTERS},
         "leaderId": {v: "n1" for v in VOTERS},
         "followerEndOffset": {v: {w: -1 for w in VOTERS} for v in VOTERS}}
    s["role"]["n1"] = "Leader"
    s["leaderId"]["n1"] = "n1"
    for var, changes in over.items():
        s[var] = {**s[var], **changes}
    return s


def _trace(steps: list[tuple[int, str, str | None, dict]], constants: dict | None = None) -> Trace:
    """steps: (time_ms, action, acting node, state)."""
    out = [Step(line=k + 2, index=k, action=a, params={"node": n} if n else {},
                state=copy.deepcopy(s), time_ms=t) for k, (t, a, n, s) in enumerate(steps)]
    header = {"bounds": {"file": "x.cfg", "constants": constants}} if constants else {}
    return Trace(path="t.jsonl", trace_id="t", protocol="kraft", spec_module="KRaft",
                 variables=tuple(out[0].state), model_values=VOTERS + ("Nil",), bounds=None,
                 bug=None, seed=0, steps=out, header=header)


LEADER_GONE = _state(role={"n1": "Resigned"}, leaderId={"n1": "Nil"})


def test_follower_of_a_gone_leader_that_keeps_acting_is_flagged():
    late = 100 + B.fetch + 1
    t = _trace([(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
                (200, "SendFetchRequest", "n2", LEADER_GONE),
                (late, "SendFetchRequest", "n2", LEADER_GONE)])
    found = check_liveness(t)
    assert [(v.node, v.timer, v.action, v.enabled_at_step, v.seen_at_step) for v in found] == [
        ("n2", "fetch-timeout", "Timeout", 1, 3)]
    assert "n2's fetch-timeout never fired" in found[0].summary()


def test_a_timely_timeout_is_not_flagged():
    n2_candidate = copy.deepcopy(LEADER_GONE)
    n2_candidate["role"]["n2"], n2_candidate["currentEpoch"]["n2"] = "Candidate", 2
    n2_candidate["leaderId"]["n2"] = "Nil"
    t = _trace([(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
                (100 + B.fetch - 1, "Timeout", "n2", n2_candidate),
                (100 + B.fetch + 50, "SendVoteRequest", "n2", n2_candidate)])
    assert [v.node for v in check_liveness(t)] == []


def test_a_node_seen_only_at_its_restart_is_excused():
    # n2 may have been down all along: its Restart re-arms its timers
    t = _trace([(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
                (100 + 10 * B.fetch, "Restart", "n2", LEADER_GONE),
                (100 + 10 * B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)])
    assert check_liveness(t) == []


def test_no_obligation_at_max_epoch_or_outside_timeout_voters():
    steps = [(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
             (100 + B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)]
    t = _trace(steps)
    assert check_liveness(t, B, LivenessJudge("c", max_epoch=1)) == []
    assert check_liveness(t, B, LivenessJudge("c", timeout_voters=frozenset({"n3"}))) == []
    assert [v.node for v in check_liveness(t, B, LivenessJudge("c", max_epoch=2))] == ["n2"]


def test_the_trace_header_cannot_weaken_the_judge():
    """MaxEpoch / TimeoutVoters come from the judge config, never from the header's bounds."""
    steps = [(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
             (100 + B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)]
    for consts in ({"MaxEpoch": 0}, {"TimeoutVoters": []}, {"TimeoutVoters": {"#set": []}}):
        t = _trace(steps, consts)
        assert [v.node for v in check_liveness(t, B, LivenessJudge("c"))] == ["n2"], consts
        t.spec_module = "ELR"                   # nor can its spec_module switch it off
        assert [v.node for v in check_liveness(t, B, LivenessJudge("c"))] == ["n2"]


def test_every_itf_spelling_of_a_function_is_the_same_state():
    steps = [(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
             (100 + B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)]
    t = _trace(steps)
    for s in t.steps:
        s.state["role"] = {"#map": [[k, v] for k, v in s.state["role"].items()]}
        s.state["followerEndOffset"] = {k: {"#map": [[w, o] for w, o in v.items()]}
                                        for k, v in s.state["followerEndOffset"].items()}
    assert [v.node for v in check_liveness(t)] == ["n2"]


def test_a_trace_it_cannot_judge_is_said_so_not_passed():
    steps = [(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
             (100 + B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)]
    t = _trace(steps)
    del t.steps[1].state["role"]                 # partial observation of a timer variable
    with pytest.raises(NotJudged, match="step 1 .* does not observe role"):
        check_liveness(t)
    r = judge_liveness(t, {"verdict": "valid"}, LivenessJudge("c"))
    assert r["verdict"] == "valid" and "does not observe role" in r["liveness_not_judged"]
    t = _trace(steps)
    t.steps[2].time_ms = None
    with pytest.raises(NotJudged, match="no virtual time"):
        check_liveness(t)


def test_leader_without_a_following_majority_must_give_up():
    alone = _state(role={"n2": "Unattached", "n3": "Unattached"},
                   leaderId={"n2": "Nil", "n3": "Nil"}, currentEpoch={"n2": 2, "n3": 2})
    t = _trace([(0, "Init", None, _state()), (10, "ReceiveVoteRequest", "n3", alone),
                (10 + B.progress + 1, "ReceiveFetchRequest", "n1", alone)])
    assert [(v.node, v.timer) for v in check_liveness(t)] == [
        ("n1", "leader-progress-timeout")]


def test_judge_liveness_turns_valid_into_invalid_only():
    t = _trace([(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
                (100 + B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)])
    r = judge_liveness(t, {"verdict": "valid"}, LivenessJudge("c"))
    assert r["verdict"] == "invalid" and r["failed_step"] == 2
    assert r["diagnosis"]["kind"] == "liveness" and r["liveness"][0]["node"] == "n2"
    kept = {"verdict": "invalid", "failed_step": 1}
    assert judge_liveness(t, dict(kept), LivenessJudge("c")) == kept
    # a judge with no timers this check knows (not a KRaft config): nothing to judge
    assert judge_liveness(t, {"verdict": "valid"}, None) == {"verdict": "valid"}


@pytest.fixture(scope="module")
def sims(tmp_path_factory) -> dict[str, list[Path]]:
    out = {}
    for bug in (None, "follower-fetch-timer-not-armed"):
        d = tmp_path_factory.mktemp(bug or "correct")
        run_seeds(RunSpec("kraft", list(range(0, 6)), "chaos", 1000, None, bug), d)
        out[bug or "correct"] = sorted(d.glob("*.jsonl"))
    return out


def test_planted_fetch_timer_bug_is_caught_and_the_correct_refimpl_is_not(sims):
    flagged = {p.name for p in sims["follower-fetch-timer-not-armed"]
               if check_liveness(read_trace(p))}
    # under chaos, within seeds 0-5 followers outlive their leader by more than the bound
    # (which seeds depends on the refimpl's schedule; that some are flagged does not)
    assert flagged, "follower-fetch-timer-not-armed not flagged in seeds 0-5"
    assert [p.name for p in sims["correct"] if check_liveness(read_trace(p))] == []


def test_max_epoch_bounds_only_a_trace_that_stays_within_it():
    """A bounded run never times out in MaxEpoch; a trace beyond MaxEpoch was not bounded by
    it, so every epoch has its timers (the judge's bound, raised or not, never opens a duty
    the bounded spec forbids)."""
    steps = [(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
             (100 + B.fetch + 1, "SendFetchRequest", "n2", LEADER_GONE)]
    assert check_liveness(_trace(steps), B, LivenessJudge("c", max_epoch=1)) == []
    # n3 is beyond the bound all along (a replica that never acts here): not a bounded run
    beyond = [(t, a, n, _with(s, currentEpoch={"n3": 5})) for t, a, n, s in steps]
    assert [v.node for v in check_liveness(_trace(beyond), B, LivenessJudge("c", max_epoch=1))
            ] == ["n2"]


def _with(s: dict, **over) -> dict:
    s = copy.deepcopy(s)
    for var, changes in over.items():
        s[var] = {**s[var], **changes}
    return s


def test_a_node_seen_changing_its_own_state_is_acting_whatever_params_say():
    moved = copy.deepcopy(LEADER_GONE)
    moved["currentEpoch"]["n2"] = 1               # unchanged epoch; n2 records something:
    moved["followerEndOffset"]["n2"] = {"n1": 0, "n2": -1, "n3": -1}
    t = _trace([(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
                (100 + B.fetch + 1, "ReceiveFetchResponse", "n3", moved)])   # wrong node
    # n2 changed its own state: seen acting though the step names n3 (also past its deadline)
    assert [(v.node, v.seen_at_step) for v in check_liveness(t)] == [("n2", 2), ("n3", 2)]


def test_a_step_that_hides_its_acting_node_leaves_liveness_unjudged():
    steps = [(0, "Init", None, _state()), (100, "Restart", "n1", LEADER_GONE),
             (100 + B.fetch + 1, "SendFetchRequest", None, LEADER_GONE)]
    with pytest.raises(NotJudged, match=r"step 2 \(SendFetchRequest.*params.node"):
        check_liveness(_trace(steps))
    steps[2] = (100 + B.fetch + 1, "DropMessage", None, LEADER_GONE)    # the network's step
    assert check_liveness(_trace(steps)) == []


def test_reassignment_timers_follow_each_replicas_own_voter_set():
    """KRaftReassign: voterSet[i] is what i acts on; a replica outside its own voter set (an
    observer by its own log) has no election timer, one inside has."""
    def with_voters(s, vs):
        s = copy.deepcopy(s)
        s["voterSet"] = {k: {"#set": sorted(v)} for k, v in vs.items()}
        return s
    vs = {"n1": {"n1", "n2"}, "n2": {"n1", "n2"}, "n3": {"n1", "n2"}}
    steps = [(0, "Init", None, with_voters(_state(), vs)),
             (100, "Restart", "n1", with_voters(LEADER_GONE, vs)),
             (100 + B.fetch + 1, "SendFetchRequest", "n2", with_voters(LEADER_GONE, vs)),
             (100 + B.fetch + 2, "SendFetchRequest", "n3", with_voters(LEADER_GONE, vs))]
    j = LivenessJudge("r", voter_sets=True)
    assert [v.node for v in check_liveness(_trace(steps), B, j)] == ["n2"]   # n3: observer
