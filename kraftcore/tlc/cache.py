"""The TLC result cache: a finished TLC run's output, reused when nothing it depends on changed.

A key is a SHA-256 over everything that determines TLC's output: the staged model (every
module TLC may load and the config, names and contents: `runner.model_digest`), the TLC jar's
sha256, and the command line with the run's own folders left out (java, heap, workers,
-deadlock, -simulate/-depth/-seed ...).  Changing a spec module, the config, TLC or an option
gives a new key, so a stale result is never used (as the trace checker's graph cache,
trace_checker/cache.py).

An entry keeps TLC's output itself (the `-tool` log), never a parsed result: a hit is parsed
again by today's reader and judged against today's manifest entry, so a change of the reader
or of a pinned count is never hidden by the cache.  Only runs that ended with a verdict (ok,
violation, deadlock; TLC started, no TLC or JVM failure) are stored.

Used by `kraftcheck tlc suite`, `kraftcheck demo` and the test suite (tests/tlc_memo.py), so
one `make test` and a later `kraftcheck tlc suite --profile ci` run each config once.
KRAFTCHECK_TLC_CACHE=0 turns it off everywhere; `kraftcheck tlc suite --no-cache` for one run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from kraftcore.output import write_atomic
from kraftcore.paths import work_dir

FORMAT = 1


@dataclass(frozen=True)
class CachedRun:
    key: str
    log: str            # TLC's whole output, as the run's tlc.log held it
    returncode: int | None
    seconds: float      # the run's own wall-clock time
    created: float      # when it was stored (time.time())


def enabled() -> bool:
    """KRAFTCHECK_TLC_CACHE: 0, off, no or false turns the cache off (default on)."""
    return os.environ.get("KRAFTCHECK_TLC_CACHE", "1").strip().lower() not in (
        "0", "off", "no", "false")


def cache_dir() -> Path:
    d = work_dir() / "tlc-cache"
    d.mkdir(parents=True, exist_ok=True)
    return d


def result_key(model_digest: str, jar_sha256: str, command: list[str], run_dir: Path,
               jar_path: str) -> str:
    """The key of a run: its staged model's digest, the jar's hash and its command line
    with the run folder (scratch, metadir), the jar's path and `-dump FORMAT FILE` taken out
    (a run that dumps the state graph reports the same outcome: its result serves a plain
    run, e.g. the trace checker's graph build and the config's test)."""
    h = hashlib.sha256()
    h.update(f"tlc-result/{FORMAT}\0{model_digest}\0{jar_sha256}\0".encode())
    run = str(run_dir)
    args = iter(command)
    for arg in args:
        if arg == "-dump":
            next(args, None), next(args, None)
            continue
        if arg == jar_path:
            arg = "<jar>"
        h.update(arg.replace(run, "<run>").encode() + b"\0")
    return h.hexdigest()


def load(key: str) -> CachedRun | None:
    """The stored run of `key`, or None (none, or an unreadable entry: it is run again)."""
    p = cache_dir() / f"{key}.json.gz"
    try:
        d = json.loads(gzip.decompress(p.read_bytes()))
        if d.get("format") != FORMAT or d.get("key") != key or not isinstance(d.get("log"), str):
            return None
        return CachedRun(key=key, log=d["log"], returncode=d.get("returncode"),
                         seconds=float(d["seconds"]), created=float(d["created"]))
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


def store(run: CachedRun) -> Path:
    p = cache_dir() / f"{run.key}.json.gz"
    doc = {"format": FORMAT, "key": run.key, "returncode": run.returncode,
           "seconds": round(run.seconds, 3), "created": run.created, "log": run.log}
    write_atomic(p, gzip.compress(json.dumps(doc).encode("utf-8"), mtime=0))
    return p


# ---- run times: the order in which `kraftcheck tlc suite` starts its configs ------------------

_TIMES = "tlc-times.json"


def last_seconds() -> dict[str, float]:
    """The wall-clock seconds of each config's last TLC run (not of cache hits), by name: a
    suite running several configs at once starts the longest first, so a slow config with
    few states (a liveness config) does not start last and run alone at the end."""
    try:
        d = json.loads((work_dir() / _TIMES).read_text(encoding="utf-8"))
        return {k: float(v) for k, v in d.items() if isinstance(v, (int, float))}
    except (OSError, ValueError, AttributeError):
        return {}


def record_seconds(times: dict[str, float]) -> None:
    """Add these configs' run times to the record (the last run of a config wins)."""
    if times:
        write_atomic(work_dir() / _TIMES, json.dumps(
            last_seconds() | {k: round(v, 1) for k, v in times.items()}, indent=1,
            sort_keys=True) + "\n")
