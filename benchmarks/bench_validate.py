"""Benchmark of the trace checker (prints figures; --json for machines).

Figures:
  parse     dump parse states/s (the checker's per-distinct-value parse) next to parsing every
            label whole with the Lark grammar, and the cached-index load
  lookup    graph-lookup steps/s: the stepping alone (trace already decoded) and end to end
            (files read, JSON decoded, verdicts built)
  versus    on the same corpus: this checker (full-graph and neighbourhood mode) against the
            public anchors' method, implemented here honestly: per trace a generated module
            whose Init is the trace's first state and whose Next is the spec's Next constrained
            to the next recorded state through a step-indexed variable, one TLC run per trace
            (valid when TLC reaches the last recorded state).  Reported as steps/s and ratio.
  detect    (--detect, --detect-only) per planted refimpl bug, the first seed whose trace the
            checker flags (up to --max-seeds), and false alarms on --correct traces of the
            correct refimpl (see bench_detect):
            .venv/bin/python benchmarks/bench_validate.py --detect-only --correct 10000

The corpus is --corpus DIR (e.g. simulated refimpl traces), or random walks over the graph
written in the trace format (valid behaviours by construction).

    .venv/bin/python benchmarks/bench_validate.py --graph kraft-graph-small
    .venv/bin/python benchmarks/bench_validate.py --graph ticket-graph --manifest tests/fixtures/traces
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kraftcore.tla_values import parse_state  # noqa: E402
from kraftcore.tlc.manifest import ConfigEntry  # noqa: E402
from kraftcore.tlc.runner import run_config  # noqa: E402
from kraftcore.values import from_itf  # noqa: E402
from trace_checker.cache import cache_dir  # noqa: E402
from trace_checker.corpus import _cfg_model_values, collect_files, validate_corpus  # noqa: E402
from trace_checker.dot import read_dump, unescape_label  # noqa: E402
from trace_checker.fullgraph import graph_key, load_graph, resolve_entry  # noqa: E402
from trace_checker.graph import StateGraph  # noqa: E402
from trace_checker.neighbourhood import raised_constants  # noqa: E402
from trace_checker.observe import Observer  # noqa: E402
from trace_checker.partial import TraceRun  # noqa: E402
from trace_checker.tlagen import ModelValues, cfg_constants, value_size  # noqa: E402
from trace_checker.traces import read_trace  # noqa: E402
from kraftcore.tlc.cfg import parse_cfg  # noqa: E402


def dumps(o) -> str:
    return json.dumps(o, sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------- parse

def bench_parse(entry: ConfigEntry, jobs: int) -> dict:
    gl = load_graph(entry, jobs=jobs)
    dump = Path(gl.graph.meta.get("dump", cache_dir("dumps") / f"{graph_key(entry)}.dot"))
    if not dump.is_file():
        gl = load_graph(entry, jobs=jobs, rebuild=True)
        dump = Path(gl.graph.meta["dump"])
    t0 = time.perf_counter()
    raw = read_dump(dump, unescape=False)
    t1 = time.perf_counter()
    g = StateGraph.from_dump(raw, jobs=jobs)
    t2 = time.perf_counter()
    n = len(g)
    labels = [unescape_label(x) for x in raw.labels.values()]
    sample = labels[: min(len(labels), 3000)]
    parse_state(sample[0])           # build the Lark parser outside the timing
    t3 = time.perf_counter()
    for lab in sample:
        parse_state(lab)
    t4 = time.perf_counter()
    data = g.to_bytes()
    t5 = time.perf_counter()
    StateGraph.from_bytes(data)
    t6 = time.perf_counter()
    return {"config": entry.name, "states": n, "edges": g.edge_count,
            "dump_bytes": dump.stat().st_size,
            "distinct_values": sum(len(t) for t in g.codec.texts),
            "read_dump_seconds": round(t1 - t0, 3), "index_seconds": round(t2 - t1, 3),
            "parse_states_per_second": round(n / (t2 - t0)),
            "whole_label_lark_states_per_second": round(len(sample) / (t4 - t3)),
            "cached_load_seconds": round(t6 - t5, 4),
            "cached_load_states_per_second": round(n / (t6 - t5)),
            "index_bytes": len(data)}


# --------------------------------------------------------------------------- corpus

def random_walks(g: StateGraph, entry: ConfigEntry, out: Path, traces: int, steps: int,
                 seed: int = 1) -> list[Path]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    mvs = sorted(v for v in _cfg_model_values(entry) if v.isidentifier())
    variables = list(g.codec.variables)
    spec_module = entry.module_path.stem.removeprefix("MC")
    files = []
    for t in range(traces):
        tid = f"walk-{t}"
        s = rng.choice(g.initial)
        lines = [dumps({"kind": "header", "schema": "kraftcheck-trace/1", "trace_id": tid,
                        "protocol": spec_module.lower(), "seed": t, "fault_profile": "walk",
                        "bug": None, "bounds": {"file": str(entry.cfg_path), "constants": {}},
                        "spec_module": spec_module, "model_values": mvs, "variables": variables})]

        def state(s):
            return {v: g.codec.itf(i, vid) for i, (v, vid) in enumerate(zip(variables, g.states[s]))}
        lines.append(dumps({"kind": "step", "trace_id": tid, "step": 0, "time_ms": 0,
                            "action": "Init", "params": {}, "state": state(s)}))
        n = 0
        for k in range(1, steps + 1):
            if not g.succ[s]:
                break
            a, d = rng.choice(g.succ[s])
            s = d
            n = k
            lines.append(dumps({"kind": "step", "trace_id": tid, "step": k, "time_ms": k,
                                "action": g.actions[a], "params": {}, "state": state(s)}))
        lines.append(dumps({"kind": "footer", "trace_id": tid, "steps": n, "end_reason": "walk",
                            "invariants": {}, "violations": []}))
        p = out / f"{tid}.jsonl"
        p.write_text("\n".join(lines) + "\n")
        files.append(p)
    return files


def bench_lookup(g: StateGraph, files: list[Path]) -> dict:
    traces = [read_trace(f) for f in files]
    obs = Observer(g.codec, intern=False)
    keys = [obs.keys(t) for t in traces]
    steps = sum(len(t.steps) for t in traces)
    reps = max(1, 200_000 // max(1, steps))
    t0 = time.perf_counter()
    outcomes = {}
    for _ in range(reps):
        for t, k in zip(traces, keys):
            o, _ = TraceRun(t, k, g).advance()
            outcomes[o] = outcomes.get(o, 0) + 1
    dt = time.perf_counter() - t0
    return {"steps": steps * reps, "seconds": round(dt, 3),
            "lookup_steps_per_second": round(steps * reps / dt), "outcomes": outcomes}


# --------------------------------------------------------------------------- baseline

def baseline_one(path: Path, entry: ConfigEntry, size: int, timeout: float) -> tuple[bool, float]:
    """The anchors' method for one trace: one generated trace-constrained spec, one TLC run."""
    t = read_trace(path)
    cfg = parse_cfg(entry.cfg_path)
    variables = sorted(t.variables)
    mv = ModelValues(set(t.model_values) | set(cfg.model_values))
    rows = []
    for s in t.steps:
        rows.append("<<" + ", ".join(mv.tla(from_itf(s.state[v]), v) for v in variables) + ">>")
    init = (cfg.sections.get("INIT") or ["Init"])[0]
    nxt = (cfg.sections.get("NEXT") or ["Next"])[0]
    eq = " /\\ ".join(f"{v} = TC_T[1][{i}]" for i, v in enumerate(variables, 1))
    eq2 = " /\\ ".join(f"{v}' = TC_T[tc_i + 1][{i}]" for i, v in enumerate(variables, 1))
    name = f"TCB_{abs(hash((str(path), time.time_ns()))) % 10**12}"
    body = (f"---- MODULE {name} ----\nEXTENDS {entry.module_path.stem}, TLC, Sequences\n"
            f"{mv.declarations()}VARIABLE tc_i\n"
            f"TC_T == <<\n  " + ",\n  ".join(rows) + ">>\n"
            f"TC_Init == {init} /\\ tc_i = 1 /\\ {eq}\n"
            f"TC_Next == tc_i < Len(TC_T) /\\ {nxt} /\\ {eq2} /\\ tc_i' = tc_i + 1\n"
            f"TC_NotMatched == tc_i < Len(TC_T)\n====\n")
    consts = cfg_constants(cfg, raised_constants(cfg, size)) + mv.bindings()
    cfg_text = ("INIT TC_Init\nNEXT TC_Next\nCONSTANTS\n" + "".join(f"  {c}\n" for c in consts)
                + "INVARIANT TC_NotMatched\n")
    folder = cache_dir("baseline") / name
    folder.mkdir(parents=True)
    for tla in entry.module_path.parent.glob("*.tla"):
        shutil.copy2(tla, folder / tla.name)
    (folder / f"{name}.tla").write_text(body)
    (folder / f"{name}.cfg").write_text(cfg_text)
    e = ConfigEntry(name=name, module=str(folder / f"{name}.tla"), cfg=str(folder / f"{name}.cfg"),
                    profile="bugs", expect="TC_NotMatched", description="baseline", kip="none",
                    manifest="benchmark", workers=1)
    t0 = time.perf_counter()
    r = run_config(e, timeout=timeout)
    dt = time.perf_counter() - t0
    shutil.rmtree(folder, ignore_errors=True)
    if r.log:
        shutil.rmtree(Path(r.log).parent, ignore_errors=True)
    return r.status == "violation" and r.violated == "TC_NotMatched", dt


def bench_baseline(files: list[Path], entry: ConfigEntry, timeout: float) -> dict:
    size = 0
    for f in files:
        for s in read_trace(f).steps:
            for v in s.state.values():
                size = max(size, value_size(from_itf(v)))
    steps = 0
    valid = 0
    t0 = time.perf_counter()
    for f in files:
        # like the checker's two phases: the config's own bounds first, raised only if needed
        ok, _ = baseline_one(f, entry, -1, timeout)
        if not ok:
            ok, _ = baseline_one(f, entry, size, timeout)
        valid += ok
        steps += len(read_trace(f).steps)
    dt = time.perf_counter() - t0
    return {"traces": len(files), "steps": steps, "valid": valid, "seconds": round(dt, 2),
            "steps_per_second": round(steps / dt, 1)}


# --------------------------------------------------------------------------- detection

# The no-symmetry graph configs the detection table uses by default, in order: 3 voters with
# a restart and diverging logs (KIP-595), then the small graphs, which reach what those
# bounds leave out (client records; a Balanced unclean recovery).  elr-graph-rf3 (replication
# factor 3, 3,440,424 states since issue 13's asynchronous metadata) needs more than a
# 2-core 24 GB machine (docs/graph-coverage.md): `--elr-graph elr-graph-rf3,elr-graph-small`
# where it builds.  Each gets --graph-seeds seeds of its own.  --kraft-graph / --elr-graph
# (comma lists) choose others.
GRAPH_CONFIGS = {"kraft": "kraft-graph-3voters,kraft-graph-small",
                 "elr": "elr-graph-small"}


def _judge(d: str, graph: str | None, jobs: int) -> dict:
    """Full-graph mode (with the neighbourhood re-check of steps leaving the graph) when the
    traces were simulated under a graph config's bounds, else neighbourhood mode."""
    if graph:
        return validate_corpus([d], graph=graph, jobs=jobs)
    return validate_corpus([d], lazy=True, jobs=jobs)


def graph_figures(graphs: dict[str, str], protocols: tuple[str, ...], jobs: int) -> dict:
    """States, edges and build time of each graph config (built here unless cached)."""
    out = {}
    for protocol in protocols:
        for name in graphs[protocol].split(","):
            gl = load_graph(name, jobs=jobs, timeout=7200)
            out[name] = {
                "states": len(gl.graph), "edges": gl.graph.edge_count, "cached": gl.cached,
                "seconds": round(gl.seconds, 1), "tlc_seconds": round(gl.tlc_seconds, 1),
                "parse_seconds": round(gl.parse_seconds, 1)}
            print(f"graph {name}: {out[name]}", file=sys.stderr, flush=True)
    return out


def bench_detect(bounds: dict[str, str | None], max_seeds: int, correct: int, steps: int,
                 block: int, jobs: int, faults: str = "chaos", graph_seeds: int = 200,
                 correct_unbounded: int = 200, protocols: tuple[str, ...] = ("kraft", "elr"),
                 graphs: dict[str, str] | None = None, bugs: tuple[str, ...] = (),
                 elr_steps: int | None = None, skip_bugs: bool = False,
                 lazy_protocols: tuple[str, ...] = ()) -> dict:
    """Per planted bug: the first seed whose trace the checker flags (a step that is no
    transition of the spec, or a timer that never fired: liveness.py).  Each bug is first
    simulated under its protocol's no-symmetry graph configs in turn (full-graph mode: cheap),
    `graph_seeds` seeds each (seeds 0.., then the next ones); a bug those bounds cannot show
    (a misconfigured replica, ...) is then simulated unbounded, or under the bounds the bug
    names, and judged in neighbourhood mode, in blocks, up to `max_seeds` seeds in all.  Then
    false alarms: `correct` traces of the correct refimpl per protocol under the first graph
    config, plus `correct_unbounded` unbounded traces in neighbourhood mode.
    `lazy_protocols`: protocols whose traces are still simulated under the graph configs'
    bounds but judged in neighbourhood mode (no full graph is built: for graphs too large to
    build on the machine)."""
    from refimpl.bugs import BUGS
    from refimpl.sim.runner import RunSpec, run_seeds
    graphs = {**GRAPH_CONFIGS, **(graphs or {})}
    figures = graph_figures(graphs, tuple(p for p in protocols if p not in lazy_protocols),
                            jobs)
    # an ELR simulator step is an event, most of which are no spec step: ELR runs are longer
    steps_of = {"kraft": steps, "elr": elr_steps or steps}
    rows = []

    def phase(protocol, name, b, graph, seeds_range, size):
        checked = 0
        for start in range(seeds_range.start, seeds_range.stop, size):
            seeds = list(range(start, min(seeds_range.stop, start + size)))
            with tempfile.TemporaryDirectory() as d:
                run_seeds(RunSpec(protocol, seeds, faults, steps_of[protocol], b, name), Path(d))
                s = _judge(d, graph, jobs)
            checked += len(seeds)
            bad = sorted((r["seed"], r) for r in s["results"] if r["verdict"] == "invalid")
            if bad:
                r = bad[0][1]
                how = ("liveness" if r.get("liveness") else f"step {r.get('failed_step')}")
                return (bad[0][0], how), checked
        return None, checked

    for name, bug in sorted(BUGS.items()):
        if skip_bugs or bug.protocol not in protocols or (bugs and name not in bugs):
            continue
        t0 = time.perf_counter()
        found, checked, start = None, 0, 0
        try:
            # a bug that needs bounds of its own (a misconfigured replica) is not in the graphs
            for graph in ([] if bug.bounds else graphs[bug.protocol].split(",")):
                gb = bounds.get(bug.protocol) or str(resolve_entry(graph).cfg_path)
                lazy = bug.protocol in lazy_protocols
                found, more = phase(bug.protocol, name, gb, None if lazy else graph,
                                    range(start, start + graph_seeds), 100)
                checked, start = checked + more, start + graph_seeds
                mode = f"{'neighbourhood, bounds' if lazy else 'graph'} {graph}"
                if found is not None:
                    break
            if found is None:
                nb_bounds = str(ROOT / bug.bounds) if bug.bounds else None
                found, more = phase(bug.protocol, name, nb_bounds, None,
                                    range(start, max(max_seeds, start + block)), block)
                checked += more
                mode = f"neighbourhood ({bug.bounds or 'unbounded'})"
        except Exception as e:  # a refimpl that cannot run this bug: say so
            rows.append({"bug": name, "protocol": bug.protocol, "error": str(e)})
            print(f"detect: {rows[-1]}", file=sys.stderr, flush=True)
            continue
        rows.append({"bug": name, "protocol": bug.protocol,
                     "flagged_at_seed": found[0] if found else None,
                     "flagged_by": found[1] if found else None,
                     "mode": mode, "seeds_checked": checked,
                     "seconds": round(time.perf_counter() - t0, 1)})
        print(f"detect: {rows[-1]}", file=sys.stderr, flush=True)
    alarms = {}
    for protocol in sorted({b.protocol for b in BUGS.values()} & set(protocols)):
        graph = graphs[protocol].split(",")[0]
        for label, b, g, n, size in (
                ("graph", bounds.get(protocol) or str(resolve_entry(graph).cfg_path),
                 graph, correct, 1000),
                ("neighbourhood", None, None, correct_unbounded, block)):
            invalid = total = other = steps_done = 0
            t0 = time.perf_counter()
            for start in range(0, n, size):
                seeds = list(range(100_000 + start, 100_000 + min(n, start + size)))
                with tempfile.TemporaryDirectory() as d:
                    run_seeds(RunSpec(protocol, seeds, faults, steps_of[protocol], b, None),
                              Path(d))
                    s = _judge(d, None if protocol in lazy_protocols else g, jobs)
                invalid += s["counts"]["invalid"]
                other += s["counts"]["out_of_scope"] + s["counts"]["malformed"]
                total += s["traces"]
                steps_done += s["steps"]
            alarms[f"{protocol} ({label})"] = {
                "bounds": b, "traces": total, "steps": steps_done, "false_alarms": invalid,
                "not_judged": other, "seconds": round(time.perf_counter() - t0, 1)}
            print(f"correct {protocol} {label}: {alarms[f'{protocol} ({label})']}",
                  file=sys.stderr, flush=True)
    return {"graphs": figures, "bugs": rows, "correct_refimpl": alarms}


# --------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="kraft-graph-small")
    ap.add_argument("--manifest", type=Path, default=None)
    ap.add_argument("--module", default=None, help="with --graph FILE.cfg outside the manifest")
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--traces", type=int, default=200)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--baseline-traces", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--detect", action="store_true")
    ap.add_argument("--max-seeds", type=int, default=1000)
    ap.add_argument("--correct", type=int, default=10_000)
    ap.add_argument("--detect-steps", type=int, default=200)
    ap.add_argument("--elr-steps", type=int, default=3000,
                    help="detection: simulator steps per KIP-966 trace (events, most of them "
                         "no spec step)")
    ap.add_argument("--skip-bugs", action="store_true",
                    help="detection: only the false-alarm runs on the correct refimpl")
    ap.add_argument("--block", type=int, default=100)
    ap.add_argument("--kraft-bounds", default=None, help="detection: KIP-595 bounds config")
    ap.add_argument("--elr-bounds", default=None, help="detection: KIP-966 bounds config")
    ap.add_argument("--faults", default="chaos", help="detection: fault profile")
    ap.add_argument("--kraft-graph", default=GRAPH_CONFIGS["kraft"],
                    help="detection: the KIP-595 no-symmetry graph config")
    ap.add_argument("--elr-graph", default=GRAPH_CONFIGS["elr"],
                    help="detection: the KIP-966 no-symmetry graph config")
    ap.add_argument("--bug", action="append", default=[],
                    help="detection: only these planted bugs (repeatable; default all)")
    ap.add_argument("--protocol", action="append", choices=["kraft", "elr"],
                    help="detection: only these protocols (repeatable; default both)")
    ap.add_argument("--graph-seeds", type=int, default=200,
                    help="detection: seeds per bug under the graph config first")
    ap.add_argument("--correct-unbounded", type=int, default=200,
                    help="detection: unbounded correct traces judged in neighbourhood mode")
    ap.add_argument("--lazy-graph", action="append", choices=["kraft", "elr"], default=[],
                    help="detection: simulate this protocol under its graph configs' bounds "
                         "but judge in neighbourhood mode (no full graph built; repeatable)")
    ap.add_argument("--detect-only", action="store_true")
    ap.add_argument("--skip-versus", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict = {}
    if a.detect_only:
        out["detect"] = bench_detect({"kraft": a.kraft_bounds, "elr": a.elr_bounds}, a.max_seeds,
                                     a.correct, a.detect_steps, a.block, a.jobs, a.faults,
                                     a.graph_seeds, a.correct_unbounded,
                                     tuple(a.protocol or ("kraft", "elr")),
                                     {"kraft": a.kraft_graph, "elr": a.elr_graph}, tuple(a.bug),
                                     a.elr_steps, a.skip_bugs, tuple(a.lazy_graph))
        _print_detect(out) if not a.json else print(json.dumps(out, indent=2))
        return
    entry = resolve_entry(a.graph, a.manifest, a.module)
    out["parse"] = bench_parse(entry, a.jobs)
    g = load_graph(entry).graph
    with tempfile.TemporaryDirectory() as tmp:
        files = ([Path(f) for f in collect_files([a.corpus])] if a.corpus
                 else random_walks(g, entry, Path(tmp) / "walks", a.traces, a.steps))
        out["corpus"] = {"traces": len(files), "source": str(a.corpus or "random walks"),
                         "steps": sum(len(read_trace(f).steps) for f in files)}
        out["lookup"] = bench_lookup(g, files)
        s = validate_corpus(files, graph=entry, jobs=a.jobs)
        out["full_graph_end_to_end"] = {
            "counts": s["counts"], "seconds": s["seconds"], "steps": s["steps"],
            "steps_per_second": s["steps_per_second"], "graph": s["graph"]}
        if not a.skip_versus:
            s2 = validate_corpus(files, lazy=True, jobs=a.jobs, manifest_dir=a.manifest)
            out["neighbourhood_end_to_end"] = {
                "counts": s2["counts"], "seconds": s2["seconds"], "steps": s2["steps"],
                "steps_per_second": s2["steps_per_second"], "tlc": s2["neighbourhood"]}
            sub = files[: a.baseline_traces]
            base = bench_baseline(sub, entry, a.timeout)
            out["baseline_one_tlc_per_trace"] = base
            out["ratio"] = {
                "full_graph_vs_baseline": round(s["steps_per_second"] / base["steps_per_second"], 1),
                "neighbourhood_vs_baseline": round(s2["steps_per_second"] / base["steps_per_second"], 1)}
    if a.detect:
        out["detect"] = bench_detect({"kraft": a.kraft_bounds, "elr": a.elr_bounds}, a.max_seeds,
                                     a.correct, a.detect_steps, a.block, a.jobs, a.faults,
                                     graphs={"kraft": a.kraft_graph, "elr": a.elr_graph},
                                     bugs=tuple(a.bug), elr_steps=a.elr_steps,
                                     skip_bugs=a.skip_bugs)
    if a.json:
        print(json.dumps(out, indent=2))
        return
    p = out["parse"]
    print(f"graph {p['config']}: {p['states']} states, {p['edges']} edges, {p['distinct_values']} "
          f"distinct values, dump {p['dump_bytes']} bytes")
    print(f"  parse: {p['parse_states_per_second']} states/s (whole-label Lark parse: "
          f"{p['whole_label_lark_states_per_second']} states/s); cached index load "
          f"{p['cached_load_seconds']}s = {p['cached_load_states_per_second']} states/s")
    lk = out["lookup"]
    print(f"lookup: {lk['lookup_steps_per_second']} steps/s ({lk['steps']} steps)")
    fg = out["full_graph_end_to_end"]
    print(f"full-graph end to end: {fg['steps_per_second']} steps/s, {fg['counts']}")
    if "ratio" in out:
        nb = out["neighbourhood_end_to_end"]
        b = out["baseline_one_tlc_per_trace"]
        print(f"neighbourhood end to end: {nb['steps_per_second']} steps/s, {nb['counts']}")
        print(f"baseline (one TLC run per trace, {b['traces']} traces): {b['steps_per_second']} "
              f"steps/s, {b['valid']}/{b['traces']} valid")
        print(f"ratio: full graph {out['ratio']['full_graph_vs_baseline']}x, neighbourhood "
              f"{out['ratio']['neighbourhood_vs_baseline']}x")
    if "detect" in out:
        _print_detect(out)


def _print_detect(out: dict) -> None:
    for name, f in out["detect"].get("graphs", {}).items():
        print(f"graph {name}: {f['states']:,} states, {f['edges']:,} edges, "
              + ("cached" if f["cached"] else f"built in {f['seconds']}s (TLC {f['tlc_seconds']}s, "
                 f"parse {f['parse_seconds']}s)"))
    print("detection (first seed whose trace is invalid; None = not flagged):")
    for r in out["detect"]["bugs"]:
        print(f"  bug {r['bug']:36s} {r['protocol']:5s} {r.get('flagged_at_seed', r.get('error'))} "
              f"by {r.get('flagged_by')} (seeds checked {r.get('seeds_checked')}, {r.get('mode')}, "
              f"{r.get('seconds')}s)")
    for prot, r in out["detect"]["correct_refimpl"].items():
        print(f"  correct {prot}: {r['false_alarms']} false alarms / {r['traces']} traces "
              f"({r['steps']} steps, {r['not_judged']} not judged)")


if __name__ == "__main__":
    main()
