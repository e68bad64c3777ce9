"""Writing trace values into generated TLA+ modules and TLC configs, safely.

Values come from trace files, so nothing of theirs reaches TLA+ text except through
`kraftcore.values.to_tla`, which escapes strings and raises on anything it cannot write.
Model values are the one exception to "strings become string literals": their names come from
the TLC config and the trace header and must be TLA+ identifiers.  A generated module cannot
name a model value directly (TLC binds model values only in the config), so each model value
`m` used by the module is declared as a constant `TC_mv_m` and bound in the config as
`TC_mv_m = m`; TLC identifies model values by name, so it is the same value the spec's own
constants hold.

TLC's integers are 32-bit: a larger integer cannot be a value of any state TLC explores, so it
is rejected here (the trace is then out of the model's scope, not a counterexample).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kraftcore.tlc.cfg import TLCConfig
from kraftcore.values import Fn, Value, ValueError_, canonical_json, is_identifier, tla_string, to_tla

__all__ = ["MV_PREFIX", "Unwritable", "ModelValues", "cfg_constants", "value_size",
           "check_tlc_ints"]

MV_PREFIX = "TC_mv_"
TLC_INT_MIN, TLC_INT_MAX = -(2**31), 2**31 - 1


class Unwritable(ValueError):
    """A value that cannot be written into a generated module (the message says why)."""


def check_tlc_ints(v: Value, where: str = "value") -> None:
    t = type(v)
    if t is int:
        if not TLC_INT_MIN <= v <= TLC_INT_MAX:
            raise Unwritable(f"{where}: integer {v} is outside TLC's 32-bit range")
    elif t is tuple or t is frozenset:
        for x in v:
            check_tlc_ints(x, where)
    elif t is Fn:
        for k, x in v.items():
            check_tlc_ints(k, where)
            check_tlc_ints(x, where)


def value_size(v: Value) -> int:
    """The largest integer, sequence length, set size, domain size or bag cardinality (sum of
    an integer-valued function) inside a value."""
    t = type(v)
    if t is bool or t is str:
        return 0
    if t is int:
        return abs(v)
    if t is tuple or t is frozenset:
        return max([len(v)] + [value_size(x) for x in v])
    if t is Fn:
        m = max([len(v)] + [max(value_size(k), value_size(x)) for k, x in v.items()])
        if all(type(x) is int for x in v.values()):     # a bag: its cardinality is the sum
            m = max(m, sum(abs(x) for x in v.values()))
        return m
    return 0


class ModelValues:
    """The model values a generated module may use, renamed to TC_mv_* constants."""

    def __init__(self, names: Iterable[str]):
        names = set(names)
        for n in names:
            if type(n) is not str or not is_identifier(n):
                raise Unwritable(f"model value {n!r} is not a TLA+ identifier")
        self.names = frozenset(names)
        self.renamed = {n: MV_PREFIX + n for n in self.names}
        self.used: set[str] = set()

    def atom(self, s: str) -> str:
        """The text of a string: a model value's TC_mv_* constant, else an escaped string
        literal.  Decided on the trace's value itself, never on renamed text, so a trace
        string that reads like a renamed model value ("TC_mv_n1") stays a string literal."""
        if s in self.names:
            self.used.add(s)
            return self.renamed[s]
        return tla_string(s)

    def is_field(self, k) -> bool:
        """Whether a function key can be written as a record field name."""
        return type(k) is str and is_identifier(k) and k not in self.names

    def _rename(self, v: Value) -> Value:
        """The value as the generated text reads back (model values as their TC_mv_* names);
        for tests that parse the text again."""
        t = type(v)
        if t is str:
            return self.renamed.get(v, v)
        if t is tuple:
            return tuple(self._rename(x) for x in v)
        if t is frozenset:
            return frozenset(self._rename(x) for x in v)
        if t is Fn:
            return Fn((self._rename(k), self._rename(x)) for k, x in v.items())
        return v

    def tla(self, v: Value, where: str = "value") -> str:
        """TLA+ text of a trace value (model values as TC_mv_* constants)."""
        check_tlc_ints(v, where)
        try:
            return self._text(v)
        except ValueError_ as e:
            raise Unwritable(f"{where}: {e}") from None
        except RecursionError:
            raise Unwritable(f"{where}: value nested too deeply") from None

    def _text(self, v: Value) -> str:
        t = type(v)
        if t is str:
            return self.atom(v)
        if t is tuple:
            return "<<" + ", ".join(self._text(x) for x in v) + ">>"
        if t is frozenset:
            return "{" + ", ".join(sorted(self._text(x) for x in v)) + "}"
        if t is Fn:
            items = sorted(v.items(), key=lambda kv: canonical_json(kv[0]))
            if all(self.is_field(k) for k, _ in items):
                return "[" + ", ".join(f"{k} |-> {self._text(x)}" for k, x in items) + "]"
            return "(" + " @@ ".join(f"{self._text(k)} :> {self._text(x)}"
                                     for k, x in items) + ")"
        return to_tla(v)                 # Booleans and integers; anything else raises

    def declarations(self) -> str:
        if not self.used:
            return ""
        return "CONSTANTS " + ", ".join(sorted(self.renamed[n] for n in self.used)) + "\n"

    def bindings(self) -> list[str]:
        return [f"{self.renamed[n]} = {n}" for n in sorted(self.used)]


def cfg_constants(cfg: TLCConfig, overrides: Mapping[str, int] | None = None) -> list[str]:
    """The CONSTANT statements of a config as text lines, as written (so a string constant stays
    a string and a model value a model value; kraftcore.tlc.cfg keeps their source), with the
    integer constants named in `overrides` raised to the given values."""
    overrides = dict(overrides or {})
    for name, value in overrides.items():
        if type(value) is not int or not is_identifier(name):
            raise Unwritable(f"override {name} = {value!r}: only integer constants are raised")
        if type(cfg.constants.get(name)) is not int:
            raise Unwritable(f"{cfg.path}: cannot find the assignment of {name} to raise it")
    return [f"{a.name} = {overrides[a.name]}" if a.name in overrides else a.text
            for a in cfg.assignments]


def state_tuple(mv: ModelValues, state: Mapping[str, Value], variables: Sequence[str],
                where: str) -> str:
    return "<<" + ", ".join(mv.tla(state[v], f"{where}.{v}") for v in variables) + ">>"
