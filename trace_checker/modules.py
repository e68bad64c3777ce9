"""Which spec modules a config's module is built on (its EXTENDS closure), read from the text.

A config judges traces of its own module's spec and of the specs it extends: MCKRaftBackoff
extends KRaftBackoff and MCKRaft, which extends KRaft, so a KRaft trace may be judged under it
and KRaft's timers apply.  Only modules found as files (the config module's folder, then
spec/) count: standard modules (TLC, Naturals, ...) are not specs a trace can be of.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from kraftcore.paths import SPEC_DIR

__all__ = ["spec_closure"]

_EXTENDS = re.compile(r"^\s*EXTENDS\s+([A-Za-z0-9_,\s]+?)\s*$", re.M)
_COMMENT = re.compile(r"\\\*[^\n]*|\(\*.*?\*\)", re.S)


def spec_closure(module_path: Path) -> frozenset[str]:
    """The names of the module and of every spec module it extends, transitively."""
    return _closure(Path(module_path).resolve())


@lru_cache(maxsize=64)
def _closure(module_path: Path) -> frozenset[str]:
    folders = [module_path.parent, SPEC_DIR]
    seen: set[str] = set()
    todo = [module_path.stem]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = next((f / f"{name}.tla" for f in folders if (f / f"{name}.tla").is_file()), None)
        if path is None:
            continue                     # a standard module: not a spec of traces
        seen.add(name)
        text = _COMMENT.sub(" ", path.read_text(encoding="utf-8", errors="replace"))
        for m in _EXTENDS.finditer(text):
            todo.extend(x.strip() for x in m.group(1).split(",") if x.strip())
    return frozenset(seen)
