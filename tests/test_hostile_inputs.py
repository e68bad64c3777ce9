"""No traceback on any input, and terminal output that prints exactly what it was given
(issue 10, items 4 and 5): hostile traces through `kraftcheck validate`, `export itf` and
`kraftcheck stats`, TLC output, dumps and cfg files with huge intervals or nesting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tla_values import TLAValueSyntaxError, parse_value
from kraftcore.tlc.cfg import CfgError, parse_cfg_text
from kraftcore.tlc.tool_output import ToolOutputReader
from kraftcore.values import ValueError_, from_itf
from trace_checker import corpus
from trace_checker.dot import read_dump
from trace_checker.graph import StateGraph
from trace_checker.traces import TraceMalformed, read_trace

FIX = REPO_ROOT / "tests/fixtures/traces"
GOOD = (FIX / "valid-request-grant.jsonl").read_text().splitlines()
GRAPH = StateGraph.from_dump(read_dump(FIX / "ticket-graph.dot"))

# (name, text of the first step's state line with "STATE" replaced, expected field/message)
BIG = "9" * 5000
HOSTILE = {
    "python-digit-limit": ('"ticket":{"n1":' + BIG + ',"n2":0}', "not readable JSON"),
    "bigint-digit-limit": ('"ticket":{"n1":{"#bigint":"' + BIG + '"},"n2":0}', "digits"),
    "nan": ('"ticket":{"n1":NaN,"n2":0}', "NaN is not JSON"),
    "infinity": ('"ticket":{"n1":-Infinity,"n2":0}', "-Infinity is not JSON"),
    "float": ('"ticket":{"n1":1.5,"n2":0}', "not an integer"),
    "deep": ('"ticket":' + "[" * 50000 + "]" * 50000, "nested too deeply"),
    "deep-itf": ('"ticket":' + '{"#tup":[' * 400 + "]}" * 400, "nested"),
    "duplicate-key": ('"ticket":{"n1":0,"n1":1}', "duplicate key"),
    "one-and-true": ('"ticket":{"#set":[1,true]}', "integer vs a Boolean"),
    "map-one-and-true": ('"ticket":{"#map":[[1,0],[true,0]]}', "integer vs a Boolean"),
    "map-duplicate": ('"ticket":{"#map":[[1,0],[1,1]]}', "listed twice"),
}


def _with_state(state_text: str) -> str:
    lines = list(GOOD)
    step = json.loads(lines[1])
    rest = json.dumps({k: v for k, v in step["state"].items() if k != "ticket"})[1:-1]
    lines[1] = lines[1].split('"state":')[0] + '"state":{' + state_text + "," + rest + '},' \
        + '"step":0,"time_ms":0,"trace_id":"valid-request-grant"}'
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_values_are_malformed_naming_the_line(name, tmp_path):
    text, why = HOSTILE[name]
    p = tmp_path / f"{name}.jsonl"
    p.write_text(_with_state(text))
    corpus._set_graph(GRAPH)
    r = corpus._check_in_graph(str(p))
    assert r["verdict"] == "malformed", r
    assert r["malformed"]["line"] == 2 and why in r["malformed"]["message"], r


def test_ints_beyond_tlc_range_and_nul_ids_and_odd_bytes(tmp_path):
    lines = [json.loads(x) for x in GOOD]
    for o in lines:
        o["trace_id"] = "id\x00with\x1b[2Jnul"
    (tmp_path / "nul.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    t = read_trace(tmp_path / "nul.jsonl")
    assert t.trace_id == "id\x00with\x1b[2Jnul"
    (tmp_path / "bytes.jsonl").write_bytes(GOOD[0].encode() + b"\n\xff\xfe{}\n")
    with pytest.raises(TraceMalformed, match="not UTF-8"):
        read_trace(tmp_path / "bytes.jsonl")


def test_tlc_values_with_huge_intervals_integers_or_nesting_are_errors():
    for text in ("1..99999999999", "-2147483648..2147483647", BIG, "{" * 5000 + "}" * 5000,
                 "<<" * 3000 + ">>" * 3000):
        with pytest.raises(TLAValueSyntaxError):
            parse_value(text)
    assert parse_value("1..3") == frozenset({1, 2, 3})
    with pytest.raises(CfgError):
        parse_cfg_text("CONSTANTS\n  S = 1..99999999999\n", "x.cfg")
    with pytest.raises(ValueError_):
        from_itf(json.loads('{"#set":[0,false]}'))


def test_tlc_output_with_a_hostile_state_is_an_error_not_a_crash():
    r = ToolOutputReader()
    for line in ["@!@!@STARTMSG 2217:4 @!@!@", "1: <Initial predicate>",
                 "/\\ x = 1..99999999999", "@!@!@ENDMSG 2217 @!@!@"]:
        r.feed(line + "\n")
    out = r.finish()
    assert out.status == "error" and any("unreadable counterexample" in e.message
                                         for e in out.errors)
    # a JVM that never started TLC: its own words are the error
    r = ToolOutputReader()
    for line in ["Invalid maximum heap size: -Xmxlots",
                 "Error: Could not create the Java Virtual Machine."]:
        r.feed(line + "\n")
    out = r.finish()
    assert out.status == "error" and "Invalid maximum heap size: -Xmxlots" in out.errors[-1].message


def test_a_dump_that_is_not_utf8_is_a_format_error(tmp_path):
    from trace_checker.dot import DotFormatError
    p = tmp_path / "g.dot"
    p.write_bytes(b'1 [label="/\\\\ x = \xff",style = filled]\n')
    with pytest.raises(DotFormatError, match="g.dot:1: not UTF-8"):
        read_dump(p)


# --------------------------------------------------------------------------- the CLI

def _run(*args, cwd=REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftcheck", *args], capture_output=True,
                          cwd=cwd, timeout=600, env={**os.environ, "COLUMNS": "400"})


@pytest.mark.tlc
def test_validate_prints_hostile_names_and_ids_escaped(tmp_path, tlc_toolchain):
    """File names with Rich markup, escape sequences and non-UTF-8 bytes, ids with NUL: the
    terminal gets them escaped (no markup applied, no raw ESC), and no traceback."""
    d = tmp_path / "c"
    d.mkdir()
    (d / "[bold red]boom.jsonl").write_text(_with_state(HOSTILE["nan"][0]))
    (d / "esc\x1b[2J.jsonl").write_text(_with_state(HOSTILE["nan"][0]))
    os.close(os.open(os.fsencode(str(d)) + b"/bad\xff.jsonl", os.O_CREAT | os.O_WRONLY))
    for name, _ in HOSTILE.items():
        (d / f"{name}.jsonl").write_text(_with_state(HOSTILE[name][0]))
    lines = [json.loads(x) for x in GOOD]
    lines[3]["state"]["ticket"]["n2"] = 2   # invalid: the diagnosis prints TLA+ values
    for o in lines:
        o["trace_id"] = "id\x00\x1b[31mred"
    (d / "invalid.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    r = _run("validate", str(d), "--graph", "ticket-graph", "--manifest", str(FIX))
    out, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 1, (out, err)
    assert "Traceback" not in err and "\x1b" not in out
    assert "[bold red]boom.jsonl" in out                # markup printed, not applied
    assert "esc\\x1b[2J.jsonl" in out and "bad\\xff.jsonl" in out
    assert "NaN is not JSON" in out and "nested deeper than 200 levels" in out
    assert max(len(x) for x in out.splitlines()) < 400      # errors name places briefly
    # the diagnosis is in TLA+ syntax, names the record / replica, no Python reprs
    assert "ticket[n2]: expected 1, observed 2" in out, out
    assert "Fn(" not in out and "frozenset" not in out
    j = _run("validate", str(d), "--graph", "ticket-graph", "--manifest", str(FIX), "--json")
    s = json.loads(j.stdout)
    assert s["counts"]["malformed"] == len(HOSTILE) + 3 and s["counts"]["invalid"] == 1


def test_export_itf_takes_folders_refuses_nan_and_exits_2(tmp_path):
    from refimpl.sim.runner import RunSpec, run_seeds
    corpus_dir = tmp_path / "corpus"
    run_seeds(RunSpec("kraft", [0, 1], "none", 5), corpus_dir)
    r = _run("export", "itf", str(corpus_dir), "--out", str(tmp_path / "itf"), "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["written"]) == 2
    good = next(corpus_dir.glob("*.jsonl")).read_text()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "nan.jsonl").write_text(good.replace('"time_ms":0', '"time_ms":NaN', 1))
    (bad / "huge.jsonl").write_text(good.replace('"time_ms":0', '"time_ms":' + BIG, 1))
    (bad / "deep.jsonl").write_text(good.replace('"params":{}', '"params":' + "[" * 9000
                                                 + "]" * 9000, 1))
    (bad / "nul.jsonl").write_text(good.replace('"trace_id":"', '"trace_id":"\\u0000', 1))
    (bad / "bytes.jsonl").write_bytes(good.encode()[:200] + b"\xff\n")
    r = _run("export", "itf", str(bad), str(tmp_path / "missing"), "--out",
             str(tmp_path / "itf2"), "--json")
    assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr
    errors = json.loads(r.stdout)["errors"]
    assert len(errors) == 6 and any("no such file" in e for e in errors)
    for f in (tmp_path / "itf2").glob("*") if (tmp_path / "itf2").exists() else ():
        assert "NaN" not in f.read_text() and "Infinity" not in f.read_text()
    r = _run("export", "itf", str(tmp_path / "itf"), "--out", str(tmp_path / "x"))
    assert r.returncode == 2      # a folder with no trace file


def test_spark_state_decoding_never_raises():
    from spark_trace_analysis.observe import state_info
    for text in ('{"x":' + BIG + "}", '{"x":NaN}', "[" * 100000, '{"x":{"#set":[1,true]}}',
                 '{"x":{"#bigint":"' + BIG + '"}}',
                 '{"x":1,"x":2}'):
        fp, err, _ = state_info(text)
        assert fp is None and err, text


@pytest.mark.xdist_group("spark")
def test_stats_turns_a_bad_file_into_bad_rows_and_keeps_the_good_traces(tmp_path, spark_local):
    from spark_trace_analysis.jobs import run_stats
    src = REPO_ROOT / "tests/fixtures/spark/corpus/t-valid.jsonl"
    d = tmp_path / "c"
    d.mkdir()
    (d / "t-valid.jsonl").write_bytes(src.read_bytes())
    lines = src.read_text().splitlines()
    hostile = [lines[0].replace('"t-valid"', '"t-hostile"')]
    for ln in lines[1:]:
        ln = ln.replace('"t-valid"', '"t-hostile"')
        # valid JSON for Spark; an integer beyond Python's digit limit for the ITF decoder
        hostile.append(ln.replace('"state":{', '"state":{"junk":{"#bigint":"' + BIG + '"},', 1))
    hostile.append('{"kind":"step","state":{"x":NaN}}')
    (d / "t-hostile.jsonl").write_bytes(("\n".join(hostile) + "\n").encode() + b"\xff\xfe\n")
    # in the shared local[2] session (tests/conftest.py)
    s = run_stats([str(d)], tmp_path / "out", master=spark_local().sparkContext.master)
    assert s["traces"] == 2 and s["bad_rows"] >= len(lines) - 1
    assert s["steps"] >= len(lines) - 2       # the good trace's steps are all counted
    assert (tmp_path / "out" / "report.html").is_file()


@pytest.mark.parametrize("params,field", [('{"node":{"id":"n1"}}', "params.node"),
                                          ('{"node":["n1"]}', "params.node"),
                                          ('"n1"', "params")])
def test_params_that_are_not_an_object_or_name_no_node_are_malformed(params, field, tmp_path):
    """An unhashable `params.node` crashed the liveness check and lost the whole corpus."""
    lines = list(GOOD)
    lines[2] = lines[2].replace('"params":{}', f'"params":{params}')
    p = tmp_path / "params.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceMalformed) as e:
        read_trace(p)
    assert e.value.line == 3 and e.value.field == field


def test_a_boolean_where_the_step_before_had_an_integer_is_a_new_value(tmp_path):
    """Python's True == 1 made the observer reuse the previous step's value: a state with
    TRUE where the spec has 1 was judged as the state before it (and the trace valid)."""
    lines = list(GOOD)
    assert '"ticket":{"n1":1,"n2":1}' in lines[3] and '"ticket":{"n1":1,"n2":1}' in lines[4]
    lines[4] = lines[4].replace('"ticket":{"n1":1,"n2":1}', '"ticket":{"n1":true,"n2":1}')
    p = tmp_path / "bool.jsonl"
    p.write_text("\n".join(lines) + "\n")
    corpus._set_graph(GRAPH)
    r = corpus._check_in_graph(str(p))
    assert r["verdict"] != "valid", r
