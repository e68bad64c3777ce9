"""Ingest: JSON Lines trace corpora -> Parquet tables `traces`, `steps`, `states` and `bad_rows`.

Nothing is inferred and nothing is dropped silently.  Every input line is parsed with the
explicit schema `schema.LINE`; a line that is not JSON, has a field of the wrong type, lacks a
required field, names an unknown kind or schema, or holds an undecodable state becomes a row of
`bad_rows` (file, line, reason, text, in_steps false), and its trace is marked incomplete in
`traces`.  A step whose action is outside the protocol's vocabulary is a bad row too (in_steps
true) but stays in `steps`, flagged `unknown_action`, and does not by itself make its trace
incomplete: the single-process checker reads such a trace and finds it invalid at that step
(no edge of the graph carries the action), and so does the distributed validation.

Line numbers come from the scan itself: a line's position is its file block's first line plus
its ordinal inside the block (`monotonically_increasing_id` numbers the rows of a partition in
order; blocks of one file are numbered by prefix sums of their row counts), so they are exact
for files larger than a Spark partition too, on any Hadoop file system.

The input is parsed once: the JVM parses every line (from_json with the explicit schema) into
a staging Parquet table, and keys each step's state text by two independent 64-bit xxhash64
values (`STATE_KEY`: 128 bits, computed in the JVM during the scan); the staging table keeps
the keys, not the texts.  A second scan reads the files as text only and parses just the line
of each distinct state's first step, by its position (state_table).  Python runs only over the
DISTINCT states, deduplicated in the JVM by that key (bounded runs repeat states): one
vectorised Arrow UDF computes each distinct state's fingerprint (`kraftcore.values.fingerprint`,
the one graph states get too, so the two join) and observations once, into the `states` table
(one row per distinct state: its key, text, fingerprint and observations).  `steps` holds the
key and the fingerprint, not the state text nor the observations: a step's state is the
`states` row of its key (two longs; the steps get the fingerprint by a broadcast hash join when
the states are few enough, a shuffle join otherwise).  The header fields every table needs are
aggregated once into a small staging table.

Layout: `steps` and `traces` are partitioned by `protocol` and `bounds_config` (the config file
the trace header's `bounds` names, `unstated` without one; `bounds_partition`), so a later job
over one protocol or one bounds config reads only its folder.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_trace_analysis.frames import local_frame
from spark_trace_analysis.schema import CORRUPT, LINE, REQUIRED, STATE_INFO, TRACE_SCHEMA
from spark_trace_analysis.vocabulary import SPEC_MODULES, known_actions

__all__ = ["InputError", "expand_inputs", "read_lines", "parse_lines", "ingest_traces",
           "ingest_verdicts", "bounds_partition", "PARTITION_COLUMNS", "input_bytes",
           "read_back", "write_read_back", "count_rows"]

# The partition columns of the per-trace and per-step tables (steps, traces, metrics,
# election_latency, commit_latency): a job over one protocol or one bounds config reads only
# its folders (partition pruning).
PARTITION_COLUMNS = ("protocol", "bounds_config")
UNSTATED_BOUNDS = "unstated"
REFIMPL = "refimpl"     # the implementation of a trace whose header names none


def bounds_partition(bounds: F.Column) -> F.Column:
    """The `bounds_config` partition value of a header's `bounds` (its JSON text): the config
    file it names (the object's `file`, or the string itself), `unstated` when it names none.
    The same rule as coverage.bounds_file, in the JVM."""
    t = F.trim(bounds)
    named = (F.when(t.startswith("{"), F.get_json_object(bounds, "$.file"))
             .when((t == "") | (t == "null"), F.lit(None)).otherwise(t))
    return F.coalesce(F.when(named != "", named), F.lit(UNSTATED_BOUNDS))


def read_back(spark: SparkSession, path: Path, schema: StructType,
              partition_by: Iterable[str] = ()) -> DataFrame:
    """The Parquet table at `path`, just written from a DataFrame of `schema` (partitioned by
    `partition_by`), read with that schema: Spark infers a Parquet table's schema with a Spark
    job of its own (the files' footers), a fixed cost this saves (issue 34).  Partition columns
    come last, where partition discovery puts them, with their written types."""
    parts = list(partition_by)
    if parts:
        schema = StructType([f for f in schema.fields if f.name not in parts]
                            + [schema[c] for c in parts])
    return spark.read.schema(schema).parquet(str(path))


def count_rows(tables: dict[str, DataFrame]) -> dict[str, int]:
    """The row count of each DataFrame, by name, from ONE aggregate over their union (one
    query instead of one per table: issue 34's fixed cost)."""
    union = functools.reduce(DataFrame.unionAll, [df.select(F.lit(k).alias("k"))
                                                   for k, df in tables.items()])
    n = {k: 0 for k in tables}
    n.update({r.k: r["n"] for r in union.groupBy("k").agg(F.count(F.lit(1)).alias("n"))
              .collect()})
    return n


def write_read_back(df: DataFrame, path: Path) -> DataFrame:
    """Write `df` as Parquet at `path` (replacing it) and return it read back (read_back)."""
    df.write.mode("overwrite").parquet(str(path))
    return read_back(df.sparkSession, path, df.schema)


def input_bytes(files: list[str]) -> int | None:
    """Total size of local input files (None when some are URIs: Spark sizes those itself)."""
    total = 0
    for f in files:
        if "://" in f:
            return None
        try:
            total += Path(f).stat().st_size
        except OSError:
            return None
    return total


class InputError(ValueError):
    """Bad input: a path that does not exist or holds no JSON Lines file."""


def expand_inputs(paths: Iterable[str | Path], suffixes=(".jsonl",)) -> list[str]:
    """Local files and folders (searched recursively for *.jsonl) -> sorted file list.  URIs
    with a scheme (hdfs://, s3a://...) are passed to Spark as they are."""
    out: list[str] = []
    for p in paths:
        s = str(p)
        if "://" in s:
            out.append(s)
            continue
        path = Path(s)
        if path.is_dir():
            found = sorted(str(f.resolve()) for f in path.rglob("*")
                           if f.is_file() and f.name.endswith(suffixes))
            if not found:
                raise InputError(f"{path}: no {'/'.join(suffixes)} file in this folder")
            out += found
        elif path.is_file():
            out.append(str(path.resolve()))
        else:
            raise InputError(f"{path}: no such file or folder")
    if not out:
        raise InputError("no input given")
    return out


NAME_NOT_UTF8 = "file name is not UTF-8: the file is not read"


def split_file_names(files: list[str]) -> tuple[list[str], list[str]]:
    """(files Spark can be given, names that are not UTF-8).  A name that is not UTF-8 (its
    undecodable bytes are surrogate escapes in Python) cannot be passed to the JVM: that file
    becomes a bad row (its name written with \\xNN escapes, kraftcore.output.plain), the
    others are read as usual."""
    good, bad = [], []
    for f in files:
        try:
            f.encode("utf-8")
        except UnicodeEncodeError:
            bad.append(f)
            continue
        good.append(f)
    return good, bad


def _name_rows(spark: SparkSession, names: list[str], with_in_steps: bool) -> DataFrame:
    """Bad rows (file, line, trace_id, reason, text[, in_steps]) for files whose names are not
    UTF-8 (split_file_names)."""
    from kraftcore.output import plain
    cols = "file string, line long, trace_id string, reason string, text string" + (
        ", in_steps boolean" if with_in_steps else "")
    rows = [(plain(n), None, None, NAME_NOT_UTF8, None) + ((False,) if with_in_steps else ())
            for n in names]
    return local_frame(spark, rows, cols)


def _no_readable_file(bad_names: list[str]) -> InputError:
    from kraftcore.output import plain
    return InputError("no file name that is UTF-8 among the inputs: "
                      + ", ".join(plain(n) for n in bad_names[:5]))


def read_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """(file, block, row, value): every line of every file, with its position in the scan."""
    return (spark.read.text(files)
            .select(F.regexp_replace(F.col("_metadata.file_path"), "^file:", "").alias("file"),
                    F.col("_metadata.file_block_start").alias("block"),
                    F.monotonically_increasing_id().alias("row"),
                    F.col("value")))


def with_line_numbers(df: DataFrame, positions: DataFrame) -> DataFrame:
    """Add `line` (1-based) to rows of `df` carrying (file, block, row); `positions` is the
    (file, block, row) of every line of the scan."""
    blocks = positions.groupBy("file", "block").agg(F.min("row").alias("first_row"),
                                                    F.count(F.lit(1)).alias("n"))
    w = Window.partitionBy("file").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    blocks = blocks.withColumn("before", F.coalesce(F.sum("n").over(w), F.lit(0)))
    return (df.join(F.broadcast(blocks.select("file", "block", "first_row", "before")),
                    ["file", "block"])
            .withColumn("line", F.col("row") - F.col("first_row") + F.col("before") + 1)
            .drop("first_row", "before"))


def _first_reason(cases) -> F.Column:
    expr = None
    for cond, reason in cases:
        expr = F.when(cond, reason) if expr is None else expr.when(cond, reason)
    return expr


@F.arrow_udf(STATE_INFO)
def _state_info(texts: pa.Array) -> pa.Array:
    from spark_trace_analysis.observe import state_info_arrow
    return state_info_arrow(texts)


_PARSE = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}


def parse_lines(lines: DataFrame, common_actions: Iterable[str] | None = None,
                keep_state: bool = True) -> DataFrame:
    """Parse every line with schema.LINE; `reason` says why a line is bad (null when good).
    `value` keeps the first 300 characters of a line only where a bad row may show them: bad
    lines, headers and footers, and steps whose action is not in `common_actions` (the union
    of every vocabulary; None keeps every line's text).  Each step's state text is keyed
    (STATE_KEY); without `keep_state` the text itself is dropped (state_table reads the few
    it needs again, by position)."""
    j = F.from_json("value", LINE, _PARSE)
    cols = [F.col(f"j.{f.name}").alias(f.name) for f in LINE.fields]
    df = lines.withColumn("j", j).select("file", "block", "row", "value", *cols)
    kind = F.col("kind")
    corrupt = F.col(CORRUPT).isNotNull()
    # CASE WHEN evaluates lazily: the second JSON parse runs on corrupt lines only, and the
    # trims (each a copy of the line) only on lines that do not start with "{" (such a line is
    # not blank and its trimmed form starts with "{" too)
    brace = F.col("value").startswith("{")
    cases = [
        # as the trace checker does (trace_checker.traces: "not UTF-8"); the JVM's JSON reader
        # would read the bytes as U+FFFD and accept the line
        (~F.is_valid_utf8("value"), F.lit("not UTF-8")),
        (~brace & (F.trim("value") == ""), F.lit("blank line")),
        (corrupt & F.expr("try_parse_json(value)").isNull(), F.lit("not JSON")),
        (~brace & ~F.ltrim("value").startswith("{"), F.lit("not a JSON object")),
        (corrupt, F.lit("a field has the wrong type")),
        (kind.isNull(), F.lit("missing field kind")),
        (~kind.isin(*REQUIRED), F.concat(F.lit("unknown kind "), kind)),
    ]
    for k, fields in REQUIRED.items():
        for f in fields:
            cases.append(((kind == k) & F.col(f).isNull(), F.lit(f"{k}: missing field {f}")))
    cases.append(((kind == "header") & (F.col("schema") != TRACE_SCHEMA),
                  F.concat(F.lit("unknown schema "), F.col("schema"))))
    cases.append(((kind == "header") & F.col("impl").isNotNull()
                  & (F.col("impl.name").isNull() | F.col("impl.version").isNull()),
                  F.lit("header: impl needs a name and a version")))
    df = df.withColumn("reason", _first_reason(cases)).select("*", *state_key(F.col("state")))
    text = F.substring("value", 1, 300)
    if common_actions is not None:
        # a good step of a common action never becomes a bad row: its text is not kept
        common = sorted(common_actions)
        text = F.when(F.col("reason").isNotNull() | (kind != "step")
                      | ~F.coalesce(F.col("action").isin(*common), F.lit(False)), text)
    df = df.withColumn("value", text).drop(CORRUPT)
    return df if keep_state else df.drop("state")


# The key of a state text: two xxhash64 values with independent seeds (the second is seeded
# by hashing a constant first), 128 bits: distinct states of a corpus never share it in
# practice (2^-64 for 2^32 distinct states), and it is computed in the JVM during the scan.
STATE_KEY = ("sk1", "sk2")


def state_key(state: F.Column) -> list[F.Column]:
    return [F.when(state.isNotNull(), F.xxhash64(state)).alias(STATE_KEY[0]),
            F.when(state.isNotNull(), F.xxhash64(F.lit("kraftcheck-state"), state))
            .alias(STATE_KEY[1])]


# state_table's staging table: each distinct state's key and the scan position of its first step
STATE_ROWS = f"{STATE_KEY[0]} long, {STATE_KEY[1]} long, row long"


# Up to this many distinct states, the scan positions of their first steps go to every task
# (8 bytes each) to pick the distinct states' lines out of the second scan.
BROADCAST_STATE_ROWS = 4_000_000


def key_digest(df: DataFrame) -> list[F.Column]:
    """Aggregates over distinct state keys: their count and the XOR of each key half.  Two
    sets of distinct keys with the same digest are the same set but with probability 2^-128
    (for keys that did not come from an adversary)."""
    return [F.count(F.lit(1)).alias("n"), F.bit_xor(STATE_KEY[0]).alias("x1"),
            F.bit_xor(STATE_KEY[1]).alias("x2")]


def state_table(spark: SparkSession, files: list[str], lines: DataFrame,
                staging: Path) -> tuple[DataFrame, tuple[int, int | None, int | None]]:
    """The `states` table: (sk1, sk2, state, fp, error, obs) for each DISTINCT state of the
    good step lines, and the key_digest of the distinct keys the first scan found (n, x1, x2),
    deduplicated in the JVM by its key: the one Python pass (a vectorised Arrow UDF:
    fingerprint, decoding error, observations), once per distinct state.

    The staging table holds the keys, not the state texts: the deduplication aggregates
    fixed-width values only (the key and the scan position of the state's first step: a hash
    aggregate, no sort of texts), then a second scan of the input, as text, picks those lines
    by position (the same files read the same way number their lines the same way) and parses
    only them.  The states' keys are computed again from the picked texts (one parse of each
    picked line); ingest_traces checks that their key_digest is the first scan's (the input
    changed under us otherwise)."""
    steps = lines.filter(F.col("reason").isNull() & (F.col("kind") == "step"))
    (steps.groupBy(*STATE_KEY).agg(F.min("row").alias("row"))
     .write.mode("overwrite").parquet(str(staging / "state_rows")))
    first = spark.read.schema(STATE_ROWS).parquet(str(staging / "state_rows"))
    digest = tuple(first.agg(*key_digest(first)).first())
    rows = first.select("row")
    if digest[0] <= BROADCAST_STATE_ROWS:
        rows = F.broadcast(rows)
    picked = (read_lines(spark, files).select("row", "value").join(rows, "row")
              .select(F.from_json("value", LINE, _PARSE)["state"].alias("state")))
    return (picked.select(*state_key(F.col("state")), "state",
                          _state_info(F.col("state")).alias("info"))
            .select(*STATE_KEY, "state", "info.*")), digest


def _vocabulary(spark: SparkSession, protocols: Iterable[str], extra: dict[str, set[str]]):
    """(protocol, action) of every known action, or None when no protocol has a vocabulary.
    A protocol without one (not kraft, elr or reassign, and no graph of it) is not judged: its
    actions are all accepted."""
    rows = [(p, a) for p in protocols for a in sorted(known_actions(p) | extra.get(p, set()))]
    if not rows:
        return None
    return local_frame(spark, rows, "protocol string, action string")


# Above this many distinct states the steps get their fingerprints by a shuffle join, not a
# broadcast of (key, fingerprint): about 80 bytes a state in the driver and every executor.
BROADCAST_STATES = 1_000_000


def ingest_traces(spark: SparkSession, files: list[str], out: Path, staging: Path,
                  extra_actions: dict[str, set[str]] | None = None, say=None) -> dict:
    """Write out/traces, out/steps (both partitioned by PARTITION_COLUMNS), out/states and
    out/bad_rows."""
    say = say or (lambda _m: None)
    extra = extra_actions or {}
    files, bad_names = split_file_names(files)
    if not files:
        raise _no_readable_file(bad_names)
    common = set().union(*(known_actions(p) for p in SPEC_MODULES), *extra.values())
    say("parsing lines (one scan of the input)")
    # the two scans (state_table's picks lines by position) must split the files alike: the
    # split size depends on the cluster's cores unless this is set, so pin it for the run
    if spark.conf.get("spark.sql.files.minPartitionNum", None) is None:
        spark.conf.set("spark.sql.files.minPartitionNum",
                       str(spark.sparkContext.defaultParallelism))
    lines = write_read_back(parse_lines(read_lines(spark, files), common, keep_state=False),
                            staging / "lines")
    say("fingerprinting and observing each distinct state once")
    table, first_digest = state_table(spark, files, lines, staging)
    states = write_read_back(table, out / "states")
    # in one aggregate: the states, those whose text could not be decoded, and the digest of
    # their keys, which must be the first scan's (the same set of distinct keys)
    n = states.agg(*key_digest(states), F.count(F.col("error")).alias("bad")).first()
    n_states = n["n"]
    if (n["n"], n["x1"], n["x2"]) != first_digest:
        raise InputError("the input changed while it was read: a second scan of the files "
                         "did not find every state of the first where it was")
    bad_states = states.filter(F.col("error").isNotNull()).select(
        *STATE_KEY, F.col("error").alias("state_error"))
    has_bad_states = n["bad"] > 0
    good = lines.filter(F.col("reason").isNull())

    # one row per trace: aggregated once, read by every table below
    headers = (good.filter(F.col("kind") == "header")
               .groupBy("trace_id")
               .agg(F.count(F.lit(1)).alias("n_headers"),
                    F.countDistinct("file").alias("n_header_files"),
                    *[F.first(c, ignorenulls=True).alias(c) for c in (
                        "file", "protocol", "seed", "fault_profile", "bug", "bounds",
                        "spec_module", "variables", "impl")])
               .withColumn("bounds_config", bounds_partition(F.col("bounds")))
               # the implementation (refimpl.trace.format.impl_of): the header's impl.name,
               # the refimpl without one
               .withColumn("impl", F.coalesce(F.col("impl.name"), F.lit(REFIMPL))))
    headers = write_read_back(headers, staging / "headers")
    protocols = [r.protocol for r in headers.select("protocol").distinct().collect()
                 if r.protocol is not None]
    vocab = _vocabulary(spark, protocols, extra)
    # the protocols that have a vocabulary (computed here, not by a Spark job)
    judged = sorted(p for p in protocols if known_actions(p) | extra.get(p, set()))

    def judged_steps(df: DataFrame) -> DataFrame:
        """Good step lines with their trace's header fields and `unknown_action`."""
        df = df.join(F.broadcast(headers.select("trace_id", "protocol", "fault_profile", "bug",
                                                "bounds", "bounds_config")), "trace_id", "left")
        if vocab is None:
            return df.withColumn("unknown_action", F.lit(False))
        return (df.join(F.broadcast(vocab.withColumn("known", F.lit(True))),
                        ["protocol", "action"], "left")
                .withColumn("unknown_action", F.col("protocol").isin(*judged)
                            & F.col("known").isNull())
                .drop("known"))

    step_lines = good.filter(F.col("kind") == "step")
    # A step line is bad at parse time (the line is dropped), for its state (not ITF: dropped
    # too), or for its action (a bad row that stays in `steps`, flagged `unknown_action`: the
    # trace is read as the checker reads it, and validation fails at that step unless the
    # state is unchanged).
    bad = lines.filter(F.col("reason").isNotNull()).select(
        "file", "block", "row", "trace_id", "reason", "value", F.lit(False).alias("in_steps"))
    unknown = judged_steps(step_lines.select("trace_id", "action", *STATE_KEY, "file", "block",
                                             "row", "value")).filter(F.col("unknown_action"))
    if has_bad_states:
        bad_state_lines = step_lines.join(F.broadcast(bad_states), list(STATE_KEY))
        bad = bad.unionByName(bad_state_lines.select(
            "file", "block", "row", "trace_id", F.col("state_error").alias("reason"), "value",
            F.lit(False).alias("in_steps")))
        unknown = unknown.join(F.broadcast(bad_states.select(*STATE_KEY)), list(STATE_KEY),
                               "left_anti")
    bad = bad.unionByName(unknown.select(
        "file", "block", "row", "trace_id",
        F.concat(F.lit("unknown action "), F.col("action")).alias("reason"), "value",
        F.lit(True).alias("in_steps")))
    say("bad rows")
    bad = with_line_numbers(bad, lines.select("file", "block", "row"))
    # every string column valid UTF-8: the line's bytes that are not are written as U+FFFD
    bad = bad.select("file", "line", "trace_id", "reason",
                     F.substring(F.make_valid_utf8("value"), 1, 300).alias("text"), "in_steps")
    if bad_names:
        bad = bad.unionByName(_name_rows(spark, bad_names, True))
    bad_rows = write_read_back(bad.coalesce(1), out / "bad_rows")

    fps = states.filter(F.col("error").isNull()).select(*STATE_KEY, "fp")
    if n_states <= BROADCAST_STATES:
        fps = F.broadcast(fps)      # keys and fingerprints, not the text, to every task
    steps = judged_steps(step_lines.select("trace_id", "step", "time_ms", "action", "params",
                                           *STATE_KEY, "file").join(fps, list(STATE_KEY)))
    ok_steps = steps.select("trace_id", "step", "time_ms", "action", "params", *STATE_KEY, "fp",
                            "unknown_action", "bug", "bounds", "file",
                            F.coalesce("fault_profile", F.lit("unknown")).alias("fault_profile"),
                            F.coalesce("protocol", F.lit("unknown")).alias("protocol"),
                            F.coalesce("bounds_config", F.lit(UNSTATED_BOUNDS))
                            .alias("bounds_config"))
    say("steps table")
    (ok_steps.write.mode("overwrite").partitionBy(*PARTITION_COLUMNS)
     .parquet(str(out / "steps")))
    steps_t = read_back(spark, out / "steps", ok_steps.schema, PARTITION_COLUMNS)

    say("traces table")
    traces_t = read_back(spark, out / "traces",
                         _write_traces(lines, headers, steps_t, bad_rows, out),
                         PARTITION_COLUMNS)
    say("counting")
    counts = count_rows({"lines": lines, "steps": steps_t, "bad_rows": bad_rows,
                         "traces": traces_t})
    # the schemas the tables were written with: the caller reads them back without a job
    return {**counts, "distinct_states": n_states,
            "schemas": {"traces": traces_t.schema, "steps": steps_t.schema,
                        "states": states.schema, "bad_rows": bad_rows.schema}}


def _write_traces(lines: DataFrame, headers: DataFrame, steps: DataFrame, bad_rows: DataFrame,
                  out: Path) -> StructType:
    """Write out/traces (partitioned by PARTITION_COLUMNS); returns the schema written."""
    footers = (lines.filter((F.col("kind") == "footer") & F.col("reason").isNull())
               .groupBy("trace_id")
               .agg(F.count(F.lit(1)).alias("n_footers"),
                    F.first("steps").alias("footer_steps"),
                    F.first("end_reason").alias("end_reason"),
                    F.first(F.expr("filter(map_keys(invariants), k -> invariants[k] = 'violated')"))
                    .alias("violated")))
    agg = (steps.groupBy("trace_id")
           .agg(F.count(F.lit(1)).alias("n_steps"), F.min("step").alias("first_step"),
                F.max("step").alias("last_step"),
                # a set per trace merged from the tasks' partial sets: about 2.5x faster than
                # countDistinct, which shuffles every (trace, step)
                F.size(F.collect_set("step")).alias("distinct_steps"),
                (F.max("time_ms") - F.min("time_ms")).alias("duration_ms")))
    nbad = (bad_rows.filter(F.col("trace_id").isNotNull())
            .groupBy("trace_id").agg(F.count(F.lit(1)).alias("bad_rows"),
                                     F.sum(F.col("in_steps").cast("long")).alias("unknown_actions")))
    t = (headers.join(footers, "trace_id", "full").join(agg, "trace_id", "full")
         .join(nbad, "trace_id", "full")
         .withColumn("bad_rows", F.coalesce("bad_rows", F.lit(0)))
         .withColumn("unknown_actions", F.coalesce("unknown_actions", F.lit(0)))
         .withColumn("n_steps", F.coalesce("n_steps", F.lit(0))))
    problems = F.array_compact(F.array(
        F.when(F.col("n_headers").isNull(), F.lit("no header")),
        F.when(F.col("n_headers") > 1, F.lit("more than one header")),
        # two runs that wrote the same trace id: the corpus merges runs whose ids collide
        F.when(F.col("n_header_files") > 1,
               F.concat(F.lit("trace id in "), F.col("n_header_files").cast("string"),
                        F.lit(" files"))),
        F.when(F.col("n_footers").isNull(), F.lit("no footer")),
        F.when(F.col("n_footers") > 1, F.lit("more than one footer")),
        F.when(F.col("n_steps") == 0, F.lit("no steps")),
        F.when((F.col("n_steps") > 0) & ((F.col("first_step") != 0)
                                         | (F.col("distinct_steps") != F.col("n_steps"))
                                         | (F.col("last_step") != F.col("n_steps") - 1)),
               F.lit("steps are not 0..n")),
        F.when(F.col("footer_steps").isNotNull() & (F.col("n_steps") > 0)
               & (F.col("footer_steps") != F.col("n_steps") - 1),
               F.lit("footer step count differs")),
        # unknown actions alone do not make a trace incomplete (they stay in `steps`)
        F.when(F.col("bad_rows") > F.col("unknown_actions"), F.lit("has bad rows")),
    ))
    t = (t.select("trace_id", "file", F.coalesce("protocol", F.lit("unknown")).alias("protocol"),
                  F.coalesce("bounds_config", F.lit(UNSTATED_BOUNDS)).alias("bounds_config"),
                  "seed", F.coalesce("fault_profile", F.lit("unknown")).alias("fault_profile"),
                  F.coalesce("impl", F.lit("unknown")).alias("impl"),
                  "bug", "bounds", "spec_module", "n_steps", "duration_ms", "footer_steps",
                  "end_reason",
                  F.coalesce("violated", F.array().cast("array<string>")).alias("violated"),
                  "bad_rows", "unknown_actions", problems.alias("problems"))
         .withColumn("complete", F.size("problems") == 0))
    (t.repartition(*PARTITION_COLUMNS)
     .write.mode("overwrite").partitionBy(*PARTITION_COLUMNS).parquet(str(out / "traces")))
    return t.schema


def checker_summary_to_lines(path: Path, dest: Path) -> Path:
    """`kraftcheck validate` writes one JSON document (summary.json, or its --json output) whose
    `results` hold one verdict per trace file; write them as verdict JSON Lines."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise InputError(f"{path}: not a verdict file (JSON Lines) nor a `kraftcheck validate` "
                         "summary (a JSON object with `results`)")
    lines = []
    for r in doc["results"]:
        diag = r.get("diagnosis") or {}
        mal = r.get("malformed") or {}
        lines.append(json.dumps({
            "trace_id": r.get("trace_id"), "verdict": r.get("verdict"),
            "file": str(Path(r["file"]).resolve()) if r.get("file") else None,
            "step": r.get("failed_step", diag.get("step")),
            "claimed_action": diag.get("claimed_action"),
            "reason": r.get("reason") or mal.get("message") or diag.get("summary")}))
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def ingest_verdicts(spark: SparkSession, paths: list[str], out: Path) -> dict:
    """The trace checker's verdicts (JSON Lines, one verdict per trace, or the summary JSON of
    `kraftcheck validate`) -> out/verdicts, with bad lines in out/bad_rows_verdicts.  A verdict
    without trace_id (a malformed file) is matched to the traces of its file by `file`."""
    from spark_trace_analysis.schema import VERDICT
    conv = []
    paths, bad_names = split_file_names(paths)
    if not paths:
        raise _no_readable_file(bad_names)
    scratch = out / "_verdict_lines"
    for i, p in enumerate(paths):
        if p.endswith(".json"):
            scratch.mkdir(parents=True, exist_ok=True)
            conv.append(str(checker_summary_to_lines(Path(p), scratch / f"{i}.jsonl")))
        else:
            conv.append(p)
    lines = read_lines(spark, conv)
    j = F.from_json("value", VERDICT, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT})
    df = (lines.withColumn("j", j)
          .select("file", "block", "row", "value",
                  *[F.col(f"j.{f.name}").alias("vfile" if f.name == "file" else f.name)
                    for f in VERDICT.fields]))
    reason = _first_reason([
        (~F.is_valid_utf8("value"), F.lit("not UTF-8")),
        (F.trim("value") == "", F.lit("blank line")),
        (F.expr("try_parse_json(value)").isNull(), F.lit("not JSON")),
        (F.col(CORRUPT).isNotNull(), F.lit("a field has the wrong type")),
        (F.col("trace_id").isNull() & F.col("vfile").isNull(),
         F.lit("verdict: missing field trace_id")),
        (F.col("verdict").isNull(), F.lit("verdict: missing field verdict")),
        (~F.col("verdict").isin("valid", "invalid", "out_of_scope", "malformed"),
         F.concat(F.lit("unknown verdict "), F.col("verdict"))),
    ])
    df = df.withColumn("bad", reason).cache()
    bad = with_line_numbers(df.filter(F.col("bad").isNotNull()), df.select("file", "block", "row"))
    bad = bad.select(F.col("file"), "line", "trace_id", F.col("bad").alias("reason"),
                     F.substring(F.make_valid_utf8("value"), 1, 300).alias("text"))
    if bad_names:
        bad = bad.unionByName(_name_rows(spark, bad_names, False))
    bad = write_read_back(bad.coalesce(1), out / "bad_rows_verdicts")
    good = write_read_back(
        df.filter(F.col("bad").isNull())
        .select("trace_id", F.col("vfile").alias("file"), "verdict",
                F.col("step").alias("failing_step"),
                F.coalesce("claimed_action", "action").alias("claimed_action"),
                F.coalesce("reason", "detail").alias("detail"))
        .coalesce(2), out / "verdicts")
    n = count_rows({"verdicts": good, "bad_rows": bad})
    df.unpersist()
    remove(scratch)
    # the schemas the tables were written with: the caller reads them back without a job
    return {**n, "schemas": {"verdicts": good.schema, "bad_rows_verdicts": bad.schema}}


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
