"""`kraftcheck simulate` (the deterministic simulator) and `kraftcheck export itf`.

  kraftcheck simulate --protocol kraft|elr --seeds 0:999 --faults PROFILE --steps N --out DIR
                      [--bounds CFG] [--bug NAME] [--list-bugs] [--json]
  kraftcheck export itf TRACE.jsonl... --out DIR

Exit status of simulate: 0 when the outcome is the expected one (no invariant violated; with
--bug, at least one trace caught the planted bug), 1 otherwise, 2 on bad arguments or when
another simulate is writing into the same --out (runs one after another into one folder both
appear in its manifest.json).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from kraftcheck.choices import choice_option
from kraftcore.output import console, err_console, print_json, safe
from refimpl.sim.faults import PROFILES as FAULT_PROFILES
from refimpl.sim.runner import PROTOCOLS

__all__ = ["register"]


def _list_bugs(as_json: bool) -> None:
    from refimpl.bugs import BUGS

    order = {p: i for i, p in enumerate(PROTOCOLS)}   # registry order within each protocol
    rows = sorted(BUGS.values(), key=lambda b: order.get(b.protocol, len(order)))
    if as_json:
        print_json([{"name": b.name, "protocol": b.protocol, "description": b.description,
                     "caught_by": list(b.caught_by)} for b in rows])
        return
    from rich.table import Table

    t = Table(title="Planted bugs (--bug NAME)")
    for col in ("name", "protocol", "caught by", "description"):
        t.add_column(col, overflow="fold")
    for b in rows:
        t.add_row(b.name, b.protocol, ", ".join(b.caught_by), b.description)
    console.print(t)


def _refuse_repeated_seeds(text: str, seeds: list[int]) -> None:
    """Each seed runs once: a seed given twice (`0,0`, `0:5,3`) would write the same trace
    twice into one file and list it twice in manifest.json."""
    from collections import Counter

    from refimpl.sim.runner import UsageError

    again = [s for s, n in Counter(seeds).items() if n > 1]
    if again:
        shown = ", ".join(map(str, again[:10])) + (", ..." if len(again) > 10 else "")
        raise UsageError(f"--seeds {text}: seed(s) {shown} given more than once; give each "
                         "seed once")


def _check_bounds_config(bounds: Path, protocol: str, spec_module: str) -> None:
    """A --bounds file that is a config of the manifest (tlc_configs/*.toml) must be one of
    this protocol whose module is the protocol's spec (MC<spec_module>): the trace checker
    judges the traces only under such a config, and another protocol's constants would be
    written into the header as bounds the run did not use.  A .cfg outside the manifest has no
    recorded module and is taken as given."""
    from kraftcore.tlc.manifest import ManifestError, load_manifest
    from refimpl.sim.runner import UsageError

    try:
        entries = load_manifest()
    except ManifestError as e:
        raise UsageError(f"--bounds {bounds}: cannot read the config manifest: {e}") from None
    real = os.path.realpath(bounds)
    e = next((e for e in entries if os.path.realpath(e.cfg_path) == real), None)
    if e is None:
        return
    wanted = {f"MC{spec_module}", spec_module}
    if e.protocol != protocol or e.module_path.stem not in wanted:
        raise UsageError(f"--bounds {bounds}: config {e.name} (protocol {e.protocol}, module "
                         f"{e.module_path.stem}) is not a config of protocol {protocol} / "
                         f"module MC{spec_module}: give a config of the {protocol} manifest "
                         f"whose module is MC{spec_module}")


def simulate(
    protocol: str = choice_option("kraft", "--protocol", values=tuple(PROTOCOLS), what="protocol",
                                  help="kraft (KIP-595), elr (KIP-966) or reassign (KIP-642)."),
    seeds: str = typer.Option("0:9", "--seeds", help="Seeds: N, A:B (inclusive) or a comma list."),
    faults: str = choice_option("chaos", "--faults", values=tuple(FAULT_PROFILES),
                                what="fault profile", help="Fault profile (refimpl/sim/faults.py)."),
    steps: int = typer.Option(1000, "--steps", help="Steps per trace (after Init)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for traces and manifest.json."),
    bounds: Optional[Path] = typer.Option(None, "--bounds", help="TLC .cfg whose CONSTANTS bound the run."),
    bug: Optional[str] = typer.Option(None, "--bug", help="Switch on one planted bug."),
    list_bugs: bool = typer.Option(False, "--list-bugs", help="List the planted bugs and exit."),
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
    faults_until: Optional[int] = typer.Option(
        None, "--faults-until", help="Stop the faults at this virtual time (ms) and check "
        "liveness: a leader is elected and every replica catches up within --liveness-bound."),
    liveness_bound: int = typer.Option(15_000, "--liveness-bound",
                                       help="Liveness bound after --faults-until (ms)."),
) -> None:
    """Run the deterministic simulator over a range of seeds, checking invariants online."""
    if list_bugs:
        _list_bugs(as_json)
        return
    from refimpl.sim.runner import (RunSpec, UsageError, load_adapter_class, parse_seeds,
                                    run_seeds)

    try:
        seed_list = parse_seeds(seeds)
        _refuse_repeated_seeds(seeds, seed_list)
        spec = RunSpec(protocol=protocol, seeds=seed_list, faults=faults, steps=steps,
                       bounds_path=str(bounds) if bounds is not None else None, bug=bug,
                       faults_until_ms=faults_until, liveness_bound_ms=liveness_bound)
        if bounds is not None:   # before the adapter reads the constants it may not know
            _check_bounds_config(bounds, protocol, load_adapter_class(protocol).spec_module)
        spec.validate()
    except UsageError as e:
        err_console.print(f"[red]error:[/red] {safe(e)}")
        raise typer.Exit(2)
    if out is not None and out.exists() and not out.is_dir():
        err_console.print(f"[red]error:[/red] --out {out} exists and is not a folder")
        raise typer.Exit(2)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]simulate[/bold] {task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                  transient=True) as progress:
        task = progress.add_task(f"{protocol}/{faults}", total=len(spec.seeds))

        def done(_result):
            progress.advance(task)

        try:
            manifest = run_seeds(spec, out, done)
        except UsageError as e:          # FolderBusy: another run is writing into --out
            progress.stop()
            err_console.print(f"[red]error:[/red] {safe(e)}")
            raise typer.Exit(2)
    s = manifest["summary"]
    ok = (s["traces_with_violations"] > 0) if bug else (s["traces_with_violations"] == 0)
    undecided = [t["seed"] for t in manifest["traces"]
                 if t.get("liveness", {}).get("verdict") == "undecided"]
    if undecided:   # fail closed: the step budget ended before the liveness deadline
        ok = False
        err_console.print(f"[red]liveness undecided[/red] for seed(s) {undecided[:10]}: "
                          "--steps ended before --faults-until + --liveness-bound")
    manifest["outcome"] = "expected" if ok else "unexpected"
    if as_json:
        print_json(manifest)
    else:
        console.print(f"{s['traces']} traces, {s['steps']} steps"
                      + (f", {s['bytes']} bytes written to {out}" if out is not None else ""))
        if s["traces_with_violations"]:
            console.print(f"[red]{s['traces_with_violations']} trace(s) violated "
                          f"{', '.join(s['invariants_violated'])}[/red]")
            for t in manifest["traces"]:
                if t["violations"]:
                    v = t["violations"][0]
                    console.print(f"  seed {t['seed']}: {v['invariant']} at step {v['step']}: {v['detail']}")
                    break
        else:
            console.print("[green]no invariant violated[/green]")
        if bug:
            console.print(f"planted bug {bug}: " + ("caught" if ok else "[red]NOT caught[/red]"))
    if not ok:
        raise typer.Exit(1)


def export_itf_cmd(
    traces: List[Path] = typer.Argument(..., help="Trace files (.jsonl) or folders of them."),
    out: Path = typer.Option(..., "--out", help="Folder for the .itf.json files."),
    as_json: bool = typer.Option(False, "--json", help="Print the files written as JSON."),
) -> None:
    """Convert simulator traces (kraftcheck-trace/1) to ITF (.itf.json).

    Every readable trace is converted; exit 2 when any input is missing or not a readable
    trace (each is named, with the reason), 0 otherwise."""
    from refimpl.trace.format import TraceFormatError
    from refimpl.trace.itf import export_itf

    written, errors = [], []
    files: list[Path] = []
    for t in traces:
        if t.is_dir():
            found = sorted(f for f in t.rglob("*.jsonl") if f.is_file())
            if not found:
                errors.append(f"{t}: no *.jsonl trace file in this folder")
            files.extend(found)
        elif t.is_file():
            files.append(t)
        else:
            errors.append(f"{t}: no such file or folder")
    if out.exists() and not out.is_dir():
        errors.append(f"--out {out} exists and is not a folder")
        files = []
    seen: dict[str, Path] = {}
    for t in files:
        try:
            w = export_itf(t, out)
        except (OSError, TraceFormatError) as e:
            errors.append(f"{t}: {e}" if str(t) not in str(e) else str(e))
            continue
        if str(w) in seen:
            errors.append(f"{t}: same trace id as {seen[str(w)]}; {w} holds the later one")
        seen[str(w)] = t
        written.append(str(w))
    if as_json:
        print_json({"written": written, "errors": errors})
    else:
        for w in written:
            console.print(f"wrote {safe(w)}")
        for e in errors:
            err_console.print(f"[red]error:[/red] {safe(e)}")
    if errors:
        raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
    export = typer.Typer(name="export", help="Export traces to other formats.", no_args_is_help=True)
    export.command("itf")(export_itf_cmd)
    app.add_typer(export, name="export")
