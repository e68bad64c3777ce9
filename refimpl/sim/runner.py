"""Running many seeds: adapter lookup, seed ranges, trace files and the run manifest.

Used by `kraftcheck simulate` and benchmarks/bench_simulate.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from refimpl.bugs import get_bug
from refimpl.sim.bounds import Bounds, parse_cfg
from refimpl.sim.faults import get_profile
from refimpl.sim.protocol import ProtocolAdapter
from refimpl.sim.simulator import DEFAULT_LIVENESS_BOUND_MS, SimResult, Simulator

__all__ = ["PROTOCOLS", "UsageError", "load_adapter_class", "parse_seeds", "RunSpec",
           "run_seeds", "MANIFEST_SCHEMA", "finish_manifest", "folder_lock", "bounds_label",
           "seed_label"]

MANIFEST_SCHEMA = "kraftcheck-sim-manifest/1"

# protocol name -> (module, class name)
PROTOCOLS: dict[str, tuple[str, str]] = {
    "kraft": ("refimpl.kraft.adapter", "KRaftAdapter"),
    "elr": ("refimpl.elr.adapter", "ELRAdapter"),
    "reassign": ("refimpl.kraft.reassign_adapter", "ReassignAdapter"),   # KIP-642
}


class UsageError(ValueError):
    """A bad argument: the CLI reports it and exits with status 2."""


def load_adapter_class(protocol: str) -> type[ProtocolAdapter]:
    if protocol not in PROTOCOLS:
        raise UsageError(f"unknown protocol {protocol!r}; choose one of: {', '.join(PROTOCOLS)}")
    mod_name, cls_name = PROTOCOLS[protocol]
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name and (mod_name == e.name or mod_name.startswith(e.name + ".")):
            raise UsageError(f"protocol {protocol!r} is not available: {mod_name} is missing "
                             f"(expected a class {cls_name} implementing "
                             f"refimpl.sim.protocol.ProtocolAdapter)") from None
        raise
    cls = getattr(mod, cls_name, None)
    if cls is None:
        found = [v for v in vars(mod).values() if isinstance(v, type)
                 and issubclass(v, ProtocolAdapter) and v is not ProtocolAdapter
                 and v.__module__ == mod.__name__]
        if len(found) != 1:
            raise UsageError(f"protocol {protocol!r}: {mod_name} defines no class {cls_name}")
        cls = found[0]
    if not (isinstance(cls, type) and issubclass(cls, ProtocolAdapter)):
        raise UsageError(f"protocol {protocol!r}: {mod_name}.{cls_name} is not a ProtocolAdapter")
    return cls


_SEEDS = re.compile(r"\s*(\d+)\s*(?::\s*(\d+)\s*)?\Z")


def parse_seeds(text: str) -> list[int]:
    """`7` -> [7]; `0:999` -> 0..999 inclusive; `1,5,9:11` -> [1, 5, 9, 10, 11]."""
    out: list[int] = []
    for part in text.split(","):
        m = _SEEDS.match(part)
        if not m:
            raise UsageError(f"bad seed range {part.strip()!r}: use N, A:B or a comma list")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise UsageError(f"bad seed range {part.strip()!r}: end before start")
        if b - a > 10_000_000:
            raise UsageError(f"seed range {part.strip()!r} is too large")
        out.extend(range(a, b + 1))
    if not out:
        raise UsageError("no seeds")
    return out


@dataclass
class RunSpec:
    protocol: str
    seeds: list[int]
    faults: str
    steps: int
    bounds_path: str | None = None
    bug: str | None = None
    # liveness (refimpl/sim/simulator.py): the random faults stop at this virtual time and the
    # system must recover within liveness_bound_ms; None: no liveness check
    faults_until_ms: int | None = None
    liveness_bound_ms: int = DEFAULT_LIVENESS_BOUND_MS

    def validate(self) -> tuple[type[ProtocolAdapter], Bounds | None]:
        if self.steps <= 0:
            raise UsageError("--steps must be positive")
        if self.faults_until_ms is not None and self.faults_until_ms < 0:
            raise UsageError("--faults-until must be >= 0 ms")
        if self.liveness_bound_ms <= 0:
            raise UsageError("--liveness-bound must be positive")
        try:
            get_profile(self.faults)
        except KeyError as e:
            raise UsageError(e.args[0]) from None
        if self.bug is not None:
            try:
                b = get_bug(self.bug)
            except KeyError as e:
                raise UsageError(e.args[0]) from None
            if b.protocol != self.protocol:
                raise UsageError(f"bug {self.bug!r} belongs to protocol {b.protocol!r}, "
                                 f"not {self.protocol!r}")
        cls = load_adapter_class(self.protocol)
        bounds = None
        if self.bounds_path is not None:
            try:
                bounds = parse_cfg(self.bounds_path)
            except ValueError as e:
                raise UsageError(str(e)) from None
        try:
            cls.from_options(bounds, self.bug)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if self.faults_until_ms is not None:
            if cls.recovered is ProtocolAdapter.recovered:
                raise UsageError(f"--faults-until: protocol {self.protocol!r} has no liveness "
                                 "check (its adapter does not judge recovery)")
            if bounds is not None:
                raise UsageError("--faults-until checks liveness, which a TLC config's bounds "
                                 "(MaxEpoch, MaxRestarts, ...) can forbid: run it unbounded")
        return cls, bounds


def trace_id(protocol: str, faults: str, seed: int, bug: str | None,
             bounds: str | None = None) -> str:
    """A trace's id, unique across the runs a corpus merges: protocol, fault profile, planted
    bug, seed and, for a run under --bounds, the config's file stem (`kraft-chaos-3`,
    `kraft-chaos-vote-ignores-log-3`, `kraft-chaos-3@kraft-graph-small`)."""
    tid = f"{protocol}-{faults}-{bug}-{seed}" if bug else f"{protocol}-{faults}-{seed}"
    return f"{tid}@{Path(bounds).stem}" if bounds else tid


class FolderBusy(UsageError):
    """Another simulate run is writing into the same --out folder."""


LOCK_NAME = ".kraftcheck-simulate.lock"


@contextlib.contextmanager
def folder_lock(out_dir: Path | None):
    """An exclusive lock on out_dir for one run: a second run into the same folder while
    the first is running is refused (FolderBusy), never interleaved into its manifest."""
    if out_dir is None:
        yield
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(out_dir / LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(f"another `kraftcheck simulate` is writing into {out_dir}; wait "
                             "for it or give another --out") from None
        yield
    finally:
        os.close(fd)


def _merge_previous(out_dir: Path, manifest: dict) -> dict:
    """The folder's manifest after this run: this run's traces, plus the entries of earlier
    runs into the same folder whose files are still there and were not rewritten now, so
    every trace file of the folder appears in it (`runs` lists each run's arguments)."""
    try:
        old = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return manifest
    if not isinstance(old, dict) or old.get("schema") != MANIFEST_SCHEMA:
        return manifest
    mine = {t.get("file") for t in manifest["traces"]}
    kept = [t for t in old.get("traces", []) if isinstance(t, dict) and t.get("file")
            and t["file"] not in mine and (out_dir / str(t["file"])).is_file()]
    if not kept:
        return manifest
    runs = old.get("runs") or [old.get("arguments")]
    merged = dict(manifest, traces=kept + manifest["traces"],
                  runs=[r for r in runs if r] + [manifest["arguments"]])
    traces = merged["traces"]
    merged["summary"] = {
        "traces": len(traces), "steps": sum(t.get("steps", 0) for t in traces),
        "bytes": sum(t.get("bytes", 0) for t in traces),
        "traces_with_violations": sum(1 for t in traces if t.get("violations")),
        "invariants_violated": sorted({v["invariant"] for t in traces
                                       for v in t.get("violations") or []
                                       if isinstance(v, dict) and "invariant" in v})}
    return merged


def run_seeds(spec: RunSpec, out_dir: Path | None,
              on_done: Callable[[SimResult], None] | None = None) -> dict:
    """Run every seed; write each trace (atomically) and manifest.json into out_dir (when
    given); return the manifest of this run.  A second run into the same folder at the same
    time is refused (FolderBusy); one after another, the folder's manifest.json lists the
    traces of both (see _merge_previous)."""
    with folder_lock(out_dir):
        return _run_seeds(spec, out_dir, on_done)


def _run_seeds(spec: RunSpec, out_dir: Path | None,
               on_done: Callable[[SimResult], None] | None = None) -> dict:
    from kraftcore.output import write_atomic

    cls, bounds = spec.validate()
    profile = get_profile(spec.faults)
    label = None if bounds is None else bounds_label(spec.bounds_path, bounds)
    traces = []
    # The planted bug in effect: --bug, or the one a Bug* switch of the --bounds config selects
    # (recorded in the trace header, the trace id and the manifest, never silently).
    planted = getattr(cls.from_options(bounds, spec.bug), "planted_bug", None) or spec.bug
    for seed in spec.seeds:
        adapter = cls.from_options(bounds, spec.bug)
        tid = trace_id(spec.protocol, spec.faults, seed, planted, spec.bounds_path)
        r = Simulator(adapter, seed, profile, spec.steps, trace=out_dir is not None,
                      trace_id=tid, bounds_label=label, bug=planted,
                      faults_until_ms=spec.faults_until_ms,
                      liveness_bound_ms=spec.liveness_bound_ms).run()
        entry = {"trace_id": tid, "seed": seed, "actions": r.steps,
                 "steps": r.trace_steps if out_dir is not None else r.steps,
                 "events": r.events, "end_reason": r.end_reason,
                 "time_ms": r.time_ms, "invariants": r.invariants,
                 "violations": r.violations}
        if spec.faults_until_ms is not None and r.liveness is not None:
            entry["liveness"] = r.liveness
        if out_dir is not None:
            data = r.text().encode("utf-8")
            fname = f"{tid}.jsonl"
            write_atomic(out_dir / fname, data)
            entry.update(file=fname, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
        traces.append(entry)
        if on_done:
            on_done(r)
    arguments = {"protocol": spec.protocol, "seeds": seed_label(spec.seeds),
                 "faults": spec.faults, "steps": spec.steps, "bounds": spec.bounds_path,
                 "bug": spec.bug}
    return finish_manifest(out_dir, arguments, planted, traces)


def finish_manifest(out_dir: Path | None, arguments: dict, planted: str | None,
                    traces: list[dict], extra: dict | None = None) -> dict:
    """The manifest of one run (its arguments, the planted bug, one entry per trace, the
    summary, and the `extra` keys), written into out_dir/manifest.json merged with the folder's earlier runs (see
    _merge_previous); shared by the refimpl's runs and Kafka's (kafka_bridge)."""
    from kraftcore.output import write_atomic

    violated = sorted({v["invariant"] for t in traces for v in t["violations"]})
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "arguments": arguments,
        "planted_bug": planted,
        "traces": traces,
        "summary": {
            "traces": len(traces),
            "steps": sum(t["steps"] for t in traces),
            "bytes": sum(t.get("bytes", 0) for t in traces),
            "traces_with_violations": sum(1 for t in traces if t["violations"]),
            "invariants_violated": violated,
        },
        **(extra or {}),
    }
    if out_dir is not None:
        folder = _merge_previous(out_dir, manifest)
        write_atomic(out_dir / "manifest.json", json.dumps(folder, indent=2, sort_keys=True) + "\n")
    return manifest


def bounds_label(path: str, bounds: Bounds) -> dict:
    """A trace header's `bounds`: the config's names and its constants (plain JSON)."""
    return {**_bounds_names(path),
            "constants": {k: _plain(v) for k, v in sorted(bounds.constants.items())}}


def _bounds_names(path: str) -> dict:
    """The header's names for a --bounds file: `config`, the manifest config name, when the
    file is tlc_configs/NAME.cfg (the trace checker judges a trace only under a config it
    names this way), and `file`, relative to the repository root when inside it."""
    from kraftcore.paths import CONFIG_DIR, REPO_ROOT
    p = Path(path).resolve()
    out: dict = {}
    if p.parent == CONFIG_DIR and p.suffix == ".cfg":
        out["config"] = p.stem
    out["file"] = str(p.relative_to(REPO_ROOT)) if p.is_relative_to(REPO_ROOT) else path
    return out


def seed_label(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}:{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ",".join(map(str, seeds))


def _plain(v):
    if isinstance(v, frozenset):
        return sorted((_plain(x) for x in v), key=repr)
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v
