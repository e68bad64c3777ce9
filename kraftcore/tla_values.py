"""A Lark grammar for TLA+ values as TLC prints them, and states made of them.

TLC prints values in counterexamples (`-tool` output) and in state-graph dumps
(`-dump dot`) with a small, regular syntax:

    42   -3   "text"   TRUE   FALSE   n1 (a model value)
    {1, 2}                          sets
    <<1, "a">>                      sequences and tuples
    [epoch |-> 1, value |-> v1]     records
    (n1 :> 0 @@ n2 :> 1)            functions whose domain is neither 1..n nor a set of strings
    1..3                            an interval TLC did not enumerate

and a state as a conjunction list `/\\ x = ... /\\ y = ...` (or `x = ...` when the spec has a
single variable).  The grammar is LALR(1) and the transformer runs inside the parser, so no parse
tree is built: values come out directly in the canonical form of `kraftcore.values`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lark import Lark, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedInput

from kraftcore.values import Fn, Value, make_fn

__all__ = ["TLAValueSyntaxError", "parse_value", "parse_state", "parse_state_lines",
           "check_depth", "MAX_DEPTH"]

GRAMMAR = r"""
?start: value

?value: INT                                  -> integer
      | STRING                               -> string
      | "TRUE"                               -> true
      | "FALSE"                              -> false
      | IDENT                                -> model_value
      | "{" [_items] "}"                     -> set_
      | "<<" [_items] ">>"                   -> seq
      | "[" field ("," field)* "]"           -> record
      | "(" fn_pair ("@@" fn_pair)* ")"      -> function
      | INT ".." INT                         -> interval

_items: value ("," value)*
field: IDENT "|->" value
fn_pair: value ":>" value

state: conj+
     | IDENT "=" value                       -> single
conj: "/\\" IDENT "=" value

INT: /-?[0-9]+/
STRING: /"(?:[^"\\]|\\.)*"/
IDENT: /[A-Za-z_][A-Za-z0-9_]*/

%import common.WS
%ignore WS
"""

# Limits on what TLC output may hold: TLC's integers are 32-bit (an INT token longer than this
# is not TLC's), and an interval is materialised as a set.
MAX_INT_CHARS = 40
MAX_INTERVAL = 1_000_000

_ESC = re.compile(r"\\(.)", re.S)
_ESC_MAP = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}


def _unescape(body: str) -> str:
    return _ESC.sub(lambda m: _ESC_MAP.get(m.group(1), m.group(1)), body)


@v_args(inline=True)
class _ToPython(Transformer):
    def integer(self, tok):
        if len(tok) > MAX_INT_CHARS:
            raise TLAValueSyntaxError(f"integer {tok[:20]}... has more than {MAX_INT_CHARS} "
                                      "characters")
        return int(tok)

    def string(self, tok):
        s = tok[1:-1]
        return _unescape(s) if "\\" in s else s

    def true(self):
        return True

    def false(self):
        return False

    def model_value(self, tok):
        return str(tok)

    def set_(self, *items):
        return frozenset(x for x in items if x is not None) if items != (None,) else frozenset()

    def seq(self, *items):
        return tuple(x for x in items) if items != (None,) else ()

    def field(self, name, value):
        return (str(name), value)

    def record(self, *fields):
        return make_fn(fields)

    def fn_pair(self, k, v):
        return (k, v)

    def function(self, *pairs):
        return make_fn(pairs)

    def interval(self, lo, hi):
        lo, hi = self.integer(lo), self.integer(hi)
        if hi - lo + 1 > MAX_INTERVAL:
            raise TLAValueSyntaxError(f"interval {lo}..{hi} has more than {MAX_INTERVAL} "
                                      "elements")
        return frozenset(range(lo, hi + 1))

    def conj(self, name, value):
        return (str(name), value)

    def state(self, *conjs):
        return Fn(conjs)

    def single(self, name, value):
        return Fn(((str(name), value),))


class TLAValueSyntaxError(ValueError):
    """TLC output that is not a TLA+ value; names the line and column (and a source if given)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 source: str | None = None):
        where = ""
        if source:
            where += source
        if line is not None:
            where += f"{':' if where else ''}line {line}, column {column}"
        super().__init__(f"{where}: {message}" if where else message)
        self.line, self.column, self.source = line, column, source


@lru_cache(maxsize=None)
def _parser(start: str) -> Lark:
    return Lark(GRAMMAR, parser="lalr", start=start, transformer=_ToPython(),
                maybe_placeholders=True, cache=False)


_WHAT = {"start": "value", "state": "state"}


_NEST = re.compile(r'"(?:[^"\\]|\\.)*"|<<|>>|[\[\]{}()]')
MAX_DEPTH = 200


def _too_deep(text: str) -> bool:
    """Nesting deeper than MAX_DEPTH (checked only when there are that many brackets)."""
    if text.count("{") + text.count("[") + text.count("(") + text.count("<<") <= MAX_DEPTH:
        return False
    depth = 0
    for m in _NEST.finditer(text):
        t = m.group()
        if t in ("{", "[", "(", "<<"):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif t[0] != '"':
            depth -= 1
    return False


def check_depth(text: str, source: str | None = None) -> None:
    """Raise TLAValueSyntaxError when `text` nests brackets deeper than MAX_DEPTH.  Every
    parser of TLC's values calls it on the whole text BEFORE any recursion (parse_value,
    parse_state here; trace_checker.codec.TextParser, which splits values recursively), so
    deep nesting is a clear error, never a RecursionError."""
    if _too_deep(text):
        raise TLAValueSyntaxError(f"value nested deeper than {MAX_DEPTH} levels", source=source)


def _parse(text: str, start: str, source: str | None):
    check_depth(text, source)
    try:
        return _parser(start).parse(text)
    except TLAValueSyntaxError as e:
        raise TLAValueSyntaxError(str(e), source=source) from None
    except RecursionError:
        raise TLAValueSyntaxError("value nested too deeply", source=source) from None
    except UnexpectedInput as e:
        snippet = e.get_context(text, span=30).rstrip()
        raise TLAValueSyntaxError(f"not a TLA+ {_WHAT[start]} as TLC prints it:\n{snippet}",
                                  e.line, e.column, source) from None
    except LarkError as e:  # pragma: no cover - other Lark failures
        raise TLAValueSyntaxError(str(e), source=source) from None


def parse_value(text: str, source: str | None = None) -> Value:
    """Parse one TLA+ value printed by TLC into its canonical Python value."""
    return _parse(text, "start", source)


def parse_state(text: str, source: str | None = None) -> Fn:
    """Parse a state (`/\\ var = value` lines) into an Fn from variable name to value."""
    return _parse(text, "state", source)


def parse_state_lines(lines: list[str], source: str | None = None) -> Fn:
    return parse_state("\n".join(lines), source)
