"""The Spark stats job on the hand-made fixture corpus (tests/fixtures/spark/, see
make_fixtures.py for what each trace does): exact statistics, bad rows, coverage, metrics,
distributed validation against the reference lookup and the checker's verdicts, the report."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from kraftcheck.values import fingerprint, from_itf, make_fn
from spark_trace_analysis.graph import parse_label
from spark_trace_analysis.validate import lookup_verdict

FIX = Path(__file__).parent / "fixtures" / "spark"
CORPUS = FIX / "corpus"
GRAPH = FIX / "graph.dot"
VERDICTS = FIX / "verdicts.jsonl"

pytestmark = pytest.mark.xdist_group("spark")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from spark_trace_analysis.jobs import run_stats
    from spark_trace_analysis.session import get_session, stop_session
    out = tmp_path_factory.mktemp("stats") / "out"
    spark = get_session("local[2]", shuffle_partitions=2)
    summary = run_stats([str(CORPUS)], out, graph=str(GRAPH), verdicts=str(VERDICTS),
                        master="local[2]")
    yield summary, out, spark
    stop_session()


def table(run, name, order=None):
    _, out, spark = run
    df = spark.read.parquet(str(out / name))
    rows = [r.asDict(recursive=True) for r in df.collect()]
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in order)) if order else rows


def test_summary_counts(run):
    s, out, _ = run
    assert (s["traces"], s["steps"], s["bad_rows"], s["lines"]) == (6, 41, 3, 55)
    assert s["verdicts"] == {"valid": 2, "invalid": 1, "out_of_scope": 1, "malformed": 2}
    assert s["verdict_source"] == "the trace checker (--verdicts)"
    assert s["verdict_bad_rows"] == 1
    assert json.loads((out / "summary.json").read_text())["traces"] == 6


def test_bad_rows_are_reported_with_file_line_and_reason(run):
    rows = table(run, "bad_rows", ["line"])
    got = [(Path(r["file"]).name, r["line"], r["trace_id"], r["reason"]) for r in rows]
    assert got == [
        ("bad.jsonl", 3, None, "not JSON"),
        ("bad.jsonl", 4, "t-bad", "unknown action TeleportLeader"),
        ("bad.jsonl", 5, "t-bad", "step: missing field time_ms"),
    ]
    bad_v = table(run, "bad_rows_verdicts")
    assert [(r["line"], r["reason"]) for r in bad_v] == [(7, "not JSON")]


def test_traces_table_marks_incomplete_traces(run):
    t = {r["trace_id"]: r for r in table(run, "traces")}
    assert {k: v["complete"] for k, v in t.items()} == {
        "t-valid": True, "t-trunc": True, "t-bug": True, "t-elr": True,
        "t-nofooter": False, "t-bad": False}
    assert t["t-nofooter"]["problems"] == ["no footer"]
    # t-bad keeps only its step 0: the steps are 0..0, but the footer claims 3
    assert t["t-bad"]["problems"] == ["footer step count differs", "has bad rows"]
    assert t["t-bad"]["bad_rows"] == 2
    assert t["t-bug"]["violated"] == ["HighWatermarkWithinLog"]
    assert (t["t-valid"]["n_steps"], t["t-valid"]["duration_ms"]) == (13, 750)


def test_conformance_by_protocol_profile_and_bug(run):
    rows = table(run, "conformance", ["protocol", "fault_profile", "bug"])
    key = ("protocol", "fault_profile", "bug", "traces", "traces_valid", "traces_invalid",
           "traces_out_of_scope", "traces_malformed", "steps_valid", "steps_invalid",
           "steps_unchecked", "steps_out_of_scope", "steps_malformed")
    assert [tuple(r[k] for k in key) for r in rows] == [
        ("elr", "none", "none", 1, 0, 0, 1, 0, 0, 0, 0, 2, 0),
        ("kraft", "chaos", "follower-hwm-uncapped", 1, 0, 1, 0, 0, 6, 1, 2, 0, 0),
        ("kraft", "crashes", "none", 1, 1, 0, 0, 0, 13, 0, 0, 0, 0),
        ("kraft", "lossy", "none", 1, 0, 0, 0, 1, 0, 0, 0, 0, 1),
        ("kraft", "none", "none", 2, 1, 0, 0, 1, 13, 0, 0, 0, 3),
    ]


def test_first_failing_step_and_actions(run):
    ff = table(run, "first_failure")
    assert [(r["bug"], r["failing_step"], r["claimed_action"], r["traces"]) for r in ff] == [
        ("follower-hwm-uncapped", 6, "ReceiveFetchRequest", 1)]
    acts = {(r["protocol"], r["action"]): (r["steps"], r["traces"], r["failures"])
            for r in table(run, "actions")}
    assert acts[("kraft", "Init")] == (5, 5, 0)
    assert acts[("kraft", "Timeout")] == (6, 4, 0)  # t-bad's Timeout line is a bad row
    assert acts[("kraft", "ReceiveFetchRequest")] == (3, 2, 1)
    assert acts[("kraft", "Crash")] == (1, 1, 0)
    assert acts[("elr", "UnfenceBroker")] == (1, 1, 0)
    assert sum(v[0] for v in acts.values()) == 41


def test_coverage_of_the_state_graph(run):
    s, _, _ = run
    assert s["coverage"] == {"states": 22, "states_visited": 19, "state_share": 19 / 22,
                             "edges": 22, "edges_visited": 18, "edge_share": 18 / 22,
                             "actions": 9, "actions_visited": 8}
    assert s["actions_never_exercised"] == ["Resign"]
    cs = table(run, "coverage_summary")[0]
    assert cs["trace_states_outside"] == 1
    unvisited = table(run, "unvisited_states")
    assert len(unvisited) == 3
    labels = sorted(r["label"] for r in unvisited)
    assert any('n1 :> "Voted" @@ n2 :> "Unattached"' in x for x in labels)
    per = {r["action"]: (r["edges"], r["edges_visited"]) for r in table(run, "coverage_actions")}
    assert per["Timeout"] == (4, 3) and per["Resign"] == (1, 0)
    assert per["Crash"] == (0, 0)


def test_trace_metrics(run):
    m = {r["trace_id"]: r for r in table(run, "metrics")}
    want = {  # elections, leaderless ms, truncations, truncated records, data loss, unclean
        "t-valid": (2, 470, 0, 0, 0, 0),
        "t-trunc": (2, 310, 1, 1, 0, 0),
        "t-bug": (1, 30, 1, 1, 1, 0),
        "t-nofooter": (0, 9, 0, 0, 0, 0),
        "t-elr": (0, 40, 0, 0, 0, 0),
        "t-bad": (0, 0, 0, 0, 0, 0),
    }
    got = {k: (r["elections"], r["leaderless_ms"], r["truncations"], r["truncated_records"],
               r["data_loss_events"], r["unclean_recoveries"]) for k, r in m.items()}
    assert got == want
    assert m["t-valid"]["hwm_lag_avg"] == pytest.approx(60 / 280)
    assert m["t-trunc"]["hwm_lag_avg"] == pytest.approx(200 / 290)
    assert m["t-bug"]["hwm_lag_avg"] == pytest.approx(20 / 50)
    assert m["t-valid"]["leaderless_share"] == pytest.approx(470 / 750)
    el = sorted((r["trace_id"], r["latency_ms"]) for r in table(run, "election_latency"))
    assert el == [("t-bug", 30), ("t-trunc", 70), ("t-trunc", 240), ("t-valid", 120),
                  ("t-valid", 350)]
    cl = sorted((r["trace_id"], r["offset"], r["latency_ms"]) for r in table(run, "commit_latency"))
    assert cl == [("t-bug", 1, 20), ("t-valid", 1, 60)]
    byp = {(r["protocol"], r["fault_profile"]): r for r in table(run, "metrics_by_profile")}
    assert byp[("kraft", "crashes")]["max_truncation_depth"] == 1
    assert byp[("kraft", "none")]["elections_per_trace"] == 1.0
    assert byp[("kraft", "chaos")]["data_loss_events"] == 1


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


def test_distributed_validation_agrees_with_the_reference_lookup(run):
    v = {r["trace_id"]: r for r in table(run, "validation")}
    ref = _reference_verdicts()
    assert ref == {"t-valid": ("valid", None, None), "t-trunc": ("valid", None, None),
                   "t-bug": ("invalid", 6, "ReceiveFetchRequest")}
    for tid, (verdict, k, action) in ref.items():
        assert (v[tid]["verdict"], v[tid]["failing_step"], v[tid]["claimed_action"]) == \
            (verdict, k, action)
    assert v["t-bug"]["detail"] == "no ReceiveFetchRequest edge from the previous state"
    assert v["t-elr"]["verdict"] == "out_of_scope"
    assert {v["t-nofooter"]["verdict"], v["t-bad"]["verdict"]} == {"malformed"}


def test_distributed_validation_agrees_with_the_checker_verdicts(run):
    s, _, _ = run
    assert s["agreement"] == {"compared": 6, "agree": 6}


def test_report_is_self_contained_with_plots(run):
    s, out, _ = run
    html = Path(s["report"]).read_text()
    assert Path(s["report"]) == out / "report.html"
    imgs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(imgs) >= 5
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    assert "Resign" in html and "TeleportLeader" in html
    assert "http://" not in html and "https://" not in html
    assert not list(out.parent.glob(".out.tmp-*"))
