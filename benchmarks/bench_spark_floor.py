"""The floor of any Spark job over a trace corpus: what Spark itself costs to read it.

Issue 16 asks `kraftcheck stats` for 4x the old code's events/s on local[2].  Whatever the job
does after reading, it pays at least one scan of the JSON Lines.  This benchmark measures that
scan alone, in three levels, each a full pass over the corpus written to Spark's `noop` sink
(no output, nothing collected):

  text       spark.read.text: the lines, no parsing
  from_json  the lines parsed with the job's explicit schema (schema.LINE), as ingest does
  keyed      + the 128-bit xxhash64 key of each state's text (ingest.STATE_KEY's work)
  no_state   the lines parsed with schema.LINE minus `state` (Jackson still reads the state's
             tokens to skip them, but copies nothing): what parsing costs when the state text
             is neither kept nor hashed

With --tables, two more levels give the floor of a job that writes the same tables:

  one_table  the job's own parse (ingest.parse_lines: every per-line check, the key) written
             once as Parquet, every column kept (the state text of every event, as `steps`
             holds it): the one table of 10M rows any such job writes
  window     that table read back and one window over each trace in step order (lag and lead
             of narrow columns, into `noop`): the per-trace sort the metrics need

  one_table + window is the floor: a job producing `steps` and the per-step metrics cannot take
  less, whatever its layout.

    .venv/bin/python benchmarks/bench_spark_floor.py --corpus DIR [--tables] [--json]

Prints seconds, events/s and MB/s of JSON for each level; with --target-seconds T also the
largest share of T the scan leaves to the rest of the job.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_trace_analysis import ingest  # noqa: E402
from spark_trace_analysis.schema import LINE  # noqa: E402
from spark_trace_analysis.session import get_session  # noqa: E402


def _count_events(files: list[str]) -> int:
    """Step lines (events) of the corpus: lines minus one header and one footer per file's
    traces, counted the way bench_spark.py counts them (`"kind": "step"` lines)."""
    n = 0
    for f in files:
        with open(f, "rb") as fh:
            for line in fh:
                if b'"kind":"step"' in line or b'"kind": "step"' in line:
                    n += 1
    return n


def _row(level: str, sec: float, events: int, size: int) -> dict:
    return {"level": level, "seconds": round(sec, 1), "events_per_s": round(events / sec),
            "mb_per_s": round(size / 2**20 / sec, 1)}


def _table_levels(spark, files: list[str], events: int, size: int) -> list[dict]:
    """The one_table and window levels (see the module's text), and their sum as `floor`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from spark_trace_analysis.vocabulary import known_actions

    common = set().union(*(known_actions(p) for p in ("kraft", "elr")))
    tmp = Path(tempfile.mkdtemp(prefix="kraftcheck-floor-"))
    rows = []

    def timed(name, fn):
        t0 = time.monotonic()
        fn()
        sec = time.monotonic() - t0
        rows.append(_row(name, sec, events, size))
        return sec

    try:
        a = timed("one_table", lambda: ingest.parse_lines(ingest.read_lines(spark, files), common)
                  .write.mode("overwrite").parquet(str(tmp / "lines")))
        st = spark.read.parquet(str(tmp / "lines")).filter(F.col("kind") == "step")
        w = Window.partitionBy("trace_id").orderBy("step")
        b = timed("window", lambda: st.select(
            "trace_id", "step", "time_ms", F.lag("time_ms").over(w).alias("prev"),
            F.lead("time_ms").over(w).alias("next")).write.format("noop").mode("overwrite").save())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows.append(_row("floor", a + b, events, size))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="a folder of *.jsonl trace files")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--target-seconds", type=float, default=None,
                    help="a job's wall-time goal: print what the scan leaves of it")
    ap.add_argument("--tables", action="store_true",
                    help="also the one_table and window levels (the floor of the same tables)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)

    files = ingest.expand_inputs([a.corpus])
    size = ingest.input_bytes(files) or 0
    done = Path(a.corpus) / "DONE"      # bench_spark.py's corpora record their event count
    events = int(done.read_text()) if done.is_file() else _count_events(files)
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    no_state = T.StructType([f for f in LINE.fields if f.name != "state"])
    spark = get_session(a.master, app_name="kraftcheck-floor", driver_memory=a.driver_memory)
    levels = {
        "text": lambda df: df,
        "from_json": lambda df: df.select(F.from_json("value", LINE).alias("j")).select("j.*"),
        "keyed": lambda df: (df.select(F.from_json("value", LINE).alias("j"))
                             .select("j.*", F.xxhash64("j.state").alias("k1"),
                                     F.xxhash64(F.lit("kraftcheck"), "j.state").alias("k2"))),
        "no_state": lambda df: df.select(F.from_json("value", no_state).alias("j")).select("j.*"),
    }
    spark.read.text(files[0]).limit(1000).write.format("noop").mode("overwrite").save()  # warm-up
    rows = []
    for name, build in levels.items():
        t0 = time.monotonic()
        build(spark.read.text(files)).write.format("noop").mode("overwrite").save()
        rows.append(_row(name, time.monotonic() - t0, events, size))
    if a.tables:
        rows += _table_levels(spark, files, events, size)
    spark.stop()
    out = {"corpus": a.corpus, "files": len(files), "events": events, "mib": round(size / 2**20, 1),
           "master": a.master, "levels": rows}
    if a.target_seconds:
        keyed = next(r["seconds"] for r in rows if r["level"] == "keyed")
        out["target_seconds"] = a.target_seconds
        out["left_for_the_rest"] = round(a.target_seconds - keyed, 1)
        if a.tables:
            floor = rows[-1]["seconds"]
            out["left_after_the_floor"] = round(a.target_seconds - floor, 1)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{events:,} events, {out['mib']:,} MiB of JSON, {len(files)} files, {a.master}")
        for r in rows:
            print(f"  {r['level']:<10} {r['seconds']:>8.1f} s  {r['events_per_s']:>10,} events/s"
                  f"  {r['mb_per_s']:>7.1f} MB/s")
        if a.target_seconds:
            print(f"  a job of {a.target_seconds:.0f} s has {out['left_for_the_rest']:.1f} s left "
                  "after the keyed scan")
            if a.tables:
                print(f"  and {out['left_after_the_floor']:.1f} s left after the floor of the "
                      "same tables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
