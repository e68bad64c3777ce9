"""Human-readable rendering of TLC results: a suite table and counterexample step tables."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kraftcore.tlc.runner import TLCResult
from kraftcore.output import safe
from kraftcore.values import Value, ValueError_, canonical_json, to_tla

_MAX_CELL = 160


def _short(v: Value) -> str:
    try:
        s = to_tla(v)
    except ValueError_:           # a string TLA+ cannot spell (a control character): its JSON
        s = canonical_json(v)
    return s if len(s) <= _MAX_CELL else s[: _MAX_CELL - 3] + "..."


def changed_variables(prev, cur) -> list[str]:
    return [k for k in cur if prev is None or prev.get(k) != cur[k]]


def counterexample_table(result: TLCResult) -> Table:
    """One row per step: the action and, for each variable that changed, its new value."""
    t = Table(title=f"Counterexample for {safe(result.name)}: {safe(result.violated)} "
                    f"({len(result.counterexample)} states)", show_lines=True)
    t.add_column("#", justify="right")
    t.add_column("action")
    t.add_column("changed variables")
    prev = None
    for step in result.counterexample:
        names = changed_variables(prev, step.state)
        body = "\n".join(safe(f"{k} = {_short(step.state[k])}") for k in names) or "(no change)"
        t.add_row(str(step.index), safe(step.action), body)
        prev = step.state
    if result.loop_back_to is not None:
        t.add_row("", f"back to state {result.loop_back_to}", "")
    return t


def result_line(r: TLCResult) -> str:
    mark = "[green]PASS[/]" if r.as_expected else "[red]FAIL[/]"
    states = f"{r.distinct_states:,} distinct" if r.distinct_states is not None else (
        f"{r.generated_states:,} generated" if r.generated_states is not None else "-")
    # names and statuses come from TLC's output (a damaged log may hold anything): printed as
    # they are, never read as Rich markup
    what = safe(r.status) + (f" {safe(r.violated)}" if r.violated else "")
    return (f"{mark} {safe(r.name)}: {what} (expected {safe(r.expected)}); {states}, "
            f"depth {r.depth}, {r.seconds:.1f}s")


def suite_table(results: list[TLCResult]) -> Table:
    t = Table(title="TLC suite")
    for col, just in (("config", "left"), ("profile", "left"), ("status", "left"),
                      ("violated", "left"), ("expected", "left"), ("distinct", "right"),
                      ("depth", "right"), ("cex", "right"), ("seconds", "right"), ("", "left")):
        t.add_column(col, justify=just)
    for r in results:
        t.add_row(safe(r.name), safe(r.profile), safe(r.status), safe(r.violated or ""),
                  safe(r.expected),
                  f"{r.distinct_states:,}" if r.distinct_states is not None else "",
                  str(r.depth) if r.depth is not None else "",
                  str(len(r.counterexample)) if r.counterexample else "",
                  f"{r.seconds:.1f}" + (f" (cached, {r.cached_from['seconds']:.1f})"
                                        if r.cached_from else ""),
                  "[green]as expected[/]" if r.as_expected else "[red]UNEXPECTED[/]")
    return t


def print_result(console: Console, r: TLCResult, show_counterexample: bool = True) -> None:
    console.print(result_line(r))
    for why in r.mismatches:
        console.print(f"  [red]- {safe(why)}[/]")
    for e in r.errors:
        console.print(f"  [red]error:[/] {safe(e)}")
    if r.recovered_from:
        console.print(f"  resumed from the checkpoint {safe(r.recovered_from)}")
    if r.progress_at_stop:
        p = r.progress_at_stop
        console.print(f"  stopped at depth {p['depth']}: {p['distinct']:,} distinct states, "
                      f"{p['generated']:,} generated, {p['queue']:,} on the queue")
    if r.checkpoint:
        console.print(f"  checkpoint kept: resume with `kraftcheck tlc run {escape(r.name)} "
                      f"--recover {escape(r.checkpoint)}`")
    if show_counterexample and r.counterexample:
        console.print(counterexample_table(r))
