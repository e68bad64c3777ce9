"""Export a kraftcheck trace (JSON Lines, kraftcheck-trace/1) to the ITF format.

ITF (Informal Trace Format, used by Apalache / Quint / itf-py):
  {"#meta": {...}, "vars": [names], "states": [{"#meta": {"index": i, "action": ...}, var: value}]}
State values are already ITF-encoded in our traces, so they are copied through unchanged.
"""

from __future__ import annotations

import json
import re
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
    from kraftcore.output import write_atomic

    doc = trace_to_itf(path)
    tid = doc["#meta"]["trace_id"]
    if not isinstance(tid, str) or not _SAFE_ID.fullmatch(tid) or tid.startswith("."):
        raise TraceFormatError(f"{path}: trace id {json.dumps(str(tid))[:80]} cannot name a "
                               "file (letters, digits and _ . @ + - only)")
    out = Path(out_dir) / f"{tid}.itf.json"
    try:
        # allow_nan=False: ITF is JSON, which has no NaN / Infinity (the reader refuses them)
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError) as e:
        raise TraceFormatError(f"{path}: not representable as ITF JSON: {e}") from None
    write_atomic(out, text + "\n")
    return out


_SAFE_ID = re.compile(r"[A-Za-z0-9_.@+-]{1,200}")
