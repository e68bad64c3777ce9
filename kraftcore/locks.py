"""One build per cache key: a blocking file lock shared by processes.

The TLC result cache (kraftcore/tlc/cache.py) and the trace checker's graph cache
(trace_checker/cache.py) are filled by whichever process first needs an entry.  Two processes
that need the same entry at once (two test workers, `kraftcheck tlc suite` beside
`kraftcheck validate`) would both run TLC; with `build_lock` the second waits for the first and
then reads its entry.  The lock is advisory (flock), released when the holder exits, even by a
crash, so a killed build never blocks the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the block's duration."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def try_lock(path: Path) -> Iterator[bool]:
    """Take the same lock as build_lock without waiting: the block gets True when this process
    holds it, False when another one does (the block then runs without it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
