"""The same stats job on a standalone Spark cluster (a master and a worker started here on
127.0.0.1 with pyspark's bundled spark-class, always stopped) gives the same tables as the
embedded local session, with the fixture state graph and verdicts: ingest, conformance,
metrics, distributed validation (whose graph is parsed by executors), agreement and coverage.

The master and worker run in a scratch folder, with no PYTHONPATH and no environment variable
naming the repository (SPARK_HOME, pyspark's own install, aside), and their executors run a
Python that has the third-party libraries but cannot import this project: the code reaches
them only as the archive `kraftcheck stats` ships (spark_trace_analysis.code_archive), which
a probe on the executors confirms."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT

FIX = Path(__file__).parent / "fixtures" / "spark"
TABLES = ("traces", "conformance", "actions", "metrics", "election_latency", "commit_latency",
          "bad_rows", "metrics_by_profile", "graph_states", "graph_edges", "validation",
          "disagreements", "first_failure", "coverage_summary", "coverage_actions",
          "coverage_traces", "unvisited_states", "bad_rows_verdicts", "election_latency_hist",
          "commit_latency_hist")
RUN = dict(graph=str(FIX / "graph.dot"), graph_bounds="tests/fixtures/spark/graph.cfg",
           verdicts=str(FIX / "verdicts.jsonl"))

pytestmark = pytest.mark.xdist_group("spark")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, needle: str, proc: subprocess.Popen, timeout: float) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if log.exists() and needle in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[-1]} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"no {needle!r} in {log} after {timeout} s")


def _outside_repo_env(**extra: str) -> dict[str, str]:
    """This process's environment less every variable that names the repository (PYTHONPATH,
    VIRTUAL_ENV, ...); PATH keeps only its entries outside the repository."""
    root = str(REPO_ROOT)
    env = {k: v for k, v in os.environ.items() if root not in v and k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                                  if p and not p.startswith(root))
    return dict(env, **extra)


@pytest.fixture(scope="module")
def worker_python(tmp_path_factory) -> str:
    """A Python for the executors with this venv's third-party packages (pyarrow, lark,
    pyspark) as a plain sys.path entry, so the venv's editable-install hook (a .pth file that
    maps kraftcheck & co. to the repository) never runs: the project is not importable."""
    import sysconfig
    import venv
    d = tmp_path_factory.mktemp("worker-python") / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(d)
    py = d / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    libs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "third_party.pth").write_text("".join(f"{p}\n" for p in sorted(libs)))
    env = _outside_repo_env()
    ok = subprocess.run([str(py), "-c", "import pyarrow, lark, pyspark"], env=env, cwd=d,
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    for pkg in ("kraftcheck", "spark_trace_analysis", "refimpl", "trace_checker"):
        r = subprocess.run([str(py), "-c", f"import {pkg}"], env=env, cwd=d,
                           capture_output=True, text=True)
        assert "ModuleNotFoundError" in r.stderr, (pkg, r.stderr)
    return str(py)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, worker_python):
    import pyspark

    from spark_trace_analysis.session import QUICK_JVM_OPTIONS
    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("cluster")
    # the master and the worker only start, register and hand out one small job: their JVMs
    # compile with C1 only, as the small job's driver and executors do (session.py)
    env = _outside_repo_env(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
                            SPARK_DAEMON_MEMORY="256m", SPARK_DAEMON_JAVA_OPTS=QUICK_JVM_OPTIONS,
                            PYSPARK_PYTHON=worker_python,
                            SPARK_LOG_DIR=str(work), SPARK_WORKER_DIR=str(work / "worker"))
    assert not [k for k, v in env.items() if str(REPO_ROOT) in v and k != "SPARK_HOME"]
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    cls = str(home / "bin" / "spark-class")
    procs = []
    try:
        mlog, wlog = work / "master.log", work / "worker.log"
        with open(mlog, "w") as f:
            procs.append(subprocess.Popen(
                [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())],
                env=env, cwd=work, stdout=f, stderr=subprocess.STDOUT))
        _wait_for(mlog, "I have been elected leader", procs[0], 90)
        with open(wlog, "w") as f:
            procs.append(subprocess.Popen(
                [cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()),
                 "--work-dir", str(work / "worker")],
                env=env, cwd=work, stdout=f, stderr=subprocess.STDOUT))
        _wait_for(wlog, "Successfully registered with master", procs[1], 90)
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _tables(out: Path) -> dict[str, list]:
    import pyarrow.parquet as pq
    res = {}
    for t in TABLES:
        rows = pq.read_table(out / t).to_pylist()
        res[t] = sorted(rows, key=lambda r: repr(sorted(r.items())))
    return res


def test_standalone_cluster_gives_the_local_result(cluster, worker_python, tmp_path,
                                                   monkeypatch, fixture_stats):
    """The local result is conftest.fixture_stats: the same job (RUN: the same corpus, graph,
    bounds and verdicts) on the embedded local[2] session, run once per test run."""
    import pyspark

    from spark_trace_analysis.jobs import run_stats
    from spark_trace_analysis.session import get_session, stop_session

    spark_home = Path(pyspark.__file__).parent
    local, local_out = fixture_stats
    stop_session()      # the shared local session; the next Spark test starts it again

    def probe(_rows):
        """Runs on an executor: where the job's modules came from (a nested function is
        pickled by value, so the worker needs no test module)."""
        import os
        import sys

        import kraftcore.values
        import spark_trace_analysis.graph
        import spark_trace_analysis.ingest
        yield {"files": [m.__file__ for m in (kraftcore.values, spark_trace_analysis.ingest,
                                               spark_trace_analysis.graph)],
               "cwd": os.getcwd(), "sys_path": list(sys.path),
               "finders": [repr(f) for f in sys.meta_path],
               "pythonpath": os.environ.get("PYTHONPATH", "")}

    # the executors' Python cannot import the project (fixture worker_python)
    monkeypatch.setenv("PYSPARK_PYTHON", worker_python)
    try:
        sc = get_session(cluster, shuffle_partitions=2, executor_memory="512m",
                         small_input=True).sparkContext
        remote = run_stats([str(FIX / "corpus")], tmp_path / "remote", master=cluster, **RUN)
        probes = sc.parallelize(range(2), 2).mapPartitions(probe).collect()
        shipped = list(sc._python_includes)
    finally:
        stop_session()
    assert len(shipped) == 1, shipped
    archive = shipped[0]
    assert archive.startswith("kraftcheck-code-") and archive.endswith(".zip")
    assert len(probes) == 2
    for p in probes:
        # every project module the UDFs use came out of the shipped zip...
        for f in p["files"]:
            assert f"/{archive}/" in f and not f.startswith(str(REPO_ROOT)), p
        # ...and nothing else on the executor could have provided it
        assert not p["cwd"].startswith(str(REPO_ROOT)), p
        # (PYTHONPATH holds Spark's own pyspark.zip and py4j from SPARK_HOME, nothing else)
        assert [e for e in p["pythonpath"].split(os.pathsep) if e.startswith(str(REPO_ROOT))
                and not e.startswith(str(spark_home))] == [], p
        assert not any("editable" in f.lower() for f in p["finders"]), p
        entries = [Path(p["cwd"], e).resolve() for e in p["sys_path"]]   # as the executor sees them
        holders = [e for e in entries if (e / "kraftcheck").is_dir() or e == REPO_ROOT]
        assert holders == [], p
    assert remote["master"] == cluster and local["master"] == "local[2]"
    for k in ("traces", "steps", "lines", "bad_rows", "verdicts", "conformance", "agreement",
              "coverage", "coverage_bounds", "coverage_excluded_traces", "verdict_bad_rows",
              "actions_never_exercised"):
        assert remote[k] == local[k], k
    remote_t, local_t = _tables(tmp_path / "remote"), _tables(local_out)
    for t in TABLES:
        assert remote_t[t] == local_t[t], t
    # the cluster's own answers, not only equal to the local ones (test_spark_stats.py has
    # the full expected tables)
    assert (remote["traces"], remote["bad_rows"]) == (8, 4)
    v = {r["trace_id"]: (r["verdict"], r["failing_step"], r["left_graph_at_step"])
         for r in remote_t["validation"]}
    assert v == {"t-valid": ("valid", None, None), "t-trunc": ("valid", None, None),
                 "t-bug": ("invalid", 6, 6), "t-unknown": ("invalid", 2, 2),
                 "t-wide": ("out_of_scope", None, 2), "t-elr": ("out_of_scope", None, None),
                 "t-nofooter": ("malformed", None, None), "t-bad": ("malformed", None, None)}
    assert remote["agreement"] == {"compared": 8, "agree": 7, "disagree": 1,
                                   "checker_only": 0, "spark_only": 0, "judged_in_graph": 6,
                                   "agree_in_graph": 6}
    assert [r["trace_id"] for r in remote_t["disagreements"]] == ["t-wide"]
    c = remote_t["coverage_summary"][0]
    assert (c["states"], c["states_visited"], c["edges"], c["edges_visited"], c["actions"],
            c["actions_visited"], c["trace_states_outside"], c["traces_other_bounds"]) == \
        (22, 19, 22, 18, 9, 8, 1, 1)
    assert len(remote_t["graph_states"]) == 22 and len(remote_t["graph_edges"]) == 22
    assert remote["actions_never_exercised"] == ["Resign"]
