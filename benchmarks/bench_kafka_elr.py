"""Throughput of Kafka's KIP-966 controller in the harness beside the refimpl's (not a test).

Runs the same seeds, fault profile and step budget twice through the deterministic simulator
with tracing on: once with the refimpl's ELR adapter (refimpl/elr), once with KafkaELRAdapter
(kafka_bridge/elr.py: the refimpl's brokers, Kafka 4.x's controller in one JVM, `serve`
mode), and prints for each

  events/s   simulator events per wall-clock second (the JVM's time is not this process's
             CPU time, so the Kafka rate is wall-clock; the refimpl's is given both ways)
  steps/s    trace steps written per wall-clock second
  calls      Kafka controller inputs sent to the JVM (after the memo), and their mean latency

Usage:  python benchmarks/bench_kafka_elr.py [--seeds N] [--steps N] [--faults chaos]
                                             [--bounds tlc_configs/elr-kafka-graph-small.cfg]
                                             [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from refimpl.elr.adapter import ELRAdapter  # noqa: E402
from refimpl.sim.bounds import parse_cfg  # noqa: E402
from refimpl.sim.faults import get_profile  # noqa: E402
from refimpl.sim.simulator import Simulator  # noqa: E402


def _run(make, seeds: int, steps: int, faults: str) -> dict:
    events = nsteps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for seed in range(seeds):
        r = Simulator(make(), seed, get_profile(faults), steps, trace=True).run()
        events += r.events
        nsteps += r.trace_steps
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seeds": seeds, "events": events, "steps": nsteps, "wall_s": round(wall, 2),
            "events_per_s": round(events / wall), "steps_per_s": round(nsteps / wall),
            "events_per_cpu_s": round(events / cpu) if cpu else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--faults", default="chaos")
    ap.add_argument("--bounds", default=None, help="a TLC config (both runs inside it)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from kafka_bridge.elr import KafkaELRAdapter, harness

    bounds = parse_cfg(a.bounds) if a.bounds else None
    h = harness()
    rows = {"refimpl": _run(lambda: ELRAdapter.from_options(
        None if bounds is None or any(bounds.bool(k, False) for k in (
            "KafkaLeaderlessEpochBump", "KafkaLastKnownLeader", "KafkaMinIsrClearsElr",
            "KafkaRegistersFenced")) else bounds, None), a.seeds, a.steps, a.faults)}
    calls0 = h.calls
    t0 = time.perf_counter()
    rows["kafka"] = _run(lambda: KafkaELRAdapter.from_options(bounds, None), a.seeds, a.steps,
                         a.faults)
    wall = time.perf_counter() - t0
    rows["kafka"].update(version=h.version, jvm_calls=h.calls - calls0,
                         ms_per_call=round(1000 * wall / max(1, h.calls - calls0), 3))
    out = {"faults": a.faults, "steps": a.steps, "bounds": a.bounds, "rows": rows}
    if a.json:
        print(json.dumps(out, indent=2))
        return
    for name, r in rows.items():
        print(f"{name:8} {r['seeds']} seeds x {a.steps} steps ({a.faults}): "
              f"{r['events_per_s']:,} events/s, {r['steps_per_s']:,} steps/s wall "
              f"({r['events']:,} events, {r['steps']:,} trace steps, {r['wall_s']} s)"
              + (f"; {r['jvm_calls']} JVM calls, {r['ms_per_call']} ms per call (wall/calls)"
                 if "jvm_calls" in r else ""))


if __name__ == "__main__":
    main()
