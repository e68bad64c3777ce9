"""The self-contained HTML report: the jinja2 template templates/report.html.j2, matplotlib
PNGs embedded as base64.

Sections: the run's configuration (commands, bounds, fault profiles, timeouts), verdicts by
fault profile and planted bug, coverage of the spec, protocol behaviour per fault profile and
per planted bug against the `none` baseline, actions, bad rows, and the definition of every
metric (definitions.py; each heading links to its definition).  Plots: coverage by action,
election and commit latency histograms, trace verdicts by fault profile and by planted bug,
the first failing step; legends sit outside the axes, so they never cover data.  Inputs are
the small result tables, already collected to the driver as lists of dicts.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from pathlib import Path  # noqa: E402

from jinja2 import Environment, FileSystemLoader, select_autoescape  # noqa: E402

from spark_trace_analysis.definitions import METRICS, by_key  # noqa: E402

__all__ = ["render_report", "figures", "behaviour_table", "agreement_view"]

VERDICT_COLORS = {"valid": "#2e7d32", "invalid": "#c62828", "out_of_scope": "#9e9e9e",
                  "malformed": "#ef6c00", "unchecked": "#90caf9"}


TEMPLATES = Path(__file__).parent / "templates"
NO_BUG = "none"


def _legend_outside(ax, **kw) -> None:
    """The legend to the right of the axes, outside them: it never covers data (the PNG is
    saved with bbox_inches="tight", so the figure grows to hold it)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8, **kw)


def _png(fig) -> str | None:
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _coverage_plot(actions: list[dict]):
    rows = sorted((a for a in actions if a["edges"] > 0), key=lambda a: a["edge_share"] or 0)
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.2))
    names = [r["action"] for r in rows]
    shares = [100 * (r["edge_share"] or 0) for r in rows]
    colors = ["#c62828" if s == 0 else "#1565c0" for s in shares]
    ax.barh(names, [max(s, 0.8) for s in shares], color=colors)
    for y, r in enumerate(rows):
        label = f"{r['edges_visited']}/{r['edges']}" + ("  never exercised" if not shares[y] else "")
        inside = shares[y] > 80
        ax.text(shares[y] - 1 if inside else shares[y] + 1.5, y, label, va="center",
                ha="right" if inside else "left", fontsize=8,
                color="white" if inside else "#222")
    ax.set_xlim(0, 100)
    ax.set_xlabel("edges of the state graph visited by the corpus (%)")
    ax.set_title("Coverage by action (red: never exercised)")
    ax.grid(axis="x", alpha=0.3)
    return fig


#: Replay outcomes (spark_trace_analysis/replay_outcomes.py), in the bars' order.
REPLAY_COLORS = {"replayed": "#2e7d32", "diverged": "#c62828", "not_drivable": "#ef6c00",
                 "not_targeted": "#bdbdbd"}


def _replay_plot(rows: list[dict]):
    """The graph's edges colored by replay outcome: per implementation and action, the share
    of the action's edges replayed / diverged / not drivable / not targeted."""
    rows = sorted((r for r in rows if r["edges"]), key=lambda r: (r["graph"], r["impl"],
                                                                  r["action"]), reverse=True)
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.4))
    names = [f"{r['impl']} · {r['action']}" + (f" ({r['graph']})" if len({x["graph"] for x in rows}) > 1
                                                else "") for r in rows]
    left = [0.0] * len(rows)
    for o, c in REPLAY_COLORS.items():
        vals = [100 * (r.get(o) or 0) / r["edges"] for r in rows]
        if any(vals):
            ax.barh(names, vals, left=left, color=c, label=o.replace("_", " "))
            left = [a + b for a, b in zip(left, vals)]
    for y, r in enumerate(rows):
        ax.text(101, y, f"{r['replayed']:,}/{r['edges']:,}", va="center", fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("edges of the state graph (%)")
    ax.set_title(f"Replay outcome by action ({', '.join(sorted({r['graph'] for r in rows}))})")
    _legend_outside(ax, title="outcome")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _latency_plot(hist: list[dict], title: str, what: str):
    """Step histograms, one per protocol/fault profile, of a latency histogram table
    (metrics.latency_histogram: one grid of equal bins for all groups), each as the share of
    its group's count so that profiles of different sizes compare."""
    if not hist:
        return None
    groups: dict[str, dict[int, int]] = defaultdict(dict)
    for r in hist:
        groups[f"{r['protocol']}/{r['fault_profile']}"][r["bin"]] = r["count"]
    width = hist[0]["hi"] - hist[0]["lo"]
    origin = hist[0]["lo"] - hist[0]["bin"] * width
    nbins = max(r["bin"] for r in hist) + 1
    edges = [origin + i * width for i in range(nbins + 1)]
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for k in sorted(groups):
        n = sum(groups[k].values())
        shares = [100 * groups[k].get(i, 0) / n for i in range(nbins)]
        ax.stairs(shares, edges, label=f"{k}  (n={n:,})", linewidth=1.6)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel(f"virtual ms (bins of {width} ms)")
    ax.set_ylabel(f"share of {what} (%)")
    ax.set_title(title)
    _legend_outside(ax, title="protocol/fault profile")
    ax.grid(alpha=0.3)
    return fig


def _stacked(rows: list[dict], key: str, title: str):
    groups: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        g = f"{r['protocol']}/{r[key]}"
        for v in VERDICT_COLORS:
            groups[g][v] += r.get(f"traces_{v}", 0) or 0
    if not groups:
        return None
    keys = sorted(groups)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(keys) + 1.5))
    left = [0] * len(keys)
    for v, c in VERDICT_COLORS.items():
        vals = [groups[k][v] for k in keys]
        if any(vals):
            ax.barh(keys, vals, left=left, color=c, label=v.replace("_", " "))
            left = [a + b for a, b in zip(left, vals)]
    ax.set_xlabel("traces")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    _legend_outside(ax, title="verdict")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _failing_steps(rows: list[dict]):
    by: dict[int, int] = defaultdict(int)
    for r in rows:
        by[r["failing_step"]] += r["traces"]
    if not by:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.2))
    steps = sorted(by)
    width = max(1, (steps[-1] - steps[0]) // 60 or 1)
    ax.bar(steps, [by[k] for k in steps], width=0.8 * width, color="#c62828")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("First failing step of invalid traces")
    ax.set_xlabel("step")
    ax.set_ylabel("traces")
    ax.grid(axis="y", alpha=0.3)
    return fig


def with_impl(tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The tables with each row's `protocol` naming its implementation too when it is not the
    refimpl (`kafka:kraft`), so that every table and plot groups Kafka's runs apart from the
    refimpl's (the rows carry `impl` from spark_trace_analysis.ingest)."""
    def label(r: dict) -> dict:
        impl = r.get("impl")
        if impl in (None, "refimpl") or "protocol" not in r:
            return r
        return {**r, "protocol": f"{impl}:{r['protocol']}"}
    return {k: [label(r) if isinstance(r, dict) else r for r in v] if isinstance(v, list) else v
            for k, v in tables.items()}


def figures(tables: dict[str, list[dict]]) -> dict:
    """The report's matplotlib figures (None where there is nothing to plot)."""
    tables = with_impl(tables)
    return {
        "coverage": _coverage_plot(tables.get("coverage_actions") or []),
        "replay": _replay_plot(tables.get("replay_by_action") or []),
        "by_profile": _stacked(_sum_by(tables["conformance"], "fault_profile"), "fault_profile",
                               "Trace verdicts by fault profile"),
        "by_bug": _stacked(_sum_by(tables["conformance"], "bug"), "bug",
                           "Trace verdicts by planted bug"),
        "failing": _failing_steps(tables.get("first_failure") or []),
        "election": _latency_plot(tables.get("election_latency_hist") or [],
                                  "Election latency by fault profile", "elections"),
        "commit": _latency_plot(tables.get("commit_latency_hist") or [],
                                "Commit latency by fault profile", "committed offsets"),
    }


# The behaviour tables: (definition key, heading or None for the definition's name, the
# fields shown in the cell as "a / b", each with its format: a str.format pattern or "pct").
INT, DEC, PCT = "{:,}", "{:.2f}", "pct"
_COLUMNS = (
    ("traces", None, (("traces", INT),)),
    ("elections_per_trace", None, (("elections_per_trace", DEC),)),
    ("election_latency", "election p50 / p95 ms", (("election_latency_p50", INT),
                                                   ("election_latency_p95", INT))),
    ("commit_latency", "commit p50 / p95 ms", (("commit_latency_p50", INT),
                                               ("commit_latency_p95", INT))),
    ("leaderless_share", None, (("leaderless_share_avg", PCT),)),
    ("truncations_per_trace", None, (("truncations_per_trace", DEC),)),
    ("max_truncation_depth", None, (("max_truncation_depth", INT),)),
    ("hwm_lag", "HWM lag avg / max", (("hwm_lag_avg", DEC), ("hwm_lag_max", INT))),
    ("unclean_recoveries", None, (("unclean_recoveries", INT),)),
    ("data_loss_events", None, (("data_loss_events", INT),)),
)


def _fmt(v, fmt: str) -> str:
    if v is None:
        return "–"
    if fmt == PCT:
        return f"{100 * v:.1f}%"
    return fmt.format(v)


def _delta(v, base, fmt: str) -> tuple[str, float]:
    if v is None or base is None:
        return "–", 0.0
    d = v - base
    if fmt == PCT:
        return f"{100 * d:+.1f} pt", d
    if fmt == INT:
        return f"{d:+,}", d
    return f"{d:+.2f}", d


def behaviour_table(rows: list[dict], key: str, within: tuple[str, ...] = ()) -> dict:
    """Rows of metrics_by_profile / metrics_by_bug as cells, each with its difference from the
    baseline: the row of the same protocol (and the same `within` columns, e.g. the fault
    profile for planted bugs) whose `key` is `none`."""
    match = ("protocol",) + tuple(within)
    ident = lambda r: tuple(r.get(m) for m in match)  # noqa: E731
    base = {ident(r): r for r in rows if r.get(key) == NO_BUG}
    out = []
    for r in sorted(rows, key=lambda r: (tuple(str(x) for x in ident(r)), r.get(key) != NO_BUG,
                                         r.get(key) or "")):
        b = base.get(ident(r))
        is_base = r.get(key) == NO_BUG
        cells = []
        for mkey, _label, fields in _COLUMNS:
            value = " / ".join(_fmt(r.get(f), fmt) for f, fmt in fields)
            delta, trend = "", ""
            if b is not None and not is_base and mkey != "traces":
                parts = [_delta(r.get(f), b.get(f), fmt) for f, fmt in fields]
                delta = " / ".join(p[0] for p in parts)
                total = sum(p[1] for p in parts)
                trend = "up" if total > 0 else ("down" if total < 0 else "")
            cells.append({"value": value, "delta": delta, "trend": trend})
        out.append({"protocol": r["protocol"], "context": [r.get(w) for w in within],
                    "group": r.get(key), "baseline": is_base, "cells": cells})
    defs = by_key()
    columns = [{"key": k, "label": label or defs[k].name} for k, label, _f in _COLUMNS]
    missing = sorted({"/".join(str(x) for x in ident(r)) for r in rows} -
                     {"/".join(str(x) for x in k) for k in base})
    return {"rows": out, "columns": columns, "missing_baseline": missing,
            "context": [w.replace("_", " ") for w in within]}


def _outside_graph(row: dict) -> bool:
    """A row of the disagreements table that is no disagreement: the checker judged the trace,
    the distributed validation did not (out of scope: outside the one graph it loaded)."""
    return row.get("side") == "both" and row.get("spark_verdict") == "out_of_scope"


def agreement_view(a: dict | None, rows: list[dict]) -> dict | None:
    """The distributed validation against the checker's verdicts, as the report shows it:

    judged   traces both sides judged (the distributed verdict is not out of scope)
    agreed   of those, the traces on which both give the same verdict, step and action
    alarms   real disagreements: judged by both and differing, or a verdict on one side only
             (`alarm_rows`: the first of them)
    outside  traces only the checker judged: outside the loaded graph (other bounds, another
             protocol), where the distributed validation says out of scope; not an alarm
    `a` is summary["agreement"] (validate.agreement_counts), `rows` the disagreements table."""
    if not a:
        return None
    real = a["judged_in_graph"] - a["agree_in_graph"]
    one_sided = a["checker_only"] + a["spark_only"]
    return {"judged": a["judged_in_graph"], "agreed": a["agree_in_graph"],
            "alarms": real + one_sided, "outside": a["disagree"] - real - one_sided,
            "alarm_rows": [r for r in rows if not _outside_graph(r)]}


def render_report(summary: dict, tables: dict[str, list[dict]]) -> str:
    tables = with_impl(tables)
    cov_actions = tables.get("coverage_actions") or []
    plots = {k: _png(f) for k, f in figures(tables).items()}
    cov = (tables.get("coverage_summary") or [None])[0]
    never = [a["action"] for a in cov_actions if a["in_graph"] and a["edges_visited"] == 0]
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    return env.get_template("report.html.j2").render(
        s=summary, plots=plots, cov=cov, never=never, unvisited=tables.get("unvisited_states") or [],
        conformance=tables["conformance"],
        by_profile=behaviour_table(tables.get("metrics_by_profile") or [], "fault_profile"),
        by_bug=behaviour_table(tables.get("metrics_by_bug") or [], "bug", ("fault_profile",)),
        actions=tables.get("actions") or [], bad=(tables.get("bad_rows") or [])[:50],
        bad_verdicts=(tables.get("bad_rows_verdicts") or [])[:50],
        agreement=agreement_view(summary.get("agreement"), tables.get("disagreements") or []),
        excluded=(tables.get("coverage_excluded") or [])[:50],
        defs=by_key(), metric_list=METRICS)


def _sum_by(rows: list[dict], key: str) -> list[dict]:
    acc: dict[tuple, dict] = {}
    for r in rows:
        k = (r["protocol"], r[key])
        d = acc.setdefault(k, {"protocol": r["protocol"], key: r[key]})
        for v in VERDICT_COLORS:
            d[f"traces_{v}"] = d.get(f"traces_{v}", 0) + (r.get(f"traces_{v}") or 0)
    return list(acc.values())
