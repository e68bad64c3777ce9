"""Subcommands of the kraftcheck CLI; each module exposes register(app)."""

from __future__ import annotations

import typer

from kraftcore.output import err_console, print_json, safe


def fail(message: str, as_json: bool, code: int = 2) -> None:
    """Stop a command that could not run: one line on stderr (`{"error": ...}` on stdout under
    --json), exit `code` (2: could not run).  The message is printed escaped, never as markup."""
    if as_json:
        print_json({"error": message})
    else:
        err_console.print(f"[red]error:[/] {safe(message)}")
    raise typer.Exit(code)
