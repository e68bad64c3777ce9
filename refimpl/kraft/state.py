"""The state of one KIP-595 replica: persisted part (quorum-state file, log, meta.properties)
and volatile part (role bookkeeping).  Immutable: handlers build new values with `replace`.

Roles follow Kafka's KafkaRaftClient: Unattached (epoch known, no leader, no vote), Voted
(voted in this epoch), Candidate, Leader, Follower (knows the leader of its epoch).  Observers
(replicas not in quorum.voters) only ever are Unattached or Follower.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from kraftcheck.values import Fn
from refimpl.kraft.log import Log

__all__ = ["Role", "QuorumStateFile", "NodeState", "replace",
           "QUORUM_STATE", "LOG", "META_PROPERTIES"]

# Keys of the node's disk (what the driver persists).
QUORUM_STATE = "quorum-state"
LOG = "log"
META_PROPERTIES = "meta.properties"


class Role(str, Enum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"


@dataclass(frozen=True)
class QuorumStateFile:
    """KIP-595 "Quorum State": the QuorumStateMessage (AppliedOffset is not modelled)."""

    leader_id: str | None
    leader_epoch: int
    voted_id: str | None
    current_voters: tuple[str, ...]


@dataclass(frozen=True)
class NodeState:
    node_id: str
    role: Role
    epoch: int
    leader_id: str | None
    voted_id: str | None
    log: Log
    high_watermark: int
    cluster_id: str | None                  # meta.properties (None until known committed)
    # candidate
    votes_granted: frozenset = frozenset()
    votes_rejected: frozenset = frozenset()
    election_retries: int = 0
    backing_off: bool = False
    # leader
    epoch_start_offset: int = 0
    replica_end_offsets: Fn = Fn()          # replica -> last fetch offset seen (log end offset)
    endorsed: frozenset = frozenset()       # voters that endorsed this leader (BeginQuorumEpoch)
    fetched_since_check: frozenset = frozenset()  # voters that fetched since the last progress check
    # follower / observer
    fetch_attempt: int = 0                  # rotates the voter asked when the leader is unknown
    fetch_pending: bool = False

    def quorum_state(self, voters: tuple[str, ...], persist_vote: bool = True) -> QuorumStateFile:
        return QuorumStateFile(self.leader_id, self.epoch,
                               self.voted_id if persist_vote else None, voters)
