"""KIP-966: the controller's partition transitions of spec/ELR.tla preserve the ISR / ELR
invariants, for every replication factor (an inductive proof, not an enumeration).

The pre-state is any partition state satisfying the invariants `INVARIANTS` (plus the
strengthening `ElrAtMostOneAtMinIsrOne`); each transition is the composition the spec's
action performs: the ELR update (ELRRules!ElrUpdate, through ELR!RemovalState for fencing and
registration), then the election (ELR!ElectionOutcomes: the incumbent stays, or a clean
candidate by the election order, or the LastKnownLeader in phase 1, or nobody), written as
ELR!ElectOutcome does; or an unclean election (ELR!CompleteUncleanRecovery,
ELR!UncleanLeaderElection).  Every nondeterministic choice of the spec (the fenced broker,
the elected candidate, the new min ISR, the strategy, the recovery manager switch) is a free
variable, so the proof covers all of them.  Logs, the HWM and the acks are not part of this
state: the data side is KIP-966's HWM rule (proofs.elr_hwm) and TLC.

Sets are Venn-region sets (proofs.venn): unbounded replication factor and min ISR.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import z3

from .core import COUNTEREXAMPLE, PROVED, UNBOUNDED, Obligation, Problem
from .elr_rules import (BALANCED, STRATEGY_NAMES, Case, Upd, clean_candidate,
                        effective_min_isr, elr_update, last_known_leader_candidate,
                        no_clean_candidate, recovery_decision)
from .venn import RSet, Venn

NONE_SET: RSet = frozenset()


@dataclass(frozen=True)
class St:
    """The controller's partition state (ELR.tla variables isr, elr, lastKnownElr, leader,
    lastKnownLeader, fenced, minIsr).  `leader` and `lkl` have at most one member."""

    isr: RSet
    elr: RSet
    lke: RSet
    leader: RSet
    lkl: RSet
    fenced: RSet
    min_isr: z3.ArithRef


@dataclass(frozen=True)
class Step:
    """One outcome of a transition: its guard, the post-state, and the replicas that just
    registered after an unclean shutdown (ELR!UncleanlyRegistered)."""

    guard: z3.BoolRef
    post: St
    unclean_registered: RSet = NONE_SET
    unclean_election: bool = False      # ELR!ElectOutcome's last branch (ISR := {c})
    last_known_leader: z3.BoolRef = z3.BoolVal(False)   # c was the LastKnownLeader candidate


class Ctx:
    """The free variables of one obligation: base sets, min ISR values, strategy."""

    def __init__(self, name: str):
        self.v = Venn(name, ("ISR", "ELR", "LKE", "L", "K", "F", "X", "C"))
        v = self.v
        self.min_isr = z3.Int(f"{name}.minIsr")
        self.new_min_isr = z3.Int(f"{name}.newMinIsr")
        self.strategy = z3.Int(f"{name}.strategy")
        self.manager = z3.Bool(f"{name}.uncleanRecoveryManager")
        self.x, self.c = v.base("X"), v.base("C")
        self.pre = St(v.base("ISR"), v.base("ELR"), v.base("LKE"), v.base("L"), v.base("K"),
                      v.base("F"), self.min_isr)
        self.hyps = v.well_formed() + [
            v.n() >= 1, self.min_isr >= 1, self.new_min_isr >= 1,
            z3.Or(self.strategy == 0, self.strategy == 1, self.strategy == 2),
            v.card(self.x) == 1, v.card(self.c) == 1]

    def eff(self, s: St) -> z3.ArithRef:
        return effective_min_isr(s.min_isr, self.v.n())


# ---------------------------------------------------------------------------------- invariants

def invariants(cx: Ctx, s: St) -> list[tuple[str, z3.BoolRef]]:
    """ELR.tla invariants on the controller's state (names as in the spec)."""
    v = cx.v
    return [
        ("ElrIsrDisjoint", v.disjoint(s.elr, s.isr)),
        ("NonEmptyElrImpliesIsrBelowMinIsr",
         z3.Implies(v.nonempty(s.elr), v.card(s.isr) < cx.eff(s))),
        ("LastKnownElrDisjoint", v.disjoint(s.lke, s.isr | s.elr)),
        ("FencedNotInIsr", v.disjoint(s.isr, s.fenced)),
        ("LeaderInIsr", v.subset(s.leader, s.isr)),
        ("LeaderUnfenced", v.disjoint(s.leader, s.fenced)),
        ("AtMostOneLeader", v.card(s.leader) <= 1),
        ("AtMostOneLastKnownLeader", v.card(s.lkl) <= 1),
    ]


def strengthening(cx: Ctx, s: St) -> list[tuple[str, z3.BoolRef]]:
    """What makes the invariants inductive (neither is an invariant the spec names):
    * ElrAtMostOneAtMinIsrOne: an ELR election turns ISR {} / ELR E into ISR {c} / ELR E - {c},
      which keeps NonEmptyElrImpliesIsrBelowMinIsr only if E - {c} is empty or min ISR > 1; so
      while the effective min ISR is 1 the ELR has at most one member.
    * LeaderlessOnlyWithoutCandidate: every controller step runs the election, so a partition
      is leaderless only while it has no candidate (ELR!ElectionOutcomes).
    * LastKnownLeaderOnlyWhileLeaderless: the LastKnownLeader is recorded when the ISR
      empties and cleaned by every election ("Other behaviors" 7b, 7c).
    * LastKnownElrEmptyAtMinIsr: "The LastKnownELR will be cleaned when ISR reaches the min
      ISR" ("Other behaviors" 6a): while the ISR meets min ISR the LastKnownELR is empty.
    * NoLastKnownElrBesideElrAtMinIsrOne: with effective min ISR 1 an ELR member and a
      LastKnownELR member never coexist (else the ELR election, ISR := {c}, would reach min ISR
      with a LastKnownELR left)."""
    v = cx.v
    eligible = v.universe - s.fenced
    return [("ElrAtMostOneAtMinIsrOne", z3.Implies(cx.eff(s) == 1, v.card(s.elr) <= 1)),
            ("LastKnownLeaderOnlyWhileLeaderless",
             z3.Implies(v.nonempty(s.leader), v.empty(s.lkl))),
            ("LastKnownElrEmptyAtMinIsr",
             z3.Implies(v.card(s.isr) >= cx.eff(s), v.empty(s.lke))),
            ("NoLastKnownElrBesideElrAtMinIsrOne",
             z3.Implies(z3.And(cx.eff(s) == 1, v.nonempty(s.elr)), v.empty(s.lke))),
            ("LeaderlessOnlyWithoutCandidate",
             z3.Implies(v.empty(s.leader),
                        z3.And(no_clean_candidate(v, s.isr, s.elr, eligible),
                               z3.Not(last_known_leader_candidate(
                                   v, s.isr, s.elr, s.lkl, eligible, cx.strategy,
                                   cx.manager)))))]


STRENGTHENINGS = ("LeaderlessOnlyWithoutCandidate", "LastKnownLeaderOnlyWhileLeaderless",
                  "LastKnownElrEmptyAtMinIsr", "ElrAtMostOneAtMinIsrOne",
                  "NoLastKnownElrBesideElrAtMinIsrOne")
#: the strengthenings that lowering min ISR to 1 breaks (the min-ISR-lowering finding)
MIN_ISR_ONE = ("ElrAtMostOneAtMinIsrOne", "NoLastKnownElrBesideElrAtMinIsrOne")


def step_properties(cx: Ctx, pre: St, st: Step,
                    strict_last_known_leader: bool = False) -> list[tuple[str, z3.BoolRef]]:
    """Action properties of one step.  `strict_last_known_leader`: a LastKnownLeader election
    (phase 1) does not count as an unclean election."""
    v, post = cx.v, st.post
    before, after = pre.isr | pre.elr, post.isr | post.elr
    spec_unclean_election = z3.And(v.nonempty(post.leader), v.disjoint(post.leader, before))
    unclean_election = z3.BoolVal(st.unclean_election)
    if strict_last_known_leader:
        unclean_election = z3.And(unclean_election, z3.Not(st.last_known_leader))
    reached_min_isr = v.card(post.isr) >= cx.eff(post)
    return [
        # ELR!IsrElrDropAllowed (KIP-966 "ELR invariants": "ELR + ISR size will not be dropped
        # below the min ISR unless the controller discovers an ELR member has an unclean
        # shutdown")
        ("IsrElrDropAllowed",
         z3.Or(v.card(after) >= cx.eff(post), v.subset(before - after, st.unclean_registered),
               spec_unclean_election)),
        # KIP-966 "Other behaviors" 6: a replica that leaves ISR+ELR, or was already in the
        # LastKnownELR, is in the new LastKnownELR, unless the ISR reached min ISR (which
        # cleans it) or an unclean election reset the partition.  Balanced recovery waits for
        # exactly these replicas.
        ("LastKnownElrKeepsLeavers",
         z3.Or(v.subset((before | pre.lke) - after, post.lke), reached_min_isr,
               unclean_election)),
        # KIP-966 "Controller behaviors" 4: a replica registering after an unclean shutdown is
        # removed from ISR and ELR (it may only come back as an unclean election's leader)
        ("UncleanRegistrantRemoved",
         z3.Or(v.disjoint(st.unclean_registered, after), unclean_election)),
    ]


# ---------------------------------------------------------------------------------- election

def election_outcomes(cx: Ctx, pre: St, cases: list[Case[Upd]], eligible: RSet,
                      incumbent: list[Case[RSet]], fenced: RSet, min_isr: z3.ArithRef,
                      variant: str) -> list[Step]:
    """ELR!ElectionOutcomes(st, eligible, incumbent) for every case of the ELR update, written
    with ELR!ElectOutcome; LastKnownLeader per ELR!LastKnownLeaderAfter.  The elected
    candidate is the free single replica C."""
    v, c = cx.v, cx.c
    out: list[Step] = []
    for uc in cases:
        st = uc.value
        # LastKnownLeaderAfter: the ISR has just become empty -> its last member
        lkl_cases = [Case(z3.And(v.empty(st.isr), v.nonempty(pre.isr)), pre.isr),
                     Case(z3.Not(z3.And(v.empty(st.isr), v.nonempty(pre.isr))), pre.lkl)]
        for lc in lkl_cases:
            lkl = lc.value
            for ic in incumbent:
                inc = ic.value
                g0 = z3.And(uc.guard, lc.guard, ic.guard)
                stays = z3.And(v.nonempty(inc), v.subset(inc, st.isr), v.subset(inc, eligible))
                lkl_cand = last_known_leader_candidate(v, st.isr, st.elr, lkl, eligible,
                                                       cx.strategy, cx.manager)
                c_clean = clean_candidate(v, c, st.isr, st.elr, eligible, variant)
                c_is_cand = z3.Or(c_clean, z3.And(lkl_cand, v.eq(c, lkl)))
                no_cand = z3.And(no_clean_candidate(v, st.isr, st.elr, eligible, variant),
                                 z3.Not(lkl_cand))
                out.append(Step(z3.And(g0, stays),
                                St(st.isr, st.elr, st.lke, inc, lkl, fenced, min_isr)))
                out.append(Step(z3.And(g0, z3.Not(stays), no_cand),
                                St(st.isr, st.elr, st.lke, NONE_SET, lkl, fenced, min_isr)))
                elect = z3.And(g0, z3.Not(stays), c_is_cand)
                out.extend(replace(e, last_known_leader=z3.And(lkl_cand, v.eq(c, lkl),
                                                                z3.Not(c_clean)))
                           for e in elect_outcome(cx, st, elect, fenced, min_isr))
    return out


def elect_outcome(cx: Ctx, st: Upd, guard: z3.BoolRef, fenced: RSet,
                  min_isr: z3.ArithRef) -> list[Step]:
    """ELR!ElectOutcome(st, c): an ISR member keeps the ISR; an ELR member is "added to ISR,
    and removed from ELR" (controller behavior 3); anyone else is an unclean election.  The
    LastKnownLeader is cleaned by every election ("Other behaviors" 7c).  refimpl
    `elect_outcome`."""
    v, c = cx.v, cx.c
    in_isr, in_elr = v.subset(c, st.isr), v.subset(c, st.elr)
    return [
        Step(z3.And(guard, in_isr), St(st.isr, st.elr, st.lke, c, NONE_SET, fenced, min_isr)),
        Step(z3.And(guard, z3.Not(in_isr), in_elr),
             St(c, st.elr - c, st.lke, c, NONE_SET, fenced, min_isr)),
        Step(z3.And(guard, z3.Not(in_isr), z3.Not(in_elr)),
             St(c, NONE_SET, NONE_SET, c, NONE_SET, fenced, min_isr), unclean_election=True),
    ]


def state_of(pre: St) -> list[Case[Upd]]:
    return [Case(z3.BoolVal(True), Upd(pre.isr, pre.elr, pre.lke))]


def removal_state(cx: Ctx, pre: St, unclean: RSet, variant: str) -> list[Case[Upd]]:
    """ELR!RemovalState(b, unclean): the ELR update with the ISR minus b when b is in the ISR
    or was detected unclean; else the state as it is."""
    v, x = cx.v, cx.x
    applies = v.subset(x, pre.isr) if not unclean else z3.BoolVal(True)
    upd = elr_update(v, pre.isr, pre.elr, pre.lke, pre.isr - x, cx.eff(pre), unclean, variant)
    return ([Case(z3.And(applies, u.guard), u.value) for u in upd]
            + [Case(z3.Not(applies), Upd(pre.isr, pre.elr, pre.lke))])


# ---------------------------------------------------------------------------------- transitions
# Each returns (extra hypotheses, steps).  X is the broker the action is about.

def shrink_isr(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!ShrinkIsr(f): the leader removes a lagging follower f (X); ELR update."""
    v, p, x = cx.v, cx.pre, cx.x
    hyps = [v.nonempty(p.leader), v.subset(x, p.isr - p.leader)]
    upd = elr_update(v, p.isr, p.elr, p.lke, p.isr - x, cx.eff(p), NONE_SET, variant)
    steps = election_outcomes(cx, p, upd, v.universe - p.fenced,
                              [Case(z3.BoolVal(True), p.leader)], p.fenced, p.min_isr, variant)
    return hyps, steps


def commit_isr_expand(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!ProposeIsrExpand(f) then ELR!HandleAlterPartition: the controller commits ISR + f
    (f = X unfenced, not in the ISR; it may be an ELR or LastKnownELR member)."""
    v, p, x = cx.v, cx.pre, cx.x
    hyps = [v.nonempty(p.leader), v.disjoint(x, p.isr), v.disjoint(x, p.fenced)]
    upd = elr_update(v, p.isr, p.elr, p.lke, p.isr | x, cx.eff(p), NONE_SET, variant)
    steps = election_outcomes(cx, p, upd, v.universe - p.fenced,
                              [Case(z3.BoolVal(True), p.leader)], p.fenced, p.min_isr, variant)
    return hyps, steps


def fence_broker(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!FenceBroker(b) and the fencing part of ELR!CleanShutdown(b): b = X leaves the ISR
    through the ELR update; a new leader is elected if b led."""
    v, p, x = cx.v, cx.pre, cx.x
    fenced = p.fenced | x
    hyps = [v.disjoint(x, p.fenced)]
    steps = election_outcomes(cx, p, removal_state(cx, p, NONE_SET, variant),
                              v.universe - fenced, [Case(z3.BoolVal(True), p.leader)],
                              fenced, p.min_isr, variant)
    return hyps, steps


def unfence_broker(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!UnfenceBroker(b): b = X heartbeats again; a leaderless partition runs its election
    (an ELR member when the ISR is empty: controller behavior 3)."""
    v, p, x = cx.v, cx.pre, cx.x
    fenced = p.fenced - x
    hyps = [v.subset(x, p.fenced)]
    steps = election_outcomes(cx, p, state_of(p), v.universe - fenced,
                              [Case(z3.BoolVal(True), p.leader)], fenced, p.min_isr, variant)
    return hyps, steps


def _restart(cx: Ctx, variant: str, unclean: bool) -> tuple[list[z3.BoolRef], list[Step]]:
    v, p, x = cx.v, cx.pre, cx.x
    fenced = p.fenced - x
    # a clean shutdown fenced b (ELR!CleanShutdown); an unclean one may be unnoticed
    hyps = [] if unclean else [v.subset(x, p.fenced)]
    removed = x if unclean and variant != "unclean-kept-in-elr" else NONE_SET
    if unclean and variant == "unclean-kept-in-elr":
        cases = removal_state(cx, p, NONE_SET, "off")   # spec BugKeepUncleanInElr
    else:
        cases = removal_state(cx, p, removed, variant)
    led = v.nonempty(p.leader & x)
    incumbent = [Case(led, NONE_SET), Case(z3.Not(led), p.leader)]
    steps = election_outcomes(cx, p, cases, v.universe - fenced, incumbent, fenced, p.min_isr,
                              variant)
    if unclean:
        steps = [replace(s, unclean_registered=x) for s in steps]
    return hyps, steps


def restart_clean(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!RestartBroker(b, k) after a clean shutdown (the CleanShutdownFile holds b's broker
    epoch): b = X registers, is unfenced and the election runs."""
    return _restart(cx, variant, unclean=False)


def restart_unclean(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!RestartBroker(b, k) after an unclean shutdown: "the controller will remove the
    broker from ISR and ELR before persisting the registration record" (controller behavior
    4); b = X joins the LastKnownELR, is unfenced, and the election runs."""
    return _restart(cx, variant, unclean=True)


def change_min_isr(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!ChangeMinIsr(m): rule 1 of the ELR update with the ISR as proposal ("Other
    behaviors" 2); the new min ISR is any positive integer."""
    v, p = cx.v, cx.pre
    new_eff = effective_min_isr(cx.new_min_isr, v.n())
    upd = elr_update(v, p.isr, p.elr, p.lke, p.isr, new_eff, NONE_SET, variant)
    steps = election_outcomes(cx, p, upd, v.universe - p.fenced,
                              [Case(z3.BoolVal(True), p.leader)], p.fenced, cx.new_min_isr,
                              variant)
    return [cx.new_min_isr != cx.min_isr], steps


def unclean_election(cx: Ctx, variant: str) -> tuple[list[z3.BoolRef], list[Step]]:
    """ELR!CompleteUncleanRecovery and ELR!UncleanLeaderElection: a leaderless partition with
    no clean candidate whose RecoveryDecision is an unclean one elects an unfenced replica C
    (a best GetReplicaLogInfo replier, or any unfenced replica); Balanced only once every
    LastKnownELR member replied (RecoveryCanElect, replies come from unfenced brokers)."""
    v, p, c = cx.v, cx.pre, cx.c
    eligible = v.universe - p.fenced
    d = recovery_decision(v, cx.strategy, cx.manager, p.isr, p.elr, p.lke, eligible, variant)
    lkl_cand = last_known_leader_candidate(v, p.isr, p.elr, p.lkl, eligible, cx.strategy,
                                           cx.manager)
    hyps = [v.empty(p.leader), no_clean_candidate(v, p.isr, p.elr, eligible, variant),
            z3.Not(lkl_cand), z3.Or(d["UncleanRecovery"], d["UncleanElection"]),
            v.subset(c, eligible),
            z3.Implies(z3.And(d["UncleanRecovery"], cx.strategy == BALANCED),
                       v.subset(p.lke, eligible))]
    return hyps, elect_outcome(cx, Upd(p.isr, p.elr, p.lke), z3.BoolVal(True), p.fenced,
                               p.min_isr)


TRANSITIONS: dict[str, tuple[Callable, str]] = {
    "shrink-isr": (shrink_isr, "ShrinkIsr"),
    "commit-isr-expand": (commit_isr_expand, "ProposeIsrExpand + HandleAlterPartition"),
    "fence-broker": (fence_broker, "FenceBroker, CleanShutdown"),
    "unfence-broker": (unfence_broker, "UnfenceBroker"),
    "restart-clean": (restart_clean, "RestartBroker (clean shutdown)"),
    "restart-unclean": (restart_unclean, "RestartBroker (unclean shutdown)"),
    "change-min-isr": (change_min_isr, "ChangeMinIsr"),
    "unclean-election": (unclean_election, "CompleteUncleanRecovery, UncleanLeaderElection"),
}


# ---------------------------------------------------------------------------------- problems

def _show(cx: Ctx, steps: list[Step]) -> Callable[[z3.ModelRef], dict]:
    def show(m: z3.ModelRef) -> dict:
        v, p = cx.v, cx.pre
        ev = lambda e: m.eval(e, model_completion=True)  # noqa: E731
        out = {"replication_factor": ev(v.n()).as_long(),
               "min_isr": ev(p.min_isr).as_long(),
               "strategy": STRATEGY_NAMES.get(ev(cx.strategy).as_long()),
               "unclean_recovery_manager": z3.is_true(ev(cx.manager)),
               "before": v.show(m, {"isr": p.isr, "elr": p.elr, "lastKnownElr": p.lke,
                                    "leader": p.leader, "lastKnownLeader": p.lkl,
                                    "fenced": p.fenced}),
               "broker": v.show(m, {"b": cx.x})["b"]}
        for s in steps:
            if z3.is_true(ev(s.guard)):
                q = s.post
                out["after"] = v.show(m, {"isr": q.isr, "elr": q.elr, "lastKnownElr": q.lke,
                                          "leader": q.leader, "lastKnownLeader": q.lkl,
                                          "fenced": q.fenced})
                out["after"]["min_isr"] = ev(q.min_isr).as_long()
                break
        return out
    return show


def transition_problem(name: str, transition: Callable, goal: str, variant: str = "off",
                       assume: tuple[str, ...] | None = None,
                       only: tuple[str, ...] | None = None,
                       strict_last_known_leader: bool = False,
                       extra: Callable[[Ctx], list[z3.BoolRef]] | None = None
                       ) -> Callable[[], Problem]:
    """goal "invariants": the spec's invariants and the strengthenings in `assume` hold after
    the step if they held before; goal "steps": the action properties.  `only` restricts the
    goal to the named conjuncts; `extra` adds hypotheses (e.g. a strategy).  The step taken
    is one of the transition's outcomes (its guard holds): the free candidate C is one the
    spec may elect."""
    def build() -> Problem:
        cx = Ctx(name)
        hyps, steps = transition(cx, variant)

        def inv(s: St) -> list[tuple[str, z3.BoolRef]]:
            return invariants(cx, s) + [(n, g) for n, g in strengthening(cx, s)
                                        if assume is None or n in assume]

        hyp = (cx.hyps + hyps + [g for _, g in inv(cx.pre)]
               + [z3.Or([s.guard for s in steps])] + (extra(cx) if extra else []))
        conj: dict[str, list[z3.BoolRef]] = {}
        for s in steps:
            props = (step_properties(cx, cx.pre, s, strict_last_known_leader)
                     if goal == "steps" else inv(s.post))
            for n, g in props:
                if only is None or n in only:
                    conj.setdefault(n, []).append(z3.Implies(s.guard, g))
        return Problem(hyp, [(n, z3.And(gs)) for n, gs in conj.items()], _show(cx, steps),
                       lambda k: [cx.v.n() <= k, cx.min_isr <= k, cx.new_min_isr <= k])
    return build


def init_problem() -> Problem:
    """ELR!Init: ISR = every replica, ELR = LastKnownELR = {}, some replica leads, nobody is
    fenced, no LastKnownLeader, any min ISR."""
    cx = Ctx("init")
    v, p = cx.v, cx.pre
    hyps = cx.hyps + [v.eq(p.isr, v.universe), v.empty(p.elr), v.empty(p.lke),
                      v.card(p.leader) == 1, v.empty(p.lkl), v.empty(p.fenced)]
    return Problem(hyps, invariants(cx, p) + strengthening(cx, p),
                   lambda m: v.show(m, {"isr": p.isr, "leader": p.leader}),
                   lambda k: [v.n() <= k, cx.min_isr <= k])


def refimpl_fence_problem(assume: tuple[str, ...]) -> Callable[[], Problem]:
    """refimpl/elr/controller.py `Controller._fence(s, b)` (not a pure rule function, so it is
    encoded here from the code) against the spec's FenceBroker before the election: the
    refimpl always runs the ELR update with ISR - {b}; the spec's RemovalState only when b is
    in the ISR.  The LastKnownLeader: refimpl records b when the ISR was exactly {b}; the spec
    (LastKnownLeaderAfter) the old ISR when the new one is empty."""
    def build() -> Problem:
        cx = Ctx("refimpl-fence")
        v, p, x = cx.v, cx.pre, cx.x
        hyps = cx.hyps + [v.disjoint(x, p.fenced)] + [
            g for n, g in invariants(cx, p) + strengthening(cx, p)
            if n not in STRENGTHENINGS or n in assume]
        spec = removal_state(cx, p, NONE_SET, "off")
        ref = elr_update(v, p.isr, p.elr, p.lke, p.isr - x, cx.eff(p), NONE_SET, "off")
        same = []
        for sc in spec:
            for rc in ref:
                a, b = sc.value, rc.value
                spec_lkl_set = z3.And(v.empty(a.isr), v.nonempty(p.isr))
                ref_lkl_set = v.eq(p.isr, x)
                same.append(z3.Implies(z3.And(sc.guard, rc.guard), z3.And(
                    v.eq(a.isr, b.isr), v.eq(a.elr, b.elr), v.eq(a.lke, b.lke),
                    spec_lkl_set == ref_lkl_set)))

        def show(m: z3.ModelRef) -> dict:
            ev = lambda e: m.eval(e, model_completion=True)  # noqa: E731
            out = {"replication_factor": ev(v.n()).as_long(), "min_isr": ev(p.min_isr).as_long(),
                   "before": v.show(m, {"isr": p.isr, "elr": p.elr, "lastKnownElr": p.lke,
                                        "leader": p.leader, "fenced": p.fenced}),
                   "fenced_broker": v.show(m, {"b": x})["b"]}
            for name, cases in (("spec", spec), ("refimpl", ref)):
                for c in cases:
                    if z3.is_true(ev(c.guard)):
                        out[name] = v.show(m, {"isr": c.value.isr, "elr": c.value.elr,
                                               "lastKnownElr": c.value.lke})
            return out
        return Problem(hyps, [("RefimplFenceMatchesSpec", z3.And(same))], show,
                       lambda k: [v.n() <= k, cx.min_isr <= k])
    return build


def obligations() -> list[Obligation]:
    obs: list[Obligation] = []
    py = ("refimpl.elr.rules: elr_update, elr_after_rule2, last_known_elr_after_rule2, "
          "clean_candidates, last_known_leader_candidates, elect_outcome, recovery_decision")
    inv_names = ("ElrIsrDisjoint, NonEmptyElrImpliesIsrBelowMinIsr, LastKnownElrDisjoint, "
                 "FencedNotInIsr, LeaderInIsr, LeaderUnfenced")
    no_s = tuple(n for n in STRENGTHENINGS if n not in MIN_ISR_ONE)
    obs.append(Obligation(
        "kip966-init-satisfies-invariants", "kip966",
        "ELR!Init satisfies the invariants and every strengthening (the base case of the "
        "induction)", PROVED, UNBOUNDED, init_problem, spec="ELR!Init", python="-"))
    for t, (fn, action) in TRANSITIONS.items():
        lowering = t == "change-min-isr"
        obs.append(Obligation(
            f"kip966-{t}-preserves-invariants", "kip966",
            f"ELR!{action} preserves {inv_names} and the strengthenings "
            + ", ".join(no_s if lowering else STRENGTHENINGS),
            PROVED, UNBOUNDED,
            transition_problem(f"{t}.inv", fn, "invariants",
                               only=None if not lowering else tuple(
                                   n for n in inv_names.split(", ")) + no_s),
            spec=f"ELR!{action}, ELRRules!ElrUpdate", python=py))
        obs.append(Obligation(
            f"kip966-{t}-step-properties", "kip966",
            f"ELR!{action} satisfies IsrElrDropAllowed, LastKnownElrKeepsLeavers and "
            "UncleanRegistrantRemoved (an unclean election excepted)", PROVED, UNBOUNDED,
            transition_problem(f"{t}.steps", fn, "steps"),
            spec=f"ELR!{action}, ELR!IsrElrDropAllowed", python=py))
    obs += [
        Obligation(
            "kip966-finding-min-isr-lowered", "kip966",
            "ELR!ChangeMinIsr does not preserve ElrAtMostOneAtMinIsrOne: lowering min ISR to "
            "1 while the ISR is empty keeps an ELR of two or more (or an ELR beside a "
            "LastKnownELR)",
            COUNTEREXAMPLE, UNBOUNDED,
            transition_problem("minisr.s", change_min_isr, "invariants",
                               only=MIN_ISR_ONE),
            spec="ELR!ChangeMinIsr", python=py, kind="finding", refutes="ElrAtMostOneAtMinIsrOne",
            note="docs/spec-elr.md Findings 1 (elr-finding-min-isr-lowered-leaderless, "
                 "elr-finding-min-isr-lowered-data-loss): the ELR is cleared only when the "
                 "new min ISR <= |ISR|, so a leaderless partition keeps its ELR."),
        Obligation(
            "kip966-finding-elr-election-after-min-isr-lowered", "kip966",
            "Without ElrAtMostOneAtMinIsrOne an ELR election (UnfenceBroker) breaks "
            "NonEmptyElrImpliesIsrBelowMinIsr", COUNTEREXAMPLE, UNBOUNDED,
            transition_problem("unfence.nos", unfence_broker, "invariants", assume=no_s,
                               only=("NonEmptyElrImpliesIsrBelowMinIsr",)),
            spec="ELR!UnfenceBroker, ELR!NonEmptyElrImpliesIsrBelowMinIsr", python=py,
            kind="finding", refutes="NonEmptyElrImpliesIsrBelowMinIsr",
            note="The same violated invariant as TLC's elr-finding-min-isr-lowered-leaderless "
                 "(6 states): ISR {}, ELR {b1,b3}, min ISR lowered to 1, b1 elected from the "
                 "ELR and ELR {b3} stays."),
        Obligation(
            "kip966-restart-unclean-full-kip-never-reelects", "kip966",
            "With the unclean recovery manager (the full KIP) a replica registering after an "
            "unclean shutdown leaves ISR and ELR and is not elected in that step, and the "
            "LastKnownELR keeps every replica that left", PROVED, UNBOUNDED,
            transition_problem("restart.full", restart_unclean, "steps",
                               strict_last_known_leader=True,
                               extra=lambda cx: [cx.manager]),
            spec="ELR!RestartBroker, ELRRules!LastKnownLeaderCandidates", python=py),
        Obligation(
            "kip966-finding-phase1-last-known-leader", "kip966",
            "Phase 1 (no unclean recovery manager, Balanced): the LastKnownLeader rule elects "
            "the leader that has just registered after an unclean shutdown and drops the "
            "LastKnownELR", COUNTEREXAMPLE, UNBOUNDED,
            transition_problem("restart.p1", restart_unclean, "steps",
                               strict_last_known_leader=True),
            spec="ELR!RestartBroker, ELRRules!LastKnownLeaderCandidates", python=py,
            kind="finding", refutes="LastKnownElrKeepsLeavers",
            note="docs/spec-elr.md Findings 2 (elr-finding-phase1-last-known-leader -> "
                 "NoAckedRecordLost): the LastKnownLeader may have lost data in its unclean "
                 "shutdown; phase 1 elects it anyway."),
    ]
    obs += [
        Obligation(
            "kip966-refimpl-fence-matches-spec", "kip966",
            "refimpl's fencing (the ELR update with ISR - {b} even when b is not in the ISR) "
            "gives the spec's RemovalState / LastKnownLeaderAfter on every state satisfying "
            "the invariants and strengthenings", PROVED, UNBOUNDED,
            refimpl_fence_problem(STRENGTHENINGS),
            spec="ELR!FenceBroker, ELR!RemovalState, ELR!LastKnownLeaderAfter",
            python="refimpl.elr.controller.Controller._fence"),
        Obligation(
            "kip966-finding-refimpl-fence-after-min-isr-lowered", "kip966",
            "After min ISR is lowered, refimpl's fencing of a replica outside the ISR cleans "
            "the LastKnownELR where the spec keeps it", COUNTEREXAMPLE, UNBOUNDED,
            refimpl_fence_problem(tuple(n for n in STRENGTHENINGS
                                        if n not in MIN_ISR_ONE
                                        and n != "LastKnownElrEmptyAtMinIsr")),
            spec="ELR!FenceBroker, ELR!RemovalState",
            python="refimpl.elr.controller.Controller._fence", kind="finding",
            refutes="RefimplFenceMatchesSpec",
            note="A refimpl / spec divergence reachable only through the min-ISR-lowering "
                 "finding: ISR {} / ELR {c} / LastKnownELR {d} at min ISR 2, min ISR lowered "
                 "to 1 (ELR kept), c elected (ISR {c} reaches min ISR, LastKnownELR {d} "
                 "stays); fencing any replica outside the ISR then runs rule 1 in the refimpl "
                 "(LastKnownELR cleaned) but no ELR update in the spec."),
    ]
    planted = [
        ("NonEmptyElrImpliesIsrBelowMinIsr", "skip-rule-1", "1", "fence-broker", "invariants", "BugSkipElrRule = \"1\" "
         "(elr-bug-skip-rule-1 -> NonEmptyElrImpliesIsrBelowMinIsr); refimpl "
         "elr_update(clear_at_min_isr=False), bug elr-not-cleared-at-min-isr"),
        ("IsrElrDropAllowed", "skip-rule-2a", "2a", "fence-broker", "steps",
         "BugSkipElrRule = \"2a\" (elr-bug-skip-rule-2a -> IsrPlusElrAtLeastMinIsr)"),
        ("IsrElrDropAllowed", "skip-rule-2b", "2b", "fence-broker", "steps",
         "BugSkipElrRule = \"2b\" (elr-bug-skip-rule-2b -> IsrPlusElrAtLeastMinIsr)"),
        ("ElrIsrDisjoint", "skip-rule-2c", "2c", "commit-isr-expand", "invariants",
         "BugSkipElrRule = \"2c\" (elr-bug-skip-rule-2c -> ElrIsrDisjoint, RF4 / min ISR 3)"),
        ("UncleanRegistrantRemoved", "unclean-kept-in-elr", "unclean-kept-in-elr", "restart-unclean", "steps",
         "BugKeepUncleanInElr (elr-bug-unclean-kept-in-elr); refimpl bug "
         "unclean-broker-kept-in-elr"),
        ("LeaderUnfenced", "leader-from-fenced-elr", "fenced-elr", "unfence-broker", "invariants",
         "refimpl clean_candidates(allow_fenced_elr=True), bug leader-from-fenced-elr"),
        ("LastKnownElrKeepsLeavers", "literal-6a-last-known-elr", "literal-6a", "restart-unclean", "steps",
         "KIP-966 'Other behaviors' 6a read literally: only ELR members that register "
         "uncleanly join the LastKnownELR; an ISR member that does is tracked nowhere, so "
         "Balanced recovery does not wait for it"),
    ]
    for refutes, pname, variant, t, goal, note in planted:
        fn, action = TRANSITIONS[t]
        obs.append(Obligation(
            f"kip966-planted-{pname}", "kip966",
            f"planted variant {pname}: ELR!{action} with the rule changed must be refuted",
            COUNTEREXAMPLE, UNBOUNDED, transition_problem(f"{pname}.{goal}", fn, goal, variant),
            spec=f"ELR!{action}", python=py, kind="planted", note=note, refutes=refutes))
    return obs
