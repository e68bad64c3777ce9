"""`kraftcheck validate PATHS... [--graph CFG | --lazy | --config CFG] [--max-out-of-scope N]
[--jobs N] [--json] [--out DIR]`.

Checks trace files against the TLA+ spec by lookup in TLC's state graph (trace_checker/;
docs/trace-checking.md).  Exit status (fail closed): 0 only when some step was judged and no
trace is invalid or malformed and at most --max-out-of-scope (default 0) are out of scope;
1 otherwise; 2 on a usage or toolchain error (TLC cannot run, a path holds no trace file).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kraftcore.output import console, err_console, print_json, safe
from kraftcheck.commands import fail as _fail
from kraftcore.tlc.cfg import CfgError
from kraftcore.tlc.java import ToolchainError
from kraftcore.tlc.manifest import ManifestError


def validate(
    paths: list[Path] = typer.Argument(..., help="Trace files or folders (*.jsonl, *.ndjson, *.trace)."),
    graph: str = typer.Option(None, "--graph", help="Full-graph mode: a no-symmetry bfs config "
                              "of the manifest (e.g. kraft-graph-small)."),
    lazy: bool = typer.Option(False, "--lazy", help="Neighbourhood mode (the default when no "
                              "--graph): successors of the corpus's states, one TLC run."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Worker processes."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    out: Path = typer.Option(None, "--out", help="Keep failing traces here, each with a "
                             ".diagnosis.json, plus summary.json."),
    manifest: Path = typer.Option(None, "--manifest", help="Folder of the config manifest "
                                  "(default tlc_configs/)."),
    no_recheck: bool = typer.Option(False, "--no-recheck", help="Full-graph mode: do not "
                                    "re-check steps leaving the graph (they become out of scope)."),
    chunk: int = typer.Option(4000, "--chunk", min=1, help="Source states per TLC run."),
    module: Path = typer.Option(None, "--module", help="With --graph FILE.cfg not in the "
                                "manifest: the TLA+ module it configures."),
    show_valid: bool = typer.Option(False, "--show-valid", help="List valid traces too."),
    config: str = typer.Option(None, "--config", help="Neighbourhood mode under this manifest "
                               "config for every trace (wins over the trace headers' bounds)."),
    max_out_of_scope: int = typer.Option(0, "--max-out-of-scope", min=0, help="Fail (exit 1) "
                                         "when more traces than this are out of scope."),
    max_liveness_not_judged: int = typer.Option(
        0, "--max-liveness-not-judged", min=0, help="Fail (exit 1) when more valid traces "
        "than this could not be judged for liveness (partial observation of a timer variable)."),
) -> None:
    """Check traces against the spec: valid, invalid (with diagnosis), out of scope, malformed."""
    from trace_checker.corpus import (CorpusError, check_out_not_input, collect_files,
                                       validate_corpus)
    from trace_checker.coverage import coverage_lines
    from trace_checker.fullgraph import GraphBuildError
    from trace_checker.neighbourhood import NeighbourhoodError
    from trace_checker.verdict import summary_lines

    if graph and (lazy or config):
        _fail("choose one of --graph CFG, --lazy and --config CFG", as_json)
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        _fail(f"no such file or folder: {', '.join(missing)}", as_json)
    try:
        files = collect_files(paths, strict=True)
    except CorpusError as e:
        _fail(str(e), as_json)
    total = len(files)
    if out is not None:
        try:
            check_out_not_input(out, paths, files)
            check_out_folder(out)
        except ValueError as e:
            _fail(str(e), as_json)
    common = dict(graph=graph, lazy=lazy, jobs=jobs, out=out, manifest_dir=manifest,
                  recheck=not no_recheck, chunk=chunk, module=module, config=config,
                  max_out_of_scope=max_out_of_scope,
                  max_liveness_not_judged=max_liveness_not_judged)
    try:
        if as_json:
            summary = validate_corpus(paths, **common)
        else:
            with Progress(TextColumn("validate"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), TextColumn("{task.fields[tlc]}"),
                          console=err_console, transient=True) as bar:
                task = bar.add_task("traces", total=total, tlc="")
                summary = validate_corpus(
                    paths, **common,
                    progress=lambda done, _total: bar.update(task, completed=done),
                    status=lambda text: bar.update(task, tlc=text))
    except (ToolchainError, ManifestError, CfgError, GraphBuildError, NeighbourhoodError,
            CorpusError) as e:
        _fail(str(e), as_json)
    if as_json:
        print_json(summary)
    else:
        g = summary.get("graph")
        if g:
            console.print(f"graph {safe(g['config'])}: {g['states']} states, {g['edges']} edges "
                          f"({'cached index' if g['cached'] else 'built'}, "
                          f"{g['load_seconds']}s)")
        for line in summary_lines(summary, show_valid) + coverage_lines(summary):
            console.print(line)
        if out is not None:
            console.print(f"kept failing traces and diagnoses in {safe(out)}")
    raise typer.Exit(0 if summary["ok"] else 1)




def check_out_folder(out: Path) -> None:
    """--out is replaced by this run's failures: it must be absent, empty, or an earlier
    --out of validate (it holds a validate summary.json); anything else is refused."""
    from trace_checker.corpus import is_validate_out
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not is_validate_out(out):
        raise ValueError(f"--out {out} is a folder with other content (no validate "
                         "summary.json): give a new or empty folder")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
