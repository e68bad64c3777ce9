"""The code archive `kraftcheck stats` ships to the executors (spark_trace_analysis.code_archive):
every file of the project's packages the UDFs need, content-addressed, built once per code
version, byte-identical for the same sources, importable from the zip alone.  No Spark here;
tests/test_spark_cluster.py runs a job whose executors get the code only this way."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from spark_trace_analysis.code_archive import (PACKAGES, STALE_AFTER_S, code_archive,
                                               package_files)


def _pkg(root: Path, text: str) -> None:
    (root / "kc_probe_pkg" / "__pycache__").mkdir(parents=True, exist_ok=True)
    (root / "kc_probe_pkg" / "__init__.py").write_text(text)
    (root / "kc_probe_pkg" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"stale")


def test_archive_is_content_addressed_and_built_once(tmp_path, monkeypatch):
    src = tmp_path / "src"
    _pkg(src, "VALUE = 1\n")
    monkeypatch.syspath_prepend(str(src))
    out = tmp_path / "pyfiles"
    a = code_archive(("kc_probe_pkg",), out)
    assert a.parent == out and a.name.startswith("kraftcheck-code-") and a.suffix == ".zip"
    with zipfile.ZipFile(a) as z:
        assert z.namelist() == ["kc_probe_pkg/__init__.py"]          # no __pycache__
        assert z.read("kc_probe_pkg/__init__.py") == b"VALUE = 1\n"
    stamp = a.stat().st_mtime_ns
    os.utime(a, ns=(stamp - 10**9, stamp - 10**9))
    assert code_archive(("kc_probe_pkg",), out) == a                  # same code: reused,
    assert a.stat().st_mtime_ns == stamp - 10**9                      # not rewritten
    (src / "kc_probe_pkg" / "__init__.py").write_text("VALUE = 2\n")
    b = code_archive(("kc_probe_pkg",), out)
    assert b != a and b.is_file() and a.is_file()                     # a new version, new name
    # byte-identical when rebuilt elsewhere from the same sources
    assert code_archive(("kc_probe_pkg",), tmp_path / "again").read_bytes() == b.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == sorted([a.name, b.name])  # no temp files
    assert a.stat().st_mode & 0o777 == 0o644
    # an archive of another version is deleted once it is a day old, the current one never
    day_old = a.stat().st_mtime - STALE_AFTER_S - 60
    os.utime(a, (day_old, day_old))
    os.utime(b, (day_old, day_old))
    assert code_archive(("kc_probe_pkg",), out) == b
    assert sorted(p.name for p in out.iterdir()) == [b.name]


def test_archive_holds_what_the_udfs_import_and_imports_alone(tmp_path):
    names = {arc for arc, _ in package_files()}
    for mod in ("spark_trace_analysis/ingest.py", "spark_trace_analysis/graph.py",
                "spark_trace_analysis/observe.py", "spark_trace_analysis/schema.py",
                "spark_trace_analysis/fields.py", "spark_trace_analysis/vocabulary.py",
                "kraftcore/paths.py", "kraftcore/values.py", "kraftcore/tla_values.py",
                "refimpl/kraft/spec_mapping.py", "trace_checker/__init__.py"):
        assert mod in names, mod
    assert set(PACKAGES) == {"spark_trace_analysis", "kraftcore", "refimpl", "trace_checker"}
    assert not any(n.startswith("kraftcheck/") for n in names)      # the CLI stays home
    z = code_archive(folder=tmp_path)
    # a Python without site-packages (-S: no editable-install hook, no pyarrow) and outside the
    # repository imports the project's pure-Python value code from the zip alone
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import kraftcore.values as v; "
            "print(v.__file__); print(v.fingerprint(v.make_fn({'x': 1})))")
    r = subprocess.run([sys.executable, "-S", "-I", "-c", code, str(z)], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    where, fp = r.stdout.split()
    assert where == f"{z}/kraftcore/values.py"
    from kraftcore.values import fingerprint, make_fn
    assert fp == fingerprint(make_fn({"x": 1}))
