"""The proof harness: an obligation is hypotheses + a goal; z3 proves it when
hypotheses /\\ ~goal is unsatisfiable.

Every obligation first checks that its hypotheses are satisfiable on their own, so a proof can
never pass vacuously (contradictory hypotheses would make every goal "proved"); such an
obligation is reported as `unknown` with the reason.  A satisfiable negation gives a
counterexample, which the obligation turns into readable values (`show`).  Each obligation
states what it expects: `proved` for the rules as the KIPs and the spec state them,
`counterexample` for planted variants (one rule off, as the TLC bug configs do) and for
findings (a property the rules do not have).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3

__all__ = ["Problem", "Obligation", "Result", "check", "PROVED", "COUNTEREXAMPLE", "UNKNOWN",
           "UNBOUNDED", "named_failures"]

PROVED = "proved"
COUNTEREXAMPLE = "counterexample"
UNKNOWN = "unknown"
UNBOUNDED = "unbounded"

#: the bounds under which a small counterexample is looked for, in order
SMALL_BOUNDS = (1, 2, 3, 4, 6, 8)

#: per-obligation solver timeout (ms): a safety net, the obligations take well under a second
DEFAULT_TIMEOUT_MS = 120_000


@dataclass
class Problem:
    """What z3 is asked: `hypotheses` => And(goal).  `goal` is a list of named conjuncts, so a
    counterexample says which ones fail; `show` renders a model as readable values."""

    hypotheses: list[z3.BoolRef]
    goal: list[tuple[str, z3.BoolRef]]
    show: Callable[[z3.ModelRef], dict[str, Any]]
    #: constraints keeping every size and value <= k: a counterexample is searched for under
    #: growing k first, so the one reported is small and readable
    small: Callable[[int], list[z3.BoolRef]] | None = None


@dataclass(frozen=True)
class Obligation:
    name: str
    family: str            # "kip595" | "kip966"
    statement: str         # what is proved, in one sentence
    expected: str          # PROVED | COUNTEREXAMPLE
    bound: str             # UNBOUNDED, or the bound and why (e.g. "voters <= 32")
    build: Callable[[], Problem]
    spec: str              # the TLA+ operator(s) / action(s) it encodes
    python: str            # the refimpl function(s) it mirrors
    kind: str = "rule"     # "rule" | "planted" | "finding"
    note: str = ""         # for planted variants and findings: what it is and where TLC saw it
    #: for an expected counterexample: the goal conjunct it must break (as a TLC bug config
    #: names the invariant that must catch it)
    refutes: str | None = None


@dataclass
class Result:
    name: str
    family: str
    kind: str
    status: str
    expected: str
    bound: str
    seconds: float
    counterexample: dict[str, Any] | None = None
    failed: list[str] = field(default_factory=list)
    reason: str | None = None
    statement: str = ""
    note: str = ""
    refutes: str | None = None

    @property
    def as_expected(self) -> bool:
        return (self.status == self.expected
                and (self.refutes is None or self.refutes in self.failed))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "kind": self.kind,
                "status": self.status, "expected": self.expected,
                "as_expected": self.as_expected, "bound": self.bound,
                "seconds": self.seconds, "counterexample": self.counterexample,
                "failed": self.failed, "refutes": self.refutes, "reason": self.reason,
                "statement": self.statement,
                "note": self.note}


def named_failures(model: z3.ModelRef, goal: list[tuple[str, z3.BoolRef]],
                   solver: z3.Solver | None = None) -> list[str]:
    """The names of the goal conjuncts that are false in `model`; a conjunct the model cannot
    evaluate (a quantifier) is named when it can fail on its own (`solver` holds the
    hypotheses)."""
    out = []
    for n, g in goal:
        val = model.eval(g, model_completion=True)
        if z3.is_false(val):
            out.append(n)
        elif not z3.is_true(val) and solver is not None:
            solver.push()
            solver.add(z3.Not(g))
            if solver.check() == z3.sat:
                out.append(n)
            solver.pop()
    return out


def check(ob: Obligation, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Result:
    """Run one obligation: vacuity check, then the negated goal."""
    t0 = time.monotonic()

    def result(status: str, **kw: Any) -> Result:
        return Result(ob.name, ob.family, ob.kind, status, ob.expected, ob.bound,
                      round(time.monotonic() - t0, 3), statement=ob.statement, note=ob.note,
                      **kw)

    p = ob.build()
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*p.hypotheses)
    pre = s.check()
    if pre != z3.sat:
        return result(UNKNOWN, reason=("the hypotheses are contradictory (the proof would be "
                                       "vacuous)" if pre == z3.unsat
                                       else f"z3 could not decide the hypotheses: "
                                            f"{s.reason_unknown()}"))
    s.push()
    s.add(z3.Not(z3.And(*[g for _, g in p.goal])))
    r = s.check()
    if r == z3.unsat:
        return result(PROVED)
    if r != z3.sat:
        return result(UNKNOWN, reason=f"z3: {s.reason_unknown()}")
    m = s.model()
    s.pop()
    # the counterexample shown breaks the property the obligation must break (the whole goal
    # when none is named); it is searched again under small bounds to be readable
    s.push()
    if ob.refutes is not None:
        s.add(z3.Not(dict(p.goal)[ob.refutes]))
        if s.check() != z3.sat:
            s.pop()
            return result(COUNTEREXAMPLE, counterexample=p.show(m),
                          failed=named_failures(m, p.goal, s), refutes=ob.refutes,
                          reason=f"refuted, but {ob.refutes} holds")
        m = s.model()
    else:
        s.add(z3.Not(z3.And(*[g for _, g in p.goal])))
    if p.small is not None:
        for k in SMALL_BOUNDS:
            s.push()
            s.add(*p.small(k))
            if s.check() == z3.sat:
                m = s.model()
                s.pop()
                break
            s.pop()
    s.pop()
    return result(COUNTEREXAMPLE, counterexample=p.show(m),
                  failed=named_failures(m, p.goal, s), refutes=ob.refutes)
