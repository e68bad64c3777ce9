"""Conformance statistics: traces and steps valid / invalid / out of scope / malformed by
protocol, implementation (refimpl, kafka), fault profile and planted bug; the distribution of the first failing step; per-action
counts.

Step classes: in a valid trace every step is `valid`; in an invalid trace the steps before the
failing one are `valid`, the failing step is `invalid` and the rest `unchecked`; every step of an
out-of-scope trace is `out_of_scope` and of a malformed trace `malformed`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["conformance_table", "first_failure_table", "action_table", "NO_BUG"]

NO_BUG = "none"
VERDICTS = ("valid", "invalid", "out_of_scope", "malformed", "unchecked")


def _joined(traces: DataFrame, verdicts: DataFrame) -> DataFrame:
    return (traces.select("trace_id", "protocol", "impl", "fault_profile",
                          F.coalesce("bug", F.lit(NO_BUG)).alias("bug"), "n_steps")
            .join(verdicts.select("trace_id", "verdict", "failing_step", "claimed_action"),
                  "trace_id", "left")
            .withColumn("verdict", F.coalesce("verdict", F.lit("unchecked"))))


def conformance_table(traces: DataFrame, verdicts: DataFrame) -> DataFrame:
    t = _joined(traces, verdicts)
    n = F.col("n_steps")
    inv = F.col("verdict") == "invalid"
    t = t.select(
        "protocol", "impl", "fault_profile", "bug", "verdict",
        F.when(F.col("verdict") == "valid", n).when(inv, F.col("failing_step")).otherwise(0)
        .alias("steps_valid"),
        F.when(inv, 1).otherwise(0).alias("steps_invalid"),
        F.when(inv, n - F.col("failing_step") - 1).when(F.col("verdict") == "unchecked", n)
        .otherwise(0).alias("steps_unchecked"),
        F.when(F.col("verdict") == "out_of_scope", n).otherwise(0).alias("steps_out_of_scope"),
        F.when(F.col("verdict") == "malformed", n).otherwise(0).alias("steps_malformed"))
    aggs = [F.count(F.lit(1)).alias("traces")]
    aggs += [F.sum(F.when(F.col("verdict") == v, 1).otherwise(0)).alias(f"traces_{v}")
             for v in VERDICTS]
    aggs += [F.sum(c).alias(c) for c in ("steps_valid", "steps_invalid", "steps_unchecked",
                                         "steps_out_of_scope", "steps_malformed")]
    return (t.groupBy("protocol", "impl", "fault_profile", "bug").agg(*aggs)
            .orderBy("protocol", "impl", "fault_profile", "bug"))


def first_failure_table(traces: DataFrame, verdicts: DataFrame) -> DataFrame:
    """protocol, impl, fault_profile, bug, failing_step, claimed_action, traces."""
    by = ("protocol", "impl", "fault_profile", "bug", "failing_step", "claimed_action")
    return (_joined(traces, verdicts).filter(F.col("verdict") == "invalid")
            .groupBy(*by).agg(F.count(F.lit(1)).alias("traces")).orderBy(*by))


def action_table(steps: DataFrame, verdicts: DataFrame) -> DataFrame:
    """protocol, action, steps, traces, failures (invalid traces whose failing step claims it)."""
    per = (steps.groupBy("protocol", "action")
           .agg(F.count(F.lit(1)).alias("steps"), F.countDistinct("trace_id").alias("traces")))
    fails = (verdicts.filter(F.col("verdict") == "invalid")
             .join(steps.select("trace_id", "protocol").distinct(), "trace_id")
             .groupBy("protocol", F.col("claimed_action").alias("action"))
             .agg(F.count(F.lit(1)).alias("failures")))
    return (per.join(fails, ["protocol", "action"], "full")
            .select("protocol", "action", F.coalesce("steps", F.lit(0)).alias("steps"),
                    F.coalesce("traces", F.lit(0)).alias("traces"),
                    F.coalesce("failures", F.lit(0)).alias("failures"))
            .orderBy("protocol", F.desc("steps"), "action"))
