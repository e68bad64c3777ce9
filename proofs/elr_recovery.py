"""KIP-966 election order and unclean recovery (spec/ELRRules.tla, refimpl/elr/rules.py):
CleanCandidates, RecoveryDecision, RecoveryCanElect, ReplyBetter / BestRepliers.

Sets are Venn-region sets (unbounded replication factor); GetReplicaLogInfo replies are
integers over an uninterpreted sort of brokers (unbounded: any number of repliers, any
epochs and offsets).
"""

from __future__ import annotations

import z3

from .core import COUNTEREXAMPLE, PROVED, UNBOUNDED, Obligation, Problem
from .elr_rules import (AGGRESSIVE, BALANCED, DECISIONS, NONE, STRATEGY_NAMES, clean_candidate,
                        recovery_can_elect, recovery_decision)
from .venn import Venn

PY = "refimpl.elr.rules"


def _strategy_ok(s: z3.ArithRef) -> z3.BoolRef:
    return z3.Or(s == AGGRESSIVE, s == BALANCED, s == NONE)


def election_order(variant: str = "off"):
    """Election order steps 1-2 (KIP-966 "Unclean recovery"; controller behavior 3)."""
    def build() -> Problem:
        v = Venn("order", ("ISR", "ELR", "E", "C"))
        isr, elr, elig, c = v.base("ISR"), v.base("ELR"), v.base("E"), v.base("C")
        hyps = v.well_formed() + [v.card(c) == 1, v.disjoint(isr, elr),
                                  clean_candidate(v, c, isr, elr, elig, variant)]
        goal = [("CandidateUnfenced", v.subset(c, elig)),
                ("CandidateInIsrOrElr", v.subset(c, isr | elr)),
                ("IsrMemberFirst", z3.Implies(v.nonempty(isr & elig), v.subset(c, isr))),
                ("ElrMemberOnlyWhenIsrEmpty", z3.Implies(v.subset(c, elr), v.empty(isr)))]
        return Problem(hyps, goal, lambda m: v.show(m, {"isr": isr, "elr": elr,
                                                         "unfenced": elig, "elected": c}),
                       lambda k: [v.n() <= k])
    return build


def decision(variant: str = "off"):
    """RecoveryDecision: exactly one decision; only Aggressive acts while ELR members exist
    (3b); Balanced with the recovery manager starts only when every LastKnownELR member is
    unfenced (4b); None never elects (4c)."""
    def build() -> Problem:
        v = Venn("decide", ("ISR", "ELR", "LKE", "E"))
        isr, elr, lke, elig = v.base("ISR"), v.base("ELR"), v.base("LKE"), v.base("E")
        s, mgr = z3.Int("strategy"), z3.Bool("manager")
        d = recovery_decision(v, s, mgr, isr, elr, lke, elig, variant)
        acts = z3.Or(d["UncleanRecovery"], d["UncleanElection"])
        exactly_one = z3.Sum([z3.If(g, 1, 0) for g in d.values()]) == 1
        goal = [("ExactlyOneDecision", exactly_one),
                ("NoUncleanWhileElr", z3.Implies(z3.And(v.nonempty(elr), s != AGGRESSIVE),
                                                 z3.Not(acts))),
                ("BalancedWaitsForLastKnownElr",
                 z3.Implies(z3.And(d["UncleanRecovery"], s == BALANCED),
                            v.subset(lke, elig))),
                ("NoneNeverElects", z3.Implies(s == NONE, z3.Not(acts)))]

        def show(m: z3.ModelRef) -> dict:
            out = v.show(m, {"isr": isr, "elr": elr, "lastKnownElr": lke, "unfenced": elig})
            out["strategy"] = STRATEGY_NAMES.get(m.eval(s, model_completion=True).as_long())
            out["manager"] = z3.is_true(m.eval(mgr, model_completion=True))
            out["decision"] = [n for n in DECISIONS
                               if z3.is_true(m.eval(d[n], model_completion=True))]
            return out
        return Problem(v.well_formed() + [_strategy_ok(s)], goal, show,
                       lambda k: [v.n() <= k])
    return build


def can_elect(variant: str = "off"):
    """RecoveryCanElect: Balanced elects only once every LastKnownELR member replied."""
    def build() -> Problem:
        v = Venn("canelect", ("LKE", "R"))
        lke, rep = v.base("LKE"), v.base("R")
        s, k = z3.Int("strategy"), z3.Int("minIsr")
        ok = recovery_can_elect(v, s, lke, rep, k if variant == "fixed-replies" else None)
        goal = [("SomeReply", v.nonempty(rep)),
                ("BalancedHeardEveryLastKnownElr",
                 z3.Implies(s == BALANCED, v.subset(lke, rep)))]

        def show(m: z3.ModelRef) -> dict:
            out = v.show(m, {"lastKnownElr": lke, "repliers": rep})
            out["strategy"] = STRATEGY_NAMES.get(m.eval(s, model_completion=True).as_long())
            if variant == "fixed-replies":
                out["fixed_count"] = m.eval(k, model_completion=True).as_long()
            return out
        return Problem(v.well_formed() + [_strategy_ok(s), k >= 1, ok], goal, show,
                       lambda b: [v.n() <= b, k <= b])
    return build


def reply_better(le1, leo1, le2, leo2, ignore_epoch: bool = False) -> z3.BoolRef:
    """Spec `ReplyBetter(r1, r2, bugIgnoreEpoch)`; refimpl `reply_better`."""
    if ignore_epoch:
        return leo1 > leo2
    return z3.Or(le1 > le2, z3.And(le1 == le2, leo1 > leo2))


def recovery_choice(variant: str = "off"):
    """BestRepliers over any set of repliers: ReplyBetter is a strict order, every best
    replier has the highest last epoch and, among those, the longest log, and all best
    repliers sent the same (lastEpoch, leo): the choice among them does not matter."""
    def build() -> Problem:
        broker = z3.DeclareSort("Broker")
        replied = z3.Function("replied", broker, z3.BoolSort())
        le = z3.Function("lastEpoch", broker, z3.IntSort())
        leo = z3.Function("leo", broker, z3.IntSort())
        ig = variant == "ignore-epoch"

        def better(a, b):
            return reply_better(le(a), leo(a), le(b), leo(b), ig)

        def best(b):
            y = z3.Const("y", broker)
            return z3.And(replied(b), z3.ForAll([y], z3.Implies(replied(y),
                                                                 z3.Not(better(y, b)))))
        a, b, c, r = (z3.Const(n, broker) for n in ("a", "b", "c", "r"))
        hyps = [le(a) >= 0, leo(a) >= 0]
        goal = [("Irreflexive", z3.Not(better(a, a))),
                ("Transitive", z3.Implies(z3.And(better(a, b), better(b, c)), better(a, c))),
                ("BestHasHighestEpochThenLongestLog",
                 z3.Implies(z3.And(best(b), replied(r)),
                            z3.Or(le(r) < le(b), z3.And(le(r) == le(b), leo(r) <= leo(b))))),
                ("BestRepliersTied",
                 z3.Implies(z3.And(best(a), best(b)),
                            z3.And(le(a) == le(b), leo(a) == leo(b))))]

        def show(m: z3.ModelRef) -> dict:
            ev = lambda e: m.eval(e, model_completion=True).as_long()  # noqa: E731
            return {n: {"lastEpoch": ev(le(x)), "leo": ev(leo(x)),
                        "replied": z3.is_true(m.eval(replied(x), model_completion=True))}
                    for n, x in (("a", a), ("b", b), ("r", r))}
        return Problem(hyps, goal, show, lambda k: [z3.And(le(x) >= 0, le(x) <= k, leo(x) >= 0,
                                                           leo(x) <= k) for x in (a, b, c, r)])
    return build


def obligations() -> list[Obligation]:
    return [
        Obligation("kip966-election-order", "kip966",
                   "A clean candidate is an unfenced ISR member, or an unfenced ELR member "
                   "when the ISR is empty; ISR members come first", PROVED, UNBOUNDED,
                   election_order(), spec="ELRRules!CleanCandidates",
                   python=f"{PY}.clean_candidates"),
        Obligation("kip966-planted-leader-from-fenced-elr-order", "kip966",
                   "planted: ELR members elected even when fenced", COUNTEREXAMPLE, UNBOUNDED,
                   election_order("fenced-elr"), spec="ELRRules!CleanCandidates",
                   python=f"{PY}.clean_candidates(allow_fenced_elr=True)", kind="planted", refutes="CandidateUnfenced",
                   note="refimpl bug leader-from-fenced-elr"),
        Obligation("kip966-recovery-decision", "kip966",
                   "RecoveryDecision picks exactly one decision; only Aggressive acts while "
                   "ELR members exist; Balanced recovers only when every LastKnownELR member "
                   "is unfenced; None never elects", PROVED, UNBOUNDED, decision(),
                   spec="ELRRules!RecoveryDecision", python=f"{PY}.recovery_decision"),
        Obligation("kip966-planted-balanced-fixed-replies-decision", "kip966",
                   "planted: Balanced starts the recovery without waiting for the "
                   "LastKnownELR", COUNTEREXAMPLE, UNBOUNDED, decision("fixed-replies"),
                   spec="ELRRules!RecoveryDecision (bugFixedReplies)",
                   python=f"{PY}.recovery_decision(bug_fixed_replies=True)", kind="planted", refutes="BalancedWaitsForLastKnownElr",
                   note="BugBalancedFixedReplies (elr-bug-balanced-fixed-replies -> "
                        "NoAckedRecordLost); refimpl bug balanced-fixed-replies"),
        Obligation("kip966-recovery-can-elect", "kip966",
                   "Balanced elects only after every LastKnownELR member replied; any "
                   "strategy needs a reply", PROVED, UNBOUNDED, can_elect(),
                   spec="ELRRules!RecoveryCanElect", python=f"{PY}.recovery_can_elect"),
        Obligation("kip966-planted-balanced-fixed-replies", "kip966",
                   "planted: Balanced elects once min ISR replicas replied (the KIP's "
                   "rejected alternative)", COUNTEREXAMPLE, UNBOUNDED,
                   can_elect("fixed-replies"), spec="ELRRules!RecoveryCanElect "
                   "(bugFixedReplies)", python=f"{PY}.recovery_can_elect(fixed_replies=k)",
                   kind="planted", refutes="BalancedHeardEveryLastKnownElr", note="elr-bug-balanced-fixed-replies; refimpl bug "
                                        "balanced-fixed-replies"),
        Obligation("kip966-unclean-recovery-choice", "kip966",
                   "ReplyBetter is a strict order; a best replier has the highest last "
                   "epoch, then the longest log; all best repliers are tied", PROVED,
                   UNBOUNDED, recovery_choice(), spec="ELRRules!ReplyBetter, BestRepliers",
                   python=f"{PY}.reply_better, best_repliers"),
        Obligation("kip966-planted-longest-log-ignores-epoch", "kip966",
                   "planted: unclean recovery compares log end offsets only",
                   COUNTEREXAMPLE, UNBOUNDED, recovery_choice("ignore-epoch"),
                   spec="ELRRules!ReplyBetter (bugIgnoreEpoch)", python=f"{PY}.reply_better",
                   kind="planted", refutes="BestHasHighestEpochThenLongestLog", note="BugLongestLogIgnoresEpoch "
                                        "(elr-bug-longest-log-ignores-epoch -> "
                                        "NoAckedRecordLost); no refimpl switch"),
    ]
