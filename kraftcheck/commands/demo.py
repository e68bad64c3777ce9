"""`kraftcheck demo`: the main job on the embedded defaults.

Stages, each reported in the summary (out/demo/summary.json):
  1. tlc       the ci profile of every spec, each config judged against the manifest
  2. simulate  a small deterministic corpus of refimpl traces for both protocols
Later stages of the pipeline (validate, stats) are added here as they land.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from kraftcheck.commands.tlc import run_entries
from kraftcheck.output import console, err_console, print_json, write_atomic
from kraftcheck.paths import REPO_ROOT
from kraftcheck.tlc.java import ToolchainError, toolchain
from kraftcheck.tlc.manifest import ManifestError, load_manifest
from kraftcheck.tlc.report import suite_table


def _stage_tlc(profile: str, only: str | None, show: bool) -> dict:
    import re
    entries = [e for e in load_manifest() if e.profile == profile
               and (only is None or re.search(only, e.name))]
    t0 = time.monotonic()
    results = run_entries(entries, show_progress=show)
    if show:
        console.print(suite_table(results))
    return {
        "stage": "tlc", "profile": profile, "configs": len(results),
        "as_expected": sum(r.as_expected for r in results),
        "ok": all(r.as_expected for r in results) and bool(results),
        "seconds": round(time.monotonic() - t0, 1),
        "results": [r.to_json(with_counterexample=False) for r in results],
    }


def _stage_simulate(out: Path, seeds: int, show: bool) -> dict | None:
    try:
        from refimpl.sim.corpus import simulate_corpus  # the refimpl stage
    except ImportError:
        return None
    t0 = time.monotonic()
    runs = []
    ok = True
    for protocol in ("kraft", "elr"):
        for faults in ("none", "chaos"):
            m = simulate_corpus(protocol=protocol, seeds=range(seeds), faults=faults,
                                steps=300, out=out / "traces" / f"{protocol}-{faults}",
                                show_progress=show)
            violations = sum(len(t.get("invariant_violations", [])) for t in m["traces"])
            ok = ok and violations == 0
            runs.append({"protocol": protocol, "faults": faults, "traces": len(m["traces"]),
                         "steps": sum(t["steps"] for t in m["traces"]),
                         "invariant_violations": violations,
                         "dir": str(out / "traces" / f"{protocol}-{faults}")})
    return {"stage": "simulate", "ok": ok, "runs": runs,
            "seconds": round(time.monotonic() - t0, 1)}


def demo(out: Path = typer.Option(REPO_ROOT / "out" / "demo", help="Where outputs go."),
         profile: str = typer.Option("ci", help="TLC profile to run."),
         only: str = typer.Option(None, help="Only TLC configs whose name matches this regex."),
         seeds: int = typer.Option(20, help="Simulated traces per protocol and fault profile."),
         as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON.")) -> None:
    """Run the whole pipeline on the embedded defaults and print a summary."""
    try:
        toolchain()
    except (ToolchainError, ManifestError) as e:
        if as_json:
            print_json({"error": str(e)})
        else:
            err_console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    show = not as_json
    stages = [_stage_tlc(profile, only, show)]
    sim = _stage_simulate(out, seeds, show)
    if sim is not None:
        stages.append(sim)
    summary = {"ok": all(s["ok"] for s in stages), "out": str(out), "stages": stages}
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    if as_json:
        print_json(summary)
    else:
        for s in stages:
            mark = "[green]ok[/]" if s["ok"] else "[red]NOT OK[/]"
            if s["stage"] == "tlc":
                console.print(f"tlc ({s['profile']}): {s['as_expected']}/{s['configs']} configs as "
                              f"expected in {s['seconds']}s  {mark}")
            elif s["stage"] == "simulate":
                for r in s["runs"]:
                    console.print(f"simulate {r['protocol']}/{r['faults']}: {r['traces']} traces, "
                                  f"{r['steps']} steps, {r['invariant_violations']} invariant "
                                  f"violations -> {r['dir']}")
                console.print(f"simulate: {s['seconds']}s  {mark}")
        console.print(f"summary: {out / 'summary.json'}")
    raise typer.Exit(0 if summary["ok"] else 1)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
