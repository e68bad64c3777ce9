"""The Spark driver JVM's class-data sharing archive (kraftcore/jvm_cds.py).

A stats job on a small input is mostly Spark's fixed cost, and a good part of that is the
driver JVM finding, reading and verifying classes in ~250 jars (on the demo corpus, 10 % of
the driver's samples were `JarFile.getEntry`).  With a CDS archive of the classes one stats
run loads, the JVM maps them instead: `kraftcheck demo --stage stats` on the demo corpus took
52.3 / 48.5 s without and 46.7 / 40.8 s with it (idle 2-core machine, 2026-11-29, two runs
each); every table the same (the archive changes how classes are loaded, never what runs).

The archive is trained once per java and pyspark jars (its name holds their key) by a run of
its own: `get_session` finding none starts the training in the background (a detached, niced
process: `python -m spark_trace_analysis.cds train`) and goes on without it; the training runs a
stats job on a short refimpl trace in a fresh driver JVM started with
`-XX:ArchiveClassesAtExit`, stops it, waits for the JVM's exit (the archive is written then)
and only then renames the archive into place (jvm_cds.ensure).  Later sessions map it.  The
training log is kept beside the archive (`spark-driver-*.log`).

KRAFTCHECK_JVM_CDS=0 turns it off, as for TLC and the Kafka harness.
KRAFTCHECK_SPARK_CDS_TRAIN=0 maps an archive that exists but never starts a training: the test
suite sets it (tests/conftest.py), since on a fresh machine the training's minute of CPU is
more than the few driver JVMs started after it would save.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kraftcore import jvm_cds

__all__ = ["archive", "driver_flags", "start_training"]

# set in the training's own job: its session neither maps an archive nor starts a training
TRAINING_ENV = "KRAFTCHECK_SPARK_CDS_TRAINING"
# the training job's extra driver JVM options (the archive's -XX:ArchiveClassesAtExit)
TRAIN_OPTIONS_ENV = "KRAFTCHECK_SPARK_CDS_TRAIN_OPTIONS"
# "0": never start a training (an archive that exists is still mapped)
AUTO_TRAIN_ENV = "KRAFTCHECK_SPARK_CDS_TRAIN"


def _java() -> str:
    """The java spark-class runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").is_file():
        return str(Path(home, "bin", "java"))
    return shutil.which("java") or "java"


def archive() -> Path | None:
    import pyspark
    from spark_trace_analysis.session import local_fs_jar
    jars = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("*.jar"))
    fs = local_fs_jar()    # on the driver's class path too (session.get_session)
    return jvm_cds.archive_path("spark-driver", _java(), jars + ([fs] if fs else []))


def driver_flags() -> list[str]:
    """The driver JVM's options for the archive: its flags when it exists (else none, and a
    training is started in the background); the training's own options in the training job."""
    if os.environ.get(TRAINING_ENV):
        return os.environ.get(TRAIN_OPTIONS_ENV, "").split()
    if not jvm_cds.enabled():
        return []
    a = archive()
    if a is None:               # no java to key it by, or no home folder: none
        return []
    flags = jvm_cds.use_flags(a)
    if (not flags and os.environ.get(AUTO_TRAIN_ENV, "1") != "0"
            and not a.with_suffix(".failed").exists()):
        start_training()
    return flags


def start_training() -> None:
    """Start `python -m spark_trace_analysis.cds train` detached and niced; never waits and
    never fails (no archive is only slower)."""
    a = archive()
    if a is None:
        return
    try:
        a.parent.mkdir(parents=True, exist_ok=True)
        log = open(a.with_suffix(".log"), "ab")
    except OSError:
        return
    with log:
        try:
            subprocess.Popen([sys.executable, "-m", "spark_trace_analysis.cds", "train"],
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             start_new_session=True, preexec_fn=lambda: os.nice(10),
                             env={k: v for k, v in os.environ.items()
                                  if not k.startswith("PYSPARK_GATEWAY")})
        except OSError:
            pass


def _train() -> int:
    a = archive()
    if a is None:
        print("spark driver CDS archive: no java or no cache folder to key it by", flush=True)
        return 1
    ok = jvm_cds.ensure(a, lambda flags, d: [sys.executable, "-m", "spark_trace_analysis.cds",
                                             "job", str(d), *flags])
    print(f"spark driver CDS archive {a}: {'made' if ok else 'not made'}", flush=True)
    return 0 if ok else 1


def _job(scratch: Path, options: list[str]) -> int:
    """The training workload: a stats job on two short refimpl traces, in a driver JVM started
    with `options`; returns once that JVM has exited (and written the archive).  Whatever goes
    wrong (the job fails, the JVM exits otherwise than by its stdin closing), the JVM's exit is
    still waited for and the archive it wrote removed, so jvm_cds.ensure never renames a
    half-written one into place: 0 only when the job and the JVM's exit were both clean."""
    os.environ[TRAINING_ENV] = "1"
    os.environ[TRAIN_OPTIONS_ENV] = " ".join(options)
    os.environ.setdefault("KRAFTCHECK_WORK", str(scratch / "work"))
    part = next((o.split("=", 1)[1] for o in options
                 if o.startswith("-XX:ArchiveClassesAtExit=")), None)
    done = False
    rc = None
    try:
        from refimpl.sim.corpus import simulate_corpus
        from spark_trace_analysis.jobs import run_stats
        corpus = scratch / "corpus"
        simulate_corpus(protocol="kraft", seeds=[1, 2], faults="chaos", steps=60, out=corpus)
        run_stats([str(corpus)], scratch / "stats")
        done = True
    finally:
        rc = _stop_driver_jvm()
        if not (done and rc == 0) and part:
            Path(part).unlink(missing_ok=True)
    return 0 if done and rc == 0 else 1


def _stop_driver_jvm() -> int | None:
    """Stop the session and its driver JVM (it exits when its stdin closes, writing the
    archive then); its exit status, or None when there was none or it had to be killed."""
    from pyspark import SparkContext

    from spark_trace_analysis.session import stop_session
    try:
        stop_session()
    except Exception:       # a broken session: the JVM is stopped below all the same
        pass
    gw = SparkContext._gateway
    proc = getattr(gw, "proc", None)
    if gw is not None:
        gw.shutdown()
    if proc is None:
        return None
    proc.stdin.close()
    try:
        return proc.wait(timeout=jvm_cds.TRAIN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def main(argv: list[str]) -> int:
    if argv[:1] == ["train"]:
        return _train()
    if argv[:1] == ["job"] and len(argv) >= 2:
        return _job(Path(argv[1]), argv[2:])
    print("usage: python -m spark_trace_analysis.cds train | job SCRATCH [JVM OPTIONS]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
