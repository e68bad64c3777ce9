"""The KRaft monitor sweep (not a test): the correct refimpl under every fault profile.

Runs `Simulator` (KIP-595 adapter, no trace written) for each fault profile, each cluster
size (3 and 5 voters) and each seed, `--steps` actions per run, with the online monitor's
invariants (refimpl/kraft/invariants.py, refimpl/kraft/view_invariants.py) on, and prints
every violation found (a run stops at its first).  The correct refimpl is expected to raise
none: docs/trace-checking.md reports the figures.

Usage:  python benchmarks/bench_monitor_sweep.py [--seeds 100-139] [--steps 2000]
                                               [--voters 3,5] [--profiles a,b] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from refimpl.kraft.adapter import KRaftAdapter, KRaftBounds  # noqa: E402
from refimpl.sim.faults import DEFAULT_PROFILES, get_profile  # noqa: E402
from refimpl.sim.simulator import Simulator  # noqa: E402


def _seeds(text: str) -> range:
    lo, _, hi = text.partition("-")
    try:
        a, b = int(lo), int(hi or lo)
    except ValueError:
        raise SystemExit(f"--seeds: expected N or N-M, got {text!r}") from None
    if b < a:
        raise SystemExit(f"--seeds: {b} < {a}")
    return range(a, b + 1)


class _CountingAdapter(KRaftAdapter):
    """KRaftAdapter counting its LoseDisk restarts (how often the disk-loss profile wiped)."""

    wiped = 0

    def restart_after_disk_loss(self, node, disk, now_ms):
        t = super().restart_after_disk_loss(node, disk, now_ms)
        if t is not None:
            self.wiped += 1
        return t


def sweep(profiles: list[str], voters: list[int], seeds: range, steps: int) -> dict:
    rows, found = [], []
    for prof in profiles:
        for n in voters:
            names = tuple(f"n{i}" for i in range(1, n + 1))
            t0 = time.perf_counter()
            runs = wiped = 0
            for seed in seeds:
                adapter = _CountingAdapter(KRaftBounds(voters=names))
                r = Simulator(adapter, seed, get_profile(prof), steps, trace=False).run()
                runs += 1
                wiped += adapter.wiped
                for v in r.violations:
                    found.append({"profile": prof, "voters": n, "seed": seed, **v})
            rows.append({"profile": prof, "voters": n, "runs": runs, "disk_losses": wiped,
                         "violations": sum(1 for f in found
                                           if f["profile"] == prof and f["voters"] == n),
                         "wall_seconds": round(time.perf_counter() - t0, 1)})
    return {"benchmark": "monitor-sweep", "steps": steps, "seeds": f"{seeds.start}-{seeds.stop - 1}",
            "rows": rows, "violations": found}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="100-139")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--voters", default="3,5")
    ap.add_argument("--profiles", default=",".join(DEFAULT_PROFILES))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    profiles = [p for p in a.profiles.split(",") if p]
    for p in profiles:
        get_profile(p)                                   # unknown names fail here, clearly
    voters = [int(x) for x in a.voters.split(",") if x]
    out = sweep(profiles, voters, _seeds(a.seeds), a.steps)
    if a.json:
        print(json.dumps(out, indent=2))
        return
    for r in out["rows"]:
        print(f"{r['profile']:<11} {r['voters']} voters  {r['runs']:>3} runs  "
              f"{r['disk_losses']:>3} disk losses  {r['violations']} violations  "
              f"{r['wall_seconds']:>7.1f} s")
    for v in out["violations"]:
        print(f"VIOLATION {v['profile']} {v['voters']} voters seed {v['seed']} step {v['step']}: "
              f"{v['invariant']}: {v['detail']}")
    sys.exit(1 if out["violations"] else 0)


if __name__ == "__main__":
    main()
