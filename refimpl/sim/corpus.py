"""A corpus of simulator traces in one call (used by `kraftcheck demo` and benchmarks).

`simulate_corpus` runs `refimpl.sim.runner.run_seeds` and returns its manifest, each trace entry
also carrying `invariant_violations` (the same list as `violations`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from refimpl.sim.runner import RunSpec, run_seeds

__all__ = ["simulate_corpus"]


def simulate_corpus(*, protocol: str, seeds: Iterable[int], faults: str, steps: int,
                    out: str | Path | None, bounds: str | None = None, bug: str | None = None,
                    show_progress: bool = False) -> dict:
    """Simulate every seed, write the traces and manifest.json into `out` (None: no files);
    raises refimpl.sim.runner.UsageError on bad arguments."""
    spec = RunSpec(protocol=protocol, seeds=list(seeds), faults=faults, steps=steps,
                   bounds_path=bounds, bug=bug)
    out_dir = Path(out) if out is not None else None
    if show_progress:
        from rich.progress import Progress

        from kraftcore.output import err_console
        with Progress(console=err_console, transient=True) as progress:
            task = progress.add_task(f"simulate {protocol}/{faults}", total=len(spec.seeds))
            manifest = run_seeds(spec, out_dir, lambda r: progress.advance(task))
    else:
        manifest = run_seeds(spec, out_dir)
    for t in manifest["traces"]:
        t["invariant_violations"] = t["violations"]
    return manifest
