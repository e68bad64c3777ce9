"""The refimpl's reassignment traces against spec/KRaftReassign.tla (full-graph mode, graph
config reassign-graph-grow: 8168 states): correct traces simulated inside the config's bounds
are valid step by step, and a trace whose voter set is corrupted leaves the graph at that step."""

from __future__ import annotations

import json

import pytest

from kraftcore.paths import REPO_ROOT
from refimpl.sim.corpus import simulate_corpus
from trace_checker.corpus import validate_corpus

pytestmark = [pytest.mark.tlc, pytest.mark.xdist_group("tlc")]
GRAPH = "reassign-graph-grow"
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
    assert s["graph"]["states"] == 8168


def test_a_wrong_voter_set_leaves_the_spec_graph_at_its_step(tlc_toolchain, tmp_path):
    """Graph mode locates the corrupted step (no state of the spec matches it); the verdict
    there is the neighbourhood re-check's, switched off here: it needs ghostLeaders's domain
    to survive raised bounds (contract-12, 20:51)."""
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
    refimpl traces are valid step by step; a trace of the planted bug "two changes in flight"
    (rule (b)) is invalid at the step that appends the second change.  The bug trace fails
    under the config's bounds and is judged again with the Max* bounds raised (MaxEpoch too),
    which spec/KRaftReassign.tla's ghostLeaders survives: its domain is the epochs led."""
    _corpus(tmp_path / "ok", range(3))
    bad = simulate_corpus(protocol="reassign", seeds=[BUG_SEED], faults="lossy", steps=250,
                          out=tmp_path / "bug", bounds=str(CFG), bug=BUG)
    assert bad["traces"]
    s = validate_corpus([tmp_path / "ok", tmp_path / "bug"], config=GRAPH, out=tmp_path / "out",
                        max_out_of_scope=0)
    by_name = {r["trace"] if "trace" in r else r["path"]: r for r in s["results"]}
    verdicts = sorted((BUG in name, r["verdict"]) for name, r in by_name.items())
    assert verdicts == [(False, "valid")] * 3 + [(True, "invalid")], verdicts
    bug = next(r for name, r in by_name.items() if BUG in name)
    lines = [json.loads(x) for x in (tmp_path / "bug").glob("*.jsonl").__next__().open()]
    step = next(x for x in lines if x.get("step") == bug["failed_step"])
    assert step["action"] == "AddVoter"
    assert any(st.get("bounds") == "raised" for st in s["neighbourhood"])
