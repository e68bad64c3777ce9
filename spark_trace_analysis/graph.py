"""The spec's state graph as two Parquet tables: `graph_states` (fp, initial, label) and
`graph_edges` (src_fp, action, dst_fp).

Fingerprints are `kraftcore.values.fingerprint` of the state (an Fn from spec variable to
canonical value), the same as trace states get in ingest, so the tables join with `steps`.

Sources (`--graph`):
  * a TLC dump `FILE.dot` written with `-dump dot,actionlabels`: parsed inside Spark, one UDF
    call per state label (kraftcore.tla_values.parse_state), so large graphs load in parallel;
  * a manifest config name (e.g. `kraft-graph-small`): the trace checker's cached graph index
    (trace_checker.fullgraph.load_graph, which runs TLC once and caches the parse), turned
    once into Parquet tables written by pyarrow (no Spark job, no rows sent through the JVM)
    and kept beside the checker's index under the same key (spark_graph_dir): the next run
    reads them as they are;
  * a folder holding `graph_states/` and `graph_edges/` from an earlier run (reused as is).

The graph's bounds (the config it was explored under, used by coverage to leave out traces of
other bounds) are the manifest entry's .cfg for a config name; for a dot dump they are not
recorded in the file, so `--graph-bounds CFG` states them; an earlier run's folder keeps them in
graph_meta.json.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

__all__ = ["GraphError", "GraphTables", "load_graph_tables", "parse_label", "prepare_graph"]

_NODE = r'^(-?\d+) \[label="((?:[^"\\]|\\.)*)"(,style = filled)?\];?\s*$'
_EDGE = r'^(-?\d+) -> (-?\d+)(?: \[label="((?:[^"\\]|\\.)*)"[^\]]*\])?;?\s*$'
_ESC = re.compile(r"\\(.)", re.S)

_PARSED = T.StructType([T.StructField("fp", T.StringType()), T.StructField("text", T.StringType()),
                        T.StructField("error", T.StringType())])


class GraphError(ValueError):
    """The graph source cannot be read or holds something that is not a TLC state graph."""


@dataclass
class GraphTables:
    name: str
    states: DataFrame | None   # fp, initial, label (None: the `cached` tables, not read yet)
    edges: DataFrame | None    # src_fp, action, dst_fp
    protocol: str | None
    bounds: str | None = None   # the config file the graph was explored under, when known
    actions: set[str] | None = None   # the edges' actions, when known without a Spark job
    # the checker's cached tables (spark_graph_dir) these were read from: copied as they are
    cached: Path | None = None


def parse_label(label: str) -> tuple[str, str]:
    """A dot-escaped state label -> (fingerprint, state text)."""
    from kraftcore.tla_values import parse_state
    from kraftcore.values import fingerprint
    text = _ESC.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), label)
    return fingerprint(parse_state(text)), text


@F.arrow_udf(_PARSED)
def _parse_labels(labels: pa.Array) -> pa.Array:
    out = []
    for lab in labels.to_pylist():
        try:
            fp, text = parse_label(lab)
            out.append({"fp": fp, "text": text, "error": None})
        except ValueError as e:
            out.append({"fp": None, "text": None, "error": str(e)[:300]})
    return pa.array(out, type=pa.struct([("fp", pa.string()), ("text", pa.string()),
                                         ("error", pa.string())]))


def _protocol_of(label: str | None) -> str | None:
    if not label:
        return None
    if re.search(r"\bcurrentEpoch = ", label):
        return "kraft"
    if re.search(r"\bleaderEpoch = ", label):
        return "elr"
    return None


def _from_dot(spark: SparkSession, path: Path) -> GraphTables:
    lines = spark.read.text(str(path))
    nodes = (lines.select(F.regexp_extract("value", _NODE, 1).alias("tid"),
                          F.regexp_extract("value", _NODE, 2).alias("label"),
                          (F.regexp_extract("value", _NODE, 3) != "").alias("initial"))
             .filter(F.col("tid") != ""))
    nodes = nodes.withColumn("p", _parse_labels("label")).select(
        F.col("tid").cast("long").alias("tid"), "initial", F.col("p.fp").alias("fp"),
        F.col("p.text").alias("label"), F.col("p.error").alias("error")).cache()
    bad = nodes.filter(F.col("error").isNotNull()).select("tid", "error").limit(3).collect()
    if bad:
        nodes.unpersist()
        raise GraphError(f"{path}: state {bad[0].tid} is not a TLA+ state: {bad[0].error}")
    if nodes.limit(1).count() == 0:
        nodes.unpersist()
        raise GraphError(f"{path}: no state in this file; expected a TLC `-dump dot,actionlabels`"
                         " state graph")
    edges = (lines.select(F.regexp_extract("value", _EDGE, 1).alias("src"),
                          F.regexp_extract("value", _EDGE, 2).alias("dst"),
                          F.regexp_extract("value", _EDGE, 3).alias("action"))
             .filter(F.col("src") != "")
             .select(F.col("src").cast("long").alias("src"), F.col("dst").cast("long").alias("dst"),
                     "action"))
    ids = nodes.select("tid", "fp")
    e = (edges.join(ids.withColumnRenamed("tid", "src").withColumnRenamed("fp", "src_fp"), "src")
         .join(ids.withColumnRenamed("tid", "dst").withColumnRenamed("fp", "dst_fp"), "dst")
         .select("src_fp", "action", "dst_fp").distinct())
    states = (nodes.groupBy("fp").agg(F.max("initial").alias("initial"),
                                      F.first("label").alias("label")))
    first = nodes.select("label").first()
    return GraphTables(path.stem, states, e, _protocol_of(first.label if first else None))


# the layout of the Parquet tables kept for a checker graph; a change gives new folders
SPARK_GRAPH_FORMAT = 1


def spark_graph_dir(key: str) -> Path:
    """Where the Spark tables of the checker's graph index `key` are kept (work folder)."""
    from kraftcore.paths import work_dir
    return work_dir() / "trace_checker" / "spark-graphs" / f"{key}.s{SPARK_GRAPH_FORMAT}"


def _write_checker_tables(name: str, entry, d: Path) -> None:
    """The checker's graph as graph_states/ and graph_edges/ Parquet (pyarrow) in `d`,
    written under a temporary name and renamed, so a reader never sees a partial folder."""
    import os
    import shutil
    import tempfile

    import pyarrow.parquet as pq
    from trace_checker.fullgraph import load_graph
    from kraftcore.values import to_tla
    g = load_graph(entry).graph
    fps = [g.fingerprint(i) for i in range(len(g))]
    init = set(g.initial)
    labels = ["\n".join(f"/\\ {k} = {to_tla(v)}" for k, v in sorted(g.state(i).items()))
              for i in range(len(fps))]
    edges = sorted({(fps[s], g.actions[a], fps[t]) for s, lst in enumerate(g.succ)
                    for a, t in lst})
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
    try:
        (tmp / "graph_states").mkdir()
        (tmp / "graph_edges").mkdir()
        pq.write_table(pa.table({"fp": pa.array(fps, pa.string()),
                                 "initial": pa.array([i in init for i in range(len(fps))],
                                                     pa.bool_()),
                                 "label": pa.array(labels, pa.string())}),
                       tmp / "graph_states" / "part-0.parquet")
        pq.write_table(pa.table({"src_fp": pa.array([e[0] for e in edges], pa.string()),
                                 "action": pa.array([e[1] for e in edges], pa.string()),
                                 "dst_fp": pa.array([e[2] for e in edges], pa.string())}),
                       tmp / "graph_edges" / "part-0.parquet")
        (tmp / "graph_meta.json").write_text(json.dumps(
            {"name": name, "protocol": _protocol_of(labels[0] if labels else None),
             "bounds": _display(str(entry.cfg_path)), "states": len(fps),
             "edges": len(edges)}, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o755)   # mkdtemp made it 0700; a cache folder like any other
        try:
            os.replace(tmp, d)
        except OSError:        # another process wrote the same tables first: theirs serve
            if not (d / "graph_meta.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _from_checker(name: str) -> GraphTables:
    try:
        from trace_checker.fullgraph import check_graph_config, graph_key, resolve_entry
    except ImportError as e:
        raise GraphError(f"{name}: not a .dot file, and the trace checker's graph index is not "
                         f"available ({e})") from None
    try:
        entry = resolve_entry(name)
        check_graph_config(entry)
        d = spark_graph_dir(graph_key(entry))
        if not (d / "graph_meta.json").is_file():
            _write_checker_tables(name, entry, d)
        meta = json.loads((d / "graph_meta.json").read_text(encoding="utf-8"))
    except Exception as e:  # unknown config, symmetry, TLC failure: the checker says which
        raise GraphError(f"{name}: {e}") from None
    import pyarrow.parquet as pq
    actions = set(pq.read_table(d / "graph_edges", columns=["action"])
                  .column("action").unique().to_pylist())
    return GraphTables(name, None, None, meta.get("protocol"), _display(str(entry.cfg_path)),
                       actions, d)


def _display(path: str) -> str:
    """A config path relative to the repository when it lies inside it."""
    from kraftcore.paths import REPO_ROOT
    p = Path(path)
    try:
        return str(p.resolve().relative_to(REPO_ROOT.resolve())) if p.is_absolute() else path
    except ValueError:
        return path


# The cached tables' schemas (_write_checker_tables), so reading them needs no Spark job to
# infer one from the files' footers.
CACHED_STATES = "fp string, initial boolean, label string"
CACHED_EDGES = "src_fp string, action string, dst_fp string"


def prepare_graph(source: str) -> GraphTables | None:
    """The part of loading `source` that needs no Spark: for a manifest config name, the
    checker's cached tables (built once, `_write_checker_tables`) and what is known of them;
    None for a dot file or an earlier run's folder (read by Spark in load_graph_tables).  The
    stats job runs it while the Spark driver starts (jobs.run_stats)."""
    p = Path(source)
    if ((p.is_dir() and (p / "graph_states").is_dir() and (p / "graph_edges").is_dir())
            or p.is_file()):
        return None
    if p.suffix == ".dot" or "/" in source:
        raise GraphError(f"{source}: no such file")
    return _from_checker(source)


def load_graph_tables(spark: SparkSession, source: str, out: Path,
                      bounds: str | None = None,
                      prepared: GraphTables | None = None) -> GraphTables:
    """Load the graph from `source` and write out/graph_states, out/graph_edges and
    out/graph_meta.json.  `bounds`: the config the graph was explored under (--graph-bounds);
    an error when the source records another one.  `prepared`: prepare_graph(source), when
    the caller ran it already."""
    from spark_trace_analysis.coverage import bounds_key
    p = Path(source)
    if prepared is None:
        prepared = prepare_graph(source)
    if prepared is not None:
        g = prepared
        g_name = source
    elif p.is_dir():
        s = spark.read.parquet(str(p / "graph_states"))
        first = s.select("label").first()
        meta = {}
        if (p / "graph_meta.json").is_file():
            try:
                meta = json.loads((p / "graph_meta.json").read_text(encoding="utf-8"))
            except ValueError as e:
                raise GraphError(f"{p / 'graph_meta.json'}: not JSON ({e})") from None
        g = GraphTables(p.name, s, spark.read.parquet(str(p / "graph_edges")),
                        _protocol_of(first.label if first else None), meta.get("bounds"))
        g_name = g.name
    else:
        g = _from_dot(spark, p)
        g_name = g.name
    if bounds is not None:
        if g.bounds is not None and bounds_key(g.bounds) != bounds_key(bounds):
            raise GraphError(f"--graph-bounds {bounds}: the graph {source} was explored under "
                             f"{g.bounds}")
        g.bounds = bounds
    if g.cached is not None:   # the checker's tables, one pyarrow file each: copied, no job
        import shutil
        for t in ("graph_states", "graph_edges"):
            shutil.rmtree(out / t, ignore_errors=True)
            shutil.copytree(g.cached / t, out / t)
    else:
        g.states.coalesce(4).write.mode("overwrite").parquet(str(out / "graph_states"))
        g.edges.coalesce(4).write.mode("overwrite").parquet(str(out / "graph_edges"))
    from kraftcore.output import write_atomic
    write_atomic(out / "graph_meta.json", json.dumps(
        {"name": g_name, "protocol": g.protocol, "bounds": g.bounds}, indent=2) + "\n")
    if g.cached is not None:
        states = spark.read.schema(CACHED_STATES).parquet(str(out / "graph_states"))
        edges = spark.read.schema(CACHED_EDGES).parquet(str(out / "graph_edges"))
    else:
        states = spark.read.parquet(str(out / "graph_states"))
        edges = spark.read.parquet(str(out / "graph_edges"))
    return GraphTables(g_name, states, edges, g.protocol, g.bounds, g.actions)
