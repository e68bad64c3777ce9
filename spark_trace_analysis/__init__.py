"""spark_trace_analysis package."""
