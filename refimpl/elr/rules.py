"""The rules KIP-966 states, as small pure functions mirroring spec/ELRRules.tla one to one.

Every node (controller.py, broker.py) decides through these functions only, so the reference
implementation and the spec share one reading of the KIP.  Each docstring cites the KIP section
and names the TLA+ operator (spec/ELRRules.tla, used by spec/ELR.tla) that it mirrors.
Offsets here are 0-based counts (an offset `o` is covered by HWM `h` when o < h); the spec's
logs are 1-based sequences, so spec offset i is refimpl offset i - 1 and both LEOs are lengths.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .types import AGGRESSIVE, BALANCED, NO_EPOCH, LogEntry

__all__ = [
    "effective_min_isr",
    "ElrUpdate",
    "elr_rule1_applies",
    "elr_after_rule2",
    "last_known_elr_after_rule2",
    "last_known_elr_literal_6a",
    "elr_update",
    "elr_after_min_isr_change",
    "hwm_min_isr_requirement_met",
    "next_high_watermark",
    "acks_all_satisfied",
    "clean_candidates",
    "elect_outcome",
    "last_known_leader_candidates",
    "recovery_decision",
    "LogInfo",
    "reply_is_fresh",
    "reply_better",
    "best_repliers",
    "recovery_can_elect",
    "recovery_timing_allows",
    "is_clean_shutdown",
    "last_epoch",
]


def effective_min_isr(min_isr: int, replication_factor: int) -> int:
    """KIP-966 "Additional High Watermark advancement requirement" (and "Compatibility ... High
    Watermark advance requirement"): the effective min.insync.replicas is
    min(min.insync.replicas, replication factor).  Spec: `EffectiveMinIsr`."""
    return min_isr if min_isr < replication_factor else replication_factor


# --------------------------------------------------------------------------- ELR update


@dataclass(frozen=True)
class ElrUpdate:
    """The record `[isr |-> ..., elr |-> ..., lastKnownElr |-> ...]` of spec `ElrUpdate`."""

    isr: frozenset[str]
    elr: frozenset[str]
    last_known_elr: frozenset[str]


def elr_rule1_applies(proposed_isr: frozenset[str], eff_min_isr: int) -> bool:
    """KIP-966 "Controller behaviors", ELR update 1: "When the proposed ISR is larger or equal
    to min ISR, the controller will update the ISR and empty the ELR."
    Spec: `ElrRule1Applies`."""
    return len(proposed_isr) >= eff_min_isr


def elr_after_rule2(isr: frozenset[str], elr: frozenset[str], proposed_isr: frozenset[str],
                    unclean: frozenset[str]) -> frozenset[str]:
    """KIP-966 "Controller behaviors", ELR update 2: "When the proposed ISR is smaller than min
    ISR, the controller will a. retain the current members of the ELR. b. add (the current ISR -
    the proposed ISR) to ELR. c. remove the duplicate member in both ISR and ELR from ELR."
    Minus the replicas detected as unclean ("Controller behaviors" 4: a broker registering after
    an unclean shutdown is removed from ISR and ELR).  Spec: `ElrAfterRule2`."""
    return ((frozenset(elr) | (frozenset(isr) - proposed_isr)) - proposed_isr) - unclean


def last_known_elr_after_rule2(isr: frozenset[str], elr: frozenset[str],
                               last_known_elr: frozenset[str], proposed_isr: frozenset[str],
                               new_elr: frozenset[str]) -> frozenset[str]:
    """KIP-966 "Other behaviors" 6a: "when an ELR member has an unclean shutdown, it will be
    removed from ELR and added to the LastKnownELR" -- every member of ISR / ELR /
    LastKnownELR that is neither in the new ISR nor in the new ELR.
    Spec: `LastKnownElrAfterRule2`."""
    return ((frozenset(last_known_elr) | elr | isr) - proposed_isr) - new_elr


def last_known_elr_literal_6a(elr: frozenset[str], last_known_elr: frozenset[str],
                              proposed_isr: frozenset[str],
                              new_elr: frozenset[str]) -> frozenset[str]:
    """KIP-966 "Other behaviors" 6a read literally: only ELR members that leave the ELR join
    the LastKnownELR.  NOT the rule the refimpl uses: an ISR member removed at an unclean
    registration is then remembered nowhere, and a Balanced recovery may wait for nobody and
    elect an empty replica (spec finding elr-finding-last-known-elr-literal, docs/spec-elr.md).
    `elr_update(..., last_known_elr_literal=True)` is the planted bug last-known-elr-literal.
    Spec: `LastKnownElrLiteral6a` (bug switch BugLastKnownElrLiteral)."""
    return ((frozenset(last_known_elr) | elr) - proposed_isr) - new_elr


def elr_update(isr: frozenset[str], elr: frozenset[str], last_known_elr: frozenset[str],
               proposed_isr: frozenset[str], eff_min_isr: int,
               unclean: frozenset[str] = frozenset(), elr_enabled: bool = True,
               clear_at_min_isr: bool = True,
               last_known_elr_literal: bool = False) -> ElrUpdate:
    """The ELR update of KIP-966 "Controller behaviors" ("ELR update will take a proposed ISR"):
    rule 1, else rules 2a-2c; the LastKnownELR is cleaned when the ISR reaches min ISR ("Other
    behaviors" 6a).  `elr_enabled=False` (eligible.leader.replicas.enabled=false) gives the
    pre-KIP behaviour: no ELR, and the ISR never becomes empty.
    `clear_at_min_isr=False` is the planted bug elr-not-cleared-at-min-isr (rule 1 skipped:
    rule 2 applies whatever the proposed ISR's size, spec skipRule = "1").
    `last_known_elr_literal=True` is the planted bug last-known-elr-literal (the LastKnownELR
    by `last_known_elr_literal_6a`, spec literal6a = BugLastKnownElrLiteral).
    Spec: `ElrUpdate(isr, elr, lastKnownElr, proposedIsr, effMinIsr, unclean, elrEnabled,
    skipRule, literal6a)`.
    """
    proposed_isr = frozenset(proposed_isr)
    if not elr_enabled:
        return ElrUpdate(frozenset(isr) if not proposed_isr else proposed_isr,
                         frozenset(), frozenset())
    if elr_rule1_applies(proposed_isr, eff_min_isr) and clear_at_min_isr:
        return ElrUpdate(proposed_isr, frozenset(), frozenset())                   # rule 1
    new_elr = elr_after_rule2(isr, elr, proposed_isr, unclean)                     # rule 2
    if last_known_elr_literal:
        return ElrUpdate(proposed_isr, new_elr,
                         last_known_elr_literal_6a(elr, last_known_elr, proposed_isr, new_elr))
    return ElrUpdate(proposed_isr, new_elr,
                     last_known_elr_after_rule2(isr, elr, last_known_elr, proposed_isr, new_elr))


def elr_after_min_isr_change(isr: frozenset[str], elr: frozenset[str],
                             last_known_elr: frozenset[str], new_eff_min_isr: int) -> ElrUpdate:
    """KIP-966 "Other behaviors" 2: "When updating the config min.insync.replicas, if the new min
    ISR <= current ISR, the ELR will be removed."  The ISR is unchanged.
    Spec: the ELR part of `AlterMinIsr`."""
    if new_eff_min_isr <= len(isr):
        return ElrUpdate(frozenset(isr), frozenset(), frozenset())
    return ElrUpdate(frozenset(isr), frozenset(elr), frozenset(last_known_elr))


# --------------------------------------------------------------------------- HWM and acks


def hwm_min_isr_requirement_met(committed_isr_size: int, maximal_isr_size: int,
                                eff_min_isr: int, bug_use_maximal_isr: bool = False) -> bool:
    """KIP-966 "Additional High Watermark advancement requirement": "High Watermark can only
    advance if the ISR size is larger or equal to min.insync.replicas", where "the ISR
    membership refers to the latest ISR membership persisted by the controller, not the
    maximal ISR".  `bug_use_maximal_isr` is the planted bug hwm-on-maximal-isr (the KIP's
    3-replica example: "Currently, we would advance HWM because it replicated to 2 brokers (the
    ones in Maximal ISR)").  Spec: `HwmMinIsrRequirementMet`."""
    if bug_use_maximal_isr:
        return maximal_isr_size >= eff_min_isr
    return committed_isr_size >= eff_min_isr


def next_high_watermark(hwm: int, log_end_offsets: Mapping[str, int],
                        committed_isr: frozenset[str], maximal_isr: frozenset[str],
                        eff_min_isr: int, bug_use_maximal_isr: bool = False) -> int:
    """The leader's HWM after an update: when the min ISR requirement is met
    (`hwm_min_isr_requirement_met`), the smallest log end offset over the maximal ISR ("If
    maximal ISR > ISR, the message should be replicated to the maximal ISR before covering the
    message under HWM"); it never moves backward.  A maximal-ISR member whose progress is
    unknown counts as 0.  Spec: `MinOf` over the maximal ISR in the leader's HWM action."""
    if not maximal_isr or not hwm_min_isr_requirement_met(
            len(committed_isr), len(maximal_isr), eff_min_isr, bug_use_maximal_isr):
        return hwm
    replicated = min(log_end_offsets.get(r, 0) for r in maximal_isr)
    return max(hwm, replicated)


def acks_all_satisfied(offset: int, hwm: int, committed_isr_size: int, eff_min_isr: int,
                       check_min_isr: bool = True) -> bool:
    """KIP-966 ("Ack=0/1/all produce request"): "For ack=all requests, the server should respond
    when the message is persisted in all the ISR members' local log and the size of the ISR
    member is larger than min ISR."  The record at 0-based `offset` is on every (maximal) ISR
    member once the HWM is past it.  `check_min_isr=False` is the planted bug
    ack-below-min-isr.  Spec: the guard of the acknowledgement of an acks=all record."""
    return hwm > offset and (not check_min_isr or committed_isr_size >= eff_min_isr)


# --------------------------------------------------------------------------- election


def clean_candidates(isr: frozenset[str], elr: frozenset[str], eligible: frozenset[str],
                     elr_enabled: bool, allow_fenced_elr: bool = False) -> frozenset[str]:
    """KIP-966 "Unclean recovery", election order 1-2: "If there are other ISR members, choose
    an ISR member.  If there are unfenced ELR members, choose an ELR member" -- an ELR member
    only when the ISR is empty ("Controller behaviors" 3).  `eligible` = the unfenced brokers.
    `allow_fenced_elr=True` is the planted bug leader-from-fenced-elr.
    Spec: `CleanCandidates`."""
    if isr & eligible:
        return frozenset(isr & eligible)                                          # order 1
    if elr_enabled and not isr:
        return frozenset(elr if allow_fenced_elr else elr & eligible)             # order 2
    return frozenset()


def elect_outcome(isr: frozenset[str], elr: frozenset[str], last_known_elr: frozenset[str],
                  leader: str) -> ElrUpdate:
    """The partition after electing `leader`: an ISR member keeps the ISR; an ELR member is
    "added to ISR, and removed from ELR" (KIP-966 "Controller behaviors" 3); anyone else is an
    unclean election: ISR = {leader}, the ELR and LastKnownELR are cleaned.  Spec:
    `ElectOutcome` (the LastKnownLeader is cleaned by every election, "Other behaviors" 7c)."""
    if leader in isr:
        return ElrUpdate(frozenset(isr), frozenset(elr), frozenset(last_known_elr))
    if leader in elr:
        return ElrUpdate(frozenset({leader}), frozenset(elr) - {leader},
                         frozenset(last_known_elr))
    return ElrUpdate(frozenset({leader}), frozenset(), frozenset())


def last_known_leader_candidates(isr: frozenset[str], elr: frozenset[str],
                                 last_known_leader: str, eligible: frozenset[str],
                                 strategy: str, manager_enabled: bool,
                                 elr_enabled: bool) -> frozenset[str]:
    """KIP-966 "Delivery plan" (unclean recovery manager disabled) with
    unclean.leader.election.enable=false (~ Balanced): "If there are no ELR members ... elect
    the LastKnownLeader once it is unfenced."  Spec: `LastKnownLeaderCandidates`."""
    if (elr_enabled and not manager_enabled and strategy == BALANCED and not isr and not elr
            and last_known_leader in eligible):
        return frozenset({last_known_leader})
    return frozenset()


def recovery_decision(strategy: str, manager_enabled: bool, elr_enabled: bool,
                      isr: frozenset[str], elr: frozenset[str], last_known_elr: frozenset[str],
                      eligible: frozenset[str], bug_fixed_replies: bool = False) -> str:
    """KIP-966 "Unclean recovery", election order 3-4, for a leaderless partition with no clean
    candidate: 3. fenced ELR members -> Aggressive: unclean recovery, else wait; 4. no ELR ->
    Aggressive: unclean recovery; Balanced: unclean recovery "when all the LastKnownELR are
    unfenced"; None: wait for the user.  Without the recovery manager ("Delivery plan")
    Aggressive is the pre-KIP random unclean election.  Returns "UncleanRecovery",
    "UncleanElection", "WaitForElr", "WaitForLastKnownElr", "WaitForLastKnownLeader",
    "WaitForIsr" or "WaitForOperator".  `bug_fixed_replies` is the planted bug
    balanced-fixed-replies (the KIP's rejected alternative: Balanced does not wait for the
    LastKnownELR members to be unfenced; recovery_can_elect's `fixed_replies` is its other
    half).  Spec: `RecoveryDecision`."""
    aggressive = ("UncleanRecovery" if manager_enabled else "UncleanElection")
    if not elr_enabled:
        return "UncleanElection" if strategy == AGGRESSIVE else "WaitForIsr"
    if isr:
        return aggressive if strategy == AGGRESSIVE else "WaitForIsr"
    if elr:                                                                        # 3
        return aggressive if strategy == AGGRESSIVE else "WaitForElr"
    if strategy == AGGRESSIVE:                                                     # 4a
        return aggressive
    if strategy == BALANCED:                                                       # 4b
        if not manager_enabled:
            return "WaitForLastKnownLeader"
        return ("UncleanRecovery" if bug_fixed_replies or last_known_elr <= eligible
                else "WaitForLastKnownElr")
    return "WaitForOperator"                                                       # 4c


# --------------------------------------------------------------------------- unclean recovery


@dataclass(frozen=True, order=True)
class LogInfo:
    """One GetReplicaLogInfo reply (KIP-966 "GetReplicaLogInfo Response"): the spec's reply
    record [brokerEpoch, leaderEpoch, lastEpoch, leo] plus the replier."""

    broker_id: str
    broker_epoch: int
    last_written_leader_epoch: int
    current_leader_epoch: int
    log_end_offset: int


def reply_is_fresh(reply: LogInfo, current_broker_epoch: int | None,
                   current_leader_epoch: int) -> bool:
    """KIP-966 "Unclean recovery": the replica returns its broker epoch ("This can avoid
    electing a broker that has rebooted after it made the response") and "The current partition
    leader epoch in the replica's metadata cache. This is to fence stale GetReplicaLogInfo
    responses."  Spec: `ReplyIsFresh`."""
    return (current_broker_epoch is not None and reply.broker_epoch == current_broker_epoch
            and reply.current_leader_epoch == current_leader_epoch)


def reply_better(r1: LogInfo, r2: LogInfo) -> bool:
    """KIP-966 "Unclean recovery": "The one with the highest leader epoch plus the longest log
    end offset will be the new leader."  Spec: `ReplyBetter` (bugIgnoreEpoch = FALSE)."""
    return (r1.last_written_leader_epoch > r2.last_written_leader_epoch or
            (r1.last_written_leader_epoch == r2.last_written_leader_epoch
             and r1.log_end_offset > r2.log_end_offset))


def best_repliers(replies: Iterable[LogInfo]) -> frozenset[str]:
    """The repliers no other reply beats.  Spec: `BestRepliers`."""
    rs = tuple(replies)
    return frozenset(b.broker_id for b in rs if not any(reply_better(c, b) for c in rs))


def recovery_can_elect(strategy: str, last_known_elr: frozenset[str],
                       repliers: frozenset[str], fixed_replies: int | None = None) -> bool:
    """KIP-966 "Unclean recovery", "The controller can start an election when": Balanced --
    "all the LastKnownELR members have replied"; Aggressive -- "any replicas replied".
    `fixed_replies=k` is the planted bug balanced-fixed-replies, the KIP's rejected proposal
    "The controller elects the leader when a given number of replicas have replied".
    Spec: `RecoveryCanElect`."""
    if not repliers:
        return False
    if strategy != BALANCED:
        return True
    if fixed_replies is not None:
        return len(repliers) >= fixed_replies
    return last_known_elr <= repliers


def recovery_timing_allows(repliers: frozenset[str], unfenced_replicas: frozenset[str],
                           timed_out: bool) -> bool:
    """The time part the spec abstracts away: "plus the replicas replied within the timeout"
    (Balanced) / "any replicas replied within a fixed amount of time OR the first response
    received after the timeout" (Aggressive): elect once every unfenced replica replied or
    unclean.recovery.timeout.ms passed.  It only strengthens `recovery_can_elect`, so every
    refimpl election is one the spec allows."""
    return timed_out or unfenced_replicas <= repliers


# --------------------------------------------------------------------------- registration


def is_clean_shutdown(previous_broker_epoch: int, registered_epoch: int | None) -> bool:
    """KIP-966 "Detection of an unclean shutdown" 3-4: "The controller will verify the broker
    epoch in the request with its registration record. If it is the same, it is a clean
    shutdown"; -1 ("if the broker shuts down before it receives the broker epoch") or no
    CleanShutdownFile means unclean.  Spec: the clean-shutdown test of the registration
    action in spec/ELR.tla."""
    return previous_broker_epoch != NO_EPOCH and previous_broker_epoch == registered_epoch


def last_epoch(log: tuple[LogEntry, ...]) -> int:
    """The last written leader epoch (GetReplicaLogInfo "LastWrittenLeaderEpoch"); 0 for an
    empty log.  Spec: `LastEpoch`."""
    return log[-1].epoch if log else 0
