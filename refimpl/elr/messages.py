"""The messages of the ELR protocol, as frozen dataclasses (one per request / response).

Controller <-> broker: BrokerRegistration (with PreviousBrokerEpoch, KIP-966 "BrokerRegistration
API"), BrokerHeartbeat, AlterPartition, GetReplicaLogInfo (KIP-966 "GetReplicaLogInfo Request /
Response"), and the partition metadata the controller publishes (in KRaft: the metadata log the
brokers replay; here a PartitionMetadata push, repeated in every heartbeat response so that a
lost push is repaired).  Broker <-> broker: Fetch.  Client <-> leader: Produce.  Admin ->
controller: AlterMinIsr (incrementalAlterConfigs of min.insync.replicas).
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import LogEntry

__all__ = [
    "BrokerRegistrationRequest", "BrokerRegistrationResponse",
    "BrokerHeartbeatRequest", "BrokerHeartbeatResponse",
    "PartitionMetadata",
    "AlterPartitionRequest", "AlterPartitionResponse",
    "GetReplicaLogInfoRequest", "GetReplicaLogInfoResponse",
    "FetchRequest", "FetchResponse",
    "ProduceRequest", "ProduceResponse",
    "AlterMinIsrRequest",
    "ACKS_ALL_OR_ONE",
]

#: ProduceRequest.acks of a producer following spec/ELR.tla's abstraction A7: acks=all when
#: the leader's ISR has min ISR members, acks=1 otherwise (the producer's fallback to acks=1
#: after NOT_ENOUGH_REPLICAS, folded into one request).
ACKS_ALL_OR_ONE = "all-or-one"


@dataclass(frozen=True)
class BrokerRegistrationRequest:
    broker_id: str
    previous_broker_epoch: int   # from the CleanShutdownFile, -1 if none
    incarnation: int             # distinguishes restarts (Kafka: IncarnationId)


@dataclass(frozen=True)
class BrokerRegistrationResponse:
    broker_id: str
    incarnation: int
    broker_epoch: int
    metadata: "PartitionMetadata | None" = None   # the metadata the new incarnation starts from


@dataclass(frozen=True)
class BrokerHeartbeatRequest:
    broker_id: str
    broker_epoch: int
    want_shutdown: bool = False  # controlled shutdown: fence me now


@dataclass(frozen=True)
class PartitionMetadata:
    """The partition's state as published to broker `broker_epoch` (the recipient's epoch, so a
    restarted broker ignores pushes meant for its previous incarnation).  `version` orders the
    pushes (Kafka: the metadata log offset), so an older copy (a heartbeat response) never
    overwrites a newer one.  `live_brokers` are the unfenced brokers as (id, broker epoch,
    fence epoch): the leader adds only unfenced replicas to the ISR (KIP-841) and names their
    epochs in the AlterPartition (KIP-903)."""

    broker_epoch: int
    leader: str
    leader_epoch: int
    partition_epoch: int
    isr: frozenset[str]
    min_isr: int                 # the effective min.insync.replicas
    version: int = 0
    live_brokers: frozenset[tuple[str, int, int]] = frozenset()
    # the ELR (PartitionRecord.EligibleLeaderReplicas): brokers see it, but "Both the follower
    # and the leader don't have any new behavior to handle ELR" (KIP-966 "Broker behaviors")
    elr: frozenset[str] = frozenset()
    # the topic's min.insync.replicas as configured (a ConfigRecord in the same metadata log;
    # `min_isr` above is the effective one the leader applies)
    topic_min_isr: int = 0

    def view_key(self) -> tuple:
        """What of the partition a broker acts on (spec View): a push that changes none of it
        (a broker fenced or unfenced outside the ISR) changes nothing the broker does."""
        return (self.leader, self.leader_epoch, self.partition_epoch, self.isr, self.elr,
                self.topic_min_isr)

    def live(self, b: str) -> tuple[str, int, int] | None:
        return next((x for x in self.live_brokers if x[0] == b), None)


@dataclass(frozen=True)
class BrokerHeartbeatResponse:
    broker_epoch: int
    fenced: bool
    metadata: PartitionMetadata


@dataclass(frozen=True)
class AlterPartitionRequest:
    broker_id: str
    broker_epoch: int
    leader_epoch: int
    partition_epoch: int
    new_isr: frozenset[str]
    # KIP-903 NewIsrWithEpochs: (member, broker epoch) for every proposed member; the leader's
    # own epoch, and each follower's from its last fetch (0 = unknown: not checked)
    broker_epochs: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True)
class AlterPartitionResponse:
    error: str                   # "NONE", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", ...
    metadata: PartitionMetadata | None
    # which request this answers (Kafka matches responses to requests by correlation id),
    # and the broker epoch of the incarnation that sent it
    request_isr: frozenset[str] = frozenset()
    request_partition_epoch: int = -1
    broker_epoch: int = -1


@dataclass(frozen=True)
class GetReplicaLogInfoRequest:
    leader_epoch: int            # the controller's partition leader epoch


@dataclass(frozen=True)
class GetReplicaLogInfoResponse:
    broker_id: str
    broker_epoch: int
    last_written_leader_epoch: int
    current_leader_epoch: int
    log_end_offset: int


@dataclass(frozen=True)
class FetchRequest:
    replica_id: str
    replica_broker_epoch: int
    leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True)
class FetchResponse:
    leader_epoch: int
    error: str                   # "NONE", "FENCED_LEADER_EPOCH", "NOT_LEADER"
    fetch_offset: int = 0
    entries: tuple[LogEntry, ...] = ()
    high_watermark: int = 0
    diverging_epoch: int | None = None     # set when the follower must truncate
    diverging_end_offset: int = 0
    # the request's last fetched epoch: with fetch_offset, the log position it answers (a
    # delayed answer to an earlier fetch from another log at the same offset is ignored)
    last_fetched_epoch: int = 0


@dataclass(frozen=True)
class ProduceRequest:
    request_id: int
    value: str
    acks: str                    # "all", "one" or ACKS_ALL_OR_ONE


@dataclass(frozen=True)
class ProduceResponse:
    request_id: int
    error: str                   # "NONE", "NOT_LEADER", "NOT_ENOUGH_REPLICAS"
    offset: int = -1
    entry: LogEntry | None = None
    acks: str = "all"
    # ghosts for the monitor (what the leader knew when it acknowledged an acks=all record)
    replicas_with_record: int = 0
    isr_size: int = 0
    min_isr: int = 0


@dataclass(frozen=True)
class AlterMinIsrRequest:
    min_isr: int
