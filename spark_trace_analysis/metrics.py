"""Protocol metrics by fault profile, derived from the observation columns of `steps`
(observe.py) with window functions over each trace in step order.  docs/spark-stats.md defines
each metric; in short (times are virtual ms):

  election          a step whose leader is set and differs (node or epoch) from the previous step's
  election latency  election time minus the time the preceding leaderless run began (trace start
                    if the trace began leaderless); 0 when leadership passes without a gap
  leaderless time   the sum of the durations (to the next step) of steps without a leader
  commit latency    for each log offset o: the first time the highest HWM reaches o minus the
                    first time the longest log reaches o
  truncation        a node whose log is shorter than in the previous step; depth = records removed
  HWM lag           the leader's log end minus its HWM, time-weighted over steps with a leader
  unclean recovery  (ELR) an election of a leader that was in neither the ISR nor the ELR before
  data-loss event   a step that removes a record below a node's previous HWM, or (ELR) raises the
                    number of acknowledged records missing from the leader's log
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_trace_analysis.fields import HIST_BINS, hist_grid

__all__ = ["per_step", "trace_metrics", "election_latencies", "commit_latencies",
           "metrics_by_profile", "metrics_by_bug", "latency_histogram", "PER_STEP_TABLES",
           "register_per_step_table"]

KEYS = ("trace_id", "protocol", "fault_profile", "bug", "bounds_config")


_PER_STEP_COLUMNS = (
    "prev_leader", "prev_epoch", "prev_lens", "prev_hwms", "prev_eligible", "prev_lost", "dt",
    "lost_start", "lost_at", "election", "election_latency", "truncated_nodes",
    "truncation_depth", "max_truncation", "data_loss", "unclean", "max_len", "run_len",
    "run_hwm", "prev_run_len", "prev_run_hwm")


def per_step(steps: DataFrame) -> DataFrame:
    """The steps' observations with the previous step's and the running values over each
    trace in step order: one sort of the steps by (trace_id, step) and two window operators
    (every lag, lead and running maximum in the first; `lost_at`, which needs `prev_leader`,
    in the second)."""
    w = Window.partitionBy("trace_id").orderBy("step")
    upto = w.rowsBetween(Window.unboundedPreceding, 0)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    s = steps.filter(F.col("obs").isNotNull()).select(
        "trace_id", "protocol", "fault_profile", F.coalesce("bug", F.lit("none")).alias("bug"),
        "bounds_config", "step", "time_ms", "action", "obs.*")
    base = s.columns
    s = s.withColumn("max_len", F.expr(
        "aggregate(map_values(log_lens), 0L, (a, x) -> greatest(a, x))"))
    # first-reach times of log offsets (commit latency): the running maxima of the longest
    # log and the highest HWM, and their values up to the previous step
    s = s.select(
        "*",
        F.lag("leader").over(w).alias("prev_leader"),
        F.lag("epoch").over(w).alias("prev_epoch"),
        F.lag("log_lens").over(w).alias("prev_lens"),
        F.lag("hwms").over(w).alias("prev_hwms"),
        F.lag("eligible").over(w).alias("prev_eligible"),
        F.lag("lost_acked").over(w).alias("prev_lost"),
        F.coalesce(F.lead("time_ms").over(w) - F.col("time_ms"), F.lit(0)).alias("dt"),
        F.max("max_len").over(upto).alias("run_len"),
        F.max("hwm_max").over(upto).alias("run_hwm"),
        F.coalesce(F.max("max_len").over(before), F.lit(0)).alias("prev_run_len"),
        F.coalesce(F.max("hwm_max").over(before), F.lit(0)).alias("prev_run_hwm"))
    s = s.withColumn("lost_start", F.col("leader").isNull()
                     & (F.col("prev_leader").isNotNull() | (F.col("step") == 0)))
    s = s.withColumn("lost_at", F.last(F.when(F.col("lost_start"), F.col("time_ms")),
                                       ignorenulls=True).over(upto))
    election = F.col("leader").isNotNull() & (
        F.col("prev_leader").isNull() | (F.col("leader") != F.col("prev_leader"))
        | (F.col("epoch") != F.col("prev_epoch")))
    s = s.withColumn("election", F.coalesce(election, F.lit(False)))
    s = s.withColumn("election_latency", F.when(
        F.col("election"), F.when(F.col("prev_leader").isNull() & F.col("lost_at").isNotNull(),
                                  F.col("time_ms") - F.col("lost_at")).otherwise(0)))
    s = s.withColumn("truncated_nodes", F.coalesce(F.expr(
        "size(filter(map_keys(prev_lens), k -> coalesce(log_lens[k], 0L) < prev_lens[k]))"),
        F.lit(0)))
    s = s.withColumn("truncation_depth", F.coalesce(F.expr(
        "aggregate(map_keys(prev_lens), 0L, "
        "(acc, k) -> acc + greatest(prev_lens[k] - coalesce(log_lens[k], 0L), 0L))"), F.lit(0)))
    s = s.withColumn("max_truncation", F.coalesce(F.expr(
        "aggregate(map_keys(prev_lens), 0L, "
        "(acc, k) -> greatest(acc, prev_lens[k] - coalesce(log_lens[k], 0L)))"), F.lit(0)))
    below_hwm = F.expr("size(filter(map_keys(prev_lens), "
                       "k -> coalesce(log_lens[k], 0L) < coalesce(prev_hwms[k], 0L))) > 0")
    lost_more = F.col("lost_acked") > F.coalesce(F.col("prev_lost"), F.lit(0))
    s = s.withColumn("data_loss", F.coalesce(below_hwm, F.lit(False))
                     | F.coalesce(lost_more, F.lit(False)))
    s = s.withColumn("unclean", F.col("election") & F.col("prev_eligible").isNotNull()
                     & ~F.coalesce(F.expr("array_contains(prev_eligible, leader)"), F.lit(False)))
    return s.select(*base, *_PER_STEP_COLUMNS)


def trace_metrics(ps: DataFrame) -> DataFrame:
    i = lambda c: F.sum(F.col(c).cast("long"))  # noqa: E731
    with_leader = F.col("leader").isNotNull()
    return (ps.groupBy(*KEYS).agg(
        (F.max("time_ms") - F.min("time_ms")).alias("duration_ms"),
        i("election").alias("elections"),
        F.sum(F.when(~with_leader, F.col("dt")).otherwise(0)).alias("leaderless_ms"),
        F.sum("truncated_nodes").alias("truncations"),
        F.sum("truncation_depth").alias("truncated_records"),
        F.max("max_truncation").alias("max_truncation_depth"),
        i("data_loss").alias("data_loss_events"),
        i("unclean").alias("unclean_recoveries"),
        # null when no step with a leader lasted (ANSI SQL would fail on 0 / 0)
        F.try_divide(F.sum(F.when(F.col("hwm_lag").isNotNull(), F.col("hwm_lag") * F.col("dt"))),
                     F.sum(F.when(F.col("hwm_lag").isNotNull(), F.col("dt")))
                     .cast("double")).alias("hwm_lag_avg"),
        F.max("hwm_lag").alias("hwm_lag_max"))
        .withColumn("leaderless_share", F.when(F.col("duration_ms") > 0,
                                               F.col("leaderless_ms") / F.col("duration_ms"))))


def election_latencies(ps: DataFrame) -> DataFrame:
    return (ps.filter(F.col("election"))
            .select(*KEYS, "step", "time_ms", "leader", "epoch",
                    F.col("election_latency").alias("latency_ms")))


def _first_reach(ps: DataFrame, run: str, prev: str, name: str) -> DataFrame:
    """(keys, offset, time): the first time the running maximum `run` reached each offset."""
    return (ps.filter(F.col(run) > F.col(prev))
            .select(*KEYS, F.explode(F.sequence(F.col(prev) + 1, F.col(run))).alias("offset"),
                    F.col("time_ms").alias(name)))


def commit_latencies(ps: DataFrame) -> DataFrame:
    appended = _first_reach(ps, "run_len", "prev_run_len", "appended_ms")
    committed = _first_reach(ps, "run_hwm", "prev_run_hwm", "committed_ms")
    return (appended.join(committed.select("trace_id", "offset", "committed_ms"),
                          ["trace_id", "offset"])
            .withColumn("latency_ms", F.col("committed_ms") - F.col("appended_ms")))


# The tables computed from the per-step observations (`per_step`, materialised once): name ->
# function of the per-step DataFrame.  Each is written as out/<name>/, partitioned by protocol
# and bounds config, and read back for the summaries.  A further metric (one row per trace or
# per event) plugs in with register_per_step_table; its rows must carry the KEYS columns.
PER_STEP_TABLES: dict[str, Callable[[DataFrame], DataFrame]] = {
    "metrics": trace_metrics,
    "election_latency": election_latencies,
    "commit_latency": commit_latencies,
}


def register_per_step_table(name: str, fn: Callable[[DataFrame], DataFrame]) -> None:
    """Add a table computed from the per-step observations (see PER_STEP_TABLES)."""
    if name in PER_STEP_TABLES:
        raise ValueError(f"a per-step table named {name} is already registered")
    PER_STEP_TABLES[name] = fn


def metrics_by_profile(tm: DataFrame, el: DataFrame, cl: DataFrame,
                       by: tuple[str, ...] = ("protocol", "fault_profile")) -> DataFrame:
    """The protocol metrics per group: by protocol and fault profile (the default), or by
    other columns of the trace metrics (metrics_by_bug)."""
    g = by
    a = tm.groupBy(*g).agg(
        F.count(F.lit(1)).alias("traces"),
        F.avg("elections").alias("elections_per_trace"),
        F.avg("leaderless_share").alias("leaderless_share_avg"),
        F.sum("leaderless_ms").alias("leaderless_ms"),
        F.avg("truncations").alias("truncations_per_trace"),
        F.max("max_truncation_depth").alias("max_truncation_depth"),
        F.avg("hwm_lag_avg").alias("hwm_lag_avg"),
        F.max("hwm_lag_max").alias("hwm_lag_max"),
        F.sum("unclean_recoveries").alias("unclean_recoveries"),
        F.sum("data_loss_events").alias("data_loss_events"))
    b = el.groupBy(*g).agg(
        F.count(F.lit(1)).alias("elections"),
        F.percentile_approx("latency_ms", 0.5).alias("election_latency_p50"),
        F.percentile_approx("latency_ms", 0.95).alias("election_latency_p95"),
        F.max("latency_ms").alias("election_latency_max"))
    c = cl.groupBy(*g).agg(
        F.count(F.lit(1)).alias("committed_offsets"),
        F.percentile_approx("latency_ms", 0.5).alias("commit_latency_p50"),
        F.percentile_approx("latency_ms", 0.95).alias("commit_latency_p95"),
        F.max("latency_ms").alias("commit_latency_max"))
    return a.join(b, list(g), "left").join(c, list(g), "left").orderBy(*g)


def metrics_by_bug(tm: DataFrame, el: DataFrame, cl: DataFrame) -> DataFrame:
    """metrics_by_profile grouped by protocol, fault profile and planted bug (`none`: no bug
    planted), so that a bug's runs compare with bug-free runs under the same faults."""
    return metrics_by_profile(tm, el, cl, by=("protocol", "fault_profile", "bug"))


HIST_SCHEMA = ("protocol string, fault_profile string, bin long, lo long, hi long, "
               "count long")


def latency_histogram(lat: DataFrame, bins: int = HIST_BINS) -> DataFrame:
    """The report's histogram of a latency table (election_latency or commit_latency): per
    protocol and fault profile, how many latencies fall in each of at most `bins` bins of one
    integer width over the whole table (fields.hist_grid; empty bins have no row).  Its size is
    bounded by groups x bins, so the driver never collects the latencies themselves."""
    r = lat.agg(F.min("latency_ms").alias("lo"), F.max("latency_ms").alias("hi")).first()
    if r.lo is None:
        return lat.sparkSession.createDataFrame([], HIST_SCHEMA)
    origin, width = hist_grid(r.lo, r.hi, bins)
    b = F.expr(f"(latency_ms - ({origin})) div {width}")  # integer division; never negative
    return (lat.groupBy("protocol", "fault_profile", b.alias("bin"))
            .agg(F.count(F.lit(1)).alias("count"))
            .select("protocol", "fault_profile", "bin",
                    (F.col("bin") * width + origin).alias("lo"),
                    ((F.col("bin") + 1) * width + origin).alias("hi"), "count")
            .orderBy("protocol", "fault_profile", "bin"))
