"""The liveness properties of spec/KRaftBackoff.tla, judged on a simulated run once its faults
have stopped (refimpl/sim/simulator.py, `faults_until_ms`).  Pure functions of the replicas'
states; the same names as the spec's properties.

- ClientValueCommittedOrTruncated (KIP-595 §"Key Concepts", §"Fetch" DivergingEpoch): every
  client record some replica held when the faults stopped is, by the deadline, committed at its
  offset (in the leader's log below its high watermark) or in no replica's log any more.
- ObserverFindsLeaderAndCatchesUp (§"Key Concepts" Observer, §"BeginQuorumEpoch"): every
  running observer follows the leader in its epoch and holds the leader's committed prefix.
- FollowersConverge (§"Fetch"): every running voter follows the leader in its epoch and holds
  the leader's committed prefix.

The spec states them with a leader that a majority follows (`LeaderFollowedByMajority`); here
`leader` is the adapter's stable leader (the same notion) or None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from refimpl.kraft.state import NodeState

__all__ = ["CLIENT_VALUE", "OBSERVER", "CONVERGE", "PROPERTIES", "client_records",
           "judge"]

CLIENT_VALUE = "ClientValueCommittedOrTruncated"
OBSERVER = "ObserverFindsLeaderAndCatchesUp"
CONVERGE = "FollowersConverge"
PROPERTIES = (CLIENT_VALUE, OBSERVER, CONVERGE)

Held = tuple[int, int, str]   # (offset, epoch, value) of a client record


def client_records(states: Iterable[NodeState]) -> frozenset[Held]:
    """The client records (not LeaderChange control records) held by the given replicas."""
    return frozenset((off, r.epoch, r.value) for s in states for off, r in enumerate(s.log)
                     if r.control is None)


def _holds_committed_prefix(s: NodeState, leader: NodeState, h: int) -> bool:
    return (s.epoch == leader.epoch and s.leader_id == leader.node_id
            and len(s.log) >= h and s.log[:h] == leader.log[:h])


def judge(states: Mapping[str, NodeState], up: Mapping[str, bool], voters: Iterable[str],
          observers: Iterable[str], leader: str | None,
          pending: frozenset[Held], target_hwm: int | None = None) -> dict[str, str | None]:
    """For each property, None if it holds now, else why not.  `pending`: the client records
    held when the faults stopped.  `target_hwm`: the leader's high watermark the replicas must
    reach (the workload keeps appending, so the target is fixed when the leader is first
    followed, as Kafka's allReachedHighWatermark; default: the leader's current one)."""
    out: dict[str, str | None] = {}
    if leader is None:
        why = "no leader is followed by a majority"
        return {CLIENT_VALUE: why if pending else None, OBSERVER: why, CONVERGE: why}
    ls = states[leader]
    h = ls.high_watermark if target_hwm is None else min(target_hwm, ls.high_watermark)
    now = client_records(states.values())
    unsettled = sorted(
        (off, ep, v) for off, ep, v in pending
        if (off, ep, v) in now
        and not (off < ls.high_watermark and ls.log[off].epoch == ep and ls.log[off].value == v))
    out[CLIENT_VALUE] = (None if not unsettled else
                         "client record(s) neither committed nor truncated: "
                         + ", ".join(f"{v}@{off} (epoch {ep})" for off, ep, v in unsettled))
    for name, group in ((OBSERVER, observers), (CONVERGE, voters)):
        lagging = [n for n in group if n != leader and up.get(n)
                   and not _holds_committed_prefix(states[n], ls, h)]
        out[name] = (None if not lagging else
                     f"{', '.join(lagging)} do(es) not follow {leader} with its log up to its "
                     f"high watermark {h}")
    return out
