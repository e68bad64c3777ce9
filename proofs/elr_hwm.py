"""KIP-966 "Additional High Watermark advancement requirement" (spec/ELRRules.tla
HwmMinIsrRequirementMet and the HWM rule of ELR.tla's LeaderHwm; refimpl/elr/rules.py
hwm_min_isr_requirement_met, next_high_watermark, acks_all_satisfied, effective_min_isr).
"""

from __future__ import annotations

import z3

from .core import COUNTEREXAMPLE, PROVED, UNBOUNDED, Obligation, Problem
from .elr_rules import effective_min_isr
from .venn import Venn

PY = "refimpl.elr.rules"


def requirement_met(committed: z3.ArithRef, maximal: z3.ArithRef, eff: z3.ArithRef,
                    variant: str = "off") -> z3.BoolRef:
    """Spec `HwmMinIsrRequirementMet(committedIsrSize, maximalIsrSize, effMinIsr,
    bugUseMaximalIsr, bugIgnoreMinIsr)`; refimpl `hwm_min_isr_requirement_met`."""
    if variant == "ignore-min-isr":
        return z3.BoolVal(True)
    if variant == "maximal-isr":
        return maximal >= eff
    return committed >= eff


def next_hwm(hwm, maximal_nonempty, met, replicated) -> z3.ArithRef:
    """refimpl `next_high_watermark`: max(hwm, min LEO over the maximal ISR) when the
    requirement is met, else hwm."""
    return z3.If(z3.And(maximal_nonempty, met), z3.If(replicated > hwm, replicated, hwm), hwm)


def frozen_while_elr(variant: str = "off"):
    """While the ELR is non-empty the HWM does not move: NonEmptyElrImpliesIsrBelowMinIsr and
    the requirement together are what keep "The member of ELR should have the data at least
    to HWM" true (ELR members do not replicate)."""
    def build() -> Problem:
        v = Venn("hwm", ("ISR", "P", "ELR"))
        isr, pend, elr = v.base("ISR"), v.base("P"), v.base("ELR")
        m, hwm, repl = z3.Int("minIsr"), z3.Int("hwm"), z3.Int("replicated")
        eff = effective_min_isr(m, v.n())
        maximal = isr | pend
        new = next_hwm(hwm, v.nonempty(maximal),
                       requirement_met(v.card(isr), v.card(maximal), eff, variant), repl)
        hyps = v.well_formed() + [
            v.n() >= 1, m >= 1, hwm >= 0, v.disjoint(isr, elr),
            z3.Implies(v.nonempty(elr), v.card(isr) < eff),     # the ELR invariants
            v.nonempty(isr),                                     # the leader is in the ISR
            # an in-flight AlterPartition proposes the ISR plus one replica (ProposeIsrExpand)
            z3.Or(v.empty(pend), z3.And(v.subset(isr, pend), v.card(pend - isr) == 1))]

        def show(mo: z3.ModelRef) -> dict:
            out = v.show(mo, {"isr": isr, "pending_isr": pend, "elr": elr})
            for n, e in (("min_isr", m), ("hwm", hwm), ("replicated", repl), ("new_hwm", new),
                         ("replication_factor", v.n())):
                out[n] = mo.eval(e, model_completion=True).as_long()
            return out
        return Problem(hyps, [("HwmFrozenWhileElrNonEmpty",
                               z3.Implies(v.nonempty(elr), new == hwm))], show,
                       lambda k: [v.n() <= k, m <= k, hwm <= k, repl <= k])
    return build


def within_maximal_isr(variant: str = "off"):
    """The new HWM never decreases, and when it moves every maximal-ISR member's log reaches
    it ("If maximal ISR > ISR, the message should be replicated to the maximal ISR before
    covering the message under HWM").  Brokers are an uninterpreted sort (unbounded); the
    replicated offset is the minimum LEO over the set (committed ISR only: variant
    "committed-only")."""
    def build() -> Problem:
        broker = z3.DeclareSort("Broker")
        in_isr = z3.Function("inIsr", broker, z3.BoolSort())
        in_pend = z3.Function("inPendingIsr", broker, z3.BoolSort())
        leo = z3.Function("leo", broker, z3.IntSort())
        hwm, repl, met = z3.Int("hwm"), z3.Int("replicated"), z3.Bool("requirementMet")
        x, w, b = (z3.Const(n, broker) for n in ("x", "w", "b"))

        def maximal(y):
            return z3.Or(in_isr(y), in_pend(y))
        over = in_isr if variant == "committed-only" else maximal
        hyps = [hwm >= 0,
                z3.ForAll([x], z3.Implies(over(x), repl <= leo(x))),   # the minimum ...
                over(w), leo(w) == repl]                               # ... attained by w
        new = next_hwm(hwm, z3.BoolVal(True), met, repl)
        goal = [("Monotone", new >= hwm),
                ("CoveredByEveryMaximalIsrMember",
                 z3.Implies(z3.And(new != hwm, maximal(b)), new <= leo(b)))]

        def show(m: z3.ModelRef) -> dict:
            ev = lambda e: m.eval(e, model_completion=True)  # noqa: E731
            return {"hwm": ev(hwm).as_long(), "new_hwm": ev(new).as_long(),
                    "member_b": {"in_isr": z3.is_true(ev(in_isr(b))),
                                 "in_pending_isr": z3.is_true(ev(in_pend(b))),
                                 "leo": ev(leo(b)).as_long()}}
        return Problem(hyps, goal, show, lambda k: [hwm <= k, repl <= k])
    return build


def acks_all(variant: str = "off"):
    """refimpl `acks_all_satisfied`: an acks=all request is answered only below the HWM and
    while the committed ISR meets min ISR; and the effective min ISR lies in 1..RF."""
    def build() -> Problem:
        off, hwm, isr_size, m, rf = (z3.Int(n) for n in ("offset", "hwm", "isrSize", "minIsr",
                                                          "rf"))
        eff = effective_min_isr(m, rf)
        sat = z3.And(hwm > off, z3.BoolVal(True) if variant == "no-min-isr"
                     else isr_size >= eff)
        hyps = [off >= 0, hwm >= 0, isr_size >= 0, m >= 1, rf >= 1, isr_size <= rf]
        goal = [("AckedBelowHwm", z3.Implies(sat, off < hwm)),
                ("AckedOnlyAtMinIsr", z3.Implies(sat, isr_size >= eff)),
                ("EffectiveMinIsrInRange", z3.And(eff >= 1, eff <= rf, eff <= m))]

        def show(mo: z3.ModelRef) -> dict:
            return {n: mo.eval(e, model_completion=True).as_long()
                    for n, e in (("offset", off), ("hwm", hwm), ("isr_size", isr_size),
                                 ("min_isr", m), ("replication_factor", rf))}
        return Problem(hyps, goal, show, lambda k: [off <= k, hwm <= k, m <= k, rf <= k])
    return build


def obligations() -> list[Obligation]:
    return [
        Obligation("kip966-hwm-frozen-while-elr-nonempty", "kip966",
                   "Under the ELR invariants the HWM does not advance while the ELR is "
                   "non-empty (min ISR checked on the committed ISR)", PROVED, UNBOUNDED,
                   frozen_while_elr(), spec="ELRRules!HwmMinIsrRequirementMet, ELR!LeaderHwm",
                   python=f"{PY}.hwm_min_isr_requirement_met, next_high_watermark"),
        Obligation("kip966-planted-hwm-on-maximal-isr", "kip966",
                   "planted: min ISR checked on the maximal ISR", COUNTEREXAMPLE, UNBOUNDED,
                   frozen_while_elr("maximal-isr"), spec="BugHwmOnMaximalIsr",
                   python=f"{PY}.next_high_watermark(bug_use_maximal_isr=True)",
                   kind="planted", refutes="HwmFrozenWhileElrNonEmpty", note="elr-bug-hwm-maximal-isr (the KIP's 3-replica "
                                        "example); refimpl bug hwm-on-maximal-isr"),
        Obligation("kip966-planted-hwm-ignores-min-isr", "kip966",
                   "planted: no min ISR requirement (pre-KIP rule)", COUNTEREXAMPLE,
                   UNBOUNDED, frozen_while_elr("ignore-min-isr"), spec="BugHwmIgnoresMinIsr",
                   python=f"{PY}.hwm_min_isr_requirement_met", kind="planted", refutes="HwmFrozenWhileElrNonEmpty",
                   note="elr-bug-hwm-ignores-min-isr; no refimpl switch"),
        Obligation("kip966-hwm-within-maximal-isr", "kip966",
                   "The HWM never decreases and only moves to an offset every maximal-ISR "
                   "member has", PROVED, UNBOUNDED, within_maximal_isr(),
                   spec="ELR!LeaderHwm (MinOf over isr \\cup pend)",
                   python=f"{PY}.next_high_watermark"),
        Obligation("kip966-planted-hwm-committed-isr-only", "kip966",
                   "planted: the HWM is the minimum over the committed ISR only",
                   COUNTEREXAMPLE, UNBOUNDED, within_maximal_isr("committed-only"),
                   spec="ELR!LeaderHwm", python=f"{PY}.next_high_watermark", kind="planted", refutes="CoveredByEveryMaximalIsrMember",
                   note="encoding-only variant: pending ISR members ignored"),
        Obligation("kip966-acks-all-and-effective-min-isr", "kip966",
                   "acks=all is answered only below the HWM with ISR >= effective min ISR; "
                   "1 <= effective min ISR <= min(min ISR, RF)", PROVED, UNBOUNDED, acks_all(),
                   spec="ELRRules!EffectiveMinIsr, ELR!LeaderHwm (acked)",
                   python=f"{PY}.acks_all_satisfied, effective_min_isr"),
        Obligation("kip966-planted-ack-below-min-isr", "kip966",
                   "planted: acks=all answered without the min ISR check", COUNTEREXAMPLE,
                   UNBOUNDED, acks_all("no-min-isr"), spec="ELR!LeaderHwm (acked)",
                   python=f"{PY}.acks_all_satisfied(check_min_isr=False)", kind="planted", refutes="AckedOnlyAtMinIsr",
                   note="refimpl bug ack-below-min-isr"),
    ]
