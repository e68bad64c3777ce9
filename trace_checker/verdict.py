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

from trace_checker.traces import Trace, TraceMalformed

__all__ = ["VERDICTS", "base", "malformed", "out_of_scope", "summary_lines", "count"]

VERDICTS = ("valid", "invalid", "out_of_scope", "malformed")


def base(trace: Trace, verdict: str, mode: str, **extra: Any) -> dict:
    d = {"file": trace.path, "trace_id": trace.trace_id, "protocol": trace.protocol,
         "bug": trace.bug, "seed": trace.seed, "verdict": verdict, "mode": mode,
         "steps": len(trace.steps), "partial": trace.partial}
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


def summary_lines(summary: dict, show_valid: bool = False) -> list[str]:
    """Rich-markup lines for people: one per non-valid trace, then the totals."""
    lines = []
    for r in summary["results"]:
        v = r["verdict"]
        if v == "valid" and not show_valid:
            continue
        name = r["file"]
        if v == "valid":
            amb = r.get("ambiguity")
            lines.append(f"[green]valid[/]        {name}" + (
                f"  (partial: up to {amb['max_candidates']} candidate states)" if amb else ""))
        elif v == "invalid":
            d = r["diagnosis"]
            lines.append(f"[red]invalid[/]      {name}: {d['summary']}")
            near = d.get("nearest")
            if near:
                for var in near["differing_variables"][:6]:
                    dv = near["diff"][var]
                    for p in dv["paths"][:3]:
                        if "missing" in p:
                            lines.append(f"    {var}{'' if p['path'] == '(value)' else p['path']}: "
                                         f"missing {_s(p['missing'])}, unexpected {_s(p['unexpected'])}")
                        else:
                            lines.append(f"    {var}{'' if p['path'] == '(value)' else p['path']}: "
                                         f"expected {_s(p['expected'])}, observed {_s(p['observed'])}")
        elif v == "out_of_scope":
            lines.append(f"[yellow]out of scope[/] {name}: {r['reason']}")
        else:
            m = r["malformed"]
            where = f"{m['file']}" + (f":{m['line']}" if m["line"] is not None else "")
            lines.append(f"[magenta]malformed[/]    {where}: "
                         f"{m['field'] + ': ' if m['field'] else ''}{m['message']}")
    c = summary["counts"]
    lines.append(
        f"{summary['traces']} traces, {summary['steps']} steps ({summary['mode']} mode) in "
        f"{summary['seconds']}s: [green]{c['valid']} valid[/], [red]{c['invalid']} invalid[/], "
        f"[yellow]{c['out_of_scope']} out of scope[/], [magenta]{c['malformed']} malformed[/]")
    return lines


def _s(v: Any, n: int = 100) -> str:
    import json
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= n else s[:n - 3] + "..."
