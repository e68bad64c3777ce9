"""Typed choices for the CLI's options, with a suggestion when a value is mistyped.

`choice_option(...)` is a typer Option whose value must be one of a fixed list: --help shows
the list (`[none|lossy|...]`), shell completion offers it, and a typo exits 2 with the closest
choice (`'chaoss' is not a fault profile (none, lossy, ...); did you mean 'chaos'?`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

import typer

__all__ = ["choice_parser", "choice_option"]


def choice_parser(values: Sequence[str], what: str) -> Callable[[str], str]:
    """A typer `parser` accepting exactly `values`; the error names the closest one."""
    values = tuple(values)

    def parse(value: str) -> str:
        if value in values:
            return value
        close = difflib.get_close_matches(str(value), values, n=1, cutoff=0.5) or \
            [v for v in values if v.lower() == str(value).lower()]
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise typer.BadParameter(f"{value!r} is not a {what} ({', '.join(values)}){hint}")

    return parse


def choice_option(default: Any, *names: str, values: Sequence[str], what: str,
                  help: str) -> Any:
    """typer.Option(default, *names) restricted to `values` (see the module doc)."""
    values = tuple(values)
    return typer.Option(default, *names, help=help, parser=choice_parser(values, what),
                        metavar="[" + "|".join(values) + "]",
                        autocompletion=lambda incomplete: [v for v in values
                                                           if v.startswith(incomplete)])
