"""Protocol metrics by fault profile, derived from the observations of each step's state (the
`states` table, observe.py) with window functions over each trace in step order.  docs/spark-stats.md defines
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

import functools
from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_trace_analysis.fields import HIST_BINS, hist_grid
from spark_trace_analysis.frames import local_frame

__all__ = ["per_step", "trace_metrics", "election_latencies", "commit_latencies",
           "metrics_by_profile", "metrics_by_bug", "latency_histogram", "latency_spans",
           "PER_STEP_TABLES", "register_per_step_table", "state_scalars", "step_window",
           "pair_values", "trace_keys"]

KEYS = ("trace_id", "protocol", "impl", "fault_profile", "bug", "bounds_config")
STATE_KEY = ("sk1", "sk2")          # ingest.STATE_KEY: a step's row in `states`
PREV_KEY = ("prev_sk1", "prev_sk2")

# What step_window keeps of each observed step (written once, then read by every per-step
# table): the trace and step, the state's key and the previous step's, the scalar
# observations the tables read, and what the window derives.  The trace's other keys
# (protocol, fault profile, bug, bounds config) are constant over a trace: per_step joins them
# back from `traces` instead of carrying them through the sort.
_WINDOW_COLUMNS = (
    "trace_id", "step", "time_ms", "sk1", "sk2", "prev_sk1", "prev_sk2", "leader", "epoch",
    "hwm_lag", "lost_acked", "dt", "election", "election_latency", "run_len", "run_hwm",
    "prev_run_len", "prev_run_hwm")


def state_scalars(states: DataFrame) -> DataFrame:
    """(sk1, sk2, leader, epoch, hwm_max, hwm_min, hwm_lag, lost_acked, max_len) of every
    observed state of the `states` table: the fixed-width part of its observation, the only
    part that travels with each step (the maps stay in `states`, see pair_values)."""
    return (states.filter(F.col("obs").isNotNull())
            .select(*STATE_KEY, "obs.leader", "obs.epoch", "obs.hwm_max", "obs.hwm_min",
                    "obs.hwm_lag", "obs.lost_acked",
                    F.expr("aggregate(map_values(obs.log_lens), 0L, (a, x) -> greatest(a, x))")
                    .alias("max_len")))


def step_window(steps: DataFrame, scalars: DataFrame, broadcast: bool = True) -> DataFrame:
    """The observed steps in step order over each trace, with the previous step's state key,
    leader and epoch, the step's duration and the running maxima: one sort of narrow rows
    (keys, times and the state's scalars; the state's maps are not carried) and two window
    operators (every lag, lead and running maximum in the first; `lost_at`, which needs
    `prev_leader`, in the second).  `scalars` is state_scalars(states), broadcast to the steps
    when `broadcast` (a few dozen bytes a distinct state)."""
    w = Window.partitionBy("trace_id").orderBy("step")
    upto = w.rowsBetween(Window.unboundedPreceding, 0)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    s = steps.select("trace_id", "step", "time_ms", *STATE_KEY)
    s = s.join(F.broadcast(scalars) if broadcast else scalars, list(STATE_KEY))
    s = s.select(
        "*",
        F.lag("sk1").over(w).alias("prev_sk1"),
        F.lag("sk2").over(w).alias("prev_sk2"),
        F.lag("leader").over(w).alias("prev_leader"),
        F.lag("epoch").over(w).alias("prev_epoch"),
        F.coalesce(F.lead("time_ms").over(w) - F.col("time_ms"), F.lit(0)).alias("dt"),
        # first-reach times of log offsets (commit latency): the running maxima of the
        # longest log and the highest HWM, and their values up to the previous step
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
    return s.select(*_WINDOW_COLUMNS)


def pair_values(window: DataFrame, states: DataFrame, broadcast: bool = False) -> DataFrame:
    """The comparisons of a step's state with the previous step's, once per DISTINCT pair of
    states (bounded runs repeat transitions), and only the pairs where one is not zero:
    (prev_sk1, prev_sk2, sk1, sk2, truncated_nodes, truncation_depth, max_truncation,
    data_loss, unclean_if_elected).  Over the maps of node -> log length / HWM, with
    higher-order functions (Spark interprets them row by row: the reason they run per pair and
    not per step).  The definitions are the module docstring's:
      truncated_nodes     nodes whose log is shorter than in the previous state
      truncation_depth    records removed, summed over those nodes; max_truncation their maximum
      data_loss           a node's log now shorter than its previous HWM, or (ELR) more
                          acknowledged records missing from the leader's log than before
      unclean_if_elected  (ELR) the leader was in neither the previous ISR nor the ELR"""
    obs = states.filter(F.col("obs").isNotNull()).select(*STATE_KEY, "obs")
    prev = obs.select(*[F.col(k).alias(p) for k, p in zip(STATE_KEY, PREV_KEY)],
                      F.col("obs.log_lens").alias("p_lens"), F.col("obs.hwms").alias("p_hwms"),
                      F.col("obs.eligible").alias("p_eligible"),
                      F.col("obs.lost_acked").alias("p_lost"))
    cur = obs.select(*STATE_KEY, F.col("obs.log_lens").alias("c_lens"),
                     F.col("obs.leader").alias("c_leader"),
                     F.col("obs.lost_acked").alias("c_lost"))
    if broadcast:
        prev, cur = F.broadcast(prev), F.broadcast(cur)
    pairs = (window.filter(F.col("prev_sk1").isNotNull()).select(*PREV_KEY, *STATE_KEY)
             .distinct().join(prev, list(PREV_KEY)).join(cur, list(STATE_KEY)))
    v = pairs.select(
        *PREV_KEY, *STATE_KEY,
        F.expr("size(filter(map_keys(p_lens), k -> coalesce(c_lens[k], 0L) < p_lens[k]))")
        .alias("truncated_nodes"),
        F.expr("aggregate(map_keys(p_lens), 0L, "
               "(acc, k) -> acc + greatest(p_lens[k] - coalesce(c_lens[k], 0L), 0L))")
        .alias("truncation_depth"),
        F.expr("aggregate(map_keys(p_lens), 0L, "
               "(acc, k) -> greatest(acc, p_lens[k] - coalesce(c_lens[k], 0L)))")
        .alias("max_truncation"),
        (F.coalesce(F.expr("size(filter(map_keys(p_lens), "
                           "k -> coalesce(c_lens[k], 0L) < coalesce(p_hwms[k], 0L))) > 0"),
                    F.lit(False))
         | F.coalesce(F.col("c_lost") > F.coalesce(F.col("p_lost"), F.lit(0)), F.lit(False)))
        .alias("data_loss"),
        (F.col("p_eligible").isNotNull()
         & ~F.coalesce(F.expr("array_contains(p_eligible, c_leader)"), F.lit(False)))
        .alias("unclean_if_elected"))
    return v.filter((F.col("truncated_nodes") > 0) | F.col("data_loss")
                    | F.col("unclean_if_elected"))


# Up to this many pairs of states with a non-zero comparison, they go to every task.
BROADCAST_PAIRS = 1_000_000
# Up to this many traces, their keys (KEYS) go to every task.
BROADCAST_TRACES = 1_000_000
# What one state's maps (log lengths, HWMs, eligible) take in a broadcast, as the previous and
# the current state together: a generous estimate (3-5 nodes take about 250 bytes a side).
OBS_BYTES_PER_STATE = 600


def trace_keys(traces: DataFrame) -> DataFrame:
    """KEYS of every trace (the `traces` table: protocol, implementation, fault profile, bug
    or `none`, bounds config), one row each."""
    return traces.select("trace_id", "protocol", "impl", "fault_profile",
                         F.coalesce("bug", F.lit("none")).alias("bug"), "bounds_config")


def per_step(window: DataFrame, pairs: DataFrame, keys: DataFrame,
             broadcast: bool = True, broadcast_keys: bool = True) -> DataFrame:
    """The per-step frame every per-step table reads: step_window's rows with their trace's
    KEYS (trace_keys, one row a trace, broadcast when `broadcast_keys`) and the pair
    comparisons (pair_values, broadcast when `broadcast`; a pair not in it compares as zero).  A trace's first observed
    step has no previous state: no truncation, and data loss when its state already misses
    acknowledged records.  Columns: KEYS, step, time_ms, sk1, sk2 (the state's row in
    `states`; the rest of its observation is there), leader, epoch, hwm_lag, dt, election,
    election_latency, truncated_nodes, truncation_depth, max_truncation, data_loss, unclean,
    run_len, run_hwm, prev_run_len, prev_run_hwm."""
    s = (window.join(F.broadcast(keys) if broadcast_keys else keys, "trace_id")
         .join(F.broadcast(pairs) if broadcast else pairs, [*PREV_KEY, *STATE_KEY], "left"))
    first = F.col("prev_sk1").isNull()
    return s.select(
        *KEYS, "step", "time_ms", *STATE_KEY, "leader", "epoch", "hwm_lag", "dt", "election",
        "election_latency",
        *[F.coalesce(c, F.lit(0)).cast("long").alias(c)
          for c in ("truncated_nodes", "truncation_depth", "max_truncation")],
        F.when(first, F.coalesce(F.col("lost_acked") > 0, F.lit(False)))
        .otherwise(F.coalesce("data_loss", F.lit(False))).alias("data_loss"),
        (F.col("election") & F.coalesce("unclean_if_elected", F.lit(False))).alias("unclean"),
        "run_len", "run_hwm", "prev_run_len", "prev_run_hwm")


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


# The tables computed from the per-step observations (`per_step`: the window, written once,
# joined with the trace keys and the pair comparisons as each table reads it): name ->
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
                       by: tuple[str, ...] = ("protocol", "impl", "fault_profile")) -> DataFrame:
    """The protocol metrics per group: by protocol, implementation (refimpl, kafka) and fault
    profile (the default), or by other columns of the trace metrics (metrics_by_bug)."""
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
    """metrics_by_profile grouped by protocol, implementation, fault profile and planted bug
    (`none`: no bug planted), so that a bug's runs compare with bug-free runs under the same
    faults."""
    return metrics_by_profile(tm, el, cl, by=("protocol", "impl", "fault_profile", "bug"))


HIST_SCHEMA = ("protocol string, impl string, fault_profile string, bin long, lo long, "
               "hi long, count long")


def latency_spans(lats: dict[str, DataFrame]) -> dict[str, tuple[int | None, int | None]]:
    """The (smallest, largest) latency_ms of each latency table, by name ((None, None) for an
    empty one), from ONE aggregate over their union (one query instead of one per table)."""
    union = functools.reduce(DataFrame.unionAll, [df.select(F.lit(k).alias("k"), "latency_ms")
                                                   for k, df in lats.items()])
    got = {r.k: (r.lo, r.hi) for r in union.groupBy("k").agg(
        F.min("latency_ms").alias("lo"), F.max("latency_ms").alias("hi")).collect()}
    return {k: got.get(k, (None, None)) for k in lats}


def latency_histogram(lat: DataFrame, bins: int = HIST_BINS,
                      span: tuple[int | None, int | None] | None = None) -> DataFrame:
    """The report's histogram of a latency table (election_latency or commit_latency): per
    protocol, implementation and fault profile, how many latencies fall in each of at most `bins` bins of one
    integer width over the whole table (fields.hist_grid; empty bins have no row).  Its size is
    bounded by groups x bins, so the driver never collects the latencies themselves.  `span`:
    the table's latency_spans entry when the caller has it (else one query computes it)."""
    lo, hi = span if span is not None else latency_spans({"lat": lat})["lat"]
    if lo is None:
        return local_frame(lat.sparkSession, [], HIST_SCHEMA)
    origin, width = hist_grid(lo, hi, bins)
    b = F.expr(f"(latency_ms - ({origin})) div {width}")  # integer division; never negative
    return (lat.groupBy("protocol", "impl", "fault_profile", b.alias("bin"))
            .agg(F.count(F.lit(1)).alias("count"))
            .select("protocol", "impl", "fault_profile", "bin",
                    (F.col("bin") * width + origin).alias("lo"),
                    ((F.col("bin") + 1) * width + origin).alias("hi"), "count")
            .orderBy("protocol", "impl", "fault_profile", "bin"))
