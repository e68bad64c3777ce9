"""The corpus driver: checks many trace files, in full-graph or neighbourhood mode.

Full-graph mode (`graph=CONFIG`): the graph index is built or loaded once; worker processes
(`jobs`) each load it once and check files independently.  A trace that fails in the graph is
not judged there: the bounded graph may lack the successor only because it lies beyond the
model's bounds, so all such traces are re-checked together in neighbourhood mode (one TLC run
for all of them) under the same config with the size bounds raised.  Hence a state beyond the
bounds is never reported as a bug, and a bug is never reported as "out of bounds".

Neighbourhood mode (`lazy=True`): traces are grouped by the config they refer to (the header's
`bounds` config, else the protocol's default ci config); per group the successors of every
distinct source state are computed in one TLC run (chunked), then each step is a lookup.
Partial traces need the successors of states nobody observed; they are expanded in rounds, one
TLC run per round for the whole group.

One malformed file never stops the others; failing traces are copied to `out` with a
`.diagnosis.json` next to them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kraftcheck.output import write_atomic
from kraftcheck.paths import CONFIG_DIR, REPO_ROOT, SPEC_DIR
from kraftcheck.tlc.cfg import CfgError, parse_cfg
from kraftcheck.tlc.manifest import ConfigEntry, ManifestError, load_manifest
from trace_checker.codec import Codec
from trace_checker.coverage import action_coverage, graph_coverage, spec_actions
from trace_checker.diagnose import diagnose
from trace_checker.fullgraph import load_graph, resolve_entry
from trace_checker.liveness import judge_liveness
from trace_checker.graph import StateGraph
from trace_checker.neighbourhood import (BOUND_PREFIX, Neighbourhood, NeighbourhoodError,
                                         TLCOutOfMemory, raised_constants)
from trace_checker.observe import Observer
from trace_checker.partial import TraceRun
from trace_checker.tlagen import Unwritable, value_size
from trace_checker.traces import Trace, TraceMalformed, read_trace
from trace_checker import verdict as V

__all__ = ["validate_corpus", "collect_files", "TRACE_SUFFIXES"]

TRACE_SUFFIXES = (".jsonl", ".ndjson", ".trace")
Progress = Callable[[int, int], None]


def collect_files(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Files given, plus every *.jsonl / *.ndjson / *.trace under the folders given."""
    out: list[str] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(str(f) for f in sorted(p.rglob("*"))
                       if f.is_file() and f.suffix in TRACE_SUFFIXES
                       and not f.name.endswith(".diagnosis.json"))
        else:
            out.append(str(p))
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- full graph

_G: StateGraph | None = None
_OBS: Observer | None = None     # shared by the traces a process checks: values decode once


def _set_graph(g: StateGraph) -> None:
    global _G, _OBS
    if _G is not g:
        _G, _OBS = g, Observer(g.codec, intern=False)


def _worker_init(entry: ConfigEntry) -> None:
    _set_graph(load_graph(entry).graph)


def _check_in_graph(path: str) -> dict:
    """Check one file against the process's graph; "recheck" when it leaves the graph."""
    g = _G
    if g is None or _OBS is None or _OBS.codec is not g.codec:
        raise RuntimeError("no graph loaded in this process (call _set_graph)")
    try:
        trace = read_trace(path)
    except TraceMalformed as e:
        return V.malformed(path, e)
    if set(trace.variables) != set(g.codec.variables):
        return V.out_of_scope(trace, "graph", f"the trace's variables {sorted(trace.variables)} "
                              f"are not the graph's {sorted(g.codec.variables)}")
    try:
        keys = _OBS.keys(trace)
    except TraceMalformed as e:
        return V.malformed(path, e)
    run = TraceRun(trace, keys, g)
    outcome, k = run.advance()
    if outcome == "valid":
        r = V.base(trace, "valid", "graph", stutters=run.stutters)
        if trace.partial:
            r["ambiguity"] = run.ambiguity()
        else:
            r["_path"] = run.path
        return judge_liveness(trace, r)
    r = V.base(trace, "recheck", "graph", left_graph_at_step=k)
    return r


# --------------------------------------------------------------------------- neighbourhood

def _manifest(manifest_dir: Path | None) -> list[ConfigEntry]:
    return load_manifest(manifest_dir or CONFIG_DIR)


def _module_for(spec_module: str) -> Path | None:
    for name in (f"MC{spec_module}.tla", f"{spec_module}.tla"):
        if (SPEC_DIR / name).is_file():
            return SPEC_DIR / name
    return None


def _cfg_model_values(entry: ConfigEntry) -> set[str]:
    cfg = parse_cfg(entry.cfg_path)
    names = set(cfg.model_values)

    def walk(v):
        if isinstance(v, str):
            names.add(v)
        elif isinstance(v, (tuple, frozenset)):
            for x in v:
                walk(x)
    for v in cfg.constants.values():
        walk(v)
    return names


def resolve_base(trace: Trace, entries: list[ConfigEntry]) -> ConfigEntry:
    """The config a trace is checked under: its header's bounds config, else the protocol's
    default (a ci, bfs config of the trace's spec module defining its model values)."""
    if trace.bounds:
        cfg = Path(trace.bounds)
        cfg = cfg if cfg.is_absolute() else REPO_ROOT / cfg
        if not cfg.is_file():
            raise LookupError(f"the header's bounds config {trace.bounds} does not exist")
        for e in entries:
            if e.cfg_path.resolve() == cfg.resolve():
                return e
        module = _module_for(trace.spec_module)
        if module is None:
            raise LookupError(f"no module spec/MC{trace.spec_module}.tla or "
                              f"spec/{trace.spec_module}.tla for bounds {trace.bounds}")
        return ConfigEntry(name=cfg.stem, module=str(module), cfg=str(cfg), profile="ci",
                           expect="ok", description="bounds of a trace header", kip="none",
                           manifest="trace header")
    wanted = {f"MC{trace.spec_module}", trace.spec_module}
    fitting = [e for e in entries if e.module_path.stem in wanted and e.mode == "bfs"
               and e.profile == "ci" and e.expect == "ok"]
    mvs = set(trace.model_values)
    for e in sorted(fitting, key=lambda e: ("graph" not in e.name, e.name)):
        if mvs <= _cfg_model_values(e) | _spec_constants(e):
            return e
    raise LookupError(f"no ci config of {trace.spec_module} defines the trace's model values "
                      f"{sorted(mvs)}; give the config in the header's bounds")


def _spec_constants(e: ConfigEntry) -> set[str]:
    """Model values may also be spec constants bound elsewhere (e.g. NoLeader <- ...)."""
    return set(parse_cfg(e.cfg_path).substitutions)


def _check_neighbourhood(traces: list[Trace], base: ConfigEntry, *, chunk: int, tlc_workers: int,
                         jobs: int, timeout: float, mode: str = "neighbourhood",
                         extra: dict | None = None, raise_bounds: bool = True,
                         status: Callable[[str], None] | None = None
                         ) -> tuple[list[dict], dict]:
    """Verdicts for traces sharing a config (all with the same variables)."""
    extra = extra or {}
    variables = sorted(traces[0].variables)
    codec = Codec(variables)
    observer = Observer(codec, intern=True)
    results: list[dict] = []
    runs: list[tuple[Trace, list]] = []
    for t in traces:
        try:
            runs.append((t, observer.keys(t)))
        except TraceMalformed as e:
            results.append(V.malformed(t.path, e))
    if not runs:
        return results, {}
    size = max((value_size(codec.value(i, vid)) for i in range(len(variables))
                for vid in range(len(codec.texts[i]))), default=0)
    mvs = set().union(*(t.model_values for t, _ in runs))
    nb = Neighbourhood(base, variables, mvs, size if raise_bounds else -1, chunk=chunk,
                       workers=tlc_workers, timeout=timeout, jobs=jobs, codec=codec,
                       status=status)
    g = nb.graph
    try:
        nb.ensure_initial()
    except TLCOutOfMemory:
        raise
    except NeighbourhoodError as e:
        for t, _ in runs:
            results.append(V.out_of_scope(t, mode, str(e), **extra.get(t.path, {})))
        return results, _nb_stats(nb)
    # Sources known up front: every observed complete state but the last of each trace; when
    # the next state is complete too, TLC only judges that step (a targeted run).
    sources, targets = [], {}
    for t, keys in runs:
        for key, nxt in zip(keys, keys[1:]):
            if None not in key:
                s = g.add_state(key)
                if None in nxt:
                    sources.append(s)
                else:
                    targets.setdefault(s, set()).add(g.add_state(nxt))
    nb.expand(targets, targets=targets)
    nb.expand(sources)
    pending = [TraceRun(t, keys, g) for t, keys in runs]
    failed: list[tuple[TraceRun, str, object]] = []
    while pending:
        need: list[int] = []
        waiting = []
        for run in pending:
            outcome, arg = run.advance()
            if outcome == "need":
                bad = [s for s in arg if s in nb.unexpandable]
                if bad:
                    results.append(V.out_of_scope(
                        run.trace, mode, f"step {run.k}: TLC cannot compute the successors of "
                        f"the source state: {nb.unexpandable[bad[0]]}",
                        **extra.get(run.trace.path, {})))
                    continue
                need.extend(arg)
                waiting.append(run)
            elif outcome == "fail" and arg:
                failed.append((run, outcome, arg))      # diagnosed on full successors below
            else:
                results.append(_finish(run, outcome, arg, mode, extra.get(run.trace.path, {})))
        if need:
            nb.expand(need)
        pending = waiting
    nb.expand([c for run, _, _ in failed for c in run.candidates])
    for run, outcome, arg in failed:
        results.append(_finish(run, outcome, arg, mode, extra.get(run.trace.path, {})))
    return results, _nb_stats(nb)


def _nb_stats(nb: Neighbourhood) -> dict:
    return {"config": nb.base.name, "runs": nb.stats.runs, "failed_runs": nb.stats.failed_runs,
            "tlc_seconds": round(nb.stats.seconds, 2), "states_expanded": nb.stats.states_expanded,
            "graph_states": len(nb.graph), "raised_constants": nb.overrides,
            "targeted_sources": len(nb.graph.targeted)}


def _finish(run: TraceRun, outcome: str, k, mode: str, extra: dict) -> dict:
    t = run.trace
    if outcome == "valid":
        r = judge_liveness(t, V.base(t, "valid", mode, stutters=run.stutters, **extra))
    elif outcome == "too_ambiguous":
        return V.out_of_scope(t, mode, f"step {k}: more than {run.max_candidates} candidate "
                              "states (too little is observed)", **extra)
    else:
        sources = run.candidates if k else []
        r = V.base(t, "invalid", mode, failed_step=k,
                   diagnosis=diagnose(t, run.keys, k, sources, run.graph), **extra)
    if t.partial:
        r["ambiguity"] = run.ambiguity()
    return r


def _two_phase(traces: list[Trace], base: ConfigEntry, mode: str, extra: dict | None,
               kw: dict, phase1: bool = True) -> tuple[list[dict], list[dict]]:
    """Phase 1 under the config's own constants (fewer successors per state, so a cheaper
    TLC run); the traces it does not find valid are judged again in phase 2 with the Max*
    bounds raised, which decides.  Raising an upper bound only adds behaviours, so a trace
    valid in phase 1 is valid in phase 2."""
    stats: list[dict] = []

    def run(ts: list[Trace], raise_bounds: bool) -> list[dict]:
        try:
            rs, st = _check_neighbourhood(ts, base, mode=mode, extra=extra,
                                          raise_bounds=raise_bounds, **kw)
        except Unwritable as e:
            rs, st = [V.out_of_scope(t, mode, str(e)) for t in ts], {}
        if st:
            st["bounds"] = "raised" if raise_bounds else "config"
            stats.append(st)
        return rs
    cfg = parse_cfg(base.cfg_path)
    if not phase1 or not any(n.startswith(BOUND_PREFIX) and type(v) is int
                             for n, v in cfg.constants.items()):
        return run(traces, True), stats
    # a trace whose values already exceed a bound would fail phase 1: straight to phase 2
    beyond = {t.path for t in traces if raised_constants(cfg, _trace_size(t))}
    first = run([t for t in traces if t.path not in beyond], False) if len(beyond) < len(traces) else []
    done = [r for r in first if r["verdict"] in ("valid", "malformed")]
    again = {r["file"] for r in first if r["verdict"] not in ("valid", "malformed")} | beyond
    if again:
        second = run([t for t in traces if t.path in again], True)
        for r in second:
            r["bounds_raised"] = True
        done.extend(second)
    return done, stats


def _trace_size(t: Trace) -> int:
    """The largest quantity in a trace's states (tlagen.value_size); 0 if unreadable (the
    trace is then judged, and reported, by the phase that reads it)."""
    codec = Codec(sorted(t.variables))
    try:
        Observer(codec, intern=True).keys(t)
    except TraceMalformed:
        return 0
    return max((value_size(codec.value(i, vid)) for i in range(len(codec.variables))
                for vid in range(len(codec.texts[i]))), default=0)


def _lazy(paths: list[str], manifest_dir: Path | None, base_override: ConfigEntry | None,
          progress: Progress | None, done0: int, total: int, extra: dict | None = None,
          mode: str = "neighbourhood", **kw) -> tuple[list[dict], list[dict]]:
    results: list[dict] = []
    groups: dict[tuple, list[Trace]] = {}
    bases: dict[tuple, ConfigEntry] = {}
    entries = None
    done = done0
    for p in paths:
        try:
            t = read_trace(p)
        except TraceMalformed as e:
            results.append(V.malformed(p, e))
            done += 1
            if progress:
                progress(done, total)
            continue
        try:
            if base_override is not None:
                base = base_override
            else:
                if entries is None:
                    entries = _manifest(manifest_dir)
                base = resolve_base(t, entries)
        except (LookupError, ManifestError, CfgError) as e:
            results.append(V.out_of_scope(t, mode, str(e)))
            done += 1
            if progress:
                progress(done, total)
            continue
        gkey = (base.name, str(base.cfg_path), tuple(sorted(t.variables)))
        groups.setdefault(gkey, []).append(t)
        bases[gkey] = base
    stats = []
    for key, traces in groups.items():
        base = bases[key]
        # a re-check from full-graph mode already failed under the config's own bounds
        rs, st = _two_phase(traces, base, mode, extra, kw, phase1=base_override is None)
        results.extend(rs)
        stats.extend(st)
        done += len(traces)
        if progress:
            progress(done, total)
    return results, stats


# --------------------------------------------------------------------------- entry point

def validate_corpus(paths: Iterable[str | os.PathLike], graph: str | ConfigEntry | None = None,
                    lazy: bool = False, jobs: int = 1, out: str | os.PathLike | None = None, *,
                    manifest_dir: Path | None = None, recheck: bool = True, chunk: int = 4000,
                    tlc_workers: int = 1, timeout: float = 1800, module: str | None = None,
                    progress: Progress | None = None,
                    status: Callable[[str], None] | None = None) -> dict:
    """Check every trace file under `paths`; returns the corpus summary (JSON-able dict).

    graph: a no-symmetry bfs config (manifest name, ConfigEntry, or a .cfg file with `module`)
    for full-graph mode;
    otherwise neighbourhood mode (`lazy`).  jobs: worker processes (full-graph mode) and
    dump-parsing processes.  out: folder where failing traces and their diagnoses are kept.
    """
    if graph is not None and lazy:
        raise ValueError("choose one of graph=CONFIG and lazy=True")
    t0 = time.monotonic()
    files = collect_files(paths)
    total = len(files)
    kw = dict(chunk=chunk, tlc_workers=tlc_workers, jobs=max(1, jobs), timeout=timeout,
              status=status)
    summary: dict = {"mode": "graph" if graph is not None else "neighbourhood"}
    nb_stats: list[dict] = []
    visited: list[list[int]] = []
    if graph is not None:
        entry = resolve_entry(graph, manifest_dir, module)
        gl = load_graph(entry, jobs=max(1, jobs))
        g = gl.graph
        summary["graph"] = {"config": entry.name, "states": len(g), "edges": g.edge_count,
                            "cached": gl.cached, "load_seconds": round(gl.seconds, 3),
                            "tlc_seconds": round(gl.tlc_seconds, 2),
                            "parse_seconds": round(gl.parse_seconds, 3)}
        t1 = time.monotonic()
        if jobs > 1 and len(files) > 1:
            results = []
            with ProcessPoolExecutor(jobs, initializer=_worker_init, initargs=(entry,)) as ex:
                for i, r in enumerate(ex.map(_check_in_graph, files, chunksize=max(1, len(files) // (jobs * 8)))):
                    results.append(r)
                    if progress:
                        progress(i + 1, total)
        else:
            _set_graph(g)
            results = []
            for i, f in enumerate(files):
                results.append(_check_in_graph(f))
                if progress:
                    progress(i + 1, total)
        summary["lookup_seconds"] = round(time.monotonic() - t1, 3)
        for r in results:
            p = r.pop("_path", None)
            if p:
                visited.append(p)
        again = [r for r in results if r["verdict"] == "recheck"]
        if again:
            results = [r for r in results if r["verdict"] != "recheck"]
            if recheck:
                extra = {r["file"]: {"rechecked": True, "left_graph_at_step": r["left_graph_at_step"]}
                         for r in again}
                rs, nb_stats = _lazy([r["file"] for r in again], manifest_dir, entry, None, 0,
                                     len(again), extra=extra, mode="graph+neighbourhood", **kw)
                results.extend(rs)
            else:
                for r in again:
                    r["verdict"] = "out_of_scope"
                    r["reason"] = (f"left the graph at step {r['left_graph_at_step']} and "
                                   "re-checking is off")
                    results.append(r)
        if visited:
            summary["coverage"] = graph_coverage(g, visited, spec_actions(entry))
    else:
        results, nb_stats = _lazy(files, manifest_dir, None, progress, 0, total, **kw)
        summary["coverage"] = _nb_coverage(results, manifest_dir)
    order = {f: i for i, f in enumerate(files)}
    results.sort(key=lambda r: order.get(r["file"], len(order)))
    counts = V.count(results)
    steps = sum(r.get("steps", 0) for r in results)
    seconds = time.monotonic() - t0
    summary.update({
        "traces": total, "counts": counts, "steps": steps, "seconds": round(seconds, 3),
        "steps_per_second": round(steps / seconds, 1) if seconds > 0 else None,
        "ok": counts["invalid"] == 0 and counts["malformed"] == 0,
        "neighbourhood": nb_stats, "results": results})
    if out is not None:
        _keep_failures(Path(out), results, summary)
    return summary


def _nb_coverage(results: list[dict], manifest_dir: Path | None) -> dict | None:
    """Spec actions the valid traces took / never took (neighbourhood mode), per the actions
    of the configs they were checked under."""
    taken: Counter = Counter()
    actions: dict[tuple, list[str]] = {}
    entries = None
    for r in results:
        if r["verdict"] != "valid":
            continue
        try:
            t = read_trace(r["file"])
        except TraceMalformed:
            continue
        taken.update(s.action for s in t.steps)
        key = (t.bounds, t.spec_module, t.model_values)
        if key not in actions:
            try:
                entries = entries or _manifest(manifest_dir)
                actions[key] = spec_actions(resolve_base(t, entries))
            except (LookupError, ManifestError, CfgError):
                actions[key] = []
    if not taken:
        return None
    return action_coverage(taken, dict.fromkeys(a for lst in actions.values() for a in lst))


def _keep_failures(out: Path, results: list[dict], summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    for r in results:
        if r["verdict"] == "valid":
            continue
        src = Path(r["file"])
        name = src.name
        n = 1
        while name in used:
            n += 1
            name = f"{src.stem}.{n}{src.suffix}"
        used.add(name)
        if src.is_file():
            shutil.copyfile(src, out / (name + ".tmp-copy"))
            os.replace(out / (name + ".tmp-copy"), out / name)
        write_atomic(out / f"{name}.diagnosis.json", json.dumps(r, indent=2, default=str) + "\n")
        r["kept_as"] = str(out / name)
    write_atomic(out / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")
