"""The Spark stats job on the hand-made fixture corpus (tests/fixtures/spark/, see
make_fixtures.py for what each trace does): exact statistics, bad rows, coverage, metrics,
distributed validation against the reference lookup, against the real single-process checker
(trace_checker, full-graph mode, run here without TLC) and against `kraftcheck validate`-style
verdicts, the report.

Convention for comparing with the single-process checker without TLC: in full-graph mode the
checker answers `recheck` at step k for a trace whose step k is not a transition of the bounded
graph, and `kraftcheck validate` then re-checks it in TLC with raised bounds.  Spark cannot run
TLC, so `recheck` at step k is compared with the distributed verdict failing at step k:
`invalid` at k (claiming step k's action) when the checker finds step k's state in the graph,
`out_of_scope` (left the graph at k) when it does not; both carry left_graph_at_step = k."""

from __future__ import annotations

import base64
import itertools
import json
import re
from pathlib import Path

import pytest

from kraftcore.values import fingerprint, from_itf, make_fn
from spark_trace_analysis.graph import parse_label
from spark_trace_analysis.ingest import InputError
from spark_trace_analysis.validate import lookup_verdict

FIX = Path(__file__).parent / "fixtures" / "spark"
CORPUS = FIX / "corpus"
GRAPH = FIX / "graph.dot"
GRAPH_BOUNDS = "tests/fixtures/spark/graph.cfg"
VERDICTS = FIX / "verdicts.jsonl"
TRACE_IDS = {"t-valid", "t-trunc", "t-bug", "t-nofooter", "t-elr", "t-bad", "t-unknown", "t-wide"}

pytestmark = pytest.mark.xdist_group("spark")


@pytest.fixture(scope="module")
def run(fixture_stats, spark_local):
    """(summary, out, spark): the stats job on CORPUS with GRAPH, GRAPH_BOUNDS and VERDICTS,
    run once per test run (conftest.fixture_stats, shared with test_spark_cluster.py), in the
    shared local[2] session."""
    import copy
    summary, out = fixture_stats
    return copy.deepcopy(summary), out, spark_local()


def table(run, name, order=None):
    _, out, spark = run
    df = spark.read.parquet(str(out / name))
    rows = [r.asDict(recursive=True) for r in df.collect()]
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in order)) if order else rows


def test_summary_counts(run):
    s, out, _ = run
    assert (s["traces"], s["steps"], s["bad_rows"], s["lines"]) == (8, 49, 4, 66)
    assert s["verdicts"] == {"valid": 3, "invalid": 2, "out_of_scope": 1, "malformed": 2}
    assert s["verdict_source"] == "the trace checker (--verdicts)"
    assert (s["verdict_bad_rows"], s["verdicts_unmatched"]) == (1, 0)
    assert json.loads((out / "summary.json").read_text())["traces"] == 8


def test_bad_rows_are_reported_with_file_line_and_reason(run):
    rows = table(run, "bad_rows")
    got = sorted((Path(r["file"]).name, r["line"], r["trace_id"], r["reason"], r["in_steps"])
                 for r in rows)
    assert got == [
        ("bad.jsonl", 3, None, "not JSON", False),
        ("bad.jsonl", 4, "t-bad", "unknown action TeleportLeader", True),
        ("bad.jsonl", 5, "t-bad", "step: missing field time_ms", False),
        ("t-unknown.jsonl", 4, "t-unknown", "unknown action ForgeVote", True),
    ]
    bad_v = table(run, "bad_rows_verdicts")
    assert [(r["line"], r["reason"], r["text"]) for r in bad_v] == [(9, "not JSON", "not a verdict")]


def test_traces_table_marks_incomplete_traces(run):
    t = {r["trace_id"]: r for r in table(run, "traces")}
    assert {k: v["complete"] for k, v in t.items()} == {
        "t-valid": True, "t-trunc": True, "t-bug": True, "t-elr": True, "t-unknown": True,
        "t-wide": True, "t-nofooter": False, "t-bad": False}
    assert t["t-nofooter"]["problems"] == ["no footer"]
    # t-bad keeps steps 0 and 2 (TeleportLeader, an unknown action, stays a step); line 3
    # (step 1) is not JSON and step 3 lacks time_ms: dropped
    assert t["t-bad"]["problems"] == ["steps are not 0..n", "footer step count differs",
                                      "has bad rows"]
    assert (t["t-bad"]["bad_rows"], t["t-bad"]["unknown_actions"]) == (2, 1)
    # an unknown action alone is a bad row but leaves the trace complete
    assert (t["t-unknown"]["problems"], t["t-unknown"]["bad_rows"],
            t["t-unknown"]["unknown_actions"]) == ([], 1, 1)
    assert t["t-bug"]["violated"] == ["HighWatermarkWithinLog"]
    assert (t["t-valid"]["n_steps"], t["t-valid"]["duration_ms"]) == (13, 750)


def test_unknown_action_step_is_kept_flagged(run):
    steps = {(r["trace_id"], r["step"]): r for r in table(run, "steps")}
    assert steps[("t-unknown", 2)]["action"] == "ForgeVote"
    assert steps[("t-unknown", 2)]["unknown_action"] is True
    assert steps[("t-bad", 2)]["unknown_action"] is True
    assert sum(r["unknown_action"] for r in steps.values()) == 2
    assert ("t-bad", 1) not in steps and ("t-bad", 3) not in steps


def test_conformance_by_protocol_profile_and_bug(run):
    rows = table(run, "conformance", ["protocol", "fault_profile", "bug"])
    key = ("protocol", "fault_profile", "bug", "traces", "traces_valid", "traces_invalid",
           "traces_out_of_scope", "traces_malformed", "steps_valid", "steps_invalid",
           "steps_unchecked", "steps_out_of_scope", "steps_malformed")
    assert [tuple(r[k] for k in key) for r in rows] == [
        ("elr", "none", "none", 1, 0, 0, 1, 0, 0, 0, 0, 2, 0),
        ("kraft", "chaos", "follower-hwm-uncapped", 1, 0, 1, 0, 0, 6, 1, 2, 0, 0),
        ("kraft", "crashes", "none", 1, 1, 0, 0, 0, 13, 0, 0, 0, 0),
        ("kraft", "lossy", "none", 1, 0, 0, 0, 1, 0, 0, 0, 0, 2),
        ("kraft", "none", "none", 2, 1, 0, 0, 1, 13, 0, 0, 0, 3),
        # t-unknown invalid at 2 of 4 steps; t-wide valid per the checker's TLC re-check
        ("kraft", "partitions", "none", 2, 1, 1, 0, 0, 5, 1, 1, 0, 0),
    ]


def test_first_failing_step_and_actions(run):
    ff = table(run, "first_failure", ["fault_profile"])
    assert [(r["bug"], r["failing_step"], r["claimed_action"], r["traces"]) for r in ff] == [
        ("follower-hwm-uncapped", 6, "ReceiveFetchRequest", 1), ("none", 2, "ForgeVote", 1)]
    acts = {(r["protocol"], r["action"]): (r["steps"], r["traces"], r["failures"])
            for r in table(run, "actions")}
    assert acts[("kraft", "Init")] == (7, 7, 0)
    assert acts[("kraft", "Timeout")] == (9, 6, 0)  # t-bad's Timeout line is a bad row
    assert acts[("kraft", "ReceiveFetchRequest")] == (3, 2, 1)
    assert acts[("kraft", "Crash")] == (1, 1, 0)
    assert acts[("kraft", "TeleportLeader")] == (1, 1, 0)
    assert acts[("kraft", "ForgeVote")] == (1, 1, 1)
    assert acts[("elr", "UnfenceBroker")] == (1, 1, 0)
    assert sum(v[0] for v in acts.values()) == 49


def test_coverage_of_the_state_graph(run):
    s, _, _ = run
    assert s["coverage"] == {"states": 22, "states_visited": 19, "state_share": 19 / 22,
                             "edges": 22, "edges_visited": 18, "edge_share": 18 / 22,
                             "actions": 9, "actions_visited": 8, "graph_bounds": GRAPH_BOUNDS,
                             "traces": 7, "traces_in_coverage": 6, "traces_other_bounds": 1,
                             "traces_bounds_unstated": 3, "traces_bounds_unchecked": 0}
    assert s["actions_never_exercised"] == ["Resign"]
    cs = table(run, "coverage_summary")[0]
    # t-bug's state 21 only: t-wide's state 22 is outside too, but t-wide is left out
    assert cs["trace_states_outside"] == 1
    unvisited = table(run, "unvisited_states")
    assert len(unvisited) == 3
    labels = sorted(r["label"] for r in unvisited)
    assert any('n1 :> "Voted" @@ n2 :> "Unattached"' in x for x in labels)
    per = {r["action"]: (r["edges"], r["edges_visited"], r["steps"], r["in_graph"])
           for r in table(run, "coverage_actions")}
    # Timeout steps: t-valid 2, t-trunc 2, t-bug 1, t-nofooter 1, t-unknown 1 (t-wide's 2 left out)
    assert per["Timeout"] == (4, 3, 7, True) and per["Resign"] == (1, 0, 0, True)
    assert per["Crash"] == (0, 0, 1, False) and per["ForgeVote"] == (0, 0, 1, False)


def test_coverage_records_bounds_and_leaves_out_other_bounds(run):
    s, _, _ = run
    assert s["coverage_bounds"] == [
        {"bounds": "tlc_configs/kraft-wide.cfg", "bounds_match": "different", "traces": 1},
        {"bounds": GRAPH_BOUNDS, "bounds_match": "same", "traces": 3},
        {"bounds": None, "bounds_match": "unstated", "traces": 3}]
    assert s["coverage_excluded_traces"] == ["t-wide"]
    per = {r["trace_id"]: (r["bounds"], r["bounds_match"], r["in_coverage"])
           for r in table(run, "coverage_traces")}
    assert per == {
        "t-valid": (GRAPH_BOUNDS, "same", True), "t-trunc": (GRAPH_BOUNDS, "same", True),
        "t-bug": (GRAPH_BOUNDS, "same", True), "t-nofooter": (None, "unstated", True),
        "t-bad": (None, "unstated", True), "t-unknown": (None, "unstated", True),
        "t-wide": ("tlc_configs/kraft-wide.cfg", "different", False)}


def test_trace_metrics(run):
    m = {r["trace_id"]: r for r in table(run, "metrics")}
    want = {  # elections, leaderless ms, truncations, truncated records, data loss, unclean
        "t-valid": (2, 470, 0, 0, 0, 0),
        "t-trunc": (2, 310, 1, 1, 0, 0),
        "t-bug": (1, 30, 1, 1, 1, 0),
        "t-nofooter": (0, 9, 0, 0, 0, 0),
        "t-elr": (0, 40, 0, 0, 0, 0),
        "t-bad": (0, 20, 0, 0, 0, 0),       # steps 0 and 2 (the unknown action is kept)
        "t-unknown": (1, 30, 0, 0, 0, 0),
        "t-wide": (0, 30, 0, 0, 0, 0),
    }
    got = {k: (r["elections"], r["leaderless_ms"], r["truncations"], r["truncated_records"],
               r["data_loss_events"], r["unclean_recoveries"]) for k, r in m.items()}
    assert got == want
    assert m["t-valid"]["hwm_lag_avg"] == pytest.approx(60 / 280)
    assert m["t-trunc"]["hwm_lag_avg"] == pytest.approx(200 / 290)
    assert m["t-bug"]["hwm_lag_avg"] == pytest.approx(20 / 50)
    assert m["t-unknown"]["hwm_lag_avg"] is None   # its one step with a leader lasts 0 ms
    assert m["t-valid"]["leaderless_share"] == pytest.approx(470 / 750)
    el = sorted((r["trace_id"], r["latency_ms"]) for r in table(run, "election_latency"))
    assert el == [("t-bug", 30), ("t-trunc", 70), ("t-trunc", 240), ("t-unknown", 30),
                  ("t-valid", 120), ("t-valid", 350)]
    cl = sorted((r["trace_id"], r["offset"], r["latency_ms"]) for r in table(run, "commit_latency"))
    assert cl == [("t-bug", 1, 20), ("t-valid", 1, 60)]
    byp = {(r["protocol"], r["fault_profile"]): r for r in table(run, "metrics_by_profile")}
    assert byp[("kraft", "crashes")]["max_truncation_depth"] == 1
    assert byp[("kraft", "none")]["elections_per_trace"] == 1.0
    assert byp[("kraft", "chaos")]["data_loss_events"] == 1
    assert (byp[("kraft", "partitions")]["traces"],
            byp[("kraft", "partitions")]["elections_per_trace"]) == (2, 0.5)



def test_latency_histograms_have_exact_bins_and_keep_every_latency(run):
    # election latencies 30, 30, 70, 120, 240, 350 -> 30 bins of 350 // 30 + 1 = 12 ms from 0;
    # commit latencies 20, 60 -> bins of 3 ms
    def bins(name):
        acc: dict[tuple, int] = {}
        for r in table(run, name):
            k = (r["bin"], r["lo"], r["hi"])
            acc[k] = acc.get(k, 0) + r["count"]
        return acc
    assert bins("election_latency_hist") == {(2, 24, 36): 2, (5, 60, 72): 1, (10, 120, 132): 1,
                                             (20, 240, 252): 1, (29, 348, 360): 1}
    assert bins("commit_latency_hist") == {(6, 18, 21): 1, (20, 60, 63): 1}
    for lat, hist in (("election_latency", "election_latency_hist"),
                      ("commit_latency", "commit_latency_hist")):
        per_group: dict[tuple, int] = {}
        for r in table(run, lat):
            g = (r["protocol"], r["fault_profile"])
            per_group[g] = per_group.get(g, 0) + 1
        got: dict[tuple, int] = {}
        for r in table(run, hist):
            g = (r["protocol"], r["fault_profile"])
            got[g] = got.get(g, 0) + r["count"]
        assert got == per_group

def _reference_verdicts() -> dict[str, tuple]:
    """The lookup rule run in plain Python over the fixture files and graph.dot."""
    states, initial, edges, ids = set(), set(), set(), {}
    node = re.compile(r'^(-?\d+) \[label="((?:[^"\\]|\\.)*)"(,style = filled)?\]')
    edge = re.compile(r'^(-?\d+) -> (-?\d+) \[label="([^"]*)"')
    lines = GRAPH.read_text().splitlines()
    for ln in lines:
        if m := node.match(ln):
            fp, _ = parse_label(m.group(2))
            ids[m.group(1)] = fp
            states.add(fp)
            if m.group(3):
                initial.add(fp)
    for ln in lines:
        if m := edge.match(ln):
            edges.add((ids[m.group(1)], m.group(3), ids[m.group(2)]))
    out = {}
    for f in ["t-valid", "t-trunc", "t-bug"]:
        objs = [json.loads(x) for x in (CORPUS / f"{f}.jsonl").read_text().splitlines()]
        steps = [(o["step"], o["action"],
                  fingerprint(make_fn((k, from_itf(v)) for k, v in o["state"].items())))
                 for o in objs if o["kind"] == "step"]
        out[f] = lookup_verdict(steps, states, initial, edges)
    return out


SPARK_VALIDATION = {  # trace -> verdict, failing_step, claimed_action, left_graph_at_step
    "t-valid": ("valid", None, None, None), "t-trunc": ("valid", None, None, None),
    "t-bug": ("invalid", 6, "ReceiveFetchRequest", 6),
    "t-unknown": ("invalid", 2, "ForgeVote", 2),
    "t-wide": ("out_of_scope", None, None, 2),
    "t-elr": ("out_of_scope", None, None, None),
    "t-nofooter": ("malformed", None, None, None), "t-bad": ("malformed", None, None, None),
}


def _validation(run) -> dict[str, tuple]:
    return {r["trace_id"]: (r["verdict"], r["failing_step"], r["claimed_action"],
                            r["left_graph_at_step"]) for r in table(run, "validation")}


def test_distributed_validation_agrees_with_the_reference_lookup(run):
    v = {r["trace_id"]: r for r in table(run, "validation")}
    ref = _reference_verdicts()
    assert ref == {"t-valid": ("valid", None, None), "t-trunc": ("valid", None, None),
                   "t-bug": ("invalid", 6, "ReceiveFetchRequest")}
    for tid, (verdict, k, action) in ref.items():
        assert (v[tid]["verdict"], v[tid]["failing_step"], v[tid]["claimed_action"]) == \
            (verdict, k, action)
    assert _validation(run) == SPARK_VALIDATION
    assert v["t-bug"]["detail"] == "no ReceiveFetchRequest edge from the previous state"
    assert v["t-unknown"]["detail"] == "unknown action ForgeVote: no edge of the graph carries it"
    assert v["t-wide"]["detail"] == "left the bounded graph at step 2"


def _checker_expected(traces_by_file: dict[str, list[str]]) -> tuple[dict, dict]:
    """The real single-process checker (trace_checker, full-graph mode) on every fixture file
    against graph.dot, no TLC: (raw checker verdicts by trace, the distributed verdicts they
    stand for under the module's convention)."""
    from trace_checker import corpus as C
    from trace_checker.dot import read_dump
    from trace_checker.graph import StateGraph
    from trace_checker.observe import Observer
    from trace_checker.traces import read_trace

    g = StateGraph.from_dump(read_dump(GRAPH, unescape=False), source=str(GRAPH))
    C._set_graph(g)
    obs = Observer(g.codec, intern=False)
    raw, want = {}, {}
    for f in C.collect_files([CORPUS]):
        r = C._check_in_graph(f)
        r.pop("_path", None)
        tids = [r["trace_id"]] if r["trace_id"] else traces_by_file[str(Path(f).resolve())]
        v = r["verdict"]
        if v == "recheck":
            k = r["left_graph_at_step"]
            trace = read_trace(f)
            in_graph = g.index.get(obs.keys(trace)[k]) is not None
            exp = (("invalid", k, trace.steps[k].action, k) if in_graph
                   else ("out_of_scope", None, None, k))
        else:
            assert v in ("valid", "out_of_scope", "malformed"), r
            exp = (v, None, None, None)
        for tid in tids:
            raw[tid] = (v, r.get("left_graph_at_step"))
            want[tid] = exp
    return raw, want


def test_distributed_validation_agrees_with_the_real_checker(run):
    by_file: dict[str, list[str]] = {}
    for r in table(run, "traces"):
        by_file.setdefault(r["file"], []).append(r["trace_id"])
    raw, want = _checker_expected(by_file)
    # the checker's own answers, so that both branches of the convention are exercised
    assert raw == {"t-valid": ("valid", None), "t-trunc": ("valid", None),
                   "t-bug": ("recheck", 6), "t-unknown": ("recheck", 2),
                   "t-wide": ("recheck", 2), "t-elr": ("out_of_scope", None),
                   "t-nofooter": ("malformed", None), "t-bad": ("malformed", None)}
    assert set(want) == TRACE_IDS
    assert _validation(run) == want


def test_agreement_with_the_checker_verdicts_file(run):
    s, _, _ = run
    # verdicts.jsonl stands for `kraftcheck validate` after its TLC re-check, which finds
    # t-wide valid under raised bounds; the distributed validation has it out of scope
    # judged inside the graph: every trace whose distributed verdict is not out of scope
    assert s["agreement"] == {"compared": 8, "agree": 7, "disagree": 1, "checker_only": 0,
                              "spark_only": 0, "judged_in_graph": 6, "agree_in_graph": 6}
    d = table(run, "disagreements")
    assert [(r["trace_id"], r["side"], r["checker_verdict"], r["spark_verdict"]) for r in d] == \
        [("t-wide", "both", "valid", "out_of_scope")]


def test_agreement_is_a_full_outer_join_comparing_step_and_action(run):
    from spark_trace_analysis.validate import agreement
    _, _, spark = run
    checker = spark.createDataFrame([
        ("a", None, "valid", None, None), ("b", None, "invalid", 3, "X"),
        ("c", None, "invalid", 3, "X"), ("e", None, "invalid", 4, "X"),
        (None, "/corpus/orphan.jsonl", "malformed", None, None)],
        "trace_id string, file string, verdict string, failing_step long, claimed_action string")
    dist = spark.createDataFrame([
        ("a", "valid", None, None), ("b", "invalid", 3, "Y"), ("d", "valid", None, None),
        ("e", "invalid", 5, "X")],
        "trace_id string, verdict string, failing_step long, claimed_action string")
    got = sorted((r["trace_id"] or r["file"], r["side"], r["agree"])
                 for r in agreement(checker, dist).collect())
    assert got == [("/corpus/orphan.jsonl", "checker_only", False), ("a", "both", True),
                   ("b", "both", False), ("c", "checker_only", False),
                   ("d", "spark_only", False), ("e", "both", False)]


def test_benchmark_baseline_computes_the_same_tables_as_spark(run, tmp_path):
    """benchmarks/bench_spark.py compares Spark with a single-process baseline: on this corpus
    (bad rows, unknown actions, a trace without footer, ELR) both give the same tables, and the
    comparison notices a changed value."""
    import sys

    import pyarrow.parquet as pq
    from spark_trace_analysis.jobs import run_stats
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        import bench_spark
    finally:
        sys.path.pop(0)
    run_stats([str(CORPUS)], tmp_path / "spark", master="local[2]")
    bench_spark.baseline(CORPUS, tmp_path / "base")
    r = bench_spark.compare(tmp_path / "spark", tmp_path / "base")
    assert r["notes"] == [] and r["agree"] is True
    assert len(r["checks"]) == 19 and r["distinct_states"] == 23
    path = next((tmp_path / "base" / "metrics").rglob("*.parquet"))
    t = pq.read_table(path).to_pylist()
    t[0]["leaderless_ms"] += 1
    pq.write_table(__import__("pyarrow").Table.from_pylist(t), path)
    r = bench_spark.compare(tmp_path / "spark", tmp_path / "base")
    assert r["agree"] is False and r["checks"]["table.metrics"] is False
    assert [k for k, ok in r["checks"].items() if not ok] == ["table.metrics"]


def test_report_is_self_contained_with_plots(run):
    s, out, _ = run
    html = Path(s["report"]).read_text()
    assert Path(s["report"]) == out / "report.html"
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) >= 5
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    assert "Resign" in html and "TeleportLeader" in html and "ForgeVote" in html
    bad_v = html.split("<h2>Bad verdict rows (1)</h2>", 1)[1]
    assert "not JSON" in bad_v and "not a verdict" in bad_v and "verdicts.jsonl" in bad_v
    # t-wide is outside the loaded graph (out of scope for the distributed validation, valid
    # for the checker): a count and a sentence, not an alarm (issue 34)
    assert (f"Distributed validation judged 6 traces\nagainst the state graph {s['graph']} "
            "and agrees with the checker on 6 of them.") in html
    assert "Traces on which they disagree" not in html and 'id="no-disagreement"' in html
    outside = html.split('<p id="outside-graph"', 1)[1].split("</p>", 1)[0]
    assert "1 trace judged by the\nchecker only: it lies outside the loaded graph" in outside
    assert "Left out of the coverage (1 traces made under other bounds)" in html
    assert "t-wide (tlc_configs/kraft-wide.cfg)" in html
    assert "http://" not in html and "https://" not in html
    assert not list(out.parent.glob(".out.tmp-*"))


def test_a_trace_id_written_by_two_runs_is_reported(run, tmp_path):
    """Merged runs whose trace ids collide: the trace is malformed, and its problems say that
    its id is in two files."""
    import shutil

    from spark_trace_analysis.jobs import run_stats
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        shutil.copy(CORPUS / "t-valid.jsonl", tmp_path / d / "t-valid.jsonl")
    s = run_stats([str(tmp_path / "a"), str(tmp_path / "b")], tmp_path / "out",
                  master="local[2]")
    assert (s["traces"], s["verdicts"]) == (1, {"malformed": 1})
    _, _, spark = run
    (t,) = [r.asDict() for r in spark.read.parquet(str(tmp_path / "out" / "traces")).collect()]
    assert t["problems"][:2] == ["more than one header", "trace id in 2 files"]
    assert t["complete"] is False


def _graph_fingerprints() -> set[str]:
    node = re.compile(r'^(-?\d+) \[label="((?:[^"\\]|\\.)*)"(,style = filled)?\]')
    return {parse_label(m.group(2))[0] for ln in GRAPH.read_text().splitlines()
            if (m := node.match(ln))}


def test_trace_fingerprints_join_graph_fingerprints(run):
    """Trace states are fingerprinted once per distinct state (the Arrow UDF over DISTINCT
    texts), graph states from TLC's labels: both are kraftcore.values.fingerprint of the
    state, so a trace state that is a graph state joins with it on `fp`."""
    _, out, spark = run
    steps = table(run, "steps")
    text = {(r["sk1"], r["sk2"]): r["state"] for r in table(run, "states")}
    for r in steps:
        # a step's state is the `states` row of its key
        st = json.loads(text[r["sk1"], r["sk2"]])
        assert r["fp"] == fingerprint(make_fn((k, from_itf(v)) for k, v in st.items()))
    in_graph = {r["fp"] for r in steps} & _graph_fingerprints()
    joined = (spark.read.parquet(str(out / "steps"))
              .join(spark.read.parquet(str(out / "graph_states")), "fp")
              .select("fp").distinct().collect())
    assert {r.fp for r in joined} == in_graph
    assert len(in_graph) == run[0]["coverage"]["states_visited"] > 0
    # a state that is not in the graph (t-wide leaves it) does not join
    assert {r["fp"] for r in steps} - in_graph


def test_tables_are_partitioned_by_protocol_and_bounds_config(run, tmp_path):
    """steps, traces and the per-trace metric tables are laid out protocol=/bounds_config=;
    a read with a partition filter opens only that folder: with every other partition's
    files replaced by garbage, reading protocol = 'elr' still works (and reading everything
    does not)."""
    import shutil
    from urllib.parse import unquote

    from pyspark.sql import functions as F
    _, out, spark = run
    layout = {(r["protocol"], r["bounds_config"]) for r in table(run, "traces")}
    assert layout == {("kraft", GRAPH_BOUNDS), ("kraft", "unstated"),
                      ("kraft", "tlc_configs/kraft-wide.cfg"), ("elr", "unstated")}
    for name in ("steps", "traces", "metrics", "election_latency", "commit_latency"):
        parts = {tuple(unquote(p.split("=", 1)[1]) for p in d.relative_to(out / name).parts)
                 for d in (out / name).glob("protocol=*/bounds_config=*")}
        # a folder per (protocol, bounds) that has rows: every one for steps and traces; the
        # latency tables only where some trace elected a leader / committed an offset
        assert ("kraft", GRAPH_BOUNDS) in parts and parts <= layout, name
        if name in ("steps", "traces"):
            assert parts == layout, name
    copy = tmp_path / "steps"
    shutil.copytree(out / "steps", copy)
    schema = spark.read.parquet(str(out / "steps")).schema
    broken = 0
    for f in copy.rglob("*.parquet"):
        if "protocol=elr" not in f.parts:
            f.write_bytes(b"not parquet")
            broken += 1
    assert broken > 0
    df = spark.read.schema(schema).parquet(str(copy))
    elr = df.filter(F.col("protocol") == "elr")
    assert "PartitionFilters: [isnotnull(protocol" in elr._jdf.queryExecution().executedPlan() \
        .toString()
    rows = elr.select("trace_id", "bounds_config").distinct().collect()
    assert {(r.trace_id, r.bounds_config) for r in rows} == {("t-elr", "unstated")}
    with pytest.raises(Exception, match="(?i)parquet"):
        df.select("trace_id").collect()


def test_bounds_partition_value_is_the_same_in_the_jvm_and_in_python(run):
    """ingest.bounds_partition (Spark, the job's partition column) and fields.bounds_config
    (the benchmark's single-process baselines) give the same folder for every form of the
    header's `bounds`."""
    from pyspark.sql import functions as F

    from spark_trace_analysis.fields import bounds_config
    from spark_trace_analysis.ingest import bounds_partition
    _, _, spark = run
    raws = [None, "", "null", "tlc_configs/a.cfg", '{"file":"tlc_configs/b.cfg"}',
            '{"constants":{"MaxEpoch":2},"file":"x/../c.cfg"}', '{"constants":{}}',
            '{"file":""}', '{"file":3}']
    df = spark.createDataFrame([(r,) for r in raws], "bounds string")
    got = [r.p for r in df.select(bounds_partition(F.col("bounds")).alias("p")).collect()]
    assert got == [bounds_config(r) for r in raws] == [
        "unstated", "unstated", "unstated", "tlc_configs/a.cfg", "tlc_configs/b.cfg",
        "x/../c.cfg", "unstated", "unstated", "3"]


def test_steps_are_the_same_whichever_way_the_states_are_joined(run, tmp_path, monkeypatch):
    """Above ingest.BROADCAST_STATES distinct states the steps get their fingerprints by a
    shuffle join on the state key instead of a broadcast: same table."""
    from spark_trace_analysis import ingest
    _, out, spark = run
    monkeypatch.setattr(ingest, "BROADCAST_STATES", 0)
    files = ingest.expand_inputs([str(CORPUS)])
    counts = ingest.ingest_traces(spark, files, tmp_path / "out", tmp_path / "staging")
    cols = ["trace_id", "step", "time_ms", "action", "params", "sk1", "sk2", "fp",
            "unknown_action", "bug", "bounds", "file", "fault_profile", "protocol",
            "bounds_config"]

    def rows(path):
        df = spark.read.parquet(str(path / "steps"))
        return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                      for r in df.select(*cols).collect())
    assert counts["steps"] == 49
    assert rows(tmp_path / "out") == rows(out)


def _doc_type(t) -> str:
    from pyspark.sql import types as T
    simple = {T.StringType: "string", T.LongType: "int64", T.BooleanType: "bool",
              T.DoubleType: "double"}
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, T.ArrayType):
        return f"list<{_doc_type(t.elementType)}>"
    if isinstance(t, T.MapType):
        return f"map<{_doc_type(t.keyType)}, {_doc_type(t.valueType)}>"
    if isinstance(t, T.StructType):
        return "struct<" + ", ".join(f"{f.name} {_doc_type(f.dataType)}" for f in t) + ">"
    return t.simpleString()


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()]


def test_every_table_is_written_with_the_schema_its_docs_give(run):
    """docs/spark-stats.md, "Table schemas": each table of the run has exactly the documented
    columns, in order, with the documented types (partition columns last)."""
    _, out, spark = run
    doc = (Path(__file__).parent.parent / "docs" / "spark-stats.md").read_text()
    section = doc.split("### Table schemas", 1)[1].splitlines()
    start = next(i for i, ln in enumerate(section) if ln.startswith("| table"))
    rows = [ln for ln in itertools.takewhile(lambda ln: ln.startswith("|"), section[start:])][2:]
    checked = set()
    for row in rows:
        names_cell, cols_cell = [c.strip() for c in row.strip("|").split("|")]
        if cols_cell.startswith("as "):
            continue
        documented = [re.sub(r"\s*\(.*\)$", "", c) for c in _split_top(cols_cell)]
        for name in re.findall(r"`(\w+)`", names_cell):
            if not (out / name).exists():
                continue
            schema = spark.read.parquet(str(out / name)).schema
            assert [f"{f.name} {_doc_type(f.dataType)}" for f in schema] == documented, name
            checked.add(name)
    assert {"steps", "states", "traces", "bad_rows", "metrics", "validation",
            "conformance"} <= checked


def test_input_that_changes_between_the_two_scans_fails_closed(run, tmp_path, monkeypatch):
    """The distinct states' texts come from a second scan, picked by line position; when the
    files changed in between (a state is no longer the one the first scan keyed), ingest
    stops with an InputError (exit 2) rather than write states that belong to no step."""
    import shutil as sh
    from spark_trace_analysis import ingest
    _, _, spark = run
    corpus = tmp_path / "corpus"
    sh.copytree(CORPUS, corpus)
    files = ingest.expand_inputs([str(corpus)])
    real, calls = ingest.read_lines, []

    def read_lines(spark_, fs):
        calls.append(fs)
        if len(calls) == 2:     # the second scan: rewrite every state, line by line
            for f in fs:
                text = Path(f).read_text()
                Path(f).write_text(text.replace('"state":{', '"state":{"changed":1,'))
        return real(spark_, fs)
    monkeypatch.setattr(ingest, "read_lines", read_lines)
    with pytest.raises(InputError, match="the input changed while it was read"):
        ingest.ingest_traces(spark, files, tmp_path / "out", tmp_path / "staging")
    assert len(calls) == 2
