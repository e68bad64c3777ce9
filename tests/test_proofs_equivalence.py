"""The z3 encodings of proofs/ against the refimpl functions they mirror.

Each test draws concrete inputs, evaluates the refimpl function, fixes the same inputs in the
z3 encoding and asserts that z3 is forced to the same result (satisfiable with it, and
unsatisfiable with any other), so an encoding cannot drift from the code it stands for.
"""

from __future__ import annotations

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs import elr_controller as ec
from proofs import elr_hwm, elr_recovery, elr_rules, kraft_hwm, kraft_log
from proofs.venn import Venn
from refimpl.elr import rules as er
from refimpl.elr.rules import LogInfo
from refimpl.kraft import log as klog
from refimpl.kraft import quorum as kq
from refimpl.kraft import rules as kr

F = frozenset
BROKERS = [f"r{i}" for i in range(6)]


def forced(constraints: list, expr, expected) -> bool:
    """`constraints` are satisfiable and force `expr` to equal `expected`."""
    s = z3.Solver()
    s.add(*constraints)
    if s.check() != z3.sat:
        return False
    s.add(expr != expected)
    return s.check() == z3.unsat


def truth(constraints: list, guard) -> bool:
    """The value `constraints` force on a Boolean guard (fails if they do not force one).
    Constraints that are all `variable == value` are substituted (fast path); others go to
    the solver."""
    if all(z3.is_eq(c) and z3.is_const(c.arg(1)) and c.arg(0).num_args() == 0
           for c in constraints):
        val = z3.simplify(z3.substitute(guard, *[(c.arg(0), c.arg(1)) for c in constraints]))
        assert z3.is_true(val) or z3.is_false(val), "the inputs do not decide the guard"
        return z3.is_true(val)
    if forced(constraints, guard, True):
        return True
    assert forced(constraints, guard, False), "the inputs do not decide the guard"
    return False


# ------------------------------------------------------------------------------- KIP-595

ints = st.integers(min_value=0, max_value=12)


@given(ints, ints, ints, ints)
def test_is_log_up_to_date(ce, co, oe, oo):
    got = kraft_log.is_log_up_to_date(z3.IntVal(ce), z3.IntVal(co), z3.IntVal(oe), z3.IntVal(oo))
    assert z3.is_true(z3.simplify(got)) == kr.is_log_up_to_date(ce, co, oe, oo)


def records(epochs: list[int]) -> tuple:
    return tuple(klog.Record(e, f"v{i}") for i, e in enumerate(epochs))


def fixed_log(lg: kraft_log.Log, epochs: list[int], values: list[int] | None = None) -> list:
    values = values if values is not None else list(range(len(epochs)))
    return ([lg.length == len(epochs)] + [lg.epoch[i] == e for i, e in enumerate(epochs)]
            + [lg.value[i] == x for i, x in enumerate(values)])


sorted_epochs = st.lists(st.integers(1, 5), max_size=6).map(sorted)
any_epochs = st.lists(st.integers(1, 5), max_size=6)


@settings(max_examples=80)
@given(sorted_epochs, st.integers(0, 6), ints, ints)
def test_spec_is_up_to_date_on_a_log(epochs, ce, co, _):
    lg = kraft_log.Log.fresh("l")
    want = kr.is_log_up_to_date(ce, co, klog.last_epoch(records(epochs)), len(epochs))
    assert truth(fixed_log(lg, epochs), kraft_log.spec_is_up_to_date(ce, co, lg)) == want


@settings(max_examples=80)
@given(any_epochs, st.integers(0, 6))
def test_end_offset_for_epoch_backward_scan(epochs, e):
    """The encoding of refimpl's backward scan matches it on every log, sorted or not."""
    lg = kraft_log.Log.fresh("l")
    ep, end, defs = kraft_log.end_offset_for_epoch(lg, z3.IntVal(e), "x")
    want_ep, want_end = klog.end_offset_for_epoch(records(epochs), e)
    cons = fixed_log(lg, epochs) + defs
    assert forced(cons, end, want_end) and forced(cons, ep, want_ep)


@settings(max_examples=80)
@given(sorted_epochs, st.integers(0, 6))
def test_spec_end_offset_for_epoch_on_sorted_logs(epochs, e):
    lg = kraft_log.Log.fresh("l")
    k, dk = kraft_log.spec_end_offset_for_epoch(lg, z3.IntVal(e), "s")
    lea, dl = kraft_log.spec_largest_epoch_at_most(lg, z3.IntVal(e), "s")
    want_ep, want_end = klog.end_offset_for_epoch(records(epochs), e)
    cons = fixed_log(lg, epochs) + dk + dl
    assert forced(cons, k, want_end) and forced(cons, lea, want_ep)


@settings(max_examples=120)
@given(sorted_epochs, sorted_epochs, st.booleans())
def test_fetch_diverging_epoch_and_truncation(leader, follower, off_by_one):
    ld, fl = kraft_log.Log.fresh("L"), kraft_log.Log.fresh("F")
    f = kraft_log.fetch(ld, fl, off_by_one)
    cons = fixed_log(ld, leader) + fixed_log(fl, follower) + f.defs
    lrec, frec = records(leader), records(follower)
    div = kr.diverging_epoch(lrec, len(frec), klog.last_epoch(frec), off_by_one=off_by_one)
    assert truth(cons, f.valid) == (div is None)
    if div is not None:
        assert forced(cons, f.div_epoch, div[0]) and forced(cons, f.div_end, div[1])
        assert forced(cons, f.truncate_to, kr.truncation_offset(frec, *div))


@given(st.lists(st.integers(0, 9), min_size=1, max_size=9), st.integers(0, 9),
       st.integers(0, 9), st.booleans(), st.booleans())
def test_leader_high_watermark(offs, start, cur, check, half):
    n = len(offs)
    s = z3.Array("s", z3.IntSort(), z3.IntSort())
    q = z3.IntVal(n) / 2 if half else None
    got = kraft_hwm.leader_high_watermark(s, z3.IntVal(n), z3.IntVal(start), z3.IntVal(cur),
                                          check_current_epoch=check, quorum=q)
    srt = sorted(offs, reverse=True)
    want = kr.leader_high_watermark(offs, n, start, cur, check_current_epoch=check,
                                    quorum=n // 2 if half else None)
    assert forced([s[i] == x for i, x in enumerate(srt)], got, want)
    assert z3.simplify(kraft_hwm.majority(z3.IntVal(n))).as_long() == kq.majority(n)


@given(st.lists(st.integers(0, 9), max_size=9), st.integers(-1, 10))
def test_majority_replicated_offset(offs, quorum):
    s = z3.Array("s", z3.IntSort(), z3.IntSort())
    got = kraft_hwm.majority_replicated_offset(s, z3.IntVal(len(offs)), z3.IntVal(quorum))
    srt = sorted(offs, reverse=True)
    want = kq.majority_replicated_offset(offs, quorum)
    assert forced([s[i] == x for i, x in enumerate(srt)], got, want)


@given(ints, ints, ints, st.booleans())
def test_follower_high_watermark(cur, lh, end, capped):
    got = kraft_hwm.follower_high_watermark(z3.IntVal(cur), z3.IntVal(lh), z3.IntVal(end),
                                            capped)
    assert z3.simplify(got).as_long() == kr.follower_high_watermark(cur, lh, end, capped)


# ------------------------------------------------------------------------------- KIP-966

def subsets(universe):
    return st.frozensets(st.sampled_from(universe)) if universe else st.just(F())


@st.composite
def universe_and(draw, k: int):
    """A replica set and k subsets of it."""
    u = BROKERS[:draw(st.integers(1, len(BROKERS)))]
    return (F(u),) + tuple(draw(subsets(u)) for _ in range(k))


def venn_fix(names, sets, universe):
    v = Venn("t", names)
    return v, v.fix(dict(zip(names, sets)), universe)


@settings(max_examples=120)
@given(universe_and(5), st.integers(1, 8), st.booleans())
def test_elr_update(drawn, min_isr, skip_rule_1):
    u, isr, elr, lke, proposed, unclean = drawn
    names = ("ISR", "ELR", "LKE", "P", "U")
    v, fix = venn_fix(names, (isr, elr, lke, proposed, unclean), u)
    eff = er.effective_min_isr(min_isr, len(u))
    assert z3.simplify(elr_rules.effective_min_isr(z3.IntVal(min_isr),
                                                   z3.IntVal(len(u)))).as_long() == eff
    want = er.elr_update(isr, elr, lke, proposed, eff, unclean,
                         clear_at_min_isr=not skip_rule_1)
    cases = elr_rules.elr_update(v, *(v.base(n) for n in names[:4]), z3.IntVal(eff),
                                 v.base("U"), "1" if skip_rule_1 else "off")
    hit = [c.value for c in cases if truth(fix, c.guard)]
    assert len(hit) == 1
    a = dict(zip(names, (isr, elr, lke, proposed, unclean)))
    got = tuple(v.concrete(s, a, u) for s in (hit[0].isr, hit[0].elr, hit[0].lke))
    assert got == (want.isr, want.elr, want.last_known_elr)


@settings(max_examples=80)
@given(universe_and(3), st.integers(1, 8))
def test_elr_after_min_isr_change(drawn, new_min):
    u, isr, elr, lke = drawn
    names = ("ISR", "ELR", "LKE")
    v, fix = venn_fix(names, (isr, elr, lke), u)
    eff = er.effective_min_isr(new_min, len(u))
    want = er.elr_after_min_isr_change(isr, elr, lke, eff)
    cases = elr_rules.elr_after_min_isr_change(v, *(v.base(n) for n in names), z3.IntVal(eff))
    hit = [c.value for c in cases if truth(fix, c.guard)]
    a = dict(zip(names, (isr, elr, lke)))
    assert len(hit) == 1
    assert (v.concrete(hit[0].elr, a, u), v.concrete(hit[0].lke, a, u)) == (
        want.elr, want.last_known_elr)


@settings(max_examples=100)
@given(universe_and(3), st.booleans())
def test_clean_candidates(drawn, allow_fenced):
    u, isr, elr, elig = drawn
    want = er.clean_candidates(isr, elr, elig, True, allow_fenced_elr=allow_fenced)
    for x in sorted(u):
        names = ("ISR", "ELR", "E", "C")
        v, fix = venn_fix(names, (isr, elr, elig, F({x})), u)
        g = elr_rules.clean_candidate(v, v.base("C"), v.base("ISR"), v.base("ELR"),
                                      v.base("E"), "fenced-elr" if allow_fenced else "off")
        assert truth(fix, g) == (x in want)
    v, fix = venn_fix(("ISR", "ELR", "E"), (isr, elr, elig), u)
    assert truth(fix, elr_rules.no_clean_candidate(
        v, v.base("ISR"), v.base("ELR"), v.base("E"),
        "fenced-elr" if allow_fenced else "off")) == (not want)


strategies = st.sampled_from(["Aggressive",
                              "Balanced", "None"])
STRAT = {"Aggressive": elr_rules.AGGRESSIVE, "Balanced": elr_rules.BALANCED,
         "None": elr_rules.NONE}


@settings(max_examples=100)
@given(universe_and(4), st.sampled_from(BROKERS + ["NoBroker"]), strategies, st.booleans())
def test_last_known_leader_candidates(drawn, lkl, strategy, manager):
    u, isr, elr, elig, _ = drawn
    lkl_set = F({lkl}) & u
    want = er.last_known_leader_candidates(isr, elr, lkl if lkl_set else "NoBroker", elig,
                                           strategy, manager, True)
    names = ("ISR", "ELR", "K", "E")
    v, fix = venn_fix(names, (isr, elr, lkl_set, elig), u)
    g = elr_rules.last_known_leader_candidate(v, v.base("ISR"), v.base("ELR"), v.base("K"),
                                              v.base("E"), z3.IntVal(STRAT[strategy]),
                                              z3.BoolVal(manager))
    assert truth(fix, g) == bool(want)


@settings(max_examples=150)
@given(universe_and(4), strategies, st.booleans(), st.booleans())
def test_recovery_decision(drawn, strategy, manager, fixed):
    u, isr, elr, lke, elig = drawn
    want = er.recovery_decision(strategy, manager, True, isr, elr, lke, elig,
                                bug_fixed_replies=fixed)
    names = ("ISR", "ELR", "LKE", "E")
    v, fix = venn_fix(names, (isr, elr, lke, elig), u)
    d = elr_rules.recovery_decision(v, z3.IntVal(STRAT[strategy]), z3.BoolVal(manager),
                                    *(v.base(n) for n in names),
                                    "fixed-replies" if fixed else "off")
    assert [n for n, g in d.items() if truth(fix, g)] == [want]


@settings(max_examples=100)
@given(universe_and(2), strategies, st.one_of(st.none(), st.integers(1, 4)))
def test_recovery_can_elect(drawn, strategy, fixed):
    u, lke, rep = drawn
    want = er.recovery_can_elect(strategy, lke, rep, fixed_replies=fixed)
    v, fix = venn_fix(("LKE", "R"), (lke, rep), u)
    g = elr_rules.recovery_can_elect(v, z3.IntVal(STRAT[strategy]), v.base("LKE"),
                                     v.base("R"), None if fixed is None else z3.IntVal(fixed))
    assert truth(fix, g) == want


@given(ints, ints, ints, ints)
def test_reply_better(e1, o1, e2, o2):
    r1, r2 = LogInfo("a", 1, e1, 1, o1), LogInfo("b", 1, e2, 1, o2)
    got = elr_recovery.reply_better(z3.IntVal(e1), z3.IntVal(o1), z3.IntVal(e2), z3.IntVal(o2))
    assert z3.is_true(z3.simplify(got)) == er.reply_better(r1, r2)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=5))
def test_best_repliers_use_reply_better(replies):
    """best_repliers is "no other reply beats it" under reply_better (the encoding's `best`)."""
    infos = [LogInfo(f"r{i}", 1, e, 1, o) for i, (e, o) in enumerate(replies)]
    want = er.best_repliers(infos)
    got = {a.broker_id for a in infos if not any(
        z3.is_true(z3.simplify(elr_recovery.reply_better(
            z3.IntVal(c.last_written_leader_epoch), z3.IntVal(c.log_end_offset),
            z3.IntVal(a.last_written_leader_epoch), z3.IntVal(a.log_end_offset))))
        for c in infos)}
    assert got == want


@given(st.integers(0, 6), st.integers(0, 6), st.integers(1, 6), st.booleans())
def test_hwm_min_isr_requirement(committed, maximal, eff, bug):
    got = elr_hwm.requirement_met(z3.IntVal(committed), z3.IntVal(maximal), z3.IntVal(eff),
                                  "maximal-isr" if bug else "off")
    assert z3.is_true(z3.simplify(got)) == er.hwm_min_isr_requirement_met(
        committed, maximal, eff, bug_use_maximal_isr=bug)


@settings(max_examples=100)
@given(universe_and(2), st.dictionaries(st.sampled_from(BROKERS), st.integers(0, 6)),
       st.integers(0, 6), st.integers(1, 6), st.booleans())
def test_next_high_watermark(drawn, leos, hwm, eff, bug):
    u, committed, pending = drawn
    maximal = committed | pending
    want = er.next_high_watermark(hwm, leos, committed, maximal, eff, bug_use_maximal_isr=bug)
    repl = min((leos.get(r, 0) for r in maximal), default=0)
    met = elr_hwm.requirement_met(z3.IntVal(len(committed)), z3.IntVal(len(maximal)),
                                  z3.IntVal(eff), "maximal-isr" if bug else "off")
    got = elr_hwm.next_hwm(z3.IntVal(hwm), z3.BoolVal(bool(maximal)), met, z3.IntVal(repl))
    assert z3.simplify(got).as_long() == want


@given(ints, ints, st.integers(0, 6), st.integers(1, 6), st.integers(1, 6), st.booleans())
def test_acks_all_satisfied(offset, hwm, isr_size, min_isr, rf, check):
    eff = er.effective_min_isr(min_isr, rf)
    want = er.acks_all_satisfied(offset, hwm, isr_size, eff, check_min_isr=check)
    got = z3.And(hwm > offset, z3.BoolVal(True) if not check
                 else z3.IntVal(isr_size) >= elr_rules.effective_min_isr(z3.IntVal(min_isr),
                                                                         z3.IntVal(rf)))
    assert z3.is_true(z3.simplify(got)) == want


@settings(max_examples=30)
@given(universe_and(3), st.data())
def test_elect_outcome(drawn, data):
    u, isr, elr, lke = drawn
    leader = data.draw(st.sampled_from(sorted(u)))
    want = er.elect_outcome(isr, elr, lke, leader)
    cx = ec.Ctx("t")
    a = {"ISR": isr, "ELR": elr, "LKE": lke, "C": F({leader})}
    fix = cx.v.fix(a, u)
    steps = ec.elect_outcome(cx, elr_rules.Upd(cx.pre.isr, cx.pre.elr, cx.pre.lke),
                             z3.BoolVal(True), cx.pre.fenced, cx.min_isr)
    hit = [s.post for s in steps if truth(fix, s.guard)]
    assert len(hit) == 1
    got = tuple(cx.v.concrete(x, a, u) for x in (hit[0].isr, hit[0].elr, hit[0].lke,
                                                 hit[0].leader))
    assert got == (want.isr, want.elr, want.last_known_elr, F({leader}))
