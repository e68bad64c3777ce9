"""Output helpers shared by every subcommand: JSON for machines, rich text for people."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

def _width(stream) -> int | None:
    """Rich falls back to 80 columns when output is not a terminal (make demo | tee, CI logs),
    which truncates the result tables; use a wide page there instead (COLUMNS still wins)."""
    if os.environ.get("COLUMNS") or stream.isatty():
        return None
    return 160


console = Console(stderr=False, highlight=False, width=_width(sys.stdout))
err_console = Console(stderr=True, highlight=False, width=_width(sys.stderr))


def print_json(obj: Any) -> None:
    """Print `obj` as JSON on stdout (one document)."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write a file atomically: a temporary file in the same folder, fsynced, then renamed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are ordinary readable files
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
