"""Benchmark: Apache Kafka's raft client in the harness beside the refimpl, same profile (not a test).

Runs `kafka-harness-raft.jar simulate` once for all seeds (one JVM, as `kraftcheck simulate
--impl kafka` does), then wraps and checks each raw run (kafka_bridge: the trace writer and the
online invariants), and runs the refimpl's simulator (benchmarks/bench_simulate.py) over the
same seeds, fault profile and step budget.  Prints, per implementation:

  events/s        simulator events per wall-clock second (Kafka: the harness's events, from its
                  end lines, over the JVM's wall time, start-up included; refimpl: its events
                  over its wall time)
  steps/s         trace steps written per wall-clock second, end to end (Kafka: harness and
                  bridge; the bridge's own share is shown apart)
  bytes/step      trace bytes per written step

Wall-clock rates: the JVM is a process of its own (JIT threads, GC), so CPU time of this process
would not measure it.  Needs the harness built (`make setup`).

Usage:  python benchmarks/bench_kafka.py [--seeds N] [--steps N] [--profile chaos] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_simulate import bench as bench_refimpl  # noqa: E402
from kafka_bridge.raft import KafkaRunSpec, harness_args, wrap_raw_file  # noqa: E402
from kafka_bridge.toolchain import find_harness, run_harness  # noqa: E402


def bench_kafka(profile: str, seeds: int, steps: int) -> dict:
    spec = KafkaRunSpec(seeds=list(range(seeds)), faults=profile, steps=steps)
    b = spec.validate()
    h = find_harness("raft")
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
        raw = Path(tmp)
        t0 = time.perf_counter()
        run_harness(h, "simulate", harness_args(spec, b, raw, None))
        harness_s = time.perf_counter() - t0
        events = nsteps = nbytes = 0
        t1 = time.perf_counter()
        for seed in spec.seeds:
            w = wrap_raw_file(raw / f"{seed}.raw.jsonl", spec, b, None, seed)
            events += w.entry["events"]
            nsteps += w.entry["steps"] + 1
            nbytes += w.entry["bytes"]
        bridge_s = time.perf_counter() - t1
    total = harness_s + bridge_s
    return {"impl": "kafka", "version": w.entry["impl"]["version"], "profile": profile,
            "traces": seeds, "events": events, "steps": nsteps,
            "harness_seconds": round(harness_s, 3), "bridge_seconds": round(bridge_s, 3),
            "events_per_s": round(events / harness_s), "steps_per_s": round(nsteps / total),
            "bridge_steps_per_s": round(nsteps / bridge_s) if bridge_s else None,
            "bytes_per_step": round(nbytes / nsteps)}


def bench_ref(profile: str, seeds: int, steps: int) -> dict:
    r = bench_refimpl([profile], seeds, steps)["profiles"][0]
    return {"impl": "refimpl", "version": None, "profile": profile, "traces": seeds,
            "events": r["events"], "steps": r["steps"], "wall_seconds": r["wall_seconds"],
            "events_per_s": round(r["events"] / r["wall_seconds"]),
            "steps_per_s": round(r["steps"] / r["wall_seconds"]),
            "bytes_per_step": r["bytes_per_step"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--profile", default="chaos")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [bench_kafka(a.profile, a.seeds, a.steps), bench_ref(a.profile, a.seeds, a.steps)]
    res = {"benchmark": "kafka", "profile": a.profile, "seeds": a.seeds, "steps": a.steps,
           "rows": rows}
    if a.json:
        print(json.dumps(res, indent=2))
        return
    print(f"profile {a.profile}, {a.seeds} seeds x {a.steps} steps, wall clock")
    print(f"{'impl':<16}{'events':>9}{'events/s':>10}{'steps':>8}{'steps/s':>9}{'bytes/step':>12}")
    for r in rows:
        name = r["impl"] + (f" {r['version']}" if r["version"] else "")
        print(f"{name:<16}{r['events']:>9}{r['events_per_s']:>10}{r['steps']:>8}"
              f"{r['steps_per_s']:>9}{r['bytes_per_step']:>12}")
    k = rows[0]
    print(f"kafka: harness {k['harness_seconds']} s (JVM start included), bridge "
          f"{k['bridge_seconds']} s ({k['bridge_steps_per_s']} steps/s wrapped and checked)")


if __name__ == "__main__":
    main()
