"""Log values as JSON text for the trace encoders, built incrementally (shared by the KIP-595
and KIP-966 spec mappings): a log usually only grows between two steps, so its JSON array is
extended with the new records instead of being rebuilt, and each record's text is cached."""

from __future__ import annotations

from collections.abc import Callable, Hashable

__all__ = ["LogJson"]


class LogJson:
    """`record(r)`: the record's JSON text (cached); `log(key, log)`: the JSON array of the
    log last seen under `key` (a node, or "" for a global log), extended when it grew."""

    def __init__(self, record_text: Callable[[Hashable], str], max_records: int = 100_000):
        self._text = record_text
        self._max = max_records
        self._rec: dict = {}
        self._logs: dict[str, tuple[tuple, str]] = {}

    def record(self, r) -> str:
        t = self._rec.get(r)
        if t is None:
            t = self._text(r)
            if len(self._rec) > self._max:
                self._rec.clear()
            self._rec[r] = t
        return t

    def log(self, key: str, log: tuple) -> str:
        c = self._logs.get(key)
        if c is not None:
            old, txt = c
            if old is log:
                return txt
            k = len(old)
            if len(log) > k and log[:k] == old:
                add = ",".join([self.record(r) for r in log[k:]])
                txt = txt[:-1] + ("," if k else "") + add + "]"
                self._logs[key] = (log, txt)
                return txt
        txt = "[" + ",".join([self.record(r) for r in log]) + "]"
        self._logs[key] = (log, txt)
        return txt
