"""`kraftcheck spec lint|vars`: review checks on the TLA+ modules (see kraftcheck.speclint)."""

from __future__ import annotations

import typer

from kraftcheck.output import console, err_console, print_json
from kraftcheck.paths import SPEC_DIR
from kraftcheck.speclint import lint_spec_dir

PROTOCOL_MODULES = ["KRaft", "ELR"]

spec_app = typer.Typer(help="Review checks on the TLA+ specs.", no_args_is_help=True)


@spec_app.command("lint")
def lint(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Named actions in Next, KIP citations, no symmetry in protocol modules; exit 1 on issues."""
    try:
        reports = lint_spec_dir(SPEC_DIR, PROTOCOL_MODULES)
    except ValueError as e:
        if as_json:
            print_json({"error": str(e)})
        else:
            err_console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    issues = [i for r in reports for i in r.issues]
    if as_json:
        print_json({"ok": not issues, "modules": [r.to_json() for r in reports]})
    else:
        for r in reports:
            console.print(f"{r.module}: {len(r.variables)} variables, {len(r.actions)} actions, "
                          f"{len(r.issues)} issues")
            for i in r.issues:
                console.print(f"  {i}")
    raise typer.Exit(1 if issues else 0)


def register(app: typer.Typer) -> None:
    app.add_typer(spec_app, name="spec")
