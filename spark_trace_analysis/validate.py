"""Distributed validation: every trace step looked up in the spec's state graph, inside Spark.

The lookup rule (the same as the single-process checker's full-graph mode):

  * step 0 is valid when its state is an initial state of the graph;
  * step k > 0 is valid when the graph has the edge (state k-1, action k, state k), or when the
    state did not change under an action name of the vocabulary (a stuttering step, which
    every TLA+ spec allows);
  * a trace is `valid` when every step is; `invalid` at its first failing step k (with the
    action the trace claims for it) when that step's state is in the graph; `out_of_scope` when
    that state is not in the bounded graph (it left the graph: `kraftcheck validate` re-checks
    such traces with raised bounds in TLC, which Spark cannot do) or when the trace's protocol
    is not the graph's; `malformed` when ingest found it incomplete (no header or footer, steps
    not 0..n, bad rows).

A step claiming an action outside the vocabulary (ingest keeps it, flagged `unknown_action`)
is checked like any other: no edge carries that label, so it fails, even when the state is
unchanged (a stutter must claim an action of Next or a documented environment event, as in
the checker).

`agreement` compares these verdicts with the checker's.  `lookup_verdict` is the same rule over
plain Python values, used as the reference in tests.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

__all__ = ["step_checks", "validate", "agreement", "lookup_verdict", "agreement_counts"]


def step_checks(steps: DataFrame, states: DataFrame, edges: DataFrame) -> DataFrame:
    """steps + prev_fp, ok (bool) and why (null when ok) for every step."""
    w = Window.partitionBy("trace_id").orderBy("step")
    unknown = (F.col("unknown_action") if "unknown_action" in steps.columns
               else F.lit(False)).alias("unknown_action")
    s = steps.select("trace_id", "step", "action", "fp", "protocol", "fault_profile", "bug",
                     unknown, F.lag("fp").over(w).alias("prev_fp"))
    init = states.filter(F.col("initial")).select(F.col("fp").alias("i_fp"),
                                                  F.lit(True).alias("is_init")).distinct()
    known = states.select(F.col("fp").alias("k_fp"), F.lit(True).alias("in_graph")).distinct()
    e = edges.select(F.col("src_fp").alias("e_src"), F.col("action").alias("e_act"),
                     F.col("dst_fp").alias("e_dst"), F.lit(True).alias("has_edge")).distinct()
    s = (s.join(init, s.fp == init.i_fp, "left")
         .join(known, s.fp == known.k_fp, "left")
         .join(e, (s.prev_fp == e.e_src) & (s.action == e.e_act) & (s.fp == e.e_dst), "left"))
    first = F.col("step") == 0
    ok = F.when(first, F.coalesce("is_init", F.lit(False))).otherwise(
        ((F.col("prev_fp") == F.col("fp")) & ~F.coalesce("unknown_action", F.lit(False)))
        | F.coalesce("has_edge", F.lit(False)))
    why = (F.when(ok, F.lit(None))
           .when(first, F.lit("not an initial state"))
           .when(F.col("in_graph").isNull(), F.lit("state not in the graph"))
           .when(F.col("unknown_action"),
                 F.concat(F.lit("unknown action "), F.col("action"),
                          F.lit(": no edge of the graph carries it")))
           .otherwise(F.concat(F.lit("no "), F.col("action"),
                               F.lit(" edge from the previous state"))))
    return s.select("trace_id", "step", "action", "fp", "prev_fp", "protocol", "fault_profile",
                    "bug", ok.alias("ok"), why.alias("why"),
                    F.coalesce("in_graph", F.lit(False)).alias("in_graph"))


def validate(traces: DataFrame, steps: DataFrame, states: DataFrame, edges: DataFrame,
             graph_protocol: str | None) -> DataFrame:
    """One verdict per trace: trace_id, verdict, failing_step, claimed_action, detail,
    left_graph_at_step (the first step that is not a transition of the bounded graph: set for
    `invalid` traces and for traces out of scope because they left the graph; it is the step
    at which the single-process checker answers `recheck`)."""
    checks = step_checks(steps, states, edges)
    fail = (checks.filter(~F.col("ok")).groupBy("trace_id")
            .agg(F.min(F.struct("step", "action", "why", "in_graph")).alias("f")))
    t = traces.select("trace_id", "protocol", "complete", "problems").join(fail, "trace_id", "left")
    out_of_scope = (F.lit(False) if graph_protocol is None
                    else F.col("protocol") != F.lit(graph_protocol))
    verdict = (F.when(~F.col("complete"), "malformed")
               .when(out_of_scope, "out_of_scope")
               .when(F.col("f").isNull(), "valid")
               .when(F.col("f.in_graph"), "invalid")
               .otherwise("out_of_scope"))
    t = t.withColumn("verdict", verdict)
    inv = F.col("verdict") == "invalid"
    detail = (F.when(F.col("verdict") == "malformed", F.array_join("problems", "; "))
              .when(out_of_scope,
                    F.concat(F.lit("protocol "), F.col("protocol"), F.lit(" is not the graph's "),
                             F.lit(str(graph_protocol))))
              .when(inv, F.col("f.why"))
              .when(F.col("verdict") == "out_of_scope",
                    F.concat(F.lit("left the bounded graph at step "),
                             F.col("f.step").cast("string"))))
    left = inv | ((F.col("verdict") == "out_of_scope") & ~out_of_scope & F.col("f").isNotNull())
    return t.select("trace_id", "verdict",
                    F.when(inv, F.col("f.step")).alias("failing_step"),
                    F.when(inv, F.col("f.action")).alias("claimed_action"),
                    detail.alias("detail"),
                    F.when(left, F.col("f.step")).alias("left_graph_at_step"))


def agreement(checker: DataFrame, dist: DataFrame) -> DataFrame:
    """Every trace on either side, compared: a full outer join of the checker's verdicts
    (trace_id, file, verdict, failing_step, claimed_action; trace_id may be null for a verdict
    matched to no trace of the corpus) with the distributed ones on trace_id.

    Columns: trace_id, file, side ("both", "checker_only", "spark_only"), checker_* and spark_*
    verdict / step / action, and `agree`: on both sides with the same verdict, failing step and
    claimed action.  A trace present on one side only never agrees."""
    c = checker.select("trace_id", "file", F.col("verdict").alias("checker_verdict"),
                       F.col("failing_step").alias("checker_step"),
                       F.col("claimed_action").alias("checker_action"),
                       F.lit(True).alias("_c"))
    d = dist.select("trace_id", F.col("verdict").alias("spark_verdict"),
                    F.col("failing_step").alias("spark_step"),
                    F.col("claimed_action").alias("spark_action"), F.lit(True).alias("_d"))
    j = c.join(d, "trace_id", "full")
    both = F.col("_c").isNotNull() & F.col("_d").isNotNull()
    same = (both & (F.col("checker_verdict") == F.col("spark_verdict"))
            & F.col("checker_step").eqNullSafe(F.col("spark_step"))
            & F.col("checker_action").eqNullSafe(F.col("spark_action")))
    side = (F.when(both, "both").when(F.col("_c").isNotNull(), "checker_only")
            .otherwise("spark_only"))
    return j.select("trace_id", "file", side.alias("side"), "checker_verdict", "spark_verdict",
                    "checker_step", "spark_step", "checker_action", "spark_action",
                    F.coalesce(same, F.lit(False)).alias("agree"))



def agreement_counts(a: DataFrame) -> dict[str, int]:
    """The summary of an `agreement` table, in one pass: compared, agree, disagree,
    checker_only, spark_only, and judged_in_graph / agree_in_graph: the traces on both sides
    whose distributed verdict is not out of scope (valid or invalid by the graph, or
    malformed), which must all agree."""
    side, agree = F.col("side"), F.col("agree")
    inside = (side == "both") & (F.col("spark_verdict") != "out_of_scope")
    conds = {"agree": agree, "checker_only": side == "checker_only",
             "spark_only": side == "spark_only", "judged_in_graph": inside,
             "agree_in_graph": inside & agree}
    row = a.agg(F.count(F.lit(1)).alias("compared"),
                *[F.sum(c.cast("int")).alias(k) for k, c in conds.items()]).first()
    n = {k: int(row[k] or 0) for k in ("compared", *conds)}
    return n | {"disagree": n["compared"] - n["agree"]}

def lookup_verdict(steps: Iterable[tuple[int, str, str]], states: set[str], initial: set[str],
                   edges: set[tuple[str, str, str]], known: frozenset[str] | None = None
                   ) -> tuple[str, int | None, str | None]:
    """The rule over one complete trace's (step, action, fp) in order: ("valid", None, None),
    ("invalid", k, claimed action) or ("out_of_scope", k, claimed action) when step k's state
    is not in the graph.  `known`: the action vocabulary (None: every name is known)."""
    prev = None
    for k, action, fp in steps:
        stutter = fp == prev and (known is None or action in known)
        ok = (fp in initial) if k == 0 else (stutter or (prev, action, fp) in edges)
        if not ok:
            return ("invalid" if fp in states else "out_of_scope"), k, action
        prev = fp
    return "valid", None, None
