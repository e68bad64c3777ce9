"""Fuzz benchmark: >= 10,000 mutated inputs per parser of untrusted input; prints crash and
lenient-acceptance counts.

    .venv/bin/python benchmarks/fuzz.py [--inputs 10000] [--seed 0] [--only trace,cfg] [--json]

A crash is any exception other than the parser's documented "bad input" error; a lenient
acceptance is an input a reader accepted that it must refuse (export converting a trace
validate refuses, a damaged log of a violating TLC run read as ok, a header or footer field of
a wrong type accepted).  See kraftcheck/fuzz.py for the targets and mutators.  The target is 0
of both for every parser; the exit status is 1 otherwise.  Inputs are deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftcheck.fuzz import TARGETS, run_target  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=10_000, help="inputs per parser")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=",".join(TARGETS), help="comma list of parsers")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        ap.error(f"unknown parser(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    reports = []
    for n in names:
        r = run_target(n, args.inputs, args.seed)
        reports.append(r)
        if not args.json:
            print(f"{n:6} {TARGETS[n].what:50} {r.inputs:7d} inputs  {r.crashes:5d} crashes  "
                  f"{r.lenient:5d} lenient  {r.seconds:7.1f}s", flush=True)
            for ex in r.examples[:3]:
                print(f"    crash: {ex['error']}\n    input: {ex['input'][:120]!r}\n{ex['where']}")
    total = sum(r.crashes for r in reports)
    lenient = sum(r.lenient for r in reports)
    if args.json:
        print(json.dumps([{"parser": r.target, "inputs": r.inputs, "crashes": r.crashes,
                           "lenient": r.lenient, "seconds": round(r.seconds, 1),
                           "examples": r.examples} for r in reports], indent=2))
    else:
        print(f"total: {sum(r.inputs for r in reports)} inputs, {total} crashes, "
              f"{lenient} lenient acceptances")
    return 1 if total or lenient else 0


if __name__ == "__main__":
    sys.exit(main())
