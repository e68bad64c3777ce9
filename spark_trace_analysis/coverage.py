"""Coverage of the spec by a corpus: the distinct spec states, edges and actions the traces
visit, as a share of the full TLC state graph of the matching bounded config; the actions never
exercised and a sample of the states never visited.

Only steps of the graph's protocol count, and only of traces made under the graph's bounds.
Each trace's bounds (the `file` of its header's `bounds`) is compared with the graph's config
(`graph_bounds`: the manifest config of --graph, or --graph-bounds): `same`, `different`,
`unstated` (the header has none) or `graph_unknown` (the graph's config is not known).  Traces
with `different` bounds are left out of the coverage and listed (`coverage_traces`, the summary's
`traces_other_bounds`, the report); all others count, and the summary says how many of them
stated no bounds or could not be compared.  Paths are compared after resolving relative ones
against the repository root (the files need not exist).

A visited edge is a step (state k-1, action k, state k) that is an edge of the graph; trace
states outside the graph are counted apart (`trace_states_outside`), they cover nothing.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kraftcore.paths import REPO_ROOT
from spark_trace_analysis.frames import local_frame

__all__ = ["coverage", "bounds_file", "bounds_key", "bounds_match"]


def bounds_file(raw: str | None) -> str | None:
    """The config file a header's `bounds` names: the field is null, a path, or an object
    {"file": path, "constants": {...}} (kept by ingest as its JSON text)."""
    if raw is None or not raw.strip() or raw.strip() == "null":
        return None
    text = raw.strip()
    if text.startswith("{"):
        try:
            f = json.loads(text).get("file")
        except (ValueError, AttributeError):
            return text
        return f if isinstance(f, str) and f else None
    return text


def bounds_key(path: str) -> str:
    """A comparable form of a config path: relative paths are taken from the repository root."""
    p = Path(path)
    return os.path.normpath(str(p if p.is_absolute() else REPO_ROOT / p))


def bounds_match(trace_bounds: str | None, graph_bounds: str | None) -> str:
    if graph_bounds is None:
        return "graph_unknown"
    if trace_bounds is None:
        return "unstated"
    return "same" if bounds_key(trace_bounds) == bounds_key(graph_bounds) else "different"


def _trace_bounds(traces: DataFrame, graph_protocol: str | None,
                  graph_bounds: str | None) -> tuple[DataFrame, dict[str, int]]:
    """(trace_id, bounds (the config file its header names), bounds_match, in_coverage) of
    every trace, and the traces counted by bounds_match (from the same one query)."""
    t = traces
    if graph_protocol is not None:
        t = t.filter(F.col("protocol") == graph_protocol)
    spark = traces.sparkSession
    rows, counts = [], {}
    for r in t.groupBy("bounds").count().collect():
        f = bounds_file(r.bounds)
        m = bounds_match(f, graph_bounds)
        rows.append((r.bounds, f, m, m != "different"))
        counts[m] = counts.get(m, 0) + r["count"]
    table = local_frame(
        spark, rows, "raw string, bounds string, bounds_match string, in_coverage boolean")
    left = t.select("trace_id", F.col("bounds").alias("t_raw"))
    return (left.join(F.broadcast(table), left.t_raw.eqNullSafe(table.raw), "left")
            .select("trace_id", "bounds", "bounds_match", "in_coverage")), counts


def coverage(steps: DataFrame, states: DataFrame, edges: DataFrame, graph_name: str,
             graph_protocol: str | None, sample: int = 20, traces: DataFrame | None = None,
             graph_bounds: str | None = None) -> dict[str, DataFrame]:
    """coverage_summary, coverage_actions, unvisited_states and (with `traces`)
    coverage_traces: every trace of the graph's protocol, its bounds and whether it counts,
    and coverage_by_impl: the share of the graph each implementation's traces visit."""
    if graph_protocol is not None:
        steps = steps.filter(F.col("protocol") == graph_protocol)
    per_trace = None
    n_traces = n_in = n_other = n_unstated = n_unknown = None
    if traces is not None:
        per_trace, counts = _trace_bounds(traces, graph_protocol, graph_bounds)
        per_trace = per_trace.cache()
        n_traces = sum(counts.values())
        n_other = counts.get("different", 0)
        n_in = n_traces - n_other
        n_unstated = counts.get("unstated", 0)
        n_unknown = counts.get("graph_unknown", 0)
        steps = steps.join(per_trace.filter(F.col("in_coverage")).select("trace_id"),
                           "trace_id", "left_semi")
    # ONE pass of the window over the steps: the distinct moves (implementation, previous
    # state, action, state; the first step's previous state is null), cached; the visited
    # states and edges, overall and per implementation, and every count below come from them
    # (a row per distinct transition, not per step) instead of a window pass each.
    w = Window.partitionBy("trace_id").orderBy("step")
    if traces is not None:
        # left: a step whose trace has no `traces` row still counts overall (impl null)
        s = steps.join(F.broadcast(traces.select("trace_id", "impl")), "trace_id", "left")
    else:
        s = steps.withColumn("impl", F.lit(None).cast("string"))
    moves = (s.select("impl", "action", "fp", F.lag("fp").over(w).alias("prev_fp"))
             .distinct().cache())
    trace_states = moves.select("fp").distinct().cache()
    g_states = states.select("fp", "initial", "label")
    visited_states = trace_states.join(g_states.select("fp"), "fp")
    trace_edges = (moves.filter(F.col("prev_fp").isNotNull())
                   .select(F.col("prev_fp").alias("src_fp"), "action",
                           F.col("fp").alias("dst_fp")).distinct())
    g_edges = edges.select("src_fp", "action", "dst_fp").distinct().cache()
    visited_edges = trace_edges.join(g_edges, ["src_fp", "action", "dst_fp"]).cache()

    per_action = (g_edges.groupBy("action").agg(F.count(F.lit(1)).alias("edges"))
                  .join(visited_edges.groupBy("action")
                        .agg(F.count(F.lit(1)).alias("edges_visited")), "action", "left")
                  .join(steps.groupBy("action").agg(F.count(F.lit(1)).alias("steps")),
                        "action", "full")
                  .select("action", F.coalesce("edges", F.lit(0)).alias("edges"),
                          F.coalesce("edges_visited", F.lit(0)).alias("edges_visited"),
                          F.coalesce("steps", F.lit(0)).alias("steps"))
                  .withColumn("edge_share", F.when(F.col("edges") > 0,
                                                   F.col("edges_visited") / F.col("edges")))
                  .withColumn("in_graph", F.col("edges") > 0)
                  .orderBy("action"))
    per_action = per_action.cache()
    # the five counts in ONE aggregate (one query instead of five: issue 34's fixed cost)
    counted = {"states": g_states, "edges": g_edges, "visited_states": visited_states,
               "visited_edges": visited_edges, "trace_states": trace_states}
    union = functools.reduce(DataFrame.unionAll, [df.select(F.lit(k).alias("k"))
                                                   for k, df in counted.items()])
    n = {k: 0 for k in counted}
    n.update({r.k: r["n"] for r in union.groupBy("k").agg(F.count(F.lit(1)).alias("n"))
              .collect()})
    n_states, n_edges = n["states"], n["edges"]
    n_vs, n_ve, n_ts = n["visited_states"], n["visited_edges"], n["trace_states"]
    # one row per action: counted in the driver from one collect
    acts = per_action.select("in_graph", "edges_visited").collect()
    n_actions = sum(1 for r in acts if r.in_graph)
    n_actions_visited = sum(1 for r in acts if r.in_graph and r.edges_visited > 0)
    spark = steps.sparkSession
    summary = local_frame(spark, [(
        graph_name, graph_protocol, n_states, n_vs, n_vs / n_states if n_states else None,
        n_edges, n_ve, n_ve / n_edges if n_edges else None, n_actions, n_actions_visited,
        n_actions_visited / n_actions if n_actions else None, n_ts - n_vs, graph_bounds,
        n_traces, n_in, n_other, n_unstated, n_unknown)],
        "graph string, protocol string, states long, states_visited long, state_share double, "
        "edges long, edges_visited long, edge_share double, actions long, "
        "actions_visited long, action_share double, trace_states_outside long, "
        "graph_bounds string, traces long, traces_in_coverage long, traces_other_bounds long, "
        "traces_bounds_unstated long, traces_bounds_unchecked long")
    unvisited = (g_states.join(trace_states, "fp", "left_anti")
                 .orderBy(F.desc("initial"), "fp").limit(sample))
    out = {"coverage_summary": summary, "coverage_actions": per_action,
           "unvisited_states": unvisited}
    if per_trace is not None:
        out["coverage_traces"] = per_trace.orderBy("trace_id")
        out["coverage_by_impl"] = _by_impl(moves, steps, traces, g_states, g_edges, n_states,
                                           n_edges)
    return out


def _by_impl(moves: DataFrame, steps: DataFrame, traces: DataFrame, g_states: DataFrame,
             g_edges: DataFrame, n_states: int, n_edges: int) -> DataFrame:
    """The coverage of each implementation's traces (refimpl, kafka: the `traces` table's
    `impl`): impl, traces, states_visited, state_share, edges_visited, edge_share.  `moves`:
    coverage's distinct (impl, action, fp, prev_fp) of the steps; only the steps of a trace
    in `traces` (impl not null) count here."""
    s = moves.filter(F.col("impl").isNotNull())
    vs = (s.select("impl", "fp").distinct().join(g_states.select("fp"), "fp")
          .groupBy("impl").agg(F.count(F.lit(1)).alias("states_visited")))
    ve = (s.filter(F.col("prev_fp").isNotNull())
          .select("impl", F.col("prev_fp").alias("src_fp"), "action", F.col("fp").alias("dst_fp"))
          .distinct().join(g_edges, ["src_fp", "action", "dst_fp"])
          .groupBy("impl").agg(F.count(F.lit(1)).alias("edges_visited")))
    n = s.select("impl").distinct()
    t = (steps.select("trace_id").distinct()
         .join(F.broadcast(traces.select("trace_id", "impl")), "trace_id")
         .groupBy("impl").agg(F.count(F.lit(1)).alias("traces")))
    visited = lambda c: F.coalesce(F.col(c), F.lit(0)).cast("long")  # noqa: E731
    return (n.join(t, "impl", "left").join(vs, "impl", "left").join(ve, "impl", "left")
            .select("impl", visited("traces").alias("traces"),
                    visited("states_visited").alias("states_visited"),
                    (visited("states_visited") / F.lit(n_states) if n_states
                     else F.lit(None).cast("double")).alias("state_share"),
                    visited("edges_visited").alias("edges_visited"),
                    (visited("edges_visited") / F.lit(n_edges) if n_edges
                     else F.lit(None).cast("double")).alias("edge_share"))
            .orderBy("impl"))
