"""The rules KIP-966 states and spec/ELR.tla mirrors, as small pure functions.

Every node (controller.py, broker.py) decides through these functions only, so the reference
implementation and the spec share one reading of the KIP.  Each docstring cites the KIP section
and names the TLA+ operator of spec/ELR.tla that mirrors it (see docs/refimpl-elr.md for the
full correspondence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .types import AGGRESSIVE, BALANCED, NO_EPOCH, NO_LEADER, LogEntry

__all__ = [
    "effective_min_isr",
    "ElrUpdate",
    "update_elr",
    "update_elr_pre_kip",
    "remove_unclean_broker",
    "elr_after_min_isr_change",
    "hwm_may_advance",
    "next_high_watermark",
    "acks_all_satisfied",
    "Election",
    "elect_leader",
    "LogInfo",
    "reply_is_current",
    "recovery_may_elect",
    "choose_recovery_leader",
    "is_clean_shutdown",
    "last_epoch",
]


def effective_min_isr(min_isr: int, replication_factor: int) -> int:
    """KIP-966 "Additional High Watermark advancement requirement" (and "Compatibility ... High
    Watermark advance requirement"): the effective min.insync.replicas is
    min(min.insync.replicas, replication factor).  Spec: `EffMinIsr`."""
    return min(min_isr, replication_factor)


# --------------------------------------------------------------------------- ELR update


@dataclass(frozen=True)
class ElrUpdate:
    isr: frozenset[str]
    elr: frozenset[str]
    last_known_elr: frozenset[str]


def update_elr(isr: frozenset[str], elr: frozenset[str], last_known_elr: frozenset[str],
               proposed_isr: frozenset[str], min_isr: int,
               clear_at_min_isr: bool = True) -> ElrUpdate:
    """KIP-966 "Controller behaviors", the ELR update that takes a proposed ISR:

    1. When the proposed ISR is larger or equal to min ISR, update the ISR and empty the ELR
       (and, "Other behaviors" 6a, the LastKnownELR is cleaned when ISR reaches the min ISR).
    2. When the proposed ISR is smaller than min ISR:
       a. retain the current members of the ELR;
       b. add (the current ISR - the proposed ISR) to ELR;
       c. remove the duplicate member in both ISR and ELR from ELR.

    `min_isr` is the effective min ISR.  `clear_at_min_isr=False` is the planted bug
    elr-not-cleared-at-min-isr (rule 1 skipped: rule 2 applied at every size).
    Spec: `ElrUpdateRule1` / `ElrUpdateRule2` combined in `UpdateElr(isr, elr, proposed)`.
    """
    if len(proposed_isr) >= min_isr and clear_at_min_isr:
        return ElrUpdate(frozenset(proposed_isr), frozenset(), frozenset())       # rule 1
    retained = frozenset(elr)                                                     # rule 2a
    added = frozenset(isr) - frozenset(proposed_isr)                              # rule 2b
    new_elr = (retained | added) - frozenset(proposed_isr)                        # rule 2c
    new_lke = frozenset() if len(proposed_isr) >= min_isr else frozenset(last_known_elr)
    return ElrUpdate(frozenset(proposed_isr), new_elr, new_lke - new_elr)


def update_elr_pre_kip(isr: frozenset[str], proposed_isr: frozenset[str]) -> ElrUpdate:
    """ELR switched off (eligible.leader.replicas.enabled=false, KIP-966 "Config changes" 1):
    no ELR is recorded and the ISR cannot be empty ("ISR invariants": the ISR *can* be empty only
    with ELR), so the last member stays in the ISR -- the pre-KIP "last replica standing"
    behaviour of the Motivation.  Spec: the `ElrEnabled = FALSE` branch of `UpdateElr`."""
    if not proposed_isr:
        return ElrUpdate(frozenset(isr), frozenset(), frozenset())
    return ElrUpdate(frozenset(proposed_isr), frozenset(), frozenset())


def remove_unclean_broker(isr: frozenset[str], elr: frozenset[str],
                          last_known_elr: frozenset[str], broker: str, min_isr: int,
                          keep_in_elr: bool = False) -> ElrUpdate:
    """KIP-966 "Controller behaviors" 4: "During the broker registration, if the broker had an
    unclean shutdown, the controller will remove the broker from ISR and ELR before persisting
    the registration record"; "Other behaviors" 6a: the ELR member removed this way is added to
    the LastKnownELR.  The broker is not moved from the ISR into the ELR (rule 2b does not
    apply: it may have lost data below the HWM).  "Other behaviors" 1: no leader epoch bump.

    `keep_in_elr=True` is the planted bug unclean-broker-kept-in-elr.
    Spec: `RemoveUncleanBroker(b)`, used by `HandleBrokerRegistration`.
    """
    if keep_in_elr:
        return update_elr(isr, elr, last_known_elr, frozenset(isr) - {broker}, min_isr)
    was_elr = broker in elr
    proposed = frozenset(isr) - {broker}
    upd = update_elr(proposed, frozenset(elr) - {broker}, last_known_elr, proposed, min_isr)
    lke = upd.last_known_elr | ({broker} if was_elr and len(proposed) < min_isr else frozenset())
    return ElrUpdate(upd.isr, upd.elr, lke)


def elr_after_min_isr_change(isr: frozenset[str], elr: frozenset[str],
                             last_known_elr: frozenset[str], new_min_isr: int) -> ElrUpdate:
    """KIP-966 "Other behaviors" 2: "When updating the config min.insync.replicas, if the new min
    ISR <= current ISR, the ELR will be removed."  (The ISR itself is unchanged.)
    `new_min_isr` is the new effective min ISR.  Spec: `AlterMinIsr`."""
    if new_min_isr <= len(isr):
        return ElrUpdate(frozenset(isr), frozenset(), frozenset())
    return ElrUpdate(frozenset(isr), frozenset(elr), frozenset(last_known_elr))


# --------------------------------------------------------------------------- HWM and acks


def hwm_may_advance(committed_isr_size: int, min_isr: int) -> bool:
    """KIP-966 "Additional High Watermark advancement requirement": "High Watermark can only
    advance if the ISR size is larger or equal to min.insync.replicas", where "the ISR
    membership refers to the latest ISR membership persisted by the controller, not the
    maximal ISR".  `min_isr` is the effective min ISR.  Spec: `HwmMayAdvance`."""
    return committed_isr_size >= min_isr


def next_high_watermark(hwm: int, log_end_offsets: Mapping[str, int],
                        committed_isr: frozenset[str], maximal_isr: frozenset[str],
                        min_isr: int, use_maximal_isr_size: bool = False) -> int:
    """The leader's HWM after an update (KIP-966 "Additional High Watermark advancement
    requirement"): it advances only when the committed ISR has at least min ISR members, and
    only to an offset every member of the maximal ISR has ("If maximal ISR > ISR, the message
    should be replicated to the maximal ISR before covering the message under HWM").  It never
    moves backward.  `log_end_offsets` must hold every maximal-ISR member (a missing member
    counts as 0).  `use_maximal_isr_size=True` is the planted bug hwm-on-maximal-isr (the size
    check counts the maximal ISR, as before the KIP).  Spec: `AdvanceHighWatermark`.
    """
    size = len(maximal_isr) if use_maximal_isr_size else len(committed_isr)
    if not hwm_may_advance(size, min_isr) or not maximal_isr:
        return hwm
    replicated = min(log_end_offsets.get(r, 0) for r in maximal_isr)
    return max(hwm, replicated)


def acks_all_satisfied(offset: int, hwm: int, committed_isr_size: int, min_isr: int,
                       check_min_isr: bool = True) -> bool:
    """KIP-966 "Additional High Watermark advancement requirement", acks: "For ack=all requests,
    the server should respond when the message is persisted in all the ISR members' local log
    and the size of the ISR member is larger than min ISR".  The record at `offset` (0-based) is
    on every (maximal) ISR member once the HWM is past it.  `check_min_isr=False` is the
    planted bug ack-below-min-isr.  Spec: the guard of `AckRecord`."""
    on_all = hwm > offset
    return on_all and (not check_min_isr or committed_isr_size >= min_isr)


# --------------------------------------------------------------------------- election


@dataclass(frozen=True)
class Election:
    """The election decision: `kind` is "isr" / "elr" (clean elections of `leader`),
    "unclean" (a pre-KIP random unclean election of `leader`), "recovery" (start an unclean
    recovery), or "wait"."""

    kind: str
    leader: str = NO_LEADER


def elect_leader(replicas: tuple[str, ...], isr: frozenset[str], elr: frozenset[str],
                 last_known_elr: frozenset[str], unfenced: frozenset[str], strategy: str,
                 elr_enabled: bool = True, allow_fenced_elr: bool = False) -> Election:
    """KIP-966 "Unclean recovery": "the leader election decision will be made in the following
    order":

    1. If there are other ISR members, choose an ISR member.
    2. If there are unfenced ELR members, choose an ELR member.
    3. If there are fenced ELR members: Aggressive -> an unclean recovery; otherwise wait for
       the fenced ELR members to be unfenced.
    4. If there are no ELR members: Aggressive -> unclean recovery; Balanced -> unclean recovery
       when all the LastKnownELR are unfenced; None -> no election, wait for the user.

    Ties are broken by the replica order (the preferred-replica order).  With ELR off (pre-KIP)
    only unfenced ISR members are eligible, and Aggressive means unclean.leader.election.enable
    =true: a replica chosen among the unfenced ones ("Delivery plan").
    `allow_fenced_elr=True` is the planted bug leader-from-fenced-elr.
    Spec: `ElectionOrder` (used by `ElectLeader`).
    """
    def first(cands: Iterable[str]) -> str:
        s = frozenset(cands)
        return next(r for r in replicas if r in s)

    live_isr = isr & unfenced
    if live_isr:
        return Election("isr", first(live_isr))                                   # 1
    if not elr_enabled:
        live = frozenset(replicas) & unfenced
        if strategy == AGGRESSIVE and live:
            return Election("unclean", first(live))
        return Election("wait")
    eligible_elr = elr if allow_fenced_elr else elr & unfenced
    if eligible_elr:
        return Election("elr", first(eligible_elr))                               # 2
    if elr:                                                                       # 3
        return Election("recovery") if strategy == AGGRESSIVE else Election("wait")
    if strategy == AGGRESSIVE:                                                    # 4a
        return Election("recovery")
    if strategy == BALANCED:                                                      # 4b
        return Election("recovery") if last_known_elr <= unfenced else Election("wait")
    return Election("wait")                                                       # 4c


# --------------------------------------------------------------------------- unclean recovery


@dataclass(frozen=True, order=True)
class LogInfo:
    """One GetReplicaLogInfo response partition entry (KIP-966 "GetReplicaLogInfo Response")."""

    broker_id: str
    broker_epoch: int
    last_written_leader_epoch: int
    current_leader_epoch: int
    log_end_offset: int


def reply_is_current(reply: LogInfo, registered_epoch: int | None, fenced: bool,
                     partition_leader_epoch: int) -> bool:
    """KIP-966 "Unclean recovery": the replica returns its broker epoch ("This can avoid
    electing a broker that has rebooted after it made the response") and its current partition
    leader epoch ("This is to fence stale GetReplicaLogInfo responses").  A reply counts only if
    both match the controller's current view and the broker is unfenced.
    Spec: the guard of `HandleGetReplicaLogInfoResponse`."""
    return (registered_epoch is not None and reply.broker_epoch == registered_epoch
            and not fenced and reply.current_leader_epoch == partition_leader_epoch)


def recovery_may_elect(strategy: str, replied: frozenset[str], last_known_elr: frozenset[str],
                       unfenced_replicas: frozenset[str], timed_out: bool,
                       fixed_replies: int | None = None) -> bool:
    """KIP-966 "Unclean recovery", "The controller can start an election when":

    * Balanced: "all the LastKnownELR members have replied, plus the replicas replied within the
      timeout" -- here: every LastKnownELR member replied, and either the timeout passed or
      every unfenced replica replied;
    * Aggressive: "any replicas replied within a fixed amount of time OR the first response
      received after the timeout".

    `fixed_replies=k` is the planted bug balanced-fixed-replies: Balanced elects as soon as k
    replicas replied, the KIP's "Rejected proposal for the unclean recovery" ("The controller
    elects the leader when a given number of replicas have replied").
    Spec: the guard of `UncleanRecoveryElect`.
    """
    if not replied:
        return False
    if strategy == BALANCED:
        if fixed_replies is not None:
            return len(replied) >= fixed_replies
        return last_known_elr <= replied and (timed_out or unfenced_replicas <= replied)
    return timed_out or unfenced_replicas <= replied


def choose_recovery_leader(replicas: tuple[str, ...], replies: Iterable[LogInfo]) -> str:
    """KIP-966 "Unclean recovery": "The one with the highest leader epoch plus the longest log
    end offset will be the new leader" -- highest last written leader epoch first, then the
    longest log; ties go to the earlier replica.  Spec: `RecoveryLeader`."""
    order = {r: i for i, r in enumerate(replicas)}
    best = max(replies, key=lambda x: (x.last_written_leader_epoch, x.log_end_offset,
                                       -order[x.broker_id]))
    return best.broker_id


# --------------------------------------------------------------------------- registration


def is_clean_shutdown(previous_broker_epoch: int, registered_epoch: int | None) -> bool:
    """KIP-966 "Detection of an unclean shutdown" 3-4: the controller compares the broker epoch
    from the CleanShutdownFile (sent as PreviousBrokerEpoch) with its registration record; the
    same epoch means a clean shutdown; -1 (no file, or shut down before it got an epoch) or a
    mismatch means unclean.  Spec: `CleanShutdown(b, prevEpoch)`."""
    return previous_broker_epoch != NO_EPOCH and previous_broker_epoch == registered_epoch


def last_epoch(log: tuple[LogEntry, ...]) -> int:
    """The last written leader epoch of a log (0 for an empty log) -- GetReplicaLogInfo's
    LastWrittenLeaderEpoch.  Spec: `LastEpoch(log)`."""
    return log[-1].epoch if log else 0

