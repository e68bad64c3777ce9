"""Running TLC on one manifest config and judging the outcome against its expectation."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kraftcore.locks import build_lock
from kraftcore.paths import SPEC_DIR, work_dir
from kraftcore.tlc import cache as result_cache
from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.java import C1_ONLY, toolchain
from kraftcore.tlc.manifest import ConfigEntry
from kraftcore.tlc.tool_output import Step, TLCError, TLCOutcome, ToolOutputReader

ProgressFn = Callable[[int, int, int], None]   # generated, distinct, queue


EC_GENERAL = 1000     # tlc2.output.EC.GENERAL


@dataclass
class TLCResult:
    name: str
    spec: str
    cfg: str
    profile: str
    mode: str
    status: str                 # ok | violation | deadlock | error | timeout
    violated: str | None
    expected: str
    as_expected: bool
    distinct_states: int | None
    generated_states: int | None
    depth: int | None
    seconds: float
    counterexample: list[Step] = field(default_factory=list)
    loop_back_to: int | None = None
    errors: list[TLCError] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    tlc_version: str | None = None
    command: list[str] = field(default_factory=list)
    log: str | None = None
    dump: str | None = None
    returncode: int | None = None
    system_errors: list[str] = field(default_factory=list)
    system_codes: list[int] = field(default_factory=list)
    # a run stopped before TLC ended (timeout): the last progress TLC reported, and the TLC
    # checkpoint kept to resume from (`kraftcheck tlc run NAME --recover CHECKPOINT`), if TLC
    # had written one (every `checkpoint_minutes`; TLC's default 30)
    progress_at_stop: dict | None = None
    checkpoint: str | None = None
    recovered_from: str | None = None
    # the outcome is TLC's output of an earlier identical run (kraftcore/tlc/cache.py): that
    # run's wall-clock seconds and when it was stored; `seconds` is this call's own time
    cached_from: dict | None = None

    def unavailable(self, evaluation_errors: bool = True) -> str | None:
        """Why TLC could not do its job at all (the JVM or TLC did not start: a bad heap
        setting, a junk jar; TLC ran out of memory or hit an internal error), in TLC's or the
        JVM's own words; None when TLC ran (whatever it found).

        evaluation_errors=False: TLC's GENERAL error (EC 1000, "TLC threw an unexpected
        exception ... probably caused by an error in the spec or model"), alone, does not
        count: it is what TLC says when evaluating the spec on a given state fails (a string
        compared with an integer), which the trace checker isolates to the states at fault."""
        if self.status == "timeout":
            return None
        why = "; ".join(e.message.strip() for e in self.errors[:3] if e.message.strip())
        if self.tlc_version is None:
            return (f"TLC did not start (exit code {self.returncode}): {why or 'no output'}"
                    f" (log {self.log})")
        codes = self.system_codes or [0] * len(self.system_errors)
        if self.system_errors and (evaluation_errors or any(c != EC_GENERAL for c in codes)):
            return f"TLC failed: {'; '.join(self.system_errors[:3])} (log {self.log})"
        return None

    def to_json(self, with_counterexample: bool = True) -> dict:
        d = {k: getattr(self, k) for k in (
            "name", "spec", "cfg", "profile", "mode", "status", "violated", "expected",
            "as_expected", "distinct_states", "generated_states", "depth", "seconds",
            "mismatches", "tlc_version", "log", "dump", "progress_at_stop", "checkpoint",
            "recovered_from", "cached_from")}
        d["seconds"] = round(self.seconds, 2)
        d["errors"] = [{"message": e.message, "module": e.module, "line": e.line,
                        "column": e.column} for e in self.errors]
        if with_counterexample:
            d["counterexample"] = [s.to_json() for s in self.counterexample]
            d["loop_back_to"] = self.loop_back_to
        else:
            d["counterexample_length"] = len(self.counterexample)
        return d


def _run_dir(name: str) -> Path:
    """The run's scratch folder, one per config and process (and thread): two processes
    checking the same config at once (a test worker building a graph while another runs the
    config, a user's suite beside `kraftcheck validate`) never share TLC's states/ or model/
    folders.  An
    earlier run's folder is reused, except one that kept a checkpoint (a stopped run, to be
    resumed): the new run then gets the next free `.N` suffix."""
    owner = f"{os.getpid()}" if threading.current_thread() is threading.main_thread() \
        else f"{os.getpid()}-{threading.get_native_id()}"    # and one per thread of a process
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name) + f".{owner}"
    base = work_dir() / "tlc"
    d, n = base / safe, 1
    while find_checkpoint(d / "meta") is not None:
        d, n = base / f"{safe}.{n}", n + 1
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def stage_model(entry: ConfigEntry, run_dir: Path) -> Path:
    """Copy the spec's modules and the config into run_dir/model and return the main module.

    TLC 2.15 resolves -config relative to the main module's folder, and writes scratch files
    next to what it runs; staging keeps both away from the source tree.  Module names and line
    numbers are unchanged, so errors and counterexamples still point into spec/.
    """
    model = run_dir / "model"
    model.mkdir()
    # spec/ first, then the module's own folder: a generated module (e.g. the trace checker's)
    # lives outside spec/ and EXTENDS spec modules.
    for folder in (SPEC_DIR, entry.module_path.parent):
        for tla in folder.glob("*.tla"):
            shutil.copy2(tla, model / tla.name)
    shutil.copy2(entry.cfg_path, model / f"{entry.name}.cfg")
    return model / entry.module_path.name


def workers_from_env() -> int | None:
    """KRAFTCHECK_TLC_WORKERS: the TLC workers of every run that does not ask for a number
    (the test suite sets 1 under pytest-xdist, so two TLC runs share the two cores)."""
    raw = os.environ.get("KRAFTCHECK_TLC_WORKERS", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"KRAFTCHECK_TLC_WORKERS must be a positive integer, got {raw!r}")
    return int(raw)


class RecoverError(ValueError):
    """A checkpoint that cannot be resumed (not one, or taken of other model files)."""


MODEL_DIGEST = "model.sha256"


def model_digest(model: Path) -> str:
    """SHA-256 over the staged model's files (names and contents, in name order): a
    checkpoint is resumed only with the very modules and config it was taken of."""
    h = hashlib.sha256()
    for f in sorted(model.iterdir()):
        if f.is_file():
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def find_checkpoint(*metas: Path) -> Path | None:
    """The folder of TLC's latest complete checkpoint under the given -metadir folders (TLC
    writes `*.chkpt` files into its one timestamped folder there), or None."""
    found = [d for meta in metas if meta.is_dir() for d in meta.iterdir()
             if d.is_dir() and any(d.glob("*.chkpt"))]
    return max(found, key=lambda d: d.stat().st_mtime) if found else None


def check_recover(entry: ConfigEntry, checkpoint: Path, model: Path) -> Path:
    """Fail closed unless `checkpoint` is a TLC checkpoint of this config's current model:
    a resumed run must explore the same state space it started, or its counts mean nothing."""
    checkpoint = Path(checkpoint).absolute()
    if not checkpoint.is_dir() or not any(checkpoint.glob("*.chkpt")):
        raise RecoverError(f"{checkpoint}: not a TLC checkpoint folder (no *.chkpt files)")
    digest = checkpoint.parent.parent / MODEL_DIGEST
    if not digest.is_file():
        raise RecoverError(f"{checkpoint}: no {MODEL_DIGEST} beside it: not a checkpoint kept "
                           "by `kraftcheck tlc run`")
    want = digest.read_text(encoding="utf-8").split()
    if len(want) != 2 or want[1] != entry.name:
        raise RecoverError(f"{checkpoint}: a checkpoint of {want[1] if len(want) == 2 else '?'}, "
                           f"not of {entry.name}")
    if want[0] != model_digest(model):
        raise RecoverError(f"{checkpoint}: the spec modules or the config of {entry.name} changed "
                           "since the checkpoint was taken; it cannot be resumed")
    return checkpoint


def build_command(entry: ConfigEntry, run_dir: Path, workers: int | None = None,
                  dump: Path | None = None, seed: int | None = None,
                  recover: Path | None = None, checkpoint_minutes: int | None = None
                  ) -> list[str]:
    tc = toolchain()
    module = stage_model(entry, run_dir)
    if recover is not None:
        recover = check_recover(entry, recover, module.parent)
    (run_dir / MODEL_DIGEST).write_text(f"{model_digest(module.parent)} {entry.name}\n",
                                        encoding="utf-8")
    tmp = run_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    heap = os.environ.get("KRAFTCHECK_TLC_HEAP", "4g")
    # C1 only for a small run (manifest.SMALL_RUN_STATES: C2's compilations cost more there)
    jit = [C1_ONLY] if entry.default_jit == "c1" else []
    cmd = [tc.java, "-XX:+UseParallelGC", *jit, f"-Xmx{heap}", f"-Djava.io.tmpdir={tmp}",
           "-cp", str(tc.jar), "tlc2.TLC", "-tool",
           "-workers", str(workers or workers_from_env() or entry.workers),
           "-config", f"{entry.name}.cfg", "-metadir", str(run_dir / "meta")]
    if checkpoint_minutes is not None:
        if checkpoint_minutes < 1:
            raise ValueError(f"checkpoint minutes must be at least 1, not {checkpoint_minutes}")
        cmd += ["-checkpoint", str(checkpoint_minutes)]
    if recover is not None:
        cmd += ["-recover", str(recover)]
    if not entry.check_deadlock:
        cmd.append("-deadlock")
    if entry.mode == "simulate":
        cmd += ["-simulate"] + ([f"num={entry.simulate_traces}"] if entry.simulate_traces else [])
        cmd += ["-depth", str(entry.simulate_depth)]
        cmd += ["-seed", str(seed if seed is not None else 0)]
    if dump is not None:
        cmd += ["-dump", "dot,actionlabels", str(dump)]
    cmd.append(module.name)
    return cmd


def judge(entry: ConfigEntry, out: TLCOutcome, status: str) -> tuple[bool, list[str]]:
    """Does the outcome match the manifest's expectation?  Returns (ok, reasons if not)."""
    why: list[str] = []
    if entry.expect == "ok":
        if status != "ok":
            why.append(f"expected ok, got {status}" + (f" ({out.violated})" if out.violated else ""))
        elif entry.mode == "bfs":
            if entry.distinct_states is not None and out.distinct_states != entry.distinct_states:
                why.append(f"distinct states {out.distinct_states} != expected {entry.distinct_states}")
            if entry.depth is not None and out.depth != entry.depth:
                why.append(f"depth {out.depth} != expected {entry.depth}")
    elif entry.expect == "deadlock":
        if status != "deadlock":
            why.append(f"expected a deadlock, got {status}")
    else:
        if status != "violation" or out.violated != entry.expect:
            got = out.violated or status
            why.append(f"expected violation of {entry.expect}, got {got}")
        elif entry.max_trace_length is not None and len(out.counterexample) > entry.max_trace_length:
            why.append(f"counterexample has {len(out.counterexample)} states, more than "
                       f"{entry.max_trace_length}")
    return not why, why


def judge_recovered(entry: ConfigEntry, out: TLCOutcome, status: str, ok: bool,
                    why: list[str]) -> tuple[bool, list[str]]:
    """The judgement of a run resumed with -recover.  Measured (README, "Resuming a long
    run"): TLC 2.15 explores states again after a recovery, so a resumed run's distinct count
    and depth are larger than an uninterrupted run's.  A pin can be neither confirmed nor
    refuted by it: with pinned counts an ok run is not as expected (fail closed)."""
    if status == "ok" and entry.mode == "bfs" and (
            entry.distinct_states is not None or entry.depth is not None):
        return False, [
            "resumed with -recover: TLC 2.15's counts after a recovery are not exact "
            f"({out.distinct_states} distinct, depth {out.depth}), so the pin "
            f"({entry.distinct_states} distinct, depth {entry.depth}) is not checked; no "
            "violation was found"]
    return ok, why


def run_config(entry: ConfigEntry, *, workers: int | None = None, timeout: float | None = None,
               progress: ProgressFn | None = None, dump: Path | None = None,
               seed: int | None = None, recover: Path | None = None,
               checkpoint_minutes: int | None = None, cache: bool = False) -> TLCResult:
    """Run TLC on `entry` and judge the result.  TLC's scratch files go to the work folder.

    cache: take TLC's output from the result cache (kraftcore/tlc/cache.py) when an identical
    run (same modules, config, jar and options) ended with a verdict before; only for a plain
    run (no dump, recover, checkpoint or timeout of the caller's).  Every run that ends with a
    verdict is stored (unless KRAFTCHECK_TLC_CACHE=0), whether or not it looked the cache up.

    recover: a checkpoint kept by an earlier run that was stopped (TLCResult.checkpoint):
    TLC resumes from it (`-recover`), after a check that the model is the same (RecoverError
    otherwise).  checkpoint_minutes: TLC's checkpoint interval (default 30).  A run stopped by
    its timeout keeps its last checkpoint and reports it; any other end removes it."""
    run_dir = _run_dir(entry.name)
    # TLC writes the dump as it explores: it goes to a temporary name, renamed only when TLC
    # ended on its own (so an interrupted run never leaves a partial dump under `dump`)
    dump_part = None
    if dump is not None:
        dump = Path(dump).absolute()
        dump_part = dump.with_name(f".{dump.name}.{os.getpid()}.part.dot")  # TLC adds .dot
    try:
        cmd = build_command(entry, run_dir, workers, dump_part, seed, recover, checkpoint_minutes)
    except (RecoverError, ValueError):
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    props = parse_cfg(entry.cfg_path).properties
    reader = ToolOutputReader(temporal_properties=props, source=entry.name, mode=entry.mode)
    log_path = run_dir / "tlc.log"
    limit = timeout if timeout is not None else entry.timeout_seconds
    t0 = time.monotonic()
    timed_out = False
    completed = False
    tc = toolchain()
    key = hit = None
    held = contextlib.ExitStack()
    if result_cache.enabled() and recover is None and checkpoint_minutes is None:
        digest = (run_dir / MODEL_DIGEST).read_text(encoding="utf-8").split()[0]
        key = result_cache.result_key(digest, tc.jar_sha256, cmd, run_dir, str(tc.jar))
        if cache and dump is None and timeout is None:
            hit = result_cache.load(key)
            if hit is None:
                # one run per key: a process asking for the same run meanwhile waits for
                # this one and takes its result from the cache (kraftcore/locks.py)
                held.enter_context(build_lock(result_cache.cache_dir() / f"{key}.lock"))
                hit = result_cache.load(key)
    try:
        if hit is not None:
            log_path.write_text(hit.log, encoding="utf-8")
            for line in hit.log.splitlines(keepends=True):
                reader.feed(line)
            proc = None
            completed = True
        else:
            proc = _run_tlc(cmd, run_dir, log_path, reader, limit, progress, dump_part)
            completed, timed_out = proc.completed, proc.timed_out
        returncode = hit.returncode if hit is not None else proc.returncode
        if dump_part is not None and dump is not None and dump_part.is_file():
            os.replace(dump_part, dump)
        seconds = time.monotonic() - t0
        out = reader.finish()
        status = "timeout" if timed_out else out.status or "error"
        if (key is not None and hit is None and completed
                and status in ("ok", "violation", "deadlock")
                and out.tlc_version is not None and not out.system_errors):
            result_cache.store(result_cache.CachedRun(
                key=key, log=log_path.read_text(encoding="utf-8", errors="backslashreplace"),
                returncode=returncode, seconds=seconds, created=time.time()))
    finally:
        held.close()
    return _finish(entry, run_dir, cmd, reader, out, status, seconds, returncode, log_path,
                   dump, recover, hit)


@dataclass
class _Proc:
    returncode: int | None
    completed: bool
    timed_out: bool


def _run_tlc(cmd: list[str], run_dir: Path, log_path: Path, reader: ToolOutputReader,
             limit: float, progress: ProgressFn | None, dump_part: Path | None) -> _Proc:
    """TLC itself: its output into the log and the reader, stopped after `limit` seconds."""
    timed_out = False
    completed = False
    # line-buffered: a long run's log shows TLC's progress as it comes, not at the end
    with open(log_path, "w", encoding="utf-8", errors="backslashreplace", buffering=1) as log:
        # TLC runs in its own process group: a terminal's Ctrl-C reaches kraftcheck only, and
        # kraftcheck stops the whole group (the JVM and anything it started) on every exit
        # path: normal end, timeout, KeyboardInterrupt, SIGTERM (see kraftcheck.cli).
        proc = timer = None
        killed = threading.Event()

        def _kill() -> None:
            killed.set()
            _kill_group(proc)

        try:
            with _signals_held():
                proc = subprocess.Popen(cmd, cwd=run_dir / "model", stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, bufsize=1,
                                        errors="backslashreplace", start_new_session=True)
            timer = threading.Timer(limit, _kill)
            timer.start()
            assert proc.stdout is not None
            last = None
            for line in proc.stdout:
                log.write(line)
                reader.feed(line)
                if progress and reader.progress is not None and reader.progress != last:
                    last = reader.progress
                    progress(*last)
            proc.wait()
            completed = True
        finally:
            if timer is not None:
                timer.cancel()
            timed_out = killed.is_set()
            if proc is not None:
                _kill_group(proc)
            if not completed or timed_out:
                # a dump TLC did not finish is never left where a later run could take it
                # for complete
                if dump_part is not None:
                    dump_part.unlink(missing_ok=True)
            if not completed and not timed_out:
                _discard_run(run_dir)
    return _Proc(returncode=proc.returncode, completed=completed, timed_out=timed_out)


def _finish(entry: ConfigEntry, run_dir: Path, cmd: list[str], reader: ToolOutputReader,
            out: TLCOutcome, status: str, seconds: float, returncode: int | None,
            log_path: Path, dump: Path | None, recover: Path | None,
            hit: result_cache.CachedRun | None) -> TLCResult:
    """Judge the outcome, keep or remove the checkpoint and scratch files, build the result."""
    if status == "timeout":
        out.errors = [e for e in out.errors if "stopped before" not in e.message]
    ok, why = judge(entry, out, status)
    if recover is not None:
        ok, why = judge_recovered(entry, out, status, ok, why)
    stopped_at = kept = None
    if status == "timeout":
        if reader.progress is not None:
            g, d, q = reader.progress
            stopped_at = {"generated": g, "distinct": d, "queue": q,
                          "depth": reader.progress_depth}
        # TLC checkpoints into the folder it resumed from, else under this run's -metadir
        where = [run_dir / "meta"] + ([Path(recover).absolute().parent] if recover else [])
        latest = find_checkpoint(*where)
        kept = str(latest) if latest else None
    if kept is None:
        shutil.rmtree(run_dir / "meta", ignore_errors=True)
        if recover is not None and status in ("ok", "violation", "deadlock"):
            # the resumed run ended with a verdict: the checkpoint it resumed from is spent
            # (after an error it stays, to be resumed again)
            shutil.rmtree(Path(recover).absolute(), ignore_errors=True)
    shutil.rmtree(run_dir / "model", ignore_errors=True)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    return TLCResult(
        name=entry.name, spec=entry.module, cfg=entry.cfg, profile=entry.profile, mode=entry.mode,
        status=status, violated=out.violated, expected=entry.expect, as_expected=ok,
        distinct_states=out.distinct_states, generated_states=out.generated_states,
        depth=out.depth, seconds=seconds, counterexample=out.counterexample,
        loop_back_to=out.loop_back_to, errors=out.errors, mismatches=why,
        tlc_version=out.tlc_version, command=cmd, log=str(log_path),
        dump=str(dump) if dump else None, returncode=returncode,
        system_errors=list(out.system_errors), system_codes=list(out.system_codes),
        progress_at_stop=stopped_at, checkpoint=kept,
        recovered_from=str(Path(recover).absolute()) if recover else None,
        cached_from=None if hit is None else {
            "seconds": round(hit.seconds, 2),
            "stored": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hit.created))})


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait while TLC's process is being started (main thread only): one
    that interrupted subprocess.Popen midway would leave the JVM running in its own process
    group with nobody to stop it.  A signal that came meanwhile is delivered right after, to
    the handler that was in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    old = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for s in got:
            signal.raise_signal(s)


def _discard_run(run_dir: Path) -> None:
    """A run stopped from outside (Ctrl-C, SIGTERM: the exception unwinds through here) leaves
    nothing in the work folder, its tlc.log included: no verdict came of it.  Only a checkpoint
    TLC had written is kept, with the model digest that lets `--recover` resume it."""
    if find_checkpoint(run_dir / "meta") is None:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    for name in ("model", "tmp"):
        shutil.rmtree(run_dir / name, ignore_errors=True)
    (run_dir / "tlc.log").unlink(missing_ok=True)


def _kill_group(proc: subprocess.Popen) -> None:
    """Stop TLC's process group (the JVM and its children) and reap the JVM."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
