"""Benchmark of KIP-595 (and, with --protocol elr, KIP-966) liveness in the simulator (not a test).

For each fault profile, runs the refimpl over many seeds with the random faults stopping at
`--faults-until` ms of virtual time, and the run ending as soon as the system has recovered
(a leader a majority follows, its epoch committed, every replica caught up with it) or at the
liveness deadline (`--bound` ms after the faults stopped).  It prints, per profile, the
distribution over seeds of:

  leaderless      virtual time without a working leader during the whole run (ms)
  longest         the longest leaderless interval of a run (ms)
  first leader    time of the first election (ms)
  recovery        time from the end of the faults to recovery (ms)
  never           runs that did not recover within the bound (must be 0 for every default
                  profile: the exit status is 1 otherwise)

(p50 / p95 / max over the seeds; "leaderless" includes the first election and the faults'
own outages, "recovery" only what follows them.)

Usage:  python benchmarks/bench_liveness.py [--seeds N] [--faults-until MS] [--bound MS]
                                          [--profiles a,b] [--bug NAME] [--json]

`--bug vote-rejection-resets-election-timer` shows the election livelock the refimpl avoids.

`--protocol elr` runs the KIP-966 partition (refimpl/elr, ElrConfig's defaults): recovery is a
live leader with every replica back in the ISR and at the leader's HWM, or a partition the
election order keeps offline on purpose (column "offline": unclean.recovery.strategy=None after
every ISR and ELR member stopped uncleanly).  `--strategy` picks unclean.recovery.strategy;
`--bug isr-expand-off-by-one` shows a replica that never rejoins the ISR.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from refimpl.sim.faults import DEFAULT_PROFILES  # noqa: E402
from refimpl.sim.liveness import liveness_profile  # noqa: E402


def bench(profiles: list[str], seeds: int, faults_until: int, bound: int,
          bug: str | None = None, progress=None, protocol: str = "kraft",
          strategy: str | None = None) -> list[dict]:
    cfg = None
    if strategy is not None:
        from refimpl.elr.types import ElrConfig
        cfg = ElrConfig(strategy=strategy)
    return [liveness_profile(prof, range(seeds), faults_until, bound, bug,
                             (lambda seed, prof=prof: progress(prof, seed)) if progress else None,
                             protocol=protocol, elr_config=cfg)
            for prof in profiles]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--faults-until", type=int, default=20_000)
    ap.add_argument("--bound", type=int, default=15_000)
    ap.add_argument("--profiles", default=",".join(DEFAULT_PROFILES))
    ap.add_argument("--bug", default=None)
    ap.add_argument("--protocol", choices=("kraft", "elr"), default="kraft")
    ap.add_argument("--strategy", choices=("Aggressive", "Balanced", "None"), default=None,
                    help="unclean.recovery.strategy (--protocol elr)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.strategy is not None and args.protocol != "elr":
        ap.error("--strategy needs --protocol elr")
    profiles = [x for x in args.profiles.split(",") if x]
    from rich.progress import Progress

    from kraftcore.output import err_console
    with Progress(console=err_console, transient=True) as prog:
        task = prog.add_task("liveness", total=len(profiles) * args.seeds)
        rows = bench(profiles, args.seeds, args.faults_until, args.bound, args.bug,
                     lambda p, s: prog.update(task, advance=1, description=f"liveness {p}"),
                     protocol=args.protocol, strategy=args.strategy)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from rich.table import Table

        from kraftcore.output import console
        kip = "KIP-595" if args.protocol == "kraft" else "KIP-966"
        t = Table(title=f"{kip} liveness: {args.seeds} seeds per profile, faults until "
                        f"{args.faults_until} ms, bound {args.bound} ms"
                        + (f", bug {args.bug}" if args.bug else "")
                        + (f", strategy {args.strategy}" if args.strategy else "") + " (ms: p50 / p95 / max)")
        cols = ["profile", "leaderless", "longest", "first leader", "recovery", "never",
                "safety", "wall s"]
        if args.protocol == "elr":
            cols.insert(6, "offline")
        for col in cols:
            t.add_column(col)

        def f(d):
            return "-" if d["p50"] is None else f"{d['p50']} / {d['p95']} / {d['max']}"
        for r in rows:
            cells = [r["profile"], f(r["leaderless_ms"]), f(r["longest_leaderless_ms"]),
                     f(r["first_leader_ms"]), f(r["recovery_ms"]), str(r["never_recovered"]),
                     str(len(r["safety_violations"])), str(r["wall_s"])]
            if args.protocol == "elr":
                cells.insert(6, str(r["offline_by_design"]))
            t.add_row(*cells)
        console.print(t)
    bad = any(r["never_recovered"] or r["safety_violations"] for r in rows)
    return 1 if bad and args.bug is None else 0


if __name__ == "__main__":
    sys.exit(main())
