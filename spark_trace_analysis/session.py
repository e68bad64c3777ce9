"""The Spark session every job runs in: embedded local[*] by default, or an existing cluster.

Settings this machine needs are set here, not by the user: Spark binds to loopback
(SPARK_LOCAL_IP, driver host and bind address 127.0.0.1), the web UI is off, memory is small,
shuffles use few partitions, and the Python workers run the interpreter of the driver (so they
see pyarrow and this project).  `--master spark://HOST:PORT` runs the same job on a cluster.
"""

from __future__ import annotations

import os
import sys

from kraftcheck.paths import REPO_ROOT, work_dir

__all__ = ["DEFAULT_MASTER", "get_session", "stop_session"]

DEFAULT_MASTER = "local[*]"


def _prepare_env() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Executors of a standalone cluster import this project's modules by path.
    pp = os.environ.get("PYTHONPATH", "")
    if str(REPO_ROOT) not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(REPO_ROOT), pp) if x)


def get_session(master: str | None = None, *, app_name: str = "kraftcheck-stats",
                shuffle_partitions: int = 8, driver_memory: str = "1g",
                executor_memory: str = "1g", extra: dict[str, str] | None = None):
    """A SparkSession on `master` (default local[*]); reuses the active one if it matches."""
    _prepare_env()
    from pyspark.sql import SparkSession

    master = master or os.environ.get("KRAFTCHECK_SPARK_MASTER") or DEFAULT_MASTER
    active = SparkSession.getActiveSession()
    if active is not None:
        if active.sparkContext.master == master:
            return active
        active.stop()
    local_dir = work_dir() / "spark"
    local_dir.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": driver_memory,
        "spark.executor.memory": executor_memory,
        "spark.sql.shuffle.partitions": os.environ.get("KRAFTCHECK_SPARK_SHUFFLE_PARTITIONS",
                                                       str(shuffle_partitions)),
        "spark.default.parallelism": str(max(2, shuffle_partitions)),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.local.dir": str(local_dir),
        "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"],
        "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
        "spark.executorEnv.PYSPARK_PYTHON": os.environ["PYSPARK_PYTHON"],
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={local_dir}",
    }
    if master.startswith("spark://"):
        conf["spark.cores.max"] = os.environ.get("KRAFTCHECK_SPARK_CORES", "2")
    conf.update(extra or {})
    b = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_session() -> None:
    from pyspark.sql import SparkSession

    s = SparkSession.getActiveSession()
    if s is not None:
        s.stop()

