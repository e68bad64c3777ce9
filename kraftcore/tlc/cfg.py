"""Reading TLC model configuration files (.cfg): sections and CONSTANT assignments.

The one .cfg reader of the project (TLC runs, bounded simulation via refimpl/sim/bounds.py,
generated trace-checking configs via trace_checker/tlagen.py).  It reads the names listed under
each section keyword (INVARIANT(S) / PROPERTY(IES) name a violated property), and the CONSTANT
assignments (`Voters = {n1, n2}`, `n1 = n1`, `MaxEpoch = 3`, `Op <- Def`), whose values are parsed
with the TLA+ value grammar and whose source text is kept (`assignments`) so that a generated
config can repeat them verbatim.  Comments: \\* to end of line, (* ... *).  Errors name the file
and line (and the constant).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kraftcore.tla_values import TLAValueSyntaxError, parse_value
from kraftcore.values import Value

KEYWORDS = {
    "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS",
    "PROPERTY", "PROPERTIES", "SYMMETRY", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT",
    "ACTION_CONSTRAINTS", "VIEW", "CHECK_DEADLOCK", "POSTCONDITION", "ALIAS",
}
_SINGULAR = {"CONSTANTS": "CONSTANT", "INVARIANTS": "INVARIANT", "PROPERTIES": "PROPERTY",
             "CONSTRAINTS": "CONSTRAINT", "ACTION_CONSTRAINTS": "ACTION_CONSTRAINT"}


@dataclass(frozen=True)
class Assignment:
    """One CONSTANT statement as written: `name = rhs` or `name <- rhs` (comments removed,
    on one line), at `line` of the file."""

    name: str
    op: str        # "=" or "<-"
    rhs: str
    line: int

    @property
    def text(self) -> str:
        return f"{self.name} {self.op} {self.rhs}"


class CfgError(ValueError):
    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}" if line > 0 else f"{path}: {message}")
        self.path, self.line = path, line


@dataclass
class TLCConfig:
    path: str
    sections: dict[str, list[str]] = field(default_factory=dict)   # keyword -> names
    constants: dict[str, Value] = field(default_factory=dict)      # name -> value
    substitutions: dict[str, str] = field(default_factory=dict)    # name <- operator
    model_values: set[str] = field(default_factory=set)            # names bound as n = n
    assignments: list[Assignment] = field(default_factory=list)    # CONSTANT statements, in order

    @property
    def invariants(self) -> list[str]:
        return self.sections.get("INVARIANT", [])

    @property
    def properties(self) -> list[str]:
        return self.sections.get("PROPERTY", [])


def _strip_comments(text: str, path: str) -> str:
    """Blank out comments (keeping the line breaks): \\* to end of line, and (* ... *), which
    nest in TLA+."""
    out, i, depth, n, opened = [], 0, 0, len(text), 1
    while i < n:
        if depth == 0 and text.startswith("\\*", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("(*", i):
            if depth == 0:
                opened = text.count("\n", 0, i) + 1
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
        raise CfgError(path, opened, "unterminated (* comment")
    return "".join(out)


def parse_cfg(path: str | Path) -> TLCConfig:
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CfgError(path, 0, f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        line = Path(path).read_bytes()[:e.start].count(b"\n") + 1
        raise CfgError(path, line, "not UTF-8") from None
    return parse_cfg_text(text, path)


_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<op><-|\|->|<<|>>|\.\.|:>|@@|[=,{}\[\]()])'
                    r'|(?P<word>-?[A-Za-z0-9_]+))')


def _tokens(text: str, path: str, first_line: int) -> list[tuple[str, str, int, int, int]]:
    """(kind, text, line, start, end) tokens of a CONSTANT section."""
    out, pos, line = [], 0, first_line
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            bad = text[pos:].lstrip()[:20]
            line += text[pos:pos + len(text[pos:]) - len(text[pos:].lstrip())].count("\n")
            raise CfgError(path, line, f"unexpected text in CONSTANT section: {bad!r}")
        line += text[pos:m.start(m.lastgroup)].count("\n")
        out.append((m.lastgroup, m.group(m.lastgroup), line, m.start(m.lastgroup), m.end()))
        pos = m.end()
    return out


def _parse_constants(cfg: TLCConfig, text: str, first_line: int) -> None:
    toks = _tokens(text, cfg.path, first_line)
    i = 0
    while i < len(toks):
        kind, name, line = toks[i][:3]
        if kind != "word" or i + 1 >= len(toks) or toks[i + 1][1] not in ("=", "<-"):
            raise CfgError(cfg.path, line, f"expected `Name = value` or `Name <- Op` at {name!r}")
        op = toks[i + 1][1]
        j, depth = i + 2, 0
        while j < len(toks):
            k, t = toks[j][:2]
            if depth == 0 and j > i + 2 and k == "word" and j + 1 < len(toks) \
                    and toks[j + 1][1] in ("=", "<-") and toks[j - 1][1] not in (",", "|->", ":>", "@@", ".."):
                break
            if t in ("{", "[", "(", "<<"):
                depth += 1
            elif t in ("}", "]", ")", ">>"):
                depth -= 1
            j += 1
        rhs_toks = toks[i + 2:j]
        if not rhs_toks:
            raise CfgError(cfg.path, line, f"constant {name} has no value")
        rhs = " ".join(t[1] for t in rhs_toks)
        source = re.sub(r"\s*\n\s*", " ", text[rhs_toks[0][3]:rhs_toks[-1][4]])
        if name in cfg.constants or name in cfg.substitutions:
            raise CfgError(cfg.path, line, f"constant {name} is assigned twice")
        cfg.assignments.append(Assignment(name, op, source, line))
        if op == "<-":
            cfg.substitutions[name] = rhs
        elif rhs == name:
            cfg.model_values.add(name)
            cfg.constants[name] = name
        else:
            try:
                cfg.constants[name] = parse_value(rhs)
            except TLAValueSyntaxError as e:
                raise CfgError(cfg.path, line, f"constant {name}: {e}") from None
        i = j


def parse_cfg_text(text: str, path: str = "<cfg>") -> TLCConfig:
    cfg = TLCConfig(path)
    section: str | None = None
    const_parts: list[tuple[int, str]] = []
    for lineno, raw in enumerate(_strip_comments(text, path).splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        first = line.split()[0]
        if first in KEYWORDS:
            section = _SINGULAR.get(first, first)
            cfg.sections.setdefault(section, [])
            line = line[len(first):].strip()
            if not line:
                continue
        if section is None:
            raise CfgError(path, lineno, f"text before any section keyword: {line!r}")
        if section == "CONSTANT":
            const_parts.append((lineno, line))
        else:
            cfg.sections[section].extend(line.split())
    # CONSTANT sections may hold several assignments per line; parse them all together.
    if const_parts:
        first = const_parts[0][0]
        text = ""
        prev = first
        for lineno, line in const_parts:
            text += "\n" * (lineno - prev) + " " + line
            prev = lineno
        _parse_constants(cfg, text, first)
    return cfg
