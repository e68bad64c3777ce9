"""The quorum module of the KIP-595 refimpl (refimpl/kraft/quorum.py): majority size, vote
counting and the majority-replicated offset agree with each other and with the spec's
IsVoterMajority / MajorityOffset definitions."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from refimpl.kraft.quorum import holds_majority, is_majority, majority, majority_replicated_offset

VOTERS = ("v1", "v2", "v3", "v4", "v5")


def test_majority_sizes():
    assert [majority(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_observers_do_not_count():
    # KIP-595 "Key Concepts": observers are not voters and cast no vote
    assert not is_majority({"v1", "o1", "o2"}, ("v1", "v2", "v3"))
    assert is_majority({"v1", "v2", "o1"}, ("v1", "v2", "v3"))
    assert not is_majority(set(), ("v1",))


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 5), members=st.sets(st.sampled_from(VOTERS + ("o1", "o2"))))
def test_counting_is_the_spec_majority(n, members):
    voters = VOTERS[:n]
    inside = len(members & set(voters))
    # spec/KRaft.tla IsVoterMajority(S) == Cardinality(S \cap Voters) * 2 > Cardinality(Voters)
    assert is_majority(members, voters) == (inside * 2 > n) == holds_majority(inside, n)
    assert holds_majority(inside, n) == (inside >= majority(n))


@settings(max_examples=200, deadline=None)
@given(offs=st.lists(st.integers(0, 6), min_size=1, max_size=5))
def test_majority_offset_is_the_spec_majority_offset(offs):
    # spec/KRaftLog.tla MajorityOffset: the largest h in 1..max held by a quorum, or 0
    n = len(offs)
    spec = max([0] + [h for h in range(1, max(offs) + 1)
                      if holds_majority(sum(1 for o in offs if o >= h), n)])
    assert majority_replicated_offset(offs, majority(n)) == spec


def test_majority_offset_needs_enough_offsets():
    assert majority_replicated_offset([9], 2) == 0
    assert majority_replicated_offset([10, 7, 3], 2) == 7
