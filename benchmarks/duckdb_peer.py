"""The single-node peer of the Spark stats job in benchmarks/bench_spark.py: the same statistics
with DuckDB (a benchmark-only dependency: `pip install -e .[bench]`), over the same corpus.

Same architecture as the Spark job, so the comparison is of engines, not of algorithms: one scan
of the JSON Lines (read_json with an explicit column list, nothing inferred) into a staging
Parquet file; Python only over the DISTINCT state texts (the same `observe.state_info` the Spark
job's Arrow UDF calls: fingerprint and observation, once per distinct state); then SQL:

  steps             Parquet partitioned by protocol and bounds_config, with fp and observations
  states            each distinct state's text, fingerprint and observations, once
  traces            n_steps, duration_ms, problems, complete (the form rules of ingest)
  verdicts          unchecked / malformed (no graph, no verdict file: form only)
  conformance       per protocol x fault profile x bug
  actions           per protocol x action: steps, traces
  election_latency  window functions over each trace (metrics.per_step's definitions)
  commit_latency    first-reach times of log offsets (running maxima), joined
  coverage          distinct states and distinct transitions (state k-1, action, state k)

It assumes a well-formed corpus (the generated ones are): a line DuckDB cannot read stops the
run with DuckDB's error, where the Spark job records a bad row.  The per-trace metrics table
(truncations, HWM lag, data loss) is not computed here.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

COLUMNS = {
    "kind": "VARCHAR", "schema": "VARCHAR", "trace_id": "VARCHAR", "protocol": "VARCHAR",
    "seed": "BIGINT", "fault_profile": "VARCHAR", "bug": "VARCHAR", "bounds": "JSON",
    "spec_module": "VARCHAR", "step": "BIGINT", "time_ms": "BIGINT", "action": "VARCHAR",
    "params": "JSON", "state": "JSON", "steps": "BIGINT", "end_reason": "VARCHAR",
    "invariants": "JSON",
}

BOUNDS_CONFIG = """coalesce(nullif(CASE json_type(bounds)
    WHEN 'OBJECT' THEN json_extract_string(bounds, '$.file')
    WHEN 'VARCHAR' THEN json_extract_string(bounds, '$') END, ''), 'unstated')"""


def _state_rows(texts: list[str]):
    """(state, fp, has_obs, leader, epoch, hwm_max, max_len) of each distinct state text."""
    import pyarrow as pa

    from spark_trace_analysis.observe import state_info
    cols: dict[str, list] = {k: [] for k in ("state", "fp", "has_obs", "leader", "epoch",
                                             "hwm_max", "max_len")}
    for t in texts:
        fp, err, obs = state_info(t)
        if err is not None:
            raise ValueError(f"a state is not ITF ({err}); the DuckDB peer needs a clean corpus")
        cols["state"].append(t)
        cols["fp"].append(fp)
        cols["has_obs"].append(obs is not None)
        o = obs or {}
        cols["leader"].append(o.get("leader"))
        cols["epoch"].append(o.get("epoch"))
        cols["hwm_max"].append(o.get("hwm_max"))
        cols["max_len"].append(max(o["log_lens"].values(), default=0) if obs else None)
    return pa.table(cols)


def run(corpus: Path, out: Path, threads: int = 2, memory_limit: str = "3GB") -> dict:
    import duckdb
    t0 = time.monotonic()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files = sorted(str(f.resolve()) for f in corpus.rglob("*.jsonl") if f.is_file())
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute(f"SET temp_directory = '{out / '_spill'}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items()) + "}"
    staging = out / "_staging.parquet"
    con.execute(f"""COPY (SELECT * FROM read_json(?, format = 'newline_delimited',
                    columns = {cols}, filename = true, maximum_object_size = 16777216))
                    TO '{staging}' (FORMAT parquet)""", [files])
    con.execute(f"CREATE VIEW lines AS SELECT * FROM read_parquet('{staging}')")
    texts = [r[0] for r in con.execute(
        "SELECT DISTINCT state::VARCHAR FROM lines WHERE kind = 'step'").fetchall()]
    states = _state_rows(texts)
    con.register("states", states)
    con.execute(f"""CREATE TEMP TABLE headers AS
        SELECT trace_id, count(*) AS n_headers, count(DISTINCT filename) AS n_header_files,
               coalesce(first(protocol), 'unknown') AS protocol,
               coalesce(first(fault_profile), 'unknown') AS fault_profile,
               first(bug) AS bug, {BOUNDS_CONFIG.replace('bounds', 'first(bounds)')}
               AS bounds_config
        FROM lines WHERE kind = 'header' GROUP BY trace_id""")
    con.execute(f"""COPY (
        SELECT l.trace_id, l.step, l.time_ms, l.action, l.params::VARCHAR AS params,
               s.fp, s.has_obs, s.leader, s.epoch, s.hwm_max,
               s.max_len, h.fault_profile, h.bug, l.filename AS file,
               coalesce(h.protocol, 'unknown') AS protocol,
               coalesce(h.bounds_config, 'unstated') AS bounds_config
        FROM lines l JOIN states s ON l.state::VARCHAR = s.state
        LEFT JOIN headers h USING (trace_id) WHERE l.kind = 'step')
        TO '{out / 'steps'}' (FORMAT parquet, PARTITION_BY (protocol, bounds_config))""")
    # as Spark's layout, each distinct state's text once in `states`, none in `steps` (which
    # keep the fingerprint and the scalar observations the SQL below reads)
    con.execute(f"COPY (SELECT * FROM states) TO '{out / 'states.parquet'}' (FORMAT parquet)")
    con.execute(f"""CREATE VIEW steps AS SELECT * FROM
                    read_parquet('{out / 'steps'}/**/*.parquet', hive_partitioning = true)""")
    con.execute("""CREATE TEMP TABLE traces AS
        WITH f AS (SELECT trace_id, count(*) AS n_footers, first(steps) AS footer_steps
                   FROM lines WHERE kind = 'footer' GROUP BY trace_id),
             a AS (SELECT trace_id, count(*) AS n_steps, min(step) AS first_step,
                          max(step) AS last_step, count(DISTINCT step) AS distinct_steps,
                          max(time_ms) - min(time_ms) AS duration_ms
                   FROM steps GROUP BY trace_id),
             t AS (SELECT * FROM headers FULL JOIN f USING (trace_id)
                   FULL JOIN a USING (trace_id))
        SELECT trace_id, coalesce(protocol, 'unknown') AS protocol,
               coalesce(fault_profile, 'unknown') AS fault_profile, bug,
               coalesce(bounds_config, 'unstated') AS bounds_config,
               coalesce(n_steps, 0) AS n_steps, duration_ms,
               list_filter([
                 CASE WHEN n_headers IS NULL THEN 'no header' END,
                 CASE WHEN n_headers > 1 THEN 'more than one header' END,
                 CASE WHEN n_header_files > 1
                      THEN 'trace id in ' || n_header_files || ' files' END,
                 CASE WHEN n_footers IS NULL THEN 'no footer' END,
                 CASE WHEN n_footers > 1 THEN 'more than one footer' END,
                 CASE WHEN coalesce(n_steps, 0) = 0 THEN 'no steps' END,
                 CASE WHEN n_steps > 0 AND (first_step <> 0 OR distinct_steps <> n_steps
                                            OR last_step <> n_steps - 1)
                      THEN 'steps are not 0..n' END,
                 CASE WHEN footer_steps IS NOT NULL AND n_steps > 0
                           AND footer_steps <> n_steps - 1
                      THEN 'footer step count differs' END], lambda x: x IS NOT NULL) AS problems
        FROM t""")
    con.execute("ALTER TABLE traces ADD COLUMN complete BOOLEAN")
    con.execute("UPDATE traces SET complete = len(problems) = 0")
    con.execute(f"""COPY traces TO '{out / 'traces'}'
                    (FORMAT parquet, PARTITION_BY (protocol, bounds_config))""")
    verdicts = dict(con.execute(
        "SELECT CASE WHEN complete THEN 'unchecked' ELSE 'malformed' END AS v, count(*) "
        "FROM traces GROUP BY v").fetchall())
    con.execute(f"""COPY (
        SELECT protocol, fault_profile, coalesce(bug, 'none') AS bug, count(*) AS traces,
               0::BIGINT AS traces_valid, 0::BIGINT AS traces_invalid,
               0::BIGINT AS traces_out_of_scope,
               count(*) FILTER (WHERE NOT complete) AS traces_malformed,
               count(*) FILTER (WHERE complete) AS traces_unchecked,
               0::BIGINT AS steps_valid, 0::BIGINT AS steps_invalid,
               coalesce(sum(n_steps) FILTER (WHERE complete), 0)::BIGINT AS steps_unchecked,
               0::BIGINT AS steps_out_of_scope,
               coalesce(sum(n_steps) FILTER (WHERE NOT complete), 0)::BIGINT AS steps_malformed
        FROM traces GROUP BY ALL ORDER BY ALL) TO '{out / 'conformance.parquet'}'""")
    con.execute(f"""COPY (
        SELECT protocol, action, count(*) AS steps, count(DISTINCT trace_id) AS traces,
               0::BIGINT AS failures
        FROM steps GROUP BY protocol, action) TO '{out / 'actions.parquet'}'""")
    # metrics.per_step's definitions, the columns the latencies need
    con.execute("""CREATE TEMP TABLE ps AS
        WITH s AS (
          SELECT trace_id, protocol, fault_profile, coalesce(bug, 'none') AS bug,
                 bounds_config, step, time_ms, leader, epoch, hwm_max, max_len,
                 lag(leader) OVER w AS prev_leader, lag(epoch) OVER w AS prev_epoch,
                 max(max_len) OVER (w ROWS UNBOUNDED PRECEDING) AS run_len,
                 max(hwm_max) OVER (w ROWS UNBOUNDED PRECEDING) AS run_hwm
          FROM steps WHERE has_obs WINDOW w AS (PARTITION BY trace_id ORDER BY step))
        SELECT *,
               last_value(CASE WHEN leader IS NULL AND (prev_leader IS NOT NULL OR step = 0)
                               THEN time_ms END IGNORE NULLS)
                 OVER (PARTITION BY trace_id ORDER BY step ROWS UNBOUNDED PRECEDING) AS lost_at,
               coalesce(lag(run_len) OVER (PARTITION BY trace_id ORDER BY step), 0) AS prev_len,
               coalesce(lag(run_hwm) OVER (PARTITION BY trace_id ORDER BY step), 0) AS prev_hwm
        FROM s""")
    con.execute(f"""COPY (
        SELECT trace_id, protocol, fault_profile, bug, bounds_config, step, time_ms, leader,
               epoch, CASE WHEN prev_leader IS NULL AND lost_at IS NOT NULL
                           THEN time_ms - lost_at ELSE 0 END AS latency_ms
        FROM ps WHERE coalesce(leader IS NOT NULL AND (prev_leader IS NULL
                                OR leader <> prev_leader OR epoch <> prev_epoch), false))
        TO '{out / 'election_latency.parquet'}'""")
    con.execute(f"""COPY (
        WITH ap AS (SELECT trace_id, protocol, fault_profile, bug, bounds_config,
                           unnest(range(prev_len + 1, run_len + 1)) AS "offset",
                           time_ms AS appended_ms FROM ps WHERE run_len > prev_len),
             cm AS (SELECT trace_id, unnest(range(prev_hwm + 1, run_hwm + 1)) AS "offset",
                           time_ms AS committed_ms FROM ps WHERE run_hwm > prev_hwm)
        SELECT ap.*, committed_ms, committed_ms - appended_ms AS latency_ms
        FROM ap JOIN cm USING (trace_id, "offset"))
        TO '{out / 'commit_latency.parquet'}'""")
    n_states, n_edges = con.execute("""
        WITH e AS (SELECT lag(fp) OVER (PARTITION BY trace_id ORDER BY step) AS src, action,
                          fp FROM steps)
        SELECT (SELECT count(DISTINCT fp) FROM steps),
               (SELECT count(*) FROM (SELECT DISTINCT src, action, fp FROM e
                                      WHERE src IS NOT NULL))""").fetchone()
    n_lines = con.execute("SELECT count(*) FROM lines").fetchone()[0]
    n_steps = con.execute("SELECT count(*) FROM steps").fetchone()[0]
    n_traces = con.execute("SELECT count(*) FROM traces").fetchone()[0]
    lat = {name: con.execute(
        f"SELECT count(*), quantile_disc(latency_ms, 0.5), quantile_disc(latency_ms, 0.95), "
        f"max(latency_ms) FROM '{out / (name + '.parquet')}'").fetchone()
        for name in ("election_latency", "commit_latency")}
    con.close()
    staging.unlink()
    shutil.rmtree(out / "_spill", ignore_errors=True)
    summary = {"traces": n_traces, "steps": n_steps, "lines": n_lines, "verdicts": verdicts,
               "distinct_states": n_states, "distinct_transitions": n_edges,
               "distinct_state_texts": len(texts),
               "latencies": {k: dict(zip(("n", "p50", "p95", "max"), v)) for k, v in lat.items()},
               "seconds": round(time.monotonic() - t0, 1)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
