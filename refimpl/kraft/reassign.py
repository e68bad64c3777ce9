"""KIP-642 dynamic quorum reassignment: the rules the node, the monitor and the spec mapping
share, as small pure functions over a replica's log (see spec/KRaftReassign.tla).

* `latest_assignment(log, start, end)`  the last VoterAssignment control record in log[start:end]
* `voters_from_log(log, base, start)`   a replica's voter set: CurrentVoters of the latest
                                        VoterAssignment it has APPENDED (committed or not), else
                                        `base` (the bootstrap quorum.voters, or the quorum-state
                                        file's committed voters).  KIP-642 draft "Reassignment
                                        Algorithm" step 4: "followers will begin acting with the
                                        new voter information as soon as the log entry has been
                                        appended"; the "main subtlety": a truncated record reverts.
* `committed_voters(log, hwm, base)`    the voter set of the latest assignment below the HWM: what
                                        quorum-state may persist ("voters will only persist
                                        quorum state changes in quorum-state after they have been
                                        committed")
* `target_from_log(log)`                TargetVoters of the latest assignment (None: none pending)
* `next_change(...)`                    the leader's next single-member step (draft "Reassignment
                                        Algorithm" steps 2, 3 and 6)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from refimpl.kraft.log import Log, VoterAssignment

__all__ = ["latest_assignment", "voters_from_log", "committed_voters", "target_from_log",
           "ChangeKind", "Change", "next_change", "sorted_ids", "symmetric_difference"]


def sorted_ids(ids) -> tuple[str, ...]:
    return tuple(sorted(set(ids)))


def latest_assignment(log: Log, start: int = 0, end: int | None = None
                      ) -> tuple[int, VoterAssignment] | None:
    """(offset, record) of the last VoterAssignment in log[start:end], or None."""
    end = len(log) if end is None else min(end, len(log))
    for i in range(end - 1, max(start, 0) - 1, -1):
        c = log[i].control
        if isinstance(c, VoterAssignment):
            return i, c
    return None


def voters_from_log(log: Log, base: tuple[str, ...], start: int = 0) -> tuple[str, ...]:
    """The replica's current voter set (spec: VotersOf(i))."""
    a = latest_assignment(log, start)
    return base if a is None else a[1].current_voters


def committed_voters(log: Log, hwm: int, base: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """(voters, applied offset): the latest assignment committed by the replica's HWM, and the
    offset just after it (where a restart's forward scan starts); `base` and 0 when none."""
    a = latest_assignment(log, 0, hwm)
    return (base, 0) if a is None else (a[1].current_voters, a[0] + 1)


def target_from_log(log: Log) -> tuple[str, ...] | None:
    """TargetVoters of the latest assignment; None when there is none or it is null (an
    empty TargetVoters, the spec's NoTarget)."""
    a = latest_assignment(log)
    return None if a is None else (a[1].target_voters or None)


def symmetric_difference(a, b) -> int:
    return len(set(a) ^ set(b))


class ChangeKind(str, Enum):
    ADD = "add"          # CurrentVoters + NV (draft step 3.1)
    REMOVE = "remove"    # CurrentVoters - RV, a non-leader preferred (step 3.2)
    CLEAR = "clear"      # TargetVoters = CurrentVoters: append TargetVoters=null (step 6.1)
    RESIGN = "resign"    # the leader is the last RemovingVoter: EndQuorumEpoch (step 6.2)
    WAIT = "wait"        # every NewVoter still catching up as an observer


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    voter: str | None = None

    def voters_after(self, current: tuple[str, ...]) -> tuple[str, ...]:
        if self.kind is ChangeKind.ADD:
            return sorted_ids(current + (self.voter,))
        if self.kind is ChangeKind.REMOVE:
            return sorted_ids(v for v in current if v != self.voter)
        return current


def next_change(current: tuple[str, ...], target: tuple[str, ...] | None, leader: str,
                caught_up: frozenset | set) -> Change | None:
    """The leader's next step towards `target` (KIP-642 draft "Reassignment Algorithm"):
    RemovingVoters = current - target, NewVoters = target - current; add one caught-up NV when
    size(NewVoters) >= size(RemovingVoters) (an NV is promoted only once its log end reached
    the leader's HWM, draft "Observer Promotion"), else remove one RV other than the leader;
    when the leader is the last RV it resigns; when current = target the target is cleared.
    None: no reassignment pending."""
    if target is None:
        return None
    cur, tgt = set(current), set(target)
    if cur == tgt:
        return Change(ChangeKind.CLEAR)
    new = sorted(tgt - cur)
    removing = sorted(cur - tgt)
    if len(new) >= len(removing):
        ready = [n for n in new if n in caught_up]
        return Change(ChangeKind.ADD, ready[0]) if ready else Change(ChangeKind.WAIT)
    others = [r for r in removing if r != leader]
    if others:
        return Change(ChangeKind.REMOVE, others[0])
    return Change(ChangeKind.RESIGN, leader)
