"""Fail-closed command-line paths (docs/review-fail-closed-2026-11-24.md, F8, F9, F10, F13):
a config path that is not the manifest's file, an --out that would delete the inputs,
unreadable or special files in a corpus, a --bounds config of another protocol or module and
repeated seeds are refused or reported, never run or skipped silently.  None of these runs TLC:
every refusal happens before it, and the corpora hold malformed traces only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftcore.paths import CONFIG_DIR, REPO_ROOT
from kraftcore.tlc.manifest import ManifestError, find_entry
from trace_checker.corpus import collect_files
from trace_checker.fullgraph import resolve_entry

FIX = REPO_ROOT / "tests/fixtures/traces"
SMALL = CONFIG_DIR / "kraft-graph-small.cfg"


def _run(*args, cwd=REPO_ROOT, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftcheck", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "COLUMNS": "400"})


def _tree(d: Path) -> dict[str, bytes]:
    return {str(f.relative_to(d)): f.read_bytes() for f in sorted(d.rglob("*")) if f.is_file()}


# --------------------------------------------------------------------------- F8: tlc run PATH

def test_tlc_run_refuses_a_cfg_path_that_is_not_the_manifest_file(tmp_path):
    """F8: only the file name of the path was looked at, so another file of the same name (or
    none at all) ran tlc_configs/NAME.cfg and passed."""
    evil = tmp_path / "evil" / "kraft-graph-small.cfg"
    evil.parent.mkdir()
    evil.write_text(SMALL.read_text() + "\nINVARIANT NoSuchInvariantAtAll\n")
    r = _run("tlc", "run", evil, "--workers", "1", "--timeout", "60")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"{evil} is not a config of tlc_configs/" in r.stderr
    assert "give its name or tlc_configs/NAME.cfg" in r.stderr
    assert "PASS" not in r.stdout
    r = _run("tlc", "run", "/no/such/dir/kraft-graph-small.cfg", "--json")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "no such config file" in json.loads(r.stdout)["error"]


def test_find_entry_takes_a_name_or_the_manifest_file_by_any_path(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    link = tmp_path / "link.cfg"
    link.symlink_to(SMALL)
    for given in ("kraft-graph-small", "tlc_configs/kraft-graph-small.cfg", str(SMALL),
                  "tlc_configs/../tlc_configs/kraft-graph-small.cfg", str(link)):
        assert find_entry(given).name == "kraft-graph-small", given
    copy = tmp_path / "kraft-graph-small.cfg"
    copy.write_text(SMALL.read_text())
    for given in (str(copy), "kraft-graph-small.cfg", "elsewhere/kraft-graph-small.cfg"):
        with pytest.raises(ManifestError, match="tlc_configs/NAME.cfg"):
            find_entry(given)
    # validate --graph / --config take the same way: a missing path is not the manifest's
    with pytest.raises(ManifestError, match="no such config file"):
        resolve_entry("elsewhere/kraft-graph-small.cfg")
    assert resolve_entry(str(SMALL)).name == "kraft-graph-small"


# --------------------------------------------------------------------------- F9: --out = input

def _kept_folder(d: Path) -> None:
    """An earlier validate --out (it holds a validate summary.json) with two traces."""
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"mode": "neighbourhood", "counts": {},
                                                "results": []}))
    (d / "empty.jsonl").write_text("")
    (d / "truncated.jsonl").write_text((FIX / "malformed-truncated.jsonl").read_text())


@pytest.mark.parametrize("out", ["same", "same-dotted", "inside", "parent"])
def test_validate_refuses_an_out_that_is_holds_or_is_inside_an_input(out, tmp_path):
    """F9: --out is replaced whole by the run's failures; given the input folder, it deleted
    the input traces."""
    kept = tmp_path / "c" / "kept"
    _kept_folder(kept)
    before = _tree(tmp_path)
    target = {"same": kept, "same-dotted": kept / ".." / "kept", "inside": kept / "failing",
              "parent": tmp_path / "c"}[out]
    r = _run("validate", kept, "--lazy", "--out", target)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"--out {target}" in r.stderr
    assert {"same": "is the input path", "same-dotted": "is the input path",
            "inside": "is inside the input path", "parent": "contains the input path"}[out] \
        in r.stderr
    assert _tree(tmp_path) == before


def test_validate_refuses_an_out_holding_a_trace_given_by_symlink(tmp_path):
    kept = tmp_path / "kept"
    _kept_folder(kept)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "t.jsonl").symlink_to(kept / "empty.jsonl")
    before = _tree(tmp_path)
    r = _run("validate", corpus, "--lazy", "--out", kept)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "contains the input trace" in r.stderr
    assert _tree(tmp_path) == before
    # another folder is fine: the malformed trace is kept there
    r = _run("validate", corpus, "--lazy", "--out", tmp_path / "out")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert (tmp_path / "out" / "t.jsonl").is_file()
    assert _tree(kept) == {k[len("kept/"):]: v for k, v in before.items()
                           if k.startswith("kept/")}


# --------------------------------------------------------------------------- F10: odd files

def test_unreadable_trace_files_of_a_folder_are_listed_not_skipped(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "good.jsonl").write_text((FIX / "valid-request-grant.jsonl").read_text())
    (d / "missing.jsonl").symlink_to("/nonexistent/x.jsonl")
    (d / "self.jsonl").symlink_to("self.jsonl")
    (d / "sub.jsonl").mkdir()                      # a folder named like a trace is no trace
    assert collect_files([d], strict=True) == [str(d / n) for n in
                                               ("good.jsonl", "missing.jsonl", "self.jsonl")]


def test_validate_reports_dangling_and_looping_links_malformed(tmp_path):
    """F10: they were skipped silently (a folder of a good trace and two such links: 1 valid,
    exit 0); here the folder holds only them, so the run needs no TLC."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "missing.jsonl").symlink_to("/nonexistent/x.jsonl")
    (d / "self.jsonl").symlink_to("self.jsonl")
    r = _run("validate", d, "--lazy", "--json")
    assert r.returncode == 1, (r.stdout, r.stderr)
    s = json.loads(r.stdout)
    assert s["traces"] == 2 and s["counts"]["malformed"] == 2 and not s["ok"]
    messages = {Path(x["file"]).name: x["malformed"]["message"] for x in s["results"]}
    assert messages["missing.jsonl"].startswith("cannot read: ")
    assert messages["self.jsonl"].startswith("cannot read: ")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes")
def test_a_fifo_is_malformed_not_opened(tmp_path):
    """F10: reading a named pipe waited for ever.  Now it is malformed, given or found in a
    folder, without waiting on a writer, and the other traces are still judged."""
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "pipe.jsonl")
    os.mkfifo(tmp_path / "d" / "pipe.jsonl")
    (tmp_path / "d" / "truncated.jsonl").write_text((FIX / "malformed-truncated.jsonl").read_text())
    assert collect_files([tmp_path / "d"]) == [str(tmp_path / "d" / "pipe.jsonl"),
                                               str(tmp_path / "d" / "truncated.jsonl")]
    for given, n in ((tmp_path / "pipe.jsonl", 1), (tmp_path / "d", 2)):
        r = _run("validate", given, "--lazy", "--json", timeout=60)
        assert r.returncode == 1, (r.stdout, r.stderr)
        s = json.loads(r.stdout)
        assert s["traces"] == n and s["counts"]["malformed"] == n
        pipe = next(x for x in s["results"] if x["file"].endswith("pipe.jsonl"))
        assert pipe["malformed"]["message"] == "cannot read: not a regular file (a FIFO)"


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
def test_dev_null_given_directly_stays_malformed():
    r = _run("validate", "/dev/null", "--lazy", "--json", timeout=60)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert json.loads(r.stdout)["counts"]["malformed"] == 1


def test_the_same_file_given_twice_is_counted_once(tmp_path):
    """F10: de-duplication was by string, so a/b.jsonl and a/../a/b.jsonl were two traces."""
    a = tmp_path / "a"
    a.mkdir()
    (a / "b.jsonl").write_text("")
    twice = [a / "b.jsonl", a / ".." / "a" / "b.jsonl"]
    assert collect_files(twice + [a]) == [str(a / "b.jsonl")]
    r = _run("validate", *twice, "--lazy", "--json")
    assert r.returncode == 1, (r.stdout, r.stderr)
    s = json.loads(r.stdout)
    assert s["traces"] == 1 and s["counts"]["malformed"] == 1


# --------------------------------------------------------------------------- F13: simulate

@pytest.mark.parametrize("protocol,cfg,module", [
    ("elr", "kraft-graph-small", "MCKRaft"),
    ("reassign", "kraft-graph-small", "MCKRaft"),
    ("kraft", "kraft-ci-history", "MCKRaftHistory"),
    ("kraft", "elr-graph-small", "MCELR"),
])
def test_simulate_refuses_bounds_of_another_protocol_or_module(protocol, cfg, module, tmp_path):
    """F13: the run ignored the constants yet wrote them into the trace header as its bounds."""
    for bounds in (CONFIG_DIR / f"{cfg}.cfg", f"tlc_configs/{cfg}.cfg"):
        r = _run("simulate", "--protocol", protocol, "--seeds", "0", "--steps", "5",
                 "--bounds", bounds, "--out", tmp_path / "out")
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert f"config {cfg} (protocol " in r.stderr and f"module {module})" in r.stderr
        assert f"is not a config of protocol {protocol} /" in r.stderr
        assert not (tmp_path / "out").exists()


def test_simulate_takes_bounds_of_its_own_protocol_and_module(tmp_path):
    r = _run("simulate", "--protocol", "kraft", "--seeds", "0", "--steps", "5", "--faults",
             "none", "--bounds", "tlc_configs/kraft-graph-small.cfg", "--out", tmp_path / "k")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert len(list((tmp_path / "k").glob("*.jsonl"))) == 1


@pytest.mark.parametrize("seeds,again", [("0,0,0", "0"), ("0:3,2", "2"), ("1,2:4,4,1", "1, 4")])
def test_simulate_refuses_a_seed_given_twice(seeds, again, tmp_path):
    """F13 (minor): `--seeds 0,0,0` ran seed 0 three times into one file."""
    r = _run("simulate", "--seeds", seeds, "--steps", "5", "--out", tmp_path / "out")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"--seeds {seeds}: seed(s) {again} given more than once" in r.stderr
    assert not (tmp_path / "out").exists()
