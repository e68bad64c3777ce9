"""One replay run end to end (the CLI, the demo stage, the benchmark and the tests use it):
the graph of a manifest config, the driver of an implementation, the target edges, the
replay, the report, the divergence traces and the trace checker's verdict on them.
"""

from __future__ import annotations

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
        adapter = load_adapter_class(protocol).from_options(parse_cfg(entry.cfg_path), bug)
    except ValueError as e:
        raise ReplayError(f"{entry.cfg}: {e}") from None
    try:
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
               progress: Callable[[int, int], None] | None = None) -> ReplayResult:
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
    try:
        visited = visited_edges(g, corpus) if corpus is not None else None
        try:
            targets = select_edges(g, mode, n, seed, visited)
        except EdgesError as e:
            raise ReplayError(str(e)) from None
        model_values = frozenset(adapter.model_values()) if adapter is not None else frozenset()
        run = replay(g, driver, targets, mode, model_values=model_values,
                     explain=explainer(protocol, impl), progress=progress,
                     stop_after=stop_after)
    finally:
        driver.close()
    rep = report(run, graph_name=entry.name, impl=impl, protocol=protocol, mode=mode,
                 seed=seed, sample=n, bug=bug)
    rep["graph_load_seconds"] = round(time.monotonic() - t0 - run.seconds, 3)
    rep["stopped_early"] = run.stopped
    if corpus is not None:
        rep["corpus"] = str(corpus)
        rep["corpus_edges_visited"] = len(visited or ())
    traces = divergence_traces(run, adapter, graph_name=entry.name, bug=bug) \
        if adapter is not None else {}
    if out is not None:
        write_outputs(out, rep, run, traces)
    if validate and traces:
        rep["validate"] = _validate(entry, traces, out)
        if out is not None:
            write_outputs(out, rep, run, traces)
    return ReplayResult(rep, run, traces, gl.seconds, gl.cached)


def _validate(entry: ConfigEntry, traces: dict[str, str], out: Path | None) -> dict:
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
    return {"traces": len(traces), "counts": counts, "verdicts": verdicts,
            "agree": counts.get("invalid", 0) == len(traces),
            "note": "a divergence trace is invalid for the trace checker unless the state the "
                    "implementation reached is another action's successor (then it is valid: "
                    "the step exists, under another label)"}
