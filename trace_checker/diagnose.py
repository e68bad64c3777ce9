"""Why a step is not allowed: the nearest allowed successor and a per-variable diff.

At a failing step k the candidate sources are the states the trace may be in after step k-1
(the spec's initial states for k = 0).  Every successor of a source, under any action, is an
allowed state; the nearest to the observed state is the one differing in the fewest observed
variables (ties: the claimed action first).  The diagnosis names the event, the claimed action,
the actions enabled in the source(s), the actions (if any) that DO lead to the observed state,
the nearest successor by the claimed action when another action's is nearer, and for each
differing variable the expected and observed values with the paths inside them
that differ.
"""

from __future__ import annotations

from typing import Any

from kraftcore.values import Fn, ValueError_, canonical_json, from_itf, to_itf, to_tla
from trace_checker.codec import Key
from trace_checker.graph import StateGraph
from trace_checker.partial import observed_positions
from trace_checker.traces import Trace

__all__ = ["diagnose", "value_diff"]

MAX_PATHS = 20


def tla_text(v: Any, model_values: frozenset[str] | set[str] = frozenset()) -> str:
    """A value as TLA+ text (model values bare, other strings quoted), for people; a value
    TLA+ cannot spell (a control character in a string) falls back to its ITF JSON."""
    try:
        return to_tla(v, model_values)
    except ValueError_:
        return canonical_json(v)


def value_diff(expected: Any, observed: Any, path: str = "", out: list | None = None,
               model_values: frozenset[str] | set[str] = frozenset()) -> list:
    """Paths where two canonical values differ: [{"path", "expected", "observed"}] (values in
    ITF JSON, plus `expected_tla` / `observed_tla` in TLA+ syntax); a path is written in TLA+
    (`msgs[[type |-> "Fetch", ...]]`, `highWatermark[n1]`, `log[2]`)."""
    out = [] if out is None else out
    if len(out) >= MAX_PATHS or expected == observed:
        return out
    mv = model_values

    def leaf(sub: str, e: Any, o: Any) -> dict:
        return {"path": sub or "(value)",
                "expected": "(absent)" if e is _ABSENT else to_itf(e),
                "observed": "(absent)" if o is _ABSENT else to_itf(o),
                "expected_tla": "(absent)" if e is _ABSENT else tla_text(e, mv),
                "observed_tla": "(absent)" if o is _ABSENT else tla_text(o, mv)}
    te, to = type(expected), type(observed)
    if te is Fn and to is Fn:
        for k in sorted(set(expected) | set(observed), key=canonical_json):
            sub = f"{path}[{tla_text(k, mv)}]"
            if k not in expected:
                out.append(leaf(sub, _ABSENT, observed[k]))
            elif k not in observed:
                out.append(leaf(sub, expected[k], _ABSENT))
            else:
                value_diff(expected[k], observed[k], sub, out, mv)
        return out
    if te is tuple and to is tuple and len(expected) == len(observed):
        for i, (a, b) in enumerate(zip(expected, observed), 1):
            value_diff(a, b, f"{path}[{i}]", out, mv)
        return out
    if te is frozenset and to is frozenset:
        missing = sorted(expected - observed, key=canonical_json)
        unexpected = sorted(observed - expected, key=canonical_json)
        out.append({"path": path or "(value)",
                    "missing": [to_itf(x) for x in missing],
                    "unexpected": [to_itf(x) for x in unexpected],
                    "missing_tla": [tla_text(x, mv) for x in missing],
                    "unexpected_tla": [tla_text(x, mv) for x in unexpected]})
        return out
    out.append(leaf(path, expected, observed))
    return out


_ABSENT = object()


def diagnose(trace: Trace, keys: list[Key], k: int, sources: list[int], g: StateGraph,
             limit_alternatives: int = 3, actions: frozenset[str] | None = None) -> dict:
    """Why step k is not a step of the spec; `actions`: the spec's action labels, if known."""
    step = trace.steps[k]
    obs = observed_positions(keys[k])
    if k == 0:
        succs = [("Init", s) for s in g.initial]
        enabled = ["Init"]
    else:
        succs = [(g.actions[a], d) for c in sources for a, d in g.succ[c]]
        enabled = sorted({a for a, _ in succs})
    scored = []
    for action, d in dict.fromkeys(succs):
        st = g.states[d]
        dist = sum(1 for i, v in obs if st[i] != v)
        scored.append((dist, action != step.action, action, d))
    scored.sort(key=lambda x: (x[0], x[1], x[2], x[3]))
    leading = sorted({a for dist, _, a, _ in scored if dist == 0})
    diag: dict = {
        "step": k, "line": step.line, "claimed_action": step.action,
        "event": {"step": step.index, "action": step.action, "params": step.params,
                  "time_ms": step.time_ms},
        "observed_variables": [g.codec.variables[i] for i, _ in obs],
        "candidate_sources": len(sources) if k else 0,
        "enabled_actions": enabled,
        "claimed_action_enabled": step.action in enabled,
        "actions_reaching_observed_state": leading,
    }
    if k and actions is not None and step.action not in actions:
        diag["unknown_action"] = True
    if not scored:
        diag["nearest"] = None
        diag["summary"] = (f"step {k} ({step.action}): no action is enabled in the source state"
                           if k else "the spec has no initial state")
        return diag
    alts = []
    for dist, _, action, d in scored[:limit_alternatives]:
        alts.append(_alternative(g, trace, k, d, action, obs))
    diag["nearest"] = alts[0]
    diag["alternatives"] = alts[1:]
    if alts[0]["action"] != step.action:
        by_claimed = next((x for x in scored if x[2] == step.action), None)
        if by_claimed is not None:
            diag["nearest_by_claimed_action"] = _alternative(g, trace, k, by_claimed[3],
                                                             step.action, obs)
    near = alts[0]
    if k and actions is not None and step.action not in actions:
        why = (f"{step.action} is not an action of the spec's next-state relation (its "
               f"actions: {', '.join(sorted(actions))})")
    elif leading:
        why = (f"the observed state follows from the source by {', '.join(leading)}, "
               f"not by the claimed {step.action}")
    elif step.action not in enabled and k:
        why = (f"{step.action} is not enabled in the source state (enabled: "
               f"{', '.join(enabled) or 'none'}); nearest allowed successor by "
               f"{near['action']} differs in {', '.join(near['differing_variables'])}")
    else:
        why = (f"no {'initial state' if k == 0 else 'successor'} matches; nearest "
               f"({near['action']}) differs in {', '.join(near['differing_variables'])}")
    diag["summary"] = f"step {k} ({step.action}, line {step.line}): {why}"
    return diag


def _alternative(g: StateGraph, trace: Trace, k: int, d: int, action: str, obs) -> dict:
    st = g.states[d]
    step = trace.steps[k]
    variables = g.codec.variables
    diffs = {}
    for i, v in obs:
        if st[i] == v:
            continue
        var = variables[i]
        expected = g.codec.value(i, st[i])
        observed = from_itf(step.state[var])
        mv = frozenset(trace.model_values)
        diffs[var] = {"expected": to_itf(expected), "observed": step.state[var],
                      "paths": value_diff(expected, observed, model_values=mv)}
    return {"action": action, "state_fingerprint": g.fingerprint(d),
            "differing_variables": sorted(diffs), "diff": diffs}
