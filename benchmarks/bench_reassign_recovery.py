"""Recovery benchmark of the KIP-642 reassignment refimpl: do reassignments under faults get
their quorum back once the faults stop?

Each run simulates a reassignment under a fault profile whose faults stop at 10 s; the run is
`recovered` when the online liveness property (a leader followed by a majority, replicas
caught up: LeaderElectedAndReplicasCaughtUp) holds again within the simulator's default
bound, `not_recovered` otherwise.  The reassignments: 2 -> 1 voters, 3 -> 2, 1 -> 2, 1 -> 3
(the draft's "Bootstrapping Example" growth) and random targets of 3 replicas; the fault
profiles none, lossy, partitions, crashes, chaos and delays.

    .venv/bin/python benchmarks/bench_reassign_recovery.py                    # 100 seeds a cell
    .venv/bin/python benchmarks/bench_reassign_recovery.py --seeds 20 --json
    .venv/bin/python benchmarks/bench_reassign_recovery.py --any-replica-votes   # the cure

`--any-replica-votes` runs the cure of the draft's availability finding
(docs/spec-reassignment.md §4, `reassign-finding-observer-vote-deadlock`): a replica that is
not a voter by its own log answers VoteRequests on their merits.  `--compare` runs both, side
by side.  Prints, per cell, the runs that never recovered and their seeds, and the wall time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402
from rich.table import Table  # noqa: E402

from refimpl.sim.liveness import reassign_recovery  # noqa: E402

PROFILES = ("none", "lossy", "partitions", "crashes", "chaos", "delays")
REASSIGNMENTS = {
    "2->1": (("n1", "n2"), (("n1",),)),
    "3->2": (("n1", "n2", "n3"), (("n1", "n2"),)),
    "1->2": (("n1",), (("n1", "n2"),)),
    "1->3": (("n1",), (("n1", "n2", "n3"),)),
    "random-3": (("n1", "n2", "n3"), None),
}
FAULTS_UNTIL_MS = 10_000
LIVENESS_PROPERTY = "LeaderElectedAndReplicasCaughtUp"


def verdict(voters, targets, profile: str, seed: int, any_replica_votes: bool) -> str:
    """The liveness verdict of one run (recovered / not_recovered / a safety violation)."""
    _, r = reassign_recovery(voters, targets, profile, seed, any_replica_votes,
                             faults_until_ms=FAULTS_UNTIL_MS)
    # the liveness deadline is reported as a violation of LeaderElectedAndReplicasCaughtUp;
    # any other is a safety invariant's
    if any(v["invariant"] != LIVENESS_PROPERTY for v in r.violations):
        return "violation"
    return (r.liveness or {}).get("verdict") or "unknown"


def sweep(seeds: int, profiles, any_replica_votes: bool, progress: Progress | None) -> dict:
    cells = {}
    task = progress.add_task("cure" if any_replica_votes else "draft",
                             total=len(profiles) * len(REASSIGNMENTS) * seeds) if progress else None
    t0 = time.monotonic()
    for profile in profiles:
        for name, (voters, targets) in REASSIGNMENTS.items():
            counts: dict[str, int] = {}
            stuck = []
            for seed in range(seeds):
                v = verdict(voters, targets, profile, seed, any_replica_votes)
                counts[v] = counts.get(v, 0) + 1
                if v != "recovered":
                    stuck.append(seed)
                if progress:
                    progress.advance(task)
            cells[f"{profile} {name}"] = {"profile": profile, "reassignment": name,
                                          "runs": seeds, "counts": counts, "not_recovered_seeds": stuck}
    runs = sum(c["runs"] for c in cells.values())
    bad = sum(len(c["not_recovered_seeds"]) for c in cells.values())
    return {"any_replica_votes": any_replica_votes, "runs": runs, "not_recovered": bad,
            "violations": sum(c["counts"].get("violation", 0) for c in cells.values()),
            "seconds": round(time.monotonic() - t0, 1), "cells": cells}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100, help="seeds per cell (default 100)")
    ap.add_argument("--profiles", default=",".join(PROFILES))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--any-replica-votes", action="store_true", help="run the cure only")
    mode.add_argument("--compare", action="store_true", help="run the draft and the cure")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    profiles = [p for p in a.profiles.split(",") if p]
    variants = [False, True] if a.compare else [a.any_replica_votes]
    err = Console(stderr=True)
    with Progress(console=err, transient=True) as progress:
        results = [sweep(a.seeds, profiles, v, progress) for v in variants]
    if a.json:
        print(json.dumps({"seeds": a.seeds, "faults_until_ms": FAULTS_UNTIL_MS,
                          "results": results}, indent=2))
        return 0
    out = Console()
    t = Table(title=f"never recovered, of {a.seeds} runs a cell (faults stop at "
                    f"{FAULTS_UNTIL_MS // 1000} s)")
    t.add_column("profile")
    t.add_column("reassignment")
    for r in results:
        t.add_column("cure" if r["any_replica_votes"] else "draft", justify="right")
    for key in results[0]["cells"]:
        c0 = results[0]["cells"][key]
        t.add_row(c0["profile"], c0["reassignment"], *[
            str(len(r["cells"][key]["not_recovered_seeds"])) for r in results])
    out.print(t)
    for r in results:
        out.print(f"{'cure' if r['any_replica_votes'] else 'draft'}: {r['not_recovered']} of "
                  f"{r['runs']} runs did not recover (of them {r['violations']} stopped at a "
                  f"safety violation), "
                  f"{r['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
