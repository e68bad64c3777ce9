"""Cache keys and the on-disk cache of parsed graph indexes (under the work folder).

A key is a SHA-256 over everything that determines TLC's output: the text of every module TLC
may load (spec/*.tla and the run module's own folder), the config text, the TLC jar's sha256
and the index format.  Changing any spec file, the config or TLC gives a new key, so a stale
index is never used.  Files are written atomically; an unreadable entry is rebuilt.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from kraftcore.output import write_atomic
from kraftcore.paths import SPEC_DIR, work_dir
from kraftcore.tlc.java import toolchain
from trace_checker.graph import FORMAT, GraphFormatError, StateGraph

__all__ = ["cache_dir", "spec_key", "load_cached", "store"]


def cache_dir(kind: str = "graphs") -> Path:
    d = work_dir() / "trace_checker" / kind
    d.mkdir(parents=True, exist_ok=True)
    return d


def spec_key(module_path: Path, cfg_text: str, extra: str = "") -> str:
    """The cache key of a TLC run of `module_path` with config text `cfg_text`."""
    h = hashlib.sha256()
    h.update(f"trace-checker-index/{FORMAT}\0".encode())
    folders = [SPEC_DIR, Path(module_path).parent]
    seen: set[Path] = set()
    for folder in folders:
        for tla in sorted(folder.glob("*.tla")):
            if tla.resolve() in seen:
                continue
            seen.add(tla.resolve())
            h.update(tla.name.encode() + b"\0" + tla.read_bytes() + b"\0")
    h.update(Path(module_path).name.encode() + b"\0")
    h.update(cfg_text.encode() + b"\0")
    h.update(toolchain().jar_sha256.encode() + b"\0")
    h.update(extra.encode())
    return h.hexdigest()[:32]


def load_cached(key: str, kind: str = "graphs") -> StateGraph | None:
    p = cache_dir(kind) / f"{key}.graph"
    if not p.is_file():
        return None
    try:
        return StateGraph.from_bytes(p.read_bytes())
    except GraphFormatError:
        return None


def store(key: str, graph: StateGraph, kind: str = "graphs") -> Path:
    p = cache_dir(kind) / f"{key}.graph"
    write_atomic(p, graph.to_bytes())
    return p
