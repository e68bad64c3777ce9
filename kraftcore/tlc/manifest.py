"""The config manifest: tlc_configs/*.toml, one [[config]] table per TLC configuration.

Keys of a [[config]] table:

    name              unique; equals the .cfg file stem
    module            the TLA+ module TLC runs (path from the repository root), e.g. spec/MCKRaft.tla
    cfg               the TLC config file, e.g. tlc_configs/kraft-ci-3voters.cfg
    profile           ci | deep | bugs
    expect            "ok", "deadlock", or the exact name of the invariant / property to violate
    mode              bfs | simulate
    description       one line
    kip               the KIP section(s) the config exercises
    distinct_states   (ci, bfs, ok) the exact count TLC must report
    depth             (ci, bfs, ok) the depth TLC must report
    timeout_seconds   wall-clock limit (default 600)
    workers           TLC workers (default 2)
    check_deadlock    default false (bounded models stop somewhere; that is not a bug)
    simulate_depth, simulate_traces   (simulate mode)
    max_trace_length  (bugs) the counterexample must be at most this long
    jit               c1 | c2: the JVM's compilers for TLC (default: `default_jit`, c1 for a
                      run of fewer than SMALL_RUN_STATES pinned states and for a bug config,
                      c2 otherwise); set c2 on a bug config that explores a large space
    demo              default false; true puts the config in `kraftcheck demo`'s TLC selection
                      (a few small configs per spec: an exhaustive ci config that holds and a
                      bug config that is found; `kraftcheck demo --full` runs the ci profile)

A manifest file may set a top-level `protocol = "NAME"` (default: the file's stem, so
tlc_configs/kraft.toml is protocol kraft): the trace checker judges a trace of protocol P only
under configs of P's manifest.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from kraftcore.paths import CONFIG_DIR, REPO_ROOT

PROFILES = ("ci", "deep", "bugs")
MODES = ("bfs", "simulate")
_REQUIRED = ("name", "module", "cfg", "profile", "expect", "description", "kip")
_OPTIONAL = {
    "mode": str, "distinct_states": int, "depth": int, "timeout_seconds": int, "workers": int,
    "check_deadlock": bool, "simulate_depth": int, "simulate_traces": int,
    "max_trace_length": int, "generated_states": int, "demo": bool, "jit": str,
}
JITS = ("c1", "c2")

# TLC's JIT.  For a run of up to some tens of thousands of states, compiling TLC's evaluator
# with C2 costs more CPU than it saves; from a few hundred thousand states on it pays.  Measured
# 2026-11-28 (1 worker, CPU seconds, C2 vs C1 only = -XX:TieredStopAtLevel=1):
# kraft-bug-vote-not-persisted (70 states) 2.7 vs 1.6; kraft-graph-small (34,057) 15.0 vs 9.4;
# kraft-ci-restart (353,503) 79 vs 119.  Liveness checking (the tableau, the SCC search) is
# Java work that C2 speeds up whatever the state count: kraft-ci-liveness-backoff-resign
# (9,582 states) 68 vs 108, so every liveness config says `jit = "c2"`.  The JIT changes how
# fast TLC runs, never its verdict or its counts.
SMALL_RUN_STATES = 60_000


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    module: str
    cfg: str
    profile: str
    expect: str
    description: str
    kip: str
    manifest: str
    mode: str = "bfs"
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    timeout_seconds: int = 600
    workers: int = 2
    check_deadlock: bool = False
    simulate_depth: int = 100
    simulate_traces: int | None = None
    max_trace_length: int | None = None
    demo: bool = False
    jit: str | None = None
    protocol: str = ""          # the manifest's top-level `protocol`, else its file stem
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def module_path(self) -> Path:
        """The module TLC runs; relative paths are from the repository root."""
        return REPO_ROOT / self.module  # an absolute self.module stays absolute

    @property
    def cfg_path(self) -> Path:
        return REPO_ROOT / self.cfg

    @property
    def default_jit(self) -> str:
        """c1 for a small run: a pinned count under SMALL_RUN_STATES, or a bug config (they
        stop at their counterexample; the few that explore a large space, and every liveness
        config, say `jit = "c2"`)."""
        if self.jit is not None:
            return self.jit
        if self.distinct_states is not None:
            return "c1" if self.distinct_states < SMALL_RUN_STATES else "c2"
        return "c1" if self.profile == "bugs" else "c2"

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in (
            "name", "module", "cfg", "profile", "expect", "mode", "description", "kip",
            "distinct_states", "depth", "timeout_seconds", "workers", "demo")}


def _entry(table: dict, where: str, protocol: str = "") -> ConfigEntry:
    missing = [k for k in _REQUIRED if k not in table]
    if missing:
        raise ManifestError(f"{where}: missing key(s) {', '.join(missing)}")
    for k in _REQUIRED:
        if not isinstance(table[k], str) or not table[k]:
            raise ManifestError(f"{where}: key {k!r} must be a non-empty string")
    unknown = set(table) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise ManifestError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    for k, typ in _OPTIONAL.items():
        if k in table and not (isinstance(table[k], typ) and not (typ is int and isinstance(table[k], bool))):
            raise ManifestError(f"{where}: key {k!r} must be {typ.__name__}")
    if table["profile"] not in PROFILES:
        raise ManifestError(f"{where}: profile must be one of {', '.join(PROFILES)}")
    if table.get("jit", "c2") not in JITS:
        raise ManifestError(f"{where}: jit must be one of {', '.join(JITS)}")
    if table.get("mode", "bfs") not in MODES:
        raise ManifestError(f"{where}: mode must be one of {', '.join(MODES)}")
    for k in ("module", "cfg"):
        if not (REPO_ROOT / table[k]).is_file():
            raise ManifestError(f"{where}: {k} file {table[k]} does not exist")
    return ConfigEntry(**table, manifest=where.split(":", 1)[0], protocol=protocol)


def load_manifest(config_dir: Path = CONFIG_DIR) -> list[ConfigEntry]:
    """Every config of every tlc_configs/*.toml, in file order; names must be unique."""
    entries: list[ConfigEntry] = []
    seen: dict[str, str] = {}
    for path in sorted(config_dir.glob("*.toml")):
        rel = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ManifestError(f"{rel}: {e}") from None
        tables = data.get("config", [])
        protocol = data.get("protocol", path.stem)
        if not isinstance(protocol, str) or not protocol:
            raise ManifestError(f"{rel}: `protocol` must be a non-empty string")
        if not isinstance(tables, list):
            raise ManifestError(f"{rel}: expected [[config]] tables")
        for i, table in enumerate(tables):
            where = f"{rel}: config #{i + 1}" + (f" ({table.get('name')})" if "name" in table else "")
            if not isinstance(table, dict):
                raise ManifestError(f"{where}: expected a table")
            e = _entry(table, where, protocol)
            if e.name in seen:
                raise ManifestError(f"{where}: name {e.name!r} is also used in {seen[e.name]}")
            seen[e.name] = where
            entries.append(e)
    return entries


def _is_path(name_or_path: str) -> bool:
    """A .cfg file name or anything with a folder part is a path, never a config name."""
    return (name_or_path.endswith(".cfg") or "/" in name_or_path
            or (os.sep != "/" and os.sep in name_or_path))


def find_entry(name_or_path: str, entries: list[ConfigEntry] | None = None) -> ConfigEntry:
    """A config by name, or by its file: a path (anything ending in .cfg or with a folder part)
    must be the file of a manifest config (the same file once resolved, e.g.
    tlc_configs/NAME.cfg); any other path, existing or not, raises ManifestError, never the
    config that happens to have the same file name."""
    entries = load_manifest() if entries is None else entries
    if not _is_path(name_or_path):
        for e in entries:
            if e.name == name_or_path:
                return e
        raise ManifestError(f"no config named {name_or_path!r} in tlc_configs/*.toml "
                            f"(known: {', '.join(e.name for e in entries) or 'none'})")
    p = Path(name_or_path)
    hint = "give its name or tlc_configs/NAME.cfg"
    if not p.is_file():
        raise ManifestError(f"{name_or_path}: no such config file ({hint})")
    real = os.path.realpath(p)
    for e in entries:
        if os.path.realpath(e.cfg_path) == real:
            return e
    same = next((e for e in entries if e.name == p.stem), None)
    also = f"; config {same.name} is {same.cfg}" if same is not None else ""
    raise ManifestError(f"{name_or_path} is not a config of tlc_configs/ ({hint}){also}")
