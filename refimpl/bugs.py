"""The registry of planted bugs: realistic implementation mistakes switched on with --bug NAME.

Each bug is a `PlantedBug` registered here under its name, with the protocol it belongs to, a
one-line description, and the online invariant(s) expected to catch it.  Protocol code asks
`bug_enabled(active, NAME)` at the place where the mistake is made; `active` is the name given
on the command line (or None).  `kraftcheck simulate --list-bugs` prints this table.

There is one list, `_BUGS`, for both protocols (one section per protocol); `BUGS` looks names up
in it.  To add a bug: append a `PlantedBug(...)` to its protocol's section of `_BUGS` (keep the
protocol field exact: "kraft" or "elr"), then guard the faulty code path with
`bug_enabled(active, "its-name")`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = ["PlantedBug", "BUGS", "get_bug", "bugs_for", "bug_enabled", "UnknownBug"]


class UnknownBug(KeyError):
    pass


@dataclass(frozen=True)
class PlantedBug:
    name: str
    protocol: str              # "kraft" | "elr" | "reassign"
    description: str
    caught_by: tuple[str, ...]  # invariant names expected to report it
    spec_switch: str | None = None  # the spec constant planting the same bug (TLC configs)
    bounds: str | None = None  # a config whose bounds the bug needs to show (e.g. a
    #                            misconfigured replica); None: any run can show it


_BUGS: list[PlantedBug] = [
    # ---- KIP-595 (refimpl/kraft) -------------------------------------------------------------
    PlantedBug(
        "hwm-no-current-epoch-check", "kraft",
        "The leader advances the high watermark to the majority-replicated offset without "
        "checking that a record of its own epoch is replicated (KIP-595 'extra condition on "
        "commitment').",
        ("NoCommittedRecordLost", "LeaderCompleteness"),
        spec_switch="BugNoCurrentEpochRule"),
    PlantedBug(
        "diverging-epoch-off-by-one", "kraft",
        "The leader returns DivergingEpoch.EndOffset one past the true end offset of the "
        "diverging epoch, so the follower keeps one diverged record.",
        ("LogMatching", "NoCommittedRecordLost", "LeaderCompleteness")),
    PlantedBug(
        "double-vote-after-restart", "kraft",
        "VotedId is not written to the quorum-state file, so after a restart the voter can "
        "grant a second vote in the same epoch.",
        ("NoDoubleVote", "AtMostOneLeaderPerEpoch"),
        spec_switch="BugVoteNotPersisted"),
    PlantedBug(
        "follower-hwm-uncapped", "kraft",
        "A follower takes the leader's high watermark from a Fetch response without capping it "
        "by its own log end offset.",
        ("HighWatermarkWithinLog",),
        spec_switch="BugFollowerHwmNotCapped"),
    PlantedBug(
        "vote-ignores-log", "kraft",
        "A voter grants its vote without checking that the candidate's log is at least as "
        "up-to-date as its own (KIP-595 'extra condition on leadership').",
        ("LeaderCompleteness", "NoCommittedRecordLost"),
        spec_switch="BugNoLogUpToDateCheck"),
    PlantedBug(
        "majority-off-by-one", "kraft",
        "The leader computes the high watermark as the offset replicated to half of the voters "
        "(n // 2) instead of a majority (n // 2 + 1).",
        ("NoCommittedRecordLost", "LeaderCompleteness")),
    PlantedBug(
        "cluster-id-fatal-from-any-replica", "kraft",
        "A fetcher shuts down on INVALID_CLUSTER_ID from any replica, not only from the elected "
        "leader (the KIP's literal FetchResponse step 1a), so one misconfigured broker can stop "
        "correct voters.",
        ("NoCorrectReplicaShutDown",),
        spec_switch="BugClusterIdFatalFromNonLeader",
        bounds="tlc_configs/kraft-ci-clusterid.cfg"),
    PlantedBug(
        "follower-fetch-timer-not-armed", "kraft",
        "A voter that becomes a Follower does not arm its fetch timer (quorum.fetch.timeout.ms, "
        "KIP-595 'Vote' condition 1), so when its leader is gone it never starts an election. "
        "Every step is a spec transition: only liveness on traces "
        "(trace_checker/liveness.py) catches it.",
        ("fetch-timeout (trace liveness)",)),
]


# ---- KIP-595 liveness (caught by the simulator's online liveness check: faults_until_ms) -------
_BUGS += [
    PlantedBug(
        "vote-rejection-resets-election-timer", "kraft",
        "A voter that rejects a Vote request of a larger epoch (its own log is more up-to-date) "
        "restarts its election timer instead of keeping the time it had left (Kafka's "
        "QuorumState.transitionToUnattached), so a candidate that can never win keeps the "
        "voters that could win from ever timing out: an election livelock.",
        ("LeaderElectedAndReplicasCaughtUp",)),
]


# ---- KIP-966 liveness (caught by the simulator's online liveness check: faults_until_ms) -------
_BUGS += [
    PlantedBug(
        "isr-expand-off-by-one", "elr",
        "The leader proposes a follower for the ISR only when the follower's fetch offset is "
        "beyond its own log end offset (> instead of >=, Kafka's isFollowerInSync), which never "
        "happens: a replica that left the ISR never rejoins it, and with min ISR above the ISR "
        "left the HWM stops.  Every step is a spec transition (not proposing is always "
        "allowed): only liveness catches it (spec/ELR.tla IsrEventuallyReexpands).",
        ("LeaderElectedAndReplicasCaughtUp",)),
]

class _Registry(Mapping[str, PlantedBug]):
    """`BUGS`: the bugs of `_BUGS` (all its sections, both protocols) by name."""

    _index: dict[str, PlantedBug] = {}

    def _by_name(self) -> dict[str, PlantedBug]:
        if len(self._index) == len(_BUGS):   # the sections are appended at import time only
            return self._index
        by_name: dict[str, PlantedBug] = {}
        for b in _BUGS:
            if b.name in by_name:
                raise ValueError(f"planted bug {b.name!r} is listed twice in refimpl/bugs.py")
            by_name[b.name] = b
        self._index = by_name
        return by_name

    def __getitem__(self, name: str) -> PlantedBug:
        return self._by_name()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name())

    def __len__(self) -> int:
        return len(self._by_name())


BUGS: Mapping[str, PlantedBug] = _Registry()


def get_bug(name: str) -> PlantedBug:
    try:
        return BUGS[name]
    except KeyError:
        known = ", ".join(sorted(BUGS)) or "(none)"
        raise UnknownBug(f"unknown planted bug {name!r}; known bugs: {known}") from None


def bugs_for(protocol: str) -> list[PlantedBug]:
    return [b for b in _BUGS if b.protocol == protocol]


def bug_enabled(active: str | None, name: str) -> bool:
    """True when the planted bug `name` is the active one.  `name` must be registered."""
    if name not in BUGS:  # a typo in protocol code must not silently disable a bug
        raise UnknownBug(f"bug_enabled: {name!r} is not a registered bug")
    return active == name

# ---- KIP-966 (refimpl/elr) -----------------------------------------------------------------
_BUGS += [
    PlantedBug(
        "elr-not-cleared-at-min-isr", "elr",
        "The controller's ELR update skips rule 1: when the proposed ISR reaches min ISR the ELR "
        "is kept instead of emptied (KIP-966 'Controller behaviors', ELR update 1).",
        ("NonEmptyElrImpliesIsrBelowMinIsr",)),
    PlantedBug(
        "unclean-broker-kept-in-elr", "elr",
        "A broker registering after an unclean shutdown (PreviousBrokerEpoch -1 or stale) is "
        "kept in (or moved into) the ELR instead of being removed from ISR and ELR (KIP-966 "
        "'Controller behaviors' 4).",
        ("ElrMembersHaveDataToHwm", "NoAckedRecordLost"),
        spec_switch="BugKeepUncleanInElr"),
    PlantedBug(
        "leader-from-fenced-elr", "elr",
        "The election picks an ELR member even when it is fenced (KIP-966 'Unclean recovery' "
        "election order step 2 requires an unfenced ELR member).",
        ("LeaderUnfenced", "FencedNotInIsr", "NoAckedRecordLost")),
    PlantedBug(
        "ack-below-min-isr", "elr",
        "The leader acknowledges acks=all produce requests once the ISR has the record, without "
        "checking that the ISR has at least min.insync.replicas members.",
        ("AckedRecordsOnMinIsr", "NoAckedRecordLost")),
    PlantedBug(
        "hwm-on-maximal-isr", "elr",
        "The leader checks the min ISR requirement of the HWM advancement against the maximal "
        "ISR instead of the ISR committed by the controller (KIP-966 'Additional High "
        "Watermark advancement requirement').",
        ("ElrMembersHaveDataToHwm",),
        spec_switch="BugHwmOnMaximalIsr"),
    PlantedBug(
        "balanced-fixed-replies", "elr",
        "Balanced unclean recovery elects as soon as min ISR replicas have answered "
        "GetReplicaLogInfo instead of waiting for every LastKnownELR member (the KIP's "
        "rejected alternative 'The controller elects the leader when a given number of replicas "
        "have replied').",
        ("RecoveryElectsMostCompleteLastKnownElr",),
        spec_switch="BugBalancedFixedReplies"),
    PlantedBug(
        "last-known-elr-literal", "elr",
        "The LastKnownELR follows the literal text of KIP-966 'Other behaviors' 6a: only ELR "
        "members that leave the ELR join it, not ISR members removed at an unclean "
        "registration; a Balanced recovery may then wait for nobody and elect an empty replica "
        "(spec finding elr-finding-last-known-elr-literal).",
        ("CommittedLogOnElectableReplica", "NoAckedRecordLost"),
        spec_switch="BugLastKnownElrLiteral"),
]

# ---- KIP-642 reassignment (refimpl/kraft/reassign_node.py), issue 12's catalog (a)-(g) --------
_BUGS += [
    PlantedBug(
        "reassign-before-epoch-commit", "reassign",
        "(a) The leader appends a membership change before it has committed a record of its "
        "own epoch (Raft's single-server membership-change bug).",
        ("MembershipChangeAfterEpochCommit", "ElectionSafety", "NoCommittedRecordLost",
         "LeaderCompleteness"),
        spec_switch="BugChangeBeforeEpochCommit"),
    PlantedBug(
        "reassign-two-changes-in-flight", "reassign",
        "(b) The leader appends the next single-member change before the previous one is "
        "committed (KIP-642 draft 'Reassignment Algorithm' step 4).",
        ("SingleMemberChanges", "LeaderCompleteness"),
        spec_switch="BugTwoChangesInFlight"),
    PlantedBug(
        "reassign-follower-acts-on-commit", "reassign",
        "(c) A follower acts on a VoterAssignment only once it is committed instead of as "
        "soon as it is appended (the draft's step 4).",
        ("VoterSetFollowsLog",),
        spec_switch="BugActOnCommit"),
    PlantedBug(
        "reassign-no-revert-on-truncation", "reassign",
        "(d) The voter set is updated from appended records only and not reverted when a "
        "VoterAssignment record is truncated (the draft's 'main subtlety').",
        ("VoterSetFollowsLog",),
        spec_switch="BugNoRevertOnTruncate"),
    PlantedBug(
        "reassign-persists-uncommitted", "reassign",
        "(e) The quorum-state file persists a voter set as soon as it is appended, not once "
        "committed (draft: 'voters will only persist quorum state changes ... after they have "
        "been committed').",
        ("QuorumStateHoldsCommittedVoters",),
        spec_switch="BugPersistUncommitted"),
    PlantedBug(
        "reassign-votes-for-non-voter", "reassign",
        "(f) A voter grants its vote to a candidate that is not a voter by its own log (and "
        "does not become a candidate).",
        ("NoVoteForNonVoter",),
        spec_switch="BugVoteForNonVoter"),
    PlantedBug(
        "reassign-majority-of-target", "reassign",
        "(g) The leader counts the high watermark's majority over TargetVoters instead of "
        "CurrentVoters.",
        ("CommittedOnVoterMajority", "NoCommittedRecordLost"),
        spec_switch="BugMajorityOfTarget"),
]

# ---- KIP-966 with asynchronous metadata (issue 14) ------------------------------------------
_BUGS += [
    PlantedBug(
        "alter-partition-no-epoch-check", "elr",
        "The controller applies an AlterPartition without comparing its partition epoch with "
        "the current one, so a delayed or duplicated request built on an older ISR overwrites "
        "the ISR committed since (Kafka rejects it with INVALID_UPDATE_VERSION): a replica the "
        "leader no longer waits for is back in the controller's ISR and may be elected.",
        ("ReplicationQuorumSuperset", "NoAckedRecordLost", "ElrMembersHaveDataToHwm"),
        spec_switch="BugSkipPartitionEpochCheck"),
    PlantedBug(
        "hwm-on-pending-isr", "elr",
        "The leader computes the HWM (and the acks=all min ISR check) over the ISR of its "
        "AlterPartition in flight before the controller committed it: a pending shrink stops "
        "waiting for the removed follower, which the controller may still elect (KIP-966 "
        "'Additional High Watermark advancement requirement': the committed ISR, replicated "
        "to the maximal ISR).",
        ("ReplicationQuorumSuperset", "NoAckedRecordLost", "ElrMembersHaveDataToHwm"),
        spec_switch="BugHwmOnPendingIsr"),
    PlantedBug(
        "stale-leader-acks", "elr",
        "A replaced leader, when it learns the new leader epoch, acknowledges the acks=all "
        "produce requests waiting in its purgatory (the records are in its own log) instead "
        "of failing them with NOT_LEADER: the new leader may not have them, and the replaced "
        "leader truncates them when it follows.",
        ("NoAckedRecordLost", "AckedRecordsOnMinIsr"),
        spec_switch="BugStaleLeaderAcks"),
]
