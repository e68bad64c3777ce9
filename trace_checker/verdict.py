"""Verdict records (one per trace file), the corpus summary, and their human form.

Verdicts:
    valid         every step is a transition of the spec labelled with the claimed action
    invalid       step k is not; `diagnosis` says why (see diagnose.py)
    out_of_scope  the trace cannot be judged against this spec/config (other variables, model
                  values the config lacks, values TLC cannot represent, TLC failed on a state,
                  too many candidate states); `reason` says which
    malformed     the file is not a readable trace; `malformed` = {file, line, field, message}
"""

from __future__ import annotations

from typing import Any

from kraftcore.output import safe
from trace_checker.traces import Trace, TraceMalformed

__all__ = ["VERDICTS", "base", "malformed", "out_of_scope", "summary_lines", "count",
           "steps_judged"]

VERDICTS = ("valid", "invalid", "out_of_scope", "malformed")


def base(trace: Trace, verdict: str, mode: str, **extra: Any) -> dict:
    d = {"file": trace.path, "trace_id": trace.trace_id, "protocol": trace.protocol,
         "bug": trace.bug, "seed": trace.seed, "verdict": verdict, "mode": mode,
         "steps": len(trace.steps), "partial": trace.partial}
    blind = sum(1 for s in trace.steps if not s.state)
    if blind:
        d["unobserved_steps"] = blind        # steps observing no variable: judged nothing
    d.update(extra)
    return d


def malformed(path: str, err: TraceMalformed) -> dict:
    return {"file": path, "trace_id": None, "verdict": "malformed", "malformed": err.to_json(),
            "steps": 0}


def out_of_scope(trace: Trace, mode: str, reason: str, **extra: Any) -> dict:
    return base(trace, "out_of_scope", mode, reason=reason, **extra)


def count(results: list[dict]) -> dict[str, int]:
    c = {v: 0 for v in VERDICTS}
    for r in results:
        c[r["verdict"]] += 1
    return c


def steps_judged(r: dict) -> int:
    """Steps of a verdict the spec actually judged: all of a valid trace but those observing
    no variable, steps 0..k of one invalid at step k, none of an out-of-scope or malformed
    one."""
    if r.get("verdict") == "valid":
        return int(r.get("steps", 0)) - int(r.get("unobserved_steps", 0))
    if r.get("verdict") == "invalid":
        k = r.get("failed_step")
        return int(k) + 1 if isinstance(k, int) else 0
    return 0


def summary_lines(summary: dict, show_valid: bool = False) -> list[str]:
    """Rich-markup lines for people: one per non-valid trace, then the totals.  Everything
    taken from traces, file names or TLC is escaped (kraftcore.output.safe); values are
    printed in TLA+ syntax."""
    lines = []
    for r in summary["results"]:
        v = r["verdict"]
        if v == "valid" and not show_valid:
            continue
        name = safe(r["file"])
        if v == "valid" and r.get("liveness_not_judged"):
            lines.append(f"[yellow]valid, liveness not judged[/] {name}: "
                         f"{safe(r['liveness_not_judged'])}")
            continue
        if v == "valid":
            amb = r.get("ambiguity")
            lines.append(f"[green]valid[/]        {name}" + (
                f"  (partial: up to {amb['max_candidates']} candidate states)" if amb else ""))
        elif v == "invalid":
            d = r["diagnosis"]
            lines.append(f"[red]invalid[/]      {name}: {safe(d['summary'])}")
            near = d.get("nearest")
            if near:
                for var in near["differing_variables"][:6]:
                    dv = near["diff"][var]
                    for p in dv["paths"][:3]:
                        where = safe(var + ("" if p["path"] == "(value)" else p["path"]))
                        if "missing" in p:
                            lines.append(f"    {where}: missing {_set(p, 'missing')}, "
                                         f"unexpected {_set(p, 'unexpected')}")
                        else:
                            lines.append(f"    {where}: expected {_t(p, 'expected')}, "
                                         f"observed {_t(p, 'observed')}")
        elif v == "out_of_scope":
            lines.append(f"[yellow]out of scope[/] {name}: {safe(r['reason'])}")
        else:
            m = r["malformed"]
            where = f"{m['file']}" + (f":{m['line']}" if m["line"] is not None else "")
            lines.append(f"[magenta]malformed[/]    {safe(where)}: "
                         f"{safe(m['field']) + ': ' if m['field'] else ''}{safe(m['message'])}")
    c = summary["counts"]
    judged = summary.get("steps_judged")
    limit = summary.get("max_out_of_scope")
    lines.append(
        f"{summary['traces']} traces, {summary['steps']} steps"
        + (f" ({judged} judged)" if judged is not None else "")
        + f" ({summary['mode']} mode) in "
        f"{summary['seconds']}s: [green]{c['valid']} valid[/], [red]{c['invalid']} invalid[/], "
        f"[yellow]{c['out_of_scope']} out of scope[/]"
        + (f" (at most {limit} allowed)" if limit is not None and c["out_of_scope"] > limit
           else "")
        + f", [magenta]{c['malformed']} malformed[/]"
        + (f"; liveness not judged on {summary['liveness_not_judged']} valid"
           + (f" (at most {summary.get('max_liveness_not_judged')} allowed)"
              if summary.get("max_liveness_not_judged") is not None
              and summary["liveness_not_judged"] > summary["max_liveness_not_judged"] else "")
           if summary.get("liveness_not_judged") else ""))
    return lines


def _short(s: str, n: int = 100) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def _t(p: dict, k: str) -> str:
    """A diff value in TLA+ (older diagnoses without *_tla: their ITF JSON)."""
    import json
    text = p.get(f"{k}_tla")
    if text is None:
        text = json.dumps(p[k], sort_keys=True)
    return safe(_short(text))


def _set(p: dict, k: str) -> str:
    import json
    items = p.get(f"{k}_tla")
    if items is None:
        items = [json.dumps(x, sort_keys=True) for x in p[k]]
    return safe(_short("{" + ", ".join(items) + "}"))
