"""Spark-free parts of the stats stage: state fingerprints and observations, the graph label
parser, the lookup rule, input errors and the CLI's exit status, the benchmark generator."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcheck.values import Fn, fingerprint, from_itf, make_fn, to_itf, to_tla
from spark_trace_analysis.graph import parse_label
from spark_trace_analysis.ingest import InputError, checker_summary_to_lines, expand_inputs
from spark_trace_analysis.observe import observe, state_info
from spark_trace_analysis.validate import lookup_verdict

FIX = Path(__file__).parent / "fixtures" / "spark"


def _kraft_state(**over) -> Fn:
    d = {"role": Fn({"n1": "Leader", "n2": "Follower"}), "currentEpoch": Fn({"n1": 3, "n2": 3}),
         "leaderId": Fn({"n1": "n1", "n2": "n1"}), "votedId": Fn({"n1": "n1", "n2": "n1"}),
         "log": Fn({"n1": (Fn({"epoch": 3, "value": "a"}),) * 3, "n2": ()}),
         "highWatermark": Fn({"n1": 1, "n2": 0})}
    d.update(over)
    return Fn(d)


def test_state_fingerprint_is_the_canonical_one_whatever_the_json_layout():
    s = _kraft_state()
    canonical = json.dumps({k: to_itf(v) for k, v in s.items()}, sort_keys=True)
    shuffled = json.dumps({k: to_itf(v) for k, v in reversed(list(s.items()))}, indent=1)
    assert state_info(canonical)[0] == fingerprint(s) == state_info(shuffled)[0]


def test_state_info_reports_undecodable_states():
    assert state_info('{"x": null}')[1].startswith("bad ITF value")
    assert state_info("[1, 2]")[1] == "state is not a JSON object of spec variables"
    assert state_info('{"x": 1}')[0] == fingerprint(Fn({"x": 1}))
    assert state_info('{"x": 1}')[2] is None  # unknown variables: fingerprinted, not observed


def test_kraft_observation():
    o = observe(_kraft_state())
    assert (o["leader"], o["epoch"], o["hwm_max"], o["hwm_min"], o["hwm_lag"]) == \
        ("n1", 3, 1, 0, 2)
    assert o["log_lens"] == {"n1": 3, "n2": 0}
    two = observe(_kraft_state(role=Fn({"n1": "Leader", "n2": "Leader"}),
                               currentEpoch=Fn({"n1": 3, "n2": 4})))
    assert (two["leaders"], two["leader"]) == (["n1", "n2"], "n2")


def test_elr_observation_counts_acked_records_missing_from_the_leader():
    r1, r2 = Fn({"epoch": 1, "value": "a"}), Fn({"epoch": 1, "value": "b"})
    s = Fn({"isr": frozenset({"b1"}), "elr": frozenset({"b2"}), "leader": "b1",
            "leaderEpoch": 2, "log": Fn({"b1": (r1,), "b2": (r1, r2)}),
            "hwm": Fn({"b1": 1, "b2": 2}), "alive": Fn({"b1": True, "b2": False}),
            "acked": frozenset({(1, r1), (2, r2)})})
    o = observe(s)
    assert (o["leader"], o["epoch"], o["hwm_min"], o["eligible"], o["lost_acked"]) == \
        ("b1", 2, 1, ["b1", "b2"], 1)


def test_elr_observation_with_the_partition_high_watermark():
    r1 = Fn({"epoch": 1, "value": "v1"})
    s = Fn({"isr": frozenset({"b1", "b2"}), "elr": frozenset(), "leader": "b2",
            "leaderEpoch": 3, "log": Fn({"b1": (r1,), "b2": (r1, r1)}), "hwm": 1,
            "alive": Fn({"b1": True, "b2": True}), "acked": frozenset({(1, r1)})})
    o = observe(s)
    assert (o["leader"], o["hwm_max"], o["hwms"], o["hwm_lag"], o["lost_acked"]) == \
        ("b2", 1, {"b2": 1}, 1, 0)
    none = observe(Fn(dict(s.items(), leader="NoBroker")))
    assert (none["leader"], none["leaders"], none["hwm_lag"]) == (None, [], None)


def test_graph_label_fingerprint_joins_with_trace_states():
    s = _kraft_state()
    text = "\n".join(f"/\\ {k} = {to_tla(v, frozenset({'n1', 'n2'}))}" for k, v in s.items())
    dot = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    assert parse_label(dot) == (fingerprint(s), text)
    trace_json = json.dumps({k: to_itf(v) for k, v in s.items()})
    assert state_info(trace_json)[0] == parse_label(dot)[0]


def test_lookup_rule():
    states, init = {"a", "b", "c"}, {"a"}
    edges = {("a", "X", "b"), ("b", "Y", "c")}
    assert lookup_verdict([(0, "Init", "a"), (1, "X", "b"), (2, "Z", "b"), (3, "Y", "c")],
                          states, init, edges) == ("valid", None, None)
    assert lookup_verdict([(0, "Init", "a"), (1, "Y", "b")], states, init, edges) == \
        ("invalid", 1, "Y")
    assert lookup_verdict([(0, "Init", "b")], states, init, edges) == ("invalid", 0, "Init")
    assert lookup_verdict([(0, "Init", "a"), (1, "X", "zz")], states, init, edges) == \
        ("out_of_scope", 1, "X")


def test_expand_inputs(tmp_path):
    files = expand_inputs([FIX / "corpus"])
    assert [Path(f).name for f in files] == ["bad.jsonl", "t-bug.jsonl", "t-elr.jsonl",
                                            "t-nofooter.jsonl", "t-trunc.jsonl", "t-valid.jsonl"]
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([tmp_path / "missing"])
    with pytest.raises(InputError, match="no .jsonl file"):
        expand_inputs([tmp_path])


def test_cli_exits_2_on_bad_input(tmp_path):
    r = CliRunner().invoke(app, ["stats", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert not (tmp_path / "o").exists()


def test_fixture_files_are_what_make_fixtures_writes(tmp_path, monkeypatch):
    sys.path.insert(0, str(FIX))
    try:
        import make_fixtures
    finally:
        sys.path.remove(str(FIX))
    monkeypatch.setattr(make_fixtures, "HERE", tmp_path)
    make_fixtures.main()
    for p in sorted((FIX / "corpus").glob("*.jsonl")) + [FIX / "graph.dot", FIX / "verdicts.jsonl"]:
        rel = p.relative_to(FIX)
        assert (tmp_path / rel).read_text() == p.read_text(), rel


def test_benchmark_generator_writes_valid_traces(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        import bench_spark
    finally:
        sys.path.pop(0)
    from refimpl.trace.format import validate_lines
    folder = bench_spark.generate(1000, tmp_path / "c")
    lines = (folder / "part-00000.jsonl").read_text().splitlines()
    assert len(lines) == 5 * (bench_spark.STEPS_PER_TRACE + 2)
    per = bench_spark.STEPS_PER_TRACE + 2
    for i in range(5):
        assert validate_lines(lines[i * per:(i + 1) * per]) == []
    fp = state_info(json.dumps(json.loads(lines[1])["state"]))[0]
    assert fp == fingerprint(make_fn((k, from_itf(v)) for k, v in
                                     json.loads(lines[1])["state"].items()))


def test_checker_summary_becomes_verdict_lines(tmp_path):
    doc = {"counts": {}, "results": [
        {"file": "a.jsonl", "trace_id": "a", "verdict": "valid", "steps": 3},
        {"file": "b.jsonl", "trace_id": "b", "verdict": "invalid", "failed_step": 4,
         "diagnosis": {"step": 4, "claimed_action": "Timeout", "summary": "no such successor"}},
        {"file": "c.jsonl", "trace_id": None, "verdict": "malformed",
         "malformed": {"file": "c.jsonl", "line": 2, "message": "not JSON"}}]}
    src = tmp_path / "summary.json"
    src.write_text(json.dumps(doc))
    lines = [json.loads(x) for x in
             checker_summary_to_lines(src, tmp_path / "v.jsonl").read_text().splitlines()]
    assert [(x["trace_id"], x["verdict"], x["step"], x["claimed_action"], x["reason"])
            for x in lines] == [("a", "valid", None, None, None),
                                ("b", "invalid", 4, "Timeout", "no such successor"),
                                (None, "malformed", None, None, "not JSON")]
    assert lines[2]["file"] == str((Path.cwd() / "c.jsonl").resolve())
    src.write_text("[]")
    with pytest.raises(InputError, match="not a verdict file"):
        checker_summary_to_lines(src, tmp_path / "w.jsonl")
