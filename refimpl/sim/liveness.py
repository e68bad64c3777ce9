"""Liveness runs over many seeds: the distribution of leaderless time and recovery time per
fault profile (used by benchmarks/bench_liveness.py and `kraftcheck demo`).

Each run stops its random faults at `faults_until_ms` and ends at recovery (a leader a
majority follows, its epoch committed, every replica caught up) or at the liveness deadline
`bound_ms` later (refimpl/sim/simulator.py, LIVENESS).  KIP-595 (`protocol="kraft"`, the
adapter's `recovered`: refimpl/kraft/adapter.py) and KIP-966 (`protocol="elr"`: a live leader,
the full ISR and every HWM caught up, or a partition the election order keeps offline on
purpose, counted as `offline_by_design`: refimpl/elr/liveness.py).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from collections.abc import Callable, Iterable

from refimpl.elr.adapter import ELRAdapter
from refimpl.elr.liveness import offline_by_design
from refimpl.elr.types import ElrConfig
from refimpl.kraft.adapter import KRaftAdapter
from refimpl.sim.faults import get_profile
from refimpl.sim.simulator import LIVENESS, Simulator

__all__ = ["distribution", "liveness_profile", "reassign_recovery"]


def distribution(xs: list[int]) -> dict:
    """p50 / p95 / max / mean of a list of integers (None for an empty list)."""
    if not xs:
        return {"p50": None, "p95": None, "max": None, "mean": None}
    q = statistics.quantiles(xs, n=20, method="inclusive") if len(xs) > 1 else [xs[0]] * 19
    return {"p50": int(statistics.median(xs)), "p95": int(q[18]), "max": max(xs),
            "mean": int(statistics.fmean(xs))}


def liveness_profile(profile: str, seeds: Iterable[int], faults_until_ms: int = 20_000,
                     bound_ms: int = 15_000, bug: str | None = None,
                     on_done: Callable[[int], None] | None = None,
                     protocol: str = "kraft", elr_config: ElrConfig | None = None) -> dict:
    """One row: the distributions over the seeds, the seeds that never recovered and the
    safety violations (seed, invariant) seen.  `protocol`: "kraft" (KIP-595) or "elr"
    (KIP-966: `elr_config`, by default ElrConfig's defaults: Balanced, min ISR 2 of 3; its `bug`
    is replaced by `bug`)."""
    if protocol not in ("kraft", "elr"):
        raise ValueError(f"liveness_profile: protocol {protocol!r} is not kraft or elr")
    p = get_profile(profile)
    leaderless, longest, first, recovery, never, violated = [], [], [], [], [], []
    offline: list[int] = []     # ELR: seeds whose partition ended offline by design
    seeds = list(seeds)
    t0 = time.perf_counter()
    for seed in seeds:
        adapter = KRaftAdapter(bug=bug) if protocol == "kraft" else \
            ELRAdapter(replace(elr_config or ElrConfig(), bug=bug))
        r = Simulator(adapter, seed, p, 10_000_000, trace=False,
                      faults_until_ms=faults_until_ms, liveness_bound_ms=bound_ms,
                      stop_when_recovered=True).run()
        lv = r.liveness
        leaderless.append(lv["leaderless_ms"])
        longest.append(lv["longest_leaderless_ms"])
        if lv["first_leader_ms"] is not None:
            first.append(lv["first_leader_ms"])
        if lv["verdict"] == "recovered":
            recovery.append(lv["recovered_ms"])
            if protocol == "elr" and offline_by_design(adapter.config, adapter.world.states):
                offline.append(seed)
        else:
            never.append(seed)
        safety = [v for v in r.violations if v["invariant"] != LIVENESS]
        if safety:
            violated.append((seed, safety[0]["invariant"]))
        if on_done:
            on_done(seed)
    row = {"protocol": protocol, "profile": profile, "seeds": len(seeds),
           "faults_until_ms": faults_until_ms, "bound_ms": bound_ms, "bug": bug,
           "leaderless_ms": distribution(leaderless),
           "longest_leaderless_ms": distribution(longest),
           "first_leader_ms": distribution(first), "recovery_ms": distribution(recovery),
           "never_recovered": len(never), "never_recovered_seeds": never[:20],
           "safety_violations": violated[:20],
           "wall_s": round(time.perf_counter() - t0, 1)}
    if protocol == "elr":
        row["offline_by_design"] = len(offline)
        row["strategy"] = (elr_config or ElrConfig()).strategy
    return row


def reassign_recovery(voters: tuple[str, ...], targets: tuple | None, profile: str, seed: int,
                      any_replica_votes: bool = False, replicas: tuple[str, ...] = ("n1", "n2", "n3"),
                      faults_until_ms: int = 10_000, max_steps: int = 20_000):
    """One KIP-642 run from the bootstrap `voters` (the other `replicas` observers) towards
    `targets` (None: random subsets), whose faults stop at `faults_until_ms`; it ends at
    recovery or at the liveness deadline.  Returns (the simulator, its result): the
    simulator's `world` holds the replicas' last states.  `any_replica_votes`: the cure of
    the draft's availability finding (refimpl/kraft/reassign_node.py)."""
    from refimpl.kraft.adapter import KRaftBounds
    from refimpl.kraft.reassign_adapter import ReassignAdapter, ReassignWorkload
    observers = tuple(n for n in replicas if n not in voters)
    a = ReassignAdapter(KRaftBounds(voters=voters, observers=observers, values=("v1", "v2")),
                        targets=targets, workload=ReassignWorkload(admin_share=0.05),
                        any_replica_votes=any_replica_votes)
    sim = Simulator(a, seed, get_profile(profile), max_steps, trace=False,
                    faults_until_ms=faults_until_ms, stop_when_recovered=True)
    return sim, sim.run()
