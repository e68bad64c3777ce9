"""Signals (issue 10, item 6): SIGTERM / SIGINT to kraftcheck stop TLC's JVM too (TLC runs in
its own process group, which kraftcheck kills on every exit path), and an interrupted run
leaves no partial dump a later run could take for complete."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT

pytestmark = [pytest.mark.tlc, pytest.mark.xdist_group("tlc")]


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(p.name))
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _default_sigint() -> None:
    """kraftcheck as a terminal starts it: SIGINT at its default.  A test run started in the
    background by a non-interactive shell (`(make test &)`) inherits SIGINT ignored, and Python
    then installs no KeyboardInterrupt handler, so the SIGINT case would wait for nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_jvm_and_leaves_no_partial_dump(sig, tmp_path, tlc_toolchain):
    dump = tmp_path / "graph.dot"
    env = {**os.environ, "KRAFTCHECK_WORK": str(tmp_path / "work")}
    # kraft-deep-lossy explores ~1M states: minutes, so it is surely running when signalled
    p = subprocess.Popen([sys.executable, "-m", "kraftcheck", "tlc", "run", "kraft-deep-lossy",
                          "--workers", "1", "--dump", str(dump)], cwd=REPO_ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=_default_sigint)
    try:
        jvm = None
        deadline = time.monotonic() + 300
        while jvm is None and time.monotonic() < deadline and p.poll() is None:
            kids = [k for k in _children(p.pid) if b"tlc2.TLC" in _cmdline(k)]
            jvm = kids[0] if kids else None
            time.sleep(0.2)
        assert jvm is not None, p.communicate()
        assert os.getpgid(jvm) == jvm != os.getpgid(p.pid)    # TLC has its own group
        deadline = time.monotonic() + 120                       # TLC is writing its dump
        while not list(tmp_path.glob(".graph.dot.*.part.dot")) and time.monotonic() < deadline:
            time.sleep(0.2)
        p.send_signal(sig)
        p.wait(timeout=120)
        assert p.returncode != 0
        deadline = time.monotonic() + 30
        while _alive(jvm) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(jvm), "the JVM outlived kraftcheck"
        assert not dump.exists() and not list(tmp_path.glob("*.dot"))
        assert not list(tmp_path.glob(".*.part.dot"))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
