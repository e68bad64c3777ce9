"""Quorums of the KIP-595 voters, in one place: majority size, vote counting, majority offset.

KIP-595 "Key Concepts": the leader is elected by, and a record committed on, "a majority of the
voters"; observers never count.  Every quorum test of the refimpl (node, rules, invariants) goes
through this module, which mirrors the spec's operators:

* `majority(n)`                   the size of a strict majority of n voters (n // 2 + 1)
* `is_majority(members, voters)`  spec/KRaft.tla IsVoterMajority (and IsElectionQuorum without
                                  the planted bug BugObserverVotes): |S \\cap Voters| * 2 > |Voters|
* `holds_majority(count, n)`      the same test on a count of voters: count * 2 > n
* `majority_replicated_offset`    spec/KRaftLog.tla MajorityOffset: the largest offset a quorum of
                                  the voters' end offsets has reached (KIP-595 "FetchRequest
                                  Handling" step 4)

The z3 obligations of proofs/kraft_hwm.py encode `majority` and `majority_replicated_offset`;
tests/test_proofs_equivalence.py checks the encodings against these functions.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["majority", "is_majority", "holds_majority", "majority_replicated_offset"]


def majority(n_voters: int) -> int:
    """The size of a strict majority of `n_voters` voters."""
    return n_voters // 2 + 1


def holds_majority(count: int, n_voters: int) -> bool:
    """`count` voters are a strict majority of `n_voters` (count * 2 > n_voters)."""
    return count * 2 > n_voters


def is_majority(members: Iterable[str], voters: Iterable[str]) -> bool:
    """The voters among `members` are a strict majority of `voters` (spec: IsVoterMajority);
    non-voters (observers) in `members` do not count."""
    voters = set(voters)
    return holds_majority(len(set(members) & voters), len(voters))


def majority_replicated_offset(end_offsets: Iterable[int], quorum: int) -> int:
    """The largest offset that `quorum` of the given voter end offsets have reached (0 when
    fewer than `quorum` offsets are given)."""
    s = sorted(end_offsets, reverse=True)
    if quorum <= 0:
        return s[0] if s else 0
    return s[quorum - 1] if len(s) >= quorum else 0
