"""The replay report: coverage in JSON, per-edge outcomes, divergence traces.

`report(...)` gives the JSON document (schema "kraftcheck-replay/1"): counts per outcome and per
action label, the explained reasons, the first divergences with their diagnosis, timing.
`write_outputs(...)` writes under --out DIR (atomically, kraftcore.output):

    replay.json            the report
    edges.jsonl            one line per target edge: src, action, dst (state fingerprints and
                           graph numbers), outcome, step, reason class (the Spark report colours
                           the graph's edges by it)
    divergences/*.jsonl    one kraftcheck-trace/1 trace per distinct divergence: the replayed
                           path (the implementation's states, equal to the spec's) and, last,
                           the state the implementation reached instead of the expected one;
                           `kraftcheck validate --graph CFG DIR/divergences` judges them too
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from kraftcore.output import write_atomic
from kraftcore.values import to_itf
from refimpl.trace.format import dumps, footer_obj, header_obj, step_line
from trace_checker.replay.engine import EdgeOutcome, ReplayRun, summarize

__all__ = ["SCHEMA", "report", "write_outputs", "divergence_traces", "TRACE_LIMIT"]

SCHEMA = "kraftcheck-replay/1"
TRACE_LIMIT = 200          # divergence traces kept (one per distinct divergence)
DIVERGENCES_SHOWN = 50


def _root_failures(run: ReplayRun) -> list[EdgeOutcome]:
    """Failed edges whose own step failed (not inherited from an earlier edge of the path),
    one per distinct (action, differing variables, event kind), in graph order."""
    seen: dict[tuple, EdgeOutcome] = {}
    g = run.graph
    failing = [oc for e, (oc, _) in run.failures.items()
               if (e[0], g.actions[e[1]], e[2]) not in _replayed(run)]
    for o in failing + run.outcomes:
        if o.outcome == "replayed" or o.via is not None or o.diagnosis is None:
            continue
        d = o.diagnosis
        key = (o.outcome, o.action, tuple(d["differing_variables"]), o.explained,
               (d.get("event") or "").split(" ")[0])
        seen.setdefault(key, o)
    return list(seen.values())


def _replayed(run: ReplayRun) -> set:
    r = getattr(run, "_replayed_set", None)
    if r is None:
        r = {(o.src, o.action, o.dst) for o in run.outcomes if o.outcome == "replayed"}
        run._replayed_set = r       # type: ignore[attr-defined]
    return r


def report(run: ReplayRun, *, graph_name: str, impl: str, protocol: str, mode: str,
           seed: int, sample: int | None, bug: str | None) -> dict:
    s = summarize(run)
    roots = _root_failures(run)
    behind = Counter(o.via or (o.src, o.action, o.dst) for o in run.outcomes
                     if o.outcome != "replayed")
    n = s["edges"]
    return {
        "schema": SCHEMA, "graph": graph_name, "impl": impl, "protocol": protocol,
        "bug": bug, "edges_mode": mode, "sample": sample, "seed": seed,
        "graph_states": len(run.graph), "graph_edges": run.graph.edge_count,
        **s,
        # labels of the steps driven and matched on the way (paths' prefixes included): an
        # action the targets miss is still attempted on the paths to them
        "actions_driven": sorted({r[1] for r in run.reached.values() if r[0] is not None}),
        "distinct_failures": len(roots),
        "divergences": [_brief(o, behind) for o in roots[:DIVERGENCES_SHOWN]],
        "seconds": round(run.seconds, 3),
        "cpu_seconds": round(run.cpu_seconds, 3),
        "edges_per_second": round(n / run.seconds, 1) if run.seconds > 0 else None,
        "edges_per_cpu_second": round(n / run.cpu_seconds, 1) if run.cpu_seconds > 0 else None,
        "events_applied": run.events_applied,
        "states_reached": len(run.reached),
    }


def _brief(o: EdgeOutcome, behind: Counter) -> dict:
    """A failing edge; `target_edges_behind`: the target edges whose outcome is this edge's
    failure (itself, if a target, and those whose path fails here)."""
    d = o.diagnosis or {}
    return {"outcome": o.outcome, "action": o.action, "step": o.step, "reason": o.reason,
            "explained": o.explained, "src": o.src, "dst": o.dst,
            "target_edges_behind": behind.get((o.src, o.action, o.dst), 0), "diagnosis": d}


def divergence_traces(run: ReplayRun, adapter, *, graph_name: str, bug: str | None,
                      limit: int = TRACE_LIMIT, impl: dict | None = None) -> dict[str, str]:
    """name -> trace text for each distinct divergence whose driver event reached a state
    (an edge the implementation has no event for leaves nothing to show).  `adapter` gives the
    header's protocol, spec module and model values (for Kafka: the refimpl adapter of the
    same protocol); `impl`: the header's {"name", "version"} of another implementation."""
    g = run.graph
    out: dict[str, str] = {}
    for o in _root_failures(run):
        if o.outcome != "diverged" or len(out) >= limit:
            continue
        if o.src not in run.reached:
            continue
        applied = run.failures.get((o.src, g.action_ids[o.action], o.dst))
        if applied is None or applied[1].state is None or applied[1].event is None:
            continue
        res = applied[1]
        name = f"replay-{graph_name}-{o.action}-{o.src}-{o.dst}"
        tid = json.dumps(name)
        lines = [dumps(header_obj(
            trace_id=name, protocol=adapter.name, seed=0, fault_profile="replay", bug=bug,
            bounds=None, spec_module=adapter.spec_module, model_values=adapter.model_values(),
            variables=list(g.codec.variables), impl=impl))]
        path = run.path_to(o.src)
        t = 0
        for i, (s, action, params, _event) in enumerate(path):
            state = g.state(s)
            lines.append(step_line(tid, i, t, action, _params(params),
                                   dumps({k: to_itf(v) for k, v in state.items()})))
            t += 10
        k = len(path)
        lines.append(step_line(tid, k, t, res.label or o.action, _params(res.params),
                               dumps({v: to_itf(res.state[v]) for v in g.codec.variables})))
        lines.append(dumps(footer_obj(trace_id=name, steps=k, end_reason="max_steps",
                                      invariants={}, violations=[])))
        out[name] = "\n".join(lines) + "\n"
    return out


def _params(params: dict) -> str:
    return dumps({k: to_itf(v) for k, v in sorted(params.items()) if not k.startswith("_")})


def edge_lines(run: ReplayRun) -> str:
    g = run.graph
    rows = []
    for o in run.outcomes:
        rows.append(dumps({"src": o.src, "dst": o.dst, "action": o.action,
                           "src_fp": g.fingerprint(o.src), "dst_fp": g.fingerprint(o.dst),
                           "outcome": o.outcome, "step": o.step,
                           "reason": o.explained or (None if o.outcome == "replayed" else
                                                     "diverged")}))
    return "\n".join(rows) + ("\n" if rows else "")


def write_outputs(out: Path, rep: dict, run: ReplayRun, traces: dict[str, str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    div = out / "divergences"
    if div.is_dir():
        for f in div.glob("*.jsonl"):
            f.unlink()
    if traces:
        div.mkdir(exist_ok=True)
        for name, text in traces.items():
            write_atomic(div / f"{name}.jsonl", text)
    write_atomic(out / "edges.jsonl", edge_lines(run))
    write_atomic(out / "replay.json", json.dumps(rep, indent=2, sort_keys=True) + "\n")
