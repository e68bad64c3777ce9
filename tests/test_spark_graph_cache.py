"""`--graph CONFIG` in the stats job: the trace checker's cached graph index is turned into
Parquet tables once (pyarrow, no rows through Spark) and kept under its key; the next run
reads them without loading the index (issue 34: stats on a small corpus in seconds)."""

from __future__ import annotations

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.manifest import load_manifest

pytestmark = [pytest.mark.tlc, pytest.mark.xdist_group("spark")]
FIXTURES = {e.name: e for e in load_manifest(REPO_ROOT / "tests/fixtures/tlc")}


def test_a_checker_graph_becomes_tables_once(tmp_path, monkeypatch, tlc_toolchain, spark_local):
    import trace_checker.fullgraph as fg
    from spark_trace_analysis.graph import load_graph_tables, spark_graph_dir
    monkeypatch.setenv("KRAFTCHECK_WORK", str(tmp_path / "work"))
    entry = FIXTURES["counter-ok"]          # 25 states, no symmetry: TLC dumps it in seconds
    monkeypatch.setattr(fg, "resolve_entry", lambda name, *a, **k: entry)
    spark = spark_local()       # the shared local[2] session (tests/conftest.py)
    g = load_graph_tables(spark, "counter", tmp_path / "one")
    states = sorted(tuple(r) for r in g.states.collect())
    edges = sorted(tuple(r) for r in g.edges.collect())
    assert len(states) == 25 and sum(1 for s in states if s[1]) == 1     # one initial state
    assert edges and "Inc" in {e[1] for e in edges} <= {"Inc", "Reset"}
    assert all("/\\ count = " in s[2] for s in states)
    d = spark_graph_dir(fg.graph_key(entry))
    assert (d / "graph_meta.json").is_file() and g.bounds == "tests/fixtures/tlc/counter-ok.cfg"
    # the second load reads the tables: the checker's index is not even loaded
    monkeypatch.setattr(fg, "load_graph", lambda *a, **k: pytest.fail("index loaded again"))
    again = load_graph_tables(spark, "counter", tmp_path / "two")
    assert sorted(tuple(r) for r in again.states.collect()) == states
    assert sorted(tuple(r) for r in again.edges.collect()) == edges
    assert (again.name, again.protocol, again.bounds) == ("counter", g.protocol, g.bounds)
