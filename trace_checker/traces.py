"""Reading trace files (schema kraftcheck-trace/1, docs/trace-format.md) defensively.

Anything wrong raises `TraceMalformed` naming the file, the line and the field; the caller turns
it into a `malformed` verdict for that file and goes on with the others.  States are not decoded
here: each step keeps its `state` object (variable -> ITF JSON) and the checker decodes each
distinct value once (see observe.py).  A step whose `state` omits variables is a partial
observation; variables not declared in the header are an error.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftcore.values import is_identifier

__all__ = ["TraceMalformed", "Step", "Trace", "BoundsRef", "read_trace", "loads_strict", "SCHEMA",
           "MAX_LINE", "header_problems", "footer_problems"]

SCHEMA = "kraftcheck-trace/1"
MAX_LINE = 64 * 1024 * 1024     # a longer line is refused, not read into memory whole


class TraceMalformed(ValueError):
    def __init__(self, path: str, line: int | None, field_: str | None, message: str):
        where = path + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {field_ + ': ' if field_ else ''}{message}")
        self.path, self.line, self.field, self.message = path, line, field_, message

    def to_json(self) -> dict:
        return {"file": self.path, "line": self.line, "field": self.field, "message": self.message}


@dataclass
class Step:
    line: int
    index: int
    action: str
    params: Any
    state: dict[str, Any]            # variable -> ITF JSON (raw)
    time_ms: int | None = None


@dataclass
class Trace:
    path: str
    trace_id: str
    protocol: str
    spec_module: str
    variables: tuple[str, ...]
    model_values: tuple[str, ...]
    bounds: BoundsRef | None
    bug: str | None
    seed: Any
    steps: list[Step] = field(default_factory=list)
    footer: dict | None = None
    header: dict = field(default_factory=dict)
    header_line: int = 1

    @property
    def impl(self) -> str:
        """The implementation that produced the trace: the header's `impl.name`, "refimpl"
        without one (see impl_problem)."""
        v = self.header.get("impl")
        return v["name"] if isinstance(v, dict) and isinstance(v.get("name"), str) else "refimpl"

    @property
    def partial(self) -> bool:
        n = len(self.variables)
        return any(len(s.state) != n for s in self.steps)


def _need(obj: dict, key: str, typ, path: str, line: int, optional: bool = False):
    if key not in obj:
        if optional:
            return None
        raise TraceMalformed(path, line, key, "missing")
    v = obj[key]
    if optional and v is None:
        return None
    if typ is int:
        ok = type(v) is int
    else:
        ok = isinstance(v, typ)
    if not ok:
        name = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise TraceMalformed(path, line, key, f"expected {name}, got {type(v).__name__} "
                             f"{_short(v)}")
    return v


def _short(v: Any) -> str:
    try:
        s = json.dumps(v) if not isinstance(v, str) else json.dumps(v[:200])
    except (ValueError, RecursionError, TypeError):
        s = f"a {type(v).__name__}"
    return s if len(s) <= 60 else s[:57] + "..."


def _refuse_constant(name: str):
    # Python's json module accepts NaN / Infinity / -Infinity; JSON (RFC 8259) does not.
    raise _NotJSON(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _NotJSON(f"duplicate key {_short(dup)} in a JSON object")
    return d


class _NotJSON(ValueError):
    pass


def loads_strict(raw: str | bytes) -> Any:
    """json.loads refusing NaN/Infinity and duplicate object keys; raises ValueError (also for
    integers beyond Python's digit limit) or RecursionError."""
    return json.loads(raw, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)


def _json_line(raw: str, path: str, lineno: int) -> dict:
    try:
        obj = loads_strict(raw)
    except json.JSONDecodeError as e:
        raise TraceMalformed(path, lineno, None, f"not JSON ({e.msg} at column {e.colno}); "
                             "truncated line?") from None
    except _NotJSON as e:
        raise TraceMalformed(path, lineno, None, str(e)) from None
    except RecursionError:
        raise TraceMalformed(path, lineno, None, "JSON nested too deeply") from None
    except ValueError as e:   # e.g. an integer longer than Python's int digit limit
        raise TraceMalformed(path, lineno, None, f"not readable JSON: {_short(str(e))}") from None
    if not isinstance(obj, dict):
        raise TraceMalformed(path, lineno, None, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _header(obj: dict, path: str, line: int) -> dict:
    if obj.get("kind", "header") != "header":
        raise TraceMalformed(path, line, "kind", f"the first line must be the header, got "
                             f"{_short(obj.get('kind'))}")
    schema = _need(obj, "schema", str, path, line)
    if schema != SCHEMA:
        raise TraceMalformed(path, line, "schema", f"unsupported schema {schema!r} "
                             f"(expected {SCHEMA!r})")
    h = {k: _need(obj, k, str, path, line) for k in ("trace_id", "protocol", "spec_module")}
    variables = _need(obj, "variables", list, path, line)
    if not variables or not all(isinstance(v, str) and is_identifier(v) for v in variables):
        raise TraceMalformed(path, line, "variables", "expected a non-empty list of identifiers")
    if len(set(variables)) != len(variables):
        raise TraceMalformed(path, line, "variables", "a variable is listed twice")
    mvs = _need(obj, "model_values", list, path, line)
    for m in mvs:
        if not isinstance(m, str) or not is_identifier(m):
            raise TraceMalformed(path, line, "model_values",
                                 f"{_short(m)} is not a TLA+ identifier")
    h["variables"] = tuple(variables)
    h["model_values"] = tuple(mvs)
    h["bounds"] = _bounds(obj, path, line)
    h["bug"] = _need(obj, "bug", str, path, line, optional=True)
    for field_, message in header_problems(obj):
        raise TraceMalformed(path, line, field_, message)
    h["seed"] = obj["seed"]
    return h


# The run's own fields of the header and footer (docs/trace-format.md): not used to judge a
# trace, but a trace that states them wrongly is not in the format, and every reader (validate,
# export itf, refimpl.trace.format.validate_lines) refuses it by these same rules.
INVARIANT_RESULTS = ("ok", "violated")


def _typed(obj: dict, key: str, typ: type) -> str | None:
    """Why obj[key] is missing or not of type `typ` (int: a JSON integer, never a Boolean or
    a float), or None."""
    if key not in obj:
        return "missing"
    v = obj[key]
    if (type(v) is not int) if typ is int else not isinstance(v, typ):
        return f"expected {typ.__name__}, got {type(v).__name__} {_short(v)}"
    return None


def header_problems(obj: dict) -> list[tuple[str, str]]:
    """(field, message) for each header field of the run with a wrong type: `seed` (an
    integer), `fault_profile` (a string), the optional `impl` (see impl_problem)."""
    out = [(k, why) for k, typ in (("seed", int), ("fault_profile", str))
           if (why := _typed(obj, k, typ))]
    why = impl_problem(obj)
    return out + [("impl", why)] if why else out


def impl_problem(header: dict) -> str | None:
    """Why a header's optional `impl` (the implementation that produced the run, e.g.
    {"name": "kafka", "version": "3.7.2"}; absent for the refimpl) is malformed, or None."""
    if "impl" not in header:
        return None
    v = header["impl"]
    if not isinstance(v, dict) or set(v) != {"name", "version"} or not all(
            isinstance(x, str) and x for x in v.values()):
        return f'expected {{"name": string, "version": string}}, got {_short(v)}'
    return None


def footer_problems(obj: dict) -> list[tuple[str, str]]:
    """(field, message) for each footer field with a wrong type or value: `end_reason` (a
    string: the simulator's max_steps, violation, quiescent, recovered; other writers may say
    more), `invariants` ({name: "ok" | "violated"}), `violations` (a list of
    {"invariant": name, "step": integer >= 0, "action"?: string, "detail"?: string}) and the
    optional `actions` (an integer >= `steps`)."""
    out: list[tuple[str, str]] = []
    for k, typ in (("end_reason", str), ("invariants", dict), ("violations", list)):
        why = _typed(obj, k, typ)
        if why:
            out.append((k, why))
    inv = obj.get("invariants")
    for name, res in (inv.items() if isinstance(inv, dict) else ()):
        if not is_identifier(name):
            out.append((f"invariants.{_short(name)}", "not an invariant name"))
        elif res not in INVARIANT_RESULTS:
            out.append((f"invariants.{name}", f"{_short(res)} is not \"ok\" or \"violated\""))
    vs = obj.get("violations")
    for i, v in enumerate(vs if isinstance(vs, list) else ()):
        where = f"violations[{i}]"
        if not isinstance(v, dict):
            out.append((where, f"expected an object, got {_short(v)}"))
            continue
        if not isinstance(v.get("invariant"), str) or not v["invariant"]:
            out.append((f"{where}.invariant", f"expected a name, got {_short(v.get('invariant'))}"))
        why = _typed(v, "step", int)
        if why or v["step"] < 0:
            out.append((f"{where}.step", why or f"negative step {v['step']}"))
        for k in ("action", "detail"):
            if k in v and not isinstance(v[k], str):
                out.append((f"{where}.{k}", f"expected str, got {_short(v[k])}"))
    if "actions" in obj:
        why = _typed(obj, "actions", int)
        steps = obj.get("steps")
        if why is None and type(steps) is int and obj["actions"] < steps:
            why = f"{obj['actions']} actions, fewer than the {steps} steps"
        if why:
            out.append(("actions", why))
    return out


@dataclass(frozen=True)
class BoundsRef:
    """What a header's `bounds` names: a manifest config name and/or a config file path.

    Only read here; whether the trace may be judged under it is decided against the manifest
    (trace_checker.corpus.resolve_base), and the file itself is never opened on a trace's word.
    """

    config: str | None
    file: str | None
    field: str          # the header field to name in errors: bounds, bounds.config, bounds.file

    def __str__(self) -> str:
        return self.config or self.file or ""


def _bounds(obj: dict, path: str, line: int) -> BoundsRef | None:
    """null, a config name or path (string), or {"config": name, "file": path, "constants": {...}}."""
    b = _need(obj, "bounds", (str, dict), path, line, optional=True)
    if b is None:
        return None
    if isinstance(b, str):
        if not b:
            raise TraceMalformed(path, line, "bounds", "empty")
        if "/" in b or "\\" in b or b.endswith(".cfg"):
            return BoundsRef(None, b, "bounds")
        return BoundsRef(b, None, "bounds")
    c, f = b.get("config"), b.get("file")
    if c is not None and (not isinstance(c, str) or not c):
        raise TraceMalformed(path, line, "bounds.config", f"expected a config name, got {_short(c)}")
    if f is not None and (not isinstance(f, str) or not f):
        raise TraceMalformed(path, line, "bounds.file", f"expected a path, got {_short(f)}")
    if c is None and f is None:
        return None
    return BoundsRef(c, f, "bounds.config" if c is not None else "bounds.file")


def _step(obj: dict, h: dict, expected: int, path: str, line: int) -> Step:
    if obj.get("kind", "step") != "step":
        raise TraceMalformed(path, line, "kind", f"expected a step, got {_short(obj.get('kind'))}")
    _same_trace_id(obj, h, path, line)
    idx = _need(obj, "step", int, path, line)
    if idx != expected:
        raise TraceMalformed(path, line, "step", f"step {idx} out of order, expected {expected}")
    action = _need(obj, "action", str, path, line)
    if not is_identifier(action) and action != "Init":
        raise TraceMalformed(path, line, "action", f"{_short(action)} is not an action name")
    if expected == 0 and action != "Init":
        raise TraceMalformed(path, line, "action", f"step 0 must be Init, got {action!r}")
    if expected > 0 and action == "Init":
        raise TraceMalformed(path, line, "action", "Init is step 0 only, not a step of Next")
    state = _need(obj, "state", dict, path, line)
    known = h["variables"]
    for v in state:
        if v not in known:
            raise TraceMalformed(path, line, f"state.{v}", "not a variable of the header")
    params = obj.get("params")
    if params is not None and not isinstance(params, dict):
        raise TraceMalformed(path, line, "params", f"must be a JSON object, got {_short(params)}")
    if params and "node" in params and type(params["node"]) is not str:
        # the acting node: the liveness check follows each node's obligations by its name
        raise TraceMalformed(path, line, "params.node",
                             f"must be a node name (a string), got {_short(params['node'])}")
    # virtual time: the liveness check's clock (docs/trace-format.md: every step has it)
    t = _need(obj, "time_ms", int, path, line)
    if t < 0:
        raise TraceMalformed(path, line, "time_ms", f"negative time {t}")
    return Step(line, idx, action, params, state, t)


def _same_trace_id(obj: dict, h: dict, path: str, line: int) -> None:
    """Every step and footer line names the header's trace_id (docs/trace-format.md), never
    another and never none: a line that lost it cannot be told to belong to this trace."""
    tid = _need(obj, "trace_id", str, path, line)
    if tid != h["trace_id"]:
        raise TraceMalformed(path, line, "trace_id", f"{_short(tid)} differs from the header's "
                             f"{h['trace_id']!r}")


def _footer(obj: dict, h: dict, written: int, path: str, line: int) -> None:
    """The footer proves the trace complete: its step count must be the steps written."""
    _same_trace_id(obj, h, path, line)
    n = _need(obj, "steps", int, path, line)
    if n != written:
        raise TraceMalformed(path, line, "steps", f"footer says {n} steps, the trace has "
                             f"{written} after Init")
    for field_, message in footer_problems(obj):
        raise TraceMalformed(path, line, field_, message)


def read_trace(path: str | Path) -> Trace:
    """Parse a trace file; raises TraceMalformed (file, line, field) on the first problem."""
    p = str(path)
    try:
        # non-blocking, so that a named pipe or a terminal never waits for a writer; only a
        # regular file is read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise TraceMalformed(p, None, None, f"cannot read: {e.strerror or e}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")
        raise TraceMalformed(p, None, None, f"cannot read: not a regular file ({kind})")
    os.set_blocking(fd, True)
    f = os.fdopen(fd, "rb")
    h: dict | None = None
    steps: list[Step] = []
    footer = None
    lineno = 0
    with f:
        while True:
            rawb = f.readline(MAX_LINE + 1)
            if not rawb:
                break
            lineno += 1
            if len(rawb) > MAX_LINE:
                raise TraceMalformed(p, lineno, None, f"line longer than {MAX_LINE} bytes")
            try:
                raw = rawb.decode("utf-8")
            except UnicodeDecodeError as e:
                raise TraceMalformed(p, lineno, None, f"not UTF-8 (byte {e.start})") from None
            if not raw.strip():
                continue
            obj = _json_line(raw, p, lineno)
            if footer is not None:
                raise TraceMalformed(p, lineno, None, "content after the footer")
            if h is None:
                h = _header(obj, p, lineno)
                header_obj, header_line = obj, lineno
                continue
            if obj.get("kind") == "footer":
                footer = obj
                _footer(obj, h, len(steps) - 1, p, lineno)
                continue
            step = _step(obj, h, len(steps), p, lineno)
            if steps and step.time_ms < steps[-1].time_ms:
                raise TraceMalformed(p, lineno, "time_ms", f"time goes backwards: {step.time_ms} "
                                     f"after {steps[-1].time_ms} at step {steps[-1].index}")
            steps.append(step)
    if h is None:
        raise TraceMalformed(p, None, "header", "empty file: no header")
    if not steps:
        raise TraceMalformed(p, lineno, "step", "no steps (step 0, Init, is required)")
    if footer is None:
        raise TraceMalformed(p, lineno, "footer", "missing: the trace is truncated")
    return Trace(path=p, trace_id=h["trace_id"], protocol=h["protocol"],
                 spec_module=h["spec_module"], variables=h["variables"],
                 model_values=h["model_values"], bounds=h["bounds"], bug=h["bug"],
                 seed=h["seed"], steps=steps, footer=footer, header=header_obj,
                 header_line=header_line)
