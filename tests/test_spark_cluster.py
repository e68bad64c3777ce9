"""The same stats job on a standalone Spark cluster (a master and a worker started here on
127.0.0.1 with pyspark's bundled spark-class, always stopped) gives the same tables as the
embedded local session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "spark"
TABLES = ("traces", "conformance", "actions", "metrics", "election_latency", "commit_latency",
          "bad_rows", "metrics_by_profile")

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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import pyspark
    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_MEMORY="256m", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(work), SPARK_WORKER_DIR=str(work / "worker"))
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
                env=env, stdout=f, stderr=subprocess.STDOUT))
        _wait_for(mlog, "I have been elected leader", procs[0], 90)
        with open(wlog, "w") as f:
            procs.append(subprocess.Popen(
                [cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()),
                 "--work-dir", str(work / "worker")],
                env=env, stdout=f, stderr=subprocess.STDOUT))
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


def test_standalone_cluster_gives_the_local_result(cluster, tmp_path):
    from spark_trace_analysis.jobs import run_stats
    from spark_trace_analysis.session import get_session, stop_session

    get_session("local[2]", shuffle_partitions=2)
    local = run_stats([str(FIX / "corpus")], tmp_path / "local", master="local[2]")
    stop_session()
    try:
        get_session(cluster, shuffle_partitions=2, executor_memory="512m")
        remote = run_stats([str(FIX / "corpus")], tmp_path / "remote", master=cluster)
    finally:
        stop_session()
    assert remote["master"] == cluster and local["master"] == "local[2]"
    for k in ("traces", "steps", "lines", "bad_rows", "verdicts", "conformance"):
        assert remote[k] == local[k], k
    assert _tables(tmp_path / "remote") == _tables(tmp_path / "local")
    assert local["traces"] == 6 and local["bad_rows"] == 3
