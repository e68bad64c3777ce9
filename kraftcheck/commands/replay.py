"""`kraftcheck replay --graph CFG --impl refimpl|kafka [--edges all|unvisited|"sample N"]
[--corpus DIR] [--seed S] [--bug NAME] [--out DIR] [--json]`.

Model-guided replay (trace_checker/replay/, docs/replay.md): every target edge of the config's
state graph is driven on the implementation along a shortest path from an initial state; each
edge is replayed, diverged at step k (with the trace checker's diagnosis) or not drivable (with
the reason).  Divergences are kept as kraftcheck-trace/1 traces that `kraftcheck validate`
also judges.

Exit status (fail closed): 0 when no target edge diverged and at least --min-replayed of them
replayed (with --bug: when the planted bug shows, i.e. some edge diverged); 1 otherwise; 2 on a
usage error or when the implementation cannot be driven (e.g. `--impl kafka` without the
harness's serve mode).
"""

from __future__ import annotations

from pathlib import Path

import typer

from kraftcore.output import console, err_console, print_json, safe
from kraftcheck.commands import fail as _fail

__all__ = ["register"]


def replay(
    graph: str = typer.Option(..., "--graph", help="A no-symmetry bfs config of the manifest "
                              "(e.g. kraft-graph-small): its dumped state graph."),
    impl: str = typer.Option("refimpl", "--impl", help="refimpl | kafka"),
    edges: str = typer.Option("all", "--edges", help='all | unvisited | "sample N"'),
    corpus: Path = typer.Option(None, "--corpus", help="Traces whose walked edges count as "
                                "visited (--edges unvisited)."),
    seed: int = typer.Option(0, "--seed", help="Seed of --edges sample."),
    bug: str = typer.Option(None, "--bug", help="Plant a refimpl bug (kraftcheck simulate "
                            "--list-bugs): the run must show it."),
    out: Path = typer.Option(None, "--out", help="Write replay.json, edges.jsonl and the "
                             "divergence traces here."),
    min_replayed: float = typer.Option(0.9, "--min-replayed", min=0.0, max=1.0,
                                       help="Fail (exit 1) when a smaller share of the target "
                                       "edges replayed."),
    no_validate: bool = typer.Option(False, "--no-validate", help="Do not run the trace "
                                     "checker on the divergence traces."),
    workers: int = typer.Option(0, "--workers", min=0, help="Implementation processes of an "
                                "--edges all run on the Kafka harness (0: one per core, at most "
                                "2); the outcomes are the same for any number."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Drive the implementation along the spec's state graph, edge by edge."""
    from kraftcore.tlc.java import ToolchainError
    from kraftcore.tlc.manifest import ManifestError
    from trace_checker.fullgraph import GraphBuildError
    from trace_checker.replay.driver import DriverError
    from trace_checker.replay.run import IMPLS, ReplayError, run_replay

    if impl not in IMPLS:
        _fail(f"--impl {impl!r}: choose one of {', '.join(IMPLS)}", as_json)
    if corpus is not None and not corpus.exists():
        _fail(f"--corpus {corpus}: no such file or folder", as_json)
    if out is not None and out.exists() and not out.is_dir():
        _fail(f"--out {out} exists and is not a folder", as_json)
    if out is not None and out.is_dir() and any(out.iterdir()) \
            and not (out / "replay.json").is_file():
        _fail(f"--out {out} is a folder with other content (no replay.json): give a new or "
              "empty folder", as_json)

    def progress(done: int, total: int) -> None:
        if not as_json:
            err_console.print(f"replay: {done} edges tried ({total} targets)", highlight=False)

    try:
        res = run_replay(graph, impl, edges, seed=seed, corpus=corpus, out=out, bug=bug,
                         validate=not no_validate, progress=progress, workers=workers)
    except (ReplayError, DriverError, ToolchainError, ManifestError, GraphBuildError,
            ValueError) as e:
        _fail(str(e), as_json)
    rep = res.report
    if rep["edges"] == 0:
        _fail("no target edge (nothing to replay)", as_json)
    diverged = rep["diverged"]
    if bug is not None:
        ok = diverged > 0
        verdict = (f"planted bug {bug} shows: {diverged} edges diverged" if ok else
                   f"planted bug {bug} does NOT show: no edge diverged")
    else:
        ok = diverged == 0 and rep["replayed_fraction"] >= min_replayed
        verdict = ("conforms" if ok else
                   f"{diverged} edges diverged" if diverged else
                   f"only {rep['replayed_fraction']:.2%} replayed (< {min_replayed:.0%})")
    rep["ok"] = ok
    rep["verdict"] = verdict
    if as_json:
        print_json(rep)
    else:
        for line in report_lines(rep):
            console.print(line)
        if out is not None:
            console.print(f"wrote {safe(out)}/replay.json, edges.jsonl"
                          + (", divergences/" if res.traces else ""))
    raise typer.Exit(0 if ok else 1)


def report_lines(rep: dict) -> list[str]:
    """Rich-markup lines for people (values from traces and graphs escaped)."""
    n = rep["edges"]
    lines = [f"replay {safe(rep['graph'])} on {safe(rep['impl'])}"
             + (f" with bug {safe(rep['bug'])}" if rep.get("bug") else "")
             + f": {n} target edges ({safe(rep['edges_mode'])}) of {rep['graph_edges']}, "
             f"{rep['seconds']}s, {rep['edges_per_second']} edges/s",
             f"  replayed {rep['replayed']} ({rep['replayed_fraction']:.2%}), diverged "
             f"{rep['diverged']}, not drivable {rep['not_drivable']}"]
    for a, r in rep["per_action"].items():
        if r["edges"]:
            lines.append(f"  {safe(a):32} {r['edges']:7} edges  replayed {r['replayed']:7}  "
                         f"diverged {r['diverged']:5}  not drivable {r['not_drivable']:5}")
    if rep["actions_not_targeted"]:
        lines.append("  actions not targeted: " + safe(", ".join(rep["actions_not_targeted"])))
    for k, c in rep["explained"].items():
        lines.append(f"  explained ({c} edges): {safe(k)}")
    for d in rep["divergences"][:10]:
        lines.append(f"  [red]{safe(d['outcome'])}[/] {safe(d['action'])} at step {d['step']}: "
                     f"{safe(d['reason'] or '')}")
    v = rep.get("validate")
    if v:
        lines.append(f"  trace checker on the {v['traces']} divergence traces: "
                     + ", ".join(f"{k} {c}" for k, c in v["counts"].items() if c))
    colour = "green" if rep["ok"] else "red"
    lines.append(f"[{colour}]{safe(rep['verdict'])}[/]")
    return lines




def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
