"""`kraftcheck version`: the tool's version and the Java / TLC it will use."""

from __future__ import annotations

import typer

from kraftcheck import __version__
from kraftcore.output import console, print_json
from kraftcore.tlc.java import ToolchainError, toolchain


def version(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print versions and the toolchain; exit 1 when Java or TLC is unusable."""
    info: dict = {"kraftcheck": __version__}
    try:
        info.update(toolchain().describe())
        ok = True
    except ToolchainError as e:
        info["error"] = str(e)
        ok = False
    if as_json:
        print_json(info)
    else:
        for k, v in info.items():
            console.print(f"{k}: {v}")
    raise typer.Exit(0 if ok else 1)


def register(app: typer.Typer) -> None:
    app.command("version")(version)
