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
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path, PurePosixPath

from kraftcore.output import replace_folder, write_atomic
from kraftcore.paths import CONFIG_DIR, REPO_ROOT
from kraftcore.tlc.cfg import CfgError, parse_cfg
from kraftcore.tlc.manifest import ConfigEntry, ManifestError, load_manifest
from trace_checker.codec import Codec
from trace_checker.coverage import action_coverage, graph_coverage, spec_actions
from trace_checker.diagnose import diagnose
from trace_checker.fullgraph import load_graph, resolve_entry
from trace_checker.liveness import LivenessJudge, judge_liveness, liveness_judge
from trace_checker.modules import spec_closure
from trace_checker.graph import StateGraph
from trace_checker.neighbourhood import (BOUND_PREFIX, Neighbourhood, NeighbourhoodError,
                                         TLCOutOfMemory, TLCUnavailable, raised_constants)
from trace_checker.observe import Observer
from trace_checker.partial import TraceRun
from trace_checker.tlagen import Unwritable, check_tlc_ints, value_size
from trace_checker.traces import Trace, TraceMalformed, read_trace
from trace_checker import verdict as V

__all__ = ["validate_corpus", "collect_files", "check_out_not_input", "resolve_base", "may_judge",
           "CorpusError",
           "is_validate_out",
           "TRACE_SUFFIXES"]

TRACE_SUFFIXES = (".jsonl", ".ndjson", ".trace")
Progress = Callable[[int, int], None]


class CorpusError(ValueError):
    """The corpus itself is unusable (a path that does not exist or holds no trace file)."""


def collect_files(paths: Iterable[str | os.PathLike], strict: bool = False) -> list[str]:
    """Files given, plus every *.jsonl / *.ndjson / *.trace under the folders given.

    strict: a path that does not exist, or a folder holding no trace file, raises CorpusError
    (nothing to judge is never "ok").  A trace file of a folder that cannot be read (a
    dangling symlink, a symlink loop, a FIFO, a device) is listed all the same: the reader
    makes it malformed ("cannot read: ...") without waiting on it, so it is never skipped
    silently and never stops the others.  A file reached twice (the same file once resolved,
    e.g. a/b.jsonl and a/../a/b.jsonl) is listed once."""
    out: list[str] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = []
            for f in sorted(p.rglob("*")):
                if f.suffix not in TRACE_SUFFIXES or f.name.endswith(".diagnosis.json") \
                        or f.is_dir():
                    continue
                found.append(str(f))
            if strict and not found:
                raise CorpusError(f"{p}: no trace file (*{', *'.join(TRACE_SUFFIXES)}) in this "
                                  "folder")
            out.extend(found)
        else:
            if strict and not p.exists():
                raise CorpusError(f"{p}: no such file or folder")
            out.append(str(p))
    if strict and not out:
        raise CorpusError("no trace file given")
    once: dict[str, str] = {}
    for f in out:
        once.setdefault(os.path.realpath(f), f)
    return list(once.values())


def check_out_not_input(out: str | os.PathLike, paths: Iterable[str | os.PathLike],
                        files: list[str]) -> None:
    """--out is replaced whole by this run's failures: it must not be an input path, hold
    one, or lie inside one (the inputs would be deleted, or kept copies judged again by the
    next run over the folder).  Compared as resolved paths, so `a/../a` or a symlink to an
    input folder is caught; also every trace file found (a symlink into --out)."""
    o = Path(os.path.realpath(out))
    for p in paths:
        r = Path(os.path.realpath(p))
        if o == r:
            raise CorpusError(f"--out {out} is the input path {p}: validate replaces --out with "
                             "this run's failures, which would delete the input traces; "
                             "give another folder")
        if r.is_relative_to(o):
            raise CorpusError(f"--out {out} contains the input path {p}: validate replaces "
                             "--out with this run's failures, which would delete it; give "
                             "another folder")
        if o.is_relative_to(r):
            raise CorpusError(f"--out {out} is inside the input path {p}: the kept failures "
                             "would be judged again by the next run over it; give a folder "
                             "outside the inputs")
    for f in files:
        if Path(os.path.realpath(f)).is_relative_to(o):
            raise CorpusError(f"--out {out} contains the input trace {f}: validate replaces "
                             "--out with this run's failures, which would delete it; give "
                             "another folder")


# --------------------------------------------------------------------------- full graph

_G: StateGraph | None = None
_OBS: Observer | None = None     # shared by the traces a process checks: values decode once
_ENTRY: ConfigEntry | None = None        # the graph's config: the judge of every trace
_LIVE: LivenessJudge | None = None
_ACTIONS: frozenset[str] | None = None   # the judge's action labels (stutters must claim one)


def _set_graph(g: StateGraph, entry: ConfigEntry | None = None) -> None:
    """The graph this process checks traces in, and its config (the judge); entry None only
    for a graph of no manifest config (tests' fixture specs): no module check, no timers."""
    global _G, _OBS, _ENTRY, _LIVE, _ACTIONS
    if _G is not g:
        _G, _OBS = g, Observer(g.codec, intern=False)
    _ENTRY, _LIVE = entry, liveness_judge(entry) if entry is not None else None
    _ACTIONS = _spec_actions(entry) if entry is not None else None


def _spec_actions(entry: ConfigEntry) -> frozenset[str] | None:
    return frozenset(spec_actions(entry)) or None


def _worker_init(entry: ConfigEntry) -> None:
    _set_graph(load_graph(entry).graph, entry)


def foreign_model_values(trace: Trace, entry: ConfigEntry) -> str | None:
    """Why a trace cannot be judged under a config whose model values do not include those
    its header declares (None when they do).  A declared model value is written into the
    generated module as a model value, so a name the config does not have would turn the
    trace's strings, or the spec's own string literals ("Leader"), into model values."""
    extra = set(trace.model_values) - _allowed_model_values(entry)
    if not extra:
        return None
    return (f"the header declares model values the config {entry.name} does not have: "
            f"{', '.join(sorted(extra)[:10])}{', ...' if len(extra) > 10 else ''}")


def _allowed_model_values(entry: ConfigEntry) -> set[str]:
    key = (str(entry.cfg_path), entry.module)
    if key not in _MV_CACHE:
        _MV_CACHE[key] = _cfg_model_values(entry) | _spec_constants(entry)
    return _MV_CACHE[key]


_MV_CACHE: dict[tuple[str, str], set[str]] = {}


def judged_module_mismatch(trace: Trace, entry: ConfigEntry) -> TraceMalformed | None:
    """A trace judged under a config the user chose must be of that config's spec (its module
    or a spec module it extends): a header claiming another module is refused."""
    if trace.spec_module in spec_closure(entry.module_path):
        return None
    return TraceMalformed(trace.path, trace.header_line, "spec_module",
                          f"{_q(trace.spec_module)} is not the module of config {entry.name} "
                          f"({entry.module_path.stem}) or a spec it extends; that config "
                          "judges this trace")


def _check_in_graph(path: str) -> dict:
    """Check one file against the process's graph; "recheck" when it leaves the graph."""
    g = _G
    if g is None or _OBS is None or _OBS.codec is not g.codec:
        raise RuntimeError("no graph loaded in this process (call _set_graph)")
    try:
        trace = read_trace(path)
    except TraceMalformed as e:
        return V.malformed(path, e)
    wrong = judged_module_mismatch(trace, _ENTRY) if _ENTRY is not None else None
    if wrong is not None:
        return V.malformed(path, wrong)
    foreign = foreign_model_values(trace, _ENTRY) if _ENTRY is not None else None
    if foreign is not None:
        return V.out_of_scope(trace, "graph", foreign)
    if set(trace.variables) != set(g.codec.variables):
        return V.out_of_scope(trace, "graph", f"the trace's variables {sorted(trace.variables)} "
                              f"are not the graph's {sorted(g.codec.variables)}")
    try:
        keys = _OBS.keys(trace)
    except TraceMalformed as e:
        return V.malformed(path, e)
    nothing = _observes_nothing(trace)
    if nothing:
        return V.out_of_scope(trace, "graph", nothing)
    run = TraceRun(trace, keys, g, actions=_ACTIONS)
    outcome, k = run.advance()
    if outcome == "valid":
        r = V.base(trace, "valid", "graph", stutters=run.stutters)
        if trace.partial:
            r["ambiguity"] = run.ambiguity()
        else:
            r["_path"] = run.path
        return judge_liveness(trace, r, _LIVE)
    r = V.base(trace, "recheck", "graph", left_graph_at_step=k)
    return r


# --------------------------------------------------------------------------- neighbourhood

def _manifest(manifest_dir: Path | None) -> list[ConfigEntry]:
    return load_manifest(manifest_dir or CONFIG_DIR)


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


BUG_PREFIX = "Bug"              # the suite's convention for a planted-bug switch constant
BUG_OFF = (False, "off")        # its values when the bug is switched off


def may_judge(e: ConfigEntry) -> bool:
    """Configs a trace header may name: the protocol's own models, never a bug switch or a
    finding (profile bugs, an expectation other than ok, a `-finding-` config, or any Bug*
    constant switched on, whatever the profile says)."""
    if e.profile == "bugs" or e.expect != "ok" or "-finding-" in e.name:
        return False
    try:
        consts = parse_cfg(e.cfg_path).constants
    except (CfgError, OSError):
        return False
    return all(v in BUG_OFF and type(v) in (bool, str)
               for n, v in consts.items() if n.startswith(BUG_PREFIX))


def _q(s: str) -> str:
    s = s if len(s) <= 60 else s[:57] + "..."
    return json.dumps(s)


def _header_config_file(trace: Trace, config_dir: Path) -> str:
    """The config name a header's bounds file path stands for: only `<folder>/NAME.cfg` with
    <folder> the manifest folder (tlc_configs/), relative to the repository root."""
    b = trace.bounds
    assert b is not None and b.file is not None
    field_ = "bounds.file" if b.field != "bounds" else "bounds"
    raw = b.file
    if "\\" in raw or "\0" in raw:
        raise TraceMalformed(trace.path, trace.header_line, field_, f"{_q(raw)} is not a "
                             "config path (backslash or NUL)")
    p = PurePosixPath(raw)
    if p.is_absolute():
        raise TraceMalformed(trace.path, trace.header_line, field_, f"{_q(raw)} is an absolute "
                             "path; name the config (bounds.config) instead")
    if ".." in p.parts:
        raise TraceMalformed(trace.path, trace.header_line, field_, f"{_q(raw)} climbs out of "
                             "its folder (..); name the config (bounds.config) instead")
    folder = config_dir.resolve()
    rel = folder.relative_to(REPO_ROOT) if folder.is_relative_to(REPO_ROOT) else folder
    full = Path(os.path.normpath(REPO_ROOT / p))
    if full.parent != folder or p.suffix != ".cfg":
        raise TraceMalformed(trace.path, trace.header_line, field_, f"{_q(raw)} is not a "
                             f"config file of {rel}/; name the config (bounds.config) instead")
    return p.stem


def resolve_base(trace: Trace, entries: list[ConfigEntry],
                 config_dir: Path | None = None) -> ConfigEntry:
    """The config a trace is checked under when the user named none (--config / --graph).

    The header may only pick among configs of its protocol's manifest that model the protocol
    (not bug or finding configs), by name (or as the manifest folder's NAME.cfg); the spec
    module must be that config's.  Anything else is refused for this trace alone (malformed,
    naming the field); the file a header names is never opened.  Without bounds: the
    protocol's default (a ci, bfs config of the trace's spec module defining its model values).
    Raises TraceMalformed, or LookupError (out of scope) when no default config fits.
    """
    config_dir = config_dir or CONFIG_DIR
    line = trace.header_line
    mine = [e for e in entries if e.protocol == trace.protocol]
    if not mine:
        known = sorted({e.protocol for e in entries})
        raise TraceMalformed(trace.path, line, "protocol", f"{_q(trace.protocol)} has no "
                             f"manifest (known protocols: {', '.join(known) or 'none'})")
    wanted = {f"MC{trace.spec_module}", trace.spec_module}
    if not any(e.module_path.stem in wanted for e in mine):
        raise TraceMalformed(trace.path, line, "spec_module", f"{_q(trace.spec_module)} is not "
                             f"the module of any config of the {trace.protocol} manifest")
    b = trace.bounds
    if b is not None:
        name = b.config
        if b.file is not None:
            from_file = _header_config_file(trace, config_dir)
            if name is not None and from_file != name:
                raise TraceMalformed(trace.path, line, "bounds.file", f"names config "
                                     f"{_q(from_file)}, but bounds.config names {_q(name)}")
            name = name or from_file
        field_ = b.field
        e = next((e for e in mine if e.name == name), None)
        if e is None:
            raise TraceMalformed(trace.path, line, field_, f"{_q(name)} is not a config of the "
                                 f"{trace.protocol} manifest")
        if b.file is not None and Path(os.path.normpath(e.cfg_path)) != \
                Path(os.path.normpath(REPO_ROOT / b.file)):
            raise TraceMalformed(trace.path, line, field_, f"{_q(b.file)} is not the file of "
                                 f"config {e.name}")
        if not may_judge(e):
            raise TraceMalformed(trace.path, line, field_, f"{e.name} is a {e.profile} config "
                                 f"(expect {e.expect}): a bug or finding config never judges "
                                 "a trace; choose the judge with --config")
        if e.module_path.stem not in wanted:
            raise TraceMalformed(trace.path, line, "spec_module", f"{_q(trace.spec_module)} is "
                                 f"not the module of config {e.name} ({e.module})")
        return e
    fitting = [e for e in mine if e.module_path.stem in wanted and e.mode == "bfs"
               and e.profile == "ci" and may_judge(e)]
    mvs = set(trace.model_values)
    for e in sorted(fitting, key=lambda e: ("graph" not in e.name, e.name)):
        if mvs <= _allowed_model_values(e):
            return e
    raise LookupError(f"no ci config of {trace.spec_module} defines the trace's model values "
                      f"{sorted(mvs)}; name the config in the header's bounds or with --config")


def _spec_constants(e: ConfigEntry) -> set[str]:
    """Model values may also be spec constants bound elsewhere (e.g. NoLeader <- ...)."""
    return set(parse_cfg(e.cfg_path).substitutions)


def _check_neighbourhood(traces: list[Trace], base: ConfigEntry, *, chunk: int, tlc_workers: int,
                         jobs: int, timeout: float, mode: str = "neighbourhood",
                         extra: dict | None = None, raise_bounds: bool = True,
                         status: Callable[[str], None] | None = None,
                         sizer: _Sizer | None = None
                         ) -> tuple[list[dict], dict]:
    """Verdicts for traces sharing a config (all with the same variables).  `sizer`: the
    pass that measured exactly these traces, in this order (its codec, keys and sizes are
    those this pass would compute, so they are taken over instead of decoded again)."""
    extra = extra or {}
    variables = sorted(traces[0].variables)
    done_keys: dict[str, list] = {}
    sizes: dict[tuple[int, int], int] = {}
    shared = sizer.shared(traces) if sizer is not None else None
    if shared is not None:
        observer, sizes, done_keys = shared
        codec = observer.codec
    else:
        codec = Codec(variables)
        observer = Observer(codec, intern=True)
    results: list[dict] = []
    runs: list[tuple[Trace, list]] = []
    size = 0
    for t in traces:
        try:
            keys = done_keys.get(t.path)
            if keys is None:
                keys = observer.keys(t)
        except TraceMalformed as e:
            results.append(V.malformed(t.path, e))
            continue
        nothing = _observes_nothing(t)
        if nothing:
            results.append(V.out_of_scope(t, mode, nothing, **extra.get(t.path, {})))
            continue
        # A value TLC cannot hold (an integer beyond its 32-bit range) puts this trace alone
        # out of scope: it would otherwise reach the generated config as a raised bound.
        try:
            tsize = _trace_size(codec, keys, t, sizes)
        except Unwritable as e:
            results.append(V.out_of_scope(t, mode, str(e), **extra.get(t.path, {})))
            continue
        size = max(size, tsize)
        runs.append((t, keys))
    if not runs:
        return results, {}
    mvs = set().union(*(t.model_values for t, _ in runs))
    nb = Neighbourhood(base, variables, mvs, size if raise_bounds else -1, chunk=chunk,
                       workers=tlc_workers, timeout=timeout, jobs=jobs, codec=codec,
                       status=status)
    g = nb.graph
    live = liveness_judge(base)
    try:
        nb.ensure_initial()
    except TLCUnavailable:
        raise                      # fail closed: TLC could not run at all (exit 2)
    except NeighbourhoodError as e:
        for t, _ in runs:
            results.append(V.out_of_scope(t, mode, str(e), **extra.get(t.path, {})))
        return results, _nb_stats(nb)
    # Sources known up front: every observed complete state but the last of each trace; when
    # the next state is complete too, TLC only judges that step (a targeted run).
    sources, targets = [], {}
    claims: dict[int, set[str]] = {}      # source -> the actions its targeted steps claim
    chains: list[list[int]] = []          # each trace's complete source states, in step order
    nexts: list[list[int | None]] = []    # the complete state after each of them, or None
    for t, keys in runs:
        chain, after = [], []
        for key, nxt, step in zip(keys, keys[1:], t.steps[1:]):
            if None not in key:
                s = g.add_state(key)
                chain.append(s)
                if None in nxt:
                    sources.append(s)
                    after.append(None)
                else:
                    d = g.add_state(nxt)
                    targets.setdefault(s, set()).add(d)
                    claims.setdefault(s, set()).add(step.action)
                    after.append(d)
        chains.append(chain)
        nexts.append(after)
    prune = _pruner(chains, nexts)
    nb.expand(targets, targets=targets, prune=prune, claims=claims)
    nb.expand(sources, prune=prune)
    actions = _spec_actions(base)
    pending = [TraceRun(t, keys, g, actions=actions) for t, keys in runs]
    failed: list[tuple[TraceRun, str, object]] = []
    while pending:
        need: list[int] = []
        waiting = []
        for run in pending:
            outcome, arg = run.advance()
            if outcome in ("need", "fail"):
                why = _unwritable_step(run, nb)
                if why is not None:     # this trace's own state: TLC cannot judge the step
                    results.append(V.out_of_scope(
                        run.trace, mode, f"step {run.k}: the observed state {why}",
                        **extra.get(run.trace.path, {})))
                    continue
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
                results.append(_finish(run, outcome, arg, mode, extra.get(run.trace.path, {}),
                                       live))
        if need:
            nb.expand(need)
        pending = waiting
    nb.expand([c for run, _, _ in failed for c in run.candidates])
    for run, outcome, arg in failed:
        results.append(_finish(run, outcome, arg, mode, extra.get(run.trace.path, {}), live))
    return results, _nb_stats(nb)


def _pruner(chains: list[list[int]], steps: list[list[int | None]]
            ) -> Callable[[set[int], set[tuple[int, int]]], set[int]]:
    """prune(failed, failed_steps): the sources that every observing trace reaches only after
    one of its own sources, or its own step (source, next), failed in TLC.  That trace stops
    there (out of scope), or goes on step by step on request; either way nobody needs those
    sources expanded up front.  `steps[t][k]` is the state after chains[t][k] (None: partial)."""
    owners: dict[int, list[tuple[int, int]]] = {}       # source -> [(trace, position)]
    step_owners: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for ti, chain in enumerate(chains):
        for pos, s in enumerate(chain):
            owners.setdefault(s, []).append((ti, pos))
            if steps[ti][pos] is not None:
                step_owners.setdefault((s, steps[ti][pos]), []).append((ti, pos))

    def prune(failed: set[int], failed_steps: set[tuple[int, int]]) -> set[int]:
        first: dict[int, int] = {}                       # trace -> position of its first failure
        hits = [o for s in failed for o in owners.get(s, ())] + \
            [o for st in failed_steps for o in step_owners.get(st, ())]
        for ti, pos in hits:
            if pos < first.get(ti, len(chains[ti])):
                first[ti] = pos
        if not first:
            return set()
        return {s for s, own in owners.items()
                if all(ti in first and pos > first[ti] for ti, pos in own)}
    return prune


def _observes_nothing(t: Trace) -> str | None:
    """A trace whose steps after Init observe no variable gives the spec nothing to judge."""
    if len(t.steps) > 1 and not any(s.state for s in t.steps[1:]):
        return "the trace observes no variable after step 0: nothing to judge"
    if not any(s.state for s in t.steps):
        return "the trace observes no variable: nothing to judge"
    return None


def _unwritable_step(run: TraceRun, nb: Neighbourhood) -> str | None:
    """Why the state a complete step observes cannot be written for TLC (None if it can)."""
    if run.k >= len(run.keys) or None in run.keys[run.k]:
        return None
    t = run.graph.index.get(run.keys[run.k])
    return None if t is None else nb.why_unwritable(t)


def _trace_size(codec: Codec, keys: list, trace: Trace,
                memo: dict[tuple[int, int], int] | None = None) -> int:
    """The largest quantity in the trace's values (see neighbourhood.raised_constants); raises
    Unwritable for an integer TLC cannot represent.  `memo` ((variable, value id) -> size,
    for values already checked) may be shared by the traces of one codec."""
    size = 0
    memo = {} if memo is None else memo
    for key in keys:
        for i, vid in enumerate(key):
            if vid is None:
                continue
            n = memo.get((i, vid))
            if n is None:
                v = codec.value(i, vid)
                check_tlc_ints(v, f"state.{codec.variables[i]}")
                n = memo[(i, vid)] = value_size(v)
            if n > size:
                size = n
    return size


def _nb_stats(nb: Neighbourhood) -> dict:
    return {"config": nb.base.name, "runs": nb.stats.runs, "failed_runs": nb.stats.failed_runs,
            "tlc_seconds": round(nb.stats.seconds, 2), "states_expanded": nb.stats.states_expanded,
            "graph_states": len(nb.graph), "raised_constants": nb.overrides,
            "targeted_sources": len(nb.graph.targeted)}


def _finish(run: TraceRun, outcome: str, k, mode: str, extra: dict,
            live: LivenessJudge | None) -> dict:
    t = run.trace
    if outcome == "valid":
        r = judge_liveness(t, V.base(t, "valid", mode, stutters=run.stutters, **extra), live)
    elif outcome == "too_ambiguous":
        return V.out_of_scope(t, mode, f"step {k}: more than {run.max_candidates} candidate "
                              "states (too little is observed)", **extra)
    else:
        sources = run.candidates if k else []
        r = V.base(t, "invalid", mode, failed_step=k,
                   diagnosis=diagnose(t, run.keys, k, sources, run.graph,
                                      actions=run.actions), **extra)
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

    def run(ts: list[Trace], raise_bounds: bool, sizer: _Sizer | None = None) -> list[dict]:
        try:
            rs, st = _check_neighbourhood(ts, base, mode=mode, extra=extra,
                                          raise_bounds=raise_bounds, sizer=sizer, **kw)
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
    sizer = _Sizer()
    beyond = {t.path for t in traces if raised_constants(cfg, sizer.size_or_0(t))}
    first = run([t for t in traces if t.path not in beyond], False) if len(beyond) < len(traces) else []
    done = [r for r in first if r["verdict"] in ("valid", "malformed")]
    again = {r["file"] for r in first if r["verdict"] not in ("valid", "malformed")} | beyond
    if again:
        second = run([t for t in traces if t.path in again], True, sizer)
        for r in second:
            r["bounds_raised"] = True
        done.extend(second)
    return done, stats


class _Sizer:
    """The largest quantity in each trace's states (_trace_size); 0 if unreadable or
    unwritable (the trace is then judged, and reported, by the phase that reads it).  The
    traces with the same variables share one codec, observer and size memo, so a value that
    several traces hold is decoded and measured once."""

    def __init__(self) -> None:
        self._by_vars: dict[tuple[str, ...], tuple[Observer, dict]] = {}
        self._order: list[str] = []                 # the traces measured, in order
        self._keys: dict[str, list] = {}            # their keys (those that decoded)

    def size_or_0(self, t: Trace) -> int:
        names = tuple(sorted(t.variables))
        if names not in self._by_vars:
            self._by_vars[names] = (Observer(Codec(list(names)), intern=True), {})
        observer, memo = self._by_vars[names]
        self._order.append(t.path)
        try:
            keys = self._keys[t.path] = observer.keys(t)
            return _trace_size(observer.codec, keys, t, memo)
        except (TraceMalformed, Unwritable):
            return 0

    def shared(self, traces: list[Trace]) -> tuple[Observer, dict, dict[str, list]] | None:
        """(observer, size memo, keys by path) when `traces` are exactly the traces measured,
        in the same order, all with the same variables: a fresh pass over them would intern
        the same values in the same order, so it would compute the same ids."""
        if len(self._by_vars) != 1 or [t.path for t in traces] != self._order:
            return None
        observer, memo = next(iter(self._by_vars.values()))
        return observer, memo, self._keys


def _lazy(paths: list[str], manifest_dir: Path | None, base_override: ConfigEntry | None,
          progress: Progress | None, done0: int, total: int, extra: dict | None = None,
          mode: str = "neighbourhood", user_config: ConfigEntry | None = None,
          **kw) -> tuple[list[dict], list[dict]]:
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
            if base_override is not None or user_config is not None:
                base = base_override or user_config
                wrong = judged_module_mismatch(t, base)
                if wrong is not None:
                    raise wrong
            else:
                if entries is None:
                    entries = _manifest(manifest_dir)
                base = resolve_base(t, entries, manifest_dir)
        except TraceMalformed as e:
            results.append(V.malformed(p, e))
            done += 1
            if progress:
                progress(done, total)
            continue
        except (LookupError, CfgError) as e:
            results.append(V.out_of_scope(t, mode, str(e)))
            done += 1
            if progress:
                progress(done, total)
            continue
        foreign = foreign_model_values(t, base)
        if foreign is not None:
            results.append(V.out_of_scope(t, mode, foreign, **(extra or {}).get(t.path, {})))
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
                    progress: Progress | None = None, config: str | ConfigEntry | None = None,
                    max_out_of_scope: int | None = 0,
                    max_liveness_not_judged: int | None = 0,
                    status: Callable[[str], None] | None = None) -> dict:
    """Check every trace file under `paths`; returns the corpus summary (JSON-able dict).

    graph: a no-symmetry bfs config (manifest name, ConfigEntry, or a .cfg file with `module`)
    for full-graph mode;
    otherwise neighbourhood mode (`lazy`).  jobs: worker processes (full-graph mode) and
    dump-parsing processes.  out: folder where failing traces and their diagnoses are kept.
    config: neighbourhood mode under this config (manifest name, ConfigEntry or .cfg with
    `module`) for every trace, whatever its header says.
    max_out_of_scope: the run is not ok when more traces than this are out of scope (None: no
    limit).  max_liveness_not_judged: the same for valid traces whose liveness could not be
    judged (a partial observation omitting a timer variable).  A path holding no trace file raises CorpusError; TLC failing to run raises
    NeighbourhoodError / GraphBuildError (fail closed: never out_of_scope with ok).
    """
    if graph is not None and (lazy or config is not None):
        raise ValueError("choose one of graph=CONFIG and lazy=True / config=CONFIG")
    t0 = time.monotonic()
    paths = list(paths)
    files = collect_files(paths, strict=True)
    if out is not None:
        check_out_not_input(out, paths, files)     # --out is replaced whole: never an input
    user_config = resolve_entry(config, manifest_dir, module) if config is not None else None
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
            _set_graph(g, entry)
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
        results, nb_stats = _lazy(files, manifest_dir, None, progress, 0, total,
                                  user_config=user_config, **kw)
        if user_config is not None:
            summary["config"] = user_config.name
        summary["coverage"] = _nb_coverage(results, manifest_dir, user_config)
    order = {f: i for i, f in enumerate(files)}
    results.sort(key=lambda r: order.get(r["file"], len(order)))
    counts = V.count(results)
    steps = sum(r.get("steps", 0) for r in results)
    judged = sum(V.steps_judged(r) for r in results)
    seconds = time.monotonic() - t0
    too_many = max_out_of_scope is not None and counts["out_of_scope"] > max_out_of_scope
    unjudged = sum(1 for r in results if r.get("liveness_not_judged"))
    too_blind = max_liveness_not_judged is not None and unjudged > max_liveness_not_judged
    summary.update({
        "traces": total, "counts": counts, "steps": steps, "steps_judged": judged,
        "seconds": round(seconds, 3),
        "steps_per_second": round(steps / seconds, 1) if seconds > 0 else None,
        "max_out_of_scope": max_out_of_scope,
        # valid traces whose timers could not be judged (partial observation): their safety
        # verdict stands, but the run is not ok with more of them than allowed (fail closed)
        "liveness_not_judged": unjudged,
        "max_liveness_not_judged": max_liveness_not_judged,
        "ok": counts["invalid"] == 0 and counts["malformed"] == 0 and not too_many
        and not too_blind and counts["valid"] + counts["invalid"] > 0,
        "neighbourhood": nb_stats, "results": results})
    if out is not None:
        _keep_failures(Path(out), results, summary)
    return summary


def is_validate_out(out: Path) -> bool:
    """Is `out` a folder an earlier validate --out wrote (it holds a validate summary.json)?"""
    try:
        d = json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(d, dict) and {"mode", "counts", "results"} <= set(d)


def _nb_coverage(results: list[dict], manifest_dir: Path | None,
                 user_config: ConfigEntry | None = None) -> dict | None:
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
                entries = entries or (None if user_config else _manifest(manifest_dir))
                base = user_config or resolve_base(t, entries, manifest_dir)
                actions[key] = spec_actions(base)
            except (LookupError, ManifestError, CfgError, TraceMalformed):
                actions[key] = []
    if not taken:
        return None
    return action_coverage(taken, dict.fromkeys(a for lst in actions.values() for a in lst))


def _keep_failures(out: Path, results: list[dict], summary: dict) -> None:
    """Write this run's failing traces, their diagnoses and summary.json into `out`, replacing
    an earlier validate output there as a whole: the folder is built beside it and renamed
    into place, so it never mixes two runs' diagnoses (a concurrent run's folder is replaced
    whole, not merged)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not is_validate_out(out))):
        raise CorpusError(f"--out {out} exists and is not an earlier validate output folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        os.chmod(tmp, 0o755)
        used: set[str] = set()
        for r in results:
            if r["verdict"] == "valid":
                continue
            src = Path(r["file"])
            name = src.name
            n = 1
            while name in used or name == "summary.json":
                n += 1
                name = f"{src.stem}.{n}{src.suffix}"
            used.add(name)
            if src.is_file():
                shutil.copyfile(src, tmp / name)
            r["kept_as"] = str(out / name)
            write_atomic(tmp / f"{name}.diagnosis.json",
                         json.dumps(r, indent=2, default=str) + "\n")
        write_atomic(tmp / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
