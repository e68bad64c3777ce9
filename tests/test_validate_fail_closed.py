"""`kraftcheck validate` as a CI gate (issue 10, items 1-3): it fails closed when TLC cannot
run or nothing is judged, the user (never the trace) chooses the config a trace is judged
against, and one bad trace never stops the others."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.manifest import load_manifest
from trace_checker.corpus import CorpusError, resolve_base, validate_corpus
from trace_checker.traces import TraceMalformed, read_trace

FIX = REPO_ROOT / "tests/fixtures/traces"
GOOD = FIX / "valid-request-grant.jsonl"


def _lines(path: Path = GOOD) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write(path: Path, objs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o, sort_keys=True) + "\n" for o in objs))
    return path


def _variant(tmp: Path, name: str, header: dict | None = None, state_edit=None,
             raw_header: dict | None = None) -> Path:
    objs = _lines()
    objs[0] = raw_header if raw_header is not None else {**objs[0], **(header or {})}
    if state_edit is not None:
        for o in objs[1:-1]:
            state_edit(o["state"])
    return _write(tmp / f"{name}.jsonl", objs)


def _cli(*args: str, env: dict | None = None, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "kraftcheck", "validate", *args],
                          capture_output=True, text=True, cwd=cwd, env=e, timeout=900)


# --------------------------------------------------------------------------- item 1: fail closed

@pytest.mark.tlc
@pytest.mark.parametrize("case", ["heap", "junk-jar", "missing-jar"])
def test_tlc_that_cannot_run_exits_2_with_its_own_error(case, tmp_path, tlc_toolchain):
    env = {"KRAFTCHECK_WORK": str(tmp_path / "work")}
    if case == "heap":
        env["KRAFTCHECK_TLC_HEAP"] = "lots"
        want = "Invalid maximum heap size"
    elif case == "junk-jar":
        (tmp_path / "junk.jar").write_bytes(b"not a jar")
        env["KRAFTCHECK_TLA2TOOLS"] = str(tmp_path / "junk.jar")
        want = "tlc2.TLC"          # the JVM's own words: Could not find or load main class
    else:
        env["KRAFTCHECK_TLA2TOOLS"] = str(tmp_path / "no-such.jar")
        want = "does not name a file"
    r = _cli(str(GOOD), "--lazy", "--manifest", str(FIX), "--json", env=env)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert want in json.loads(r.stdout)["error"]


@pytest.mark.tlc
def test_out_of_memory_exits_2_with_tlcs_message(tmp_path, tlc_toolchain):
    """A JVM that starts TLC and runs out of memory (TLC's EC 1001), stood in for by a script
    printing TLC's own -tool messages: never out_of_scope with exit 0."""
    java = tmp_path / "java"
    java.write_text(f"""#!/bin/sh
if [ "$1" = "-version" ]; then echo 'openjdk version "17.0.1" 2021-10-19' >&2; exit 0; fi
cat <<'EOF'
@!@!@STARTMSG 2262:0 @!@!@
TLC2 Version 2.15 of Day Month 20??
@!@!@ENDMSG 2262 @!@!@
@!@!@STARTMSG 1001:1 @!@!@
Java ran out of memory.  Running Java with a larger max heap size (-Xmx) may help.
@!@!@ENDMSG 1001 @!@!@
EOF
exit 1
""")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    r = _cli(str(GOOD), "--lazy", "--manifest", str(FIX), "--json",
             env={"KRAFTCHECK_JAVA": str(java), "KRAFTCHECK_WORK": str(tmp_path / "work")})
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Java ran out of memory" in json.loads(r.stdout)["error"]


@pytest.mark.tlc
def test_a_relative_work_folder_still_judges(tmp_path, tlc_toolchain):
    r = _cli(str(GOOD), "--lazy", "--manifest", str(FIX), "--json",
             env={"KRAFTCHECK_WORK": "rel-work"}, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout, r.stderr)
    s = json.loads(r.stdout)
    assert s["counts"]["valid"] == 1 and s["steps_judged"] == 7
    assert (tmp_path / "rel-work").is_dir()


def test_a_path_with_no_trace_file_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("no traces here")
    for folder in ("empty", "other"):
        r = _cli(str(tmp_path / folder), "--json")
        assert r.returncode == 2 and "no trace file" in json.loads(r.stdout)["error"]
    with pytest.raises(CorpusError, match="no trace file"):
        validate_corpus([tmp_path / "empty"], lazy=True)
    r = _cli(str(GOOD), str(tmp_path / "empty"), "--json")
    assert r.returncode == 2


@pytest.mark.tlc
def test_out_of_scope_fails_the_run_unless_allowed(tmp_path, tlc_toolchain):
    """A trace using model values no config defines is out of scope: by default (and in CI)
    that fails the run; --max-out-of-scope N allows N; the summary says what was judged."""
    _variant(tmp_path, "alien", {"model_values": ["None", "n1", "n2", "n9"], "bounds": None})
    good = tmp_path / "good.jsonl"
    good.write_text(GOOD.read_text())
    r = _cli(str(tmp_path), "--lazy", "--manifest", str(FIX), "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 1 and not s["ok"]
    assert s["counts"] == {"valid": 1, "invalid": 0, "out_of_scope": 1, "malformed": 0}
    assert s["steps"] == 14 and s["steps_judged"] == 7 and s["max_out_of_scope"] == 0
    r = _cli(str(tmp_path), "--lazy", "--manifest", str(FIX), "--max-out-of-scope", "1")
    assert r.returncode == 0, r.stdout
    assert "14 steps (7 judged)" in r.stdout.replace("\n", " ")
    # nothing judged at all is never ok, whatever the limit
    r = _cli(str(tmp_path / "alien.jsonl"), "--lazy", "--manifest", str(FIX),
             "--max-out-of-scope", "5", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["steps_judged"] == 0


# --------------------------------------------------------------------------- item 2: who judges

KRAFT = load_manifest()


def _kraft_trace(tmp: Path, bounds, spec_module: str = "KRaft", protocol: str = "kraft"):
    h = {"kind": "header", "schema": "kraftcheck-trace/1", "trace_id": "t", "protocol": protocol,
         "spec_module": spec_module, "variables": ["x"], "model_values": [], "bounds": bounds,
         "bug": None, "seed": 0, "fault_profile": "none"}
    p = _write(tmp / "t.jsonl", [h, {"kind": "step", "trace_id": "t", "step": 0, "action": "Init",
                                     "time_ms": 0, "state": {"x": 1}},
                                 {"kind": "footer", "trace_id": "t", "steps": 0,
                                  "end_reason": "max_steps", "invariants": {}, "violations": []}])
    return read_trace(p)


@pytest.mark.parametrize("bounds,field,why", [
    ({"config": "kraft-bug-vote-not-persisted"}, "bounds.config", "bug or finding"),
    ({"config": "kraft-finding-accept-second-leader"}, "bounds.config", "bug or finding"),
    ("kraft-bug-no-current-epoch-rule", "bounds", "bug or finding"),
    ({"config": "elr-graph-small"}, "bounds.config", "not a config of the kraft manifest"),
    ({"config": "no-such-config"}, "bounds.config", "not a config of the kraft manifest"),
    ({"file": "tlc_configs/kraft-bug-vote-not-persisted.cfg"}, "bounds.file", "bug or finding"),
    ({"file": "../i10/tlc_configs/kraft-graph-small.cfg"}, "bounds.file", "(..)"),
    ("tlc_configs/../tlc_configs/kraft-graph-small.cfg", "bounds", "(..)"),
    ({"file": "/etc/passwd"}, "bounds.file", "absolute path"),
    ({"file": "spec/KRaft.cfg"}, "bounds.file", "not a config file of tlc_configs/"),
    ({"file": "tests/fixtures/traces/ticket-graph.cfg"}, "bounds.file", "not a config file"),
    ({"config": "kraft-graph-small", "file": "tlc_configs/kraft-ci-3voters.cfg"}, "bounds.file",
     "but bounds.config names"),
    ({"config": 7}, "bounds.config", "expected a config name"),
    (42, "bounds", "expected str/dict"),
])
def test_a_header_cannot_pick_its_judge(bounds, field, why, tmp_path):
    try:
        t = _kraft_trace(tmp_path, bounds)
        resolve_base(t, KRAFT)
    except TraceMalformed as e:
        assert e.field == field and why in e.message, e
    else:
        pytest.fail(f"bounds {bounds!r} was accepted")


def test_a_refused_file_is_never_read_or_echoed(tmp_path):
    secret = tmp_path / "secret.cfg"
    secret.write_text("CONSTANTS TopSecretValue = 1\n")
    for ref in (str(secret), os.path.relpath(secret, REPO_ROOT)):
        t = _kraft_trace(tmp_path, {"file": ref})
        with pytest.raises(TraceMalformed) as e:
            resolve_base(t, KRAFT)
        assert "TopSecretValue" not in str(e.value) and e.value.field == "bounds.file"


def test_the_spec_module_and_protocol_are_checked_against_the_manifest(tmp_path):
    with pytest.raises(TraceMalformed) as e:
        resolve_base(_kraft_trace(tmp_path, {"config": "kraft-graph-small"}, "ELR"), KRAFT)
    assert e.value.field == "spec_module"
    with pytest.raises(TraceMalformed) as e:
        resolve_base(_kraft_trace(tmp_path, None, "Evil"), KRAFT)
    assert e.value.field == "spec_module"
    with pytest.raises(TraceMalformed) as e:
        resolve_base(_kraft_trace(tmp_path, None, protocol="zab"), KRAFT)
    assert e.value.field == "protocol"


def test_configs_named_properly_are_used(tmp_path):
    for b in ({"config": "kraft-graph-small"}, "kraft-graph-small",
              "tlc_configs/kraft-graph-small.cfg",
              {"config": "kraft-graph-small", "file": "tlc_configs/kraft-graph-small.cfg",
               "constants": {}}):
        assert resolve_base(_kraft_trace(tmp_path, b), KRAFT).name == "kraft-graph-small"
    elr = _kraft_trace(tmp_path, {"config": "elr-deep-sim-rf3-long"}, "ELR", "elr")
    assert resolve_base(elr, KRAFT).name == "elr-deep-sim-rf3-long"


def test_the_simulator_names_its_bounds_config(tmp_path):
    from refimpl.sim.runner import RunSpec, run_seeds
    run_seeds(RunSpec("kraft", [0], "none", 5, str(REPO_ROOT / "tlc_configs/kraft-graph-small.cfg")),
              tmp_path)
    h = json.loads(next(tmp_path.glob("*.jsonl")).read_text().splitlines()[0])
    assert h["bounds"]["config"] == "kraft-graph-small"
    assert h["bounds"]["file"] == "tlc_configs/kraft-graph-small.cfg"


# --------------------------------------------------------------------------- items 2+3 end to end

@pytest.mark.tlc
def test_one_bad_trace_never_stops_the_others_and_the_user_wins(tmp_path, tlc_toolchain):
    """Neighbourhood mode over a corpus of one good trace and one of each kind of bad one:
    each bad one gets its own verdict, the good one is judged valid (old code: a header whose
    variables differ from the spec's took the whole run down with a traceback)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.jsonl").write_text(GOOD.read_text())
    _variant(corpus, "extra-variable", {"variables": ["holder", "msgs", "ticket", "x"]},
             lambda st: st.__setitem__("x", 0))
    _variant(corpus, "bounds-number", {"bounds": 42})
    _variant(corpus, "bounds-bug-config", {"bounds": "ticket-sym"})
    _variant(corpus, "bounds-absolute", {"bounds": "/etc/passwd"})
    _variant(corpus, "undecodable", state_edit=lambda st: st.__setitem__("msgs", {"#set": 3}))
    _variant(corpus, "huge-int", state_edit=lambda st: st.__setitem__(
        "ticket", {"n1": 2**40, "n2": 0}))
    s = validate_corpus([corpus], lazy=True, manifest_dir=FIX, max_out_of_scope=None)
    got = {Path(r["file"]).stem: r for r in s["results"]}
    assert {k: r["verdict"] for k, r in got.items()} == {
        "good": "valid", "extra-variable": "out_of_scope", "bounds-number": "malformed",
        "bounds-bug-config": "malformed", "bounds-absolute": "malformed",
        "undecodable": "malformed", "huge-int": "out_of_scope"}
    assert "not the variables of ticket-graph" in got["extra-variable"]["reason"]
    assert "32-bit" in got["huge-int"]["reason"]
    assert got["bounds-bug-config"]["malformed"]["field"] == "bounds"
    assert got["undecodable"]["malformed"]["field"] == "state.msgs"
    # the user's --config wins over the header: the bug-config trace is judged under it
    s = validate_corpus([corpus / "bounds-bug-config.jsonl", corpus / "bounds-absolute.jsonl"],
                        config="ticket-graph", manifest_dir=FIX)
    assert [r["verdict"] for r in s["results"]] == ["valid", "valid"] and s["ok"]


# --------------------------------------------------------------------------- item 7: concurrency

def test_two_simulate_runs_into_one_folder_refuse_or_both_appear(tmp_path):
    from refimpl.sim.runner import LOCK_NAME, FolderBusy, RunSpec, folder_lock as _folder_lock, run_seeds
    out = tmp_path / "corpus"
    run_seeds(RunSpec("kraft", [0, 1], "none", 5), out)
    run_seeds(RunSpec("kraft", [0], "chaos", 5), out)          # one after the other
    m = json.loads((out / "manifest.json").read_text())
    files = sorted(p.name for p in out.glob("*.jsonl"))
    assert sorted(t["file"] for t in m["traces"]) == files and len(files) == 3
    assert m["summary"]["traces"] == 3 and len(m["runs"]) == 2
    # at the same time: the second run is refused, and says why
    with _folder_lock(out):
        with pytest.raises(FolderBusy, match="another `kraftcheck simulate`"):
            run_seeds(RunSpec("kraft", [5], "none", 5), out)
        r = subprocess.run([sys.executable, "-m", "kraftcheck", "simulate", "--seeds", "7",
                            "--steps", "5", "--out", str(out)], capture_output=True, text=True,
                           cwd=REPO_ROOT, timeout=300)
        assert r.returncode == 2 and "another" in r.stderr
    assert not (out / "kraft-chaos-7.jsonl").exists() and (out / LOCK_NAME).exists()


@pytest.mark.tlc
def test_a_reused_out_holds_this_runs_diagnoses_only(tmp_path, tlc_toolchain):
    out = tmp_path / "out"
    bad = FIX / "invalid-double-grant.jsonl"
    s = validate_corpus([bad, FIX / "malformed-truncated.jsonl"], graph="ticket-graph",
                        manifest_dir=FIX, out=out)
    assert (out / "invalid-double-grant.jsonl.diagnosis.json").is_file()
    s = validate_corpus([FIX / "malformed-truncated.jsonl"], graph="ticket-graph",
                        manifest_dir=FIX, out=out)
    kept = sorted(p.name for p in out.iterdir())
    assert kept == ["malformed-truncated.jsonl", "malformed-truncated.jsonl.diagnosis.json",
                    "summary.json"]
    assert json.loads((out / "summary.json").read_text())["traces"] == 1
    # a folder that is not an earlier validate output is never wiped
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    r = _cli(str(bad), "--graph", "ticket-graph", "--manifest", str(FIX), "--out", str(other),
             "--json")
    assert r.returncode == 2 and (other / "notes.txt").read_text() == "keep me"
