"""Shared fixtures: TLC availability and the repository root."""

from __future__ import annotations

import os

import pytest

from kraftcore.tlc.java import ToolchainError, toolchain

# Hypothesis: deterministic, CI-friendly defaults (no deadline: the machine is shared).
from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=200, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# Under pytest-xdist (`make test`: -n 3 on two cores) the test processes may run TLC at once: one
# TLC worker each shares the cores best (TLC's single-threaded phases overlap; the same as
# `kraftcheck tlc suite --jobs 2`).  Every pinned ci count holds with one worker.  The third xdist
# worker fills the time the others spend waiting on child processes (JVM start-up of TLC, the
# Kafka harness and Spark): with two, the cores were busy 173 % of the run, with three 179 %
# (2026-11-28).  A fourth made the run slower (2026-11-29: 36 % of the tests done after 21 min,
# against 20 min 34 s for the whole run with three).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("KRAFTCHECK_TLC_WORKERS", "1")

# The Spark driver's class-data archive (spark_trace_analysis/cds.py) is mapped when it exists
# but never trained by the tests: on a fresh machine its minute of CPU is more than the few
# driver JVMs the suite starts after it would save.  (TLC's and the harness's archives, a
# second or two each to train, are: tests/test_jvm_cds.py.)
os.environ.setdefault("KRAFTCHECK_SPARK_CDS_TRAIN", "0")


@pytest.fixture(scope="session")
def tlc_toolchain():
    try:
        return toolchain()
    except ToolchainError as e:  # pragma: no cover - CI installs Java via `make test`
        pytest.fail(f"TLC toolchain unusable: {e}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Make `--dist loadgroup` group again.  pytest-xdist 3.8 marks a grouped test by appending
    "@group" to Node._nodeid, which pytest 9.2 no longer reads (Node.nodeid is str(Node._id)):
    the xdist_group marks were silently ignored and grouped tests (TLC graph builds, Spark
    sessions) spread over both processes.  Do the same on Node._id."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import coerce_node_id
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = coerce_node_id(item.nodeid + suffix)
    items.sort(key=_start_early)


def _start_early(item) -> int:
    """Longest first (`make test` runs xdist with --no-loadscope-reorder, so this order is the
    order work starts in): the Spark group, then each TLC config's test by its estimated run
    time (pinned states; liveness and KIP-642 configs are slower per state), then the rest in
    collection order (sort is stable).  A long run started last would run alone at the end."""
    groups = [str(m.args[0] if m.args else m.kwargs.get("name", ""))
              for m in item.iter_markers("xdist_group")]
    if "spark" in groups:
        return -10**9
    name = next((g.split(":", 1)[1] for g in groups if g.startswith("tlc:")), None)
    if name is None:
        return 0
    from tlc_memo import ENTRIES
    e = ENTRIES.get(name)
    if e is None:
        return 0
    cost = e.distinct_states or 20_000
    if "liveness" in name:
        cost *= 40
    elif e.protocol == "reassign":
        cost *= 6
    return -cost


def pytest_addoption(parser):
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="tests/test_transcripts.py: write the actual outputs into the "
                          "transcripts instead of comparing")


# ------------------------------------------------------------------ Spark (xdist_group "spark")
# Every Spark test runs in the one process of the "spark" group and shares ONE embedded session
# (local[2]): get_session returns the active session when the master matches, so the JVM and
# its Python workers start once per test run instead of once per module.
# (test_spark_cluster.py stops it for its cluster run; the next user starts it again.)
SPARK_MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark_local():
    """A function returning the shared local[2] session (started again if a test stopped it);
    stopped at the end of the test run."""
    from spark_trace_analysis.session import get_session, stop_session

    def session():   # the tests' corpora are small: C1-only JVM (session.QUICK_JVM_OPTIONS)
        return get_session(SPARK_MASTER, shuffle_partitions=2, small_input=True)
    session()
    yield session
    stop_session()


@pytest.fixture(scope="session")
def fixture_stats(spark_local, tmp_path_factory):
    """`run_stats` on the hand-made fixture corpus (tests/fixtures/spark) with its dot graph,
    bounds and checker verdicts, run ONCE per test run: test_spark_stats.py asserts its tables,
    test_spark_cluster.py compares the standalone cluster's run of the same job with it.
    Returns (summary, out folder); callers get a copy of the summary."""
    from pathlib import Path

    from spark_trace_analysis.jobs import run_stats
    fix = Path(__file__).parent / "fixtures" / "spark"
    spark_local()
    out = tmp_path_factory.mktemp("fixture-stats") / "out"
    summary = run_stats([str(fix / "corpus")], out, graph=str(fix / "graph.dot"),
                        verdicts=str(fix / "verdicts.jsonl"), master=SPARK_MASTER,
                        graph_bounds="tests/fixtures/spark/graph.cfg")
    return summary, out
