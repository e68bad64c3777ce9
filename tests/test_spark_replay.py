"""Replay outcomes in the Spark report (`kraftcheck stats --replay DIR`,
spark_trace_analysis/replay_outcomes.py): the graph's edges colored by outcome per
implementation, as Parquet tables and a plot in the coverage section; bad replay folders are
clear errors naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_trace_analysis.ingest import InputError

FIX = Path(__file__).parent / "fixtures" / "spark"
GRAPH = FIX / "graph.dot"
ONE_TRACE = FIX / "corpus" / "t-valid.jsonl"

pytestmark = pytest.mark.xdist_group("spark")


def _replay_dir(path: Path, impl: str, graph: str, edges: list[tuple]) -> Path:
    path.mkdir(parents=True)
    (path / "replay.json").write_text(json.dumps({"schema": "kraftcheck-replay/1",
                                                  "impl": impl, "graph": graph}))
    (path / "edges.jsonl").write_text("".join(
        json.dumps({"src": 0, "dst": 1, "src_fp": s, "action": a, "dst_fp": d,
                    "outcome": o, "step": None, "reason": r}) + "\n"
        for s, a, d, o, r in edges))
    return path


@pytest.fixture(scope="module")
def stats(tmp_path_factory, spark_local):
    """One stats job over one trace with two replay folders (the shared session of
    tests/conftest.py: no Spark start of its own)."""
    from spark_trace_analysis.graph import load_graph_tables
    from spark_trace_analysis.jobs import run_stats
    tmp = tmp_path_factory.mktemp("replay-stats")
    spark = spark_local()
    g = load_graph_tables(spark, str(GRAPH), tmp / "g")
    edges = sorted((r.src_fp, r.action, r.dst_fp) for r in g.edges.collect())
    (s1, a1, d1), (s2, a2, d2), (s3, a3, d3) = edges[:3]
    ref = _replay_dir(tmp / "ref", "refimpl", g.name, [
        (s1, a1, d1, "replayed", None), (s2, a2, d2, "diverged", "diverged"),
        (s3, a3, d3, "not_drivable", "spec-choice-not-taken")])
    kafka = _replay_dir(tmp / "kafka", "kafka", g.name, [(s1, a1, d1, "replayed", None)])
    out = tmp / "out"
    summary = run_stats([str(ONE_TRACE)], out, graph=str(GRAPH), master="local[2]",
                        replay=[str(ref), str(kafka)])
    return summary, out, spark, edges


def test_replay_outcomes_per_implementation(stats):
    s, out, spark, edges = stats
    n = len(edges)
    by_impl = {r["impl"]: r for r in s["replay"]}
    assert set(by_impl) == {"refimpl", "kafka"}
    r = by_impl["refimpl"]
    assert (r["edges"], r["replayed"], r["diverged"], r["not_drivable"], r["not_targeted"]) \
        == (n, 1, 1, 1, n - 3)
    k = by_impl["kafka"]
    assert (k["edges"], k["replayed"], k["diverged"], k["not_drivable"], k["not_targeted"]) \
        == (n, 1, 0, 0, n - 1)
    # the per-edge table colors every edge of the graph, once per implementation
    rows = [x.asDict() for x in spark.read.parquet(str(out / "replay_edges")).collect()]
    assert len(rows) == 2 * n
    first = {(x["impl"], x["outcome"]) for x in rows
             if (x["src_fp"], x["action"], x["dst_fp"]) == edges[2]}
    assert first == {("refimpl", "not_drivable"), ("kafka", "not_targeted")}
    per_action = [x.asDict() for x in spark.read.parquet(str(out / "replay_by_action")).collect()]
    assert sum(x["edges"] for x in per_action) == 2 * n
    assert sum(x["diverged"] for x in per_action) == 1


def test_report_renders_replay_outcomes(stats):
    s, out, _, _ = stats
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Replay outcomes" in html
    assert 'alt="Replay outcome by action"' in html
    assert "kafka" in html and "refimpl" in html


def test_bad_replay_folder_names_file_line_and_field(tmp_path):
    from spark_trace_analysis.replay_outcomes import check_replay
    with pytest.raises(InputError, match="no replay.json"):
        check_replay([tmp_path])
    d = _replay_dir(tmp_path / "r", "refimpl", "g", [("a", "X", "b", "replayed", None)])
    with (d / "edges.jsonl").open("a") as f:
        f.write(json.dumps({"src_fp": "a", "action": "X", "dst_fp": "b",
                            "outcome": "maybe"}) + "\n")
    with pytest.raises(InputError, match=r"edges.jsonl:2: field 'outcome' is 'maybe'"):
        check_replay([d])
    (d / "edges.jsonl").write_text('{"src_fp": "a", "action": 3}\n')
    with pytest.raises(InputError, match=r"edges.jsonl:1: field 'action'"):
        check_replay([d])
