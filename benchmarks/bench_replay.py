"""Benchmark of model-guided replay (kraftcheck replay; trace_checker/replay/, docs/replay.md).

Figures:
  replay    the whole graph (--edges all, default kraft-graph-small) on an implementation:
            wall time, CPU time, edges replayed per second (wall and CPU), outcomes
  detect    (--detect) per KIP-595 planted refimpl bug (kraftcheck simulate --list-bugs): the
            first edge of the graph that diverges when the bug is planted (the replay stops
            there), or why replay cannot see the bug; with --compare, beside the detection by
            random simulation + trace validation (benchmarks/bench_validate.py --detect-only's
            method, on the same graph config)

    .venv/bin/python benchmarks/bench_replay.py                       # kraft-graph-small, refimpl
    .venv/bin/python benchmarks/bench_replay.py --graph elr-graph-small
    .venv/bin/python benchmarks/bench_replay.py --detect --compare --json
    nice -n 10 .venv/bin/python benchmarks/bench_replay.py --graph kraft-graph-small-kafka-3.7 \
        --impl kafka --workers 2 --json      # Kafka 3.7, the whole graph (target: < 30 min)

For --impl kafka the figures add the harness JVMs' CPU seconds (`impl_process_cpu_seconds`), the
snapshots restored and the commands those restores replayed inside the harness, and
`wall_seconds_if_idle`: the largest of Python's CPU seconds, the JVMs' per worker and (Python + JVM)
/ min(workers + 1, cores): a lower bound of the wall time on idle cores, for a shared machine (whose
measured wall the other load inflates).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trace_checker.replay.run import ReplayError, run_replay  # noqa: E402

# Why replay cannot show a bug on the graphs it runs on (checked: the bug's replay finds no
# divergence); the reason names what the bug needs that the graph or replay lacks.
INVISIBLE = {
    "cluster-id-fatal-from-any-replica":
        "needs a misconfigured replica (bounds tlc_configs/kraft-ci-clusterid.cfg); the "
        "no-symmetry graph configs have none",
    "double-vote-after-restart":
        "needs a restart (the vote is lost from the quorum-state file); kraft-graph-small has "
        "MaxRestarts = 0",
    "diverging-epoch-off-by-one":
        "needs a DivergingEpoch response, i.e. logs that diverge: kraft-graph-small's two voters "
        "never diverge (docs/trace-checking.md \"Detection table on the new graph configs\"); "
        "kraft-graph-3voters has them",
    "vote-rejection-resets-election-timer":
        "a timing bug (which timer restarts): replay fires any armed timer at any moment, "
        "so a timer's duration is invisible; only the simulator's liveness check sees it",
}


def bench_replay(graph: str, impl: str, edges: str, workers: int = 0) -> dict:
    import os

    t0 = time.perf_counter()
    res = run_replay(graph, impl, edges, validate=False, workers=workers,
                     progress=lambda d, n: print(f"replay: {d}/{n}", file=sys.stderr,
                                                 flush=True))
    rep = res.report
    w = workers if workers > 0 else min(2, os.cpu_count() or 1)
    cpu = rep["cpu_seconds"] + (rep.get("impl_process_cpu_seconds") or 0.0)
    cores = min(w + 1 if impl == "kafka" else 1, os.cpu_count() or 1)
    return {"graph": graph, "impl": impl, "edges_mode": edges, "edges": rep["edges"],
            "workers": w, "impl_restores": rep.get("impl_restores"),
            "impl_commands_replayed": rep.get("impl_commands_replayed"),
            "total_cpu_seconds": round(cpu, 1),
            # a lower bound: one Python thread, one thread per JVM, `cores` cores
            "wall_seconds_if_idle": round(max(rep["cpu_seconds"], cpu / cores,
                                              (rep.get("impl_process_cpu_seconds") or 0.0) / w),
                                          1),
            "load_average_at_end": round(os.getloadavg()[0], 1),
            "replayed": rep["replayed"], "diverged": rep["diverged"],
            "not_drivable": rep["not_drivable"], "replayed_fraction": rep["replayed_fraction"],
            "explained": rep["explained"], "actions_not_replayed": rep["actions_not_replayed"],
            "per_action": rep["per_action"],
            "replay_seconds": rep["seconds"], "cpu_seconds": rep["cpu_seconds"],
            "impl_process_cpu_seconds": rep.get("impl_process_cpu_seconds"),
            "events_applied": rep["events_applied"],
            "edges_per_second": rep["edges_per_second"],
            "edges_per_cpu_second": rep["edges_per_cpu_second"],
            "graph_load_seconds": round(res.graph_seconds, 1), "graph_cached": res.graph_cached,
            "wall_seconds": round(time.perf_counter() - t0, 1)}


def bench_detect(graph: str, bugs: tuple[str, ...]) -> list[dict]:
    from refimpl.bugs import BUGS

    rows = []
    for name, bug in sorted(BUGS.items()):
        if bug.protocol != "kraft" or (bugs and name not in bugs):
            continue
        t0 = time.perf_counter()
        try:
            res = run_replay(graph, "refimpl", "all", bug=name, validate=False, stop_after=1)
        except ReplayError as e:
            rows.append({"bug": name, "error": str(e)})
            continue
        rep = res.report
        div = [d for d in rep["divergences"] if d["outcome"] == "diverged"]
        row = {"bug": name, "graph": graph, "found": bool(div),
               "seconds": round(time.perf_counter() - t0, 1)}
        if div:
            d = div[0]
            row.update(action=d["action"], step=d["step"],
                       differing=d["diagnosis"].get("differing_variables"),
                       summary=d["diagnosis"].get("summary"))
        else:
            row["why_invisible"] = INVISIBLE.get(name, "no divergence on this graph")
        rows.append(row)
        print(f"detect: {row}", file=sys.stderr, flush=True)
    return rows


def compare(graph: str, rows: list[dict], seeds: int) -> None:
    """Add the random-simulation + validation detection (bench_validate's method) per bug."""
    from benchmarks.bench_validate import bench_detect as sim_detect

    sim = sim_detect({"kraft": None}, max_seeds=seeds, correct=0, steps=200, block=100,
                     jobs=1, graph_seeds=seeds, correct_unbounded=0, protocols=("kraft",),
                     graphs={"kraft": graph}, bugs=tuple(r["bug"] for r in rows))
    by = {r["bug"]: r for r in sim["bugs"]} if isinstance(sim, dict) and "bugs" in sim else {}
    for r in rows:
        s = by.get(r["bug"], {})
        r["simulation_flagged_at_seed"] = s.get("flagged_at_seed")
        r["simulation_mode"] = s.get("mode")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", default="kraft-graph-small")
    ap.add_argument("--impl", default="refimpl")
    ap.add_argument("--edges", default="all")
    ap.add_argument("--workers", type=int, default=0,
                    help="implementation processes (kafka, --edges all); 0: one per core, <= 2")
    ap.add_argument("--detect", action="store_true")
    ap.add_argument("--detect-only", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--seeds", type=int, default=200, help="--compare: simulation seeds per bug")
    ap.add_argument("--bug", action="append", default=[])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict = {}
    if not a.detect_only:
        out["replay"] = bench_replay(a.graph, a.impl, a.edges, a.workers)
    if a.detect or a.detect_only:
        rows = bench_detect(a.graph, tuple(a.bug))
        if a.compare:
            compare(a.graph, rows, a.seeds)
        out["detect"] = rows
    if a.json:
        print(json.dumps(out, indent=2, sort_keys=True))
        return
    r = out.get("replay")
    if r:
        print(f"replay {r['graph']} on {r['impl']} ({r['edges_mode']}): {r['edges']} edges, "
              f"replayed {r['replayed']} ({r['replayed_fraction']:.2%}), diverged "
              f"{r['diverged']}, not drivable {r['not_drivable']}")
        print(f"  {r['replay_seconds']}s wall ({r['edges_per_second']} edges/s), "
              f"{r['cpu_seconds']}s CPU ({r['edges_per_cpu_second']} edges/CPU-s); graph load "
              f"{r['graph_load_seconds']}s ({'cached' if r['graph_cached'] else 'built'})")
        if r.get("impl_process_cpu_seconds") is not None:
            print(f"  implementation processes: {r['workers']}, "
                  f"{r['impl_process_cpu_seconds']}s CPU; {r['total_cpu_seconds']}s CPU in all "
                  f"-> {r['wall_seconds_if_idle']}s wall on idle cores (load average at end "
                  f"{r['load_average_at_end']})")
    for row in out.get("detect", []):
        sim = ""
        if "simulation_flagged_at_seed" in row:
            sim = f" | simulation: seed {row['simulation_flagged_at_seed']}"
        if row.get("found"):
            print(f"  {row['bug']:40} replay: {row['action']} at step {row['step']} "
                  f"({', '.join(row['differing'] or [])}){sim}")
        else:
            print(f"  {row['bug']:40} replay: not shown: "
                  f"{row.get('why_invisible') or row.get('error')}{sim}")


if __name__ == "__main__":
    main()
