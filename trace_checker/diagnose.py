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

from kraftcheck.values import Fn, from_itf, to_itf
from trace_checker.codec import Key
from trace_checker.graph import StateGraph
from trace_checker.partial import observed_positions
from trace_checker.traces import Trace

__all__ = ["diagnose", "value_diff"]

MAX_PATHS = 20


def value_diff(expected: Any, observed: Any, path: str = "", out: list | None = None) -> list:
    """Paths where two canonical values differ: [{"path", "expected", "observed"}]."""
    out = [] if out is None else out
    if len(out) >= MAX_PATHS or expected == observed:
        return out
    te, to = type(expected), type(observed)
    if te is Fn and to is Fn:
        for k in sorted(set(expected) | set(observed), key=repr):
            sub = f"{path}[{_key(k)}]"
            if k not in expected:
                out.append({"path": sub, "expected": "(absent)", "observed": to_itf(observed[k])})
            elif k not in observed:
                out.append({"path": sub, "expected": to_itf(expected[k]), "observed": "(absent)"})
            else:
                value_diff(expected[k], observed[k], sub, out)
        return out
    if te is tuple and to is tuple and len(expected) == len(observed):
        for i, (a, b) in enumerate(zip(expected, observed), 1):
            value_diff(a, b, f"{path}[{i}]", out)
        return out
    if te is frozenset and to is frozenset:
        out.append({"path": path or "(value)",
                    "missing": sorted((to_itf(x) for x in expected - observed), key=repr),
                    "unexpected": sorted((to_itf(x) for x in observed - expected), key=repr)})
        return out
    out.append({"path": path or "(value)", "expected": to_itf(expected), "observed": to_itf(observed)})
    return out


def _key(k) -> str:
    return k if isinstance(k, str) else repr(k)


def diagnose(trace: Trace, keys: list[Key], k: int, sources: list[int], g: StateGraph,
             limit_alternatives: int = 3) -> dict:
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
    if leading:
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
        diffs[var] = {"expected": to_itf(expected), "observed": step.state[var],
                      "paths": value_diff(expected, observed)}
    return {"action": action, "state_fingerprint": g.fingerprint(d),
            "differing_variables": sorted(diffs), "diff": diffs}
