"""The kraftcheck trace format, schema "kraftcheck-trace/1" (JSON Lines; see docs/trace-format.md).

Line 1, the header:
  {"kind":"header","schema":"kraftcheck-trace/1","trace_id":..,"protocol":..,"seed":..,
   "fault_profile":..,"bug":..|null,"bounds":..|null,"spec_module":..,"model_values":[..],
   "variables":[..]}
  plus, optionally, "impl":{"name":..,"version":..}: the implementation that produced the run
  (kafka_bridge writes {"name":"kafka","version":"3.7.2"}); without it the run is the refimpl's.
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
from collections.abc import Iterable
from typing import Any

from kraftcore.values import ValueError_, from_itf
from refimpl.sim.protocol import dumps
from trace_checker.traces import footer_problems

__all__ = [
    "SCHEMA", "header_obj", "step_line", "footer_obj", "dumps", "TraceFormatError",
    "read_trace", "validate_lines", "Trace", "REFIMPL", "impl_of", "impl_problem",
]

SCHEMA = "kraftcheck-trace/1"
REFIMPL = "refimpl"   # the implementation of a trace whose header names none
_QUOTED: dict[str, str] = {}


class TraceFormatError(ValueError):
    pass


def header_obj(*, trace_id: str, protocol: str, seed: int, fault_profile: str, bug: str | None,
               bounds: Any, spec_module: str, model_values: Iterable[str],
               variables: Iterable[str], impl: dict | None = None) -> dict:
    """`impl`: {"name", "version"} of the implementation that produced the run; None (the
    refimpl) writes no key, so the refimpl's traces keep their bytes."""
    extra = {} if impl is None else {"impl": {"name": impl["name"], "version": impl["version"]}}
    return {
        **extra,
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


def impl_problem(header: dict) -> str | None:
    """What is wrong with a header's optional `impl` ({"name": str, "version": str}), or None
    (the rule lives in trace_checker.traces, as the strict JSON reading does)."""
    from trace_checker.traces import impl_problem
    why = impl_problem(header)
    return f"key 'impl': {why}" if why else None


def impl_of(header: dict) -> str:
    """The name of the implementation a trace header names (REFIMPL without `impl`)."""
    v = header.get("impl")
    return v["name"] if isinstance(v, dict) and isinstance(v.get("name"), str) else REFIMPL


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
            bad_impl = impl_problem(obj)
            if bad_impl:
                errs.append(f"{where}: {bad_impl}")
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
            if header and obj.get("trace_id") != header.get("trace_id"):
                errs.append(f"{where}: trace_id differs from the header's")
            if obj.get("steps") != n_steps - 1:
                errs.append(f"{where}: footer steps {obj.get('steps')} != {n_steps - 1} steps after Init")
            # the rules the checker's reader applies too (trace_checker.traces.footer_problems);
            # a missing key or a wrong top-level type is reported once, by _check_keys above
            errs += [f"{where}: {f}: {m}" for f, m in footer_problems(obj)
                     if not (f in _FOOTER_KEYS and (f not in obj or not isinstance(obj[f], _FOOTER_KEYS[f])))]
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


def read_trace(path, decode: bool = True) -> Trace:
    """Read a trace by the rules `kraftcheck validate` applies, with its reader: the strict
    line reader (trace_checker.traces.read_trace: types, order, trace ids, header and footer
    fields) and the decoding of every state value (trace_checker.observe.Observer: ITF tags,
    integers, sets and maps whose elements are distinct).  A trace validate calls malformed is
    refused here too, and so is a partial observation (a state without some variable: ITF
    lists every variable in every state).  Raises TraceFormatError naming file, line, field.

    decode: each step's `state` holds TLA+ values (kraftcore.values) instead of ITF JSON."""
    from trace_checker.codec import Codec
    from trace_checker.observe import Observer
    from trace_checker.traces import TraceMalformed, read_trace as read_strict
    try:
        t = read_strict(path)
        codec = Codec(t.variables)
        keys = Observer(codec, intern=True).keys(t)
    except TraceMalformed as e:
        raise TraceFormatError(str(e)) from None
    steps = []
    for s, key in zip(t.steps, keys):
        if len(s.state) != len(t.variables):
            missing = [v for v in t.variables if v not in s.state]
            raise TraceFormatError(
                str(TraceMalformed(t.path, s.line, "state", f"no value for {', '.join(missing[:5])}"
                                   f"{' ...' if len(missing) > 5 else ''}: a partial observation "
                                   "has no ITF form (every state lists every variable)")))
        steps.append({"kind": "step", "trace_id": t.trace_id, "step": s.index,
                      "time_ms": s.time_ms, "action": s.action,
                      "params": s.params if s.params is not None else {},
                      "state": codec.decode(key) if decode else s.state})
    return Trace(t.header, steps, t.footer)
