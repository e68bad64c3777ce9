"""The KRaft controller's side of KIP-966, as a pure state machine.

`(ControllerState, input, now_ms) -> Transition | None`: the new state, the messages to send,
the metadata records to persist (the committed metadata log, one `Persist("metadata", ...)`) and
the timers.  The controller owns the partition state (ISR, ELR, LastKnownELR, LastKnownLeader,
leader, leader epoch, partition epoch) and the broker registrations; it elects leaders and runs
the unclean recovery (KIP-966 "Controller behaviors", "Unclean recovery").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from refimpl.bugs import bug_enabled
from refimpl.sim.protocol import Envelope, Persist, SetTimer, Transition

from . import bug_names as B
from . import rules
from .messages import (AlterMinIsrRequest, AlterPartitionRequest, AlterPartitionResponse,
                       BrokerHeartbeatRequest, BrokerHeartbeatResponse,
                       BrokerRegistrationRequest, BrokerRegistrationResponse,
                       GetReplicaLogInfoRequest, GetReplicaLogInfoResponse, PartitionMetadata)
from .types import NO_LEADER, BrokerRegistration, ElrConfig, PartitionState

__all__ = ["RecoveryState", "ControllerState", "Controller", "SESSION_TIMER", "RECOVERY_TIMER"]

SESSION_TIMER = "session-check"
RECOVERY_TIMER = "recovery-timeout"


@dataclass(frozen=True)
class RecoveryState:
    """An unclean recovery in progress (never persisted: "every controller failover will
    result in a new unclean recovery", KIP-966 "Unclean recovery", failover)."""

    leader_epoch: int
    replies: tuple[rules.LogInfo, ...] = ()
    timed_out: bool = False


@dataclass(frozen=True)
class ControllerState:
    config: ElrConfig
    min_isr: int                                  # min.insync.replicas as configured
    partition: PartitionState
    registrations: tuple[BrokerRegistration, ...] = ()
    incarnations: tuple[tuple[str, int], ...] = ()  # last registered incarnation per broker
    recovery: RecoveryState | None = None
    unclean_elections: int = 0                    # leaders chosen by unclean recovery/election

    # ---- views -------------------------------------------------------------------------
    @property
    def eff_min_isr(self) -> int:
        return rules.effective_min_isr(self.min_isr, self.config.replication_factor)

    def registration(self, b: str) -> BrokerRegistration | None:
        for r in self.registrations:
            if r.broker_id == b:
                return r
        return None

    def incarnation(self, b: str) -> int:
        return dict(self.incarnations).get(b, -1)

    @property
    def unfenced(self) -> frozenset[str]:
        return frozenset(r.broker_id for r in self.registrations if not r.fenced)

    def metadata_for(self, b: str) -> PartitionMetadata:
        reg = self.registration(b)
        p = self.partition
        return PartitionMetadata(reg.broker_epoch if reg else -1, p.leader, p.leader_epoch,
                                 p.partition_epoch, p.isr, self.eff_min_isr)


def _set_registration(s: ControllerState, reg: BrokerRegistration) -> ControllerState:
    regs = {r.broker_id: r for r in s.registrations}
    regs[reg.broker_id] = reg
    order = s.config.brokers
    return replace(s, registrations=tuple(regs[b] for b in order if b in regs))


class Controller:
    """The handlers.  Each returns one Transition (its `action` names the refimpl step; the
    spec action it corresponds to is given by spec_mapping.ACTION_MAP) or None when the input
    is not enabled."""

    def __init__(self, config: ElrConfig):
        self.config = config
        self.bug = config.bug

    # ---- construction -----------------------------------------------------------------
    def initial(self) -> ControllerState:
        """A controller with no metadata: the topic has every broker as a replica and in the
        ISR, no registration and no leader yet (the first election happens when a replica
        registers and is unfenced)."""
        c = self.config
        p = PartitionState(replicas=c.brokers, isr=frozenset(c.brokers))
        return ControllerState(config=c, min_isr=c.min_isr, partition=p)

    def initial_registered(self) -> ControllerState:
        """The initial state of a simulated cluster, as spec/ELR.tla's Init: every broker
        registered with broker epoch 1 and unfenced, every broker in the ISR, the first broker
        the leader in leader epoch 1."""
        s = self.initial()
        c = self.config
        regs = tuple(BrokerRegistration(b, 1, False, 0) for b in c.brokers)
        p = s.partition.with_(leader=c.brokers[0], leader_epoch=1, partition_epoch=1)
        return replace(s, registrations=regs, partition=p,
                       incarnations=tuple((b, 0) for b in c.brokers))

    def disk_of(self, s: ControllerState) -> dict:
        """The controller's disk holding state `s` (its committed metadata)."""
        p = self._persist(s)
        return {p.key: p.value}

    def initial_timers(self) -> tuple[SetTimer, ...]:
        return (SetTimer(SESSION_TIMER, self.config.session_check_ms),)

    def restore(self, disk: dict, now_ms: int) -> ControllerState:
        """A controller restart replays its committed metadata; sessions start afresh and an
        unclean recovery in progress is forgotten (KIP-966 "Unclean recovery": controller
        failover)."""
        saved = disk.get("metadata")
        if saved is None:
            return self.initial()
        min_isr, partition, regs, incs, unclean = saved
        regs = tuple(replace(r, last_heartbeat_ms=now_ms) for r in regs)
        return ControllerState(self.config, min_isr, partition, regs, incs, None, unclean)

    # ---- helpers ----------------------------------------------------------------------
    @staticmethod
    def _persist(s: ControllerState) -> Persist:
        regs = tuple(replace(r, last_heartbeat_ms=0) for r in s.registrations)
        return Persist("metadata", (s.min_isr, s.partition, regs, s.incarnations,
                                    s.unclean_elections))

    def _publish(self, s: ControllerState) -> tuple[Envelope, ...]:
        """Send the partition's metadata to every registered broker (the metadata log replay)."""
        c = self.config.controller
        return tuple(Envelope(c, r.broker_id, s.metadata_for(r.broker_id))
                     for r in s.registrations)

    def _update_isr(self, s: ControllerState, proposed: frozenset[str],
                    unclean: frozenset[str] = frozenset()) -> ControllerState:
        """Apply a proposed ISR through the ELR update (KIP-966 "Controller behaviors";
        rules.elr_update mirrors spec `ElrUpdate`)."""
        p = s.partition
        u = rules.elr_update(p.isr, p.elr, p.last_known_elr, frozenset(proposed), s.eff_min_isr,
                             unclean, self.config.elr_enabled,
                             clear_at_min_isr=not bug_enabled(self.bug, B.ELR_NOT_CLEARED))
        return replace(s, partition=p.with_(isr=u.isr, elr=u.elr, last_known_elr=u.last_known_elr))

    def _fence(self, s: ControllerState, b: str) -> ControllerState:
        """KIP-966 "Controller behaviors" 2: "The replica gets fenced. When it happens, the
        controller will trigger the ELR update with the new updated ISR."  A fenced leader
        loses the leadership; "Other behaviors" 7b: the last ISR member is recorded as the
        LastKnownLeader when it is fenced."""
        reg = s.registration(b)
        if reg is None or reg.fenced:
            return s
        s = _set_registration(s, replace(reg, fenced=True))
        before = s.partition
        s = self._update_isr(s, before.isr - {b})
        p = s.partition
        if before.isr == frozenset({b}) and b not in p.isr:
            p = p.with_(last_known_leader=b)
        if p.leader == b:
            # The leader epoch is bumped when the next leader is elected (spec A5).
            p = p.with_(leader=NO_LEADER)
        if p != before:
            p = p.with_(partition_epoch=p.partition_epoch + 1)
        return replace(s, partition=p)

    def _elect(self, s: ControllerState) -> tuple[ControllerState, tuple[Envelope, ...], str]:
        """Elect a leader for a leaderless partition in the KIP-966 order ("Unclean recovery":
        rules.clean_candidates, rules.last_known_leader_candidates, rules.recovery_decision);
        returns the state, the GetReplicaLogInfo requests of a newly started unclean recovery,
        and the decision taken ("" when the partition already has a leader)."""
        p = s.partition
        c = self.config
        if p.leader != NO_LEADER:
            return s, (), ""
        if c.max_leader_epoch is not None and p.leader_epoch >= c.max_leader_epoch:
            return s, (), "WaitForEpochBound"
        eligible = s.unfenced
        clean = rules.clean_candidates(
            p.isr, p.elr, eligible, c.elr_enabled,
            allow_fenced_elr=bug_enabled(self.bug, B.LEADER_FROM_FENCED_ELR))
        kind = "CleanElection"
        if not clean:
            clean = rules.last_known_leader_candidates(p.isr, p.elr, p.last_known_leader,
                                                       eligible, c.strategy, c.manager_enabled,
                                                       c.elr_enabled)
            kind = "LastKnownLeaderElection"
        if clean:
            leader = self._first(clean)
            # "The replica gets unfenced. If the replica is an ELR member and ISR is empty, this
            # replica will be elected as leader, added to ISR, and removed from ELR."
            # "Other behaviors" 7c: the LastKnownLeader is cleaned when a new leader is elected.
            if leader not in p.isr:
                s = self._update_isr(s, p.isr | {leader})
                p = s.partition
            p = p.with_(leader=leader, leader_epoch=p.leader_epoch + 1,
                        partition_epoch=p.partition_epoch + 1, last_known_leader=NO_LEADER)
            return replace(s, partition=p, recovery=None), (), kind
        d = rules.recovery_decision(c.strategy, c.manager_enabled, c.elr_enabled, p.isr, p.elr,
                                    p.last_known_elr, eligible)
        if d == "UncleanElection":
            live = frozenset(p.replicas) & eligible
            if not live:
                return s, (), d
            # The pre-KIP unclean leader election ("Delivery plan": "randomly choosing an
            # unfenced replica"; here the first in replica order, to stay deterministic).
            leader = self._first(live)
            p = p.with_(leader=leader, leader_epoch=p.leader_epoch + 1, isr=frozenset({leader}),
                        elr=frozenset(), last_known_elr=frozenset(),
                        partition_epoch=p.partition_epoch + 1, last_known_leader=NO_LEADER)
            return replace(s, partition=p, unclean_elections=s.unclean_elections + 1), (), d
        if d == "UncleanRecovery" and s.recovery is None:
            # KIP-966 "Unclean recovery": query the replicas with GetReplicaLogInfo.
            s = replace(s, recovery=RecoveryState(p.leader_epoch))
            req = GetReplicaLogInfoRequest(p.leader_epoch)
            sends = tuple(Envelope(c.controller, b, req) for b in p.replicas if b in eligible)
            return s, sends, d
        return s, (), d

    def _first(self, candidates: frozenset[str]) -> str:
        """The first candidate in replica (preferred-leader) order."""
        return next(r for r in self.config.brokers if r in candidates)

    def _finish(self, s0: ControllerState, s: ControllerState, action: str, params: dict,
                reply: tuple[Envelope, ...] = (), timers: tuple = ()) -> Transition:
        """Elect if needed, then build the transition: persist and publish when the committed
        metadata changed."""
        s, rec_sends, kind = self._elect(s)
        if s.recovery is not None and s0.recovery is None:
            # unclean.recovery.timeout.ms starts with the recovery
            timers = timers + (SetTimer(RECOVERY_TIMER, self.config.recovery_timeout_ms),)
        if kind:
            params = dict(params, election=kind)
        changed = (s.partition, s.min_isr, s.registrations, s.incarnations) != \
                  (s0.partition, s0.min_isr, s0.registrations, s0.incarnations)
        persist = (self._persist(s),) if changed else ()
        publish = self._publish(s) if (s.partition != s0.partition or s.min_isr != s0.min_isr) else ()
        return Transition(state=s, action=action, params=params,
                          sends=reply + publish + rec_sends,
                          persist=persist, timers=timers)

    # ---- inputs -------------------------------------------------------------------------
    def on_message(self, s: ControllerState, src: str, msg, now_ms: int) -> Transition | None:
        if isinstance(msg, BrokerRegistrationRequest):
            return self.on_registration(s, msg, now_ms)
        if isinstance(msg, BrokerHeartbeatRequest):
            return self.on_heartbeat(s, msg, now_ms)
        if isinstance(msg, AlterPartitionRequest):
            return self.on_alter_partition(s, msg)
        if isinstance(msg, GetReplicaLogInfoResponse):
            return self.on_log_info(s, msg)
        if isinstance(msg, AlterMinIsrRequest):
            return self.on_alter_min_isr(s, msg)
        return None

    def on_registration(self, s: ControllerState, req: BrokerRegistrationRequest,
                        now_ms: int) -> Transition | None:
        """KIP-966 "Detection of an unclean shutdown" 3 and "Controller behaviors" 4: verify the
        PreviousBrokerEpoch against the registration record; on an unclean shutdown remove the
        broker from ISR and ELR before persisting the registration.  A new registration is
        fenced (it is unfenced by its first heartbeat)."""
        b = req.broker_id
        if b not in self.config.brokers:
            return None
        c = self.config.controller
        known_inc = s.incarnation(b)
        if req.incarnation < known_inc:
            return None                                   # a stale duplicate: ignore
        old = s.registration(b)
        if req.incarnation == known_inc and old is not None:
            # A duplicate of the accepted registration: answer it again, change nothing.
            resp = BrokerRegistrationResponse(b, req.incarnation, old.broker_epoch)
            return Transition(state=s, action="HandleBrokerRegistration",
                              params={"broker": b, "duplicate": True},
                              sends=(Envelope(c, b, resp),))
        if self.config.max_broker_epoch is not None and old is not None and \
                old.broker_epoch >= self.config.max_broker_epoch:
            return None                   # bounded mode: MaxBrokerEpoch reached
        s0 = s
        clean = rules.is_clean_shutdown(req.previous_broker_epoch,
                                        old.broker_epoch if old else None)
        if self.config.elr_enabled and not clean:
            # "Controller behaviors" 4: remove the broker from ISR and ELR (rules.elr_update
            # with the broker as `unclean`); "Other behaviors" 1: no leader epoch bump unless it
            # was the leader.
            p = s.partition
            keep = bug_enabled(self.bug, B.UNCLEAN_KEPT_IN_ELR)
            s = self._update_isr(s, p.isr - {b}, frozenset() if keep else frozenset({b}))
            np = s.partition
            if p.isr == frozenset({b}):
                # "Other behaviors" 7b: the last ISR member is recorded as the LastKnownLeader.
                np = np.with_(last_known_leader=b)
            if p.leader == b:
                np = np.with_(leader=NO_LEADER)
            if np != p:
                np = np.with_(partition_epoch=p.partition_epoch + 1)
            s = replace(s, partition=np)
        # The previous registration (if unfenced) is fenced first: a re-registered broker
        # starts fenced.
        s = self._fence(s, b)
        epoch = (old.broker_epoch if old else 0) + 1   # the broker's next epoch
        s = _set_registration(s, BrokerRegistration(b, epoch, True, now_ms))
        incs = dict(s.incarnations)
        incs[b] = req.incarnation
        s = replace(s, incarnations=tuple((x, incs[x]) for x in self.config.brokers if x in incs))
        resp = BrokerRegistrationResponse(b, req.incarnation, epoch)
        return self._finish(s0, s, "HandleBrokerRegistration",
                            {"broker": b, "clean": clean, "brokerEpoch": epoch},
                            reply=(Envelope(c, b, resp),))

    def on_heartbeat(self, s: ControllerState, req: BrokerHeartbeatRequest,
                     now_ms: int) -> Transition | None:
        """A heartbeat keeps the session alive and unfences a fenced broker (KIP-966 "Controller
        behaviors" 3: an unfenced ELR member is elected when the partition is leaderless).  A
        heartbeat asking to shut down fences the broker (controlled shutdown)."""
        b = req.broker_id
        reg = s.registration(b)
        if reg is None or reg.broker_epoch != req.broker_epoch:
            return None
        s0 = s
        if req.want_shutdown:
            s = self._fence(s, b)
            return self._finish(s0, s, "ControlledShutdown", {"broker": b})
        s = _set_registration(s, replace(reg, last_heartbeat_ms=now_ms, fenced=False))
        action = "UnfenceBroker" if reg.fenced else "HandleBrokerHeartbeat"
        t = self._finish(s0, s, action, {"broker": b})
        c = self.config.controller
        resp = BrokerHeartbeatResponse(reg.broker_epoch, False, t.state.metadata_for(b))
        sends = (Envelope(c, b, resp),) + t.sends
        rec = t.state.recovery
        if rec is not None and not any(r.broker_id == b and self._reply_valid(t.state, r)
                                       for r in rec.replies) \
                and not any(e.dst == b and isinstance(e.payload, GetReplicaLogInfoRequest)
                            for e in sends):
            # An unclean recovery in progress asks every unfenced replica that has not given a
            # current reply (a broker unfenced after the recovery started, a lost request).
            sends += (Envelope(c, b, GetReplicaLogInfoRequest(t.state.partition.leader_epoch)),)
        return replace(t, sends=sends)

    def on_session_timer(self, s: ControllerState, now_ms: int) -> Transition:
        """Fence every unfenced broker whose session expired (no heartbeat for
        session_timeout_ms): KIP-966 "Controller behaviors" 2."""
        s0 = s
        expired = [r.broker_id for r in s.registrations
                   if not r.fenced and now_ms - r.last_heartbeat_ms > self.config.session_timeout_ms]
        for b in expired:
            s = self._fence(s, b)
        timers = (SetTimer(SESSION_TIMER, self.config.session_check_ms),)
        action = "FenceBroker" if expired else "SessionCheck"
        return self._finish(s0, s, action, {"brokers": tuple(expired)}, timers=timers)

    def on_alter_partition(self, s: ControllerState,
                           req: AlterPartitionRequest) -> Transition | None:
        """KIP-966 "Controller behaviors" 1: "When the controller receives the new ISR, it will
        trigger an ELR update."  The request is validated as in KRaft (broker epoch, leader
        epoch, partition epoch; only unfenced replicas may be added)."""
        p = s.partition
        b = req.broker_id
        reg = s.registration(b)
        c = self.config.controller
        if reg is None or reg.broker_epoch != req.broker_epoch:
            err = "STALE_BROKER_EPOCH"
        elif p.leader != b or p.leader_epoch != req.leader_epoch:
            err = "FENCED_LEADER_EPOCH"
        elif p.partition_epoch != req.partition_epoch:
            err = "NONE" if req.new_isr == p.isr else "INVALID_UPDATE_VERSION"
            if err == "NONE":
                resp = AlterPartitionResponse("NONE", s.metadata_for(b), req.new_isr,
                                              req.partition_epoch)
                return Transition(state=s, action="HandleAlterPartition",
                                  params={"broker": b, "error": "NONE", "duplicate": True},
                                  sends=(Envelope(c, b, resp),))
        elif b not in req.new_isr or not (req.new_isr - p.isr) <= s.unfenced or \
                not req.new_isr <= frozenset(p.replicas):
            err = "INELIGIBLE_REPLICA"
        else:
            err = "NONE"
        if err != "NONE":
            resp = AlterPartitionResponse(err, s.metadata_for(b) if reg else None, req.new_isr,
                                          req.partition_epoch)
            return Transition(state=s, action="RejectAlterPartition",
                              params={"broker": b, "error": err}, sends=(Envelope(c, b, resp),))
        s0 = s
        s = self._update_isr(s, frozenset(req.new_isr))
        s = replace(s, partition=s.partition.with_(partition_epoch=p.partition_epoch + 1))
        resp = AlterPartitionResponse("NONE", s.metadata_for(b), req.new_isr, req.partition_epoch)
        return self._finish(s0, s, "HandleAlterPartition",
                            {"broker": b, "isr": frozenset(req.new_isr),
                             "shrink": req.new_isr < p.isr},
                            reply=(Envelope(c, b, resp),))

    def on_alter_min_isr(self, s: ControllerState, req: AlterMinIsrRequest) -> Transition | None:
        """KIP-966 "Other behaviors" 2: a new min.insync.replicas clears the ELR when the new
        (effective) min ISR <= the ISR size."""
        if req.min_isr < 1 or req.min_isr == s.min_isr:
            return None
        s0 = s
        s = replace(s, min_isr=req.min_isr)
        p = s.partition
        if self.config.elr_enabled:
            u = rules.elr_after_min_isr_change(p.isr, p.elr, p.last_known_elr, s.eff_min_isr)
            p = p.with_(elr=u.elr, last_known_elr=u.last_known_elr)
        # The partition epoch versions what the brokers see (the min ISR is part of it), so a
        # delayed older push cannot bring back the old min ISR.
        s = replace(s, partition=p.with_(partition_epoch=p.partition_epoch + 1))
        return self._finish(s0, s, "AlterMinIsr", {"minIsr": req.min_isr})

    def on_log_info(self, s: ControllerState, resp: GetReplicaLogInfoResponse) -> Transition | None:
        """KIP-966 "Unclean recovery": collect GetReplicaLogInfo replies, fencing stale ones by
        broker epoch and partition leader epoch, and elect when the strategy allows."""
        if s.recovery is None or s.partition.leader != NO_LEADER:
            return None
        info = rules.LogInfo(resp.broker_id, resp.broker_epoch, resp.last_written_leader_epoch,
                             resp.current_leader_epoch, resp.log_end_offset)
        if not self._reply_valid(s, info):
            return Transition(state=s, action="RejectGetReplicaLogInfoResponse",
                              params={"broker": resp.broker_id})
        rec = s.recovery
        replies = tuple(r for r in rec.replies if r.broker_id != info.broker_id) + (info,)
        s = replace(s, recovery=replace(rec, replies=replies))
        return self._try_recovery_election(s, "HandleGetReplicaLogInfoResponse",
                                           {"broker": resp.broker_id})

    def on_recovery_timer(self, s: ControllerState, now_ms: int) -> Transition | None:
        if s.recovery is None or s.recovery.timed_out:
            return None
        s = replace(s, recovery=replace(s.recovery, timed_out=True))
        return self._try_recovery_election(s, "UncleanRecoveryTimeout", {})

    @staticmethod
    def _reply_valid(s: ControllerState, r: rules.LogInfo) -> bool:
        """A fresh reply (rules.reply_is_fresh) from a broker still unfenced."""
        reg = s.registration(r.broker_id)
        return reg is not None and not reg.fenced and rules.reply_is_fresh(
            r, reg.broker_epoch, s.partition.leader_epoch)

    def _try_recovery_election(self, s: ControllerState, action: str, params: dict) -> Transition:
        rec = s.recovery
        p = s.partition
        valid = tuple(r for r in rec.replies if self._reply_valid(s, r))
        replied = frozenset(r.broker_id for r in valid)
        fixed = s.eff_min_isr if bug_enabled(self.bug, B.BALANCED_FIXED_REPLIES) else None
        unfenced_replicas = s.unfenced & frozenset(p.replicas)
        can = rules.recovery_can_elect(self.config.strategy, p.last_known_elr, replied, fixed)
        timing = fixed is not None or rules.recovery_timing_allows(replied, unfenced_replicas,
                                                                    rec.timed_out)
        if not (can and timing):
            return Transition(state=s, action=action, params=params)
        leader = self._first(rules.best_repliers(valid))
        s0 = s
        # The recovered leader starts a fresh ISR; the ELR no longer bounds the HWM.
        np = p.with_(leader=leader, leader_epoch=p.leader_epoch + 1, isr=frozenset({leader}),
                     elr=frozenset(), last_known_elr=frozenset(), last_known_leader=NO_LEADER,
                     partition_epoch=p.partition_epoch + 1)
        s = replace(s, partition=np, recovery=None, unclean_elections=s.unclean_elections + 1)
        return self._finish(s0, s, "UncleanRecoveryElect", dict(params, leader=leader))
