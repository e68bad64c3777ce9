"""Finding and running the Kafka harness (kafka_harness/, PROTOCOL.md): Java and the built jars.

The jars are built once by the project's setup (`make setup` -> scripts/setup.sh -> Maven);
nothing is ever downloaded or built here.  Every way the harness cannot run is a HarnessError
whose message names the cause (no Java, a jar not built, the harness's own error line): the CLI
reports it and exits 2, so a run that could not happen never yields an empty corpus.

  KRAFTCHECK_JAVA                 the java binary (else PATH, else JAVA_HOME; kraftcore.tlc.java)
  KRAFTCHECK_KAFKA_RAFT_JAR       another kafka-harness-raft.jar
  KRAFTCHECK_KAFKA_ELR_JAR        another kafka-harness-elr.jar
  KRAFTCHECK_KAFKA_JVM_OPTS       the harness JVM's options (default JVM_OPTS below; "" for
                                  none)
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kraftcore import jvm_cds
from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.java import (SHORT_RUN_JVM_OPTIONS, ToolchainError, find_java,
                                java_major_version)

__all__ = ["HarnessError", "HARNESS_DIR", "JARS", "JAR_ENV", "MIN_JAVA", "Harness",
           "find_harness", "run_harness"]

HARNESS_DIR = REPO_ROOT / "kafka_harness"
# module -> the shaded jar Maven builds (kafka_harness/PROTOCOL.md)
JARS = {"raft": HARNESS_DIR / "raft" / "target" / "kafka-harness-raft.jar",
        "elr": HARNESS_DIR / "elr" / "target" / "kafka-harness-elr.jar"}
JAR_ENV = {"raft": "KRAFTCHECK_KAFKA_RAFT_JAR", "elr": "KRAFTCHECK_KAFKA_ELR_JAR"}
# The harness JVM's options: a short run's (C1 only, the serial collector).  A harness run is
# seconds of single-threaded work (one scheduler thread, PROTOCOL.md) dominated by class loading
# and warm-up, where C2's compiler threads cost more than they win: 5 seeds x 300 steps 4.7 ->
# 2.0 CPU s, 60 seeds 13.6 -> 8.4 CPU s, the raw files byte-identical (2026-11-28).
JVM_OPTS = SHORT_RUN_JVM_OPTIONS
MIN_JAVA = 17            # the harness is compiled with --release 17 (kafka_harness/pom.xml)
DEFAULT_TIMEOUT_S = 3600


class HarnessError(RuntimeError):
    """The Kafka harness could not run; the message names the cause and the fix."""


@dataclass(frozen=True)
class Harness:
    module: str
    java: str
    java_version: int
    jar: Path

    def command(self, mode: str, *args: str) -> list[str]:
        return [self.java, *jvm_options(), *self.cds_flags(), "-jar", str(self.jar), mode,
                *args]

    def cds_flags(self) -> list[str]:
        """The flags mapping the module's class-data archive (kraftcore/jvm_cds.py), trained
        on first use by a short run of its own (CDS_TRAINING); none for a module without one
        (the ELR harness: one long `serve` process per run) or when the training failed."""
        train = CDS_TRAINING.get(self.module)
        if train is None:
            return []
        archive = jvm_cds.archive_path(f"kafka-harness-{self.module}", self.java, [self.jar])
        jvm_cds.ensure(archive, lambda flags, d: [self.java, *jvm_options(), *flags, "-jar",
                                                  str(self.jar), *train, str(d / "out")])
        return jvm_cds.use_flags(archive)


# A harness module's CDS training run (its last argument, the output folder, is added): the
# raft harness is started once per `simulate`, many times in a run of the suite; one seed
# under chaos faults loads what a run loads (the client, the simulated network and stores,
# the trace writer).
CDS_TRAINING = {"raft": ("simulate", "--seeds", "1", "--faults", "chaos", "--steps", "300",
                         "--out")}


def jvm_options() -> list[str]:
    """KRAFTCHECK_KAFKA_JVM_OPTS (shell words) when set, else JVM_OPTS."""
    env = os.environ.get("KRAFTCHECK_KAFKA_JVM_OPTS")
    return shlex.split(env) if env is not None else list(JVM_OPTS)


def find_harness(module: str) -> Harness:
    """Java (>= 17) and the module's built jar, or HarnessError naming what is missing."""
    if module not in JARS:
        raise HarnessError(f"no Kafka harness module {module!r} (known: {', '.join(JARS)})")
    override = os.environ.get(JAR_ENV[module])
    jar = Path(override).expanduser() if override else JARS[module]
    if not jar.is_file():
        if override:
            raise HarnessError(f"{JAR_ENV[module]}={override} does not name a file")
        raise HarnessError(f"the Kafka harness is not built: {_rel(jar)} is missing; run "
                           "`make setup` (it builds kafka_harness/ with Maven once; needs a "
                           "JDK 17 and Maven 3.8)")
    try:
        java = find_java()
        version = java_major_version(java)
    except ToolchainError as e:
        raise HarnessError(f"the Kafka harness needs Java: {e}") from None
    if version < MIN_JAVA:
        raise HarnessError(f"{java} is Java {version}; the Kafka harness needs Java "
                           f"{MIN_JAVA} or newer (set KRAFTCHECK_JAVA)")
    return Harness(module, java, version, jar.resolve())


def run_harness(h: Harness, mode: str, args: list[str], *,
                timeout_s: float = DEFAULT_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Run `java -jar JAR MODE ARGS...`; a non-zero exit, a timeout or a failure to start is a
    HarnessError quoting the harness's last stderr line."""
    cmd = h.command(mode, *args)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HarnessError(f"the Kafka harness ({_rel(h.jar)} {mode}) did not finish within "
                           f"{timeout_s:.0f} s") from None
    except OSError as e:
        raise HarnessError(f"cannot start the Kafka harness ({h.java}): "
                           f"{e.strerror or e}") from None
    if p.returncode != 0:
        raise HarnessError(f"the Kafka harness ({_rel(h.jar)} {mode}) failed with exit status "
                           f"{p.returncode}: {last_line(p.stderr) or last_line(p.stdout) or 'no message'}")
    return p


def last_line(text: str | None) -> str:
    """The harness's error line: the last non-empty line of its stderr (a Java exception's
    first line when it printed a stack trace)."""
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    if not lines:
        return ""
    frames = [i for i, x in enumerate(lines) if x.startswith("at ") or x.startswith("...")]
    if frames:        # a stack trace: the exception line before the first frame
        first = frames[0]
        return lines[first - 1] if first > 0 else lines[-1]
    return lines[-1][:500]


def _rel(p: Path) -> str:
    p = Path(p)
    try:
        return str(p.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(p)
