"""Output helpers shared by every layer: files and folders written atomically, text safe to
print, and the consoles and JSON the CLI prints (JSON for machines, rich text for people)."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
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


class OutputError(OSError):
    """A file or folder that could not be written (a full disk, a read-only file system, no
    permission): `str()` is one line naming the path and the cause.  The CLI turns it into
    exit 2, "could not run" (kraftcheck.cli.main), never a traceback."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path = str(path)

    def __str__(self) -> str:
        return f"cannot write {plain(self.path)}: {self.strerror}"


# errno values that mean "the output could not be written" wherever they come from
_WRITE_FAULTS = {getattr(errno, n) for n in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS")
                 if hasattr(errno, n)}


def write_failure(e: BaseException) -> str | None:
    """One line for an error that means an output could not be written (OutputError, or an
    OSError of a full disk / quota / read-only file system anywhere), else None."""
    if isinstance(e, OutputError):
        return str(e)
    if isinstance(e, OSError) and e.errno in _WRITE_FAULTS:
        # a copy's error names the source as `filename` and the file written as `filename2`
        target = e.filename2 or e.filename
        what = f"cannot write {plain(target)}" if target else "cannot write an output"
        return f"{what}: {e.strerror or e}"
    return None


def replace_folder(tmp: str | os.PathLike, out: str | os.PathLike) -> None:
    """Put the finished folder `tmp` where `out` is, replacing any earlier `out` (renames in
    the same parent folder, so a reader sees the old or the new folder, never a mix)."""
    tmp, out = Path(tmp), Path(out)
    old = None
    try:
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
        os.replace(tmp, out)
    except OSError as e:
        raise OutputError(out, e) from e
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write a file atomically: a temporary file in the same folder, fsynced, then renamed.
    Raises OutputError (naming `path`) when it cannot be written; nothing is left behind
    then, and an earlier file at `path` is unchanged."""
    path = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; outputs are ordinary readable files
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise OutputError(path, e) from e
        raise


_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(m: re.Match) -> str:
    c = m.group()
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:           # a byte of a non-UTF-8 file name (surrogateescape)
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def plain(text: object) -> str:
    """`text` with control characters (escape sequences, NUL, newlines), bidi overrides and
    undecodable bytes of file names written as \\xNN / \\uNNNN: safe to print verbatim."""
    return _UNSAFE.sub(_escape_char, str(text))


def safe(text: object) -> str:
    """Text from traces, file names or tools, for a Rich console: `plain`, and Rich markup
    (`[red]`...) escaped, so it prints exactly as it is."""
    from rich.markup import escape
    return escape(plain(text))
