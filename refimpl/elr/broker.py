"""A broker hosting a replica of the partition, as a pure state machine: it registers with the
controller (PreviousBrokerEpoch from the CleanShutdownFile), heartbeats, leads (produce, fetch
serving, ISR shrink / expand with AlterPartition, the HWM rule, acks) or follows (fetch,
truncate on divergence), checkpoints its HWM, and shuts down cleanly.  The log is fsynced at a
clean shutdown and by the log recovery at start (Kafka's default: no periodic fsync), so a
power loss loses what was written since.

KIP-966 "Broker behaviors": "Both the follower and the leader don't have any new behavior to
handle ELR. They still refer to ISR for decision making."  The new broker-side rules are the HWM
advancement requirement (rules.next_high_watermark) and the CleanShutdownFile.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from refimpl.bugs import bug_enabled
from refimpl.sim.protocol import Envelope, Persist, SetTimer, Transition

from . import rules
from .log import ReplicaLog
from .messages import (ACKS_ALL_OR_ONE, AlterPartitionRequest, AlterPartitionResponse,
                       BrokerHeartbeatRequest,
                       BrokerHeartbeatResponse, BrokerRegistrationRequest,
                       BrokerRegistrationResponse, FetchRequest, FetchResponse,
                       GetReplicaLogInfoRequest, GetReplicaLogInfoResponse, PartitionMetadata,
                       ProduceRequest, ProduceResponse)
from .types import NO_EPOCH, ElrConfig, LogEntry

__all__ = ["FollowerProgress", "PendingAck", "BrokerState", "Broker",
           "HEARTBEAT_TIMER", "FETCH_TIMER", "ISR_TIMER", "HWM_CHECKPOINT_TIMER"]

HEARTBEAT_TIMER = "heartbeat"
FETCH_TIMER = "fetch"
ISR_TIMER = "isr-check"
HWM_CHECKPOINT_TIMER = "hwm-checkpoint"


@dataclass(frozen=True)
class FollowerProgress:
    """What the leader knows of a follower from its last fetch."""

    broker_epoch: int
    log_end_offset: int
    last_caught_up_ms: int


@dataclass(frozen=True)
class PendingAck:
    """An acks=all produce request waiting for the HWM (KIP-966 acks=all rule)."""

    src: str
    request_id: int
    offset: int
    entry: LogEntry


@dataclass(frozen=True)
class BrokerState:
    broker_id: str
    incarnation: int
    previous_broker_epoch: int          # read from the CleanShutdownFile at start (-1: none)
    broker_epoch: int = NO_EPOCH        # from the registration response
    log: ReplicaLog = ReplicaLog()
    hwm: int = 0
    metadata: PartitionMetadata | None = None
    # leader only
    leader_since_ms: int = 0
    leader_epoch_start_offset: int = 0  # the log end offset when this leadership began
    followers: tuple[tuple[str, FollowerProgress], ...] = ()
    pending_isr: frozenset[str] | None = None   # the ISR proposed in the AlterPartition in flight
    pending_acks: tuple[PendingAck, ...] = ()
    # ghost (never read by the protocol): unclean shutdowns this broker went through
    unclean_shutdowns: int = 0

    @property
    def registered(self) -> bool:
        return self.broker_epoch != NO_EPOCH

    @property
    def is_leader(self) -> bool:
        md = self.metadata
        return md is not None and md.leader == self.broker_id

    @property
    def committed_isr(self) -> frozenset[str]:
        return self.metadata.isr if self.metadata else frozenset()

    @property
    def maximal_isr(self) -> frozenset[str]:
        """KIP-966: the leader's "maximal ISR" -- the committed ISR plus replicas it is adding
        that the controller has not committed yet."""
        return self.committed_isr | (self.pending_isr or frozenset())

    def progress(self) -> dict[str, FollowerProgress]:
        return dict(self.followers)


class Broker:
    def __init__(self, config: ElrConfig):
        self.config = config
        self.bug = config.bug
        # The HWM a broker starts a new leader epoch with.  None: its own HWM (what it learned
        # as a follower, as Kafka).  The simulator adapter sets the spec's abstraction A12:
        # the consumer-visible prefix the new leader holds.
        self.leader_hwm_start = None
        # Is `broker`'s AlterPartition channel busy (a request or its response in flight)?
        # The spec has one slot per broker, which a request keeps across the sender's restart;
        # the simulator adapter answers from the network.  Default: the broker's own pending ISR.
        self.alter_channel_busy = None

    # ---- construction -----------------------------------------------------------------
    def timers(self) -> tuple[SetTimer, ...]:
        c = self.config
        return (SetTimer(HEARTBEAT_TIMER, 1, c.heartbeat_ms // 2),
                SetTimer(FETCH_TIMER, c.fetch_ms, c.fetch_ms // 2),
                SetTimer(ISR_TIMER, c.isr_check_ms, c.isr_check_ms // 2),
                SetTimer(HWM_CHECKPOINT_TIMER, c.hwm_checkpoint_ms, c.hwm_checkpoint_ms))

    def initial(self, b: str) -> BrokerState:
        return BrokerState(broker_id=b, incarnation=0, previous_broker_epoch=NO_EPOCH)

    def restart(self, b: str, disk: dict, now_ms: int) -> Transition:
        """Start from the disk: the log as it survived (the log recovery validates it and
        flushes it: spec RestartBroker's flushed' = k), the HWM checkpoint, and the
        CleanShutdownFile's broker epoch (KIP-966 "Detection of an unclean shutdown" 2), which
        is then removed ("the CleanShutdownFile is removed after the log manager is
        initialized").  The registration request follows (`registration_request`)."""
        log = disk.get("log", ReplicaLog()).flush()
        prev = disk.get("clean_shutdown")
        inc = disk.get("incarnation", 0) + 1
        s = BrokerState(broker_id=b, incarnation=inc,
                        previous_broker_epoch=NO_EPOCH if prev is None else prev,
                        log=log, hwm=min(disk.get("hwm", 0), log.end_offset),
                        unclean_shutdowns=disk.get("ghost_unclean_shutdowns", 0))
        return Transition(state=s, action="BrokerStart",
                          params={"broker": b, "previousBrokerEpoch": s.previous_broker_epoch},
                          persist=(Persist("clean_shutdown", None), Persist("incarnation", inc),
                                   Persist("log", log)),
                          timers=self.timers())

    def registration_request(self, s: BrokerState) -> Envelope:
        """KIP-966 "Detection of an unclean shutdown" 2: register with the previous broker
        epoch read from the CleanShutdownFile."""
        return self._env(s, self.config.controller,
                         BrokerRegistrationRequest(s.broker_id, s.previous_broker_epoch,
                                                   s.incarnation))

    def fetch_request(self, s: BrokerState) -> Envelope | None:
        """The follower's next Fetch to the leader it knows (None: it knows no other leader)."""
        md = s.metadata
        if md is None or s.is_leader or md.leader not in self.config.brokers:
            return None
        return self._env(s, md.leader, FetchRequest(s.broker_id, s.broker_epoch,
                                                    md.leader_epoch, s.log.end_offset,
                                                    s.log.last_epoch))

    # ---- helpers ----------------------------------------------------------------------
    def _env(self, s: BrokerState, dst: str, payload) -> Envelope:
        return Envelope(s.broker_id, dst, payload)

    @staticmethod
    def log_end_offsets(s: BrokerState) -> dict[str, int]:
        """The leader's log end offset and what it knows of its followers'."""
        leos = {r: p.log_end_offset for r, p in s.followers}
        leos[s.broker_id] = s.log.end_offset
        return leos

    def hwm_isr(self, s: BrokerState) -> frozenset[str]:
        """The replicas the leader's HWM waits for: the maximal ISR (KIP-966 "Additional High
        Watermark advancement requirement": "If maximal ISR > ISR, the message should be
        replicated to the maximal ISR before covering the message under HWM"; for a pending
        shrink the maximal ISR is the committed ISR, the removed follower still counts until
        the controller commits).  The planted bug hwm-on-pending-isr uses the ISR of the
        AlterPartition in flight instead, before the controller committed it."""
        if s.pending_isr is not None and bug_enabled(self.bug, "hwm-on-pending-isr"):
            return s.pending_isr
        return s.maximal_isr

    def next_hwm(self, s: BrokerState, hwm: int) -> int:
        """The leader's HWM rule (rules.next_high_watermark) from `hwm`, over what it has
        learned of its followers' log end offsets (their fetch offsets: a follower's records
        count only from its next fetch)."""
        isr = self.hwm_isr(s)
        committed = s.pending_isr if bug_enabled(self.bug, "hwm-on-pending-isr") and \
            s.pending_isr is not None else s.committed_isr
        return rules.next_high_watermark(
            hwm, self.log_end_offsets(s), committed, isr, s.metadata.min_isr,
            bug_use_maximal_isr=bug_enabled(self.bug, "hwm-on-maximal-isr"))

    def _leader_update(self, s: BrokerState,
                       now_ms: int) -> tuple[BrokerState, tuple[Envelope, ...]]:
        """Recompute the HWM (rules.next_high_watermark) and answer the acks=all requests it
        satisfies (rules.acks_all_satisfied)."""
        md = s.metadata
        leos = self.log_end_offsets(s)
        hwm = self.next_hwm(s, s.hwm)
        s = replace(s, hwm=hwm)
        done, failed, keep = [], [], []
        ack_check = not bug_enabled(self.bug, "ack-below-min-isr")
        isr_size = len(s.pending_isr) if s.pending_isr is not None and \
            bug_enabled(self.bug, "hwm-on-pending-isr") else len(s.committed_isr)
        for a in s.pending_acks:
            if ack_check:
                # Kafka's DelayedProduce: once the HWM passed the record, answer -- success if
                # the ISR has min ISR members (rules.acks_all_satisfied), else
                # NOT_ENOUGH_REPLICAS_AFTER_APPEND.
                if hwm <= a.offset:
                    keep.append(a)
                elif rules.acks_all_satisfied(a.offset, hwm, isr_size, md.min_isr):
                    done.append(a)
                else:
                    failed.append(a)
            else:
                # the bug: "the ISR has it" (every maximal ISR member) without the size check
                on_all = all(leos.get(r, 0) > a.offset for r in s.maximal_isr)
                (done if on_all else keep).append(a)
        if not done and not failed:
            return s, ()
        sends = tuple(self._env(s, a.src, ProduceResponse(
            a.request_id, "NONE", a.offset, a.entry, "all",
            replicas_with_record=sum(1 for v in leos.values() if v > a.offset),
            isr_size=len(s.committed_isr), min_isr=md.min_isr)) for a in done)
        sends += tuple(self._env(s, a.src, ProduceResponse(
            a.request_id, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")) for a in failed)
        return replace(s, pending_acks=tuple(keep)), sends

    def _apply_metadata(self, s: BrokerState, md: PartitionMetadata | None,
                        now_ms: int) -> tuple[BrokerState, tuple[Envelope, ...]]:
        """Adopt newer partition metadata for this incarnation; become leader or follower."""
        if md is None or md.broker_epoch != s.broker_epoch or not s.registered:
            return s, ()
        old = s.metadata
        if old is not None and md.version <= old.version:
            return s, ()
        sends: tuple[Envelope, ...] = ()
        new_epoch = old is None or old.leader_epoch != md.leader_epoch or old.leader != md.leader
        if new_epoch:
            # Leadership changed: drop leader-only state; requests waiting for acks fail with
            # NOT_LEADER (Kafka's DelayedProduce on a leader change).  The planted bug
            # stale-leader-acks acknowledges them instead: the records are in the replaced
            # leader's own log, but nothing says the new leader has them.
            if s.is_leader and bug_enabled(self.bug, "stale-leader-acks"):
                leos = self.log_end_offsets(s)
                sends = tuple(self._env(s, a.src, ProduceResponse(
                    a.request_id, "NONE", a.offset, a.entry, "all",
                    replicas_with_record=sum(1 for v in leos.values() if v > a.offset),
                    isr_size=len(s.committed_isr), min_isr=s.metadata.min_isr))
                    for a in s.pending_acks)
            else:
                sends = tuple(self._env(s, a.src, ProduceResponse(a.request_id, "NOT_LEADER"))
                              for a in s.pending_acks)
            s = replace(s, followers=(), pending_isr=None,
                        pending_acks=(), leader_since_ms=now_ms,
                        leader_epoch_start_offset=s.log.end_offset)
        if not new_epoch and md.view_key() == old.view_key():
            # Nothing of the partition changed (a broker was fenced or unfenced outside it):
            # the leader keeps its state.
            return replace(s, metadata=md), sends
        # A new partition state or topic config (Kafka's Partition.makeLeader / makeFollower /
        # a min ISR change): the committed state replaces the pending one -- the
        # AlterPartition in flight is either committed now or will be rejected, and the
        # leader proposes again from the new ISR -- and the leader applies its HWM rule.
        if new_epoch or md.partition_epoch != old.partition_epoch:
            s = replace(s, pending_isr=None)
        # (only the topic's min ISR changed: the AlterPartition in flight stays pending, as in
        # Kafka -- the controller may still commit it)
        s = replace(s, metadata=md)
        if s.is_leader:
            if new_epoch and self.leader_hwm_start is not None:
                s = replace(s, hwm=self.leader_hwm_start(s))
            s, acks = self._leader_update(s, now_ms)
            sends += acks
        return s, sends

    # ---- inputs -----------------------------------------------------------------------
    def on_message(self, s: BrokerState, src: str, msg, now_ms: int) -> Transition | None:
        if isinstance(msg, BrokerRegistrationResponse):
            return self.on_registered(s, msg, now_ms)
        if isinstance(msg, (BrokerHeartbeatResponse, PartitionMetadata)):
            md = msg.metadata if isinstance(msg, BrokerHeartbeatResponse) else msg
            s2, sends = self._apply_metadata(s, md, now_ms)
            if s2 == s and not sends:
                return None
            return Transition(state=s2, action="ReceiveMetadata",
                              params={"broker": s.broker_id}, sends=sends)
        if isinstance(msg, AlterPartitionResponse):
            return self.on_alter_partition_response(s, msg, now_ms)
        if isinstance(msg, FetchRequest):
            return self.on_fetch(s, src, msg, now_ms)
        if isinstance(msg, FetchResponse):
            return self.on_fetch_response(s, src, msg, now_ms)
        if isinstance(msg, ProduceRequest):
            return self.on_produce(s, src, msg, now_ms)
        if isinstance(msg, GetReplicaLogInfoRequest):
            return self.on_get_log_info(s, src, msg)
        return None

    def on_registered(self, s: BrokerState, msg: BrokerRegistrationResponse,
                      now_ms: int) -> Transition | None:
        if s.registered or msg.incarnation != s.incarnation:
            return None
        s = replace(s, broker_epoch=msg.broker_epoch)
        s, sends = self._apply_metadata(s, msg.metadata, now_ms)
        return Transition(state=s, action="BrokerRegistered",
                          params={"broker": s.broker_id, "brokerEpoch": msg.broker_epoch},
                          sends=sends)

    def on_heartbeat_timer(self, s: BrokerState, now_ms: int) -> Transition:
        c = self.config
        t = (SetTimer(HEARTBEAT_TIMER, c.heartbeat_ms, c.heartbeat_ms // 4),)
        if not s.registered:
            req = BrokerRegistrationRequest(s.broker_id, s.previous_broker_epoch, s.incarnation)
            return Transition(state=s, action="SendBrokerRegistration",
                              params={"broker": s.broker_id}, timers=t,
                              sends=(self._env(s, c.controller, req),))
        req = BrokerHeartbeatRequest(s.broker_id, s.broker_epoch)
        return Transition(state=s, action="SendBrokerHeartbeat", params={"broker": s.broker_id},
                          timers=t, sends=(self._env(s, c.controller, req),))

    def on_hwm_checkpoint_timer(self, s: BrokerState, now_ms: int) -> Transition:
        """The periodic HWM checkpoint (replica.high.watermark.checkpoint.interval.ms).  The
        log itself is not fsynced periodically (Kafka's default flush settings)."""
        c = self.config
        t = (SetTimer(HWM_CHECKPOINT_TIMER, c.hwm_checkpoint_ms, c.hwm_checkpoint_ms),)
        return Transition(state=s, action="CheckpointHighWatermark",
                          params={"broker": s.broker_id}, persist=(Persist("hwm", s.hwm),),
                          timers=t)

    def on_fetch_timer(self, s: BrokerState, now_ms: int) -> Transition:
        t = (SetTimer(FETCH_TIMER, self.config.fetch_ms, self.config.fetch_ms // 2),)
        req = self.fetch_request(s)
        if req is None:
            return Transition(state=s, action="FetchIdle", params={"broker": s.broker_id}, timers=t)
        return Transition(state=s, action="SendFetch", params={"broker": s.broker_id},
                          timers=t, sends=(req,))

    def on_isr_timer(self, s: BrokerState, now_ms: int) -> Transition:
        """The leader shrinks the ISR of a follower that has not caught up with its log end
        within replica.lag.time.max.ms (KIP-966 "ISR invariants": the lagging replica is
        removed; Kafka's isCaughtUp: a follower at the leader's log end offset is in sync), one
        follower per AlterPartition as spec `ShrinkIsr`; and it re-sends an unanswered
        AlterPartition.  A follower that has not fetched from this leader yet counts as lagging
        only once the leader has appended in its epoch (before that its log may equal the
        leader's)."""
        c = self.config
        t = (SetTimer(ISR_TIMER, c.isr_check_ms, c.isr_check_ms // 2),)
        if not s.is_leader:
            return Transition(state=s, action="IsrCheckIdle", params={"broker": s.broker_id}, timers=t)
        md = s.metadata
        if not self._may_propose(s):
            return Transition(state=s, action="IsrCheckIdle", params={"broker": s.broker_id},
                              timers=t)
        prog = s.progress()
        leo = s.log.end_offset

        def lagging(r: str) -> bool:
            p = prog.get(r)
            if p is None:
                return leo > s.leader_epoch_start_offset and \
                    now_ms - s.leader_since_ms > c.replica_lag_ms
            return p.log_end_offset < leo and now_ms - p.last_caught_up_ms > c.replica_lag_ms
        out = next((r for r in c.brokers if r in md.isr and r != s.broker_id and lagging(r)), None)
        if out is None:
            return Transition(state=s, action="IsrCheckIdle", params={"broker": s.broker_id}, timers=t)
        new_isr = md.isr - {out}
        s2, acks = self._leader_update(replace(s, pending_isr=new_isr), now_ms)
        return Transition(state=s2, action="ShrinkIsr",
                          params={"broker": s.broker_id, "follower": out, "isr": new_isr},
                          timers=t, sends=(self._alter(s2, new_isr),) + acks)

    def _may_propose(self, s: BrokerState) -> bool:
        """One AlterPartition at a time (Kafka's AlterPartitionManager: one in flight per
        partition): no proposal pending, and the broker's channel to the controller free."""
        if s.pending_isr is not None:
            return False
        busy = self.alter_channel_busy
        return busy is None or not busy(s.broker_id)

    def _alter(self, s: BrokerState, isr: frozenset[str]) -> Envelope:
        """The AlterPartition request for `isr`, with the leader epoch and partition epoch of
        the leader's view and the members' broker epochs (KIP-903 NewIsrWithEpochs: its own,
        and each follower's from its last fetch; 0 = unknown, not checked)."""
        md = s.metadata
        prog = s.progress()
        epochs = frozenset((m, s.broker_epoch if m == s.broker_id else
                            (prog[m].broker_epoch if m in prog else 0)) for m in isr)
        return self._env(s, self.config.controller,
                         AlterPartitionRequest(s.broker_id, s.broker_epoch, md.leader_epoch,
                                               md.partition_epoch, isr, epochs))

    def on_alter_partition_response(self, s: BrokerState, msg: AlterPartitionResponse,
                                    now_ms: int) -> Transition | None:
        """The answer to this incarnation's AlterPartition.  NONE with a partition state newer
        than the leader's view commits the proposal in its view (Kafka adopts the response's
        ISR and partition epoch); otherwise -- an error (FENCED_LEADER_EPOCH,
        INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA: the request was not applied), or metadata
        that already brought a newer state -- the pending ISR is dropped and the leader
        proposes again from its view later, or learns the new state from the metadata."""
        md = s.metadata
        if md is None or msg.broker_epoch != s.broker_epoch:
            return None                   # an answer to a previous incarnation: lost
        ok = msg.error == "NONE" and s.pending_isr is not None and msg.metadata is not None \
            and msg.metadata.partition_epoch > md.partition_epoch
        s2 = replace(s, pending_isr=None)
        sends: tuple[Envelope, ...] = ()
        if ok:
            s2, sends = self._apply_metadata(s2, msg.metadata, now_ms)
        elif s2.is_leader:
            s2, sends = self._leader_update(s2, now_ms)
        return Transition(state=s2, action="ReceiveAlterPartitionResponse",
                          params={"broker": s.broker_id, "error": msg.error}, sends=sends)

    def on_fetch(self, s: BrokerState, src: str, req: FetchRequest,
                 now_ms: int) -> Transition | None:
        """The leader serves a follower's fetch: divergence check, follower progress, HWM,
        acks, then ISR expansion (a follower in sync -- its fetch offset at the HWM and the
        leader epoch's start, Kafka's isFollowerInSync -- is proposed for the ISR: the maximal
        ISR grows at once, the committed ISR when the controller answers)."""
        if req.replica_id == s.broker_id or req.replica_id not in self.config.brokers or \
                not s.registered:
            return None
        md = s.metadata
        err = None
        if not s.is_leader:
            err = "NOT_LEADER_OR_FOLLOWER"         # this broker's view: not the leader
        elif req.leader_epoch < md.leader_epoch:
            err = "FENCED_LEADER_EPOCH"            # the follower's view is stale
        elif req.leader_epoch > md.leader_epoch:
            err = "UNKNOWN_LEADER_EPOCH"           # the leader's own view is stale
        else:
            old = s.progress().get(req.replica_id)
            if old is not None and old.broker_epoch > req.replica_broker_epoch:
                err = "STALE_BROKER_EPOCH"         # a fetch of the follower's previous life
        if err is not None:
            resp = FetchResponse(md.leader_epoch if md else 0, err, req.fetch_offset,
                                 last_fetched_epoch=req.last_fetched_epoch)
            return Transition(state=s, action="RejectFetch",
                              params={"broker": s.broker_id, "error": err},
                              sends=(self._env(s, src, resp),))
        if not s.log.matches(req.fetch_offset, req.last_fetched_epoch):
            e, end = s.log.end_offset_for_epoch(req.last_fetched_epoch)
            resp = FetchResponse(md.leader_epoch, "NONE", req.fetch_offset, (), s.hwm, e, end,
                                 req.last_fetched_epoch)
            return Transition(state=s, action="HandleFetchDiverging",
                              params={"broker": s.broker_id, "follower": req.replica_id},
                              sends=(self._env(s, src, resp),))
        prog = s.progress()
        old = prog.get(req.replica_id)
        caught_up = req.fetch_offset >= s.log.end_offset
        last = now_ms if caught_up else (
            old.last_caught_up_ms if old and old.broker_epoch == req.replica_broker_epoch
            else s.leader_since_ms)
        prog[req.replica_id] = FollowerProgress(req.replica_broker_epoch, req.fetch_offset, last)
        s = replace(s, followers=tuple(sorted(prog.items())))
        s, acks = self._leader_update(s, now_ms)
        entries = s.log.entries[req.fetch_offset:]
        resp = FetchResponse(md.leader_epoch, "NONE", req.fetch_offset, entries, s.hwm,
                             last_fetched_epoch=req.last_fetched_epoch)
        t = Transition(state=s, action="HandleFetch",
                       params={"broker": s.broker_id, "follower": req.replica_id,
                               "fetchOffset": req.fetch_offset},
                       sends=(self._env(s, src, resp),) + acks)
        live = md.live(req.replica_id)
        # In sync (Kafka's Partition.isFollowerInSync, spec `ProposeIsrExpand`): the fetch
        # offset reaches the HWM (after this fetch's update) and the start offset of this
        # leader epoch -- not necessarily the leader's log end (KIP-966 "Additional High
        # Watermark advancement requirement": the replica joins the maximal ISR and the HWM
        # then waits for it).  The planted bug isr-expand-off-by-one asks for a fetch offset
        # beyond the leader's log end instead, which never happens.
        in_sync = (req.fetch_offset > s.log.end_offset
                   if bug_enabled(self.bug, "isr-expand-off-by-one") else
                   req.fetch_offset >= max(s.hwm, s.leader_epoch_start_offset))
        if (req.replica_id in s.maximal_isr or not self._may_propose(s) or not in_sync
                or live is None or live[1] != req.replica_broker_epoch):
            return t
        # In sync and eligible: unfenced with the broker epoch the fetch named, as the
        # leader's metadata cache says (KIP-841, KIP-903: Kafka's isReplicaIsrEligible).  The
        # maximal ISR grows at once, the committed ISR when the controller answers (a step of
        # its own: spec `ProposeIsrExpand`, after the fetch and its HWM update).
        new_isr = md.isr | {req.replica_id}
        s2, acks2 = self._leader_update(replace(s, pending_isr=new_isr), now_ms)
        propose = Transition(state=s2, action="ProposeIsrExpand",
                             params={"broker": s.broker_id, "follower": req.replica_id,
                                     "isr": new_isr},
                             sends=(self._alter(s2, new_isr),) + acks2)
        return replace(t, chain=((s.broker_id, propose),))

    def on_fetch_response(self, s: BrokerState, src: str, resp: FetchResponse,
                          now_ms: int) -> Transition | None:
        md = s.metadata
        if md is None or s.is_leader or src != md.leader or resp.leader_epoch != md.leader_epoch \
                or resp.error != "NONE" or resp.fetch_offset != s.log.end_offset \
                or resp.last_fetched_epoch != s.log.last_epoch:
            return None
        if resp.diverging_epoch is not None:
            # Truncate to min(leader's end offset for the epoch, ours), always making progress.
            _, own_end = s.log.end_offset_for_epoch(resp.diverging_epoch)
            to = min(resp.diverging_end_offset, own_end, s.log.end_offset - 1)
            log = s.log.truncate(to)
            s2 = replace(s, log=log, hwm=min(s.hwm, log.end_offset))
            return Transition(state=s2, action="TruncateLog",
                              params={"broker": s.broker_id, "to": log.end_offset},
                              persist=(Persist("log", log),))
        log = s.log.append(resp.entries)
        hwm = max(s.hwm, min(resp.high_watermark, log.end_offset))
        s2 = replace(s, log=log, hwm=hwm)
        if s2 == s:
            return Transition(state=s, action="HandleFetchResponse", params={"broker": s.broker_id})
        persist = (Persist("log", log),) if resp.entries else ()
        return Transition(state=s2, action="HandleFetchResponse",
                          params={"broker": s.broker_id, "appended": len(resp.entries)},
                          persist=persist)

    def on_produce(self, s: BrokerState, src: str, req: ProduceRequest,
                   now_ms: int) -> Transition | None:
        """The leader appends a record.  acks=1 ("one") is answered once the record is in the leader's
        log; acks=all needs an ISR of at least min ISR (checked on arrival, as Kafka does) and
        waits for rules.acks_all_satisfied."""
        if not s.is_leader:
            return Transition(state=s, action="RejectProduce", params={"broker": s.broker_id},
                              sends=(self._env(s, src, ProduceResponse(req.request_id, "NOT_LEADER")),))
        md = s.metadata
        check = not bug_enabled(self.bug, "ack-below-min-isr")
        acks = req.acks
        if acks == ACKS_ALL_OR_ONE:   # spec abstraction A7 (the buggy leader takes acks=all)
            acks = "all" if len(md.isr) >= md.min_isr or not check else "one"
        if acks == "all" and len(md.isr) < md.min_isr and check:
            return Transition(state=s, action="RejectProduce", params={"broker": s.broker_id},
                              sends=(self._env(s, src, ProduceResponse(req.request_id,
                                                                       "NOT_ENOUGH_REPLICAS")),))
        if self.config.max_log_len is not None and s.log.end_offset >= self.config.max_log_len:
            return None
        entry = LogEntry(md.leader_epoch, req.value)
        offset = s.log.end_offset
        s = replace(s, log=s.log.append((entry,)))
        sends: tuple[Envelope, ...] = ()
        if acks == "all":
            s = replace(s, pending_acks=s.pending_acks + (PendingAck(src, req.request_id, offset, entry),))
        else:
            sends += (self._env(s, src, ProduceResponse(req.request_id, "NONE", offset, entry, "one")),)
        s, done = self._leader_update(s, now_ms)
        return Transition(state=s, action="Produce",
                          params={"broker": s.broker_id, "value": req.value, "acks": acks},
                          sends=sends + done, persist=(Persist("log", s.log),))

    def on_get_log_info(self, s: BrokerState, src: str,
                        req: GetReplicaLogInfoRequest) -> Transition | None:
        """KIP-966 "GetReplicaLogInfo Response": the broker epoch, the last written leader
        epoch, the current leader epoch from the metadata cache, and the log end offset."""
        if not s.registered:
            return None
        resp = GetReplicaLogInfoResponse(s.broker_id, s.broker_epoch, s.log.last_epoch,
                                         s.metadata.leader_epoch if s.metadata else 0,
                                         s.log.end_offset)
        return Transition(state=s, action="SendGetReplicaLogInfoResponse",
                          params={"broker": s.broker_id}, sends=(self._env(s, src, resp),))

    def graceful_shutdown(self, s: BrokerState, now_ms: int) -> Transition:
        """A clean shutdown: flush the log, write the CleanShutdownFile with the current broker
        epoch (-1 if not registered yet; KIP-966 "Detection of an unclean shutdown" 1 and 4),
        and ask the controller to fence us (controlled shutdown)."""
        log = s.log.flush()
        s2 = replace(s, log=log)
        sends = ()
        if s.registered:
            sends = (self._env(s, self.config.controller,
                               BrokerHeartbeatRequest(s.broker_id, s.broker_epoch, True)),)
        return Transition(state=s2, action="CleanShutdown",
                          params={"broker": s.broker_id, "brokerEpoch": s.broker_epoch},
                          persist=(Persist("log", log), Persist("hwm", s.hwm),
                                   Persist("clean_shutdown", s.broker_epoch)),
                          sends=sends)
