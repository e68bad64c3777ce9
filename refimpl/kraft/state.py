"""The state of one KIP-595 replica: persisted part (quorum-state file, log, meta.properties)
and volatile part (role bookkeeping).  Immutable: handlers build new values with `replace`.

Roles follow Kafka's KafkaRaftClient and the spec: Unattached (epoch known, no leader, no vote),
Voted (voted in this epoch), Candidate, Leader, Follower (knows the leader of its epoch),
Resigned (a leader that sent EndQuorumEpoch, or restarted after leading: it must not lead that
epoch again) and Shutdown (stopped by a fatal INVALID_CLUSTER_ID; terminal).  Observers
(replicas not in quorum.voters) only ever are Unattached, Follower or Shutdown.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum

from kraftcore.values import Fn
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
    RESIGNED = "Resigned"
    SHUTDOWN = "Shutdown"


@dataclass(frozen=True)
class QuorumStateFile:
    """KIP-595 "Quorum State": the QuorumStateMessage (AppliedOffset is not modelled)."""

    leader_id: str | None
    leader_epoch: int
    voted_id: str | None
    current_voters: tuple[str, ...]
    # KIP-642 draft "Changes to Quorum State": the offset after the VoterAssignment record
    # CurrentVoters comes from (0: the bootstrap voters); a restart scans forward from it
    applied_offset: int = 0


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
    # leader
    epoch_start_offset: int = 0
    # voter -> largest end offset known to be shared with the leader's log; absent = -1 (the
    # voter has not endorsed the leader yet, so BeginQuorumEpoch is still sent to it)
    follower_end_offset: Fn = Fn()
    fetched_since_check: frozenset = frozenset()  # voters that fetched since the last progress check
    # KIP-642 leader (refimpl/kraft/reassign_node.py): TargetVoters not yet voters whose valid
    # Fetch reached the HWM in the current promotion window and in the one before it (the
    # draft's "Observer Promotion": promote "when one replication round is less than election
    # timeout"); not spec variables
    caught_up_now: frozenset = frozenset()
    caught_up_before: frozenset = frozenset()
    # follower / observer
    fetch_attempt: int = 0                  # rotates the voter asked when the leader is unknown
    fetch_pending: bool = False
    # observer: quorum.fetch.timeout.ms passed without a successful Fetch from its leader, so
    # it asks the voters in turn until one names the new leader (Kafka's observer poll)
    rediscovering: bool = False
    # leader: replica -> FetchOffset of its last valid Fetch (DescribeQuorum's LogEndOffset,
    # as Kafka's LeaderState.ReplicaState.endOffset: it may go down after a truncation or a
    # late request; follower_end_offset above is the spec's never-decreasing one)
    last_fetch_offset: Fn = Fn()
    # a fatal error stopped the replica (Kafka throws from the raft IO thread), e.g. a
    # DivergingEpoch that would truncate below the high watermark
    fatal_error: str | None = None
    # KIP-642 (refimpl/kraft/reassign_node.py): the voter set the replica acts on, derived
    # from its own log; None for KIP-595's static quorum.voters
    voter_set: tuple[str, ...] | None = None
    # KIP-642 quorum-state CurrentVoters / AppliedOffset (1-based index of the committed
    # VoterAssignment record, 0: the bootstrap voters); None for KIP-595
    qs_voters: tuple[str, ...] | None = None
    qs_offset: int = 0

    def quorum_state(self, voters: tuple[str, ...], persist_vote: bool = True,
                     applied_offset: int = 0) -> QuorumStateFile:
        return QuorumStateFile(self.leader_id, self.epoch,
                               self.voted_id if persist_vote else None, voters, applied_offset)


_FIELDS = frozenset(f.name for f in fields(NodeState))


def replace(s: NodeState, **kw) -> NodeState:
    """dataclasses.replace for NodeState, without re-running __init__ (hot path)."""
    if not _FIELDS.issuperset(kw):
        raise TypeError(f"NodeState has no field(s) {sorted(set(kw) - _FIELDS)}")
    new = object.__new__(NodeState)
    d = new.__dict__
    d.update(s.__dict__)
    d.update(kw)
    return new
