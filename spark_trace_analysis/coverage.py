"""Coverage of the spec by a corpus: the distinct spec states, edges and actions the traces
visit, as a share of the full TLC state graph of the matching bounded config; the actions never
exercised and a sample of the states never visited.

Only steps of the graph's protocol count.  A visited edge is a step (state k-1, action k,
state k) that is an edge of the graph; trace states outside the graph are counted apart
(`trace_states_outside`), they cover nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

__all__ = ["coverage"]


def coverage(steps: DataFrame, states: DataFrame, edges: DataFrame, graph_name: str,
             graph_protocol: str | None, sample: int = 20) -> dict[str, DataFrame]:
    if graph_protocol is not None:
        steps = steps.filter(F.col("protocol") == graph_protocol)
    w = Window.partitionBy("trace_id").orderBy("step")
    s = steps.select("action", "fp", F.lag("fp").over(w).alias("prev_fp"))
    trace_states = s.select("fp").distinct()
    g_states = states.select("fp", "initial", "label")
    visited_states = trace_states.join(g_states.select("fp"), "fp")
    trace_edges = (s.filter(F.col("prev_fp").isNotNull())
                   .select(F.col("prev_fp").alias("src_fp"), "action",
                           F.col("fp").alias("dst_fp")).distinct())
    g_edges = edges.select("src_fp", "action", "dst_fp").distinct()
    visited_edges = trace_edges.join(g_edges, ["src_fp", "action", "dst_fp"])

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
    n_states = g_states.count()
    n_edges = g_edges.count()
    n_vs = visited_states.count()
    n_ve = visited_edges.count()
    n_ts = trace_states.count()
    graph_actions = per_action.filter(F.col("in_graph"))
    n_actions = graph_actions.count()
    n_actions_visited = graph_actions.filter(F.col("edges_visited") > 0).count()
    spark = steps.sparkSession
    summary = spark.createDataFrame([(
        graph_name, graph_protocol, n_states, n_vs, n_vs / n_states if n_states else None,
        n_edges, n_ve, n_ve / n_edges if n_edges else None, n_actions, n_actions_visited,
        n_actions_visited / n_actions if n_actions else None, n_ts - n_vs)],
        "graph string, protocol string, states long, states_visited long, state_share double, "
        "edges long, edges_visited long, edge_share double, actions long, "
        "actions_visited long, action_share double, trace_states_outside long")
    unvisited = (g_states.join(trace_states, "fp", "left_anti")
                 .orderBy(F.desc("initial"), "fp").limit(sample))
    return {"coverage_summary": summary, "coverage_actions": per_action,
            "unvisited_states": unvisited}
