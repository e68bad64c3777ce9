"""The Spark session every job runs in: embedded local[*] by default, or an existing cluster.

Settings this machine needs are set here, not by the user: the web UI is off, memory is small,
shuffles use few partitions, and the Python workers run the interpreter of the driver (so they
see pyarrow and this project).  `--master spark://HOST:PORT` runs the same job on a cluster.

The driver JVM's output (log4j, JVM warnings) goes to driver_log(), not to the terminal; a
command that fails because Spark failed names that file.

Where the driver listens depends on the master (`driver_network`):
  * local[...] or a spark:// master on loopback (127.x, localhost, ::1): everything binds to
    127.0.0.1 (SPARK_LOCAL_IP unless the user set it, spark.driver.host and bindAddress, and
    the executors' SPARK_LOCAL_IP), so nothing listens on other interfaces;
  * any other master: the executors must reach the driver from other hosts, so nothing is
    pinned; KRAFTCHECK_SPARK_DRIVER_HOST, when set, is the address the driver advertises
    (spark.driver.host), otherwise Spark's default (this host's name / SPARK_LOCAL_IP).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from kraftcheck.paths import REPO_ROOT, work_dir

__all__ = ["DEFAULT_MASTER", "get_session", "stop_session", "is_loopback_master",
           "driver_network", "driver_log"]

DEFAULT_MASTER = "local[*]"
LOOPBACK = "127.0.0.1"


def _loopback_host(host: str) -> bool:
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_master(master: str) -> bool:
    """local, local[N], local[N,F], local-cluster[...] or spark://H:P[,H2:P2] with every host
    on loopback."""
    if master == "local" or master.startswith(("local[", "local-cluster[")):
        return True
    if not master.startswith("spark://"):
        return False
    hosts = []
    for hp in master[len("spark://"):].split(","):
        hp = hp.split("/", 1)[0]
        host = hp.rsplit(":", 1)[0] if hp.count(":") == 1 or hp.startswith("[") else hp
        hosts.append(host)
    return bool(hosts) and all(_loopback_host(h) for h in hosts)


def driver_network(master: str, env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(Spark settings, environment defaults) for where the driver listens (module doc)."""
    if is_loopback_master(master):
        return ({"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK,
                 "spark.executorEnv.SPARK_LOCAL_IP": LOOPBACK}, {"SPARK_LOCAL_IP": LOOPBACK})
    host = env.get("KRAFTCHECK_SPARK_DRIVER_HOST")
    return ({"spark.driver.host": host} if host else {}), {}


def _prepare_env(env_defaults: Mapping[str, str]) -> None:
    for k, v in env_defaults.items():
        os.environ.setdefault(k, v)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Executors of a standalone cluster import this project's modules by path.
    pp = os.environ.get("PYTHONPATH", "")
    if str(REPO_ROOT) not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(REPO_ROOT), pp) if x)


def driver_log() -> Path:
    """Where the Spark driver JVM's own output goes (its log4j lines, JVM warnings, a failing
    gateway's error): .kraftcheck-work/spark/driver.log, never the terminal."""
    return work_dir() / "spark" / "driver.log"


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at `path` while the JVM is launched, so the JVM (and the Python
    workers it forks) inherit it; this process's stderr is restored right after."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def get_session(master: str | None = None, *, app_name: str = "kraftcheck-stats",
                shuffle_partitions: int = 8, driver_memory: str = "1g",
                executor_memory: str = "1g", extra: dict[str, str] | None = None):
    """A SparkSession on `master` (default local[*]); reuses the active one if it matches."""
    master = master or os.environ.get("KRAFTCHECK_SPARK_MASTER") or DEFAULT_MASTER
    net_conf, env_defaults = driver_network(master, os.environ)
    _prepare_env(env_defaults)
    from pyspark.sql import SparkSession

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
        "spark.executorEnv.PYSPARK_PYTHON": os.environ["PYSPARK_PYTHON"],
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={local_dir}",
    }
    conf.update(net_conf)
    if master.startswith("spark://"):
        conf["spark.cores.max"] = os.environ.get("KRAFTCHECK_SPARK_CORES", "2")
    conf.update(extra or {})
    b = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        b = b.config(k, v)
    with _stderr_to(driver_log()):   # Spark's start-up banner and log lines stay off the terminal
        spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_session() -> None:
    from pyspark.sql import SparkSession

    s = SparkSession.getActiveSession()
    if s is not None:
        s.stop()

