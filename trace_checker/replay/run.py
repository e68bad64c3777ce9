"""One replay run end to end (the CLI, the demo stage, the benchmark and the tests use it):
the graph of a manifest config, the driver of an implementation, the target edges, the
replay, the report, the divergence traces and the trace checker's verdict on them.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kraftcore.tlc.manifest import ConfigEntry
from trace_checker.fullgraph import load_graph, resolve_entry
from trace_checker.graph import StateGraph
from trace_checker.replay.driver import Driver, DriverError, RefimplDriver
from trace_checker.replay.engine import (EdgesError, ReplayRun, parse_edges, replay,
                                         select_edges)
from trace_checker.replay.explain import explainer
from trace_checker.replay.report import divergence_traces, report, write_outputs

__all__ = ["ReplayError", "ReplayResult", "run_replay", "protocol_of", "visited_edges",
           "IMPLS"]

IMPLS = ("refimpl", "kafka")


class ReplayError(ValueError):
    """Bad arguments or a run that cannot start (exit status 2)."""


@dataclass
class ReplayResult:
    report: dict
    run: ReplayRun
    traces: dict[str, str]
    graph_seconds: float
    graph_cached: bool


def protocol_of(entry: ConfigEntry) -> str:
    """The refimpl protocol whose spec module the config's module instantiates (MC<spec>)."""
    from refimpl.sim.runner import PROTOCOLS, load_adapter_class

    stem = Path(entry.module).stem
    for name in PROTOCOLS:
        cls = load_adapter_class(name)
        if stem in (f"MC{cls.spec_module}", cls.spec_module):
            return name
    raise ReplayError(f"config {entry.name}: no refimpl protocol implements module {stem} "
                      f"(known: {', '.join(PROTOCOLS)})")


def make_driver(impl: str, entry: ConfigEntry, g: StateGraph, bug: str | None):
    """(driver, adapter or None, protocol)."""
    if impl == "kafka":
        from trace_checker.replay.kafka import KafkaDriver
        return KafkaDriver.open(entry, g, bug), None, "kraft"
    return _refimpl_driver(impl, entry, g, bug)


def trace_adapter(entry: ConfigEntry):
    """The refimpl adapter of the config's protocol, for what a divergence trace's header and
    the diagnosis need of any implementation (protocol, spec module, model values)."""
    from refimpl.sim.bounds import parse_cfg
    from refimpl.sim.runner import load_adapter_class

    try:
        return load_adapter_class(protocol_of(entry)).from_options(parse_cfg(entry.cfg_path), None)
    except ValueError as e:
        raise ReplayError(f"{entry.cfg}: {e}") from None


def _refimpl_driver(impl: str, entry: ConfigEntry, g: StateGraph, bug: str | None):
    if impl != "refimpl":
        raise ReplayError(f"--impl {impl!r}: choose one of {', '.join(IMPLS)}")
    from refimpl.bugs import get_bug
    from refimpl.sim.bounds import parse_cfg
    from refimpl.sim.runner import load_adapter_class

    protocol = protocol_of(entry)
    if bug is not None:
        try:
            b = get_bug(bug)
        except KeyError as e:
            raise ReplayError(str(e.args[0])) from None
        if b.protocol != protocol:
            raise ReplayError(f"bug {bug!r} belongs to protocol {b.protocol!r}, the graph "
                              f"{entry.name} to {protocol!r}")
    try:
        cfg = parse_cfg(entry.cfg_path)
        adapter = load_adapter_class(protocol).from_options(cfg, bug)
    except ValueError as e:
        raise ReplayError(f"{entry.cfg}: {e}") from None
    try:
        if protocol == "elr":
            from trace_checker.replay.elr import ElrDriver    # KIP-966's own events
            return ElrDriver(adapter, g.codec.variables), adapter, protocol
        return RefimplDriver(adapter, g.codec.variables), adapter, protocol
    except DriverError as e:
        raise ReplayError(str(e)) from None


def visited_edges(g: StateGraph, corpus: Path) -> set[tuple[int, int, int]]:
    """The graph edges the valid traces of a corpus walked (complete observations)."""
    from trace_checker.corpus import collect_files
    from trace_checker.observe import Observer
    from trace_checker.partial import TraceRun
    from trace_checker.traces import TraceMalformed, read_trace

    obs = Observer(g.codec, intern=False)
    out: set[tuple[int, int, int]] = set()
    for f in collect_files([corpus], strict=True):
        try:
            t = read_trace(f)
            keys = obs.keys(t)
        except TraceMalformed:
            continue
        if set(t.variables) != set(g.codec.variables):
            continue
        r = TraceRun(t, keys, g)
        if r.advance()[0] != "valid":
            continue
        for a, b in zip(r.path, r.path[1:]):
            for aid, d in g.succ[a]:
                if d == b:
                    out.add((a, aid, b))
    return out


def _check_early(impl: str, bug: str | None) -> None:
    """The argument errors found without the graph (fail fast, before a TLC build)."""
    if impl not in IMPLS:
        raise ReplayError(f"--impl {impl!r}: choose one of {', '.join(IMPLS)}")
    if bug is not None:
        from refimpl.bugs import get_bug
        try:
            get_bug(bug)
        except KeyError as e:
            raise ReplayError(str(e.args[0])) from None
    if impl == "kafka":
        from trace_checker.replay.kafka import KafkaDriver
        KafkaDriver.check()


def run_replay(graph: str, impl: str = "refimpl", edges: str = "all", *, seed: int = 0,
               corpus: Path | None = None, out: Path | None = None, bug: str | None = None,
               validate: bool = True, jobs: int = 1, stop_after: int | None = None,
               progress: Callable[[int, int], None] | None = None,
               workers: int = 0) -> ReplayResult:
    """`workers`: implementation processes of an "all" run on a driver that can fork (the
    Kafka harness); 0 = one per core, at most 2.  The outcomes do not depend on it."""
    try:
        mode, n = parse_edges(edges)
    except EdgesError as e:
        raise ReplayError(str(e)) from None
    entry = resolve_entry(graph)
    _check_early(impl, bug)
    t0 = time.monotonic()
    gl = load_graph(entry, jobs=jobs)
    g = gl.graph
    driver, adapter, protocol = make_driver(impl, entry, g, bug)
    children0 = _children_cpu()
    try:
        visited = visited_edges(g, corpus) if corpus is not None else None
        try:
            targets = select_edges(g, mode, n, seed, visited)
        except EdgesError as e:
            raise ReplayError(str(e)) from None
        meta = adapter if adapter is not None else trace_adapter(entry)
        model_values = frozenset(meta.model_values())
        run = replay(g, driver, targets, mode, model_values=model_values,
                     explain=explainer(protocol, impl), progress=progress,
                     stop_after=stop_after,
                     workers=workers if workers > 0 else min(2, os.cpu_count() or 1))
    finally:
        driver.close()
    # the implementation's own processes (the Kafka harness's JVM), reaped by close()
    run.impl_cpu_seconds = _children_cpu() - children0     # type: ignore[attr-defined]
    rep = report(run, graph_name=entry.name, impl=impl, protocol=protocol, mode=mode,
                 seed=seed, sample=n, bug=bug)
    rep["graph_load_seconds"] = round(time.monotonic() - t0 - run.seconds, 3)
    rep["impl_process_cpu_seconds"] = round(run.impl_cpu_seconds, 3)  # type: ignore[attr-defined]
    rep["stopped_early"] = run.stopped
    if hasattr(driver, "restores"):
        # the Kafka driver: snapshots restored (one harness command each) and the commands
        # those restores replayed inside the harness
        rep["impl_restores"] = driver.restores
        rep["impl_commands_replayed"] = driver.commands_replayed
    if corpus is not None:
        rep["corpus"] = str(corpus)
        rep["corpus_edges_visited"] = len(visited or ())
    traces = divergence_traces(run, meta, graph_name=entry.name, bug=bug,
                               impl=getattr(driver, "impl_header", None))
    if out is not None:
        write_outputs(out, rep, run, traces)
    if validate and traces:
        rep["validate"] = _validate(entry, traces, out, run)
        if out is not None:
            write_outputs(out, rep, run, traces)
    return ReplayResult(rep, run, traces, gl.seconds, gl.cached)


# explained classes of divergences where the implementation took ANOTHER step the spec allows
# (explain.py: Kafka's timer first, its acts at once): the trace checker must find them valid
SPEC_STEP_CLASSES = ("finding R1", "finding R3")


def _in_graph(g, state: dict) -> bool:
    """Is `state` one of the graph's states (without adding values to its codec)?"""
    from kraftcore.values import canonical_json

    codec = g.codec
    key = tuple(codec.lookup_id(i, canonical_json(state[v]))
                for i, v in enumerate(codec.variables))
    return -1 not in key and key in g.index


def expected_verdicts(run: ReplayRun, traces: dict[str, str]) -> dict[str, str]:
    """The verdict each divergence trace must get from the trace checker for both directions to
    agree: "valid" when the state the implementation reached is a successor of the source
    state in the graph (the step exists, under another label or choice), or lies beyond the
    graph's bounds after a step of a class that is a spec step (SPEC_STEP_CLASSES: e.g.
    Kafka's election timer firing first into an epoch above MaxEpoch; the checker re-checks
    such a step with TLC); "invalid" otherwise."""
    g = run.graph
    out = {}
    for name in traces:
        src, dst = (int(x) for x in name.rsplit("-", 2)[1:])
        oc = next(((oc, res) for e, (oc, res) in run.failures.items()
                   if e[0] == src and e[2] == dst and oc.outcome == "diverged"), None)
        reached = oc[1].state if oc is not None else None
        if reached is None:
            out[name] = "invalid"
        elif any(g.state(t) == reached for _, t in g.succ[src]):
            out[name] = "valid"
        elif (oc[0].explained or "").startswith(SPEC_STEP_CLASSES) and not _in_graph(g, reached):
            out[name] = "valid"
        else:
            out[name] = "invalid"
    return out


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children (user + system)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _validate(entry: ConfigEntry, traces: dict[str, str], out: Path | None,
              run: ReplayRun | None = None) -> dict:
    """The trace checker's verdict on the divergence traces (the other direction)."""
    from trace_checker.corpus import validate_corpus

    with tempfile.TemporaryDirectory(prefix="replay-div-") as tmp:
        folder = out / "divergences" if out is not None else Path(tmp)
        if out is None:
            for name, text in traces.items():
                (folder / f"{name}.jsonl").write_text(text, encoding="utf-8")
        s = validate_corpus([folder], graph=entry, max_liveness_not_judged=None)
    counts = s.get("counts") or {}
    verdicts = {Path(r["file"]).stem: r["verdict"] for r in s.get("results", [])}
    expect = expected_verdicts(run, traces) if run is not None else \
        {n: "invalid" for n in traces}
    return {"traces": len(traces), "counts": counts, "verdicts": verdicts,
            "expected": expect,
            "agree": all(verdicts.get(n) == v for n, v in expect.items()),
            "note": "a divergence trace is invalid for the trace checker unless the state the "
                    "implementation reached is another successor of the source state (then it "
                    "is valid: the step exists, under another label); `expected` says which, "
                    "`agree` that every verdict is the expected one"}
