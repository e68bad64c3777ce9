"""Writing many trace states into one generated TLA+ module without repeating shared values.

The states of a long trace share most of their values: step k+1 differs from step k in one or
two variables, and a log at step k+1 is the log at step k plus a record.  Written out state by
state (`<<v1, v2, ...>>` each), 10 chaos traces of 1,000 steps give a module of ~60 MB, which
TLC's parser cannot hold in a few GB of heap.  `SharedValues` writes each distinct value once,
as a zero-arity definition `TC_d_<n> == ...`, and every occurrence as a reference to it:

* a set, record, function or short sequence whose text is longer than `min_len` characters
  becomes a definition (its elements are written, recursively, the same way);
* a sequence longer than `chunk` elements is cut at the fixed offsets 0, chunk, 2 chunk, ...
  into pieces that are shared definitions themselves, and written as `P1 \\o P2 \\o ...`: two
  logs with a common prefix share the pieces of that prefix, so the text of a trace's logs
  grows with the number of records, not with (steps x log length).

TLC evaluates a constant-level zero-arity definition once, so the values it builds are shared
in its memory too.  Values reach the text only through `kraftcore.values.to_tla` for atoms
(strings escaped) and `ModelValues` for model values (tlagen.py), so nothing of a trace can
inject TLA+ syntax; integers outside TLC's 32-bit range are refused (`Unwritable`).
"""

from __future__ import annotations

from collections.abc import Sequence

from kraftcore.values import Fn, Value, ValueError_, canonical_json, to_tla
from trace_checker.tlagen import ModelValues, Unwritable, check_tlc_ints

__all__ = ["SharedValues", "DEF_PREFIX"]

DEF_PREFIX = "TC_d_"


class SharedValues:
    """Accumulates definitions; `ref(value)` gives the text to use where the value occurs."""

    def __init__(self, mv: ModelValues, *, min_len: int = 40, chunk: int = 16):
        self.mv = mv
        self.min_len, self.chunk = min_len, chunk
        self.defs: list[str] = []
        self._memo: dict[str, str] = {}      # canonical JSON (TRUE is not 1) -> text
        self._ids: dict[tuple[int, object], str] = {}
        self.uses_concat = False        # `\o` needs the standard module Sequences
        self.bytes = 0                  # length of the definitions' text so far

    # ---- public ------------------------------------------------------------------------
    def ref(self, v: Value, where: str = "value") -> str:
        check_tlc_ints(v, where)
        try:
            return self._ref(v)
        except ValueError_ as e:
            raise Unwritable(f"{where}: {e}") from None
        except RecursionError:
            raise Unwritable(f"{where}: value nested too deeply") from None

    def state(self, values: Sequence[tuple[object, Value]], where: str) -> str:
        """A state as a shared tuple of its variables' values.  `values` lists, per variable in
        order, (an id naming the value, the value): equal ids are written once."""
        parts = []
        for n, (vid, v) in enumerate(values):
            text = self._ids.get((n, vid))
            if text is None:
                text = self._ids[(n, vid)] = self.ref(v, f"{where}[{n + 1}]")
            parts.append(text)
        inner = ", ".join(parts)
        key = "state:" + inner
        return self._memo.get(key) or self._define(key, f"<<{inner}>>", force=True)

    def text(self) -> str:
        return "".join(d + "\n" for d in self.defs)

    # ---- internals ---------------------------------------------------------------------
    def _define(self, key, text: str, force: bool = False) -> str:
        if not force and len(text) <= self.min_len:
            self._memo[key] = text
            return text
        name = f"{DEF_PREFIX}{len(self.defs)}"
        d = f"{name} == {text}"
        self.defs.append(d)
        self.bytes += len(d) + 1
        self._memo[key] = name
        return name

    def _ref(self, v: Value) -> str:
        t = type(v)
        if t is bool or t is int:
            return to_tla(v)
        key = canonical_json(v)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        mv = self.mv
        if t is tuple:
            if len(v) > self.chunk:
                pieces = [self._ref(v[k:k + self.chunk]) for k in range(0, len(v), self.chunk)]
                self.uses_concat = True
                return self._define(key, " \\o ".join(pieces))
            return self._define(key, "<<" + ", ".join(self._ref(x) for x in v) + ">>")
        if t is frozenset:
            return self._define(key, "{" + ", ".join(sorted(self._ref(x) for x in v)) + "}")
        if t is Fn:
            items = sorted(v.items(), key=lambda kv: canonical_json(kv[0]))
            if all(mv.is_field(k) for k, _ in items):
                return self._define(key, "[" + ", ".join(f"{k} |-> {self._ref(x)}"
                                                          for k, x in items) + "]")
            return self._define(key, "(" + " @@ ".join(
                f"{self._ref(k)} :> {self._ref(x)}" for k, x in items) + ")")
        # atoms: strings (model values as their TC_mv_* constants) and Booleans
        text = mv.atom(v) if t is str else to_tla(v)
        self._memo[key] = text
        return text
