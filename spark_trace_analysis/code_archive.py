"""The project's code as one zip for the executors, the way PySpark ships Python code.

The executors of a cluster run Python workers that unpickle the job's functions: the Arrow UDFs
(`ingest._state_info`, `graph._parse_labels`) are pickled by reference, so a worker imports
`spark_trace_analysis.ingest` / `.graph`, and through them `spark_trace_analysis.observe`,
`.schema`, `.fields`, `.vocabulary`, `kraftcore.paths`, `kraftcore.values` and
`kraftcore.tla_values` (whose grammar is a string in the module, so nothing is read from a
file).  The worker's Python must provide the third-party libraries (pyarrow, lark, pyspark);
this project's own packages come from the archive built here, so a worker needs neither the
repository nor an installation of kraftcheck.

`code_archive()` writes every file of the packages in PACKAGES (as installed, editable or not;
`__pycache__` left out) into `<work>/spark/pyfiles/kraftcheck-code-<sha256 prefix>.zip`.  The name
is the hash of the files' paths and bytes, and the zip is byte-identical for the same sources
(fixed timestamps and order), so it is built once per code version and reused by every run
until a source file changes (archives of other versions are deleted once a day old).  It is
written under a temporary name and renamed into place, so concurrent runs never see half an
archive.  `session.get_session` adds it to the SparkContext
with `addPyFile` (the executors download it and put it first on their `sys.path`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import time
import zipfile
from pathlib import Path

from kraftcore.paths import work_dir

__all__ = ["PACKAGES", "STALE_AFTER_S", "code_archive", "package_files"]

# The Python packages executors may import: the UDFs' own (spark_trace_analysis, kraftcore)
# and those the driver-side modules reach lazily and a future UDF might too (refimpl's spec
# mappings, trace_checker).  `proofs` (z3 proofs) is never needed by the stats job, nor is
# the CLI (kraftcheck), which no package below it imports (tests/test_layering.py).
PACKAGES = ("spark_trace_analysis", "kraftcore", "refimpl", "trace_checker")
STALE_AFTER_S = 24 * 3600
_EPOCH = (1980, 1, 1, 0, 0, 0)   # the earliest time a zip entry can carry: reproducible bytes


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {name} is not importable here, so it cannot be shipped "
                          f"to the executors")
    return Path(list(spec.submodule_search_locations)[0])


def package_files(packages: tuple[str, ...] = PACKAGES) -> list[tuple[str, Path]]:
    """(archive name, source file) of every file of `packages`, sorted by archive name."""
    out = []
    for name in packages:
        root = _package_dir(name)
        for f in root.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".pyo"):
                out.append((f"{name}/{f.relative_to(root).as_posix()}", f))
    return sorted(out)


def code_archive(packages: tuple[str, ...] = PACKAGES, folder: Path | None = None) -> Path:
    """The zip of `packages` (module doc): built when this code version has none yet."""
    files = [(arc, f.read_bytes()) for arc, f in package_files(packages)]
    h = hashlib.sha256()
    for arc, data in files:
        h.update(arc.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    folder = folder or work_dir() / "spark" / "pyfiles"
    path = folder / f"kraftcheck-code-{h.hexdigest()[:16]}.zip"
    if path.is_file():
        _prune(folder, keep=path)
        return path
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as z:
            for arc, data in files:
                info = zipfile.ZipInfo(arc, _EPOCH)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _prune(folder, keep=path)
    return path


def _prune(folder: Path, keep: Path) -> None:
    """Delete archives of other code versions once they are a day old (a job started before a
    source edit may still be serving its own archive to new executors)."""
    old = time.time() - STALE_AFTER_S
    for f in folder.glob("kraftcheck-code-*.zip"):
        try:
            if f != keep and f.stat().st_mtime < old:
                f.unlink()
        except FileNotFoundError:   # a concurrent run pruned it first
            pass
