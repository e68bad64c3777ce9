"""Export a kraftcheck trace (JSON Lines, kraftcheck-trace/1) to the ITF format.

ITF (Informal Trace Format, used by Apalache / Quint / itf-py):
  {"#meta": {...}, "vars": [names], "states": [{"#meta": {"index": i, "action": ...}, var: value}]}
State values are already ITF-encoded in our traces, so they are copied through unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

from refimpl.trace.format import SCHEMA, TraceFormatError, read_trace

__all__ = ["trace_to_itf", "export_itf"]


def trace_to_itf(path: str | Path) -> dict:
    t = read_trace(path, decode=False)
    h = t.header
    states = []
    for i, s in enumerate(t.steps):
        st = {"#meta": {"index": i, "action": s["action"], "params": s["params"],
                        "time_ms": s["time_ms"]}}
        st.update(s["state"])
        states.append(st)
    return {
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": str(path),
            "source-schema": SCHEMA,
            "trace_id": h["trace_id"],
            "protocol": h["protocol"],
            "spec_module": h["spec_module"],
            "seed": h["seed"],
            "fault_profile": h["fault_profile"],
            "bug": h["bug"],
            "model_values": h["model_values"],
            "invariants": t.footer["invariants"] if t.footer else {},
        },
        "vars": list(h["variables"]),
        "states": states,
    }


def export_itf(path: str | Path, out_dir: str | Path) -> Path:
    """Write OUT_DIR/<trace_id>.itf.json for the trace at `path`; returns the file written."""
    from kraftcheck.output import write_atomic

    doc = trace_to_itf(path)
    tid = doc["#meta"]["trace_id"]
    if not tid or "/" in tid or tid.startswith("."):
        raise TraceFormatError(f"{path}: trace id {tid!r} cannot name a file")
    out = Path(out_dir) / f"{tid}.itf.json"
    write_atomic(out, json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    return out
