"""Class-data sharing (CDS) archives for the project's short JVM runs: the Kafka raft harness
and the Spark driver (spark_trace_analysis/cds.py).

A JVM that runs for a second or two spends a good part of it loading, parsing and verifying
the same classes from the same jar every time.  A dynamic CDS archive (JDK 13+) holds those
classes as the JVM mapped them once; a JVM started with `-XX:SharedArchiveFile=ARCHIVE` maps
them instead.  Measured on this project's runs (2026-11-29, idle 2-core machine): a Kafka raft
harness `simulate` of one seed 1.4 -> 0.7 CPU s (the trace bytes the same).

TLC has none, though a small TLC run went 1.3 -> 1.0 CPU s with one: with an archive,
`elr-ci-liveness-rf2` (liveness, 16,374 states) did not finish in 150 s where it takes 44.9 s
without (the same machine, one after the other; in an earlier test run it had been normal),
about 48 states a second in the test run that showed it.  Not understood; not used for TLC.

Each archive is made once per machine and user, in $KRAFTCHECK_CDS_DIR (default
$XDG_CACHE_HOME/kraftcheck/jvm-cds, i.e. ~/.cache/kraftcheck/jvm-cds; not the work folder,
which tests and users point at scratch folders, since an archive depends on the JDK and the
jars only), by a training run of its own (`ensure`): the JVM writes the archive at its exit
under a temporary name, and only a training run that exited by itself (not by a signal) with an
archive is renamed into place, so no run ever maps a half-written archive.  A process that
finds another one training (the lock is taken) does not wait: its JVM runs without the archive.
A failed training is remembered (a `.failed` marker under the same key): it is not tried again
for that key.  Each training removes the files of other keys of its kind not touched for
PRUNE_DAYS (archives of a JDK or jar since replaced, keys of the scratch java wrappers tests
make), so the folder does not grow without end.

The archive's name holds a key of the java binary (its resolved path, size and mtime) and of
the jars (path, size, mtime): another JDK or a rebuilt jar gets an archive of its own.  The
JVM checks the archive itself too (its own build, the class path) and ignores one that does not
match; the flags `-Xlog:cds=off -Xlog:cds+dynamic=off` keep it from saying so on stdout,
where the harness's output is read.

KRAFTCHECK_JVM_CDS=0 turns the archives off (no training, no flags).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kraftcore.locks import try_lock

__all__ = ["ENV", "DIR_ENV", "QUIET", "archive_dir", "archive_path", "enabled", "ensure",
           "use_flags"]

ENV = "KRAFTCHECK_JVM_CDS"
DIR_ENV = "KRAFTCHECK_CDS_DIR"
# a JVM that cannot use the archive (another build, another class path) runs without it, silently
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
TRAIN_TIMEOUT_S = 120
PRUNE_DAYS = 7


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def archive_dir() -> Path:
    d = os.environ.get(DIR_ENV)
    if d:
        return Path(d).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kraftcheck" / "jvm-cds"


def _stat_key(p: Path) -> str:
    r = p.resolve()
    st = r.stat()
    return f"{r}\0{st.st_size}\0{st.st_mtime_ns}\0"


def archive_path(name: str, java: str, jars: Sequence[Path]) -> Path | None:
    """Where the archive of JVM kind `name` (e.g. "tlc") for this java and these jars lives;
    None when there is no such place (a java or jar that does not exist, no home folder): the
    JVM then runs without an archive, and fails, if it does, with its own message."""
    try:
        h = hashlib.sha256(name.encode() + b"\0")
        h.update(_stat_key(Path(shutil.which(java) or java)).encode())
        for j in jars:
            h.update(_stat_key(Path(j)).encode())
        return archive_dir() / f"{name}-{h.hexdigest()[:20]}.jsa"
    except (OSError, RuntimeError):     # RuntimeError: Path.home() without a home
        return None


def use_flags(archive: Path | None) -> list[str]:
    """The flags that map `archive`, or none while it does not exist (or CDS is off)."""
    if not enabled() or archive is None or not archive.is_file():
        return []
    return [f"-XX:SharedArchiveFile={archive}", *QUIET]


def ensure(archive: Path | None, train: Callable[[list[str], Path], list[str]]) -> bool:
    """Make `archive` unless it exists: `train(flags, scratch)` returns a command (a JVM run of
    the same java and jars, with `flags` right after the java binary) to run in the empty
    folder `scratch`.  True when the archive exists afterwards.  Never raises for a training
    that fails: the JVMs then run without an archive."""
    if not enabled() or archive is None:
        return False
    try:
        return _ensure(archive, train)
    except OSError:          # no cache folder to write (read-only home, full disk): no archive
        return False


def _ensure(archive: Path, train: Callable[[list[str], Path], list[str]]) -> bool:
    if archive.is_file():
        return True
    failed = archive.with_suffix(".failed")
    if failed.exists():
        return False
    archive.parent.mkdir(parents=True, exist_ok=True)
    with try_lock(archive.with_suffix(".lock")) as got:
        if not got:                     # another process trains: this run goes without
            return False
        if archive.is_file():
            return True
        part = archive.with_name(f".{archive.name}.{os.getpid()}.part")
        with tempfile.TemporaryDirectory(prefix=f".{archive.stem}.", dir=archive.parent) as d:
            cmd = train([f"-XX:ArchiveClassesAtExit={part}", *QUIET], Path(d))
            signalled = False
            try:
                p = subprocess.run(cmd, cwd=d, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=TRAIN_TIMEOUT_S)
                # a JVM stopped by a signal may have left a partial archive: never used
                signalled = p.returncode < 0
                ok = not signalled and part.is_file() and part.stat().st_size > 0
                why = f"exit status {p.returncode}: {p.stderr.decode(errors='replace')[-500:]}"
            except (OSError, subprocess.TimeoutExpired) as e:
                ok, why = False, str(e)
            if ok:
                os.replace(part, archive)
            else:
                part.unlink(missing_ok=True)
                if not signalled:       # interrupted (Ctrl-C): the next run tries again
                    failed.write_text(f"{' '.join(cmd)}\n{why}\n", encoding="utf-8")
        _prune(archive)
        return ok


def _prune(archive: Path) -> None:
    """Remove the files of the other keys of `archive`'s kind untouched for PRUNE_DAYS."""
    kind = archive.stem.rsplit("-", 1)[0]
    cutoff = time.time() - PRUNE_DAYS * 86400
    for f in archive.parent.glob(f"{kind}-*"):
        if f.stem == archive.stem or f.stem.rsplit("-", 1)[0] != kind:
            continue
        try:
            if f.stat().st_mtime < cutoff:
                f.unlink()
        except OSError:
            pass
