"""The stats job end to end: ingest, graph, validation, conformance, coverage, metrics, report.

`run_stats` writes every table as Parquet under a temporary folder next to `out`, then the HTML
report and summary.json, and renames the folder to `out` only when everything succeeded (an
older `out` is replaced), so a reader never sees a half-written result.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kraftcore.output import replace_folder, write_atomic
from spark_trace_analysis import conformance, coverage, ingest, metrics, run_config, validate
from spark_trace_analysis import reassign_metrics   # KIP-642 (issue 12)
from spark_trace_analysis.graph import GraphError, load_graph_tables, prepare_graph
from spark_trace_analysis.ingest import InputError
from spark_trace_analysis.session import (driver_heap_bytes, get_session, is_small_input,
                                          large_input_shuffles, size_shuffles)

__all__ = ["run_stats", "InputError", "GraphError"]

Progress = Callable[[str], None]


def _rows(df: DataFrame, limit: int | None = None) -> list[dict]:
    if limit is not None:
        df = df.limit(limit)
    return [r.asDict(recursive=True) for r in df.collect()]


def _write_small(df: DataFrame, path: Path) -> list[dict]:
    """Write a table that is small by construction (one row per action, fault profile, bug,
    implementation or histogram bin: the report shows every row) and return its rows: ONE
    Spark job collects it as Arrow, and this process writes it as one Parquet file (the graph
    cache's tables are written the same way).  Through Spark's writer it took a job to write,
    its commit and a second job to read the rows back (issue 34's fixed cost)."""
    table = df.toArrow()
    path.mkdir(parents=True)
    pq.write_table(table, path / "part-00000.parquet")
    return table.to_pylist()


def _write(df: DataFrame, path: Path, parts: int = 1) -> DataFrame:
    # read back with the schema it was written with: no job to read it from the files' footers
    return ingest.write_read_back(df.coalesce(parts), path)


def _write_partitioned(df: DataFrame, path: Path) -> DataFrame:
    """A per-trace or per-event table, partitioned by protocol and bounds config."""
    cols = ingest.PARTITION_COLUMNS
    (df.repartition(*cols).write.mode("overwrite").partitionBy(*cols).parquet(str(path)))
    return ingest.read_back(df.sparkSession, path, df.schema, cols)


def run_stats(corpus_paths: Sequence[str | os.PathLike], out: str | os.PathLike,
              graph: str | None = None,
              verdicts: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
              master: str | None = None, progress: Progress | None = None,
              sample_unvisited: int = 20, graph_bounds: str | None = None,
              command: str | None = None,
              replay: Sequence[str | os.PathLike] | None = None) -> dict:
    """Run every stage; returns the summary (also written to out/summary.json) with
    `report` = the path of out/report.html.  Raises InputError / GraphError on bad input.
    graph_bounds: the config a dot-dump graph was explored under (coverage leaves out traces
    whose header names other bounds).  command: the command line that asked for the run, shown
    in the report's configuration section.  replay: `kraftcheck replay --out` folders whose
    per-edge outcomes color the coverage section (replay_outcomes.py)."""
    say = progress or (lambda _m: None)
    t0 = time.monotonic()
    out = Path(out).resolve()
    files = ingest.expand_inputs(corpus_paths)
    if isinstance(verdicts, (str, os.PathLike)):
        verdicts = [verdicts]
    vfiles = ingest.expand_inputs(verdicts, (".jsonl", ".json")) if verdicts else None
    if replay:
        from spark_trace_analysis.replay_outcomes import check_replay
        check_replay(replay)           # bad replay folders fail before Spark starts
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        summary = _run(files, vfiles, tmp, graph, master, say, sample_unvisited, graph_bounds,
                       command, replay)
        summary["seconds"] = round(time.monotonic() - t0, 1)
        summary["out"] = str(out)
        summary["report"] = str(out / "report.html")
        say("writing the report")
        from spark_trace_analysis.report import render_report   # imported while Spark started
        tables = summary.pop("_tables")
        write_atomic(tmp / "report.html", render_report(summary, tables))
        write_atomic(tmp / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")
        replace_folder(tmp, out)
        return summary
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _protocol_metrics(spark, steps: DataFrame, traces: DataFrame, states: DataFrame, tmp: Path,
                      summary: dict, say: Progress
                      ) -> tuple[dict[str, DataFrame], list[dict], list[dict]]:
    """The per-step tables (metrics.PER_STEP_TABLES), metrics_by_profile and metrics_by_bug,
    written under `tmp`: (the per-step tables by name, the rows of metrics_by_profile, the rows
    of metrics_by_bug)."""
    # One sort of the observed steps by trace and step (narrow rows: keys, times and the
    # state's scalar observations), written once; the comparisons of consecutive states run
    # once per distinct pair of states; every per-step table (metrics.PER_STEP_TABLES) is then a
    # scan of the window joined with the (few) pairs whose comparisons are not zero.
    staging = tmp / "_staging"
    few_states = summary["distinct_states"] <= ingest.BROADCAST_STATES
    # the states' maps go to every task (twice: as the previous and the current state) only
    # while they take at most a quarter of the driver's heap
    maps_fit = summary["distinct_states"] * metrics.OBS_BYTES_PER_STATE <= driver_heap_bytes(spark) // 4
    say("  the per-step window (one sort of the observed steps by trace and step)")
    win = ingest.write_read_back(metrics.step_window(steps, metrics.state_scalars(states),
                                                     few_states), staging / "window")
    say("  comparing consecutive states (once per distinct pair)")
    pairs = ingest.write_read_back(metrics.pair_values(win, states, maps_fit),
                                   staging / "pairs")
    ps = metrics.per_step(win, pairs, metrics.trace_keys(traces),
                          pairs.count() <= metrics.BROADCAST_PAIRS,
                          summary["traces"] <= metrics.BROADCAST_TRACES)
    per = {}
    for name, fn in metrics.PER_STEP_TABLES.items():
        say(f"  {name}")
        per[name] = _write_partitioned(fn(ps), tmp / name)
    ingest.remove(staging)
    say("  metrics by fault profile and planted bug, latency histograms")
    tm, el, cl = per["metrics"], per["election_latency"], per["commit_latency"]
    mp = _write_small(metrics.metrics_by_profile(tm, el, cl), tmp / "metrics_by_profile")
    mb = _write_small(metrics.metrics_by_bug(tm, el, cl), tmp / "metrics_by_bug")
    return per, mp, mb


def _run(files, vfiles, tmp: Path, graph_src, master, say: Progress, sample: int,
         graph_bounds: str | None, command: str | None = None, replay=None) -> dict:
    if graph_bounds and not graph_src:
        raise InputError("--graph-bounds needs --graph")
    say("starting Spark")
    size = ingest.input_bytes(files)
    # the graph's Python part (for a checker config: its cached tables, built once) and the
    # report's imports (matplotlib, jinja2) run while the driver JVM starts, which leaves this
    # process waiting
    with ThreadPoolExecutor(2) as pool:
        pool.submit(importlib.import_module, "spark_trace_analysis.report")
        prepared = pool.submit(prepare_graph, graph_src) if graph_src else None
        spark = get_session(master, small_input=is_small_input(size))
        prepared = prepared.result() if prepared is not None else None
    size_shuffles(spark, size)
    g = None
    if graph_src:
        say(f"loading the state graph {graph_src}")
        g = load_graph_tables(spark, graph_src, tmp, graph_bounds, prepared=prepared)
    extra = {}
    if g is not None and g.protocol:
        extra[g.protocol] = (g.actions if g.actions is not None else
                             {r.action for r in g.edges.select("action").distinct().collect()})
    say(f"ingesting {len(files)} files")
    counts = ingest.ingest_traces(spark, files, tmp, tmp / "_staging", extra_actions=extra,
                                  say=lambda m: say(f"  {m}"))
    # read back with the schemas they were written with (no job to read the files' footers)
    schemas = counts["schemas"]
    traces = ingest.read_back(spark, tmp / "traces", schemas["traces"])
    steps = ingest.read_back(spark, tmp / "steps", schemas["steps"])
    summary: dict = {"files": len(files), "master": spark.sparkContext.master,
                     "traces": counts["traces"], "steps": counts["steps"],
                     "lines": counts["lines"], "bad_rows": counts["bad_rows"],
                     "distinct_states": counts["distinct_states"],
                     "graph": g.name if g else None, "agreement": None}

    dist = None
    if g is not None:
        say("validating steps against the state graph (distributed)")
        dist = _write(validate.validate(traces, steps, g.states, g.edges, g.protocol),
                      tmp / "validation", 2)
    checker = None
    if vfiles:
        say("reading the checker's verdicts")
        vc = ingest.ingest_verdicts(spark, vfiles, tmp)
        summary["verdict_bad_rows"] = vc["bad_rows"]
        schemas.update(vc["schemas"])
        raw = ingest.read_back(spark, tmp / "verdicts", schemas["verdicts"])
        cols = ("trace_id", "file", "verdict", "failing_step", "claimed_action", "detail")
        # verdicts of malformed files carry no trace_id: match them to the traces of their file
        by_file = traces.select(F.col("trace_id").alias("tid"), F.col("file").alias("tfile"))
        no_id = (raw.filter(F.col("trace_id").isNull())
                 .join(by_file, F.col("file") == F.col("tfile"), "left")
                 .withColumn("trace_id", F.col("tid")).select(*cols))
        # built once and cached: the comparison, the conformance tables and the verdict counts
        # below all read it (no re-derivation per table: issue 34's fixed cost)
        matched = (raw.filter(F.col("trace_id").isNotNull()).select(*cols).unionByName(no_id)
                   .cache())
        checker = (matched.filter(F.col("trace_id").isNotNull()).dropDuplicates(["trace_id"])
                   .cache())
        # verdicts naming no trace of the corpus stay in the comparison, one-sided
        checker_all = checker.unionByName(matched.filter(F.col("trace_id").isNull()))
        checker = checker.drop("file")
        summary["verdicts_unmatched"] = matched.filter(F.col("trace_id").isNull()).count()
    if checker is not None and dist is not None:
        say("comparing the checker's verdicts with the distributed validation")
        a = validate.agreement(checker_all, dist).cache()
        summary["agreement"] = validate.agreement_counts(a)
        diffs = _write(a.filter(~F.col("agree")), tmp / "disagreements")
        a.unpersist()
    if checker is not None:
        verdicts, source = checker, "the trace checker (--verdicts)"
    elif dist is not None:
        verdicts, source = dist, f"distributed validation against {g.name}"
    else:
        verdicts = _write(traces.select("trace_id", F.when(F.col("complete"), "unchecked")
                                        .otherwise("malformed").alias("verdict"),
                                        F.lit(None).cast("long").alias("failing_step"),
                                        F.lit(None).cast("string").alias("claimed_action"),
                                        F.array_join("problems", "; ").alias("detail")),
                          tmp / "verdicts")
        source = "none (no --graph or --verdicts): traces are only checked for form"
    summary["verdict_source"] = source

    say("conformance statistics")
    conf = _write_small(conformance.conformance_table(traces, verdicts), tmp / "conformance")
    ff = _write_small(conformance.first_failure_table(traces, verdicts), tmp / "first_failure")
    acts = _write_small(conformance.action_table(steps, verdicts), tmp / "actions")
    vrows = verdicts.groupBy("verdict").count().collect()
    summary["verdicts"] = {r.verdict: r["count"] for r in vrows}

    tables: dict[str, list[dict]] = {}
    if summary["agreement"] is not None:
        # real alarms first (judged on both sides, or on one side only); the traces outside
        # the loaded graph (distributed verdict out_of_scope) last (report.agreement_view)
        outside = (F.col("side") == "both") & (F.col("spark_verdict") == "out_of_scope")
        tables["disagreements"] = _rows(diffs.orderBy(outside, "side", "trace_id", "file"), 50)
    if g is not None:
        say("coverage of the state graph")
        cov = coverage.coverage(steps, g.states, g.edges, g.name, g.protocol, sample,
                                traces=traces, graph_bounds=g.bounds)
        # one row per trace: through Spark's writer (read again below); the others are small
        ct = _write(cov.pop("coverage_traces"), tmp / "coverage_traces")
        for name, df in cov.items():
            tables[name] = _write_small(df, tmp / name)
        tables["coverage_excluded"] = _rows(ct.filter(~F.col("in_coverage")).orderBy("trace_id"),
                                            50)
        c = tables["coverage_summary"][0]
        summary["coverage"] = {k: c[k] for k in (
            "states", "states_visited", "state_share", "edges", "edges_visited", "edge_share",
            "actions", "actions_visited", "graph_bounds", "traces", "traces_in_coverage",
            "traces_other_bounds", "traces_bounds_unstated", "traces_bounds_unchecked")}
        summary["coverage_by_impl"] = tables["coverage_by_impl"]
        summary["coverage_bounds"] = [
            {"bounds": r.bounds, "bounds_match": r.bounds_match, "traces": r["count"]}
            for r in ct.groupBy("bounds", "bounds_match").count()
            .orderBy("bounds_match", "bounds").collect()]
        summary["coverage_excluded_traces"] = [r["trace_id"]
                                               for r in tables["coverage_excluded"]]
        summary["actions_never_exercised"] = sorted(
            a["action"] for a in tables["coverage_actions"]
            if a["in_graph"] and a["edges_visited"] == 0)

    if replay:
        say("replay outcomes (the graph's edges by outcome, per implementation)")
        from spark_trace_analysis import replay_outcomes
        redges, rmeta = replay_outcomes.read_replay(spark, replay)
        rt = replay_outcomes.replay_tables(redges, g.edges if g is not None else None,
                                           g.name if g is not None else None)
        _write(rt["replay_edges"], tmp / "replay_edges")     # one row per edge of the graph
        tables["replay_by_action"] = _write_small(rt["replay_by_action"],
                                                  tmp / "replay_by_action")
        summary["replay"] = replay_outcomes.replay_summary(tables["replay_by_action"])
        summary["replay_inputs"] = rmeta

    say("protocol metrics")
    # The averages of doubles in metrics_by_profile / metrics_by_bug (hwm_lag_avg) sum in the
    # order rows meet in partitions, which every shuffle of this phase shapes: the phase runs
    # with the shuffles it always had, also for a small input (session.large_input_shuffles),
    # so those averages stay the same to the last bit.
    states = ingest.read_back(spark, tmp / "states", schemas["states"])
    with large_input_shuffles(spark, size):
        per, mp, mb = _protocol_metrics(spark, steps, traces, states, tmp, summary, say)
    el, cl = per["election_latency"], per["commit_latency"]

    tables["conformance"] = conf
    tables["first_failure"] = ff
    tables["actions"] = acts
    tables["metrics_by_profile"] = mp
    tables["metrics_by_bug"] = mb
    spans = metrics.latency_spans({"election": el, "commit": cl})
    tables["election_latency_hist"] = _write_small(
        metrics.latency_histogram(el, span=spans["election"]), tmp / "election_latency_hist")
    tables["commit_latency_hist"] = _write_small(
        metrics.latency_histogram(cl, span=spans["commit"]), tmp / "commit_latency_hist")
    say("  reassignment metrics")
    # KIP-642 reassignment metrics (spark_trace_analysis/reassign_metrics.py; empty without
    # reassign traces): time to complete a reassignment, epochs per reassignment.  With
    # adaptive execution (also for a small input): without reassign traces it skips the join
    # of no steps with every state's text, which a static plan would shuffle anyway.
    with large_input_shuffles(spark, size):
        tables["reassignment_metrics"] = _write_small(
            reassign_metrics.reassignment_metrics(steps, states), tmp / "reassignment_metrics")
    summary["reassignment_metrics"] = tables["reassignment_metrics"]
    tables["bad_rows"] = _rows(ingest.read_back(spark, tmp / "bad_rows", schemas["bad_rows"])
                               .orderBy("file", "line"), 50)
    if vfiles:
        tables["bad_rows_verdicts"] = _rows(
            ingest.read_back(spark, tmp / "bad_rows_verdicts", schemas["bad_rows_verdicts"])
            .orderBy("file", "line"), 50)
    summary["conformance"] = tables["conformance"]
    summary["metrics_by_profile"] = tables["metrics_by_profile"]
    summary["metrics_by_bug"] = tables["metrics_by_bug"]
    say("describing the run's configuration")
    summary["configuration"] = run_config.describe(
        traces, files, command, graph_src, g.bounds if g is not None else graph_bounds,
        list(vfiles) if vfiles else None)
    summary["_tables"] = tables
    return summary
