"""The one command-line entry point: `kraftcheck SUBCOMMAND ...`.

Each subcommand lives in its own module under kraftcheck/commands/ and exposes
`register(app: typer.Typer) -> None`; modules are discovered here, so a stage adds its commands
without editing this file.  Every subcommand accepts --json and exits non-zero when its outcome
is not the expected one.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

import kraftcheck.commands as _commands

app = typer.Typer(
    name="kraftcheck",
    help="Formal-model-first verification of Apache Kafka's KRaft protocols (KIP-595, KIP-966).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _mod in sorted(m.name for m in pkgutil.iter_modules(_commands.__path__)):
    importlib.import_module(f"kraftcheck.commands.{_mod}").register(app)


def _terminate(signum, _frame) -> None:
    # SIGTERM unwinds like Ctrl-C: `finally` blocks stop TLC's process group and remove
    # partial outputs (kraftcore.tlc.runner) before the process exits with 128 + SIGTERM.
    raise SystemExit(128 + signum)


def main() -> None:
    import signal
    signal.signal(signal.SIGTERM, _terminate)
    try:
        app()
    except OSError as e:
        # an output that could not be written (a full disk, a read-only file system): exit 2,
        # "could not run", with one line naming the file (kraftcore.output.OutputError)
        _could_not_write(e)


def _could_not_write(e: OSError) -> None:
    import sys

    from kraftcore.output import err_console, print_json, safe, write_failure
    line = write_failure(e)
    if line is None:
        raise e
    if "--json" in sys.argv[1:]:
        print_json({"error": line})
    err_console.print(f"[red]error:[/] {safe(line)}", soft_wrap=True)
    raise SystemExit(2)
