"""Detection benchmark of the KIP-642 reassignment refimpl (issue 12): every planted
reassignment bug (refimpl/bugs.py, protocol "reassign") must be flagged by the simulator's online
invariants within --bug-seeds seeds, and correct runs must raise no alarm over --correct seeds.

    .venv/bin/python benchmarks/bench_reassign_detection.py                  # the full run:
        # 1,000 seeds per bug (stopping at the first flagged), 5,000 correct seeds, chaos
    .venv/bin/python benchmarks/bench_reassign_detection.py --bug-seeds 200 --correct 500 --json

Prints, per bug, the first seed flagged, the invariant that flagged it and the seeds run; and
the correct runs' false alarms (any violation), with the wall time of each part.  Exit 1 when
a bug is not flagged within the seeds or a correct run raised an alarm.
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

from refimpl.bugs import bugs_for  # noqa: E402
from refimpl.kraft.reassign_adapter import ReassignAdapter  # noqa: E402
from refimpl.sim.faults import get_profile  # noqa: E402
from refimpl.sim.simulator import first_flagged_seed, run_one  # noqa: E402


def run(seed: int, faults: str, steps: int, bug: str | None):
    return run_one(ReassignAdapter(None, bug), seed, get_profile(faults), steps, trace=False,
                   bug=bug)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bug-seeds", type=int, default=1000)
    ap.add_argument("--correct", type=int, default=5000)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--faults", default="chaos")
    ap.add_argument("--only", default=None, help="only bugs whose name contains this")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    console = Console(stderr=True)
    bugs = [b for b in bugs_for("reassign") if a.only is None or a.only in b.name]
    rows, ok = [], True
    with Progress(console=console, transient=True, disable=a.json) as progress:
        for b in bugs:
            task = progress.add_task(b.name, total=a.bug_seeds)
            t0 = time.monotonic()
            first = first_flagged_seed(lambda b=b.name: ReassignAdapter(None, b), b.name,
                                       a.bug_seeds, get_profile(a.faults), a.steps,
                                       on_seed=lambda _s, t=task: progress.advance(t))
            progress.remove_task(task)
            rows.append({"bug": b.name, "flagged": first is not None,
                         "first_seed": first[0] if first else None,
                         "invariant": first[1] if first else None,
                         "expected": list(b.caught_by),
                         "seeds_run": (first[0] + 1) if first else a.bug_seeds,
                         "seconds": round(time.monotonic() - t0, 1)})
            ok = ok and first is not None
        task = progress.add_task("correct runs", total=a.correct)
        t0 = time.monotonic()
        alarms = []
        for seed in range(a.correct):
            r = run(seed, a.faults, a.steps, None)
            progress.advance(task)
            if r.violations:
                alarms.append({"seed": seed, **r.violations[0]})
        correct = {"seeds": a.correct, "false_alarms": len(alarms), "alarms": alarms[:10],
                   "seconds": round(time.monotonic() - t0, 1)}
        ok = ok and not alarms
    out = {"faults": a.faults, "steps": a.steps, "bug_seeds": a.bug_seeds, "bugs": rows,
           "correct": correct, "ok": ok}
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        t = Table(title=f"reassignment bug detection ({a.faults}, {a.steps} steps per run)")
        for c in ("bug", "first seed flagged", "invariant", "seeds run", "seconds"):
            t.add_column(c)
        for r in rows:
            t.add_row(r["bug"], str(r["first_seed"]) if r["flagged"] else "NOT FLAGGED",
                      r["invariant"] or "-", str(r["seeds_run"]), str(r["seconds"]))
        Console().print(t)
        Console().print(f"correct runs: {correct['seeds']} seeds, {correct['false_alarms']} "
                        f"false alarms, {correct['seconds']} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
