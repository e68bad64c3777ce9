"""Typed values shared by the ELR nodes: log entries, the controller's partition state, broker
registrations, and the configuration.

Names follow KIP-966 ("Proposed Changes" and "Public Interfaces": PartitionRecord /
PartitionChangeRecord fields EligibleLeaderReplicas, LastKnownELR, LastKnownLeader).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = [
    "NO_LEADER",
    "NO_EPOCH",
    "AGGRESSIVE",
    "BALANCED",
    "NONE",
    "STRATEGIES",
    "LogEntry",
    "PartitionState",
    "BrokerRegistration",
    "ElrConfig",
]

#: No leader / no last known leader (the records' -1); the spec's model value NoBroker.
NO_LEADER = "NoBroker"
#: "if the broker shuts down before it receives the broker epoch, it will write -1"
#: (KIP-966 "Detection of an unclean shutdown", 4).
NO_EPOCH = -1

# unclean.recovery.strategy (KIP-966 "Unclean recovery", "Config changes").
AGGRESSIVE = "Aggressive"
BALANCED = "Balanced"
NONE = "None"
STRATEGIES = (AGGRESSIVE, BALANCED, NONE)


@dataclass(frozen=True, order=True)
class LogEntry:
    """One record of the partition's log: the leader epoch it was written in and its value."""

    epoch: int
    value: str


@dataclass(frozen=True)
class PartitionState:
    """The controller's state of the one partition (PartitionRecord + PartitionChangeRecord).

    `isr` and `elr` are disjoint (KIP-966 "ELR invariants"); `last_known_elr` holds ELR members
    removed after an unclean shutdown ("Other behaviors" 6); `last_known_leader` is the last ISR
    member recorded when it was fenced ("Other behaviors" 7).
    """

    replicas: tuple[str, ...]
    leader: str = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: frozenset[str] = frozenset()
    elr: frozenset[str] = frozenset()
    last_known_elr: frozenset[str] = frozenset()
    last_known_leader: str = NO_LEADER

    def with_(self, **kw) -> "PartitionState":
        return replace(self, **kw)


@dataclass(frozen=True)
class BrokerRegistration:
    """The controller's registration record of one broker (KIP-966 "BrokerRegistration API").

    `fence_epoch` counts the times the controller fenced this broker (session expiry,
    controlled shutdown, a new incarnation registering).  A leader's ISR expansion names the
    broker epoch and fence epoch of the replica it adds (KIP-903 names the broker epoch), so an
    expansion is void once that replica has been fenced, even if it is unfenced again before
    the request arrives (spec/ELR.tla abstraction A2: the in-flight AlterPartition is dropped
    when the controller fences a proposed member)."""

    broker_id: str
    broker_epoch: int
    fenced: bool = True
    last_heartbeat_ms: int = 0
    fence_epoch: int = 0


@dataclass(frozen=True)
class ElrConfig:
    """Everything fixed for a run: the cluster, the topic configs, the timing and the bug.

    `min_isr` is min.insync.replicas at start (it can be changed by an admin input);
    `elr_enabled` is eligible.leader.replicas.enabled (False gives pre-KIP-966 behaviour:
    no ELR, the ISR never shrinks to empty, registrations are not checked for clean shutdowns);
    `strategy` is unclean.recovery.strategy and `manager_enabled` unclean.recovery.manager.enabled
    (False: the "Delivery plan" phase 1 -- Aggressive is a random unclean election, Balanced
    waits for the LastKnownLeader).
    """

    brokers: tuple[str, ...] = ("b1", "b2", "b3")
    controller: str = "ctrl"
    producer: str = "client"
    min_isr: int = 2
    elr_enabled: bool = True
    strategy: str = BALANCED
    manager_enabled: bool = True            # unclean.recovery.manager.enabled
    values: tuple[str, ...] = ("v1", "v2", "v3")
    max_log_len: int | None = None          # bounded mode: MaxLogLength
    # MaxUncleanShutdowns: power losses beyond it are plain crashes.  None: min ISR - 1, the
    # KIP's fault model ("MinISR-1 tolerance to data loss unclean shutdown events").
    max_unclean_shutdowns: int | None = None
    max_leader_epoch: int | None = None     # bounded mode: MaxLeaderEpoch
    max_broker_epoch: int | None = None     # bounded mode: MaxBrokerEpoch
    max_partition_epoch: int | None = None  # bounded mode: MaxPartitionEpoch
    # "spec": spec/ELR.tla's abstraction A7 -- the producer asks for acks=all and falls back
    # to acks=1 when the leader's ISR is below min ISR (the leader decides, see
    # messages.ACKS_ALL_OR_ONE); "mixed": acks=all or acks=1 at random (acks=1 records while
    # the ISR is healthy are outside spec/ELR.tla, so such traces do not refine it).
    acks_policy: str = "spec"
    fence_running_brokers: bool = True      # FenceRunningBrokers (see adapter)
    # LeaderCacheIsrEligibility: the spec's View carries the broker registrations of the
    # broker's metadata cache (projection only: the leader always checks its cache, KIP-841/903)
    view_registrations: bool = False
    # FetchTriggeredIsrExpand: the spec's ProposeIsrExpand step is the follower's fetch round
    # with the leader's proposal (trace steps only: the leader always proposes within the
    # fetch, Kafka's maybeExpandIsr in updateFollowerFetchState, KIP-841)
    fetch_triggered_expand: bool = False
    min_isr_choices: tuple[int, ...] = ()   # values an admin may set min.insync.replicas to
    # timing (virtual ms)
    heartbeat_ms: int = 100
    session_timeout_ms: int = 450
    session_check_ms: int = 100
    fetch_ms: int = 50
    replica_lag_ms: int = 400
    isr_check_ms: int = 100
    hwm_checkpoint_ms: int = 1500           # replica.high.watermark.checkpoint.interval.ms
    recovery_timeout_ms: int = 500
    bug: str | None = None

    @property
    def replication_factor(self) -> int:
        return len(self.brokers)

    @property
    def unclean_shutdown_budget(self) -> int:
        if self.max_unclean_shutdowns is not None:
            return self.max_unclean_shutdowns
        return max(0, min(self.min_isr, self.replication_factor) - 1)
