"""Bounded mode: read the CONSTANT assignments of a TLC configuration file.

`kraftcheck simulate --bounds tlc_configs/X.cfg` makes the simulator respect the same bounds
TLC explores (servers, max epoch, log length, values, restarts...).  This module parses only
what the simulator needs: the CONSTANT / CONSTANTS sections of a .cfg file.

Accepted right-hand sides:  integers (-3, 42), TRUE / FALSE, "strings", model values (bare
identifiers), sets {a, b, {1, 2}}, tuples <<1, a>>.  `X = X` (or `X <- X`... see below)
declares a model value.  `X <- Op` substitutions name an operator defined in the spec; they are
recorded in `substitutions` but have no value here.  Other statements (INIT, NEXT, SPECIFICATION,
INVARIANT(S), PROPERTY(IES), CONSTRAINT(S), ACTION_CONSTRAINT(S), SYMMETRY, VIEW,
CHECK_DEADLOCK, ALIAS, POSTCONDITION) are skipped.  Comments: \\* to end of line, (* ... *).

Errors raise `BoundsError` naming the file and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Bounds", "BoundsError", "parse_cfg", "parse_cfg_text"]

_SECTION_KEYWORDS = {
    "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS",
    "PROPERTY", "PROPERTIES", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT",
    "ACTION_CONSTRAINTS", "SYMMETRY", "VIEW", "CHECK_DEADLOCK", "ALIAS", "POSTCONDITION",
}

_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\n]+)
      | (?P<str>"(?:[^"\\\n]|\\.)*")
      | (?P<int>-?[0-9]+)
      | (?P<op><-|<<|>>|[{},=])
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<bad>.)""",
    re.VERBOSE,
)


class BoundsError(ValueError):
    pass


@dataclass(frozen=True)
class Bounds:
    """The CONSTANT section of a TLC config: values, model values and substitutions."""

    path: str
    constants: dict[str, Any] = field(default_factory=dict)
    model_values: frozenset[str] = frozenset()
    substitutions: dict[str, str] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return name in self.constants

    def int(self, name: str, default: int | None = None) -> int | None:
        if name not in self.constants:
            return default
        v = self.constants[name]
        if type(v) is not int:
            raise BoundsError(f"{self.path}: constant {name} should be an integer, got {v!r}")
        return v

    def bool(self, name: str, default: bool | None = None) -> bool | None:
        if name not in self.constants:
            return default
        v = self.constants[name]
        if type(v) is not bool:
            raise BoundsError(f"{self.path}: constant {name} should be TRUE or FALSE, got {v!r}")
        return v

    def set(self, name: str, default: frozenset | None = None) -> frozenset | None:
        if name not in self.constants:
            return default
        v = self.constants[name]
        if type(v) is not frozenset:
            raise BoundsError(f"{self.path}: constant {name} should be a set, got {v!r}")
        return v

    def first(self, names: tuple[str, ...], kind: str = "int") -> tuple[str, Any] | None:
        """The first of several alternative constant names that is assigned (spec naming may
        vary: MaxEpoch / MaxTerm ...)."""
        for n in names:
            if n in self.constants:
                return n, getattr(self, kind)(n)
        return None


def _strip_comments(text: str, path: str) -> str:
    out, i, depth, n = [], 0, 0, len(text)
    while i < n:
        if depth == 0 and text.startswith("\\*", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("(*", i):
            depth += 1
            out.append("  ")
            i += 2
            continue
        if depth and text.startswith("*)", i):
            depth -= 1
            out.append("  ")
            i += 2
            continue
        ch = text[i]
        out.append(ch if (depth == 0 or ch == "\n") else " ")
        i += 1
    if depth:
        raise BoundsError(f"{path}: unterminated (* comment")
    return "".join(out)


def _tokens(text: str, path: str) -> list[tuple[str, str, int]]:
    toks, line = [], 1
    for m in _TOKEN.finditer(text):
        kind, val = m.lastgroup, m.group()
        if kind == "bad":
            raise BoundsError(f"{path}:{line}: unexpected character {val!r}")
        if kind != "ws":
            toks.append((kind, val, line))
        line += val.count("\n")
    return toks


class _Parser:
    def __init__(self, toks, path):
        self.toks, self.i, self.path = toks, 0, path

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, what: str):
        t = self.peek()
        if t is None:
            last = self.toks[-1][2] if self.toks else 1
            raise BoundsError(f"{self.path}:{last}: unexpected end of file, expected {what}")
        self.i += 1
        return t

    def expect(self, val: str):
        t = self.next(repr(val))
        if t[1] != val:
            raise BoundsError(f"{self.path}:{t[2]}: expected {val!r}, found {t[1]!r}")
        return t

    def value(self, model_values: set[str]) -> Any:
        kind, val, line = self.next("a value")
        if kind == "int":
            return int(val)
        if kind == "str":
            return bytes(val[1:-1], "utf-8").decode("unicode_escape")
        if kind == "ident":
            if val == "TRUE":
                return True
            if val == "FALSE":
                return False
            if val in _SECTION_KEYWORDS:
                raise BoundsError(f"{self.path}:{line}: expected a value, found keyword {val}")
            model_values.add(val)
            return val
        if val == "{":
            return frozenset(self._items("}", model_values))
        if val == "<<":
            return tuple(self._items(">>", model_values))
        raise BoundsError(f"{self.path}:{line}: expected a value, found {val!r}")

    def _items(self, close: str, model_values: set[str]) -> list:
        items = []
        t = self.peek()
        if t is not None and t[1] == close:
            self.i += 1
            return items
        while True:
            items.append(self.value(model_values))
            t = self.next(f"',' or {close!r}")
            if t[1] == close:
                return items
            if t[1] != ",":
                raise BoundsError(f"{self.path}:{t[2]}: expected ',' or {close!r}, found {t[1]!r}")


def parse_cfg_text(text: str, path: str = "<cfg>") -> Bounds:
    toks = _tokens(_strip_comments(text, path), path)
    p = _Parser(toks, path)
    constants: dict[str, Any] = {}
    substitutions: dict[str, str] = {}
    model_values: set[str] = set()
    in_constants = False
    while p.peek() is not None:
        kind, val, line = p.peek()
        if kind == "ident" and val in _SECTION_KEYWORDS:
            p.i += 1
            in_constants = val in ("CONSTANT", "CONSTANTS")
            continue
        if not in_constants:
            p.i += 1  # a name listed under INIT / INVARIANT ... : not ours
            continue
        if kind != "ident":
            raise BoundsError(f"{path}:{line}: expected a constant name, found {val!r}")
        p.i += 1
        op = p.next("'=' or '<-'")
        if op[1] == "<-":
            k2, v2, l2 = p.next("an operator name")
            if k2 != "ident":
                raise BoundsError(f"{path}:{l2}: expected an operator name after '<-', found {v2!r}")
            substitutions[val] = v2
            continue
        if op[1] != "=":
            raise BoundsError(f"{path}:{op[2]}: expected '=' or '<-' after {val}, found {op[1]!r}")
        if val in constants:
            raise BoundsError(f"{path}:{line}: constant {val} is assigned twice")
        constants[val] = p.value(model_values)
        if constants[val] == val:  # `X = X`: X is declared a model value
            model_values.add(val)
    return Bounds(path=path, constants=constants, model_values=frozenset(model_values),
                  substitutions=substitutions)


def parse_cfg(path: str | Path) -> Bounds:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise BoundsError(f"{p}: cannot read: {e.strerror or e}") from None
    return parse_cfg_text(text, str(p))
