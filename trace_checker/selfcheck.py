"""The checker's fail-closed self-check: hostile variants of one valid KRaft trace, each with
the verdict the checker must give.

Each variant is an edit the fail-closed audit made to real simulator traces
(docs/review-fail-closed-2026-11-24.md, F1-F12): a header that tries to weaken the liveness
judge or choose its own, a format rule broken, a value outside the model, a step of no spec
action, a trace that observes nothing.  All variants and the untouched trace are judged in one
run, under the config the user names (so the run also shows that one trace never changes
another's verdict), and each verdict is compared with the expected one.  `kraftcheck demo`
runs it on a trace of its graph corpus (stage "fail-closed").
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kraftcore.output import write_atomic

__all__ = ["Case", "CASES", "pick_source", "write_variants", "run_selfcheck"]

Lines = tuple[dict, list[dict], dict]          # header, steps, footer
LATE_MS = 10_000                               # beyond every timer bound (liveness.py)


@dataclass(frozen=True)
class Case:
    name: str
    finding: str        # the audit's finding it re-plays
    what: str
    verdict: str        # the verdict the checker must give
    mark: str           # malformed: the field named; otherwise a text the verdict must hold
    edit: Callable[[dict, list[dict], dict], None]


def _late(h, st, f):
    for s in st[1:]:
        s["time_ms"] += LATE_MS


def _late_and(more):
    def edit(h, st, f):
        _late(h, st, f)
        more(h, st, f)
    return edit


def _header_constants(**consts):
    def edit(h, st, f):
        b = h.get("bounds") if isinstance(h.get("bounds"), dict) else {}
        h["bounds"] = {**b, "constants": {**b.get("constants", {}), **consts}}
    return edit


def _role_as_map(h, st, f):
    for s in st:
        s["state"]["role"] = {"#map": [[k, v] for k, v in sorted(s["state"]["role"].items())]}


def _set(step: int, path: tuple, value):
    def edit(h, st, f):
        o = st[step]
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return edit


def _bump_last_epoch(h, st, f):
    e = st[-1]["state"]["currentEpoch"]
    e["n1"] = 1 if e["n1"] == 2 else 2


def _string_epoch(h, st, f):
    del st[5:]
    st[4]["state"]["currentEpoch"]["n1"] = "one"


def _made_up_stutter(h, st, f):
    st.insert(4, {**copy.deepcopy(st[3]), "action": "FormatDiskAndElectEveryone"})


def _blind(h, st, f):
    for k, s in enumerate(st):
        s["state"] = {}
        if k:
            s["action"] = "AnythingAtAll"


CASES: list[Case] = [
    Case("untouched", "-", "the simulator's trace as written", "valid", "", lambda h, st, f: None),
    Case("late", "F1", "every step 10 s late: a timer fired far too late", "invalid",
         "never fired", _late),
    Case("late-header-maxepoch-0", "F1", "late, and the header says MaxEpoch = 0", "invalid",
         "never fired", _late_and(_header_constants(MaxEpoch=0))),
    Case("late-header-no-timeout-voters", "F1", "late, and the header says TimeoutVoters = {}",
         "invalid", "never fired", _late_and(_header_constants(TimeoutVoters=[]))),
    Case("late-role-as-map", "F1", "late, role written as an ITF #map", "invalid", "never fired",
         _late_and(_role_as_map)),
    Case("header-spec-module-elr", "F1", "the header claims module ELR", "malformed",
         "spec_module", lambda h, st, f: h.__setitem__("spec_module", "ELR")),
    Case("time-missing", "F1/F12", "step 3 without time_ms", "malformed", "time_ms",
         lambda h, st, f: st[3].pop("time_ms")),
    Case("time-backwards", "F12", "step 4 earlier than step 3", "malformed", "time_ms",
         lambda h, st, f: st[4].__setitem__("time_ms", st[3]["time_ms"] - 1)),
    Case("footer-without-steps", "F12", "a footer that cannot prove the trace complete",
         "malformed", "steps", lambda h, st, f: f.pop("steps")),
    Case("fraction-for-integer", "F6/F12", "an epoch written 1.0", "malformed",
         "state.currentEpoch",
         lambda h, st, f: st[2]["state"]["currentEpoch"].__setitem__(
             "n1", float(st[2]["state"]["currentEpoch"]["n1"]))),
    Case("init-mid-trace", "F7", "Init claimed at step 3", "malformed", "action",
         _set(3, ("action",), "Init")),
    Case("node-not-a-name", "F5", "params.node an object", "malformed", "params.node",
         _set(1, ("params", "node"), {"id": "n1"})),
    Case("last-step-violation", "F3", "the last step changes an epoch no action changes",
         "invalid", "currentEpoch", _bump_last_epoch),
    Case("last-step-unwritable", "F3", "the last step holds a string TLC cannot hold",
         "out_of_scope", "cannot be written for TLC",
         lambda h, st, f: st[-1]["state"]["leaderId"].__setitem__("n1", "v\u00e9")),
    Case("string-epoch", "F4", "the trace ends at step 4 with an epoch \"one\" (TLC cannot "
         "compare it with an integer)", "invalid", "step 4", _string_epoch),
    Case("made-up-stutter", "F7", "a step that changes nothing, claiming an action the spec "
         "does not have", "invalid", "not an action of the spec", _made_up_stutter),
    Case("observes-nothing", "F7", "no variable observed, made-up actions", "out_of_scope",
         "observes no variable", _blind),
]


def pick_source(files: list[Path], voters: frozenset[str] = frozenset({"n1", "n2"})
                ) -> Path | None:
    """A trace the variants can be made of: at least 8 steps, step 1 taken by a voter whose
    timers the judge knows (so shifting it 10 s late opens an obligation it violates)."""
    for p in sorted(files):
        lines = p.read_text(encoding="utf-8").splitlines()
        if len(lines) < 10:
            continue
        step1 = json.loads(lines[2])
        if (step1.get("params") or {}).get("node") in voters:
            return p
    return None


def _read(p: Path) -> Lines:
    lines = [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    return lines[0], lines[1:-1], lines[-1]


# the fewest steps a source needs: the edits touch steps 1 to 5 (pick_source asks for 8)
MIN_STEPS = 8


def write_variants(src: Path, out: Path, steps: int | None = None) -> dict[str, Path]:
    """Write every case's variant of `src` into `out` (replaced); returns name -> file.
    steps: make them of the trace's first `steps` steps only (a prefix of a valid trace is a
    valid trace; at least MIN_STEPS): fewer states for the re-checks of the variants that
    leave the graph (one TLC run per round, a failing batch split in halves)."""
    if steps is not None and steps < MIN_STEPS:
        raise ValueError(f"the self-check needs at least {MIN_STEPS} steps, not {steps}")
    h0, st0, f0 = _read(src)
    if steps is not None and len(st0) > steps + 1:
        del st0[steps + 1:]
        if isinstance(f0.get("violations"), list):     # those the prefix still holds
            f0 = {**f0, "violations": [v for v in f0["violations"] if isinstance(v, dict)
                                       and isinstance(v.get("step"), int) and v["step"] <= steps]}
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = {}
    for c in CASES:
        h, st, f = copy.deepcopy(h0), copy.deepcopy(st0), dict(f0)
        c.edit(h, st, f)
        for k, s in enumerate(st):
            s["step"] = k
        if "steps" in f:
            f["steps"] = len(st) - 1
        tid = f"{h['trace_id']}-{c.name}"
        for o in (h, *st, f):
            o["trace_id"] = tid
        p = out / f"{c.name}.jsonl"
        write_atomic(p, "".join(json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n"
                                for o in (h, *st, f)))
        files[c.name] = p
    return files


def _as_expected(c: Case, r: dict) -> tuple[bool, str]:
    v = r.get("verdict")
    if v == "malformed":
        got = f"malformed {r['malformed'].get('field')}: {r['malformed'].get('message')}"
        return v == c.verdict and r["malformed"].get("field") == c.mark, got
    if v == "invalid":
        got = f"invalid: {r['diagnosis'].get('summary')}"
    elif v == "out_of_scope":
        got = f"out of scope: {r.get('reason')}"
    else:
        got = v or "?"
    return v == c.verdict and c.mark in got, got


def run_selfcheck(src: Path, out: Path, graph: str = "kraft-graph-small",
                  steps: int | None = None) -> dict:
    """Judge every variant of `src` (of its first `steps` steps: write_variants) in one run
    in full-graph mode under `graph`."""
    from trace_checker.corpus import validate_corpus
    files = write_variants(src, out / "traces", steps)
    s = validate_corpus([out / "traces"], graph=graph)
    by_file = {Path(r["file"]).name: r for r in s["results"]}
    rows = []
    for c in CASES:
        r = by_file.get(files[c.name].name, {})
        ok, got = _as_expected(c, r)
        rows.append({"case": c.name, "finding": c.finding, "what": c.what,
                     "expected": c.verdict, "got": got[:300], "as_expected": ok})
    summary = {"source": str(src), "steps": steps, "graph": graph, "cases": len(rows),
               "as_expected": sum(r["as_expected"] for r in rows),
               "ok": all(r["as_expected"] for r in rows), "rows": rows,
               "seconds": s.get("seconds")}
    write_atomic(out / "selfcheck.json", json.dumps(summary, indent=2) + "\n")
    return summary
