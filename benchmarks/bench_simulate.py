"""Benchmark of the deterministic simulator with tracing on (not a test).

Runs a protocol adapter (`--protocol kraft`, KIP-595, the default; `--protocol elr`, KIP-966)
over a few seeds and fault profiles on one core, building every trace line in memory exactly as
`kraftcheck simulate` writes it (the disk write itself is excluded), and prints:

Rates are per CPU second of this single-threaded process (time.process_time), so they measure
one core even on a loaded machine; wall-clock seconds are reported too.

  events/s        simulator events processed per second (message deliveries and drops,
                  duplications, timer expiries, client requests, crashes, restarts, partitions;
                  also the events that turned out to be no-ops, e.g. a stale timer)
  actions/s       simulator actions (spec actions, stutters included) per second
  steps/s         trace steps written (stutters are not written) per second
  bytes/step      trace bytes per written step (each step logs the whole system state)

Usage:  python benchmarks/bench_simulate.py [--protocol kraft|elr] [--seeds N] [--steps N]
                                          [--profiles a,b] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from refimpl.sim.faults import get_profile  # noqa: E402
from refimpl.sim.runner import PROTOCOLS, load_adapter_class  # noqa: E402
from refimpl.sim.simulator import Simulator  # noqa: E402


def bench(profiles: list[str], seeds: int, steps: int, protocol: str = "kraft") -> dict:
    cls = load_adapter_class(protocol)
    rows = []
    for prof in profiles:
        events = nsteps = nactions = nbytes = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for seed in range(seeds):
            r = Simulator(cls.from_options(None, None), seed, get_profile(prof), steps,
                          trace=True).run()
            events += r.events
            nactions += r.steps
            nsteps += r.trace_steps
            nbytes += sum(len(x) + 1 for x in r.lines)
        wall = time.perf_counter() - t0
        dt = time.process_time() - c0   # CPU time of this (single-threaded) process
        rows.append({"profile": prof, "traces": seeds, "events": events, "actions": nactions,
                     "steps": nsteps,
                     "cpu_seconds": round(dt, 3), "wall_seconds": round(wall, 3),
                     "events_per_s": round(events / dt), "actions_per_s": round(nactions / dt),
                     "steps_per_s": round(nsteps / dt), "bytes_per_step": round(nbytes / nsteps),
                     "bytes_per_event": round(nbytes / events)})
    tot_e = sum(r["events"] for r in rows)
    tot_s = sum(r["steps"] for r in rows)
    tot_t = sum(r["cpu_seconds"] for r in rows)
    return {"benchmark": "simulate", "protocol": protocol, "tracing": True,
            "steps_per_trace": steps, "profiles": rows,
            "total": {"events_per_s": round(tot_e / tot_t), "steps_per_s": round(tot_s / tot_t)}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", choices=sorted(PROTOCOLS), default="kraft")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--profiles", default="none,lossy,partitions,crashes,chaos")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    res = bench(a.profiles.split(","), a.seeds, a.steps, a.protocol)
    if a.json:
        print(json.dumps(res, indent=2))
        return
    print(f"{a.protocol} simulator, tracing on, {a.seeds} seeds x {a.steps} steps per profile")
    print(f"{'profile':<11}{'events/s':>10}{'actions/s':>11}{'steps/s':>10}{'bytes/step':>12}"
          f"{'bytes/event':>13}")
    for r in res["profiles"]:
        print(f"{r['profile']:<11}{r['events_per_s']:>10}{r['actions_per_s']:>11}"
              f"{r['steps_per_s']:>10}{r['bytes_per_step']:>12}{r['bytes_per_event']:>13}")
    t = res["total"]
    print(f"{'total':<11}{t['events_per_s']:>10}{t['steps_per_s']:>10}")


if __name__ == "__main__":
    main()
