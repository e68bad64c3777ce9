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
    # The latest GetReplicaLogInfo reply of each broker (KIP-966 "Unclean recovery").  Kept
    # across recoveries, as spec/ELR.tla keeps `replies`: only the fresh ones (same broker epoch
    # and partition leader epoch, from an unfenced broker) count, so an old reply is used only
    # while it still describes the broker's log.
    replies: tuple[rules.LogInfo, ...] = ()
    metadata_version: int = 0                     # bumped by every published change

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

    def reply(self, b: str) -> rules.LogInfo | None:
        return next((r for r in self.replies if r.broker_id == b), None)

    def reply_valid(self, r: rules.LogInfo) -> bool:
        """A fresh reply (rules.reply_is_fresh) from a broker still unfenced."""
        reg = self.registration(r.broker_id)
        return reg is not None and not reg.fenced and rules.reply_is_fresh(
            r, reg.broker_epoch, self.partition.leader_epoch)

    def valid_replies(self) -> tuple[rules.LogInfo, ...]:
        return tuple(r for r in self.replies if self.reply_valid(r))

    def live_brokers(self) -> frozenset[tuple[str, int, int]]:
        return frozenset((r.broker_id, r.broker_epoch, r.fence_epoch)
                         for r in self.registrations if not r.fenced)

    def metadata_for(self, b: str) -> PartitionMetadata:
        reg = self.registration(b)
        p = self.partition
        return PartitionMetadata(reg.broker_epoch if reg else -1, p.leader, p.leader_epoch,
                                 p.partition_epoch, p.isr, self.eff_min_isr,
                                 self.metadata_version, self.live_brokers(), p.elr,
                                 self.min_isr)

    def published(self) -> tuple:
        """What the brokers see (a change is published, with a new metadata version)."""
        return (self.partition, self.min_isr, self.live_brokers())

    def visible(self) -> tuple:
        """Everything spec/ELR.tla sees of the controller but the replies."""
        return (self.partition, self.min_isr,
                tuple((r.broker_id, r.broker_epoch, r.fenced) for r in self.registrations))


#: `Controller._elect`'s answer when a leader must be elected but MaxLeaderEpoch is reached:
#: the step that made the election necessary is not enabled (spec: `ApplyOutcome` requires
#: leaderEpoch < MaxLeaderEpoch for an election).
BLOCKED = "ElectionBeyondMaxLeaderEpoch"


def _set_registration(s: ControllerState, reg: BrokerRegistration) -> ControllerState:
    regs = {r.broker_id: r for r in s.registrations}
    regs[reg.broker_id] = reg
    order = s.config.brokers
    return replace(s, registrations=tuple(regs[b] for b in order if b in regs))


class Controller:
    """The handlers.  Each returns one Transition (its `action` names the refimpl step; the
    spec action it corresponds to is given by spec_mapping) or None when the input is not
    enabled.  A handler whose input leads to a second spec action -- the unclean leader
    election after the step that left the partition leaderless, the unclean recovery's
    election after the reply that completes it -- returns that part in `Transition.chain`."""

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
        p = s.partition.with_(leader=c.brokers[0], leader_epoch=1, partition_epoch=0)
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
        min_isr, partition, regs, incs, unclean, version = saved
        regs = tuple(replace(r, last_heartbeat_ms=now_ms) for r in regs)
        return ControllerState(self.config, min_isr, partition, regs, incs, None, unclean,
                               metadata_version=version)

    # ---- helpers ----------------------------------------------------------------------
    @staticmethod
    def _persist(s: ControllerState) -> Persist:
        regs = tuple(replace(r, last_heartbeat_ms=0) for r in s.registrations)
        return Persist("metadata", (s.min_isr, s.partition, regs, s.incarnations,
                                    s.unclean_elections, s.metadata_version))

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
                             clear_at_min_isr=not bug_enabled(self.bug,
                                                              "elr-not-cleared-at-min-isr"),
                             last_known_elr_literal=bug_enabled(self.bug,
                                                                "last-known-elr-literal"))
        return replace(s, partition=p.with_(isr=u.isr, elr=u.elr, last_known_elr=u.last_known_elr))

    def _fence(self, s: ControllerState, b: str) -> ControllerState:
        """KIP-966 "Controller behaviors" 2: "The replica gets fenced. When it happens, the
        controller will trigger the ELR update with the new updated ISR."  A fenced leader
        loses the leadership; "Other behaviors" 7b: the last ISR member is recorded as the
        LastKnownLeader when it is fenced."""
        reg = s.registration(b)
        if reg is None or reg.fenced:
            return s
        s = _set_registration(s, replace(reg, fenced=True, fence_epoch=reg.fence_epoch + 1))
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
        returns the state, the GetReplicaLogInfo requests of an unclean recovery, and the
        decision taken ("" when the partition already has a leader, BLOCKED when a clean
        election is due but MaxLeaderEpoch is reached).  The election itself is
        rules.elect_outcome (spec `ElectOutcome`)."""
        p = s.partition
        c = self.config
        if p.leader != NO_LEADER:
            return replace(s, recovery=None), (), ""
        at_bound = c.max_leader_epoch is not None and p.leader_epoch >= c.max_leader_epoch
        eligible = s.unfenced
        clean = rules.clean_candidates(
            p.isr, p.elr, eligible, c.elr_enabled,
            allow_fenced_elr=bug_enabled(self.bug, "leader-from-fenced-elr"))
        kind = "CleanElection"
        if not clean:
            clean = rules.last_known_leader_candidates(p.isr, p.elr, p.last_known_leader,
                                                       eligible, c.strategy, c.manager_enabled,
                                                       c.elr_enabled)
            kind = "LastKnownLeaderElection"
        if clean:
            if at_bound:
                return s, (), BLOCKED
            # "The replica gets unfenced. If the replica is an ELR member and ISR is empty, this
            # replica will be elected as leader, added to ISR, and removed from ELR."
            # "Other behaviors" 7c: the LastKnownLeader is cleaned when a new leader is elected.
            return replace(s, partition=self._elected(p, self._first(clean)), recovery=None), \
                (), kind
        d = rules.recovery_decision(c.strategy, c.manager_enabled, c.elr_enabled, p.isr, p.elr,
                                    p.last_known_elr, eligible,
                                    bug_enabled(self.bug, "balanced-fixed-replies"))
        if d == "UncleanElection":
            live = frozenset(p.replicas) & eligible
            if not live or at_bound:
                return replace(s, recovery=None), (), "WaitFor" + d
            # The pre-KIP unclean leader election ("Delivery plan": "randomly choosing an
            # unfenced replica"; here the first in replica order, to stay deterministic).
            s = replace(s, partition=self._elected(p, self._first(live)), recovery=None,
                        unclean_elections=s.unclean_elections + 1)
            return s, (), d
        if d != "UncleanRecovery":
            return replace(s, recovery=None), (), d
        # KIP-966 "Unclean recovery": query the replicas with GetReplicaLogInfo -- every
        # unfenced replica without a fresh reply, when the recovery starts and at every later
        # step (a replica unfenced or restarted meanwhile).
        if s.recovery is None or s.recovery.leader_epoch != p.leader_epoch:
            s = replace(s, recovery=RecoveryState(p.leader_epoch))
        req = GetReplicaLogInfoRequest(p.leader_epoch)
        sends = tuple(Envelope(c.controller, b, req) for b in p.replicas
                      if b in eligible and not self._has_valid_reply(s, b))
        return s, sends, d

    def _elected(self, p: PartitionState, leader: str) -> PartitionState:
        u = rules.elect_outcome(p.isr, p.elr, p.last_known_elr, leader)
        return p.with_(leader=leader, leader_epoch=p.leader_epoch + 1, isr=u.isr, elr=u.elr,
                       last_known_elr=u.last_known_elr, last_known_leader=NO_LEADER,
                       partition_epoch=p.partition_epoch + 1)

    def _first(self, candidates: frozenset[str]) -> str:
        """The first candidate in replica (preferred-leader) order."""
        return next(r for r in self.config.brokers if r in candidates)

    def _has_valid_reply(self, s: ControllerState, b: str) -> bool:
        r = s.reply(b)
        return r is not None and s.reply_valid(r)

    def _commit(self, s0: ControllerState, s: ControllerState, action: str, params: dict,
                reply=(), timers: tuple = (), sends: tuple[Envelope, ...] = ()) -> Transition:
        """One step's transition: persist and publish (with a new metadata version) when the
        committed metadata changed.  `reply`: the envelopes answering the request, or a
        function of the new state giving them."""
        s = replace(s, partition=self._stamp_partition_epoch(s0.partition, s.partition))
        if s.published() != s0.published():
            s = replace(s, metadata_version=s0.metadata_version + 1)
        changed = (s.partition, s.min_isr, s.registrations, s.incarnations,
                   s.metadata_version) != (s0.partition, s0.min_isr, s0.registrations,
                                           s0.incarnations, s0.metadata_version)
        persist = (self._persist(s),) if changed else ()
        publish = self._publish(s) if s.metadata_version != s0.metadata_version else ()
        if callable(reply):
            reply = reply(s)
        if s.recovery is not None and s0.recovery is None:
            # unclean.recovery.timeout.ms starts with the recovery
            timers = timers + (SetTimer(RECOVERY_TIMER, self.config.recovery_timeout_ms),)
        return Transition(state=s, action=action, params=params,
                          sends=tuple(reply) + publish + sends, persist=persist, timers=timers)

    @staticmethod
    def _stamp_partition_epoch(p0: PartitionState, p: PartitionState) -> PartitionState:
        """One PartitionChangeRecord per step: the partition epoch is bumped once when any
        field of the partition changed (spec ApplyPartition), whatever the handler did."""
        bumped = replace(p, partition_epoch=p0.partition_epoch) != p0
        return p.with_(partition_epoch=p0.partition_epoch + (1 if bumped else 0))

    def _finish(self, s0: ControllerState, s: ControllerState, action: str, params: dict,
                reply=(), timers: tuple = ()) -> Transition | None:
        """Elect if needed, then build the transition.  An unclean leader election is a spec
        action of its own (`UncleanLeaderElection`): it follows the step as a chained part.
        None when a clean election is due beyond MaxLeaderEpoch and this step changed what the
        spec sees (the spec's action is then not enabled)."""
        before = s
        s, rec_sends, kind = self._elect(s)
        if self._beyond_partition_epoch(s0, before) or \
                (kind != "UncleanElection" and self._beyond_partition_epoch(s0, s)):
            return None
        if kind == BLOCKED:
            if before.visible() != s0.visible():
                return None
            kind = ""
        if kind:
            params = dict(params, election=kind)
        if kind != "UncleanElection":
            return self._commit(s0, s, action, params, reply, timers, rec_sends)
        head = self._commit(s0, before, action, params, reply, timers)
        if self._beyond_partition_epoch(head.state, s):
            return head                   # the unclean election waits (MaxPartitionEpoch)
        part = self._commit(head.state, replace(s, metadata_version=head.state.metadata_version),
                            "UncleanLeaderElect", {"leader": s.partition.leader})
        return replace(head, chain=((self.config.controller, part),))

    def _beyond_partition_epoch(self, s0: ControllerState, s: ControllerState) -> bool:
        """Bounded mode (spec MaxPartitionEpoch): a step whose partition change would take the
        partition epoch beyond the bound is not taken."""
        m = self.config.max_partition_epoch
        p0 = s0.partition
        return m is not None and p0.partition_epoch >= m and \
            replace(s.partition, partition_epoch=p0.partition_epoch) != p0

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
        broker from ISR and ELR before persisting the registration.  The new incarnation is
        registered unfenced: it has caught up with the metadata at once (spec/ELR.tla
        abstractions A1 and A8; Kafka unfences it at its first heartbeat after catching up),
        and a leaderless partition runs its election."""
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
            resp = BrokerRegistrationResponse(b, req.incarnation, old.broker_epoch,
                                              s.metadata_for(b))
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
            keep = bug_enabled(self.bug, "unclean-broker-kept-in-elr")
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
        # The previous incarnation (if still unfenced) is fenced first.
        s = self._fence(s, b)
        prev = s.registration(b)
        epoch = (old.broker_epoch if old else 0) + 1   # the broker's next epoch
        s = _set_registration(s, BrokerRegistration(b, epoch, False, now_ms,
                                                    prev.fence_epoch if prev else 0))
        incs = dict(s.incarnations)
        incs[b] = req.incarnation
        s = replace(s, incarnations=tuple((x, incs[x]) for x in self.config.brokers if x in incs))

        def reply(st: ControllerState) -> tuple[Envelope, ...]:
            return (Envelope(c, b, BrokerRegistrationResponse(b, req.incarnation, epoch,
                                                              st.metadata_for(b))),)
        return self._finish(s0, s, "HandleBrokerRegistration",
                            {"broker": b, "clean": clean, "brokerEpoch": epoch}, reply=reply)

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
        c = self.config.controller
        if req.want_shutdown:
            return self._finish(s0, self._fence(s, b), "ControlledShutdown", {"broker": b})
        s = _set_registration(s, replace(reg, last_heartbeat_ms=now_ms, fenced=False))
        action = "UnfenceBroker" if reg.fenced else "HandleBrokerHeartbeat"

        def reply(st: ControllerState) -> tuple[Envelope, ...]:
            return (Envelope(c, b, BrokerHeartbeatResponse(reg.broker_epoch, False,
                                                           st.metadata_for(b))),)
        return self._finish(s0, s, action, {"broker": b}, reply=reply)

    def on_session_timer(self, s: ControllerState, now_ms: int) -> Transition:
        """Fence a broker whose session expired (no heartbeat for session_timeout_ms): KIP-966
        "Controller behaviors" 2.  One broker per step, as spec `FenceBroker`; the check runs
        again at once while other sessions are expired.  A fence that needs an election beyond
        MaxLeaderEpoch is not taken."""
        cfg = self.config
        expired = [r.broker_id for r in s.registrations
                   if not r.fenced and now_ms - r.last_heartbeat_ms > cfg.session_timeout_ms]
        for i, b in enumerate(expired):
            again = len(expired) > i + 1
            timers = (SetTimer(SESSION_TIMER, 0 if again else cfg.session_check_ms),)
            t = self._finish(s, self._fence(s, b), "FenceBroker", {"broker": b}, timers=timers)
            if t is not None:
                return t
        return Transition(state=s, action="SessionCheck", params={},
                          timers=(SetTimer(SESSION_TIMER, cfg.session_check_ms),))

    def on_alter_partition(self, s: ControllerState,
                           req: AlterPartitionRequest) -> Transition | None:
        """KIP-966 "Controller behaviors" 1: "When the controller receives the new ISR, it will
        trigger an ELR update."  Validated as KRaft's ReplicationControlManager does, in its
        order: FENCED_LEADER_EPOCH (the sender no longer leads in the request's leader epoch),
        INVALID_UPDATE_VERSION (the request's partition epoch is not the current one: the
        leader proposed from a stale view), INELIGIBLE_REPLICA (a proposed member is fenced,
        KIP-841, or its broker epoch in the request is not the registered one, KIP-903; 0 =
        unknown, not checked).  A valid request is committed (ELR update, election, partition
        epoch + 1) and answered with the new partition state; an error carries none (the
        leader learns the state from the metadata).  The planted bug
        alter-partition-no-epoch-check skips the partition epoch comparison."""
        p = s.partition
        b = req.broker_id
        c = self.config.controller
        epochs = dict(req.broker_epochs)
        if p.leader != b or p.leader_epoch != req.leader_epoch:
            err = "FENCED_LEADER_EPOCH"
        elif p.partition_epoch != req.partition_epoch and \
                not bug_enabled(self.bug, "alter-partition-no-epoch-check"):
            err = "INVALID_UPDATE_VERSION"
        elif any(self._ineligible(s, m, epochs.get(m, 0)) for m in req.new_isr):
            err = "INELIGIBLE_REPLICA"
        else:
            err = "NONE"
        if err != "NONE":
            resp = AlterPartitionResponse(err, None, req.new_isr, req.partition_epoch,
                                          broker_epoch=req.broker_epoch)
            return Transition(state=s, action="RejectAlterPartition",
                              params={"broker": b, "error": err}, sends=(Envelope(c, b, resp),))
        s0 = s
        s = self._update_isr(s, frozenset(req.new_isr))

        def reply(st: ControllerState) -> tuple[Envelope, ...]:
            return (Envelope(c, b, AlterPartitionResponse("NONE", st.metadata_for(b), req.new_isr,
                                                          req.partition_epoch,
                                                          broker_epoch=req.broker_epoch)),)
        return self._finish(s0, s, "HandleAlterPartition",
                            {"broker": b, "isr": frozenset(req.new_isr),
                             "shrink": req.new_isr < p.isr}, reply=reply)

    @staticmethod
    def _ineligible(s: ControllerState, m: str, named_epoch: int) -> bool:
        """KIP-841 / KIP-903: a proposed ISR member must be registered and unfenced, with the
        broker epoch the leader named (0: not named, not checked)."""
        reg = s.registration(m)
        return reg is None or reg.fenced or (named_epoch != 0 and named_epoch != reg.broker_epoch)

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
            p2 = p.with_(elr=u.elr, last_known_elr=u.last_known_elr)
            if p2 != p:   # a PartitionChangeRecord (the min ISR itself is a topic config)
                s = replace(s, partition=p2.with_(partition_epoch=p.partition_epoch + 1))
        return self._finish(s0, s, "AlterMinIsr", {"minIsr": req.min_isr})

    def on_log_info(self, s: ControllerState, resp: GetReplicaLogInfoResponse) -> Transition | None:
        """KIP-966 "Unclean recovery": collect GetReplicaLogInfo replies, fencing stale ones by
        broker epoch and partition leader epoch, and elect when the strategy allows (the
        election is chained as a step of its own, spec `CompleteUncleanRecovery`)."""
        if s.recovery is None or s.partition.leader != NO_LEADER:
            return None
        info = rules.LogInfo(resp.broker_id, resp.broker_epoch, resp.last_written_leader_epoch,
                             resp.current_leader_epoch, resp.log_end_offset)
        if not s.reply_valid(info):
            return Transition(state=s, action="RejectGetReplicaLogInfoResponse",
                              params={"broker": resp.broker_id})
        order = self.config.brokers
        replies = {r.broker_id: r for r in s.replies}
        replies[info.broker_id] = info
        s = replace(s, replies=tuple(replies[b] for b in order if b in replies))
        t = Transition(state=s, action="HandleGetReplicaLogInfoResponse",
                       params={"broker": resp.broker_id})
        e = self._recovery_election(s)
        return replace(t, chain=((self.config.controller, e),)) if e is not None else t

    def on_recovery_timer(self, s: ControllerState, now_ms: int) -> Transition | None:
        if s.recovery is None or s.recovery.timed_out:
            return None
        s = replace(s, recovery=replace(s.recovery, timed_out=True))
        e = self._recovery_election(s)
        return e if e is not None else Transition(state=s, action="UncleanRecoveryTimeout",
                                                  params={})

    def _recovery_election(self, s: ControllerState) -> Transition | None:
        """The unclean recovery's election, once the strategy (rules.recovery_can_elect) and
        the timing (rules.recovery_timing_allows) allow it and MaxLeaderEpoch is not reached:
        the best replier (rules.best_repliers) becomes leader (rules.elect_outcome)."""
        rec = s.recovery
        p = s.partition
        c = self.config
        if c.max_leader_epoch is not None and p.leader_epoch >= c.max_leader_epoch:
            return None
        valid = s.valid_replies()
        replied = frozenset(r.broker_id for r in valid)
        fixed = s.eff_min_isr if bug_enabled(self.bug, "balanced-fixed-replies") else None
        unfenced_replicas = s.unfenced & frozenset(p.replicas)
        can = rules.recovery_can_elect(c.strategy, p.last_known_elr, replied, fixed)
        timing = fixed is not None or rules.recovery_timing_allows(replied, unfenced_replicas,
                                                                    rec.timed_out)
        if not (can and timing):
            return None
        leader = self._first(rules.best_repliers(valid))
        s2 = replace(s, partition=self._elected(p, leader), recovery=None,
                     unclean_elections=s.unclean_elections + 1)
        return self._finish(s, s2, "UncleanRecoveryElect", {"leader": leader})
