"""The configuration a statistics run describes, for the report's "Run configuration" section.

- the `kraftcheck stats` command, the graph, its bounds and the verdict files;
- the simulator commands that made the corpora (each corpus folder's manifest.json, written by
  `kraftcheck simulate --out`);
- per protocol, fault profile, planted bug and bounds: the traces, their seeds and lengths (from
  the traces' headers, so a corpus without manifests is described as well);
- the settings of each fault profile used (refimpl/sim/faults.py) and the timeouts of the
  reference implementation the simulator runs (the protocol adapters' configurations).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["simulate_commands", "trace_groups", "fault_profiles", "timeouts", "describe"]


def _manifest_command(m: dict) -> str | None:
    a = m.get("arguments")
    if not isinstance(a, dict):
        return None
    cmd = ["kraftcheck", "simulate", "--protocol", str(a.get("protocol")),
           "--seeds", str(a.get("seeds")), "--faults", str(a.get("faults")),
           "--steps", str(a.get("steps"))]
    if a.get("bounds"):
        cmd += ["--bounds", str(a["bounds"])]
    if a.get("bug"):
        cmd += ["--bug", str(a["bug"])]
    return shlex.join(cmd)


def simulate_commands(files: list[str]) -> list[dict]:
    """One entry per corpus folder holding a simulator manifest.json: folder and command."""
    out, seen = [], set()
    for f in files:
        if "://" in f:
            continue
        folder = Path(f).parent
        if folder in seen:
            continue
        seen.add(folder)
        man = folder / "manifest.json"
        if not man.is_file():
            continue
        try:
            m = json.loads(man.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            out.append({"folder": str(folder), "command": None,
                        "problem": f"{man}: not a readable simulator manifest"})
            continue
        cmd = _manifest_command(m) if isinstance(m, dict) else None
        out.append({"folder": str(folder), "command": cmd and f"{cmd} --out {shlex.quote(str(folder))}",
                    **({} if cmd else {"problem": f"{man}: no `arguments`"})})
    return out


def trace_groups(traces: DataFrame) -> list[dict]:
    """protocol, fault_profile, bug, bounds (the config file), traces, seeds, steps."""
    bounds_file = F.get_json_object(F.col("bounds"), "$.file")
    rows = (traces.select("protocol", "fault_profile", F.coalesce("bug", F.lit("none")).alias("bug"),
                          F.coalesce(bounds_file, F.lit("none")).alias("bounds"), "seed",
                          "n_steps")
            .groupBy("protocol", "fault_profile", "bug", "bounds")
            .agg(F.count(F.lit(1)).alias("traces"), F.min("seed").alias("seed_min"),
                 F.max("seed").alias("seed_max"), F.min("n_steps").alias("steps_min"),
                 F.max("n_steps").alias("steps_max"))
            .orderBy("protocol", "fault_profile", "bug", "bounds").collect())
    return [r.asDict() for r in rows]


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return f"{v[0]}..{v[1]}"
    return str(v)


def fault_profiles(names: set[str]) -> list[dict]:
    """The settings of the named fault profiles (unknown names are listed as unknown)."""
    from refimpl.sim.faults import PROFILES

    out = []
    for n in sorted(names, key=lambda x: (x != "none", x)):
        p = PROFILES.get(n)
        if p is None:
            out.append({"name": n, "settings": "not a fault profile of this simulator"})
            continue
        fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name != "name"}
        out.append({"name": n, "settings": ", ".join(f"{k} {_fmt(v)}" for k, v in fields.items())})
    return out


def timeouts(protocols: set[str]) -> list[dict]:
    """The reference implementation's timing settings (virtual ms) as the simulator uses them."""
    from refimpl.sim.runner import load_adapter_class

    out = []
    for proto in sorted(protocols):
        try:
            adapter = load_adapter_class(proto)()
            cfg = getattr(adapter, "cfg", None) or getattr(adapter, "config")
            ms = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
                  if f.name.endswith("_ms")}
            out.append({"protocol": proto, "config": type(cfg).__name__,
                        "settings": ", ".join(f"{k} {v}" for k, v in ms.items())})
        except Exception as e:  # a protocol this build of the simulator cannot describe
            out.append({"protocol": proto, "config": None,
                        "settings": f"not available ({type(e).__name__}: {e})"})
    return out


def describe(traces: DataFrame, files: list[str], command: str | None, graph: str | None,
             graph_bounds: str | None, verdict_files: list[str] | None) -> dict:
    groups = trace_groups(traces)
    return {
        "command": command,
        "graph": graph, "graph_bounds": graph_bounds, "verdict_files": verdict_files or [],
        "simulations": simulate_commands(files),
        "groups": groups,
        "fault_profiles": fault_profiles({g["fault_profile"] for g in groups}),
        "timeouts": timeouts({g["protocol"] for g in groups}),
    }
