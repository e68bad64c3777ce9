"""The kraftcheck trace format, schema "kraftcheck-trace/1" (JSON Lines; see docs/trace-format.md).

Line 1, the header:
  {"kind":"header","schema":"kraftcheck-trace/1","trace_id":..,"protocol":..,"seed":..,
   "fault_profile":..,"bug":..|null,"bounds":..|null,"spec_module":..,"model_values":[..],
   "variables":[..]}
Lines 2..n+2, one per step (step 0 is the initial state, action "Init"):
  {"kind":"step","trace_id":..,"step":i,"time_ms":t,"action":..,"params":{..},"state":{..}}
  `state` holds every spec variable AFTER the step, ITF-encoded (kraftcore.values.to_itf).
Last line, the footer:
  {"kind":"footer","trace_id":..,"steps":n,"actions":a,"end_reason":..,
   "invariants":{name:"ok"|"violated"},"violations":[{"invariant":..,"step":..,"action":..,
   "detail":..}]}
  (`steps` = steps written; `actions` also counts the stutters, which are not written.)

Every line is json.dumps(obj, sort_keys=True, separators=(",", ":")), so the same run gives the
same bytes.  `step_line` builds the step line from pre-encoded JSON texts without re-encoding
the state; it produces exactly the bytes `dumps` would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from kraftcore.values import ValueError_, from_itf
from refimpl.sim.protocol import dumps

__all__ = [
    "SCHEMA", "header_obj", "step_line", "footer_obj", "dumps", "TraceFormatError",
    "read_trace", "validate_lines", "Trace",
]

SCHEMA = "kraftcheck-trace/1"
_QUOTED: dict[str, str] = {}


class TraceFormatError(ValueError):
    pass


def header_obj(*, trace_id: str, protocol: str, seed: int, fault_profile: str, bug: str | None,
               bounds: Any, spec_module: str, model_values: Iterable[str],
               variables: Iterable[str]) -> dict:
    return {
        "kind": "header",
        "schema": SCHEMA,
        "trace_id": trace_id,
        "protocol": protocol,
        "seed": seed,
        "fault_profile": fault_profile,
        "bug": bug,
        "bounds": bounds,
        "spec_module": spec_module,
        "model_values": sorted(model_values),
        "variables": list(variables),
    }


def step_line(trace_id_json: str, step: int, time_ms: int, action: str, params_json: str,
              state_json: str) -> str:
    """A step line from JSON texts (keys in sorted order: action, kind, params, state, step,
    time_ms, trace_id)."""
    qa = _QUOTED.get(action)
    if qa is None:
        qa = _QUOTED[action] = json.dumps(action)
    return "".join(('{"action":', qa, ',"kind":"step","params":', params_json, ',"state":',
                    state_json, ',"step":', str(step), ',"time_ms":', str(time_ms),
                    ',"trace_id":', trace_id_json, "}"))


def footer_obj(*, trace_id: str, steps: int, end_reason: str, invariants: dict[str, str],
               violations: list[dict], actions: int | None = None) -> dict:
    return {
        "kind": "footer",
        "trace_id": trace_id,
        "steps": steps,
        "actions": steps if actions is None else actions,
        "end_reason": end_reason,
        "invariants": dict(sorted(invariants.items())),
        "violations": violations,
    }


# --------------------------------------------------------------------------- reading

class Trace:
    """A parsed trace: header, steps (dicts with decoded `state` values), footer."""

    def __init__(self, header: dict, steps: list[dict], footer: dict | None):
        self.header, self.steps, self.footer = header, steps, footer

    @property
    def variables(self) -> list[str]:
        return list(self.header["variables"])


_HEADER_KEYS = {"kind": str, "schema": str, "trace_id": str, "protocol": str, "seed": int,
                "fault_profile": str, "spec_module": str, "model_values": list, "variables": list}
_STEP_KEYS = {"kind": str, "trace_id": str, "step": int, "time_ms": int, "action": str,
              "params": dict, "state": dict}
_FOOTER_KEYS = {"kind": str, "trace_id": str, "steps": int, "end_reason": str,
                "invariants": dict, "violations": list}   # "actions" (int) is optional


def _check_keys(obj: dict, spec: dict, where: str, optional_null=()) -> list[str]:
    errs = []
    for k, t in spec.items():
        if k not in obj:
            errs.append(f"{where}: missing key {k!r}")
        elif not isinstance(obj[k], t) or (t is int and isinstance(obj[k], bool)):
            errs.append(f"{where}: key {k!r} should be {t.__name__}")
    return errs


def validate_lines(lines: Iterable[str], decode_states: bool = True) -> list[str]:
    """Schema check of a trace's lines; returns the list of problems (empty = valid)."""
    errs: list[str] = []
    header = None
    prev_time = -1
    n_steps = 0
    footer = None
    variables: list[str] = []
    for lineno, line in enumerate(lines, 1):
        where = f"line {lineno}"
        if footer is not None:
            errs.append(f"{where}: content after the footer")
            break
        try:
            obj = _loads(line)
        except json.JSONDecodeError as e:
            errs.append(f"{where}: not JSON ({e.msg})")
            continue
        except RecursionError:
            errs.append(f"{where}: JSON nested too deeply")
            continue
        except ValueError as e:     # NaN / Infinity, duplicate keys, too many digits
            errs.append(f"{where}: not JSON ({str(e)[:80]})")
            continue
        if not isinstance(obj, dict):
            errs.append(f"{where}: not a JSON object")
            continue
        if line.rstrip("\n") != dumps(obj):
            errs.append(f"{where}: not in canonical form (sorted keys, compact)")
        kind = obj.get("kind")
        if lineno == 1:
            if kind != "header":
                errs.append(f"{where}: the first line must be the header")
                continue
            errs += _check_keys(obj, _HEADER_KEYS, where)
            if obj.get("schema") != SCHEMA:
                errs.append(f"{where}: schema is {obj.get('schema')!r}, expected {SCHEMA!r}")
            for k in ("bug", "bounds"):
                if k not in obj:
                    errs.append(f"{where}: missing key {k!r}")
            header = obj
            for k in ("variables", "model_values"):
                v = obj.get(k)
                if isinstance(v, list) and not all(isinstance(x, str) for x in v):
                    errs.append(f"{where}: {k} must be a list of strings")
            variables = obj.get("variables")
            variables = variables if isinstance(variables, list) and all(
                isinstance(x, str) for x in variables) else []
            continue
        if kind == "step":
            errs += _check_keys(obj, _STEP_KEYS, where)
            if header and obj.get("trace_id") != header.get("trace_id"):
                errs.append(f"{where}: trace_id differs from the header's")
            if obj.get("step") != n_steps:
                errs.append(f"{where}: step {obj.get('step')} out of order, expected {n_steps}")
            if n_steps == 0 and obj.get("action") != "Init":
                errs.append(f"{where}: step 0 must be action Init")
            t = obj.get("time_ms")
            if isinstance(t, int) and t < prev_time:
                errs.append(f"{where}: time goes backwards")
            if isinstance(t, int):
                prev_time = t
            st = obj.get("state")
            if isinstance(st, dict):
                if sorted(st) != sorted(variables):
                    errs.append(f"{where}: state variables {sorted(st)} != header {sorted(variables)}")
                if decode_states:
                    for k, v in st.items():
                        try:
                            from_itf(v, f"{where}.state.{k}")
                        except ValueError_ as e:
                            errs.append(str(e))
            n_steps += 1
        elif kind == "footer":
            errs += _check_keys(obj, _FOOTER_KEYS, where)
            steps_n = obj.get("steps", 0)
            if "actions" in obj and (not isinstance(obj["actions"], int)
                                     or (isinstance(steps_n, int) and obj["actions"] < steps_n)):
                errs.append(f"{where}: footer actions must be an integer >= steps")
            if obj.get("steps") != n_steps - 1:
                errs.append(f"{where}: footer steps {obj.get('steps')} != {n_steps - 1} steps after Init")
            invariants = obj.get("invariants")
            for name, res in (invariants.items() if isinstance(invariants, dict) else ()):
                if res not in ("ok", "violated"):
                    errs.append(f"{where}: invariant {name} result {res!r}")
            footer = obj
        else:
            errs.append(f"{where}: unknown kind {kind!r}")
    if header is None:
        errs.append("empty trace: no header")
    elif n_steps == 0:
        errs.append("trace has no steps (step 0, Init, is required)")
    if footer is None:
        errs.append("trace has no footer (truncated?)")
    return errs


def _loads(text: str) -> Any:
    """Strict JSON (no NaN / Infinity, no duplicate keys): see trace_checker.traces."""
    from trace_checker.traces import loads_strict
    return loads_strict(text)


def _iter_lines(path) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield line.rstrip("\n")
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{path}: not UTF-8 (byte {e.start} of a line)") from None
    except OSError as e:
        raise TraceFormatError(f"{path}: cannot read: {e.strerror or e}") from None


def read_trace(path, decode: bool = True) -> Trace:
    """Read and validate a trace file; raises TraceFormatError naming the file."""
    lines = list(_iter_lines(path))
    errs = validate_lines(lines, decode_states=False)
    if errs:
        raise TraceFormatError(f"{path}: " + "; ".join(errs[:5]))
    objs = [_loads(x) for x in lines]
    steps = objs[1:-1]
    if decode:
        for s in steps:
            s["state"] = {k: from_itf(v, f"{path} step {s['step']} {k}") for k, v in s["state"].items()}
    return Trace(objs[0], steps, objs[-1])
