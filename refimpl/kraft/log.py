"""The replicated metadata log (KIP-595 "Log Structure"): an immutable tuple of records.

Offsets are 0-based (Kafka); a log of n records has end offset n.  Every record carries the
epoch of the leader that appended it.  Control records (the LeaderChange message of KIP-595
"Vote Response Handling") carry a `LeaderChange` payload instead of a client value.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LeaderChange", "VoterAssignment", "Record", "Log", "last_epoch", "end_offset", "end_offset_for_epoch",
           "truncate_to"]


@dataclass(frozen=True)
class LeaderChange:
    """The LeaderChangeMessage control record (Type=3): ClusterId, LeaderId, VotedIds."""

    cluster_id: str
    leader_id: str
    voted_ids: tuple[str, ...]


@dataclass(frozen=True)
class VoterAssignment:
    """The VoterAssignmentMessage control record (KIP-642 draft "Quorum Reassignment", Type=2):
    ClusterId, CurrentVoters and the nullable TargetVoters (None: no reassignment pending).
    Voter ids are kept sorted, so equal sets give equal records."""

    cluster_id: str
    current_voters: tuple[str, ...]
    target_voters: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Record:
    epoch: int
    value: str | None = None              # a client record
    control: LeaderChange | VoterAssignment | None = None   # a control record


Log = tuple  # tuple[Record, ...]


def last_epoch(log: Log) -> int:
    """The epoch of the last record, 0 for an empty log."""
    return log[-1].epoch if log else 0


def end_offset(log: Log) -> int:
    return len(log)


def end_offset_for_epoch(log: Log, epoch: int) -> tuple[int, int]:
    """Kafka's endOffsetForEpoch: the largest epoch <= `epoch` present in the log and the offset
    just after its last record.  (0, 0) when no record has an epoch <= `epoch`."""
    # scan backwards: logs are short in simulation and epochs are non-decreasing along the log
    for i in range(len(log) - 1, -1, -1):
        e = log[i].epoch
        if e <= epoch:
            return e, i + 1
    return 0, 0


def truncate_to(log: Log, offset: int) -> Log:
    return log[:offset] if offset < len(log) else log
