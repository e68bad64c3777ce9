"""KIP-642 reassignment metrics over the `steps` table (traces of protocol "reassign").

A reassignment starts at a ReceiveAlterPartitionReassignmentsRequest step that appended a
VoterAssignment record (the number of records in all logs grew: a new TargetVoters) and ends at
the first CompleteReassignment after it (TargetVoters cleared, KIP-642 draft "Reassignment
Algorithm" step 6a).  A request that appends a new target before that replaces the pending one
(the earlier reassignment counts as superseded, not completed).

  time to complete   end time - start time (virtual ms), completed reassignments only
  epochs             the largest epoch of any replica at the end minus at the start (the
                     elections a reassignment went through, e.g. the leader removing itself)

`reassignments(rows)` is the same definition in plain Python (the demo's reassignment stage and
the tests use it); `reassignment_table(steps, states)` / `reassignment_metrics(steps, states)` compute it with
Spark window functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

__all__ = ["REQUEST", "COMPLETE", "reassignments", "summarize", "reassignment_table",
           "reassignment_metrics"]

REQUEST = "ReceiveAlterPartitionReassignmentsRequest"
COMPLETE = "CompleteReassignment"


def _records(state: dict) -> int:
    return sum(len(v) for v in state["log"].values())


def _max_epoch(state: dict) -> int:
    return max(state["currentEpoch"].values(), default=0)


def reassignments(rows: Iterable[dict]) -> list[dict]:
    """rows: one trace's step lines in step order (dicts with time_ms, action, state).  One dict
    per reassignment started: start_ms, end_ms (None if not completed), epochs, superseded."""
    out: list[dict] = []
    prev_records = None
    cur: dict | None = None
    for r in rows:
        st = r["state"]
        n = _records(st)
        if r["action"] == REQUEST and prev_records is not None and n > prev_records:
            if cur is not None:
                cur["superseded"] = True
                out.append(cur)
            cur = {"start_ms": r["time_ms"], "end_ms": None, "start_epoch": _max_epoch(st),
                   "epochs": None, "superseded": False}
        elif r["action"] == COMPLETE and cur is not None:
            cur["end_ms"] = r["time_ms"]
            cur["epochs"] = _max_epoch(st) - cur["start_epoch"]
            out.append(cur)
            cur = None
        prev_records = n
    if cur is not None:
        out.append(cur)
    return out


def summarize(items: list[dict]) -> dict:
    done = [x for x in items if x["end_ms"] is not None]
    times = sorted(x["end_ms"] - x["start_ms"] for x in done)
    epochs = [x["epochs"] for x in done]
    return {
        "reassignments": len(items),
        "completed": len(done),
        "superseded": sum(1 for x in items if x["superseded"]),
        "time_to_complete_ms_p50": times[(len(times) - 1) // 2] if times else None,  # as percentile_approx
        "time_to_complete_ms_max": times[-1] if times else None,
        "time_to_complete_ms_mean": round(sum(times) / len(times), 1) if times else None,
        "epochs_per_reassignment_mean": round(sum(epochs) / len(epochs), 2) if epochs else None,
        "epochs_per_reassignment_max": max(epochs) if epochs else None,
    }


def trace_file_reassignments(path) -> list[dict]:
    """`reassignments` of one trace file (JSON Lines)."""
    with open(path) as f:
        rows = [o for o in map(json.loads, f) if o.get("kind") == "step"]
    return reassignments(rows)


def reassignment_table(steps, states):
    """One row per reassignment (trace_id, fault_profile, bug, rid, start_ms, end_ms,
    time_to_complete_ms, epochs, superseded) of the reassign traces in `steps` (a step's
    state text is the `states` row of its key)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, MapType, StringType

    from spark_trace_analysis.ingest import STATE_KEY

    w = Window.partitionBy("trace_id").orderBy("step")
    s = (steps.filter(F.col("protocol") == "reassign")
         .select("trace_id", "fault_profile", F.coalesce("bug", F.lit("none")).alias("bug"),
                 "step", "time_ms", "action", *STATE_KEY)
         .join(states.select(*STATE_KEY, "state"), list(STATE_KEY)))
    logs = F.get_json_object("state", "$.log")
    epochs = F.from_json(F.get_json_object("state", "$.currentEpoch"),
                         MapType(StringType(), LongType()))
    s = (s.withColumn("records", F.size(F.split(logs, '"epoch"')) - 1)
         .withColumn("max_epoch", F.array_max(F.map_values(epochs)))
         .withColumn("started", (F.col("action") == REQUEST)
                     & (F.col("records") > F.lag("records").over(w)))
         .withColumn("rid", F.sum(F.col("started").cast("long")).over(
             w.rowsBetween(Window.unboundedPreceding, 0))))
    s = s.filter(F.col("rid") > 0)
    g = s.groupBy("trace_id", "fault_profile", "bug", "rid").agg(
        F.min(F.when(F.col("started"), F.col("time_ms"))).alias("start_ms"),
        F.min(F.when(F.col("started"), F.col("max_epoch"))).alias("start_epoch"),
        F.min(F.when(F.col("action") == COMPLETE, F.col("step"))).alias("end_step"))
    ends = s.select("trace_id", "rid", F.col("step").alias("end_step"),
                    F.col("time_ms").alias("end_ms"), F.col("max_epoch").alias("end_epoch"))
    last = s.groupBy("trace_id").agg(F.max("rid").alias("last_rid"))
    t = (g.join(ends, ["trace_id", "rid", "end_step"], "left").join(last, "trace_id")
         .withColumn("time_to_complete_ms", F.col("end_ms") - F.col("start_ms"))
         .withColumn("epochs", F.col("end_epoch") - F.col("start_epoch"))
         .withColumn("superseded", F.col("end_ms").isNull() & (F.col("rid") < F.col("last_rid"))))
    return t.select("trace_id", "fault_profile", "bug", "rid", "start_ms", "end_ms",
                    "time_to_complete_ms", "epochs", "superseded")


def reassignment_metrics(steps, states):
    """Per fault profile and planted bug: reassignments, completed, superseded, time to
    complete (p50, mean, max) and epochs per completed reassignment (mean, max)."""
    from pyspark.sql import functions as F
    t = reassignment_table(steps, states)
    done = F.col("end_ms").isNotNull()
    return (t.groupBy("fault_profile", "bug").agg(
        F.count("*").alias("reassignments"),
        F.sum(done.cast("long")).alias("completed"),
        F.sum(F.col("superseded").cast("long")).alias("superseded"),
        F.percentile_approx("time_to_complete_ms", 0.5).alias("time_to_complete_ms_p50"),
        F.round(F.avg("time_to_complete_ms"), 1).alias("time_to_complete_ms_mean"),
        F.max("time_to_complete_ms").alias("time_to_complete_ms_max"),
        F.round(F.avg("epochs"), 2).alias("epochs_per_reassignment_mean"),
        F.max("epochs").alias("epochs_per_reassignment_max"))
        .orderBy("fault_profile", "bug"))
