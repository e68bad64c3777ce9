"""The refimpl's reassignment traces against spec/KRaftReassign.tla (full-graph mode, graph
config reassign-graph-grow: 12,918 states; and reassign-graph-cancel, 3,766): correct traces simulated inside the config's bounds
are valid step by step, and a trace whose voter set is corrupted leaves the graph at that step."""

from __future__ import annotations

import json

import pytest

from kraftcore.paths import REPO_ROOT
from refimpl.sim.corpus import simulate_corpus
from trace_checker.corpus import validate_corpus

pytestmark = [pytest.mark.tlc]
GRAPH = "reassign-graph-grow"
BUG, BUG_SEED = "reassign-two-changes-in-flight", 0   # rule (b), planted in the refimpl
CFG = REPO_ROOT / "tlc_configs" / f"{GRAPH}.cfg"


def _corpus(out, seeds):
    m = simulate_corpus(protocol="reassign", seeds=seeds, faults="lossy", steps=250, out=out,
                        bounds=str(CFG))
    assert all(not t.get("invariant_violations") for t in m["traces"])
    return sorted(out.glob("*.jsonl"))


def test_correct_bounded_traces_validate_in_the_full_graph(tlc_toolchain, tmp_path):
    _corpus(tmp_path / "t", range(4))
    s = validate_corpus([tmp_path / "t"], graph=GRAPH, out=tmp_path / "out", max_out_of_scope=0)
    assert s["counts"] == {"valid": 4, "invalid": 0, "out_of_scope": 0, "malformed": 0}
    assert s["steps_judged"] == s["steps"] > 100
    assert s["graph"]["states"] == 12918


def test_a_wrong_voter_set_leaves_the_spec_graph_at_its_step(tlc_toolchain, tmp_path):
    """Graph mode locates the corrupted step (no state of the spec matches it); the verdict
    there would be the neighbourhood re-check's, switched off here (the neighbourhood mode is
    tested below)."""
    p = _corpus(tmp_path / "t", range(1))[0]
    lines = p.read_text().splitlines()
    k = next(i for i, x in enumerate(lines)
             if json.loads(x).get("action") == "AddVoter")
    step = json.loads(lines[k])
    step["state"]["voterSet"]["n3"] = {"#set": ["n1", "n3"]}   # n3 never appended that
    lines[k] = json.dumps(step, sort_keys=True, separators=(",", ":"))
    p.write_text("\n".join(lines) + "\n")
    s = validate_corpus([p], graph=GRAPH, out=tmp_path / "out", max_out_of_scope=0,
                        recheck=False)
    r = s["results"][0]
    assert r["verdict"] == "out_of_scope" and r["left_graph_at_step"] == step["step"]


def test_refimpl_traces_and_a_planted_bug_in_neighbourhood_mode(tlc_toolchain, tmp_path):
    """Neighbourhood mode (`kraftcheck validate --lazy --config reassign-graph-grow`): correct
    refimpl traces are valid step by step; the trace of the planted bug "two changes in flight"
    (rule (b)) is invalid at the step that appends a VoterAssignment before the previous one is
    committed.  The run raises the Max* bounds (MaxEpoch too), which spec/KRaftReassign.tla's
    ghostLeaders survives: its domain is the epochs that had a leader, not 1..MaxEpoch."""
    _corpus(tmp_path / "ok", range(3))
    simulate_corpus(protocol="reassign", seeds=[BUG_SEED], faults="lossy", steps=250,
                    out=tmp_path / "bug", bounds=str(CFG), bug=BUG)
    s = validate_corpus([tmp_path / "ok", tmp_path / "bug"], config=GRAPH,
                        out=tmp_path / "out", max_out_of_scope=0)
    assert s["counts"] == {"valid": 3, "invalid": 1, "out_of_scope": 0, "malformed": 0}
    bad = next(r for r in s["results"] if r["verdict"] == "invalid")
    assert bad["bug"] == BUG and bad["bounds_raised"]
    assert {r["bug"] for r in s["results"] if r["verdict"] == "valid"} == {None}
    lines = [json.loads(x) for x in next((tmp_path / "bug").glob("*.jsonl")).read_text().splitlines()]
    steps = {x["step"]: x for x in lines if "step" in x}
    assert steps[bad["failed_step"]]["action"] in {"AddVoter", "RemoveVoter", "CompleteReassignment"}
    assert s["neighbourhood"] and s["neighbourhood"][0]["raised_constants"]["MaxEpoch"] > 1


CANCEL_GRAPH = "reassign-graph-cancel"
CANCEL_CFG = REPO_ROOT / "tlc_configs" / f"{CANCEL_GRAPH}.cfg"
CANCEL_GRAPH_STATES = 3766


def test_cancellation_traces_validate_in_the_full_graph(tlc_toolchain, tmp_path):
    """KIP-642 draft "Cancellation": bounded refimpl runs whose admin sends {n1, n2} or
    Replicas = null (the config's TargetSets) are valid step by step in the graph of
    reassign-graph-cancel, the cancellation record and the NullReplicas response included."""
    m = simulate_corpus(protocol="reassign", seeds=range(6), faults="lossy", steps=250,
                        out=tmp_path / "t", bounds=str(CANCEL_CFG))
    assert all(not t.get("invariant_violations") for t in m["traces"])
    traces = [[json.loads(x) for x in p.read_text().splitlines()]
              for p in sorted((tmp_path / "t").glob("*.jsonl"))]
    lines = [x for t in traces for x in t]
    sent = [x for x in lines if x.get("action") == "SendAlterPartitionReassignments"]
    assert any(x["params"]["target"] == "NullReplicas" for x in sent)

    def cancels(prev, x):   # the leader n1 appends VoterAssignment(current, null) to a request
        old, new = prev["state"]["log"]["n1"], x["state"]["log"]["n1"]
        return (x.get("action") == "ReceiveAlterPartitionReassignmentsRequest"
                and len(new) == len(old) + 1 and new[-1]["targetVoters"] == {"#set": []}
                and old[-1].get("targetVoters") not in (None, {"#set": []}))
    assert any(cancels(a, b) for t in traces
               for a, b in zip([x for x in t if "state" in x], [x for x in t if "state" in x][1:]))
    s = validate_corpus([tmp_path / "t"], graph=CANCEL_GRAPH, out=tmp_path / "out",
                        max_out_of_scope=0)
    assert s["counts"] == {"valid": 6, "invalid": 0, "out_of_scope": 0, "malformed": 0}
    assert s["steps_judged"] == s["steps"]
    assert s["graph"]["states"] == CANCEL_GRAPH_STATES
