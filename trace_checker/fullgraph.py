"""Full-graph mode: the whole state graph of a bounded config, built once and cached.

TLC runs the config with `-dump dot,actionlabels`; the dump is parsed into a StateGraph
(graph.py) and stored under the work folder keyed by cache.spec_key, so the next load reads a
marshal file instead of running TLC and parsing.  Configs with SYMMETRY are refused: their dump
holds one representative per symmetry class, so a trace state could be missing only because it
is a permutation of a state in the graph.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from kraftcore.paths import CONFIG_DIR
from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import ConfigEntry, ManifestError, find_entry, load_manifest
from kraftcore.tlc.runner import run_config
from kraftcore.locks import build_lock
from trace_checker.cache import cache_dir, load_cached, spec_key, store
from trace_checker.dot import read_dump
from trace_checker.graph import StateGraph

__all__ = ["GraphBuildError", "resolve_entry", "load_graph", "GraphLoad"]


class GraphBuildError(RuntimeError):
    """The graph cannot be built (symmetry, TLC failure, ...); the message says why."""


@dataclass
class GraphLoad:
    graph: StateGraph
    cached: bool
    seconds: float
    tlc_seconds: float = 0.0
    parse_seconds: float = 0.0


def resolve_entry(name: str | ConfigEntry, manifest_dir: Path | None = None,
                  module: str | Path | None = None) -> ConfigEntry:
    """A manifest config by name, or a .cfg file (its manifest entry, else run with `module`)."""
    if isinstance(name, ConfigEntry):
        return name
    entries = load_manifest(manifest_dir or CONFIG_DIR)
    p = Path(name)
    if p.suffix == ".cfg" and p.is_file():
        for e in entries:
            if e.cfg_path.resolve() == p.resolve():
                return e
        if module is None:
            raise ManifestError(f"{name} is not in the manifest: give the module it configures")
        m = Path(module).resolve()
        if not m.is_file():
            raise ManifestError(f"module {module} does not exist")
        return ConfigEntry(name=p.stem, module=str(m), cfg=str(p.resolve()), profile="ci",
                           expect="ok", description="given on the command line", kip="none",
                           manifest="command line")
    return find_entry(name, entries)


def check_graph_config(entry: ConfigEntry) -> None:
    cfg = parse_cfg(entry.cfg_path)
    if cfg.sections.get("SYMMETRY") is not None:
        raise GraphBuildError(
            f"config {entry.name} declares SYMMETRY: its dump holds only one representative per "
            "symmetry class, so full-graph lookup would report permuted states as missing. Use a "
            "no-symmetry graph config (e.g. kraft-graph-small / elr-graph-small) or --lazy.")
    if entry.mode != "bfs":
        raise GraphBuildError(f"config {entry.name} is a simulation config; full-graph mode "
                              "needs an exhaustive (bfs) config")


def graph_key(entry: ConfigEntry) -> str:
    """`<config name>-<hash>`: the name lets a new build remove the config's stale entries."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", entry.name)
    return safe + "-" + spec_key(entry.module_path, entry.cfg_path.read_text(encoding="utf-8"),
                                 extra=f"full:{entry.name}")


def _prune(key: str) -> None:
    """Remove the index and dump of earlier versions of the same config."""
    prefix = key.rsplit("-", 1)[0] + "-"
    for kind, suffix in (("graphs", ".graph"), ("dumps", ".dot")):
        for f in cache_dir(kind).glob(f"{prefix}*{suffix}"):
            if f.stem != key and len(f.stem) == len(key):
                f.unlink(missing_ok=True)


def load_graph(name: str | ConfigEntry, *, manifest_dir: Path | None = None, jobs: int = 1,
               rebuild: bool = False, timeout: float | None = None) -> GraphLoad:
    """The full graph of a manifest config: from the cache, or by running TLC once."""
    entry = resolve_entry(name, manifest_dir)
    check_graph_config(entry)
    key = graph_key(entry)
    t0 = time.monotonic()
    if not rebuild:
        g = load_cached(key)
        if g is not None:
            return GraphLoad(g, True, time.monotonic() - t0)
    # one build per key: a process that needs the same graph meanwhile waits, then reads it
    with build_lock(cache_dir("graphs") / f"{key}.lock"):
        if not rebuild:
            g = load_cached(key)
            if g is not None:
                return GraphLoad(g, True, time.monotonic() - t0)
        return _build(entry, key, t0, jobs, timeout)


def _build(entry: ConfigEntry, key: str, t0: float, jobs: int,
           timeout: float | None) -> GraphLoad:
    """Run TLC with the dump, parse it, store the index (the caller holds the key's lock)."""
    dump = cache_dir("dumps") / f"{key}.dot"
    part = dump.with_name(f"{key}.{os.getpid()}.part.dot")  # concurrent builds never share it
    res = run_config(entry, dump=part, timeout=timeout)
    t1 = time.monotonic()
    if res.status == "ok" and part.is_file():
        os.replace(part, dump)
    if res.status != "ok" or not dump.is_file():
        part.unlink(missing_ok=True)        # a partial dump is useless
        why = "; ".join(e.message.splitlines()[0] for e in res.errors[:3]) or res.violated or ""
        raise GraphBuildError(f"TLC did not explore {entry.name} completely (status "
                              f"{res.status}{': ' + why if why else ''}); log: {res.log}")
    raw = read_dump(dump, unescape=False)
    g = StateGraph.from_dump(raw, jobs=jobs, source=str(dump), meta={
        "config": entry.name, "module": entry.module, "cfg": entry.cfg, "key": key,
        "tlc_distinct_states": res.distinct_states, "dump": str(dump)})
    # TLC tells a string from a model value of the same name; the canonical values do not
    # (kraftcore.values), so such states would merge.  Recorded, never silently assumed.
    g.meta["merged_states"] = (res.distinct_states or len(g)) - len(g)
    t2 = time.monotonic()
    store(key, g)
    _prune(key)
    return GraphLoad(g, False, time.monotonic() - t0, t1 - t0, t2 - t1)
