"""`kraftcheck stats CORPUS... --out DIR`: conformance statistics over trace corpora (PySpark).

Ingests the traces (and the checker's verdicts with --verdicts), validates every step against
the spec's state graph with --graph (a TLC dot dump, or a no-symmetry manifest config such as
kraft-graph-small), and writes Parquet tables, summary.json and a self-contained report.html
under DIR.  Runs on an embedded local[*] Spark by default; --master spark://HOST:PORT runs the
same job on a cluster.  Exit 0 on success, 2 on bad input (missing files, unreadable graph)
or when Spark fails (no cluster at --master, a job error): the message says which.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

import typer
from rich.markup import escape

from kraftcore.output import console, err_console, print_json


def _command(corpus, out, master, graph, graph_bounds, verdicts, replay=None) -> str:
    """The command line of this run, rebuilt from what was parsed (shown in the report)."""
    words = ["kraftcheck", "stats", *map(str, corpus), "--out", str(out)]
    for flag, value in (("--master", master), ("--graph", graph), ("--graph-bounds", graph_bounds)):
        if value is not None:
            words += [flag, str(value)]
    for v in verdicts or ():
        words += ["--verdicts", str(v)]
    for r in replay or ():
        words += ["--replay", str(r)]
    return shlex.join(words)


def stats(
    corpus: list[Path] = typer.Argument(..., help="Trace files or folders (searched for *.jsonl)."),
    out: Path = typer.Option(..., "--out", help="Output folder (replaced atomically)."),
    master: str = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    graph: str = typer.Option(None, "--graph",
                              help="State graph: a TLC `-dump dot,actionlabels` file or a "
                                   "no-symmetry manifest config name."),
    graph_bounds: str = typer.Option(None, "--graph-bounds",
                                     help="The config a dot-dump --graph was explored under: "
                                          "coverage leaves out traces of other bounds."),
    verdicts: list[Path] = typer.Option(None, "--verdicts",
                                        help="Verdicts of `kraftcheck validate` (a file or "
                                             "folder; repeat --verdicts for several)."),
    replay: list[Path] = typer.Option(None, "--replay",
                                      help="A `kraftcheck replay --out` folder: the coverage "
                                           "section colors the graph's edges by its outcomes "
                                           "(repeat --replay for several implementations)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Conformance, coverage and protocol metrics of a trace corpus, with an HTML report."""
    from spark_trace_analysis.jobs import GraphError, InputError, run_stats

    t0 = time.monotonic()

    def progress(msg: str) -> None:
        err_console.print(f"[dim]{time.monotonic() - t0:6.1f}s[/dim] {msg}")

    try:
        s = run_stats([str(p) for p in corpus], out, graph=graph,
                      verdicts=[str(v) for v in verdicts] if verdicts else None, master=master,
                      progress=progress, graph_bounds=graph_bounds,
                      command=_command(corpus, out, master, graph, graph_bounds, verdicts,
                                       replay),
                      replay=[str(r) for r in replay] if replay else None)
    except (InputError, GraphError) as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(2)
    except Exception as e:
        why = spark_failure(e)
        if why is None:
            raise
        where = master or os.environ.get("KRAFTCHECK_SPARK_MASTER") or "local[*]"
        err_console.print(f"[red]error:[/red] {escape(f'Spark failed on master {where}: {why}')}")
        raise typer.Exit(2)
    if as_json:
        print_json(s)
    else:
        console.print(summary_line(s))
        if s.get("coverage"):
            c = s["coverage"]
            console.print(f"coverage of {s['graph']}: {c['states_visited']}/{c['states']} states, "
                          f"{c['edges_visited']}/{c['edges']} edges, "
                          f"{c['actions_visited']}/{c['actions']} actions"
                          + (f"; {c['traces_other_bounds']} traces of other bounds left out"
                             if c.get("traces_other_bounds") else ""))
        if s.get("agreement"):
            a = s["agreement"]
            console.print(f"distributed validation agrees with the checker on "
                          f"{a['agree_in_graph']}/{a['judged_in_graph']} traces judged inside "
                          f"the graph; {a['agree']}/{a['compared']} in all "
                          f"({a['checker_only']} checker only, {a['spark_only']} distributed "
                          f"only; the rest left the graph or are of another protocol)")
        for r in s.get("replay") or ():
            console.print(f"replay on {r['impl']} ({r['graph']}): {r['replayed']}/{r['edges']} "
                          f"edges replayed, {r['diverged']} diverged, {r['not_drivable']} not "
                          f"drivable, {r['not_targeted']} not targeted")
        console.print(f"report: {escape(s['report'])}")
    raise typer.Exit(0)


def summary_line(s: dict) -> str:
    v = s.get("verdicts", {})
    bad = f"{s['bad_rows']} bad rows"
    if "verdict_bad_rows" in s:
        bad += f", {s['verdict_bad_rows']} bad verdict rows"
    return (f"{s['traces']} traces, {s['steps']} steps, {bad}; "
            + ", ".join(f"{k} {n}" for k, n in sorted(v.items())))


def spark_failure(e: BaseException) -> str | None:
    """A one-line reason when `e` comes from Spark or its Java gateway (Py4J), else None."""
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:
        return None
    if not isinstance(e, (PySparkException, Py4JError)):
        return None
    text = str(e).strip()
    java = getattr(e, "java_exception", None)
    if java is not None:  # Py4JJavaError: the Java exception's own message, not its stack
        try:
            text = java.toString()
        except Exception:  # the gateway may be gone
            pass
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(e).__name__)
    hint = ""
    from spark_trace_analysis.session import driver_log

    log = driver_log()
    if getattr(e, "getCondition", lambda: None)() == "JAVA_GATEWAY_EXITED":
        hint = f" (the JVM's own error is in {log})"
        try:
            tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-3:]
            if tail:
                hint += ": " + " | ".join(tail)
        except OSError:
            pass
    elif log.is_file():
        hint = f" (Spark's log: {log})"
    return f"{type(e).__name__}: {first[:500]}{hint}"


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)
