"""Canonical Python representation of TLA+ values, shared by every stage.

One representation is used everywhere a TLA+ value appears: values parsed from TLC output
(`kraftcore.tla_values`), values decoded from refimpl traces (ITF, below), and values written
back into generated TLA+ (`to_tla`).  Two values are the same TLA+ value exactly when their
`fingerprint` is equal.

Mapping (TLA+ -> Python):

    integer                      int
    BOOLEAN                      bool
    string                       str
    model value  m               str  (its name; see `to_tla(model_values=...)` to print it back)
    set                          frozenset
    sequence / tuple             tuple
    record / function            Fn   (an immutable mapping)

A function whose domain is 1..n is a sequence in TLA+ and is therefore always a `tuple`
(the empty function is the empty tuple), so `[i \\in 1..2 |-> x]`, `<<x, x>>` and
`(1 :> x @@ 2 :> x)` all give the same Python value.  Records are functions whose domain is a
set of strings; `[a |-> 1]` and `("a" :> 1)` are the same value.

Model values become plain strings: the project's specs never use a string that is also the name
of a model value, and the refimpl's traces then need no special encoding for server ids.

ITF (the Informal Trace Format of Apalache / Quint / itf-py) is the JSON encoding used in traces:
records are JSON objects, sequences JSON arrays, sets {"#set": [...]}, other functions
{"#map": [[k, v], ...]}, tuples {"#tup": [...]} and integers outside +-2^53 {"#bigint": "..."}.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Union

__all__ = [
    "Fn",
    "Value",
    "ValueError_",
    "canonical",
    "canonical_json",
    "fingerprint",
    "fingerprint_of_canonical_json",
    "from_itf",
    "to_itf",
    "to_tla",
    "is_identifier",
    "make_fn",
]


class ValueError_(ValueError):
    """A value that cannot be represented (e.g. unsupported type, bad ITF object)."""


class Fn(Mapping):
    """An immutable, hashable TLA+ function (records included) whose domain is not 1..n."""

    __slots__ = ("_d", "_h")

    def __init__(self, items: Mapping | Iterable[tuple[Any, Any]] = ()):
        d = dict(items.items() if isinstance(items, Mapping) else items)
        object.__setattr__(self, "_d", d)
        object.__setattr__(self, "_h", None)

    @classmethod
    def wrap(cls, d: dict) -> "Fn":
        """An Fn over the dict `d` itself, not a copy (the caller hands `d` over and never
        changes it again): for decoders that build a fresh dict per value."""
        f = object.__new__(cls)
        object.__setattr__(f, "_d", d)
        object.__setattr__(f, "_h", None)
        return f

    def as_dict(self) -> dict:
        """A new dict with this function's pairs."""
        return dict(self._d)

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self) -> Iterator:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        h = self._h
        if h is None:
            h = hash(frozenset(self._d.items()))
            object.__setattr__(self, "_h", h)
        return h

    def __eq__(self, other) -> bool:
        if isinstance(other, Fn):
            return self._d == other._d
        return NotImplemented

    def __setattr__(self, *_):  # pragma: no cover - immutability guard
        raise AttributeError("Fn is immutable")

    def __repr__(self) -> str:
        return "Fn(%r)" % (self._d,)

    def is_record(self) -> bool:
        return all(isinstance(k, str) for k in self._d)

    def set(self, key, value) -> "Fn":
        """A copy with `key` mapped to `value` (TLA+ EXCEPT)."""
        d = dict(self._d)
        d[key] = value
        return Fn(d)


Value = Union[int, bool, str, frozenset, tuple, Fn]


def make_fn(items: Mapping | Iterable[tuple[Any, Any]]) -> Value:
    """Build the canonical value of a function: a tuple when the domain is 1..n, else Fn."""
    d = dict(items.items() if isinstance(items, Mapping) else items)
    n = len(d)
    if n == 0:
        return ()
    if all(type(k) is int for k in d) and set(d) == set(range(1, n + 1)):
        return tuple(d[i] for i in range(1, n + 1))
    return Fn(d)


def canonical(v: Any) -> Value:
    """Convert plain Python data (dicts, lists, sets) into canonical values, recursively."""
    t = type(v)
    if t is bool or t is int or t is str:
        return v
    if t is tuple or t is list:
        return tuple(canonical(x) for x in v)
    if t is frozenset or t is set:
        return frozenset(canonical(x) for x in v)
    if t is Fn:
        return make_fn((canonical(k), canonical(x)) for k, x in v.items())
    if isinstance(v, Mapping):
        return make_fn((canonical(k), canonical(x)) for k, x in v.items())
    raise ValueError_(f"no TLA+ value for Python {t.__name__}: {v!r}")


# --------------------------------------------------------------------------- ITF

_MAX_SAFE = 2**53 - 1


def to_itf(v: Value) -> Any:
    """Encode a canonical value as ITF JSON data (dicts / lists / scalars)."""
    t = type(v)
    if t is bool or t is str:
        return v
    if t is int:
        return v if -_MAX_SAFE <= v <= _MAX_SAFE else {"#bigint": str(v)}
    if t is tuple:
        return [to_itf(x) for x in v]
    if t is frozenset:
        return {"#set": sorted((to_itf(x) for x in v), key=_json_key)}
    if t is Fn:
        if v.is_record():
            return {k: to_itf(x) for k, x in sorted(v.items())}
        return {"#map": sorted(([to_itf(k), to_itf(x)] for k, x in v.items()), key=_json_key)}
    raise ValueError_(f"not a canonical TLA+ value: {v!r}")


MAX_DEPTH = 200          # deeper ITF nesting is refused (no TLA+ state of ours comes close)
MAX_DIGITS = 4000        # a longer #bigint is refused (Python's own limit is 4300)


def from_itf(j: Any, where: str = "value") -> Value:
    """Decode ITF JSON data into a canonical value; `where` names the place for errors.

    Raises ValueError_ (never anything else) for what is not a TLA+ value this suite can
    represent: null, JSON numbers with a fraction or exponent (1.0, NaN, Infinity), unknown
    tags, nesting deeper than MAX_DEPTH, integers longer than MAX_DIGITS, and sets or maps whose
    members Python would merge though TLA+ keeps them apart (1 and TRUE, 0 and FALSE)."""
    try:
        return _from_itf(j, where, 0)
    except RecursionError:
        raise ValueError_(f"{where}: nested too deeply") from None


def _from_itf(j: Any, where: str, depth: int) -> Value:
    if depth > MAX_DEPTH:
        short = where if len(where) <= 80 else where[:77] + "..."
        raise ValueError_(f"{short}: nested deeper than {MAX_DEPTH} levels")
    t = type(j)
    if t is bool or t is str:
        return j
    if t is int:
        return j
    if t is float:
        # ITF writes integers as JSON integers; 1.0 is a JSON fraction, not the integer 1
        raise ValueError_(f"{where}: {j!r} is not an integer (write integers without a "
                          "fraction or exponent)")
    d = depth + 1
    if t is list:
        return tuple(_from_itf(x, f"{where}[{i}]", d) for i, x in enumerate(j))
    if t is dict:
        if len(j) == 1:
            (tag, body), = j.items()
            if tag == "#set":
                _need_list(body, where, tag)
                items = [_from_itf(x, f"{where}.#set[{i}]", d) for i, x in enumerate(body)]
                fs = frozenset(items)
                if len(fs) < len(items):
                    _no_merged(items, len(fs), f"{where}.#set", "member")
                return fs
            if tag == "#tup":
                _need_list(body, where, tag)
                return tuple(_from_itf(x, f"{where}.#tup[{i}]", d) for i, x in enumerate(body))
            if tag == "#map":
                _need_list(body, where, tag)
                pairs = []
                for i, kv in enumerate(body):
                    if type(kv) is not list or len(kv) != 2:
                        raise ValueError_(f"{where}.#map[{i}]: expected a [key, value] pair")
                    pairs.append((_from_itf(kv[0], f"{where}.#map[{i}][0]", d),
                                  _from_itf(kv[1], f"{where}.#map[{i}][1]", d)))
                keys = {k for k, _ in pairs}
                if len(keys) < len(pairs):
                    _no_merged([k for k, _ in pairs], len(keys), f"{where}.#map", "key")
                    raise ValueError_(f"{where}.#map: a key is listed twice")
                return make_fn(pairs)
            if tag == "#bigint":
                if type(body) is not str or not re.fullmatch(r"-?[0-9]+", body):
                    raise ValueError_(f"{where}.#bigint: expected a decimal string, got "
                                      f"{_brief(body)}")
                if len(body.lstrip("-")) > MAX_DIGITS:
                    raise ValueError_(f"{where}.#bigint: more than {MAX_DIGITS} digits")
                return int(body)
            if tag == "#unserializable":
                if type(body) is not str:
                    raise ValueError_(f"{where}.#unserializable: expected a string")
                return body
        for k in j:
            if k.startswith("#"):
                raise ValueError_(f"{where}: unknown ITF tag {_brief(k)}")
        return make_fn((k, _from_itf(x, f"{where}.{k}", d)) for k, x in j.items())
    if j is None:
        raise ValueError_(f"{where}: null is not a TLA+ value")
    raise ValueError_(f"{where}: unsupported JSON type {t.__name__}")


def _no_merged(items: list, distinct: int, where: str, what: str) -> None:
    """Python merged members that are distinct TLA+ values (1 == True): refuse."""
    if len({canonical_json(x) for x in items}) != distinct:
        raise ValueError_(f"{where}: holds a {what} that differs only as an integer vs a "
                          "Boolean (1 and TRUE, 0 and FALSE): distinct in TLA+, not "
                          "representable here")


def _brief(v: Any) -> str:
    try:
        s = json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        s = type(v).__name__
    return s if len(s) <= 60 else s[:57] + "..."


def _need_list(body, where, tag):
    if type(body) is not list:
        raise ValueError_(f"{where}.{tag}: expected a JSON array")


def _json_key(x) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


def canonical_json(v: Value) -> str:
    """A canonical JSON text for `v`: equal TLA+ values give equal texts."""
    return _json_key(to_itf(v))


def fingerprint(v: Value) -> str:
    """A 128-bit hex fingerprint of a value (typically a whole state: an Fn of variables)."""
    return fingerprint_of_canonical_json(canonical_json(v))


def fingerprint_of_canonical_json(text: str) -> str:
    """The fingerprint of the value whose `canonical_json` is `text` (for callers that built
    the canonical text another way and checked it is the canonical one)."""
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


# --------------------------------------------------------------------------- TLA+ text

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset(
    """ASSUME ASSUMPTION AXIOM CASE CHOOSE CONSTANT CONSTANTS DOMAIN ELSE ENABLED EXCEPT EXTENDS
    IF IN INSTANCE LET LOCAL MODULE OTHER SF_ SUBSET THEN THEOREM UNCHANGED UNION VARIABLE
    VARIABLES WF_ WITH TRUE FALSE BOOLEAN STRING LAMBDA""".split()
)
_STR_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f"}


def is_identifier(s: str) -> bool:
    """True when `s` can be written as a TLA+ identifier (a record field or a model value)."""
    return bool(_IDENT.match(s)) and not s.isdigit() and s not in _RESERVED and "_" != s


def tla_string(s: str) -> str:
    """A TLA+ string literal for `s`; characters TLA+ cannot hold are rejected."""
    out = []
    for ch in s:
        if ch in _STR_ESCAPES:
            out.append(_STR_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            raise ValueError_(f"string {s!r} holds {ch!r}, which a TLA+ string cannot hold")
    return '"' + "".join(out) + '"'


def to_tla(v: Value, model_values: frozenset[str] | set[str] = frozenset()) -> str:
    """TLA+ source text for a canonical value.

    Strings named in `model_values` are printed as bare model-value identifiers (each must be a
    valid identifier); every other string becomes an escaped string literal.  Anything else that
    cannot be written safely raises ValueError_, so text taken from a trace can never inject
    TLA+ syntax into a generated module.
    """
    t = type(v)
    if t is bool:
        return "TRUE" if v else "FALSE"
    if t is int:
        return str(v)
    if t is str:
        if v in model_values:
            if not is_identifier(v):
                raise ValueError_(f"model value {v!r} is not a TLA+ identifier")
            return v
        return tla_string(v)
    if t is tuple:
        return "<<" + ", ".join(to_tla(x, model_values) for x in v) + ">>"
    if t is frozenset:
        return "{" + ", ".join(sorted(to_tla(x, model_values) for x in v)) + "}"
    if t is Fn:
        items = sorted(v.items(), key=lambda kv: canonical_json(kv[0]))
        if all(type(k) is str and is_identifier(k) and k not in model_values for k, _ in items):
            return "[" + ", ".join(f"{k} |-> {to_tla(x, model_values)}" for k, x in items) + "]"
        return "(" + " @@ ".join(
            f"{to_tla(k, model_values)} :> {to_tla(x, model_values)}" for k, x in items) + ")"
    raise ValueError_(f"not a canonical TLA+ value: {v!r}")
