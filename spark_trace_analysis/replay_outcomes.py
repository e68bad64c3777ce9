"""Replay outcomes in the coverage section (`kraftcheck stats --replay DIR`, docs/replay.md).

`kraftcheck replay --out DIR` writes DIR/replay.json (schema kraftcheck-replay/1: the graph,
the implementation) and DIR/edges.jsonl (one line per target edge: its source and destination
state fingerprints, action, outcome, reason class).  This module reads any number of such
folders (one per implementation or graph) and builds two Parquet tables:

    replay_edges       one row per edge and implementation: impl, graph, src_fp, action,
                       dst_fp, outcome (replayed | diverged | not_drivable | not_targeted),
                       reason.  With --graph naming the replay's graph, every edge of the
                       graph is there: the ones the replay did not target are `not_targeted`.
    replay_by_action   per implementation, graph and action: edges and the count of each
                       outcome (the report's bars: the graph's edges colored by outcome)

Bad input is an InputError naming the file, the line and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_trace_analysis.ingest import InputError

__all__ = ["OUTCOMES", "check_replay", "read_replay", "replay_tables", "replay_summary", "EDGE_SCHEMA"]

#: Outcomes, in the report's order (not_targeted: an edge of the graph the replay left out).
OUTCOMES = ("replayed", "diverged", "not_drivable", "not_targeted")

EDGE_SCHEMA = T.StructType([
    T.StructField("src_fp", T.StringType()), T.StructField("action", T.StringType()),
    T.StructField("dst_fp", T.StringType()), T.StructField("outcome", T.StringType()),
    T.StructField("reason", T.StringType()),
])
_FIELDS = {"src_fp": str, "action": str, "dst_fp": str, "outcome": str}


def _error(msg: str) -> Exception:
    return InputError(msg)


def _check_edges(path: Path) -> int:
    """Validate DIR/edges.jsonl line by line (the error names the file, line and field);
    returns the number of edges."""
    n = 0
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise _error(f"{path}:{i}: not JSON ({e})") from None
            if not isinstance(row, dict):
                raise _error(f"{path}:{i}: not a JSON object")
            for k, typ in _FIELDS.items():
                if not isinstance(row.get(k), typ):
                    raise _error(f"{path}:{i}: field {k!r} missing or not a string")
            if row["outcome"] not in OUTCOMES[:3]:
                raise _error(f"{path}:{i}: field 'outcome' is {row['outcome']!r} (one of "
                             f"{', '.join(OUTCOMES[:3])})")
            n += 1
    return n


def check_replay(dirs: Sequence[str | os.PathLike]) -> list[dict]:
    """Validate the replay folders (before Spark starts: bad input fails fast); one
    description per folder (impl, graph, edges, the folder)."""
    meta = []
    for d in dirs:
        d = Path(d)
        rj, ej = d / "replay.json", d / "edges.jsonl"
        for p in (rj, ej):
            if not p.is_file():
                raise _error(f"--replay {d}: no {p.name} (give a `kraftcheck replay --out` "
                             "folder)")
        try:
            rep = json.loads(rj.read_text(encoding="utf-8"))
        except ValueError as e:
            raise _error(f"{rj}: not JSON ({e})") from None
        for k in ("impl", "graph"):
            if not isinstance(rep.get(k), str):
                raise _error(f"{rj}: field {k!r} missing or not a string")
        n = _check_edges(ej)
        meta.append({"impl": rep["impl"], "graph": rep["graph"], "edges": n, "dir": str(d)})
    return meta


def read_replay(spark: SparkSession, dirs: Sequence[str | os.PathLike]
                ) -> tuple[DataFrame, list[dict]]:
    """The edges of every replay folder (impl, graph, src_fp, action, dst_fp, outcome,
    reason) and one description per folder (check_replay)."""
    meta = check_replay(dirs)
    frames = [spark.read.schema(EDGE_SCHEMA).json(str(Path(m["dir"]) / "edges.jsonl"))
              .withColumn("impl", F.lit(m["impl"])).withColumn("graph", F.lit(m["graph"]))
              for m in meta]
    df = frames[0]
    for f in frames[1:]:
        df = df.unionByName(f)
    return df, meta


def replay_tables(edges: DataFrame, graph_edges: DataFrame | None = None,
                  graph_name: str | None = None) -> dict[str, DataFrame]:
    """replay_edges and replay_by_action (module docstring).  `graph_edges` (src_fp, action,
    dst_fp) of the --graph named `graph_name`: the replays of that graph get every edge of it,
    the ones they did not target as not_targeted."""
    cols = ["impl", "graph", "src_fp", "action", "dst_fp", "outcome", "reason"]
    per_edge = edges.select(*cols).dropDuplicates(["impl", "graph", "src_fp", "action",
                                                   "dst_fp"])
    if graph_edges is not None and graph_name is not None:
        runs = per_edge.filter(F.col("graph") == graph_name).select("impl", "graph").distinct()
        every = runs.crossJoin(graph_edges.select("src_fp", "action", "dst_fp").distinct())
        keys = ["impl", "graph", "src_fp", "action", "dst_fp"]
        missing = (every.join(per_edge.select(*keys), keys, "left_anti")
                   .withColumn("outcome", F.lit("not_targeted"))
                   .withColumn("reason", F.lit(None).cast("string")))
        per_edge = per_edge.unionByName(missing.select(*cols))
    by_action = (per_edge.groupBy("impl", "graph", "action")
                 .agg(F.count(F.lit(1)).alias("edges"),
                      *[F.sum(F.when(F.col("outcome") == o, 1).otherwise(0)).alias(o)
                        for o in OUTCOMES])
                 .orderBy("impl", "graph", "action"))
    return {"replay_edges": per_edge, "replay_by_action": by_action}


def replay_summary(by_action: list[dict]) -> list[dict]:
    """Totals per implementation and graph (summary.json's `replay`)."""
    acc: dict[tuple, dict] = {}
    for r in by_action:
        d = acc.setdefault((r["impl"], r["graph"]), {"impl": r["impl"], "graph": r["graph"],
                                                     "edges": 0, "actions": 0,
                                                     **{o: 0 for o in OUTCOMES}})
        d["edges"] += r["edges"]
        d["actions"] += 1
        for o in OUTCOMES:
            d[o] += r[o] or 0
    out = []
    for d in acc.values():
        d["replayed_share"] = round(d["replayed"] / d["edges"], 6) if d["edges"] else 0.0
        out.append(d)
    return sorted(out, key=lambda d: (d["graph"], d["impl"]))
