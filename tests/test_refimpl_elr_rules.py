"""Unit tests of refimpl/elr/rules.py: each KIP-966 rule, the KIP's own examples, and
properties of the ELR update (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.elr import rules
from refimpl.elr.rules import LogInfo

F = frozenset


# --------------------------------------------------------------------------- min ISR

def test_effective_min_isr_is_capped_by_the_replication_factor():
    assert rules.effective_min_isr(2, 3) == 2
    assert rules.effective_min_isr(3, 3) == 3
    assert rules.effective_min_isr(5, 3) == 3


# --------------------------------------------------------------------------- ELR update

def test_rule1_proposed_isr_at_min_isr_empties_elr_and_last_known_elr():
    u = rules.elr_update(F("a"), F("bc"), F("d"), F("ae"), 2)
    assert (u.isr, u.elr, u.last_known_elr) == (F("ae"), F(), F())


def test_rule2_retains_adds_removed_isr_members_and_drops_duplicates():
    # 2a retain {c}; 2b add {a,b,x} - {a} = {b}; 2c: c is proposed again -> not in ELR
    u = rules.elr_update(F("ab"), F("cd"), F(), F("ac"), 3)
    assert u.isr == F("ac")
    assert u.elr == F("bd")


def test_kip_walkthrough_four_brokers_min_isr_three():
    """KIP-966 'Eligible Leader Replicas' example setup: 4 brokers, min ISR 3."""
    isr, elr, lke = F("0123"), F(), F()
    steps = [  # (proposed ISR, expected ELR)
        (F("012"), F()),         # still >= min ISR: rule 1
        (F("01"), F("2")),       # below min ISR: 2 joins the ELR (2b)
        (F("0"), F("12")),       # 1 joins too; 2 retained (2a)
        (F("03"), F("12")),      # 3 catches up and rejoins: still below min ISR
        (F("013"), F()),         # back to min ISR: rule 1 empties the ELR
    ]
    for proposed, want in steps:
        u = rules.elr_update(isr, elr, lke, proposed, 3)
        isr, elr, lke = u.isr, u.elr, u.last_known_elr
        assert isr == proposed and elr == want


def test_unclean_broker_is_removed_from_isr_and_elr_into_last_known_elr():
    # ISR {a}, ELR {b}: b registers after an unclean shutdown
    u = rules.elr_update(F("a"), F("b"), F(), F("a"), 2, unclean=F("b"))
    assert (u.isr, u.elr, u.last_known_elr) == (F("a"), F(), F("b"))
    # the last ISR member registers uncleanly: it does not enter the ELR
    u = rules.elr_update(F("a"), F("b"), F(), F(), 2, unclean=F("a"))
    assert (u.isr, u.elr, u.last_known_elr) == (F(), F("b"), F("a"))


def test_last_known_elr_literal_6a_forgets_unclean_isr_members():
    """spec finding elr-finding-last-known-elr-literal: KIP-966 "Other behaviors" 6a read
    literally puts only ELR members into the LastKnownELR.  The ISR {a, b} (min ISR 2) loses a
    and then b to unclean registrations: the broad rule remembers both, the literal rule
    neither, so "all LastKnownELR members replied" holds with no reply at all."""
    broad = rules.elr_update(F("ab"), F(), F(), F("b"), 2, unclean=F("a"))
    broad = rules.elr_update(broad.isr, broad.elr, broad.last_known_elr, F(), 2, unclean=F("b"))
    assert (broad.isr, broad.elr, broad.last_known_elr) == (F(), F(), F("ab"))
    lit = rules.elr_update(F("ab"), F(), F(), F("b"), 2, unclean=F("a"),
                           last_known_elr_literal=True)
    lit = rules.elr_update(lit.isr, lit.elr, lit.last_known_elr, F(), 2, unclean=F("b"),
                           last_known_elr_literal=True)
    assert (lit.isr, lit.elr, lit.last_known_elr) == (F(), F(), F())
    assert rules.recovery_can_elect("Balanced", lit.last_known_elr, F("c"))
    assert not rules.recovery_can_elect("Balanced", broad.last_known_elr, F("c"))
    # an ELR member that registers uncleanly joins the LastKnownELR under both readings
    assert rules.last_known_elr_literal_6a(F("b"), F(), F("a"), F()) == F("b")
    assert rules.elr_update(F("a"), F("b"), F(), F("a"), 2, unclean=F("b"),
                            last_known_elr_literal=True).last_known_elr == F("b")


def test_elr_disabled_keeps_the_last_isr_member():
    u = rules.elr_update(F("c"), F(), F(), F(), 2, elr_enabled=False)
    assert (u.isr, u.elr) == (F("c"), F())
    u = rules.elr_update(F("abc"), F(), F(), F("a"), 2, elr_enabled=False)
    assert (u.isr, u.elr) == (F("a"), F())


def test_planted_bug_elr_not_cleared_at_min_isr():
    u = rules.elr_update(F("a"), F("b"), F(), F("ac"), 2, clear_at_min_isr=False)
    assert u.elr == F("b")
    assert rules.elr_update(F("a"), F("b"), F(), F("ac"), 2).elr == F()


def test_min_isr_change_clears_elr_only_when_new_min_isr_le_isr_size():
    u = rules.elr_after_min_isr_change(F("a"), F("b"), F("c"), 1)
    assert (u.isr, u.elr, u.last_known_elr) == (F("a"), F(), F())
    u = rules.elr_after_min_isr_change(F("a"), F("b"), F("c"), 3)
    assert (u.isr, u.elr, u.last_known_elr) == (F("a"), F("b"), F("c"))


BROKERS = "abcde"
brokersets = st.frozensets(st.sampled_from(BROKERS))


@settings(max_examples=300)
@given(isr=brokersets, elr=brokersets, lke=brokersets, proposed=brokersets,
       min_isr=st.integers(1, 5), unclean=brokersets)
def test_elr_update_keeps_the_elr_invariants(isr, elr, lke, proposed, min_isr, unclean):
    elr = elr - isr
    u = rules.elr_update(isr, elr, lke, proposed, min_isr, unclean=unclean)
    assert u.isr == proposed
    assert not (u.elr & u.isr)                                   # ElrIsrDisjoint
    assert not u.elr or len(u.isr) < min_isr                     # NonEmptyElr => ISR < min
    assert not (u.elr & unclean)                                 # unclean never kept
    assert not (u.last_known_elr & (u.isr | u.elr))              # LastKnownElrDisjoint
    assert u.elr <= (isr | elr)                                  # only former ISR/ELR members
    if not unclean:
        # ISR+ELR does not drop below min ISR without an unclean registration
        before, after = isr | elr, u.isr | u.elr
        assert len(after) >= min(len(before | proposed), min_isr)


# --------------------------------------------------------------------------- HWM and acks

def test_hwm_three_replica_example_waits_for_the_committed_isr():
    """KIP-966: ISR=[0], ELR=[1]; broker 2 caught up, maximal ISR=[0, 2]: the HWM must not
    advance until the controller commits ISR=[0, 2]."""
    leos = {"0": 5, "2": 5}
    assert rules.next_high_watermark(3, leos, F("0"), F("02"), 2) == 3
    assert rules.next_high_watermark(3, leos, F("0"), F("02"), 2, bug_use_maximal_isr=True) == 5
    assert rules.next_high_watermark(3, leos, F("02"), F("02"), 2) == 5


def test_hwm_covers_only_what_the_whole_maximal_isr_has_and_never_goes_back():
    leos = {"0": 9, "1": 6, "2": 4}
    assert rules.next_high_watermark(2, leos, F("01"), F("012"), 2) == 4
    assert rules.next_high_watermark(7, leos, F("01"), F("012"), 2) == 7
    assert rules.next_high_watermark(2, {"0": 9}, F("01"), F("01"), 2) == 2  # 1 unknown: 0


def test_hwm_min_isr_requirement_uses_the_committed_isr():
    assert not rules.hwm_min_isr_requirement_met(1, 2, 2)
    assert rules.hwm_min_isr_requirement_met(1, 2, 2, bug_use_maximal_isr=True)
    assert rules.hwm_min_isr_requirement_met(2, 2, 2)


def test_acks_all_needs_the_hwm_past_the_record_and_min_isr():
    assert rules.acks_all_satisfied(3, 4, 2, 2)
    assert not rules.acks_all_satisfied(4, 4, 2, 2)
    assert not rules.acks_all_satisfied(3, 4, 1, 2)
    assert rules.acks_all_satisfied(3, 4, 1, 2, check_min_isr=False)


# --------------------------------------------------------------------------- election order

def test_election_order_isr_then_unfenced_elr():
    assert rules.clean_candidates(F("ab"), F(), F("bc"), True) == F("b")
    assert rules.clean_candidates(F(), F("cd"), F("d"), True) == F("d")
    assert rules.clean_candidates(F(), F("cd"), F(), True) == F()
    assert rules.clean_candidates(F(), F("cd"), F(), True, allow_fenced_elr=True) == F("cd")
    assert rules.clean_candidates(F(), F("cd"), F("cd"), False) == F()


def test_recovery_decision_steps_3_and_4():
    d = rules.recovery_decision
    # 3: only fenced ELR members
    assert d("Aggressive", True, True, F(), F("a"), F(), F()) == "UncleanRecovery"
    assert d("Balanced", True, True, F(), F("a"), F(), F()) == "WaitForElr"
    assert d("None", True, True, F(), F("a"), F(), F()) == "WaitForElr"
    # 4: no ELR members
    assert d("Aggressive", True, True, F(), F(), F(), F()) == "UncleanRecovery"
    assert d("Balanced", True, True, F(), F(), F("ab"), F("a")) == "WaitForLastKnownElr"
    assert d("Balanced", True, True, F(), F(), F("ab"), F("abc")) == "UncleanRecovery"
    # the planted bug balanced-fixed-replies does not wait for the LastKnownELR (spec
    # RecoveryDecision's bugFixedReplies)
    assert d("Balanced", True, True, F(), F(), F("ab"), F("a"), True) == "UncleanRecovery"
    assert d("None", True, True, F(), F(), F(), F("abc")) == "WaitForOperator"
    # without the unclean recovery manager ("Delivery plan")
    assert d("Aggressive", False, True, F(), F(), F(), F("a")) == "UncleanElection"
    assert d("Balanced", False, True, F(), F(), F(), F("a")) == "WaitForLastKnownLeader"
    # pre-KIP
    assert d("Balanced", True, False, F("a"), F(), F(), F()) == "WaitForIsr"
    assert d("Aggressive", True, False, F("a"), F(), F(), F()) == "UncleanElection"


def test_last_known_leader_is_elected_without_the_recovery_manager():
    assert rules.last_known_leader_candidates(F(), F(), "a", F("a"), "Balanced", False, True) == F("a")
    assert rules.last_known_leader_candidates(F(), F(), "a", F(), "Balanced", False, True) == F()
    assert rules.last_known_leader_candidates(F(), F(), "a", F("a"), "Balanced", True, True) == F()


# --------------------------------------------------------------------------- unclean recovery

def _r(b, be, last, cur, leo):
    return LogInfo(b, be, last, cur, leo)


def test_replies_are_fenced_by_broker_epoch_and_leader_epoch():
    r = _r("a", 3, 2, 5, 7)
    assert rules.reply_is_fresh(r, 3, 5)
    assert not rules.reply_is_fresh(r, 4, 5)      # the broker rebooted after replying
    assert not rules.reply_is_fresh(r, 3, 6)      # a stale response
    assert not rules.reply_is_fresh(r, None, 5)


def test_best_replier_highest_last_epoch_then_longest_log():
    replies = [_r("a", 1, 3, 5, 4), _r("b", 1, 4, 5, 2), _r("c", 1, 4, 5, 3)]
    assert rules.best_repliers(replies) == F("c")
    assert rules.best_repliers([_r("a", 1, 2, 5, 3), _r("b", 1, 2, 5, 3)]) == F("ab")


def test_balanced_rejected_alternative_fixed_number_of_replies():
    """KIP-966 'Rejected proposal for the unclean recovery': ISR [0,1,2]; 2 falls behind and
    is kicked out; 1 and 0 have unclean shutdowns (1 loses data), so LastKnownELR = {0, 1}.
    Brokers 2 and 1 come back first: electing among the first 2 replies loses data; Balanced
    waits for every LastKnownELR member."""
    lke, replied = F("01"), F("12")
    assert not rules.recovery_can_elect("Balanced", lke, replied)
    assert rules.recovery_can_elect("Balanced", lke, replied, fixed_replies=2)
    assert rules.recovery_can_elect("Balanced", lke, F("012"))
    replies = [_r("0", 2, 3, 3, 9), _r("1", 2, 3, 3, 6), _r("2", 1, 2, 3, 5)]
    assert rules.best_repliers(replies) == F("0")
    assert rules.best_repliers(replies[1:]) == F("1")           # what the bug would elect


def test_aggressive_elects_on_any_reply_and_timing_strengthens_the_guard():
    assert rules.recovery_can_elect("Aggressive", F("ab"), F("c"))
    assert not rules.recovery_can_elect("Aggressive", F(), F())
    assert rules.recovery_timing_allows(F("a"), F("ab"), timed_out=True)
    assert not rules.recovery_timing_allows(F("a"), F("ab"), timed_out=False)
    assert rules.recovery_timing_allows(F("ab"), F("ab"), timed_out=False)


# --------------------------------------------------------------------------- registration

def test_clean_shutdown_detection():
    assert rules.is_clean_shutdown(4, 4)
    assert not rules.is_clean_shutdown(3, 4)      # stale file
    assert not rules.is_clean_shutdown(-1, 4)     # no file / shut down before registering
    assert not rules.is_clean_shutdown(-1, None)


def test_last_epoch():
    from refimpl.elr.types import LogEntry
    assert rules.last_epoch(()) == 0
    assert rules.last_epoch((LogEntry(1, "x"), LogEntry(3, "y"))) == 3


def test_elect_outcome_is_the_spec_elect_outcome():
    """spec ElectOutcome: an ISR member keeps the ISR; an ELR member becomes the ISR and
    leaves the ELR (the rest of the ELR and the LastKnownELR stay, even when the new ISR meets
    min ISR: spec finding 1); anyone else is an unclean election that cleans both."""
    e = rules.elect_outcome
    assert e(F("ab"), F("c"), F("d"), "a") == rules.ElrUpdate(F("ab"), F("c"), F("d"))
    assert e(F(), F("bc"), F("d"), "b") == rules.ElrUpdate(F("b"), F("c"), F("d"))
    assert e(F("a"), F("b"), F("d"), "c") == rules.ElrUpdate(F("c"), F(), F())
