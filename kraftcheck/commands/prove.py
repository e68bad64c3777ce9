"""`kraftcheck prove`: the z3 proofs of the rules the specs and the refimpl share (proofs/).

Each obligation is reported with its status (proved | counterexample | unknown), the status
it is expected to have (planted variants and findings expect a counterexample), the bound
("unbounded" when it holds for every size), the seconds it took and, for a counterexample,
readable values.  Exit 0 when every obligation is as expected, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import json
import time

import typer
from rich.table import Table

from kraftcore.output import console, err_console, print_json


def run_proofs(only: list[str] | None = None, timeout_s: float = 120.0,
               progress: bool = False) -> dict:
    """Run the selected obligations; raises proofs.registry.UnknownObligation on a bad name.
    The summary is what `--json` prints (and the demo's proofs stage reports)."""
    from proofs.core import check
    from proofs.registry import select
    obs = select(only)
    t0 = time.monotonic()
    results = []
    for i, ob in enumerate(obs, 1):
        if progress:
            err_console.print(f"[dim]{time.monotonic() - t0:6.1f}s[/dim] prove "
                              f"[{i}/{len(obs)}] {ob.name}", highlight=False)
        results.append(check(ob, timeout_ms=int(timeout_s * 1000)))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return {"ok": bool(results) and all(r.as_expected for r in results),
            "obligations": [r.to_json() for r in results],
            "counts": counts,
            "as_expected": sum(r.as_expected for r in results),
            "total": len(results),
            "seconds": round(time.monotonic() - t0, 2)}


def _table(summary: dict) -> Table:
    t = Table(title="z3 proof obligations")
    for col in ("obligation", "kind", "status", "expected", "bound", "seconds", ""):
        t.add_column(col, overflow="fold")
    for r in summary["obligations"]:
        mark = "[green]ok[/]" if r["as_expected"] else "[red]NOT AS EXPECTED[/]"
        t.add_row(r["name"], r["kind"], r["status"], r["expected"], r["bound"],
                  f"{r['seconds']:.2f}", mark)
    return t


def prove(only: list[str] = typer.Option(None, "--only", help=(
              "Only these obligations: a name, a family (kip595, kip966) or a glob such as "
              "'kip966-planted-*'; repeatable.")),
          list_: bool = typer.Option(False, "--list", help="List the obligations and exit."),
          timeout: float = typer.Option(120.0, help="Solver timeout per obligation (s)."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Prove the shared KIP-595 / KIP-966 rules with z3; planted variants must be refuted."""
    from proofs.registry import UnknownObligation, select
    try:
        if list_:
            obs = select(only)
            if as_json:
                print_json([{"name": o.name, "family": o.family, "kind": o.kind,
                             "expected": o.expected, "bound": o.bound,
                             "statement": o.statement, "spec": o.spec, "python": o.python,
                             "note": o.note} for o in obs])
            else:
                for o in obs:
                    console.print(f"{o.name}  [{o.kind}, expect {o.expected}, {o.bound}]  "
                                  f"{o.statement}")
            raise typer.Exit(0)
        summary = run_proofs(only, timeout, progress=not as_json)
    except UnknownObligation as e:
        if as_json:
            print_json({"error": str(e)})
        else:
            err_console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    if as_json:
        print_json(summary)
    else:
        console.print(_table(summary))
        for r in summary["obligations"]:
            if r["counterexample"] is not None or r["reason"]:
                console.print(f"[bold]{r['name']}[/] ({r['status']}"
                              + (f"; fails {', '.join(r['failed'])}" if r["failed"] else "")
                              + ")")
                if r["note"]:
                    console.print(f"  {r['note']}", markup=False)
                if r["reason"]:
                    console.print(f"  reason: {r['reason']}")
                if r["counterexample"] is not None:
                    console.print("  " + json.dumps(r["counterexample"]), soft_wrap=True,
                                  markup=False)
        console.print(f"prove: {summary['as_expected']}/{summary['total']} obligations as "
                      f"expected in {summary['seconds']}s  "
                      + ("[green]ok[/]" if summary["ok"] else "[red]NOT OK[/]"))
    raise typer.Exit(0 if summary["ok"] else 1)


def register(app: typer.Typer) -> None:
    app.command("prove")(prove)
