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
    """The controller's registration record of one broker (KIP-966 "BrokerRegistration API")."""

    broker_id: str
    broker_epoch: int
    fenced: bool = True
    last_heartbeat_ms: int = 0


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
    # "mixed": the producer picks acks=all or acks=1 at random; "spec": spec/ELR.tla's
    # abstraction A7 -- acks=all whenever the ISR has min ISR members, else acks=1.
    acks_policy: str = "mixed"
    fence_running_brokers: bool = True      # FenceRunningBrokers (see adapter.sim_limits)
    min_isr_choices: tuple[int, ...] = ()   # values an admin may set min.insync.replicas to
    # timing (virtual ms)
    heartbeat_ms: int = 100
    session_timeout_ms: int = 450
    session_check_ms: int = 100
    fetch_ms: int = 50
    replica_lag_ms: int = 400
    isr_check_ms: int = 100
    flush_ms: int = 1500
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
