"""`kraftcheck simulate` (the deterministic simulator) and `kraftcheck export itf`.

  kraftcheck simulate --protocol kraft|elr --seeds 0:999 --faults PROFILE --steps N --out DIR
                      [--bounds CFG] [--bug NAME] [--list-bugs] [--json]
                      [--impl refimpl|kafka] [--plant NAME]
  kraftcheck export itf TRACE.jsonl... --out DIR

`--impl kafka` runs Apache Kafka's own code instead of the refimpl (kafka_bridge: the harness
kafka_harness/ built by `make setup`), with the same options, traces, manifest and footer.

Exit status of simulate: 0 when the outcome is the expected one (no invariant violated; with
--bug / --plant, at least one trace caught the planted bug / fault), 1 otherwise, 2 on bad
arguments, when the Kafka harness cannot run (no Java, not built, it failed: the cause is
named) or when another simulate is writing into the same --out (runs one after another into
one folder both appear in its manifest.json).
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

IMPLS = ("refimpl", "kafka")
RAFT_PLANTS = ("lying-flush", "forgetful-store", "misdeliver")   # kafka_bridge.RAFT_PLANTS

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
    impl: str = choice_option("refimpl", "--impl", values=IMPLS, what="implementation",
                              help="refimpl (the Python reference implementation) or kafka "
                              "(Apache Kafka's own code, kafka_harness/, built by make setup)."),
    plant: Optional[str] = choice_option(None, "--plant", values=RAFT_PLANTS,
                                         what="planted environment fault",
                                         help="--impl kafka: plant a fault of the harness's "
                                         "environment Kafka is not built to survive."),
) -> None:
    """Run the deterministic simulator over a range of seeds, checking invariants online."""
    if list_bugs:
        _list_bugs(as_json)
        return
    if impl == "kafka" or plant is not None:
        _simulate_kafka(impl, protocol, seeds, faults, steps, out, bounds, bug, plant, as_json,
                        faults_until, liveness_bound)
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
    _report(manifest, out, as_json, planted=bug, what="planted bug")
    if manifest["outcome"] != "expected":
        raise typer.Exit(1)


def _simulate_kafka(impl, protocol, seeds, faults, steps, out, bounds, bug, plant, as_json,
                    faults_until, liveness_bound) -> None:
    """`simulate --impl kafka`: Kafka's own code through kafka_harness/ (kafka_bridge).  Exit 2
    when the harness cannot run (no Java, jar not built, the harness failed: the message names
    the cause), never an empty corpus."""
    from refimpl.sim.runner import parse_seeds

    def fail(msg: str) -> None:
        err_console.print(f"[red]error:[/red] {safe(msg)}")
        raise typer.Exit(2)

    if impl != "kafka":
        fail("--plant plants a fault in the Kafka harness's environment: use it with --impl kafka")
    if bug is not None:
        fail("--bug plants a bug in the refimpl; Kafka runs as released (--plant plants a fault "
             "of its environment)")
    if protocol == "elr":
        _simulate_kafka_elr(seeds, faults, steps, out, bounds, plant, as_json, faults_until,
                            liveness_bound, fail)
        return
    if protocol != "kraft":
        fail(f"--impl kafka drives Kafka's raft client (--protocol kraft) and its KIP-966 code "
             f"(--protocol elr); protocol {protocol!r} has no Kafka harness")
    from kafka_bridge.raft import KafkaRunSpec, run

    def build():
        seed_list = parse_seeds(seeds)
        _refuse_repeated_seeds(seeds, seed_list)
        spec = KafkaRunSpec(seeds=seed_list, faults=faults, steps=steps,
                            bounds_path=str(bounds) if bounds is not None else None,
                            plant=plant, faults_until_ms=faults_until,
                            liveness_bound_ms=liveness_bound)
        if bounds is not None:
            _check_bounds_config(bounds, protocol, "KRaft")
        return spec

    _run_kafka(build, run, out, as_json, plant, f"kafka/{protocol}/{faults}", "in the Kafka "
               "harness", fail)


def _run_kafka(build, run, out, as_json, plant, what, where, fail) -> None:
    """The common part of `simulate --impl kafka` for every protocol: the run spec (`build()`,
    validated), the harness run (`run(spec, out)`: kafka_bridge), the report; exit 2 on bad
    options, when the harness cannot run or a seed's raw run is broken, 1 when the outcome is
    not the expected one."""
    from kafka_bridge.toolchain import HarnessError
    from refimpl.sim.runner import UsageError

    try:
        spec = build()
        spec.validate()
    except UsageError as e:
        fail(str(e))
    if out is not None and out.exists() and not out.is_dir():
        fail(f"--out {out} exists and is not a folder")
    try:
        with err_console.status(f"[bold]simulate[/bold] {what}: {len(spec.seeds)} seed(s) "
                                f"{where}"):
            manifest = run(spec, out)
    except (UsageError, HarnessError) as e:
        fail(str(e))
    _report(manifest, out, as_json, planted=plant, what="planted fault")
    if manifest.get("errors"):
        for e in manifest["errors"][:10]:
            err_console.print(f"[red]error:[/red] {safe(e)}")
        raise typer.Exit(2)
    if manifest["outcome"] != "expected":
        raise typer.Exit(1)


def _simulate_kafka_elr(seeds, faults, steps, out, bounds, plant, as_json, faults_until,
                        liveness_bound, fail) -> None:
    """`simulate --impl kafka --protocol elr`: Kafka's KIP-966 controller driven by the
    refimpl's brokers (kafka_bridge/elr.py, kafka_harness/elr/README.md)."""
    from refimpl.sim.runner import parse_seeds
    from kafka_bridge.elr_run import KafkaElrRunSpec, run

    if plant is not None:
        fail("--plant plants a fault of the raft harness's environment (--protocol kraft); "
             "the KIP-966 harness has none")

    def build():
        seed_list = parse_seeds(seeds)
        _refuse_repeated_seeds(seeds, seed_list)
        spec = KafkaElrRunSpec(seeds=seed_list, faults=faults, steps=steps,
                               bounds_path=str(bounds) if bounds is not None else None,
                               faults_until_ms=faults_until, liveness_bound_ms=liveness_bound)
        if bounds is not None:
            _check_bounds_config(bounds, "elr", "ELR")
        return spec

    _run_kafka(build, run, out, as_json, None, f"kafka/elr/{faults}",
               "through Kafka's controller", fail)


def _report(manifest: dict, out, as_json: bool, planted: str | None, what: str) -> None:
    """Set manifest["outcome"] and print the summary (as the refimpl's run does)."""
    s = manifest["summary"]
    ok = (s["traces_with_violations"] > 0) if planted else (s["traces_with_violations"] == 0)
    undecided = [t["seed"] for t in manifest["traces"]
                 if t.get("liveness", {}).get("verdict") == "undecided"]
    if undecided:   # fail closed: the step budget ended before the liveness deadline
        ok = False
        err_console.print(f"[red]liveness undecided[/red] for seed(s) {undecided[:10]}: "
                          "--steps ended before --faults-until + --liveness-bound")
    manifest["outcome"] = "expected" if ok and not manifest.get("errors") else "unexpected"
    if as_json:
        print_json(manifest)
        return
    impl = manifest.get("impl")
    console.print(f"{s['traces']} traces, {s['steps']} steps"
                  + (f" of {impl['name']} {impl['version']}" if impl and impl.get("version") else "")
                  + (f", {s['bytes']} bytes written to {out}" if out is not None else ""))
    if s["traces_with_violations"]:
        console.print(f"[red]{s['traces_with_violations']} trace(s) violated "
                      f"{', '.join(s['invariants_violated'])}[/red]")
        for t in manifest["traces"]:
            if t["violations"]:
                v = t["violations"][0]
                console.print(f"  seed {t['seed']}: {v['invariant']} at step {v['step']}: "
                              f"{safe(v['detail'])}")
                break
    else:
        console.print("[green]no invariant violated[/green]")
    if planted:
        console.print(f"{what} {planted}: " + ("caught" if ok else "[red]NOT caught[/red]"))


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
