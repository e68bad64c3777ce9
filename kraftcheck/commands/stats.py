"""`kraftcheck stats CORPUS... --out DIR`: conformance statistics over trace corpora (PySpark).

Ingests the traces (and the checker's verdicts with --verdicts), validates every step against
the spec's state graph with --graph (a TLC dot dump, or a no-symmetry manifest config such as
kraft-graph-small), and writes Parquet tables, summary.json and a self-contained report.html
under DIR.  Runs on an embedded local[*] Spark by default; --master spark://HOST:PORT runs the
same job on a cluster.  Exit 0 on success, 2 on bad input (missing files, unreadable graph).
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from kraftcheck.output import console, err_console, print_json


def stats(
    corpus: list[Path] = typer.Argument(..., help="Trace files or folders (searched for *.jsonl)."),
    out: Path = typer.Option(..., "--out", help="Output folder (replaced atomically)."),
    master: str = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    graph: str = typer.Option(None, "--graph",
                              help="State graph: a TLC `-dump dot,actionlabels` file or a "
                                   "no-symmetry manifest config name."),
    verdicts: Path = typer.Option(None, "--verdicts", help="Verdicts of `kraftcheck validate`."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Conformance, coverage and protocol metrics of a trace corpus, with an HTML report."""
    from spark_trace_analysis.jobs import GraphError, InputError, run_stats

    t0 = time.monotonic()

    def progress(msg: str) -> None:
        err_console.print(f"[dim]{time.monotonic() - t0:6.1f}s[/dim] {msg}")

    try:
        s = run_stats([str(p) for p in corpus], out, graph=graph,
                      verdicts=str(verdicts) if verdicts else None, master=master,
                      progress=progress)
    except (InputError, GraphError) as e:
        err_console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2)
    if as_json:
        print_json(s)
    else:
        v = s.get("verdicts", {})
        console.print(f"{s['traces']} traces, {s['steps']} steps, {s['bad_rows']} bad rows; "
                      + ", ".join(f"{k} {n}" for k, n in sorted(v.items())))
        if s.get("coverage"):
            c = s["coverage"]
            console.print(f"coverage of {s['graph']}: {c['states_visited']}/{c['states']} states, "
                          f"{c['edges_visited']}/{c['edges']} edges, "
                          f"{c['actions_visited']}/{c['actions']} actions")
        if s.get("agreement"):
            a = s["agreement"]
            console.print(f"distributed validation agrees with the checker on "
                          f"{a['agree']}/{a['compared']} traces")
        console.print(f"report: {s['report']}")
    raise typer.Exit(0)


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)
