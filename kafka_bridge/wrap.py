"""A Kafka harness's raw step stream (kafka_harness/PROTOCOL.md) -> a `kraftcheck-trace/1` trace.

Shared by every protocol the harness drives (raft.py: KIP-595, elr.py: KIP-966).  The trace is
written with the refimpl's writer (refimpl/trace/format.py: header_obj, step_line, footer_obj,
one canonical JSON encoding), so a Kafka trace and a refimpl trace of the same steps are the same
bytes but for the header's `impl` and the trace id.

  meta line   -> the header (impl {"name", "version"} from the meta's impl / impl_version)
  step lines  -> numbered steps; a step that leaves every variable unchanged is a stutter and is
                 not written (the refimpl's rule; `actions` in the footer still counts it)
  end line    -> the footer (actions, end_reason), with the online invariants' verdicts

The online invariants (a `Judge`) run on the decoded state after every step; the trace stops at
the first violation (end_reason "violation"), as the refimpl's simulator does.  With
`faults_until_ms` the judge's `recovered` is checked after the faults stop: a run that has not
recovered `liveness_bound_ms` later violates LIVENESS (refimpl.sim.simulator), judged on the
virtual times of the steps (and the end line's `time_ms`, when the harness gives it).

A raw file that breaks the protocol raises RawFormatError naming the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kraftcore.values import ValueError_, from_itf
from refimpl.sim.protocol import dumps
from refimpl.sim.simulator import LIVENESS
from refimpl.trace.format import footer_obj, header_obj, step_line

from kafka_bridge.toolchain import HarnessError

__all__ = ["RawFormatError", "RawRun", "read_raw", "Judge", "Wrapped", "wrap"]


class RawFormatError(HarnessError):
    """A raw step file that breaks kafka_harness/PROTOCOL.md (a harness defect)."""

    def __init__(self, path: str, line: int | None, field_: str | None, message: str):
        where = str(path) + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: " + (f"{field_}: " if field_ else "") + message)


@dataclass
class RawRun:
    path: str
    meta: dict
    steps: list[dict]            # the raw step objects, in order (step 0: Init)
    end: dict

    @property
    def impl(self) -> dict:
        return {"name": self.meta["impl"], "version": self.meta["impl_version"]}


_META = {"impl": str, "impl_version": str, "protocol": str, "seed": int, "fault_profile": str,
         "constants": dict}
_STEP = {"action": str, "params": dict, "state": dict, "time_ms": int}
_END = {"actions": int, "events": int, "end_reason": str}
END_REASONS = ("max_steps", "quiescent", "recovered", "bound")
# the harness's end reasons as the trace format names them: a bounded run that can take no
# further step inside the config's bounds ("bound") has nothing left to happen, as a refimpl
# run under --bounds that ends "quiescent"
FOOTER_END_REASON = {"bound": "quiescent"}


def _need(obj: dict, spec: Mapping[str, type], path: str, line: int) -> None:
    for k, t in spec.items():
        if k not in obj:
            raise RawFormatError(path, line, k, "missing")
        v = obj[k]
        if (type(v) is not int) if t is int else not isinstance(v, t):
            raise RawFormatError(path, line, k, f"expected {t.__name__}, got "
                                 f"{type(v).__name__} {json.dumps(v)[:60]}")


def read_raw(path: str | Path, variables: Sequence[str]) -> RawRun:
    """Read and check one `<seed>.raw.jsonl` (every spec variable in every state)."""
    p = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RawFormatError(p, None, None, f"cannot read: {getattr(e, 'strerror', None) or e}") \
            from None
    meta, steps, end = None, [], None
    want = set(variables)
    last_time = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        if end is not None:
            raise RawFormatError(p, lineno, None, "content after the end line")
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise RawFormatError(p, lineno, None, f"not JSON ({str(e)[:80]})") from None
        if not isinstance(obj, dict):
            raise RawFormatError(p, lineno, None, "not a JSON object")
        kind = obj.get("kind")
        if meta is None:
            if kind != "meta":
                raise RawFormatError(p, lineno, "kind", f"the first line must be the meta line, "
                                     f"got {kind!r}")
            _need(obj, _META, p, lineno)
            if "plant" in obj and obj["plant"] is not None and not isinstance(obj["plant"], str):
                raise RawFormatError(p, lineno, "plant", "expected a name or null")
            meta = obj
        elif kind == "step":
            _need(obj, _STEP, p, lineno)
            if not steps and obj["action"] != "Init":
                raise RawFormatError(p, lineno, "action", f"step 0 must be Init, got "
                                     f"{obj['action']!r}")
            if set(obj["state"]) != want:
                miss, extra = sorted(want - set(obj["state"])), sorted(set(obj["state"]) - want)
                raise RawFormatError(p, lineno, "state", (f"missing {', '.join(miss)}" if miss else "")
                                     + ("; " if miss and extra else "")
                                     + (f"not spec variables: {', '.join(extra)}" if extra else ""))
            if obj["time_ms"] < last_time:
                raise RawFormatError(p, lineno, "time_ms", f"time goes backwards: "
                                     f"{obj['time_ms']} after {last_time}")
            last_time = obj["time_ms"]
            obj["_line"] = lineno
            steps.append(obj)
        elif kind == "end":
            _need(obj, _END, p, lineno)
            if obj["end_reason"] not in END_REASONS:
                raise RawFormatError(p, lineno, "end_reason", f"{obj['end_reason']!r} is not one "
                                     f"of {', '.join(END_REASONS)}")
            end = obj
        else:
            raise RawFormatError(p, lineno, "kind", f"unknown kind {kind!r}")
    if meta is None:
        raise RawFormatError(p, None, None, "empty file: no meta line")
    if not steps:
        raise RawFormatError(p, None, None, "no steps (step 0, Init, is required)")
    if end is None:
        raise RawFormatError(p, None, None, "no end line: the harness stopped mid-run")
    return RawRun(p, meta, steps, end)


class Judge(Protocol):
    """The online checks of one protocol over decoded spec states (e.g. raft.KRaftJudge)."""

    names: tuple[str, ...]

    def check(self, state: Mapping[str, Any], action: str, node: str | None,
              changed: set[str] | None) -> list[tuple[str, str]]:
        """[(invariant, detail)] violated after the step; ValueError when the state has not
        the spec's types."""

    def has_leader(self, state: Mapping[str, Any]) -> bool: ...

    def recovered(self, state: Mapping[str, Any]) -> bool: ...

    def describe(self, state: Mapping[str, Any]) -> str: ...


@dataclass
class Wrapped:
    """One wrapped run: the trace's text and its manifest entry."""

    text: str
    entry: dict = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")


class _Liveness:
    """Leaderless time and recovery after the faults stop (refimpl.sim.simulator's summary)."""

    def __init__(self, judge: Judge, faults_until_ms: int | None, bound_ms: int):
        self.judge, self.T, self.bound = judge, faults_until_ms, bound_ms
        self.leaderless_since: int | None = 0
        self.leaderless_ms = self.longest = self.intervals = 0
        self.first_leader_ms: int | None = None
        self.recovered_at: int | None = None
        self.now = 0

    def observe(self, state, now: int) -> None:
        self.now = now
        if self.judge.has_leader(state):
            if self.first_leader_ms is None:
                self.first_leader_ms = now
            if self.leaderless_since is not None:
                d = now - self.leaderless_since
                self.leaderless_ms += d
                self.longest = max(self.longest, d)
                self.intervals += 1
                self.leaderless_since = None
        elif self.leaderless_since is None:
            self.leaderless_since = now
        if self.T is not None and self.recovered_at is None and now >= self.T \
                and self.judge.recovered(state):
            self.recovered_at = now

    def past_deadline(self, now: int) -> bool:
        return self.T is not None and self.recovered_at is None and now > self.T + self.bound

    def summary(self) -> dict:
        now = self.now
        open_ms = 0 if self.leaderless_since is None else now - self.leaderless_since
        T = self.T
        if T is None:
            verdict = None
        elif self.recovered_at is not None:
            verdict = "recovered"
        elif now >= T + self.bound:
            verdict = "not_recovered"
        else:
            verdict = "undecided"     # the run ended before the deadline
        return {"leaderless_ms": self.leaderless_ms + open_ms,
                "longest_leaderless_ms": max(self.longest, open_ms),
                "leaderless_intervals": self.intervals + (1 if open_ms else 0),
                "first_leader_ms": self.first_leader_ms, "faults_until_ms": T,
                "recovered_ms": None if self.recovered_at is None else self.recovered_at - T,
                "liveness_bound_ms": None if T is None else self.bound,
                "verdict": verdict, "properties": None}


def wrap(raw: RawRun, *, trace_id: str, protocol: str, spec_module: str,
         variables: Sequence[str], model_values: Iterable[str], bounds: Any, bug: str | None,
         judge: Judge, faults_until_ms: int | None = None,
         liveness_bound_ms: int = 15_000) -> Wrapped:
    """The trace of one raw run, checked online by `judge` (see the module's docstring)."""
    tid_json = json.dumps(trace_id)
    lines = [dumps(header_obj(
        trace_id=trace_id, protocol=protocol, seed=raw.meta["seed"],
        fault_profile=raw.meta["fault_profile"], bug=bug, bounds=bounds,
        spec_module=spec_module, model_values=model_values, variables=variables,
        impl=raw.impl))]
    violations: list[dict] = []
    live = _Liveness(judge, faults_until_ms, liveness_bound_ms)
    prev_raw: dict | None = None
    decoded: dict[str, Any] = {}
    written = 0
    actions = 0
    end_reason = FOOTER_END_REASON.get(raw.end["end_reason"], raw.end["end_reason"])
    for obj in raw.steps:
        st = obj["state"]
        if live.past_deadline(obj["time_ms"]):
            live.now = live.T + live.bound
            violations.append(_liveness_violation(judge, decoded, written - 1, live))
            end_reason = "violation"
            break
        if prev_raw is not None:
            actions += 1
            changed = {k for k in st if st[k] != prev_raw[k]}
            if not changed:
                continue                              # a stutter: not written
        else:
            changed = None
        for k in (st if changed is None else changed):
            try:
                decoded[k] = from_itf(st[k], f"{raw.path}:{obj['_line']}: state.{k}")
            except ValueError_ as e:
                raise RawFormatError(raw.path, obj["_line"], f"state.{k}", str(e)) from None
        state = dict(decoded)
        lines.append(step_line(tid_json, written, obj["time_ms"], obj["action"],
                               dumps(obj["params"]), dumps(st)))
        node = obj["params"].get("node")
        try:
            found = judge.check(state, obj["action"], node if isinstance(node, str) else None,
                                changed)
        except ValueError as e:       # the state has not the spec's types (StateTypeError)
            raise RawFormatError(raw.path, obj["_line"], f"state.{getattr(e, 'variable', '')}",
                                 getattr(e, "why", str(e))) from None
        for name, detail in found:
            violations.append({"invariant": name, "step": written, "action": obj["action"],
                               "detail": detail})
        live.observe(state, obj["time_ms"])
        written += 1
        prev_raw = st
        if violations:
            end_reason = "violation"
            break
    else:
        actions = max(actions, raw.end["actions"])
        end_ms = raw.end.get("time_ms")
        live.now = max(live.now, raw.steps[-1]["time_ms"],
                       end_ms if type(end_ms) is int else 0)
        if live.T is not None and live.recovered_at is None and live.now >= live.T + live.bound:
            violations.append(_liveness_violation(judge, decoded, written - 1, live))
            end_reason = "violation"
    names = tuple(judge.names) + ((LIVENESS,) if faults_until_ms is not None else ())
    bad = {v["invariant"] for v in violations}
    inv = {n: ("violated" if n in bad else "ok") for n in names}
    lines.append(dumps(footer_obj(trace_id=trace_id, steps=written - 1, end_reason=end_reason,
                                  invariants=inv, violations=violations, actions=max(actions,
                                                                                   written - 1))))
    text = "\n".join(lines) + "\n"
    data = text.encode("utf-8")
    entry = {"trace_id": trace_id, "seed": raw.meta["seed"], "actions": max(actions, written - 1),
             "steps": written - 1, "events": raw.end["events"], "end_reason": end_reason,
             "time_ms": live.now, "invariants": inv, "violations": violations,
             "impl": raw.impl, "bytes": len(data),
             "sha256": hashlib.sha256(data).hexdigest()}
    if faults_until_ms is not None:
        entry["liveness"] = live.summary()
    return Wrapped(text, entry)


def _liveness_violation(judge: Judge, state, step: int, live: _Liveness) -> dict:
    why = ("no leader is elected" if not judge.has_leader(state)
           else "a replica has not caught up with the leader")
    return {"invariant": LIVENESS, "step": max(step, 0), "action": "LivenessDeadline",
            "detail": f"faults stopped at {live.T} ms, but {live.bound} ms later {why} "
                      f"({judge.describe(state)})"}
