"""`kraftcheck spec lint|vars`: review checks on the TLA+ modules (see kraftcore.speclint)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from kraftcore.output import console, err_console, print_json
from kraftcore.paths import REPO_ROOT, SPEC_DIR
from kraftcore.speclint import lint_spec_dir

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


DEFAULT_TYPESET_OUT = REPO_ROOT / "out" / "spec"


def _typeset_fail(message: str, as_json: bool, code: int) -> None:
    if as_json:
        print_json({"error": message})
    else:
        err_console.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


@spec_app.command("typeset")
def typeset(out: Path = typer.Option(DEFAULT_TYPESET_OUT, "--out",
                                     help="Output folder (index.html, NAME.html, NAME.pdf)."),
            pdf: bool = typer.Option(False, "--pdf/--no-pdf",
                                     help="Also typeset PDFs with tla2tex (needs pdflatex: "
                                          "`make spec-pdf` installs it)."),
            as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Render every spec/*.tla module as HTML (always) and as PDF with tla2tex (--pdf).

    Exit 2 when --pdf is asked for and pdflatex or Java/TLC is missing (the message says how to
    install it), 1 when tla2tex or LaTeX fails on a module."""
    from kraftcore.tlc.java import ToolchainError, toolchain
    from kraftcheck.typeset import (LatexMissing, TypesetError, latex_command, load_modules,
                                    render_html, typeset_pdf)

    try:
        mods = load_modules(SPEC_DIR)
    except (OSError, TypesetError) as e:
        _typeset_fail(str(e), as_json, 2)
    pdfs = []
    if pdf:
        try:
            latex_command()
            tc = toolchain()
        except (LatexMissing, ToolchainError) as e:
            _typeset_fail(str(e), as_json, 2)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        with Progress(TextColumn("[bold]tla2tex[/bold] {task.description}"), BarColumn(),
                      MofNCompleteColumn(), console=err_console, transient=True,
                      disable=as_json) as prog:
            task = prog.add_task("", total=len(mods))
            for m in mods:
                prog.update(task, description=m.name)
                try:
                    pdfs.append(typeset_pdf(m, out, tc.java, tc.jar))
                except TypesetError as e:
                    _typeset_fail(str(e), as_json, 1)
                prog.advance(task)
    html = render_html(mods, out, {p.path.stem for p in pdfs})
    if as_json:
        print_json({"out": str(out), "modules": [m.name for m in mods],
                    "html": [str(p) for p in html], "pdf": [{"path": str(p.path), "pages": p.pages} for p in pdfs]})
    else:
        console.print(f"{len(mods)} modules: {len(html)} HTML pages"
                      + (f", {len(pdfs)} PDFs" if pdf else "") + f" in {escape(str(out))}")
        console.print(f"open {escape(str(out / 'index.html'))}")


def register(app: typer.Typer) -> None:
    app.add_typer(spec_app, name="spec")
