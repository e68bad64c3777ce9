"""Class-data sharing archives of the short JVM runs (kraftcore/jvm_cds.py): made once by a
training run, renamed into place only when the training JVM exited by itself, used silently,
never changing what a JVM computes.  (TLC has none: with one, elr-ci-liveness-rf2 ran more than
three times slower, kraftcore/jvm_cds.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftcore import jvm_cds
from kraftcore.locks import try_lock


@pytest.fixture
def cds_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cds"
    monkeypatch.setenv(jvm_cds.DIR_ENV, str(d))
    monkeypatch.delenv(jvm_cds.ENV, raising=False)
    return d


def test_the_harness_archive_is_trained_once_and_maps(cds_dir):
    from kafka_bridge.toolchain import find_harness
    h = find_harness("raft")
    flags = h.cds_flags()
    archive = jvm_cds.archive_path("kafka-harness-raft", h.java, [h.jar])
    assert archive.parent == cds_dir and archive.is_file()
    assert flags == [f"-XX:SharedArchiveFile={archive}", *jvm_cds.QUIET]
    made = archive.stat().st_mtime_ns
    assert h.cds_flags() == flags and archive.stat().st_mtime_ns == made   # not retrained
    # -Xshare:on fails instead of running without the archive: the JVM maps it
    p = subprocess.run([h.java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-jar",
                        str(h.jar), "version"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip(), p.stdout + p.stderr


def test_a_failed_training_is_remembered_and_never_used(cds_dir):
    archive = cds_dir / "x-1.jsa"
    calls = []

    def train(flags, d):
        calls.append(flags)
        return [sys.executable, "-c", "import sys; sys.exit(3)"]
    assert jvm_cds.ensure(archive, train) is False
    assert not archive.exists() and archive.with_suffix(".failed").is_file()
    assert "exit status 3" in archive.with_suffix(".failed").read_text()
    assert jvm_cds.ensure(archive, train) is False and len(calls) == 1   # not tried again
    assert jvm_cds.use_flags(archive) == []
    assert not list(cds_dir.glob(".*part"))


def test_a_training_stopped_by_a_signal_leaves_nothing_and_is_tried_again(cds_dir):
    archive = cds_dir / "x-2.jsa"

    def train(flags, d):
        part = flags[0].split("=", 1)[1]
        # writes a partial archive, then dies by SIGKILL
        return [sys.executable, "-c", f"import os, signal; open({part!r}, 'wb').write(b'x'); "
                "os.kill(os.getpid(), signal.SIGKILL)"]
    assert jvm_cds.ensure(archive, train) is False
    assert not archive.exists() and not archive.with_suffix(".failed").exists()
    assert not list(cds_dir.glob(".*part"))

    def good(flags, d):
        part = flags[0].split("=", 1)[1]
        return [sys.executable, "-c", f"open({part!r}, 'wb').write(b'archive')"]
    assert jvm_cds.ensure(archive, good) is True and archive.read_bytes() == b"archive"
    assert jvm_cds.use_flags(archive)[0] == f"-XX:SharedArchiveFile={archive}"


def test_a_process_finding_another_training_goes_without(cds_dir):
    archive = cds_dir / "x-3.jsa"
    cds_dir.mkdir(parents=True)
    with try_lock(archive.with_suffix(".lock")) as got:
        assert got
        r = subprocess.run(
            [sys.executable, "-c",
             "import sys; from pathlib import Path; from kraftcore import jvm_cds; "
             f"print(jvm_cds.ensure(Path({str(archive)!r}), lambda f, d: 1/0))"],
            capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "False", r.stderr
    assert not archive.exists() and not archive.with_suffix(".failed").exists()


def test_off_means_no_training_and_no_flags(cds_dir, monkeypatch):
    archive = cds_dir / "x-4.jsa"
    cds_dir.mkdir(parents=True)
    archive.write_bytes(b"archive")
    monkeypatch.setenv(jvm_cds.ENV, "0")
    assert jvm_cds.use_flags(archive) == []
    assert jvm_cds.ensure(cds_dir / "x-5.jsa", lambda f, d: 1 / 0) is False


def test_an_unwritable_cache_folder_means_no_archive(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("")
    monkeypatch.setenv(jvm_cds.DIR_ENV, str(f / "cds"))     # under a file: cannot be made
    archive = jvm_cds.archive_path("x", sys.executable, [])
    assert jvm_cds.ensure(archive, lambda fl, d: [sys.executable, "-c", "pass"]) is False
    assert jvm_cds.use_flags(archive) == []


def test_the_kafka_harness_writes_the_same_traces_with_and_without_the_archive(
        cds_dir, monkeypatch, tmp_path):
    from kafka_bridge.toolchain import find_harness, run_harness
    h = find_harness("raft")
    outs = {}
    for on in ("1", "0"):
        monkeypatch.setenv(jvm_cds.ENV, on)
        cmd = h.command("version")
        assert (f"-XX:SharedArchiveFile=" in " ".join(cmd)) == (on == "1")
        out = tmp_path / f"out-{on}"
        run_harness(h, "simulate", ["--seeds", "1,2", "--faults", "chaos", "--steps", "200",
                                    "--out", str(out)])
        outs[on] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert outs["1"] == outs["0"] and len(outs["1"]) >= 2
    assert any(cds_dir.glob("kafka-harness-raft-*.jsa"))


# ------------------------------------------------------------------ the Spark driver's archive

def test_the_spark_driver_maps_its_archive_or_starts_its_training(cds_dir, monkeypatch):
    from spark_trace_analysis import cds
    started = []
    monkeypatch.setattr(cds, "start_training", lambda: started.append(1))
    monkeypatch.delenv(cds.TRAINING_ENV, raising=False)
    monkeypatch.setenv(cds.AUTO_TRAIN_ENV, "1")
    a = cds.archive()
    assert a.parent == cds_dir and a.name.startswith("spark-driver-")
    assert cds.driver_flags() == [] and started == [1]           # none yet: trained aside
    monkeypatch.setenv(cds.AUTO_TRAIN_ENV, "0")
    assert cds.driver_flags() == [] and started == [1]           # the tests never train
    cds_dir.mkdir(parents=True, exist_ok=True)
    a.write_bytes(b"archive")
    assert cds.driver_flags() == [f"-XX:SharedArchiveFile={a}", *jvm_cds.QUIET]
    monkeypatch.setenv(jvm_cds.ENV, "0")
    assert cds.driver_flags() == []
    monkeypatch.setenv(jvm_cds.ENV, "1")
    # the training's own job: its options only, no archive mapped, no training started
    monkeypatch.setenv(cds.TRAINING_ENV, "1")
    monkeypatch.setenv(cds.TRAIN_OPTIONS_ENV, "-XX:ArchiveClassesAtExit=/x/y.jsa -Xlog:cds=off")
    assert cds.driver_flags() == ["-XX:ArchiveClassesAtExit=/x/y.jsa", "-Xlog:cds=off"]
    assert started == [1]
    # a failed training is not started again
    monkeypatch.delenv(cds.TRAINING_ENV)
    monkeypatch.setenv(cds.AUTO_TRAIN_ENV, "1")
    a.unlink()
    a.with_suffix(".failed").write_text("exit status 1\n")
    assert cds.driver_flags() == [] and started == [1]


@pytest.mark.deep
def test_the_spark_training_makes_an_archive_the_stats_job_maps(cds_dir, tmp_path):
    """The real training (a minute of CPU: deep), then a stats run on the fixture corpus with
    the archive mapped gives the summary of a run without it."""
    import json
    env = {**os.environ, jvm_cds.DIR_ENV: str(cds_dir), "KRAFTCHECK_WORK": str(tmp_path / "w")}
    p = subprocess.run([sys.executable, "-m", "spark_trace_analysis.cds", "train"], env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0 and "made" in p.stdout, p.stdout + p.stderr
    [archive] = cds_dir.glob("spark-driver-*.jsa")
    fix = Path(__file__).parent / "fixtures" / "spark"
    outs = {}
    for on in ("1", "0"):
        code = ("import json, sys; from spark_trace_analysis.jobs import run_stats; "
                f"s = run_stats([{str(fix / 'corpus')!r}], {str(tmp_path / on)!r}); "
                "print(json.dumps(s['traces']))")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=900, env={**env, jvm_cds.ENV: on,
                                             "KRAFTCHECK_SPARK_CDS_TRAIN": "0"})
        assert r.returncode == 0, r.stderr[-2000:]
        outs[on] = json.loads((tmp_path / on / "summary.json").read_text())
        for k in ("seconds", "out", "report"):
            outs[on].pop(k, None)
    assert outs["1"] == outs["0"]


def test_a_training_prunes_old_files_of_other_keys_of_its_kind(cds_dir):
    import time
    cds_dir.mkdir(parents=True)
    old = time.time() - (jvm_cds.PRUNE_DAYS + 1) * 86400
    stale = [cds_dir / "x-old1.jsa", cds_dir / "x-old1.lock", cds_dir / "x-old2.failed"]
    kept = [cds_dir / "x-new.jsa", cds_dir / "y-z-old.jsa", cds_dir / "x-y-old.jsa"]
    for f in stale + kept:
        f.write_bytes(b"a")
    for f in stale + kept[1:]:
        os.utime(f, (old, old))
    archive = cds_dir / "x-k.jsa"

    def good(flags, d):
        part = flags[0].split("=", 1)[1]
        return [sys.executable, "-c", f"open({part!r}, 'wb').write(b'archive')"]
    assert jvm_cds.ensure(archive, good)
    assert [f for f in stale if f.exists()] == []
    # recent files of its kind and old files of other kinds stay
    assert all(f.exists() for f in kept) and archive.is_file()


def test_no_java_or_no_home_means_no_archive_and_no_error(tmp_path, monkeypatch):
    """A java that does not exist (the JVM's own start fails later, with its own message) or no
    home folder to cache in: no key, no flags, no training, never an exception here."""
    from spark_trace_analysis import cds
    assert jvm_cds.archive_path("x", str(tmp_path / "no-java"), []) is None
    assert jvm_cds.use_flags(None) == [] and jvm_cds.ensure(None, lambda f, d: 1 / 0) is False
    monkeypatch.delenv(jvm_cds.DIR_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(
        RuntimeError("Could not determine home directory."))))
    assert jvm_cds.archive_path("x", sys.executable, []) is None
    monkeypatch.setattr(cds, "start_training", lambda: 1 / 0)
    monkeypatch.delenv(cds.TRAINING_ENV, raising=False)
    monkeypatch.setenv(cds.AUTO_TRAIN_ENV, "1")
    monkeypatch.delenv(jvm_cds.ENV, raising=False)
    assert cds.driver_flags() == []
