"""Online invariants of KIP-966, checked after every simulator step.

The names are spec/ELR.tla's INVARIANTS and action PROPERTIES; the refimpl evaluates each on its
own state (what the controller, the brokers and the client hold), so several are stronger than
the spec's abstract versions (see docs/refimpl-elr.md):

* ElrIsrDisjoint, NonEmptyElrImpliesIsrBelowMinIsr, LeaderInIsr, LeaderUnfenced, FencedNotInIsr,
  IsrNonEmptyWithoutElr, LastKnownElrDisjoint: the controller's partition state (KIP-966 "ELR
  invariants", "ISR invariants").
* IsrPlusElrAtLeastMinIsr (a spec action property): a step may leave ISR+ELR below min ISR only
  by an unclean registration, an unclean election / recovery or a min ISR change.
* ElrMembersHaveDataToHwm, NoAckedRecordLost, HighWatermarkMonotonic: data, within the KIP's
  fault model ("MinISR-1 tolerance to data loss unclean shutdown events", spec
  `WithinTolerance`) and, for the Aggressive strategy, before the first unclean recovery.  A
  replica's data is judged only when the controller knows its current incarnation (up and
  registered with the epoch the controller holds).
* PendingIsrHasLeader, HwmWithinLeaderLog, LogMatching: the brokers' view.
* ReplicationQuorumSuperset (issue 14, Vanlightly's KIP-966 spec): the replicas the
  leader of the current leader epoch waits for before advancing the HWM (its maximal ISR,
  from its own, possibly lagging, view) include every member of the controller's ISR: a
  replica the controller may elect cleanly is never left behind by the HWM.
* CommittedLogOnElectableReplica: within the tolerance some member of ISR / ELR /
  LastKnownELR (running or not: a crashed broker's last log, spec A4) holds the committed log.
* Refimpl-only: AckedRecordsOnMinIsr (an acks=all record was on at least min ISR replicas when
  acknowledged), ReplicaHwmMonotonic (a broker's own HWM never goes back within an
  incarnation), RecoveryElectsMostCompleteLastKnownElr (a Balanced unclean recovery elects a
  replica at least as complete as every LastKnownELR member).
"""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.sim.protocol import Monitor, Violation, World

from .broker import Broker, BrokerState
from .client import ClientState
from .controller import ControllerState
from .rules import effective_min_isr
from .spec_mapping import still_missing
from .types import AGGRESSIVE, BALANCED, NO_LEADER, ElrConfig, LogEntry

__all__ = ["Snapshot", "ElrMonitor", "INVARIANTS", "tolerated_data_loss_shutdowns"]

INVARIANTS = (
    "ElrIsrDisjoint",
    "ElrMembersHaveDataToHwm",
    "NonEmptyElrImpliesIsrBelowMinIsr",
    "NoAckedRecordLost",
    "LeaderInIsr",
    "LeaderUnfenced",
    "FencedNotInIsr",
    "IsrNonEmptyWithoutElr",
    "LastKnownElrDisjoint",
    "PendingIsrHasLeader",
    "HwmWithinLeaderLog",
    "LogMatching",
    "IsrPlusElrAtLeastMinIsr",
    "HighWatermarkMonotonic",
    "AckedRecordsOnMinIsr",
    "ReplicaHwmMonotonic",
    "RecoveryElectsMostCompleteLastKnownElr",
    "CommittedLogOnElectableReplica",
    "ReplicationQuorumSuperset",
)


def tolerated_data_loss_shutdowns(config: ElrConfig) -> int:
    """Spec `ToleratedDataLossShutdowns`: the smallest effective min ISR the topic can have,
    minus one."""
    values = set(config.min_isr_choices) | {config.min_isr}
    return min(effective_min_isr(m, config.replication_factor) for m in values) - 1


@dataclass
class Snapshot:
    """The parts of a World the invariants read."""

    config: ElrConfig
    controller: ControllerState
    brokers: dict[str, BrokerState]
    up: dict[str, bool]
    client: ClientState
    brokers_missing_committed: int   # spec |BrokersMissingCommittedData|

    @classmethod
    def of(cls, config: ElrConfig, world: World) -> "Snapshot":
        # spec BrokersMissingCommittedData: committed records lost in an unclean restart and
        # not fetched back (spec_mapping.still_missing)
        n = sum(1 for b in config.brokers if still_missing(
            world.disks.get(b, {}).get("ghost_lost_committed", frozenset()),
            world.states[b].log.entries))
        return cls(config, world.states[config.controller],
                   {b: world.states[b] for b in config.brokers}, dict(world.up),
                   world.states[config.producer], n)

    def known(self, b: str) -> bool:
        """The controller knows b's current incarnation: up and registered with its epoch."""
        s = self.brokers[b]
        reg = self.controller.registration(b)
        return (self.up.get(b, False) and s.registered and reg is not None
                and reg.broker_epoch == s.broker_epoch)

    def acting_leader(self) -> BrokerState | None:
        """The controller's leader, if it is up and acts as the leader of the current epoch."""
        p = self.controller.partition
        if p.leader == NO_LEADER or not self.up.get(p.leader, False):
            return None
        s = self.brokers[p.leader]
        if s.is_leader and s.metadata.leader_epoch == p.leader_epoch and self.known(p.leader):
            return s
        return None


def _log_matching_violation(l1: tuple, l2: tuple) -> int | None:
    """An offset where both logs hold the same record although they differ before it (spec
    `LogMatching`), or None."""
    n = min(len(l1), len(l2))
    if l1[:n] == l2[:n]:
        return None
    lo, hi = 0, n              # the common prefix length, by bisection on slices
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if l1[:mid] == l2[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return next((k for k in range(lo + 1, n) if l1[k] == l2[k]), None)


def _has(log: tuple[LogEntry, ...], offset: int, entry: LogEntry) -> bool:
    return offset < len(log) and log[offset] == entry


class ElrMonitor(Monitor):
    """The online checker.  Its ghosts are the spec's: the consumer-visible log (`committed`:
    the records below the highest HWM a leader exposed, spec `committedLog`), each broker
    incarnation's HWM, and the previous step's controller and broker states (for the action
    properties)."""

    names = INVARIANTS

    def __init__(self, config: ElrConfig):
        self.config = config
        self.broker = Broker(config)
        self.tolerated = tolerated_data_loss_shutdowns(config)
        self.committed: tuple[LogEntry, ...] = ()
        self.hwms: dict[tuple[str, int], int] = {}
        self.prev: ControllerState | None = None
        self.prev_brokers: dict[str, BrokerState] = {}
        self._matched: dict[tuple[str, str], tuple] = {}
        self._acked_ok: dict[str, tuple] = {}
        self._acks_checked = 0

    def within_tolerance(self, snap: Snapshot) -> bool:
        """Spec `WithinTolerance` (|BrokersMissingCommittedData| <= ToleratedDataLossShutdowns:
        the brokers that lost committed records in an unclean restart and have not fetched them
        back); with the
        Aggressive strategy also no unclean recovery yet (Aggressive trades durability for
        availability: KIP-966 "Unclean recovery")."""
        if snap.brokers_missing_committed > self.tolerated:
            return False
        return not (self.config.strategy == AGGRESSIVE and snap.controller.unclean_elections)

    def check(self, world: World, action: str, node: str | None) -> list[Violation]:
        snap = Snapshot.of(self.config, world)
        out: list[Violation] = []

        def bad(name: str, detail: str) -> None:
            out.append(Violation(name, detail))

        self._controller(snap, bad)
        self._brokers(snap, bad)
        self._data(snap, bad)
        self._recovery(snap, bad)
        self.prev = snap.controller
        self.prev_brokers = dict(snap.brokers)
        return out

    # ---- the controller's partition state (KIP-966 "ELR invariants") --------------------
    def _controller(self, snap: Snapshot, bad) -> None:
        c = snap.controller
        p = c.partition
        eff = c.eff_min_isr
        if p.elr & p.isr:
            bad("ElrIsrDisjoint", f"ISR {sorted(p.isr)} and ELR {sorted(p.elr)} share members")
        if p.elr and len(p.isr) >= eff:
            bad("NonEmptyElrImpliesIsrBelowMinIsr",
                f"ELR {sorted(p.elr)} non-empty while ISR {sorted(p.isr)} >= min ISR {eff}")
        if p.last_known_elr & (p.isr | p.elr):
            bad("LastKnownElrDisjoint", f"LastKnownELR {sorted(p.last_known_elr)} meets "
                f"ISR {sorted(p.isr)} / ELR {sorted(p.elr)}")
        if p.leader != NO_LEADER:
            if p.leader not in p.isr:
                bad("LeaderInIsr", f"leader {p.leader} not in ISR {sorted(p.isr)}")
            reg = c.registration(p.leader)
            if reg is None or reg.fenced:
                bad("LeaderUnfenced", f"leader {p.leader} is fenced")
        if self.config.elr_enabled:
            fenced_in_isr = sorted(b for b in p.isr if (c.registration(b) is None or
                                                        c.registration(b).fenced))
            if fenced_in_isr:
                bad("FencedNotInIsr", f"fenced {fenced_in_isr} in ISR {sorted(p.isr)}")
        if not self.config.elr_enabled and not p.isr:
            bad("IsrNonEmptyWithoutElr", "the ISR became empty with ELR disabled")
        prev = self.prev
        if self.config.elr_enabled and prev is not None:
            before = prev.partition.isr | prev.partition.elr
            after = p.isr | p.elr
            re_registered = {r.broker_id for r in c.registrations
                             if prev.registration(r.broker_id) is None or
                             prev.registration(r.broker_id).broker_epoch != r.broker_epoch}
            unclean_election = p.leader != NO_LEADER and p.leader not in before
            if not (len(after) >= eff or (before - after) <= re_registered or unclean_election):
                bad("IsrPlusElrAtLeastMinIsr",
                    f"ISR+ELR {sorted(before)} -> {sorted(after)} below min ISR {eff} without "
                    f"an unclean registration")

    # ---- the brokers' view --------------------------------------------------------------
    def _brokers(self, snap: Snapshot, bad) -> None:
        tolerant = self.within_tolerance(snap)
        for b, s in snap.brokers.items():
            if s.hwm > s.log.end_offset:
                bad("HwmWithinLeaderLog", f"{b}: HWM {s.hwm} > LEO {s.log.end_offset}")
            if s.is_leader and snap.up.get(b) and s.pending_isr is not None and \
                    b not in s.pending_isr:
                bad("PendingIsrHasLeader", f"{b} proposed ISR {sorted(s.pending_isr)} without itself")
            if snap.up.get(b):
                key = (b, s.incarnation)
                if tolerant and s.hwm < self.hwms.get(key, 0):
                    bad("ReplicaHwmMonotonic", f"{b}: HWM went back from {self.hwms[key]} to {s.hwm}")
                self.hwms[key] = max(self.hwms.get(key, 0), s.hwm)
        logs = [(b, s.log.entries) for b, s in sorted(snap.brokers.items())]
        for i, (b1, l1) in enumerate(logs):
            for b2, l2 in logs[i + 1:]:
                seen = self._matched.get((b1, b2))
                if seen is not None and seen[0] is l1 and seen[1] is l2:
                    continue                      # both logs unchanged since the last check
                self._matched[(b1, b2)] = (l1, l2)
                k = _log_matching_violation(l1, l2)
                if k is not None:
                    bad("LogMatching", f"{b1} and {b2} hold the same record at offset {k} "
                        f"but different logs before it")
        acked = snap.client.acked_all()
        for a in acked[self._acks_checked:]:
            if a.replicas_with_record < a.min_isr:
                bad("AckedRecordsOnMinIsr",
                    f"acks=all record {a.entry} at {a.offset} acked with {a.replicas_with_record}"
                    f" replicas < min ISR {a.min_isr}")
        self._acks_checked = len(acked)

    # ---- data, within the fault model ---------------------------------------------------
    def _data(self, snap: Snapshot, bad) -> None:
        p = snap.controller.partition
        leader = snap.acting_leader()
        if leader is not None:
            waits_for = self.broker.hwm_isr(leader)
            if not p.isr <= waits_for:
                bad("ReplicationQuorumSuperset",
                    f"leader {leader.broker_id} advances the HWM over {sorted(waits_for)} but "
                    f"the controller's ISR is {sorted(p.isr)}")
        tolerant = self.within_tolerance(snap)
        if leader is not None:
            visible = leader.log.entries[: leader.hwm]
            k = len(self.committed)
            if not tolerant:
                self.committed = visible
            elif leader.log.entries[:k] != self.committed:
                # The consumer-visible HWM moved backward: the leader lost records below it.
                bad("HighWatermarkMonotonic",
                    f"leader {leader.broker_id} holds {leader.log.entries} but consumers saw "
                    f"{self.committed} below the HWM")
            elif len(visible) > k:
                self.committed = visible
        if not tolerant:
            return
        holders = ({leader.broker_id} if leader else set()) | \
            {b for b in p.isr | p.elr if snap.known(b)}
        acked = snap.client.acked_all()
        for b in sorted(holders):
            log = snap.brokers[b].log.entries
            start = 0
            cached = self._acked_ok.get(b)
            if cached is not None:
                old_log, n_ok = cached
                if len(old_log) <= len(log) and log[: len(old_log)] == old_log and \
                        n_ok <= len(acked):
                    start = n_ok               # the log only grew: check the new acks only
            missing = next((a for a in acked[start:] if not _has(log, a.offset, a.entry)), None)
            if missing is not None:
                where = "leader" if leader and b == leader.broker_id else \
                    "ISR" if b in p.isr else "ELR"
                bad("NoAckedRecordLost",
                    f"{b} ({where}) lacks acked {missing.entry} at offset {missing.offset}")
                self._acked_ok.pop(b, None)
            else:
                self._acked_ok[b] = (log, len(acked))
        for b in sorted(p.elr):
            if snap.known(b):
                log = snap.brokers[b].log.entries
                if log[: len(self.committed)] != self.committed:
                    bad("ElrMembersHaveDataToHwm",
                        f"ELR member {b} log {log} lacks the records below the HWM "
                        f"{self.committed}")
        n = len(self.committed)
        electable = p.isr | p.elr | p.last_known_elr
        if self.config.elr_enabled and n and not any(
                snap.brokers[b].log.entries[:n] == self.committed for b in electable):
            bad("CommittedLogOnElectableReplica",
                f"no member of ISR/ELR/LastKnownELR {sorted(electable)} holds the committed "
                f"log {self.committed}")

    # ---- unclean recovery ---------------------------------------------------------------
    def _recovery(self, snap: Snapshot, bad) -> None:
        c = snap.controller
        p = c.partition
        if self.prev is None or self.config.strategy != BALANCED or \
                c.unclean_elections <= self.prev.unclean_elections or p.leader == NO_LEADER:
            return
        new = snap.brokers[p.leader]
        for b in sorted(self.prev.partition.last_known_elr):
            s = self.prev_brokers.get(b)
            if s is not None and snap.up.get(b) and \
                    (s.log.last_epoch, s.log.end_offset) > (new.log.last_epoch, new.log.end_offset):
                bad("RecoveryElectsMostCompleteLastKnownElr",
                    f"recovery elected {p.leader} (epoch {new.log.last_epoch}, LEO "
                    f"{new.log.end_offset}) over LastKnownELR member {b} (epoch "
                    f"{s.log.last_epoch}, LEO {s.log.end_offset})")
