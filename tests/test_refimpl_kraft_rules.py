"""Unit tests of the KIP-595 rules shared with the spec (refimpl/kraft/rules.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from refimpl.kraft import rules
from refimpl.kraft.log import Record, end_offset_for_epoch


def log_of(*epochs):
    return tuple(Record(e, value=f"v{i}") for i, e in enumerate(epochs))


# ---------------------------------------------------------------- up-to-date comparison

def test_later_last_epoch_is_more_up_to_date_even_if_shorter():
    # KIP-595 Vote Request Handling: "If the logs' last entry have different epochs, then the
    # log with the later epoch is more up-to-date."
    assert rules.is_log_up_to_date(3, 1, 2, 10)
    assert not rules.is_log_up_to_date(2, 10, 3, 1)


def test_same_last_epoch_longer_log_wins_and_equal_is_up_to_date():
    assert rules.is_log_up_to_date(2, 5, 2, 4)
    assert rules.is_log_up_to_date(2, 5, 2, 5)
    assert not rules.is_log_up_to_date(2, 4, 2, 5)


# ---------------------------------------------------------------- DivergingEpoch

def test_end_offset_for_epoch():
    log = log_of(1, 1, 2, 2, 4)
    assert end_offset_for_epoch(log, 1) == (1, 2)
    assert end_offset_for_epoch(log, 2) == (2, 4)
    assert end_offset_for_epoch(log, 3) == (2, 4)   # largest epoch <= 3 is 2
    assert end_offset_for_epoch(log, 4) == (4, 5)
    assert end_offset_for_epoch(log, 0) == (0, 0)


def test_kip_diverging_epoch_example():
    # KIP-595 FetchRequest Handling step 3: the fetcher's last epoch X=3 does not match the
    # leader's log, so DivergingEpoch is the largest epoch < X on the leader (2) and its end
    # offset, and the follower truncates all its epoch-3 records.
    leader = log_of(1, 1, 2, 2, 4)
    follower = log_of(1, 1, 2, 3, 3)
    div = rules.diverging_epoch(leader, fetch_offset=len(follower), last_fetched_epoch=3)
    assert div == (2, 4)
    off = rules.truncation_offset(follower, *div)
    assert off == 3                       # follower's epoch 2 ends at offset 3
    # the next fetch (offset 3, epoch 2) is consistent: the leader's epoch 2 ends at 4
    assert rules.diverging_epoch(leader, 3, 2) is None


def test_fetch_offset_beyond_epoch_end_diverges():
    leader = log_of(1, 1, 2, 2, 4)
    follower = log_of(1, 1, 2, 2, 2, 2)   # extra epoch-2 records the leader never had
    div = rules.diverging_epoch(leader, len(follower), 2)
    assert div == (2, 4)
    assert rules.truncation_offset(follower, *div) == 4


def test_consistent_fetches_do_not_diverge():
    leader = log_of(1, 1, 2, 2, 4)
    assert rules.diverging_epoch(leader, 0, 0) is None
    assert rules.diverging_epoch(leader, 2, 1) is None
    assert rules.diverging_epoch(leader, 4, 2) is None   # start offset of the next epoch
    assert rules.diverging_epoch(leader, 5, 4) is None


def test_unknown_epoch_below_leader_first_epoch():
    leader = log_of(2, 2)
    follower = log_of(1)
    div = rules.diverging_epoch(leader, 1, 1)
    assert div == (0, 0)
    assert rules.truncation_offset(follower, *div) == 0


def test_diverging_epoch_off_by_one_bug_accepts_a_diverged_fetch():
    leader = log_of(1, 1, 2, 2, 4)
    # follower holds one extra epoch-2 record at offset 4 (the leader has epoch 4 there)
    assert rules.diverging_epoch(leader, 5, 2) == (2, 4)
    assert rules.diverging_epoch(leader, 5, 2, off_by_one=True) is None


@st.composite
def diverged_logs(draw):
    """Two logs the protocol can produce: a common prefix, maybe extra records of the last
    common epoch on the follower only, then suffixes of disjoint (higher) epochs."""
    prefix = sorted(draw(st.lists(st.integers(1, 3), max_size=5)))
    top = prefix[-1] if prefix else 1
    extra = draw(st.integers(0, 2)) if prefix else 0
    epochs = list(range(top + 1, top + 6))
    mine = draw(st.sets(st.sampled_from(epochs), max_size=2))
    theirs = [e for e in epochs if e not in mine]
    lsuf = sorted(draw(st.lists(st.sampled_from(theirs), max_size=4)))
    fsuf = sorted(draw(st.lists(st.sampled_from(sorted(mine)), max_size=4))) if mine else []
    leader = log_of(*prefix, *lsuf)
    follower = log_of(*prefix, *([top] * extra), *fsuf)
    return leader, follower, len(prefix)


@given(diverged_logs())
@settings(max_examples=150)
def test_fetch_loop_converges_to_the_leader_log(logs):
    """Property: truncating on DivergingEpoch and appending the leader's records makes the
    follower's log equal to the leader's (KIP-595 "FetchResponse Handling"), and truncation
    never removes the common prefix."""
    from refimpl.kraft.log import last_epoch
    leader, follower, common = logs
    for _ in range(40):
        div = rules.diverging_epoch(leader, len(follower), last_epoch(follower))
        if div is not None:
            off = rules.truncation_offset(follower, *div)
            assert off < len(follower) or len(follower) == 0
            follower = follower[:off]
            assert len(follower) >= common  # the common prefix is never truncated
            continue
        if len(follower) == len(leader):
            break
        follower = follower + leader[len(follower):len(follower) + 2]
    assert [r.epoch for r in follower] == [r.epoch for r in leader]


# ---------------------------------------------------------------- high watermark

def test_hwm_is_majority_replicated_offset():
    # leader at 10, followers at 7 and 3: the majority (2 of 3) has 7
    assert rules.leader_high_watermark([10, 7, 3], 3, epoch_start_offset=2, current_hwm=0) == 7


def test_hwm_current_epoch_rule_kip_example():
    # KIP-595 "extra condition on commitment": after an election the leader does not advance
    # the HWM until a record of its own epoch (starting at offset 5) is on a majority, even
    # though older records (offsets < 5) are.
    assert rules.leader_high_watermark([6, 5, 5], 3, epoch_start_offset=5, current_hwm=2) == 2
    assert rules.leader_high_watermark([6, 6, 5], 3, epoch_start_offset=5, current_hwm=2) == 6
    # the planted bug skips the check
    assert rules.leader_high_watermark([6, 5, 5], 3, 5, 2, check_current_epoch=False) == 5


def test_hwm_never_decreases():
    assert rules.leader_high_watermark([9, 4, 4], 3, epoch_start_offset=1, current_hwm=8) == 8


def test_five_voters_need_three():
    assert rules.leader_high_watermark([9, 9, 4, 2, 0], 5, 0, 0) == 4


def test_follower_hwm_is_capped_by_log_end_and_monotonic():
    assert rules.follower_high_watermark(2, leader_hwm=9, log_end=5) == 5
    assert rules.follower_high_watermark(2, leader_hwm=4, log_end=5) == 4
    assert rules.follower_high_watermark(4, leader_hwm=3, log_end=5) == 4
    assert rules.follower_high_watermark(2, 9, 5, capped=False) == 9


# ---------------------------------------------------------------- backoffs

@pytest.mark.parametrize("pos,expected", [(0, 0), (1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (9, 1000)])
def test_successor_backoff_formula(pos, expected):
    # KIP-595 EndQuorumEpoch: MIN(retryBackoffMaxMs, retryBackoffMs * 2^(N-1))
    assert rules.successor_backoff_ms(pos, 100, 1000) == expected


def test_election_backoff_is_exponential_and_bounded():
    assert [rules.election_backoff_max(r, 20, 1000) for r in (1, 2, 3, 6, 7, 20)] == \
        [20, 40, 80, 640, 1000, 1000]


def test_follower_end_offset_is_the_specs_never_decreasing_max():
    # spec/KRaft.tla HandleFetchRequest: Max(@, IF valid THEN fetchOffset ELSE 0)
    from refimpl.kraft.rules import follower_end_offset
    assert follower_end_offset(-1, 3, True) == 3         # first Fetch: the endorsement
    assert follower_end_offset(-1, 3, False) == 0        # a diverging Fetch still endorses
    assert follower_end_offset(5, 3, True) == 5          # a stale / duplicated Fetch
    assert follower_end_offset(2, 4, True) == 4
    assert follower_end_offset(2, 4, False) == 2
