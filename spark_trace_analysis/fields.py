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
