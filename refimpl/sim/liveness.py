"""Liveness runs over many seeds: the distribution of leaderless time and recovery time per
fault profile (used by benchmarks/bench_liveness.py and `kraftcheck demo`).

Each run stops its random faults at `faults_until_ms` and ends at recovery (a leader a
majority follows, its epoch committed, every replica caught up) or at the liveness deadline
`bound_ms` later (refimpl/sim/simulator.py, LIVENESS).  KIP-595 only: the KIP-966 adapter does
not judge recovery.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable

from refimpl.kraft.adapter import KRaftAdapter
from refimpl.sim.faults import get_profile
from refimpl.sim.simulator import LIVENESS, Simulator

__all__ = ["distribution", "liveness_profile"]


def distribution(xs: list[int]) -> dict:
    """p50 / p95 / max / mean of a list of integers (None for an empty list)."""
    if not xs:
        return {"p50": None, "p95": None, "max": None, "mean": None}
    q = statistics.quantiles(xs, n=20, method="inclusive") if len(xs) > 1 else [xs[0]] * 19
    return {"p50": int(statistics.median(xs)), "p95": int(q[18]), "max": max(xs),
            "mean": int(statistics.fmean(xs))}


def liveness_profile(profile: str, seeds: Iterable[int], faults_until_ms: int = 20_000,
                     bound_ms: int = 15_000, bug: str | None = None,
                     on_done: Callable[[int], None] | None = None) -> dict:
    """One row: the distributions over the seeds, the seeds that never recovered and the
    safety violations (seed, invariant) seen."""
    p = get_profile(profile)
    leaderless, longest, first, recovery, never, violated = [], [], [], [], [], []
    seeds = list(seeds)
    t0 = time.perf_counter()
    for seed in seeds:
        r = Simulator(KRaftAdapter(bug=bug), seed, p, 10_000_000, trace=False,
                      faults_until_ms=faults_until_ms, liveness_bound_ms=bound_ms,
                      stop_when_recovered=True).run()
        lv = r.liveness
        leaderless.append(lv["leaderless_ms"])
        longest.append(lv["longest_leaderless_ms"])
        if lv["first_leader_ms"] is not None:
            first.append(lv["first_leader_ms"])
        if lv["verdict"] == "recovered":
            recovery.append(lv["recovered_ms"])
        else:
            never.append(seed)
        safety = [v for v in r.violations if v["invariant"] != LIVENESS]
        if safety:
            violated.append((seed, safety[0]["invariant"]))
        if on_done:
            on_done(seed)
    return {"profile": profile, "seeds": len(seeds), "faults_until_ms": faults_until_ms,
            "bound_ms": bound_ms, "bug": bug,
            "leaderless_ms": distribution(leaderless),
            "longest_leaderless_ms": distribution(longest),
            "first_leader_ms": distribution(first), "recovery_ms": distribution(recovery),
            "never_recovered": len(never), "never_recovered_seeds": never[:20],
            "safety_violations": violated[:20],
            "wall_s": round(time.perf_counter() - t0, 1)}
