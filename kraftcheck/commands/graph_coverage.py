"""`kraftcheck tlc coverage [CFG...] [--all] [--cached-only] [--markdown] [--json]`: what the
state graphs of full-graph mode reach (trace_checker/graph_coverage.py; docs/graph-coverage.md).

Exit status: 0 when every graph was read, 2 when a config is unknown, not a graph config, or
its graph could not be built (or, with --cached-only, is not cached).
"""

from __future__ import annotations

import typer

from kraftcheck.commands.tlc import tlc_app
from kraftcore.output import console, err_console, print_json, safe


def coverage(
    configs: list[str] = typer.Argument(None, help="Graph configs (names or tlc_configs/NAME.cfg)."),
    all_graphs: bool = typer.Option(False, "--all", help="Every graph config of the manifest "
                                    "(bfs, expect ok, named *-graph-*)."),
    cached_only: bool = typer.Option(False, "--cached-only", help="Never run TLC: a graph "
                                     "that is not cached is an error (exit 2)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the tables of "
                                  "docs/graph-coverage.md."),
    timeout: float = typer.Option(None, help="Wall-clock limit of a graph build (seconds)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Actions and KIP situations each graph reaches (counted in the cached graph index)."""
    from kraftcore.tlc.java import ToolchainError
    from kraftcore.tlc.manifest import ManifestError, find_entry, load_manifest
    from trace_checker.fullgraph import GraphBuildError, load_graph
    from trace_checker.graph_coverage import (cached_graph, graph_configs, graph_coverage_of,
                                              markdown_tables)

    def fail(message: str) -> None:
        if as_json:
            print_json({"error": message})
        else:
            err_console.print(f"[red]error:[/] {safe(message)}")
        raise typer.Exit(2)

    if bool(configs) == all_graphs:
        fail("give graph configs or --all (not both)")
    try:
        entries = load_manifest()
        chosen = graph_configs(entries) if all_graphs else [find_entry(c, entries) for c in configs]
    except ManifestError as e:
        fail(str(e))
    reports = []
    for entry in chosen:
        try:
            if cached_only:
                g = cached_graph(entry)
                if g is None:
                    fail(f"the graph of {entry.name} is not cached (run without --cached-only "
                         "to build it)")
            else:
                g = load_graph(entry, timeout=timeout).graph
            reports.append(graph_coverage_of(g, entry))
        except (GraphBuildError, ToolchainError, ValueError) as e:
            fail(f"{entry.name}: {e}")
    if as_json:
        print_json({"graphs": [r.to_json() for r in reports]})
    elif markdown:
        console.print(markdown_tables(reports), markup=False, highlight=False, soft_wrap=True)
    else:
        for r in reports:
            console.print(f"{r.config}: {r.states:,} states, {r.edges:,} edges, every state within "
                          f"{r.depth} steps (TLC's depth {r.depth + 1})",
                          markup=False, highlight=False)
            console.print("  actions never taken: " + (", ".join(r.actions_missing) or "none"),
                          markup=False, highlight=False)
            if r.unexpected_labels:
                console.print("  labels outside the next-state relation: "
                              + ", ".join(r.unexpected_labels), markup=False, highlight=False)
            for s in r.situations:
                where = (f"{s.count:,} {s.kind}s, first at depth {s.first_depth}" if s.reached
                         else "never")
                console.print(f"  {s.key}: {where}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    # a `tlc` subcommand: tlc_app is added to the main app by kraftcheck/commands/tlc.py
    tlc_app.command("coverage")(coverage)
