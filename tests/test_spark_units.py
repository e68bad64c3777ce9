"""Spark-free parts of the stats stage: state fingerprints and observations, the graph label
parser, the lookup rule, input errors and the CLI's exit status (one test starts a JVM to get
a real Spark error), where the driver listens, trace bounds, the benchmark generator."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcore.values import Fn, ValueError_, fingerprint, from_itf, make_fn, to_itf, to_tla
from spark_trace_analysis.graph import parse_label
from spark_trace_analysis.ingest import InputError, checker_summary_to_lines, expand_inputs
from spark_trace_analysis.observe import decode_state, observe, state_info
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
                                            "t-nofooter.jsonl", "t-trunc.jsonl", "t-unknown.jsonl",
                                            "t-valid.jsonl", "t-wide.jsonl"]
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([tmp_path / "missing"])
    with pytest.raises(InputError, match="no .jsonl file"):
        expand_inputs([tmp_path])


def test_cli_exits_2_on_bad_input(tmp_path):
    r = CliRunner().invoke(app, ["stats", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "nope: no such file or folder" in " ".join(r.output.split())
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("make", [
    lambda: __import__("pyspark.errors", fromlist=["x"]).AnalysisException(
        message="[PATH_NOT_FOUND] Path does not exist: file:/gone.\nmore detail"),
    lambda: __import__("py4j.protocol", fromlist=["x"]).Py4JNetworkError(
        "Answer from Java side is empty"),
])
def test_cli_exits_2_with_a_message_when_spark_fails(tmp_path, monkeypatch, make):
    import spark_trace_analysis.jobs as jobs
    err = make()

    def fail(*_a, **_k):
        raise err
    monkeypatch.setattr(jobs, "run_stats", fail)
    r = CliRunner().invoke(app, ["stats", str(FIX / "corpus"), "--out", str(tmp_path / "o"),
                                 "--master", "spark://10.0.0.9:7077"])
    assert r.exit_code == 2, r.output
    first = str(err).splitlines()[0]
    assert f"Spark failed on master spark://10.0.0.9:7077: {type(err).__name__}: {first}" \
        in " ".join(r.output.split())


def test_cli_other_errors_are_not_hidden(tmp_path, monkeypatch):
    import spark_trace_analysis.jobs as jobs

    def fail(*_a, **_k):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(jobs, "run_stats", fail)
    r = CliRunner().invoke(app, ["stats", str(FIX / "corpus"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and isinstance(r.exception, ZeroDivisionError)


def test_cli_exits_2_on_a_real_spark_error(tmp_path):
    """A local master URL Spark cannot parse fails in the JVM (a Py4JJavaError)."""
    from spark_trace_analysis.session import stop_session
    try:
        r = CliRunner().invoke(app, ["stats", str(FIX / "corpus"), "--out", str(tmp_path / "o"),
                                     "--master", "local[two]"])
    finally:
        stop_session()
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert "Spark failed on master local[two]: Py4JJavaError:" in out
    assert "Could not parse Master URL: 'local[two]'" in out
    assert not (tmp_path / "o").exists()


def test_cli_summary_line_counts_bad_verdict_rows():
    from kraftcheck.commands.stats import summary_line
    s = {"traces": 3, "steps": 9, "bad_rows": 2, "verdicts": {"valid": 2, "invalid": 1}}
    assert summary_line(s) == "3 traces, 9 steps, 2 bad rows; invalid 1, valid 2"
    assert summary_line(dict(s, verdict_bad_rows=4)) == \
        "3 traces, 9 steps, 2 bad rows, 4 bad verdict rows; invalid 1, valid 2"


def test_driver_binds_to_loopback_only_for_loopback_masters():
    from spark_trace_analysis.session import driver_network, is_loopback_master
    pinned = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
              "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1"}
    for m in ("local[*]", "local", "local[2]", "spark://127.0.0.1:7077",
              "spark://localhost:7077,127.0.0.2:7078", "spark://[::1]:7077"):
        assert is_loopback_master(m), m
        assert driver_network(m, {}) == (pinned, {"SPARK_LOCAL_IP": "127.0.0.1"}), m
        assert driver_network(m, {"KRAFTCHECK_SPARK_DRIVER_HOST": "10.1.1.1"})[0] == pinned
    for m in ("spark://10.0.0.5:7077", "spark://spark-master.example:7077",
              "spark://127.0.0.1:7077,10.0.0.5:7077", "yarn", "k8s://https://127.0.0.1:6443"):
        assert not is_loopback_master(m), m
        assert driver_network(m, {}) == ({}, {}), m
        assert driver_network(m, {"KRAFTCHECK_SPARK_DRIVER_HOST": "10.1.1.1"}) == \
            ({"spark.driver.host": "10.1.1.1"}, {}), m


def test_trace_bounds_are_compared_as_paths():
    from kraftcore.paths import REPO_ROOT
    from spark_trace_analysis.coverage import bounds_file, bounds_match
    assert bounds_file(None) is None and bounds_file("null") is None
    assert bounds_file('{"constants":{"MaxEpoch":2},"file":"tlc_configs/a.cfg"}') == \
        "tlc_configs/a.cfg"
    assert bounds_file('{"constants":{}}') is None
    assert bounds_file("tlc_configs/a.cfg") == "tlc_configs/a.cfg"
    assert bounds_match("tlc_configs/a.cfg", str(REPO_ROOT / "tlc_configs" / "a.cfg")) == "same"
    assert bounds_match("./tlc_configs/x/../a.cfg", "tlc_configs/a.cfg") == "same"
    assert bounds_match("tlc_configs/b.cfg", "tlc_configs/a.cfg") == "different"
    assert bounds_match(None, "tlc_configs/a.cfg") == "unstated"
    assert bounds_match("tlc_configs/b.cfg", None) == "graph_unknown"


def test_fixture_files_are_what_make_fixtures_writes(tmp_path, monkeypatch):
    sys.path.insert(0, str(FIX))
    try:
        import make_fixtures
    finally:
        sys.path.remove(str(FIX))
    monkeypatch.setattr(make_fixtures, "HERE", tmp_path)
    make_fixtures.main()
    written = sorted(x.relative_to(tmp_path) for x in tmp_path.rglob("*") if x.is_file())
    kept = sorted(x.relative_to(FIX) for x in FIX.rglob("*")
                  if x.is_file() and x.name != "make_fixtures.py" and "__pycache__" not in x.parts)
    assert written == kept
    for p in sorted((FIX / "corpus").glob("*.jsonl")) + [FIX / "graph.dot", FIX / "graph.cfg",
                                                         FIX / "verdicts.jsonl"]:
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


def _bench():
    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        import bench_spark
    finally:
        sys.path.pop(0)
    return bench_spark


def test_benchmark_baseline_computes_the_fixture_statistics(tmp_path):
    """The single-process baseline of the benchmark on the fixture corpus: the values
    test_spark_stats.py expects from Spark (without a graph: form-only verdicts)."""
    import pyarrow.parquet as pq
    from spark_trace_analysis import schema
    b = _bench()
    assert (b.REQUIRED, b.TRACE_SCHEMA) == (schema.REQUIRED, schema.TRACE_SCHEMA)
    s = b.baseline(FIX / "corpus", tmp_path / "out")
    assert (s["traces"], s["steps"], s["lines"], s["bad_rows"]) == (8, 49, 66, 4)
    assert s["verdicts"] == {"unchecked": 6, "malformed": 2}
    m = {r["trace_id"]: (r["elections"], r["leaderless_ms"], r["truncations"],
                         r["truncated_records"], r["data_loss_events"])
         for r in pq.read_table(tmp_path / "out" / "metrics").to_pylist()}
    assert m == {"t-valid": (2, 470, 0, 0, 0), "t-trunc": (2, 310, 1, 1, 0),
                 "t-bug": (1, 30, 1, 1, 1), "t-nofooter": (0, 9, 0, 0, 0),
                 "t-elr": (0, 40, 0, 0, 0), "t-bad": (0, 20, 0, 0, 0),
                 "t-unknown": (1, 30, 0, 0, 0), "t-wide": (0, 30, 0, 0, 0)}
    el = sorted((r["trace_id"], r["latency_ms"])
                for r in pq.read_table(tmp_path / "out" / "election_latency").to_pylist())
    assert el == [("t-bug", 30), ("t-trunc", 70), ("t-trunc", 240), ("t-unknown", 30),
                  ("t-valid", 120), ("t-valid", 350)]
    t = {r["trace_id"]: r for r in pq.read_table(tmp_path / "out" / "traces").to_pylist()}
    assert t["t-bad"]["problems"] == ["steps are not 0..n", "footer step count differs",
                                      "has bad rows"]
    assert (t["t-unknown"]["complete"], t["t-unknown"]["unknown_actions"]) == (True, 1)
    assert (tmp_path / "out" / "report.html").read_text().count("data:image/png") >= 3


def test_benchmark_baseline_refuses_a_trace_split_over_files(tmp_path):
    b = _bench()
    lines = (FIX / "corpus" / "t-valid.jsonl").read_text().splitlines()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "c" / "b.jsonl").write_text(lines[3] + "\n")
    with pytest.raises(RuntimeError, match=r"b.jsonl:1: trace t-valid has a line after its "
                                           r"footer or in another file"):
        b.baseline(tmp_path / "c", tmp_path / "out")


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


# JSON the fast path must decode exactly as from_itf does, and JSON it must hand to from_itf:
# ITF tags, floats, null, big integers, empty objects, 1 vs true, deep nesting.
_JSON_LEAF = st.one_of(st.text(max_size=4), st.booleans(), st.integers(-3, 3),
                       st.sampled_from([2**53 - 1, 2**53, -(2**53), 10**20, 1.0, 2.5, None]))
_JSON = st.recursive(_JSON_LEAF, lambda kids: st.one_of(
    st.lists(kids, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "#set", "#tup", "#map", "#bigint", "é"]), kids,
                    max_size=3)), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["x", "y", "#set", "z"]), _JSON, min_size=1, max_size=3))
def test_fast_state_decoding_equals_from_itf(raw):
    """observe.decode_state (the Spark job's fast path over plain JSON) gives the state and
    fingerprint of make_fn/from_itf + fingerprint, or the same ValueError_."""
    try:
        want = make_fn((k, from_itf(v, f"state.{k}")) for k, v in raw.items())
        want_fp = fingerprint(want)
    except ValueError_ as e:
        with pytest.raises(ValueError_, match=re.escape(str(e))):
            decode_state(raw)
        return
    got, fp = decode_state(raw)
    assert (got, fp) == (want, want_fp)
    assert type(got) is type(want)


def test_fast_state_decoding_of_nested_and_empty_values():
    deep: object = 1
    for _ in range(150):
        deep = [deep]
    for raw in ({"x": {}}, {"x": {"a": {}, "b": []}}, {"x": deep}, {"x": {"n1": [{"e": 1}]}}):
        want = make_fn((k, from_itf(v)) for k, v in raw.items())
        assert decode_state(raw) == (want, fingerprint(want))


# KRaft-shaped states, well-formed or not, for the plain-JSON fast path of observe._state_info
_NODES = st.sampled_from(["n1", "n2", "n3"])
_KRAFT_LEAF = st.one_of(st.sampled_from(["Leader", "Follower", "Nil"]), st.integers(0, 4),
                        st.lists(st.one_of(st.integers(0, 3), st.fixed_dictionaries(
                            {"epoch": st.integers(1, 3), "value": st.integers(0, 9)})),
                            max_size=3))
_KRAFT_VAR = st.one_of(st.dictionaries(_NODES, _KRAFT_LEAF, min_size=1, max_size=3),
                       st.lists(_KRAFT_LEAF, max_size=2), _JSON)


@settings(max_examples=500, deadline=None)
@given(st.fixed_dictionaries({"role": _KRAFT_VAR, "currentEpoch": _KRAFT_VAR,
                              "log": _KRAFT_VAR},
                             optional={"highWatermark": _KRAFT_VAR, "hwm": _KRAFT_VAR,
                                       "x": _JSON}))
def test_plain_kraft_fast_path_equals_decode_and_observe(raw):
    """observe._state_info reads a plain KRaft state's fingerprint and observation from the
    JSON itself; it must give what decode_state + observe give (or the same error)."""
    from spark_trace_analysis import observe as ob
    text = json.dumps(raw)
    try:
        state, fp = decode_state(raw)
    except ValueError_ as e:
        want = (None, f"bad ITF value: {e}", None)
    else:
        try:
            want = (fp, None, observe(state))
        except (KeyError, TypeError, ValueError, AttributeError):
            want = (fp, None, None)
    assert ob._state_info(text) == want


def test_a_state_whose_observed_variables_have_other_types_is_not_observed():
    """Arrow could not hold such an observation (the job would fail on one bad state): the
    state is fingerprinted, its observation is None, on the fast path and off it."""
    good = {"role": {"n1": "Leader"}, "currentEpoch": {"n1": 1}, "log": {"n1": [1]},
            "highWatermark": {"n1": 0}}
    assert state_info(json.dumps(good))[2]["hwm_lag"] == 1
    for var, bad in (("highWatermark", {"n1": "x"}), ("highWatermark", {"n1": [1]}),
                     ("currentEpoch", {"n1": True}), ("currentEpoch", {"n1": 2**64}),
                     ("highWatermark", {"n1": {"#bigint": str(2**70)}})):
        fp, err, obs = state_info(json.dumps(dict(good, **{var: bad})))
        assert fp is not None and err is None and obs is None, (var, bad)


def test_memory_settings_are_read_as_spark_writes_them():
    from spark_trace_analysis.session import memory_bytes
    assert [memory_bytes(t) for t in ("1g", "2G", "4096m", "512", "1.5g", "2gb", "x")] == [
        2**30, 2**31, 2**32, 2**29, 3 * 2**29, 2**31, 2**30]


def test_a_stutter_must_claim_a_known_action():
    """As in the checker (trace_checker/partial.py): an unchanged state is a stutter only under
    an action name of the vocabulary."""
    states, init, edges = {"a", "b"}, {"a"}, {("a", "X", "b")}
    steps = [(0, "Init", "a"), (1, "Crash", "a"), (2, "X", "b")]
    assert lookup_verdict(steps, states, init, edges, frozenset({"Init", "X", "Crash"})) == \
        ("valid", None, None)
    made_up = [(0, "Init", "a"), (1, "FormatDisk", "a"), (2, "X", "b")]
    assert lookup_verdict(made_up, states, init, edges, frozenset({"Init", "X", "Crash"})) == \
        ("invalid", 1, "FormatDisk")


def test_spec_vocabulary_is_parsed_once_and_kept_under_the_spec_key(tmp_path, monkeypatch):
    """The spec's Next actions (the stats job's vocabulary) are what the linter reads from
    spec/, parsed once for the three protocol modules and then read from the work folder."""
    import kraftcore.speclint as speclint
    from kraftcore.paths import SPEC_DIR
    from spark_trace_analysis import vocabulary as v
    monkeypatch.setenv("KRAFTCHECK_WORK", str(tmp_path))
    modules = list(v.SPEC_MODULES.values())
    direct = {m: {a for r in speclint.lint_spec_dir(SPEC_DIR, modules) if r.module == m
                  for a in r.actions} for m in modules}
    assert all(direct.values()), direct
    v._spec_actions_cached.cache_clear()
    try:
        assert {m: v._spec_actions(m) for m in modules} == direct
        assert len(list((tmp_path / "spark" / "vocabulary").glob("*.json"))) == 1
        v._spec_actions_cached.cache_clear()     # a new process: the kept file serves
        monkeypatch.setattr(speclint, "lint_spec_dir",
                            lambda *a, **k: pytest.fail("the spec was parsed again"))
        assert {m: v._spec_actions(m) for m in modules} == direct
    finally:
        v._spec_actions_cached.cache_clear()


def test_small_inputs_run_without_adaptive_execution_and_large_ones_as_before(spark_local,
                                                                              monkeypatch):
    """issue 34: a small input's shuffles use at most 2 partitions and no adaptive execution;
    a large one keeps adaptive execution and one partition per 64 MiB (at least twice the
    cores); large_input_shuffles gives a small input the large settings for a block only.
    A small input runs without generated code, a large one with Spark's defaults."""
    from spark_trace_analysis.session import (LARGE_INPUT_CODEGEN, SMALL_INPUT_BYTES,
                                              SMALL_INPUT_CODEGEN, large_input_shuffles,
                                              size_shuffles)
    monkeypatch.delenv("KRAFTCHECK_SPARK_SHUFFLE_PARTITIONS", raising=False)
    spark = spark_local()
    conf = spark.conf
    cores = spark.sparkContext.defaultParallelism
    try:
        assert size_shuffles(spark, 25 * 2**20) == min(2, cores)
        assert conf.get("spark.sql.adaptive.enabled") == "false"
        assert conf.get("spark.sql.files.minPartitionNum") == str(min(2, cores))
        assert {k: conf.get(k) for k in SMALL_INPUT_CODEGEN} == {
            "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
        # interpreted, a query still runs (and gives what generated code gives)
        assert spark.range(5).selectExpr("sum(id * 2) AS s").first().s == 20
        with large_input_shuffles(spark, 25 * 2**20):
            assert conf.get("spark.sql.adaptive.enabled") == "true"
            assert conf.get("spark.sql.shuffle.partitions") == str(2 * cores)
        assert conf.get("spark.sql.adaptive.enabled") == "false"
        assert conf.get("spark.sql.shuffle.partitions") == str(min(2, cores))
        big = 10 * SMALL_INPUT_BYTES     # 2.5 GiB: 40 partitions of 64 MiB
        assert size_shuffles(spark, big) == max(2 * cores, 40)
        assert conf.get("spark.sql.adaptive.enabled") == "true"
        assert conf.get("spark.sql.files.minPartitionNum") == str(cores)
        assert {k: conf.get(k) for k in LARGE_INPUT_CODEGEN} == {
            "spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
        with large_input_shuffles(spark, big):   # already large: nothing changes
            assert conf.get("spark.sql.shuffle.partitions") == str(max(2 * cores, 40))
    finally:
        conf.set("spark.sql.adaptive.enabled", "true")
        conf.set("spark.sql.shuffle.partitions", "2")
        for k, v in LARGE_INPUT_CODEGEN.items():
            conf.set(k, v)


def test_local_frames_are_local_tables_read_without_a_job_of_python_tasks(spark_local):
    """issue 34: the rows the driver makes (a vocabulary, a summary) reach the plan as a local
    table (Arrow), not as a Python RDD whose rows Python workers produce again in every query;
    their values and types are the ones given, and a value of the wrong type is an error."""
    import pyarrow as pa

    from spark_trace_analysis.frames import local_frame
    spark = spark_local()
    schema = "protocol string, action string, n long, share double, ok boolean"
    rows = [("kraft", "Vote", 3, 0.5, True), ("elr", None, None, None, False)]
    df = local_frame(spark, rows, schema)
    assert df.schema.simpleString() == ("struct<protocol:string,action:string,n:bigint,"
                                        "share:double,ok:boolean>")
    assert [tuple(r) for r in df.collect()] == rows
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan and "ExistingRDD" not in plan, plan
    # the plan of a join with it broadcasts the local rows: no Python RDD anywhere
    joined = spark.range(2).crossJoin(df)
    assert "PythonRDD" not in joined._jdf.queryExecution().toRdd().toDebugString()
    assert joined.count() == 4
    empty = local_frame(spark, [], schema)
    assert empty.schema == df.schema and empty.count() == 0
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        local_frame(spark, [("kraft", "Vote", "three", 0.5, True)], schema)
    with pytest.raises(ValueError):
        local_frame(spark, [("kraft", "Vote")], schema)   # a row of the wrong width


def test_local_sessions_write_without_chmod_processes_or_checksum_files(spark_local, tmp_path):
    """issue 34: on a local master, file:// is NioLocalFileSystem (built by setup): Spark's
    writes get Hadoop's permissions (0755 folders, 0644 files under the 022 umask) set
    through java.nio, not by a chmod process each, and no .crc files; the table reads back."""
    import os
    import stat

    from spark_trace_analysis.session import LOCAL_FS_CLASS, local_fs_jar
    assert local_fs_jar() is not None, "scripts/setup.sh builds the jar into the venv"
    spark = spark_local()
    jvm = spark.sparkContext._jvm
    hconf = spark.sparkContext._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), hconf)
    assert fs.getClass().getName() == LOCAL_FS_CLASS
    out = tmp_path / "t"
    (spark.range(10).selectExpr("id", "id % 2 AS odd").repartition(2)
     .write.partitionBy("odd").parquet(str(out)))
    files = [p for p in out.rglob("*")]
    assert files and not [p for p in files if p.name.endswith(".crc")]
    assert sorted(r.id for r in spark.read.parquet(str(out)).collect()) == list(range(10))
    for p in files:
        mode = stat.S_IMODE(os.stat(p).st_mode)
        assert mode == (0o755 if p.is_dir() else 0o644), (p, oct(mode))
    # any mode Hadoop asks for, bit by bit
    f = tmp_path / "m"
    f.write_text("x")
    for m in (0o640, 0o750, 0o000, 0o777, 0o604):
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(f)),
                         jvm.org.apache.hadoop.fs.permission.FsPermission(m))
        assert stat.S_IMODE(os.stat(f).st_mode) == m
