"""The statistics report as a reader sees it: rendered by a real headless chromium (its DevTools
protocol, tests/headless.py), with a screenshot; every section present, every metric defined on
the page, the run's configuration shown, behaviour grouped per fault profile and per planted
bug against the `none` baseline, legends outside the plotted data, no console errors."""

from __future__ import annotations

import json
import struct

import pytest
from typer.testing import CliRunner

from headless import Chromium, find_chromium
from kraftcheck.cli import app
from spark_trace_analysis.definitions import METRICS
from spark_trace_analysis.report import behaviour_table, figures

runner = CliRunner()
pytestmark = pytest.mark.xdist_group("spark")

SECTIONS = ["summary", "configuration", "conformance", "coverage", "behaviour-profile",
            "behaviour-bug", "actions", "bad-rows", "definitions"]

CORPORA = [  # (protocol, faults, bug)
    ("kraft", "none", None), ("kraft", "lossy", None), ("kraft", "none", "vote-ignores-log"),
    ("elr", "none", None), ("elr", "crashes", None),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory, spark_local):
    from spark_trace_analysis.jobs import run_stats

    root = tmp_path_factory.mktemp("report")
    for proto, faults, bug in CORPORA:
        args = ["simulate", "--protocol", proto, "--seeds", "0:1", "--faults", faults,
                "--steps", "150", "--out", str(root / f"{proto}-{faults}-{bug or 'none'}")]
        r = runner.invoke(app, args + (["--bug", bug] if bug else []))
        assert r.exit_code in (0, 1), r.output   # a planted bug may or may not be caught here
    spark_local()          # the shared local[2] session (tests/conftest.py)
    summary = run_stats([str(root / d.name) for d in sorted(root.iterdir())], root / "stats",
                        master="local[2]", command="kraftcheck stats CORPUS --out stats")
    return summary, root


def test_report_renders_in_a_headless_browser(report, tmp_path):
    summary, root = report
    exe = find_chromium()
    assert exe, "chromium is missing: `make setup-test` installs it (scripts/setup-test.sh)"
    with Chromium(exe) as b:
        b.open((root / "stats" / "report.html").as_uri())
        page = b.evaluate("""(() => {
          const sections = [...document.querySelectorAll('section[id]')].map(s => ({
            id: s.id, height: s.getBoundingClientRect().height,
            heading: (s.querySelector('h1,h2') || {}).textContent || null}));
          const imgs = [...document.images].map(i => ({ok: i.complete && i.naturalWidth > 0,
                                                       alt: i.alt}));
          const broken = [...document.querySelectorAll('a[href^="#"]')]
            .map(a => a.getAttribute('href').slice(1)).filter(id => !document.getElementById(id));
          const defs = [...document.querySelectorAll('#definitions dt')].map(d => d.id);
          const pageWidth = document.documentElement.scrollWidth;
          return {sections, imgs, broken, defs, pageWidth,
                  viewport: window.innerWidth, title: document.title};
        })()""")
        shot = b.screenshot(tmp_path / "report.png")
        errors = b.console_errors()
    assert errors == []
    assert page["title"] == "kraftcheck stats"
    ids = [s["id"] for s in page["sections"]]
    assert ids == SECTIONS
    assert all(s["height"] > 20 for s in page["sections"]), page["sections"]
    assert len(page["imgs"]) >= 4 and all(i["ok"] for i in page["imgs"]), page["imgs"]
    assert page["broken"] == []
    assert page["defs"] == [f"def-{m.key}" for m in METRICS]
    assert page["pageWidth"] <= page["viewport"]        # nothing forces a sideways scroll
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", shot[16:24])
    assert width == 1280 and height > 2000                # the whole page, not one viewport


def test_report_shows_the_run_configuration(report):
    summary, root = report
    html = (root / "stats" / "report.html").read_text()
    c = summary["configuration"]
    assert c["command"] == "kraftcheck stats CORPUS --out stats"
    cmds = sorted(m["command"] for m in c["simulations"])
    assert len(cmds) == len(CORPORA)
    assert any("--faults lossy" in x and "--protocol kraft" in x for x in cmds)
    assert any("--bug vote-ignores-log" in x for x in cmds)
    groups = {(g["protocol"], g["fault_profile"], g["bug"]): g["traces"] for g in c["groups"]}
    assert groups == {("kraft", "none", "none"): 2, ("kraft", "lossy", "none"): 2,
                      ("kraft", "none", "vote-ignores-log"): 2, ("elr", "none", "none"): 2,
                      ("elr", "crashes", "none"): 2}
    assert [p["name"] for p in c["fault_profiles"]] == ["none", "crashes", "lossy"]
    assert "loss 0.1" in c["fault_profiles"][2]["settings"]
    t = {x["protocol"]: x["settings"] for x in c["timeouts"]}
    assert "election_timeout_ms" in t["kraft"] and "session_timeout_ms" in t["elr"]
    for text in ("kraftcheck stats CORPUS --out stats", "--bug vote-ignores-log",
                 "election_timeout_ms", "loss 0.1"):
        assert text in html


def test_behaviour_is_grouped_per_profile_and_bug_with_the_none_baseline(report):
    summary, root = report
    by_profile = {(r["protocol"], r["fault_profile"]) for r in summary["metrics_by_profile"]}
    assert by_profile == {("kraft", "none"), ("kraft", "lossy"), ("elr", "none"),
                          ("elr", "crashes")}
    by_bug = {(r["protocol"], r["fault_profile"], r["bug"]): r["traces"]
              for r in summary["metrics_by_bug"]}
    assert by_bug == {("kraft", "none", "none"): 2, ("kraft", "lossy", "none"): 2,
                      ("kraft", "none", "vote-ignores-log"): 2, ("elr", "none", "none"): 2,
                      ("elr", "crashes", "none"): 2}
    html = (root / "stats" / "report.html").read_text()
    section = html.split('<section id="behaviour-bug">', 1)[1].split("</section>", 1)[0]
    assert "vote-ignores-log" in section and 'class="baseline"' in section
    t = behaviour_table(summary["metrics_by_bug"], "bug", ("fault_profile",))
    bug_row = next(r for r in t["rows"] if r["group"] == "vote-ignores-log")
    assert bug_row["context"] == ["none"] and not bug_row["baseline"]
    assert all(c["delta"] for c in bug_row["cells"][1:])   # compared with kraft/none/none
    assert t["missing_baseline"] == []


def test_baseline_differences():
    rows = [
        {"protocol": "kraft", "fault_profile": "chaos", "traces": 3, "elections_per_trace": 2.5,
         "election_latency_p50": 300, "election_latency_p95": 900, "leaderless_share_avg": 0.25,
         "hwm_lag_avg": 1.5, "hwm_lag_max": 4, "data_loss_events": 0},
        {"protocol": "kraft", "fault_profile": "none", "traces": 3, "elections_per_trace": 1.0,
         "election_latency_p50": 100, "election_latency_p95": 200, "leaderless_share_avg": 0.05,
         "hwm_lag_avg": 0.5, "hwm_lag_max": 1, "data_loss_events": 0},
        {"protocol": "elr", "fault_profile": "crashes", "traces": 1, "elections_per_trace": 1.0},
    ]
    t = behaviour_table(rows, "fault_profile")
    assert [(r["protocol"], r["group"], r["baseline"]) for r in t["rows"]] == [
        ("elr", "crashes", False), ("kraft", "none", True), ("kraft", "chaos", False)]
    assert t["missing_baseline"] == ["elr"]
    cols = [c["key"] for c in t["columns"]]
    chaos = dict(zip(cols, t["rows"][2]["cells"]))
    assert chaos["elections_per_trace"] == {"value": "2.50", "delta": "+1.50", "trend": "up"}
    assert chaos["election_latency"]["value"] == "300 / 900"
    assert chaos["election_latency"]["delta"] == "+200 / +700"
    assert chaos["leaderless_share"]["delta"] == "+20.0 pt"
    assert chaos["hwm_lag"]["delta"] == "+1.00 / +3"
    assert chaos["data_loss_events"]["delta"] == "+0"
    base = dict(zip(cols, t["rows"][1]["cells"]))
    assert base["elections_per_trace"]["delta"] == ""           # the baseline itself
    elr = dict(zip(cols, t["rows"][0]["cells"]))
    assert elr["elections_per_trace"]["delta"] == ""            # nothing to compare with
    assert elr["commit_latency"]["value"] == "– / –"
    keys = {m.key for m in METRICS}
    assert set(cols) <= keys


def test_legends_never_cover_data(report):
    """Every legend lies outside its axes (so it cannot hide a bar, a step or a label)."""
    summary, root = report
    tables = _tables(summary, root)
    figs = {k: f for k, f in figures(tables).items() if f is not None}
    assert {"by_profile", "by_bug", "election"} <= set(figs)
    for name, fig in figs.items():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None:
                continue
            lb, ab = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
            assert not lb.overlaps(ab), f"{name}: the legend overlaps the plot area"
        import matplotlib.pyplot as plt
        plt.close(fig)


def _tables(summary: dict, root) -> dict:
    """The tables the report is drawn from, read back from the run's Parquet output."""
    import pyarrow.parquet as pq

    out = root / "stats"

    def rows(name):
        return pq.read_table(out / name).to_pylist() if (out / name).exists() else []

    return {"conformance": rows("conformance"), "first_failure": rows("first_failure"),
            "election_latency_hist": rows("election_latency_hist"),
            "commit_latency_hist": rows("commit_latency_hist"),
            "coverage_actions": rows("coverage_actions")}


def test_summary_json_keeps_the_configuration(report):
    summary, root = report
    on_disk = json.loads((root / "stats" / "summary.json").read_text())
    assert on_disk["configuration"]["groups"] == json.loads(
        json.dumps(summary["configuration"]["groups"]))


# ------------------------------------------------------------------- the demo's report (issue 34)

DEMO_CORPORA = ["kraft-graph-chaos", "elr-none"]   # inside kraft-graph-small / another protocol

_AGREEMENT_JS = """(() => {
  const text = id => { const e = document.getElementById(id); return e ? e.innerText : null; };
  const alarm = document.querySelector('#summary .alarm');
  const top = id => { const e = document.getElementById(id);
                      return e ? e.getBoundingClientRect().top : null; };
  return {headline: text('agreement-headline'), none: text('no-disagreement'),
          outside: text('outside-graph'), alarm: alarm ? alarm.innerText : null,
          alarmColor: alarm ? getComputedStyle(alarm.querySelector('summary')).color : null,
          alarmTop: top('disagreements'), outsideTop: top('outside-graph'),
          verdictsTop: top('configuration')};
})()"""


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory, spark_local):
    """The demo's own stages (simulate, validate, stats) on two of its corpora, 2 seeds; the
    stats stage in the shared local[2] session (tests/conftest.py; the demo's default master
    local[*] would start a second JVM for the same job)."""
    from kraftcheck.commands.demo import _stage_simulate, _stage_stats, _stage_validate
    out = tmp_path_factory.mktemp("demo")
    assert _stage_simulate(out, 2, False, DEMO_CORPORA)["ok"]
    assert _stage_validate(out, False, DEMO_CORPORA)["ok"]
    master = spark_local().sparkContext.master
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KRAFTCHECK_SPARK_MASTER", master)
        return _stage_stats(out, False, DEMO_CORPORA), out


def _render(path) -> dict:
    exe = find_chromium()
    assert exe, "chromium is missing: `make setup-test` installs it (scripts/setup-test.sh)"
    with Chromium(exe) as b:
        b.open(path.as_uri())
        page = b.evaluate(_AGREEMENT_JS)
        assert b.console_errors() == []
    return page


def test_the_demos_report_shows_no_disagreement_when_there_is_none(demo_report):
    s, out = demo_report
    a = s["agreement"]
    assert s["ok"] and a["agree_in_graph"] == a["judged_in_graph"] == 2
    page = _render(out / "stats" / "report.html")
    assert page["alarm"] is None and page["alarmTop"] is None
    assert page["headline"] == ("Distributed validation judged 2 traces against the state graph "
                                "kraft-graph-small and agrees with the checker on 2 of them.")
    assert page["none"].startswith("No disagreement")
    # the two elr traces: judged by the checker only, a count and a sentence
    assert page["outside"].startswith("2 traces judged by the checker only: they lie outside "
                                      "the loaded graph kraft-graph-small")
    assert "not a disagreement" in page["outside"]


def test_a_real_disagreement_is_shown_first_and_in_red(demo_report, tmp_path):
    """The same report with one trace both sides judged differently: the alarm comes first,
    in red, apart from the traces outside the graph."""
    from spark_trace_analysis.report import render_report
    _, out = demo_report
    summary = json.loads((out / "stats" / "summary.json").read_text())
    tables = _tables(summary, out)
    a = summary["agreement"]
    a.update(agree=a["agree"] - 1, agree_in_graph=a["agree_in_graph"] - 1,
             disagree=a["disagree"] + 1)
    outside_row = {"trace_id": "elr-x", "file": None, "side": "both", "checker_verdict": "valid",
                   "spark_verdict": "out_of_scope", "checker_step": None, "spark_step": None,
                   "checker_action": None, "spark_action": None}
    tables["disagreements"] = [
        {"trace_id": "kraft-x", "file": None, "side": "both", "checker_verdict": "valid",
         "spark_verdict": "invalid", "checker_step": None, "spark_step": 3,
         "checker_action": None, "spark_action": "HandleFetchRequest"}, outside_row]
    (tmp_path / "report.html").write_text(render_report(summary, tables))
    page = _render(tmp_path / "report.html")
    assert page["headline"].endswith("judged 2 traces against the state graph "
                                     "kraft-graph-small and agrees with the checker on 1 of them.")
    assert page["none"] is None
    assert "Traces on which they disagree (1)" in page["alarm"] and "kraft-x" in page["alarm"]
    assert "elr-x" not in page["alarm"]
    assert page["alarmColor"] == "rgb(179, 38, 30)"
    assert page["alarmTop"] < page["outsideTop"] < page["verdictsTop"]
