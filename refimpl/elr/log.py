"""A broker's local replica log, with the flushed / unflushed split.

KIP-966 "Motivation": "unflushed data in the OS page cache is lost" in an unclean shutdown.
`flushed` counts the entries known to be on disk; an unclean shutdown keeps only those
(`after_power_loss`).  A process crash without power loss keeps the page cache, so the whole log.
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import LogEntry

__all__ = ["ReplicaLog"]


@dataclass(frozen=True)
class ReplicaLog:
    entries: tuple[LogEntry, ...] = ()
    flushed: int = 0

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO): the number of entries."""
        return len(self.entries)

    @property
    def last_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def append(self, entries: tuple[LogEntry, ...]) -> "ReplicaLog":
        return ReplicaLog(self.entries + tuple(entries), self.flushed)

    def truncate(self, length: int) -> "ReplicaLog":
        length = max(0, min(length, len(self.entries)))
        return ReplicaLog(self.entries[:length], min(self.flushed, length))

    def flush(self) -> "ReplicaLog":
        return ReplicaLog(self.entries, len(self.entries))

    def after_power_loss(self) -> "ReplicaLog":
        """What survives an unclean shutdown: the flushed prefix."""
        return ReplicaLog(self.entries[: self.flushed], self.flushed)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= `epoch` in this log, the end offset of that epoch) -- the
        OffsetsForLeaderEpoch answer a leader gives a diverging follower ((0, 0) if none)."""
        best_epoch, end = 0, 0
        for i, e in enumerate(self.entries):
            if e.epoch <= epoch:
                best_epoch, end = e.epoch, i + 1
            else:
                break
        return best_epoch, end

    def matches(self, offset: int, epoch: int) -> bool:
        """True when this log has an entry at `offset - 1` of leader epoch `epoch` (or offset is
        0): the fetch position (offset, last fetched epoch) is consistent with this log."""
        if offset == 0:
            return True
        return offset <= len(self.entries) and self.entries[offset - 1].epoch == epoch
