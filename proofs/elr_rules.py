"""KIP-966 rules of spec/ELRRules.tla (and refimpl/elr/rules.py) over Venn-region sets.

Each function mirrors one TLA+ operator and one Python function, named in its docstring; the
hypothesis tests (tests/test_proofs_equivalence.py) evaluate both on the same concrete inputs.
A rule whose result depends on a cardinality test returns *cases*: a list of (guard, value)
pairs whose guards are mutually exclusive and exhaustive (symbolic execution of the IF).
`variant` names a planted bug: "off" (the rule as the KIP states it), "1", "2a", "2b", "2c"
(spec BugSkipElrRule), "literal-6a" (LastKnownELR gets only the ELR members that registered
uncleanly: KIP-966 "Other behaviors" 6a read literally), "unclean-kept-in-elr" (spec
BugKeepUncleanInElr), "fenced-elr" (refimpl allow_fenced_elr), "fixed-replies" (spec
BugBalancedFixedReplies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

import z3

from .venn import RSet, Venn

T = TypeVar("T")

AGGRESSIVE, BALANCED, NONE = 0, 1, 2
STRATEGY_NAMES = {AGGRESSIVE: "Aggressive", BALANCED: "Balanced", NONE: "None"}
DECISIONS = ("UncleanRecovery", "UncleanElection", "WaitForElr", "WaitForLastKnownElr",
             "WaitForLastKnownLeader", "WaitForIsr", "WaitForOperator")


@dataclass(frozen=True)
class Case(Generic[T]):
    guard: z3.BoolRef
    value: T


@dataclass(frozen=True)
class Upd:
    """The record [isr, elr, lastKnownElr] of ElrUpdate (refimpl `ElrUpdate`)."""

    isr: RSet
    elr: RSet
    lke: RSet


def effective_min_isr(min_isr: z3.ArithRef, rf: z3.ArithRef) -> z3.ArithRef:
    """Spec `EffectiveMinIsr`; refimpl `effective_min_isr`."""
    return z3.If(min_isr < rf, min_isr, rf)


def elr_rule1_applies(v: Venn, proposed: RSet, eff: z3.ArithRef) -> z3.BoolRef:
    """Spec `ElrRule1Applies`; refimpl `elr_rule1_applies`."""
    return v.card(proposed) >= eff


def elr_after_rule2(isr: RSet, elr: RSet, proposed: RSet, unclean: RSet,
                    variant: str = "off") -> RSet:
    """Spec `ElrAfterRule2` (skipRule = variant); refimpl `elr_after_rule2`."""
    retained = frozenset() if variant == "2a" else elr            # 2a
    added = frozenset() if variant == "2b" else isr - proposed    # 2b
    deduped = (retained | added) if variant == "2c" else (retained | added) - proposed  # 2c
    return deduped - unclean


def last_known_elr_after_rule2(isr: RSet, elr: RSet, lke: RSet, proposed: RSet, new_elr: RSet,
                               unclean: RSet, variant: str = "off") -> RSet:
    """Spec `LastKnownElrAfterRule2`; refimpl `last_known_elr_after_rule2`: every member of
    ISR / ELR / LastKnownELR in neither new set.  variant "literal-6a": only the ELR members
    that registered uncleanly are added ("when an ELR member has an unclean shutdown, it will
    be removed from ELR and added to the LastKnownELR")."""
    if variant == "literal-6a":
        return ((lke | (elr & unclean)) - proposed) - new_elr
    return ((lke | elr | isr) - proposed) - new_elr


def elr_update(v: Venn, isr: RSet, elr: RSet, lke: RSet, proposed: RSet, eff: z3.ArithRef,
               unclean: RSet, variant: str = "off") -> list[Case[Upd]]:
    """Spec `ElrUpdate(isr, elr, lastKnownElr, proposedIsr, effMinIsr, unclean, TRUE,
    skipRule)`; refimpl `elr_update` (elr_enabled=True).  The pre-KIP branch (ELR disabled)
    is another protocol and is not encoded."""
    new_elr = elr_after_rule2(isr, elr, proposed, unclean, variant)
    rule2 = Upd(proposed, new_elr, last_known_elr_after_rule2(isr, elr, lke, proposed, new_elr,
                                                              unclean, variant))
    if variant == "1":
        return [Case(z3.BoolVal(True), rule2)]
    r1 = elr_rule1_applies(v, proposed, eff)
    return [Case(r1, Upd(proposed, frozenset(), frozenset())), Case(z3.Not(r1), rule2)]


def elr_after_min_isr_change(v: Venn, isr: RSet, elr: RSet, lke: RSet,
                             new_eff: z3.ArithRef) -> list[Case[Upd]]:
    """refimpl `elr_after_min_isr_change` (KIP-966 "Other behaviors" 2), which the refimpl
    computes directly; the spec's ChangeMinIsr uses ElrUpdate with the ISR as proposal
    (obligation kip966-min-isr-change-refimpl-matches-spec)."""
    c = new_eff <= v.card(isr)
    return [Case(c, Upd(isr, frozenset(), frozenset())), Case(z3.Not(c), Upd(isr, elr, lke))]


def clean_candidate(v: Venn, c: RSet, isr: RSet, elr: RSet, eligible: RSet,
                    variant: str = "off") -> z3.BoolRef:
    """c (a single replica) is in spec `CleanCandidates(isr, elr, eligible, TRUE)`; refimpl
    `clean_candidates` (allow_fenced_elr = variant "fenced-elr")."""
    elr_pool = elr if variant == "fenced-elr" else elr & eligible
    return z3.Or(z3.And(v.nonempty(isr & eligible), v.subset(c, isr & eligible)),
                 z3.And(v.empty(isr & eligible), v.empty(isr), v.subset(c, elr_pool)))


def no_clean_candidate(v: Venn, isr: RSet, elr: RSet, eligible: RSet,
                       variant: str = "off") -> z3.BoolRef:
    """`CleanCandidates(isr, elr, eligible, TRUE) = {}`."""
    elr_pool = elr if variant == "fenced-elr" else elr & eligible
    return z3.And(v.empty(isr & eligible), z3.Or(v.nonempty(isr), v.empty(elr_pool)))


def last_known_leader_candidate(v: Venn, isr: RSet, elr: RSet, lkl: RSet, eligible: RSet,
                                strategy: z3.ArithRef, manager: z3.BoolRef) -> z3.BoolRef:
    """Spec `LastKnownLeaderCandidates(...) /= {}` (ElrEnabled); refimpl
    `last_known_leader_candidates`: the candidate is then lkl itself."""
    return z3.And(z3.Not(manager), strategy == BALANCED, v.empty(isr), v.empty(elr),
                  v.nonempty(lkl), v.subset(lkl, eligible))


def recovery_decision(v: Venn, strategy: z3.ArithRef, manager: z3.BoolRef, isr: RSet,
                      elr: RSet, lke: RSet, eligible: RSet,
                      variant: str = "off") -> dict[str, z3.BoolRef]:
    """Spec `RecoveryDecision(strategy, managerEnabled, TRUE, ...)`; refimpl
    `recovery_decision` (elr_enabled=True, bug_fixed_replies = variant "fixed-replies").
    Returns one mutually exclusive guard per decision name."""
    agg = strategy == AGGRESSIVE
    out = dict.fromkeys(DECISIONS, z3.BoolVal(False))

    def add(name: str, g: z3.BoolRef) -> None:
        out[name] = z3.Or(out[name], g)

    agg_outcome = [("UncleanRecovery", manager), ("UncleanElection", z3.Not(manager))]
    has_isr, has_elr = v.nonempty(isr), v.nonempty(elr)
    for name, g in agg_outcome:                        # ISR members, none eligible
        add(name, z3.And(has_isr, agg, g))
    add("WaitForIsr", z3.And(has_isr, z3.Not(agg)))
    step3 = z3.And(z3.Not(has_isr), has_elr)           # 3: only fenced ELR members
    for name, g in agg_outcome:
        add(name, z3.And(step3, agg, g))
    add("WaitForElr", z3.And(step3, z3.Not(agg)))
    step4 = z3.And(z3.Not(has_isr), z3.Not(has_elr))   # 4: no ELR members
    for name, g in agg_outcome:                        # 4a
        add(name, z3.And(step4, agg, g))
    bal = z3.And(step4, strategy == BALANCED)          # 4b
    add("WaitForLastKnownLeader", z3.And(bal, z3.Not(manager)))
    all_lke_unfenced = (z3.BoolVal(True) if variant == "fixed-replies"
                        else v.subset(lke, eligible))
    add("UncleanRecovery", z3.And(bal, manager, all_lke_unfenced))
    add("WaitForLastKnownElr", z3.And(bal, manager, z3.Not(all_lke_unfenced)))
    add("WaitForOperator", z3.And(step4, strategy == NONE))   # 4c
    return out


def recovery_can_elect(v: Venn, strategy: z3.ArithRef, lke: RSet, repliers: RSet,
                       fixed_count: z3.ArithRef | None = None) -> z3.BoolRef:
    """Spec `RecoveryCanElect`; refimpl `recovery_can_elect` (fixed_replies = fixed_count,
    the planted balanced-fixed-replies)."""
    balanced_ok = (v.card(repliers) >= fixed_count if fixed_count is not None
                   else v.subset(lke, repliers))
    return z3.And(v.nonempty(repliers), z3.Implies(strategy == BALANCED, balanced_ok))
