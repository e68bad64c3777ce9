"""KIP-595 RPCs as frozen dataclasses (single topic-partition: the metadata log).

Field names follow the KIP's JSON schemas in snake_case.  Ids are node-name strings; the KIP's
-1 ("no leader" / "not voted") is None.  `LastOffset` in VoteRequest is the candidate's log end
offset (as in Kafka's implementation), which is what the up-to-date comparison needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from refimpl.kraft.log import Record

__all__ = [
    "Errors",
    "VoteRequest", "VoteResponse",
    "BeginQuorumEpochRequest", "BeginQuorumEpochResponse",
    "EndQuorumEpochRequest",
    "FetchRequest", "FetchResponse",
    "DescribeQuorumRequest", "DescribeQuorumResponse", "ReplicaState",
    "AlterPartitionReassignmentsRequest", "AlterPartitionReassignmentsResponse",
    "Message",
]


class Errors(str, Enum):
    """The error codes KIP-595 uses (section "Leader Election and Data Replication")."""

    NONE = "NONE"
    FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
    UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
    OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
    NOT_LEADER_FOR_PARTITION = "NOT_LEADER_FOR_PARTITION"  # DescribeQuorum (KIP-595)
    NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"      # Fetch to a non-leader (Kafka's name)
    INVALID_QUORUM_STATE = "INVALID_QUORUM_STATE"
    INCONSISTENT_VOTER_SET = "INCONSISTENT_VOTER_SET"
    INVALID_CLUSTER_ID = "INVALID_CLUSTER_ID"
    # a malformed request (Kafka's INVALID_REQUEST): negative offsets or epochs, or a
    # LastOffsetEpoch / LastFetchedEpoch beyond the request's own epoch
    INVALID_REQUEST = "INVALID_REQUEST"
    # KIP-595 early revision "New Error Codes" / KIP-642 draft step 5: a removed voter's Fetch
    NOT_FOLLOWER = "NOT_FOLLOWER"


@dataclass(frozen=True)
class VoteRequest:
    cluster_id: str | None
    candidate_epoch: int
    candidate_id: str
    last_offset_epoch: int
    last_offset: int


@dataclass(frozen=True)
class VoteResponse:
    error: Errors
    leader_id: str | None
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True)
class BeginQuorumEpochRequest:
    cluster_id: str | None
    leader_id: str
    leader_epoch: int


@dataclass(frozen=True)
class BeginQuorumEpochResponse:
    error: Errors
    leader_id: str | None
    leader_epoch: int


@dataclass(frozen=True)
class EndQuorumEpochRequest:
    cluster_id: str | None
    replica_id: str
    leader_id: str | None          # None (-1) when a candidate ends its election
    leader_epoch: int
    preferred_successors: tuple[str, ...]


@dataclass(frozen=True)
class FetchRequest:
    cluster_id: str | None
    replica_id: str
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True)
class FetchResponse:
    error: Errors
    leader_id: str | None          # CurrentLeader.LeaderId
    leader_epoch: int              # CurrentLeader.LeaderEpoch
    high_watermark: int
    fetch_offset: int              # echoes the request, so a stale/duplicate response is detected
    last_fetched_epoch: int
    records: tuple[Record, ...] = ()
    diverging_epoch: tuple[int, int] | None = None  # (Epoch, EndOffset)


@dataclass(frozen=True)
class DescribeQuorumRequest:
    pass


@dataclass(frozen=True)
class ReplicaState:
    replica_id: str
    log_end_offset: int  # -1 if unknown


@dataclass(frozen=True)
class DescribeQuorumResponse:
    error: Errors
    leader_id: str | None
    leader_epoch: int
    high_watermark: int
    current_voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]
    # KIP-642 draft "DescribeQuorum" (its NEW FIELD): the pending reassignment's TargetVoters
    # with the leader's view of their progress; None when none is pending (TargetVoters null)
    # and for KIP-595's static quorum
    target_voters: tuple[ReplicaState, ...] | None = None


@dataclass(frozen=True)
class AlterPartitionReassignmentsRequest:
    """KIP-642 draft "AlterPartitionReassignments" (the early revision's AlterQuorum), sent by
    the admin client: the desired TargetVoters; None is the request's Replicas set to null,
    which cancels a pending reassignment (draft "Cancellation")."""

    target_voters: tuple[str, ...] | None


@dataclass(frozen=True)
class AlterPartitionReassignmentsResponse:
    error: Errors                  # NONE, or NOT_LEADER_OR_FOLLOWER (the draft's NOT_LEADER_FOR_PARTITION)
    target_voters: tuple[str, ...] | None   # the request's (None: a cancellation)
    leader_id: str | None


Message = (VoteRequest | VoteResponse | BeginQuorumEpochRequest | BeginQuorumEpochResponse
           | EndQuorumEpochRequest | FetchRequest | FetchResponse | DescribeQuorumRequest
           | DescribeQuorumResponse | AlterPartitionReassignmentsRequest
           | AlterPartitionReassignmentsResponse)
