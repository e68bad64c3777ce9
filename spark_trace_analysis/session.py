"""The Spark session every job runs in: embedded local[*] by default, or an existing cluster.

Settings this machine needs are set here, not by the user: the web UI is off, memory is small,
shuffles use few partitions, and on this host (local[...] or a loopback master) the Python
workers run the interpreter of the driver (so they see pyarrow).  `--master spark://HOST:PORT`
runs the same job on a cluster; PYSPARK_PYTHON names the workers' Python there.  Under
spark-submit (the driver's JVM is already running) the settings given to spark-submit win:
only the ones it left unset get these defaults.

The project's own code reaches the executors as a zip added with SparkContext.addPyFile
(`code_archive`), never through a path on the workers.

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

from kraftcore.paths import work_dir
from kraftcore.tlc.java import SHORT_RUN_JVM_OPTIONS
from spark_trace_analysis.cds import driver_flags

__all__ = ["DEFAULT_MASTER", "get_session", "stop_session", "is_loopback_master",
           "driver_network", "driver_log", "ship_code", "is_small_input",
           "size_shuffles", "large_input_shuffles", "SMALL_INPUT_CODEGEN",
           "LARGE_INPUT_CODEGEN", "LOCAL_FS_CLASS", "local_fs_jar"]

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


def _prepare_env(env_defaults: Mapping[str, str], master: str) -> None:
    for k, v in env_defaults.items():
        os.environ.setdefault(k, v)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # The workers' Python: on this host the driver's own interpreter (it has pyarrow); on other
    # hosts that path means nothing, so only the user's PYSPARK_PYTHON (or Spark's default,
    # python3 on the worker's PATH) applies.
    if is_loopback_master(master):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _submitted_conf():
    """The settings given to spark-submit when it launched this driver (its JVM is running and
    PYSPARK_GATEWAY_PORT set), else None."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext
    SparkContext._ensure_initialized()   # connect to spark-submit's JVM: SparkConf reads it
    return SparkConf()


def ship_code(sc) -> Path:
    """Add this project's code archive (`code_archive`) to the SparkContext `sc` unless it has
    it already; the executors put it first on their sys.path.  The driver keeps importing its
    own installation: addPyFile's entry on the driver's sys.path is taken out again."""
    from pyspark import SparkFiles

    from spark_trace_analysis.code_archive import code_archive

    path = code_archive()
    if path.name not in (sc._python_includes or []):
        sc.addPyFile(str(path))
        here = os.path.join(SparkFiles.getRootDirectory(), path.name)
        while here in sys.path:
            sys.path.remove(here)
    return path


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


# Up to this much input, a job is mostly Spark's fixed cost (planning, code generation, a few
# hundred small tasks), not work on rows: the JVMs then compile with C1 only (QUICK_JVM_OPTIONS).
# On the demo corpus (25 MB, 4,183 steps) C2's compiler threads took 66 of the driver JVM's 125
# CPU seconds; C1 alone cut the job's CPU by a third (docs/spark-stats.md, "Fixed cost").
# Larger inputs keep the JVM's default tiered compilation: C2's code is what a 10M-event job
# spends its time in.
SMALL_INPUT_BYTES = 256 * 2**20
QUICK_JVM_OPTIONS = " ".join(SHORT_RUN_JVM_OPTIONS)


def is_small_input(input_bytes: int | None) -> bool:
    """Whether an input of `input_bytes` (None: unknown, e.g. URIs) counts as small."""
    return input_bytes is not None and input_bytes <= SMALL_INPUT_BYTES


# The file system for file:// on a local master (spark_trace_analysis/jvm/NioLocalFileSystem.java,
# built by scripts/setup.sh against the venv's pyspark): Hadoop's local file system, with
# permissions set through java.nio instead of a `chmod` process per folder and file (pip's
# pyspark has no native Hadoop library: 286 processes per stats run on the demo corpus) and no
# .crc files.  Without the jar (an installation not made by setup.sh), Hadoop's own serves.
LOCAL_FS_CLASS = "kraftcheck.spark.NioLocalFileSystem"


def local_fs_jar() -> Path | None:
    """The jar of LOCAL_FS_CLASS when setup built it, else None."""
    p = Path(sys.prefix) / "share" / "kraftcheck" / "kraftcheck-spark-fs.jar"
    return p if p.is_file() else None


HADOOP_LOCAL_FS_CLASS = "org.apache.hadoop.fs.LocalFileSystem"   # Hadoop's own for file://


def _local_fs_conf(master: str) -> dict[str, str]:
    """The settings for LOCAL_FS_CLASS.  Only where one JVM runs the driver and the executors
    (local, local[...]): the jar on the driver's class path serves both.  Every other master
    gets Hadoop's class by name: a driver JVM keeps the settings it was launched with as
    system properties, so an earlier local session's class would otherwise reach executors
    that do not have it.  A driver JVM that is running already keeps its class path: the
    class is used only when that JVM has it."""
    jar = local_fs_jar()
    if not (master == "local" or master.startswith("local[")) or jar is None:
        return {"spark.hadoop.fs.file.impl": HADOOP_LOCAL_FS_CLASS}
    from pyspark import SparkContext
    if SparkContext._jvm is not None:
        try:
            SparkContext._jvm.java.lang.Class.forName(LOCAL_FS_CLASS)
        except Exception:      # launched without the jar (e.g. for a cluster session)
            return {"spark.hadoop.fs.file.impl": HADOOP_LOCAL_FS_CLASS}
        return {"spark.hadoop.fs.file.impl": LOCAL_FS_CLASS}
    return {"spark.driver.extraClassPath": str(jar), "spark.hadoop.fs.file.impl": LOCAL_FS_CLASS}


def get_session(master: str | None = None, *, app_name: str = "kraftcheck-stats",
                shuffle_partitions: int = 8, driver_memory: str = "1g",
                executor_memory: str = "1g", extra: dict[str, str] | None = None,
                small_input: bool = False):
    """A SparkSession on `master` (default local[*]); reuses the active one if it matches.
    `small_input`: the JVMs this call starts (the driver's; a cluster's executors) compile
    with C1 only (QUICK_JVM_OPTIONS); a session already running keeps its JVM as it is."""
    given = _submitted_conf()
    master = (master or os.environ.get("KRAFTCHECK_SPARK_MASTER")
              or (given.get("spark.master") if given is not None else None) or DEFAULT_MASTER)
    net_conf, env_defaults = driver_network(master, os.environ)
    _prepare_env(env_defaults, master)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        if active.sparkContext.master == master:
            ship_code(active.sparkContext)
            return active
        active.stop()
    local_dir = work_dir() / "spark"
    local_dir.mkdir(parents=True, exist_ok=True)
    # the driver JVM maps its class-data archive (spark_trace_analysis/cds.py); not under
    # spark-submit, whose driver JVM is running already
    cds_options = "".join(f" {f}" for f in driver_flags()) if given is None else ""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory,
        "spark.executor.memory": executor_memory,
        "spark.sql.shuffle.partitions": os.environ.get("KRAFTCHECK_SPARK_SHUFFLE_PARTITIONS",
                                                       str(shuffle_partitions)),
        "spark.default.parallelism": str(max(2, shuffle_partitions)),
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # partitioned writes (steps, traces, the per-step tables) keep one open file per
        # partition value in each task instead of sorting the task's rows by the partition
        # columns first (the planned write's sort); beyond 4 values in one task (each open
        # Parquet writer buffers a row group) the task falls back to sorting
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFileWriters": "4",
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={local_dir}"
                                         + (f" {QUICK_JVM_OPTIONS}" if small_input else "")
                                         + cds_options,
    }
    if small_input:
        conf["spark.executor.extraJavaOptions"] = QUICK_JVM_OPTIONS
    if is_loopback_master(master):   # executors elsewhere keep their own scratch folders
        conf["spark.local.dir"] = str(local_dir)
    if given is None:
        conf.update(_local_fs_conf(master))
    if os.environ.get("PYSPARK_PYTHON"):
        conf["spark.executorEnv.PYSPARK_PYTHON"] = os.environ["PYSPARK_PYTHON"]
        conf["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    conf.update(net_conf)
    if master.startswith("spark://"):
        conf["spark.cores.max"] = os.environ.get("KRAFTCHECK_SPARK_CORES", "2")
    if given is not None:   # under spark-submit: what the user gave it wins
        if given.contains("spark.sql.shuffle.partitions"):
            conf["spark.kraftcheck.shufflePartitionsGiven"] = "true"
        conf = {k: v for k, v in conf.items() if not given.contains(k)}
    conf.update(extra or {})
    b = SparkSession.builder.master(master).appName(app_name)
    for k, v in conf.items():
        b = b.config(k, v)
    with _stderr_to(driver_log()):   # Spark's start-up banner and log lines stay off the terminal
        spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    ship_code(spark.sparkContext)
    return spark


# Bytes of input per shuffle partition (adaptive execution coalesces small ones further).
BYTES_PER_SHUFFLE_PARTITION = 64 * 2**20


# Up to SMALL_INPUT_BYTES of input, adaptive execution is off and shuffles use at most this many
# partitions (one per core): adaptive execution runs each shuffle stage as a job of its own and
# re-plans after it, which on the demo corpus was 100 of the stats job's 249 Spark jobs, for
# partitions it then coalesced into one or two anyway (docs/spark-stats.md, "Fixed cost").
SMALL_SHUFFLE_PARTITIONS = 2


# Up to SMALL_INPUT_BYTES of input, queries run interpreted: no whole-stage code generation and
# no generated code for single expressions either.  On the demo corpus the stats job compiled
# 673 generated classes with Janino (7.5 MB of Java source) for queries over a few thousand
# rows; interpreted, 58 remained and the job took about 7 CPU s less (of about 84), with every
# table the same (docs/spark-stats.md, "Fixed cost").  A large input keeps Spark's defaults:
# generated code is what a 10M-event job spends its time in.
SMALL_INPUT_CODEGEN = {"spark.sql.codegen.wholeStage": "false",
                       "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
LARGE_INPUT_CODEGEN = {"spark.sql.codegen.wholeStage": "true",
                       "spark.sql.codegen.factoryMode": "FALLBACK"}


def _large_input_partitions(spark, input_bytes: int) -> int:
    """One shuffle partition per 64 MiB of input, at least twice the cores."""
    cores = spark.sparkContext.defaultParallelism
    return max(2 * cores, -(-input_bytes // BYTES_PER_SHUFFLE_PARTITION))


def size_shuffles(spark, input_bytes: int | None) -> int:
    """Set spark.sql.shuffle.partitions from the input size: one per 64 MiB of input, at least
    twice the cores, with adaptive execution; a small input (is_small_input) gets
    SMALL_SHUFFLE_PARTITIONS (at most the cores) and no adaptive execution.  Unless the user
    chose (KRAFTCHECK_SPARK_SHUFFLE_PARTITIONS, or spark-submit's --conf): then both stay as
    they are.  A small input also runs without generated code (SMALL_INPUT_CODEGEN), a large
    one with Spark's defaults (LARGE_INPUT_CODEGEN).  A small input's files are scanned in as
    many splits as its shuffles have partitions (spark.sql.files.minPartitionNum).  Returns
    the count in force."""
    conf = spark.conf
    if input_bytes is not None:
        for k, v in (SMALL_INPUT_CODEGEN if is_small_input(input_bytes)
                     else LARGE_INPUT_CODEGEN).items():
            conf.set(k, v)
    chosen = ("KRAFTCHECK_SPARK_SHUFFLE_PARTITIONS" in os.environ
              or conf.get("spark.kraftcheck.shufflePartitionsGiven", "false") == "true")
    if input_bytes is None or chosen:
        return int(conf.get("spark.sql.shuffle.partitions"))
    small = is_small_input(input_bytes)
    # set both ways: a session a small input ran in keeps no small-input setting for the next
    conf.set("spark.sql.adaptive.enabled", "false" if small else "true")
    n = (min(SMALL_SHUFFLE_PARTITIONS, spark.sparkContext.defaultParallelism) if small
         else _large_input_partitions(spark, input_bytes))
    conf.set("spark.sql.shuffle.partitions", str(n))
    # the scans of the input: a small one in as many splits as its shuffles have partitions
    # (on the demo corpus 7 -> 2 tasks per scan, about 1.3 s and 3 CPU s less, the same
    # tables), a large one in at least one split per default parallelism (ingest pins it)
    conf.set("spark.sql.files.minPartitionNum",
             str(n if small else spark.sparkContext.defaultParallelism))
    return n


@contextlib.contextmanager
def large_input_shuffles(spark, input_bytes: int | None) -> Iterator[None]:
    """Within the block, shuffles run as size_shuffles sets them for a large input (adaptive
    execution, twice the cores or more), whatever the input's size; restored after it.  For
    aggregates whose floating-point results depend on how rows meet in partitions (an `avg`
    of doubles sums in partition order): they keep the partitioning they had before small
    inputs got their own settings, bit for bit."""
    conf = spark.conf
    keys = ("spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions")
    saved = {k: conf.get(k) for k in keys}
    if input_bytes is not None and is_small_input(input_bytes) and saved[keys[0]] == "false":
        conf.set(keys[0], "true")
        conf.set(keys[1], str(_large_input_partitions(spark, input_bytes)))
    try:
        yield
    finally:
        for k, v in saved.items():
            conf.set(k, v)


def stop_session() -> None:
    from pyspark.sql import SparkSession

    s = SparkSession.getActiveSession()
    if s is not None:
        s.stop()


def memory_bytes(text: str) -> int:
    """A JVM memory setting as Spark writes it (512m, 1g, 4096M, 2gb; a bare number is MiB)
    in bytes; 1 GiB, Spark's default driver heap, when it cannot be read."""
    t = text.strip().lower().removesuffix("b")
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    mult = units.get(t[-1:], None)
    try:
        return int(float(t[:-1] if mult else t) * (mult or 2**20))
    except ValueError:
        return 2**30


def driver_heap_bytes(spark) -> int:
    """The driver's heap as configured (`spark.driver.memory`; Spark's default 1g when
    unset): what a broadcast is sized against."""
    return memory_bytes(spark.sparkContext.getConf().get("spark.driver.memory", "1g"))
