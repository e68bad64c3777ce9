"""Explicit schemas: the JSON Lines that are read, and the Parquet tables that are written.

Nothing is inferred.  One schema, LINE, covers the three kinds of trace line of
"kraftcheck-trace/1" (header, step, footer; see refimpl/trace/format.py): fields a kind does not
have are null.  Nested spec values (`state`, `params`, `bounds`) are kept as their JSON text;
the state is decoded once, in Python, to compute its fingerprint and the observation columns
(`spark_trace_analysis.observe`).  VERDICT is the line of the trace checker's verdict files.
"""

from __future__ import annotations

from pyspark.sql import types as T

__all__ = ["LINE", "VERDICT", "OBSERVATION", "STATE_INFO", "CORRUPT", "TRACE_SCHEMA",
           "REQUIRED"]

S, L, B = T.StringType(), T.LongType(), T.BooleanType()


def _f(name, typ, nullable=True):
    return T.StructField(name, typ, nullable)


CORRUPT = "_corrupt"

LINE = T.StructType([
    _f("kind", S),
    # header
    _f("schema", S), _f("trace_id", S), _f("protocol", S), _f("seed", L),
    _f("fault_profile", S), _f("bug", S), _f("bounds", S), _f("spec_module", S),
    _f("model_values", T.ArrayType(S)), _f("variables", T.ArrayType(S)),
    # the implementation that produced the run (absent: the refimpl; kafka_bridge writes it)
    _f("impl", T.StructType([_f("name", S), _f("version", S)])),
    # step
    _f("step", L), _f("time_ms", L), _f("action", S), _f("params", S), _f("state", S),
    # footer
    _f("steps", L), _f("end_reason", S), _f("invariants", T.MapType(S, S)),
    _f("violations", T.ArrayType(T.StructType([
        _f("invariant", S), _f("step", L), _f("detail", S)]))),
    _f(CORRUPT, S),
])

from spark_trace_analysis.fields import REQUIRED, TRACE_SCHEMA  # noqa: E402,F401 (re-exported)

# What the Python pass derives from one step's state (see observe.py for the definitions).
OBSERVATION = T.StructType([
    _f("leaders", T.ArrayType(S)),      # nodes that are leader in this state
    _f("leader", S),                    # the leader (KRaft: the leader of the highest epoch)
    _f("epoch", L),                     # the highest epoch (ELR: the partition's leader epoch)
    _f("hwm_max", L),                   # the highest high watermark of any node
    _f("hwm_min", L),                   # the lowest high watermark (ELR: of the live brokers)
    _f("log_lens", T.MapType(S, L)),    # node -> log length
    _f("hwms", T.MapType(S, L)),        # node -> high watermark
    _f("hwm_lag", L),                   # the leader's log end minus its high watermark
    _f("eligible", T.ArrayType(S)),     # ELR: ISR union ELR (null for KRaft)
    _f("lost_acked", L),                # ELR: acknowledged records missing from the leader's log
])

STATE_INFO = T.StructType([
    _f("fp", S),        # kraftcore.values.fingerprint of the decoded state
    _f("error", S),     # why the state could not be decoded (then fp is null)
    _f("obs", OBSERVATION),
])

# The verdict line of the trace checker (trace_checker/verdict.py), read as it is written.
VERDICT = T.StructType([
    _f("trace_id", S), _f("file", S), _f("verdict", S), _f("step", L), _f("action", S),
    _f("claimed_action", S), _f("reason", S), _f("detail", S), _f(CORRUPT, S),
])
