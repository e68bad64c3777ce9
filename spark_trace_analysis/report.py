"""The self-contained HTML report: jinja2 template, matplotlib PNGs embedded as base64.

Plots: coverage by action, election and commit latency histograms, trace verdicts by fault
profile and by planted bug, the first failing step.  Inputs are the small result tables,
already collected to the driver as lists of dicts.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from jinja2 import Environment, select_autoescape  # noqa: E402

__all__ = ["render_report"]

VERDICT_COLORS = {"valid": "#2e7d32", "invalid": "#c62828", "out_of_scope": "#9e9e9e",
                  "malformed": "#ef6c00", "unchecked": "#90caf9"}


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _coverage_plot(actions: list[dict]) -> str | None:
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
    return _png(fig)


def _latency_plot(hist: list[dict], title: str, what: str) -> str | None:
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
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def _stacked(rows: list[dict], key: str, title: str) -> str | None:
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
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def _failing_steps(rows: list[dict]) -> str | None:
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
    return _png(fig)


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kraftcheck stats</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right} th{background:#f4f4f4}
td.l,th.l{text-align:left} .kpi{display:inline-block;margin:0 2em 1em 0}
.kpi b{display:block;font-size:1.7em} img{max-width:100%} .muted{color:#777}
pre{background:#f8f8f8;padding:.5em;font-size:.8em;overflow-x:auto}
</style></head><body>
<h1>kraftcheck stats: conformance of {{ s.traces }} traces</h1>
<p class="muted">{{ s.steps }} steps from {{ s.files }} files; master {{ s.master }};
{{ s.seconds }} s.</p>
<div>
<span class="kpi"><b>{{ s.verdicts.valid or 0 }}</b>valid</span>
<span class="kpi"><b>{{ s.verdicts.invalid or 0 }}</b>invalid</span>
<span class="kpi"><b>{{ s.verdicts.out_of_scope or 0 }}</b>out of scope</span>
<span class="kpi"><b>{{ s.verdicts.malformed or 0 }}</b>malformed</span>
<span class="kpi"><b>{{ s.bad_rows }}</b>bad rows</span>
{% if cov %}<span class="kpi"><b>{{ "%.1f"|format(100*(cov.state_share or 0)) }}%</b>spec states visited</span>{% endif %}
{% if s.verdict_bad_rows is defined %}<span class="kpi"><b>{{ s.verdict_bad_rows }}</b>bad verdict rows</span>{% endif %}
</div>
<p>Verdicts from: {{ s.verdict_source }}.{% if s.agreement %} Distributed validation and the
checker's verdicts agree on {{ s.agreement.agree }} of {{ s.agreement.compared }} traces
({{ s.agreement.checker_only }} with a checker verdict only, {{ s.agreement.spark_only }} with a
distributed verdict only).{% endif %}{% if s.verdicts_unmatched %} {{ s.verdicts_unmatched }}
checker verdicts name no trace of the corpus.{% endif %}</p>
{% if disagreements %}<details open><summary>Traces on which they disagree
({{ s.agreement.disagree }}{% if s.agreement.disagree > disagreements|length %}, first {{ disagreements|length }} shown; all are in disagreements/{% endif %})</summary>
<table><tr><th class="l">trace</th><th class="l">side</th><th class="l">checker</th><th class="l">distributed</th></tr>
{% for d in disagreements %}<tr><td class="l">{{ d.trace_id or d.file }}</td><td class="l">{{ d.side }}</td>
<td class="l">{{ d.checker_verdict or "" }}{% if d.checker_step is not none %} at {{ d.checker_step }} ({{ d.checker_action }}){% endif %}</td>
<td class="l">{{ d.spark_verdict or "" }}{% if d.spark_step is not none %} at {{ d.spark_step }} ({{ d.spark_action }}){% endif %}</td></tr>{% endfor %}
</table></details>{% endif %}

<h2>Failures by fault profile and planted bug</h2>
{% for img in [plots.by_profile, plots.by_bug, plots.failing] if img %}<img src="data:image/png;base64,{{ img }}">{% endfor %}
<table><tr><th class="l">protocol</th><th class="l">fault profile</th><th class="l">bug</th>
<th>traces</th><th>valid</th><th>invalid</th><th>out of scope</th><th>malformed</th>
<th>steps valid</th><th>steps invalid</th><th>steps unchecked</th></tr>
{% for r in conformance %}<tr><td class="l">{{ r.protocol }}</td><td class="l">{{ r.fault_profile }}</td>
<td class="l">{{ r.bug }}</td><td>{{ r.traces }}</td><td>{{ r.traces_valid }}</td>
<td>{{ r.traces_invalid }}</td><td>{{ r.traces_out_of_scope }}</td><td>{{ r.traces_malformed }}</td>
<td>{{ r.steps_valid }}</td><td>{{ r.steps_invalid }}</td><td>{{ r.steps_unchecked }}</td></tr>{% endfor %}
</table>

<h2>Coverage of the spec</h2>
{% if cov %}
<p>State graph <b>{{ cov.graph }}</b> ({{ cov.protocol }}): {{ cov.states_visited }} of
{{ cov.states }} states ({{ "%.1f"|format(100*(cov.state_share or 0)) }}%),
{{ cov.edges_visited }} of {{ cov.edges }} edges ({{ "%.1f"|format(100*(cov.edge_share or 0)) }}%),
{{ cov.actions_visited }} of {{ cov.actions }} actions.
{{ cov.trace_states_outside }} distinct trace states are outside the graph.</p>
<p>Bounds: {% if cov.graph_bounds %}the graph was explored under <b>{{ cov.graph_bounds }}</b>;
{{ cov.traces_in_coverage }} of {{ cov.traces }} {{ cov.protocol }} traces count
({{ cov.traces_bounds_unstated }} of them state no bounds){% else %}the graph's config is not
known (give --graph-bounds CFG for a dot dump): all {{ cov.traces_in_coverage }} {{ cov.protocol }}
traces count, their bounds unchecked{% endif %}.</p>
{% if s.coverage_bounds %}<table><tr><th class="l">trace bounds</th><th class="l">compared with the graph's</th><th>traces</th></tr>
{% for b in s.coverage_bounds %}<tr><td class="l">{{ b.bounds or "(none stated)" }}</td><td class="l">{{ b.bounds_match }}</td><td>{{ b.traces }}</td></tr>{% endfor %}
</table>{% endif %}
{% if excluded %}<p><b>Left out of the coverage ({{ cov.traces_other_bounds }} traces made under other bounds):</b>
{% for e in excluded %}{{ e.trace_id }} ({{ e.bounds }}){{ ", " if not loop.last }}{% endfor %}{% if cov.traces_other_bounds > excluded|length %}, ... (all in coverage_traces/){% endif %}</p>{% endif %}
{% if plots.coverage %}<img src="data:image/png;base64,{{ plots.coverage }}">{% endif %}
<p><b>Actions never exercised:</b> {{ never|join(", ") if never else "none" }}</p>
<details><summary>A sample of {{ unvisited|length }} states never visited</summary>
{% for u in unvisited %}<pre>{{ u.label }}</pre>{% endfor %}</details>
{% else %}<p class="muted">No state graph given (--graph): coverage not computed.</p>{% endif %}

<h2>Protocol behaviour by fault profile</h2>
{% for img in [plots.election, plots.commit] if img %}<img src="data:image/png;base64,{{ img }}">{% endfor %}
<table><tr><th class="l">protocol</th><th class="l">fault profile</th><th>traces</th>
<th>elections / trace</th><th>election p50 / p95 ms</th><th>commit p50 / p95 ms</th>
<th>leaderless share</th><th>truncations / trace</th><th>max depth</th><th>HWM lag avg / max</th>
<th>unclean recoveries</th><th>data-loss events</th></tr>
{% for r in metrics %}<tr><td class="l">{{ r.protocol }}</td><td class="l">{{ r.fault_profile }}</td>
<td>{{ r.traces }}</td><td>{{ "%.2f"|format(r.elections_per_trace or 0) }}</td>
<td>{{ r.election_latency_p50 }} / {{ r.election_latency_p95 }}</td>
<td>{{ r.commit_latency_p50 }} / {{ r.commit_latency_p95 }}</td>
<td>{{ "%.1f%%"|format(100*(r.leaderless_share_avg or 0)) }}</td>
<td>{{ "%.2f"|format(r.truncations_per_trace or 0) }}</td><td>{{ r.max_truncation_depth }}</td>
<td>{{ "%.2f"|format(r.hwm_lag_avg or 0) }} / {{ r.hwm_lag_max }}</td>
<td>{{ r.unclean_recoveries }}</td><td>{{ r.data_loss_events }}</td></tr>{% endfor %}
</table>

<h2>Actions</h2>
<table><tr><th class="l">protocol</th><th class="l">action</th><th>steps</th><th>traces</th>
<th>failing steps</th></tr>
{% for r in actions %}<tr><td class="l">{{ r.protocol }}</td><td class="l">{{ r.action }}</td>
<td>{{ r.steps }}</td><td>{{ r.traces }}</td><td>{{ r.failures }}</td></tr>{% endfor %}
</table>

<h2>Bad rows ({{ s.bad_rows }})</h2>
{% if bad %}<table><tr><th class="l">file</th><th>line</th><th class="l">reason</th><th class="l">kept as a step</th></tr>
{% for b in bad %}<tr><td class="l">{{ b.file }}</td><td>{{ b.line }}</td><td class="l">{{ b.reason }}</td><td class="l">{{ "yes" if b.in_steps else "no" }}</td></tr>{% endfor %}
</table>{% if s.bad_rows > bad|length %}<p class="muted">first {{ bad|length }} shown; all are in bad_rows/.</p>{% endif %}
{% else %}<p>None.</p>{% endif %}
{% if s.verdict_bad_rows is defined %}<h2>Bad verdict rows ({{ s.verdict_bad_rows }})</h2>
{% if bad_verdicts %}<table><tr><th class="l">file</th><th>line</th><th class="l">reason</th><th class="l">text</th></tr>
{% for b in bad_verdicts %}<tr><td class="l">{{ b.file }}</td><td>{{ b.line }}</td><td class="l">{{ b.reason }}</td><td class="l">{{ b.text }}</td></tr>{% endfor %}
</table>{% if s.verdict_bad_rows > bad_verdicts|length %}<p class="muted">first {{ bad_verdicts|length }} shown; all are in bad_rows_verdicts/.</p>{% endif %}
{% else %}<p>None.</p>{% endif %}{% endif %}
</body></html>
"""


def render_report(summary: dict, tables: dict[str, list[dict]]) -> str:
    cov_actions = tables.get("coverage_actions") or []
    plots = {
        "coverage": _coverage_plot(cov_actions),
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
    cov = (tables.get("coverage_summary") or [None])[0]
    never = [a["action"] for a in cov_actions if a["in_graph"] and a["edges_visited"] == 0]
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    return env.from_string(_TEMPLATE).render(
        s=summary, plots=plots, cov=cov, never=never, unvisited=tables.get("unvisited_states") or [],
        conformance=tables["conformance"], metrics=tables.get("metrics_by_profile") or [],
        actions=tables.get("actions") or [], bad=(tables.get("bad_rows") or [])[:50],
        bad_verdicts=(tables.get("bad_rows_verdicts") or [])[:50],
        disagreements=(tables.get("disagreements") or [])[:50],
        excluded=(tables.get("coverage_excluded") or [])[:50])


def _sum_by(rows: list[dict], key: str) -> list[dict]:
    acc: dict[tuple, dict] = {}
    for r in rows:
        k = (r["protocol"], r[key])
        d = acc.setdefault(k, {"protocol": r["protocol"], key: r[key]})
        for v in VERDICT_COLORS:
            d[f"traces_{v}"] = d.get(f"traces_{v}", 0) + (r.get(f"traces_{v}") or 0)
    return list(acc.values())
