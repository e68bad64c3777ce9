"""States as tuples of small integers: one value table per spec variable.

Every distinct value of variable `v` gets an id in `tables[v]` (keyed by
`kraftcore.values.canonical_json`, so two texts TLC prints differently for the same value, or
a trace's ITF encoding of it, get the same id).  A state is the tuple of its variables' ids in
`variables` order; two states are the same TLA+ state exactly when their tuples are equal, so
the tuple is the index key (`kraftcore.values.fingerprint` of the decoded state is the
printable identity).  A partial observation is a tuple with `None` for unobserved variables.

Distinct values are few compared with states (most steps change one or two variables), so a
graph's value texts are parsed once each: `intern_texts` parses the distinct texts, in worker
processes when there are many.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor

from kraftcore.tla_values import check_depth, parse_value
from kraftcore.values import Fn, Value, canonical_json, from_itf, make_fn

__all__ = ["Codec", "Key", "parse_texts", "TextParser"]

Key = tuple  # tuple[int | None, ...]

_PARALLEL_MIN = 20000  # distinct texts below which a process pool costs more than it saves


_TOK = re.compile(r'"(?:[^"\\]|\\.)*"|<<|>>|[()\[\]{}]|,|@@|:>')
_OPEN = {"(", "[", "{", "<<"}
_CLOSE = {")", "]", "}", ">>"}
_SPLIT_MIN = 48       # shorter texts go to Lark whole


def _split_top(body: str, sep: str) -> list[str] | None:
    """`body` cut at the separators `sep` not nested in brackets or strings."""
    depth, start, out = 0, 0, []
    for m in _TOK.finditer(body):
        t = m.group()
        if t[0] == '"':
            continue
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif t == sep and depth == 0:
            out.append(body[start:m.start()].strip())
            start = m.end()
    out.append(body[start:].strip())
    return None if depth or any(not x for x in out) else out


class TextParser:
    """Parses TLC value texts with the Lark grammar, memoising sub-values.

    A large set, sequence, record or function is cut at its top-level separators (outside
    brackets and strings) and each element is parsed through the memo, so a message, a log or
    a per-server map that occurs in many states is parsed by Lark once.  Anything that does not
    cut cleanly is handed to Lark whole; the values are the ones Lark gives for the whole text.
    """

    def __init__(self) -> None:
        self.memo: dict[str, Value] = {}

    def parse(self, text: str) -> Value:
        """The value of one whole TLC value text; TLAValueSyntaxError when it is not one,
        nests deeper than kraftcore.tla_values.MAX_DEPTH (checked before any recursion)."""
        memo = self.memo
        if text in memo:
            return memo[text]
        check_depth(text)
        return self._parse(text)

    def _parse(self, text: str) -> Value:
        memo = self.memo
        if text in memo:
            return memo[text]
        t = text.strip()
        v = self._structured(t) if len(t) >= _SPLIT_MIN else None
        if v is None:
            v = parse_value(t)
        memo[text] = v
        return v

    def _structured(self, t: str) -> Value | None:
        first, last = t[0], t[-1]
        if first == "{" and last == "}":
            items = _split_top(t[1:-1], ",")
            return None if items is None else frozenset(self._parse(x) for x in items)
        if first == "<" and t.startswith("<<") and t.endswith(">>"):
            items = _split_top(t[2:-2], ",")
            return None if items is None else tuple(self._parse(x) for x in items)
        if first == "[" and last == "]":
            items = _split_top(t[1:-1], ",")
            if items is None:
                return None
            fields = []
            for it in items:
                name, sep, val = it.partition("|->")
                name = name.strip()
                if not sep or not name.isidentifier():
                    return None
                fields.append((name, self._parse(val.strip())))
            return make_fn(fields)
        if first == "(" and last == ")":
            pairs = _split_top(t[1:-1], "@@")
            if pairs is None:
                return None
            out = []
            for p in pairs:
                kv = _split_top(p, ":>")
                if kv is None or len(kv) != 2:
                    return None
                out.append((self._parse(kv[0]), self._parse(kv[1])))
            return make_fn(out)
        return None


def _parse_chunk(texts: Sequence[str]) -> list[str]:
    p = TextParser()
    return [canonical_json(p.parse(t)) for t in texts]


def parse_texts(texts: Sequence[str], jobs: int = 1) -> list[str]:
    """canonical_json of each TLC value text (parsed with the Lark grammar)."""
    if jobs <= 1 or len(texts) < _PARALLEL_MIN:
        return _parse_chunk(texts)
    n = max(1, len(texts) // (jobs * 4))
    chunks = [texts[i:i + n] for i in range(0, len(texts), n)]
    with ProcessPoolExecutor(jobs) as ex:
        out: list[str] = []
        for part in ex.map(_parse_chunk, chunks):
            out.extend(part)
    return out


class Codec:
    """Value tables for a fixed list of variables."""

    def __init__(self, variables: Iterable[str], tables: Sequence[list[str]] | None = None):
        self.variables: tuple[str, ...] = tuple(variables)
        self.position = {v: i for i, v in enumerate(self.variables)}
        self.texts: list[list[str]] = [list(t) for t in tables] if tables else \
            [[] for _ in self.variables]
        self.ids: list[dict[str, int]] = [{t: i for i, t in enumerate(tab)} for tab in self.texts]
        self._decoded: list[dict[int, Value]] = [{} for _ in self.variables]

    # ---- building ----------------------------------------------------------------------
    def intern(self, var_index: int, cjson: str) -> int:
        ids = self.ids[var_index]
        i = ids.get(cjson)
        if i is None:
            i = ids[cjson] = len(self.texts[var_index])
            self.texts[var_index].append(cjson)
        return i

    def intern_value(self, var: str, value: Value) -> int:
        return self.intern(self.position[var], canonical_json(value))

    def encode(self, state: Fn | dict) -> Key:
        """The key of a complete state (adds unseen values)."""
        return tuple(self.intern(i, canonical_json(state[v])) for i, v in enumerate(self.variables))

    # ---- lookup ------------------------------------------------------------------------
    def lookup_id(self, var_index: int, cjson: str) -> int:
        """The id of a value, or -1 when the graph never holds it (so no state matches)."""
        return self.ids[var_index].get(cjson, -1)

    def value(self, var_index: int, vid: int) -> Value:
        d = self._decoded[var_index]
        v = d.get(vid)
        if v is None:
            v = d[vid] = from_itf(json.loads(self.texts[var_index][vid]))
        return v

    def decode(self, key: Key) -> dict[str, Value]:
        return {v: self.value(i, k) for i, (v, k) in enumerate(zip(self.variables, key))
                if k is not None}

    def itf(self, var_index: int, vid: int):
        return json.loads(self.texts[var_index][vid])

    def to_data(self) -> dict:
        return {"variables": list(self.variables), "tables": self.texts}

    @classmethod
    def from_data(cls, data: dict) -> "Codec":
        return cls(data["variables"], data["tables"])
