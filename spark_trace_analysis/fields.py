"""The trace line fields every reader of a corpus checks, free of pyspark so that a
single-process reader (benchmarks/bench_spark.py's baseline) shares them without loading
Spark.  spark_trace_analysis.schema re-exports them."""

TRACE_SCHEMA = "kraftcheck-trace/1"

# Fields each kind of line must carry (checked in ingest; a missing one makes a bad row).
REQUIRED = {
    "header": ("schema", "trace_id", "protocol", "seed", "fault_profile", "spec_module",
               "variables"),
    "step": ("trace_id", "step", "time_ms", "action", "params", "state"),
    "footer": ("trace_id", "steps", "end_reason", "invariants"),
}

# The report's latency histograms (metrics.latency_histogram, and the benchmark's baseline):
# HIST_BINS bins of one integer width over the whole table, so the histogram has a bounded
# size however large the corpus is.
HIST_BINS = 30


def hist_grid(lo: int, hi: int, bins: int = HIST_BINS) -> tuple[int, int]:
    """(origin, width) of a histogram of integer values in [lo, hi]: bins of equal integer
    width starting at min(lo, 0), enough of them (at most `bins`) to hold hi.  A value x
    falls in bin (x - origin) // width, which covers [origin + bin*width, origin + (bin+1)*width)."""
    origin = min(lo, 0)
    return origin, (hi - origin) // bins + 1

# The partition value of a trace's bounds config (ingest.bounds_partition, in the JVM; the
# benchmark's single-process baselines use this one).
UNSTATED_BOUNDS = "unstated"


def bounds_config(raw: str | None) -> str:
    """The config file a header's `bounds` (its JSON text) names, or `unstated`."""
    import json
    if raw is None:
        return UNSTATED_BOUNDS
    t = raw.strip()
    if t.startswith("{"):
        try:
            named = json.loads(raw).get("file")
        except (ValueError, AttributeError):
            named = None
        if named is not None and not isinstance(named, str):   # as get_json_object gives it
            named = json.dumps(named, separators=(",", ":"))
    else:
        named = None if t in ("", "null") else t
    return named if named else UNSTATED_BOUNDS
