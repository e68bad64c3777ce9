"""Reading the state graph TLC writes with `-dump dot,actionlabels FILE`.

TLC 2.15 writes one line per state and one per transition:

    -8207148216331495497 [label="/\\\\ x = 0\\n/\\\\ y = {1, 2}",style = filled]
    -8207148216331495497 -> 340119583367367389 [label="Inc",color="black",fontcolor="black"];

Node ids are TLC's 64-bit fingerprints; `style = filled` marks initial states; labels are
dot-escaped (backslash, double quote, newline).  Self-loops and edges to states already seen
are written too, one line per (source, successor, action) TLC generated.  Everything else
(graph header, rank lines) is skipped.

`split_label` cuts a state label into its `/\\ var = text` conjuncts without parsing the
values, so the caller can parse each distinct value text once (see codec.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DotDump", "DotFormatError", "read_dump", "unescape_label", "split_label",
           "split_escaped_label"]

_NODE = re.compile(r'(-?\d+) \[label="((?:[^"\\]|\\.)*)"(,style = filled)?\];?\s*$')
_EDGE = re.compile(r'(-?\d+) -> (-?\d+)(?: \[label="((?:[^"\\]|\\.)*)"[^\]]*\])?;?\s*$')
_ESC = re.compile(r"\\(.)", re.S)
_CONJ = re.compile(r"^/\\ ([A-Za-z_][A-Za-z0-9_]*) = ", re.M)
_SINGLE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*) = ")


class DotFormatError(ValueError):
    """A dump line that is neither a node, an edge nor dot boilerplate (names file and line)."""


@dataclass
class DotDump:
    """The raw content of a dump: labels are unescaped but not parsed."""

    labels: dict[int, str] = field(default_factory=dict)       # TLC id -> state text
    initial: list[int] = field(default_factory=list)           # TLC ids of initial states
    escaped: bool = False                                      # labels still dot-escaped
    edges: list[tuple[int, int, str]] = field(default_factory=list)  # (src, dst, action)


def unescape_label(s: str) -> str:
    if "\\" not in s:
        return s
    return _ESC.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), s)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    lineno = 0
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for lineno, line in enumerate(f, 1):
                yield lineno, line
    except UnicodeDecodeError:
        raise DotFormatError(f"{path}:{lineno + 1}: not UTF-8") from None


def read_dump(path: str | Path, unescape: bool = True) -> DotDump:
    """Read a dot dump; raises DotFormatError naming the line of anything unexpected.

    unescape=False keeps labels dot-escaped (`split_escaped_label` cuts those; the caller
    unescapes only the distinct value texts).  Lines are cut with str methods, not a regex:
    labels of large states are long.
    """
    path = Path(path)
    dump = DotDump(escaped=not unescape)
    labels, initial, edges = dump.labels, dump.initial, dump.edges
    for lineno, line in _lines(path):
        c = line[:1]
        if not (c == "-" or c.isdigit()):
            continue    # graph header, attributes, rank lines and braces carry nothing we need
        sp = line.find(" ")
        try:
            if line.startswith("->", sp + 1):
                sp2 = line.index(" ", sp + 4)
                src, dst = int(line[:sp]), int(line[sp + 4:sp2])
                rest = line[sp2:]
                if rest.startswith(' [label="'):
                    action = rest[9:rest.index('"', 9)]
                elif rest.strip() in ("", ";"):
                    action = ""
                else:
                    raise ValueError(rest)
                edges.append((src, dst, action))
                continue
            ident = int(line[:sp])
            if not line.startswith(' [label="', sp):
                raise ValueError(line)
            body = line[sp + 9:].rstrip()
            if body.endswith('",style = filled]'):
                label, init = body[:-17], True
            elif body.endswith('"];'):
                label, init = body[:-3], False
            elif body.endswith('"]'):
                label, init = body[:-2], False
            else:
                raise ValueError(body[-20:])
        except ValueError:
            what = "edge" if line.startswith("->", sp + 1) else "node"
            raise DotFormatError(f"{path}:{lineno}: not a dot {what}: {line[:80]!r}") from None
        labels[ident] = unescape_label(label) if unescape else label
        if init:
            initial.append(ident)
    return dump


_ESC_CONJ = "\\n/\\\\ "      # a newline then the next conjunct, as dot escapes them


def split_escaped_label(label: str) -> list[tuple[str, str]]:
    """[(variable, escaped value text)] of a dot-escaped state label (see split_label)."""
    parts = label[4:].split(_ESC_CONJ) if label.startswith("/\\\\ ") else [label]
    out = [p.partition(" = ")[::2] for p in parts]
    for name, text in out:
        if not text:
            raise DotFormatError(f"state label without `var = value`: {label[:80]!r}")
    return out


def split_label(label: str) -> list[tuple[str, str]]:
    """[(variable, value text)] of a state label, in TLC's order.

    A value printed over several lines keeps its continuation lines (they never start with
    `/\\ name = `, TLC indents them); a single-variable spec prints `x = value`.
    """
    starts = [(m.start(), m.end(), m.group(1)) for m in _CONJ.finditer(label)]
    if not starts:
        m = _SINGLE.match(label)
        if m is None:
            raise DotFormatError(f"state label without `var = value`: {label[:80]!r}")
        return [(m.group(1), label[m.end():].strip())]
    out = []
    for i, (_, vstart, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(label)
        out.append((name, label[vstart:end].strip()))
    return out
