"""Rules shared by the refimpl and the TLA+ spec: small pure functions, one KIP rule each.

* `is_log_up_to_date`      KIP-595 "Vote Request Handling" (extra condition on leadership)
* `diverging_epoch`        KIP-595 "FetchRequest Handling" step 3
* `truncation_offset`      KIP-595 "FetchResponse Handling" step 2
* `follower_end_offset`    KIP-595 "FetchRequest Handling" step 4: the end offset a leader records
* `leader_high_watermark`  KIP-595 "FetchRequest Handling" step 4 + "extra condition on commitment"
* `follower_high_watermark` KIP-595 "Key Concepts / High watermark", "FetchResponse Handling"
* `successor_backoff_ms`   KIP-595 "EndQuorumEpoch": MIN(retryBackoffMaxMs, retryBackoffMs * 2^(N-1))
* `election_backoff_max`   KIP-595 "Vote": random backoff bounded by quorum.election.backoff.max.ms
* `vote_request_is_valid`  KIP-595 "Vote Request Handling": a well-formed candidate log position
* `fetch_request_is_valid` KIP-595 "FetchRequest Handling": a well-formed fetch position

Majorities (size, vote counting, the majority-replicated offset) are in refimpl/kraft/quorum.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from refimpl.kraft.log import Log, end_offset_for_epoch
from refimpl.kraft.quorum import is_majority, majority, majority_replicated_offset

__all__ = [
    "is_log_up_to_date",
    "diverging_epoch",
    "truncation_offset",
    "follower_end_offset",
    "leader_high_watermark",
    "follower_high_watermark",
    "successor_backoff_ms",
    "election_backoff_max",
    "truncates_committed",
    "vote_request_is_valid",
    "fetch_request_is_valid",
]


def is_log_up_to_date(cand_last_epoch: int, cand_end_offset: int,
                      own_last_epoch: int, own_end_offset: int) -> bool:
    """True when the candidate's log is at least as up-to-date as ours: a later last epoch wins;
    with equal last epochs the longer log wins (KIP-595 "Vote Request Handling")."""
    if cand_last_epoch != own_last_epoch:
        return cand_last_epoch > own_last_epoch
    return cand_end_offset >= own_end_offset


def diverging_epoch(leader_log: Log, fetch_offset: int, last_fetched_epoch: int,
                    off_by_one: bool = False) -> tuple[int, int] | None:
    """KIP-595 FetchRequest step 3.  None when (fetch_offset, last_fetched_epoch) is consistent
    with the leader's log, else DivergingEpoch = (largest epoch <= LastFetchedEpoch in the
    leader's log, its end offset).  `off_by_one` is the planted bug diverging-epoch-off-by-one:
    the epoch's end offset is computed one too large."""
    if fetch_offset == 0 and last_fetched_epoch == 0:
        return None
    epoch, end = end_offset_for_epoch(leader_log, last_fetched_epoch)
    if off_by_one and end < len(leader_log):
        end += 1
    if epoch == last_fetched_epoch and fetch_offset <= end:
        return None
    return epoch, end


def truncation_offset(follower_log: Log, div_epoch: int, div_end_offset: int) -> int:
    """KIP-595 FetchResponse step 2: the follower truncates offsets >= DivergingEpoch.EndOffset
    and every record with an epoch > DivergingEpoch.Epoch, i.e. it keeps
    min(EndOffset, its own end offset for Epoch) records (spec: KRaftLog!TruncateToDivergence).
    """
    _, local_end = end_offset_for_epoch(follower_log, div_epoch)
    return min(div_end_offset, local_end)


def follower_end_offset(recorded: int, fetch_offset: int, valid: bool) -> int:
    """The end offset a leader records for a voter after its Fetch (KIP-595 "FetchRequest
    Handling" step 4: "the leader will also update the high watermark" from the voters'
    FetchOffsets).  spec/KRaft.tla's HandleFetchRequest: Max(@, IF valid THEN fetchOffset
    ELSE 0), never decreasing; -1 (no endorsement yet) becomes at least 0.

    Kafka's LeaderState.updateReplicaState takes each FetchOffset, even a lower one (it logs a
    "non-monotonic update"); the refimpl keeps that figure apart (NodeState.last_fetch_offset,
    DescribeQuorum's LogEndOffset).  The two differ only for a stale or duplicated Fetch, which
    Kafka's one-request-per-connection fetcher does not send and the spec's network does, and
    for a replica that lost its disk and fetches again in an epoch whose leader recorded its
    offset before the loss.  The spec rules that out (a wiped replica rejoins only after a
    leader of an epoch it never reached has committed: spec/KRaftHistory.tla
    "AfterNewLeaderCommitted"); so does the simulator (refimpl/kraft/adapter.py
    `rejoin_allowed`).  Taking each offset here would make the refimpl's followerEndOffset
    leave the spec's state graph at every duplicated Fetch."""
    return max(recorded, fetch_offset if valid else 0)


def covers_current_epoch(offset: int, epoch_start_offset: int) -> bool:
    """KIP-595 "High Watermark" (current-epoch rule): an offset commits the leader's epoch
    only past its first record (`epoch_start_offset`, the LeaderChange record)."""
    return offset > epoch_start_offset


def leader_high_watermark(voter_end_offsets: Iterable[int], n_voters: int,
                          epoch_start_offset: int, current_hwm: int,
                          check_current_epoch: bool = True, quorum: int | None = None) -> int:
    """The leader's high watermark (KIP-595 FetchRequest step 4): the largest offset replicated
    to a majority of the voters, only once that majority holds a record of the current epoch
    (offset `epoch_start_offset` is the epoch's first record, the LeaderChange record), and
    never decreasing."""
    q = majority(n_voters) if quorum is None else quorum
    m = majority_replicated_offset(voter_end_offsets, q)
    if check_current_epoch and not covers_current_epoch(m, epoch_start_offset):
        return current_hwm
    return max(current_hwm, m)


def follower_high_watermark(current_hwm: int, leader_hwm: int, log_end: int,
                            capped: bool = True) -> int:
    """A follower's high watermark: min(its log end offset, the leader's), never decreasing."""
    new = min(leader_hwm, log_end) if capped else leader_hwm
    return max(current_hwm, new)


def truncates_committed(truncation_offset: int, high_watermark: int) -> bool:
    """KIP-595 "FetchResponse Handling" step 2 with Kafka's check: a DivergingEpoch whose
    truncation would cut below the follower's high watermark would lose a committed record;
    Kafka treats it as fatal (KafkaRaftClient throws), never as a silent truncation."""
    return truncation_offset < high_watermark


def successor_backoff_ms(position: int, retry_backoff_ms: int, retry_backoff_max_ms: int) -> int:
    """KIP-595 EndQuorumEpoch: position 0 (first preferred successor) starts at once; position
    N > 0 waits MIN(retryBackoffMaxMs, retryBackoffMs * 2^(N-1))."""
    if position <= 0:
        return 0
    return min(retry_backoff_max_ms, retry_backoff_ms * (2 ** (position - 1)))


def election_backoff_max(retries: int, retry_backoff_ms: int, election_backoff_max_ms: int) -> int:
    """Upper bound of the random backoff before retry number `retries` (>= 1) of an election:
    exponential in the retries, bounded by quorum.election.backoff.max.ms (KIP-595 "Vote")."""
    return min(election_backoff_max_ms, retry_backoff_ms * (2 ** max(0, retries - 1)))


def record_fetch(window: frozenset, leader: str, fetcher: str, voters: Iterable[str]
                 ) -> tuple[frozenset, bool]:
    """KIP-595r "Leader Progress Timeout" (spec: RecordFetch): the leader's progress window
    after a Fetch from voter `fetcher`.  When the window's voters, the fetcher and the leader
    form a majority, the progress condition is met: the window closes (empty) and the timer
    restarts (second result True); otherwise the fetcher joins the window."""
    voters = set(voters)
    joined = (set(window) | {leader, fetcher}) & voters
    if is_majority(joined, voters):
        return frozenset(), True
    return frozenset(window | {fetcher}), False


def vote_request_is_valid(candidate_epoch: int, last_offset_epoch: int, last_offset: int) -> bool:
    """KIP-595 "Vote Request Handling" (Kafka's KafkaRaftClient.handleVoteRequest, tested by
    KafkaRaftClientTest.testInvalidVoteRequest): the candidate's log position must be
    well-formed: LastOffset >= 0, LastOffsetEpoch >= 0 and LastOffsetEpoch < CandidateEpoch
    (a candidate bumps its epoch past every epoch in its log before asking for votes).  A
    malformed request is answered INVALID_REQUEST and changes nothing."""
    return last_offset >= 0 and 0 <= last_offset_epoch < candidate_epoch


def fetch_request_is_valid(current_leader_epoch: int, fetch_offset: int,
                           last_fetched_epoch: int) -> bool:
    """KIP-595 "FetchRequest Handling" (Kafka's KafkaRaftClient.handleFetchRequest, tested by
    KafkaRaftClientTest.testInvalidFetchRequest): FetchOffset >= 0 and 0 <= LastFetchedEpoch
    <= CurrentLeaderEpoch (a fetcher never holds a record of an epoch it does not know).  A
    malformed request is answered INVALID_REQUEST before the epoch checks of step 2."""
    return fetch_offset >= 0 and 0 <= last_fetched_epoch <= current_leader_epoch
