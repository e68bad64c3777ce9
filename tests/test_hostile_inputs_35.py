"""Bad inputs and faults that crashed or misled (issue 35), one test per item: a full disk,
file names and bytes that are not UTF-8 in `kraftcheck stats`, `export itf` reading with
validate's reader, damaged TLC output, deep nesting through the TLC value parsers, a junk
tla2tools.jar, step lines without trace_id, header / footer field types, and an interrupted
TLC run's log."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcore.output import OutputError, write_atomic
from kraftcore.paths import REPO_ROOT
from kraftcore.tla_values import TLAValueSyntaxError
from kraftcore.tlc.tool_output import ToolOutputReader
from refimpl.trace.format import TraceFormatError, validate_lines
from refimpl.trace.format import read_trace as read_format
from refimpl.trace.itf import export_itf
from trace_checker.traces import TraceMalformed, read_trace

FIX = REPO_ROOT / "tests/fixtures/traces"
GOOD = FIX / "valid-request-grant.jsonl"
runner = CliRunner()


def _objs() -> list[dict]:
    return [json.loads(x) for x in GOOD.read_text().splitlines()]


def _write(path: Path, objs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n"
                            for o in objs))
    return path


# --------------------------------------------------------------------------- 1: a full disk

_FULL_DISK = textwrap.dedent("""
    import errno, os, sys
    def fsync(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    os.fsync = fsync
    sys.argv = ["kraftcheck"] + sys.argv[1:]
    from kraftcheck.cli import main
    main()
""")


def _on_full_disk(*args: str) -> subprocess.CompletedProcess:
    """kraftcheck with every fsync failing as on a full disk (ENOSPC)."""
    return subprocess.run([sys.executable, "-c", _FULL_DISK, *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "400"})


def test_simulate_on_a_full_disk_exits_2_naming_the_file(tmp_path):
    out = tmp_path / "sim"
    r = _on_full_disk("simulate", "--seeds", "0:1", "--steps", "20", "--out", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: cannot write ") and \
        str(out / "kraft-chaos-0.jsonl") in err[0] and "No space left on device" in err[0], err
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]   # no temporary left


def test_validate_out_on_a_full_disk_exits_2(tmp_path):
    bad = tmp_path / "in"
    bad.mkdir()
    (bad / "broken.jsonl").write_text("not json\n")
    r = _on_full_disk("validate", str(bad), "--out", str(tmp_path / "out"), "--json")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "No space left on device" in r.stderr
    assert "cannot write" in json.loads(r.stdout)["error"]
    assert not (tmp_path / "out").exists()


def test_write_atomic_names_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    p = tmp_path / "a.json"
    write_atomic(p, "old\n")

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OutputError) as e:
        write_atomic(p, "new\n")
    assert str(e.value) == f"cannot write {p}: No space left on device"
    assert e.value.errno == errno.ENOSPC and isinstance(e.value, OSError)
    assert p.read_text() == "old\n" and sorted(x.name for x in tmp_path.iterdir()) == ["a.json"]


# --------------------------------------------------------------------------- 2, 3: stats

@pytest.mark.xdist_group("spark")
def test_stats_reads_around_a_name_and_bytes_that_are_not_utf8(tmp_path, spark_local):
    """The ingest of `kraftcheck stats` (where both broke): a file whose name is not UTF-8 is
    a bad row with its name escaped, a line that is not UTF-8 is a bad row whose text pyarrow
    reads back, and the good trace is counted."""
    import pyarrow.parquet as pq

    from spark_trace_analysis import ingest
    src = REPO_ROOT / "tests/fixtures/spark/corpus/t-valid.jsonl"
    d = tmp_path / "c"
    d.mkdir()
    (d / "t-valid.jsonl").write_bytes(src.read_bytes())
    raw = src.read_bytes()
    (Path(os.fsdecode(bytes(d) + b"/bad-\xff-name.jsonl"))).write_bytes(
        raw.replace(b"t-valid", b"t-badname"))
    lines = raw.replace(b"t-valid", b"t-bytes").split(b"\n")
    lines[2] = lines[2].replace(b'"action":"', b'"action":"\xff\xfe\xc3(', 1)
    (d / "t-bytes.jsonl").write_bytes(b"\n".join(lines))
    files = ingest.expand_inputs([d])
    out = tmp_path / "out"
    # the shared local[2] session (tests/conftest.py)
    counts = ingest.ingest_traces(spark_local(), files, out, out / "_staging")
    bad = pq.read_table(out / "bad_rows").to_pylist()      # pyarrow reads it back
    named = [r for r in bad if r["reason"].startswith("file name is not UTF-8")]
    assert [r["file"] for r in named] == [str(d) + "/bad-\\xff-name.jsonl"], bad
    assert any(r["reason"] == "not UTF-8" and r["line"] == 3 and "\ufffd" in r["text"]
               for r in bad), bad
    for r in bad:
        for v in r.values():
            if isinstance(v, str):
                v.encode("utf-8")
    traces = {r["trace_id"]: r for r in pq.read_table(out / "traces").to_pylist()}
    assert set(traces) == {"t-valid", "t-bytes"} and traces["t-valid"]["complete"]
    assert counts["bad_rows"] == 2


# --------------------------------------------------------------------------- 4: export itf

def _state_edit(objs, var, value):
    objs[2]["state"][var] = value
    return objs


EXPORT_REFUSES = {
    "float": lambda o: _state_edit(o, "ticket", {"n1": 1.5, "n2": 0}),
    "map-key-twice": lambda o: _state_edit(o, "msgs", {"#map": [[1, 0], [1, 1]]}),
    "set-one-and-true": lambda o: _state_edit(o, "msgs", {"#set": [1, True]}),
    "unknown-tag": lambda o: _state_edit(o, "msgs", {"#unserializable": 3}),
    "step-without-trace-id": lambda o: [x if x.get("kind") != "step" or x["step"] != 1
                                        else {k: v for k, v in x.items() if k != "trace_id"}
                                        for x in o],
    "time-backwards": lambda o: [dict(x, time_ms=-5) if x.get("step") == 2 else x for x in o],
}


@pytest.mark.parametrize("name", sorted(EXPORT_REFUSES))
def test_export_refuses_what_validate_refuses(name, tmp_path):
    p = _write(tmp_path / f"{name}.jsonl", EXPORT_REFUSES[name](_objs()))
    with pytest.raises(TraceMalformed):
        t = read_trace(p)
        from trace_checker.codec import Codec
        from trace_checker.observe import Observer
        Observer(Codec(t.variables), intern=True).keys(t)
    with pytest.raises(TraceFormatError, match=f"{name}.jsonl:"):
        export_itf(p, tmp_path / "itf")
    r = runner.invoke(app, ["export", "itf", str(p), "--out", str(tmp_path / "itf")])
    assert r.exit_code == 2 and not (tmp_path / "itf").exists()


def test_export_accepts_what_validate_accepts_in_any_key_order(tmp_path):
    # validate's reader does not ask for canonical lines; nor does export
    p = tmp_path / "loose.jsonl"
    p.write_text("".join(json.dumps(o) + "\n" for o in _objs()))
    out = export_itf(p, tmp_path / "itf")
    doc = json.loads(out.read_text())
    assert len(doc["states"]) == len(_objs()) - 2


# --------------------------------------------------------------------------- 5: TLC output

def _msg(code, body, severity=0):
    return f"@!@!@STARTMSG {code}:{severity} @!@!@\n{body}\n@!@!@ENDMSG {code} @!@!@\n"


def _read(text, mode=None):
    r = ToolOutputReader(mode=mode)
    for line in text.splitlines(keepends=True):
        r.feed(line)
    return r.finish()


VERSION = _msg(2262, "TLC2 Version 2.15 of Day Month 20??")
VIOLATION = (_msg(2110, "Invariant [red]Inv[/red] is violated.", 1)
             + _msg(2121, "The behavior up to this point is:", 1)
             + _msg(2217, "1: <Initial predicate>\n/\\ x = 0", 4)
             + _msg(2186, "Finished in 1s"))


def test_a_huge_message_code_or_number_is_damage_not_a_crash():
    for text in (f"@!@!@STARTMSG {'9' * 5000}:1 @!@!@\nx\n@!@!@ENDMSG 2186 @!@!@\n",
                 _msg(2199, f"{'9' * 5000} states generated, 1 distinct states found, "
                            "0 states left on queue."),
                 _msg(1000, f"boom\nline {'9' * 5000}, col 1 to line 1, col 2 of module M", 1)):
        o = _read(VERSION + text + _msg(2193, "Model checking completed.") + _msg(2186, "F"))
        assert o.status == "error", o
        assert o.errors


def test_a_damaged_log_of_a_violating_run_is_never_ok():
    # the violation's start line lost: the counterexample remains, the verdict does not
    damaged = VERSION + VIOLATION.replace("@!@!@STARTMSG 2110:1 @!@!@\n", "", 1)
    o = _read(damaged)
    assert o.status == "error" and "damaged" in o.errors[-1].message, o
    # and without TLC's success message a bfs run is not ok, even with nothing else wrong
    o = _read(VERSION + _msg(2199, "1 states generated, 1 distinct states found, 0 states "
                                   "left on queue.") + _msg(2186, "Finished"), mode="bfs")
    assert o.status == "error" and "success message" in o.errors[0].message
    ok = _read(VERSION + _msg(2193, "Model checking completed. No error has been found.")
               + _msg(2186, "Finished"), mode="bfs")
    assert ok.status == "ok"
    # a simulation has no success message: finished and intact is ok
    sim = _read(VERSION + _msg(2188, "Running Random Simulation with seed 1")
                + _msg(2209, "Progress(-1) at x: 13 states generated") + _msg(2186, "Finished"))
    assert sim.status == "ok"
    # an ENDMSG of another message, or one that did not start
    for bad in (_msg(2185, "Starting").replace("ENDMSG 2185", "ENDMSG 2186"),
                "@!@!@ENDMSG 2193 @!@!@\n", "@!@!@STARTMSG 2193:0 @!@\n"):
        o = _read(VERSION + bad + _msg(2193, "Model checking completed.") + _msg(2186, "F"))
        assert o.status == "error", bad


def test_a_violated_name_is_printed_as_it_is_not_as_markup():
    from kraftcheck.tlc.report import print_result
    from kraftcore.tlc.runner import TLCResult
    o = _read(VERSION + VIOLATION)
    assert o.violated == "[red]Inv[/red]"
    r = TLCResult(name="c[bold]", spec="M", cfg="c", profile="ci", mode="bfs",
                  status=o.status, violated=o.violated, expected="[x]", as_expected=False,
                  distinct_states=None, generated_states=None, depth=None, seconds=0.0,
                  counterexample=o.counterexample)
    buf = io.StringIO()
    print_result(Console(file=buf, width=200), r)
    text = buf.getvalue()
    assert "violation [red]Inv[/red]" in text and "c[bold]:" in text and "(expected [x])" in text


# --------------------------------------------------------------------------- 6: deep nesting

def test_deep_nesting_is_a_clear_error_through_every_entry_point(tmp_path):
    from trace_checker.codec import TextParser, parse_texts
    from trace_checker.dot import read_dump
    from trace_checker.graph import GraphFormatError, StateGraph
    deep = "<<" * 20000 + "1" + ">>" * 20000
    with pytest.raises(TLAValueSyntaxError, match="nested deeper"):
        TextParser().parse(deep)
    with pytest.raises(ValueError, match="nested deeper"):
        parse_texts([deep])
    dot = tmp_path / "g.dot"
    dot.write_text(f'strict digraph D {{\n1 [label="/\\\\ x = {deep}",style = filled]\n}}\n')
    with pytest.raises(GraphFormatError, match="nested deeper"):
        StateGraph.from_dump(read_dump(dot))


# --------------------------------------------------------------------------- 7

@pytest.mark.tlc
def test_a_junk_or_empty_jar_is_exit_2_from_tlc_run(tmp_path, tlc_toolchain):
    for content in (b"", b"not a jar"):
        jar = tmp_path / "tla2tools.jar"
        jar.write_bytes(content)
        r = subprocess.run([sys.executable, "-m", "kraftcheck", "tlc", "run", "kraft-graph-small",
                            "--json"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "KRAFTCHECK_TLA2TOOLS": str(jar),
                                "KRAFTCHECK_TLC_CACHE": "0",
                                "KRAFTCHECK_WORK": str(tmp_path / "work")})
        assert r.returncode == 2, (content, r.stdout[-500:], r.stderr[-500:])
        assert json.loads(r.stdout)["tlc_version"] is None


def test_a_step_line_without_trace_id_is_refused_everywhere(tmp_path):
    objs = _objs()
    del objs[1]["trace_id"]
    p = _write(tmp_path / "t.jsonl", objs)
    with pytest.raises(TraceMalformed) as e:
        read_trace(p)
    assert (e.value.line, e.value.field, e.value.message) == (2, "trace_id", "missing")
    with pytest.raises(TraceFormatError, match="trace_id"):
        read_format(p)
    assert any("trace_id" in x for x in validate_lines(p.read_text().splitlines()))


FIELDS = [
    (0, "seed", None), (0, "seed", 1.5), (0, "seed", "7"), (0, "seed", True),
    (0, "fault_profile", None), (0, "fault_profile", 3),
    (-1, "end_reason", None), (-1, "end_reason", 0),
    (-1, "invariants", None), (-1, "invariants", []), (-1, "invariants", {"Inv": "maybe"}),
    (-1, "violations", None), (-1, "violations", {}), (-1, "violations", [1]),
    (-1, "violations", [{"invariant": "Inv", "step": -1}]),
    (-1, "violations", [{"invariant": 7, "step": 0}]),
    (-1, "actions", 1.5), (-1, "actions", -1), (-1, "trace_id", None),
]


@pytest.mark.parametrize("index,field,value", FIELDS)
def test_header_and_footer_fields_of_a_wrong_type_are_refused(index, field, value, tmp_path):
    objs = _objs()
    if value is None:
        del objs[index][field]
    else:
        objs[index][field] = value
    p = _write(tmp_path / "t.jsonl", objs)
    with pytest.raises(TraceMalformed) as e:
        read_trace(p)
    assert e.value.field.split(".")[0].split("[")[0] == field, e.value
    with pytest.raises(TraceFormatError):
        read_format(p)
    assert validate_lines(p.read_text().splitlines())


def test_an_interrupted_tlc_run_leaves_no_log_in_the_work_folder(tmp_path):
    from kraftcore.tlc import runner
    run_dir = tmp_path / "tlc" / "x.1"
    (run_dir / "model").mkdir(parents=True)

    class Interrupted(ToolOutputReader):
        def feed(self, line):
            raise KeyboardInterrupt     # Ctrl-C (SIGTERM unwinds the same way: SystemExit)

    cmd = [sys.executable, "-c", "import time; print('TLC', flush=True); time.sleep(60)"]
    with pytest.raises(KeyboardInterrupt):
        runner._run_tlc(cmd, run_dir, run_dir / "tlc.log", Interrupted(), 120, None, None)
    assert not run_dir.exists()
