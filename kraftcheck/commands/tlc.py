"""`kraftcheck tlc run|suite|list`: model checking the specs with TLC."""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import typer
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from kraftcheck.choices import choice_option
from kraftcore.output import console, err_console, print_json, safe
from kraftcheck.commands import fail as _fail
from kraftcore.tlc.java import ToolchainError, toolchain
from kraftcore.tlc.manifest import PROFILES, ConfigEntry, ManifestError, find_entry, load_manifest
from kraftcheck.tlc.report import print_result, suite_table
from kraftcore.tlc.cache import last_seconds, record_seconds
from kraftcore.tlc.runner import RecoverError, TLCResult, run_config

tlc_app = typer.Typer(help="Model-check the TLA+ specs with TLC (configs in tlc_configs/).",
                      no_args_is_help=True)


def _progress(enabled: bool) -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=None),
                    TextColumn("{task.fields[stats]}"), TimeElapsedColumn(),
                    console=err_console, disable=not enabled, transient=True)


def default_jobs() -> int:
    """TLC runs at once by default: 2 on a machine of 2 cores or more (one TLC worker each:
    TLC's single-threaded phases overlap; the ci profile takes 6 min 40 s this way on 2 cores
    against 10 min 58 s one run at a time with 2 workers), else 1."""
    return min(2, os.cpu_count() or 1)


def run_entries(entries: list[ConfigEntry], *, workers: int | None = None,
                timeout: float | None = None, show_progress: bool = True,
                jobs: int = 1, cache: bool = True) -> list[TLCResult]:
    """Run the configs with a progress display; returns the results in the entries' order.

    `jobs` > 1 runs that many TLC processes at once (each with `workers` workers, default 1):
    TLC's single-threaded phases (start-up, parsing, the liveness checker) then overlap.  The
    configs start longest first, so a long one does not start last: by the seconds of their
    last run (kraftcore/tlc/cache.py `last_seconds`), else by the pinned state count at
    STATES_PER_SECOND.
    `cache`: reuse the result of an identical earlier run (kraftcore/tlc/cache.py)."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if jobs > 1 and workers is None:
        workers = 1
    results: dict[int, TLCResult] = {}
    with _progress(show_progress) as prog:
        overall = prog.add_task(f"{len(entries)} configs", total=len(entries), stats="")

        def one(e: ConfigEntry) -> TLCResult:
            task = prog.add_task(e.name, total=None, stats="starting")

            def cb(gen: int, distinct: int, queue: int) -> None:
                prog.update(task, stats=f"{distinct:,} distinct, {gen:,} generated, {queue:,} queued"
                            if distinct else f"{gen:,} states generated")

            try:
                return run_config(e, workers=workers, timeout=timeout, progress=cb, cache=cache)
            finally:
                prog.remove_task(task)
                prog.advance(overall)

        if jobs == 1:
            for k, e in enumerate(entries):
                results[k] = one(e)
        else:
            known = last_seconds()
            order = sorted(range(len(entries)), key=lambda k: -known.get(
                entries[k].name, (entries[k].distinct_states or 0) / STATES_PER_SECOND))
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = {k: pool.submit(one, entries[k]) for k in order}
                for k, f in futures.items():
                    results[k] = f.result()
    ran = [results[k] for k in range(len(entries))]
    if jobs > 1:
        record_seconds({r.name: r.seconds for r in ran if isinstance(r, TLCResult)
                        and r.cached_from is None and r.status in ("ok", "violation", "deadlock")})
    return ran


# a rough rate of one TLC worker on the KIP-595 configs (kraft-deep-lossy: 1,019,327 states in about
# 140 s), to order configs never run here by their pinned count
STATES_PER_SECOND = 7000




@tlc_app.command("list")
def list_configs(profile: str = choice_option(None, "--profile", values=PROFILES,
                                              what="TLC profile", help="Only this profile."),
                 as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the configs of the manifest (tlc_configs/*.toml)."""
    try:
        entries = [e for e in load_manifest() if profile is None or e.profile == profile]
    except ManifestError as e:
        _fail(str(e), as_json)
    if as_json:
        print_json([e.to_json() for e in entries])
        return
    for e in entries:
        console.print(f"{e.name:34} {e.profile:5} {'demo' if e.demo else '':4} expect "
                      f"{e.expect:28} {e.description}")


@tlc_app.command("run")
def run(config: str = typer.Argument(..., help="Config name or tlc_configs/NAME.cfg."),
        workers: int = typer.Option(None, help="TLC workers (default: the manifest's, 2)."),
        timeout: float = typer.Option(None, help="Wall-clock limit in seconds."),
        dump: Path = typer.Option(None, help="Also dump the state graph (dot, action labels)."),
        diagram: Path = typer.Option(None, help="Draw the counterexample as a message-sequence "
                                                "chart per replica (.svg, .png or .pdf)."),
        recover: Path = typer.Option(None, help="Resume from the TLC checkpoint a stopped run "
                                                "kept (its `checkpoint`); refused if the spec "
                                                "or config changed since."),
        checkpoint_minutes: int = typer.Option(None, min=1, help="TLC's checkpoint interval "
                                                                 "(default 30 minutes)."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Run TLC on one config; exit 1 unless the outcome is the expected one.

    With --diagram, exit 1 also when TLC found no counterexample to draw.  A run stopped by its
    timeout keeps TLC's last checkpoint and prints it: `--recover` resumes from there."""
    from kraftcheck.tlc.diagram import FORMATS, DiagramError, draw_counterexample

    if diagram is not None and diagram.suffix.lower() not in FORMATS:
        _fail(f"--diagram {diagram}: the file must end in {', '.join(FORMATS)}", as_json)
    try:
        entry = find_entry(config)   # a path must be the file of a manifest config (no TLC yet)
        toolchain()
    except (ToolchainError, ManifestError) as e:
        _fail(str(e), as_json)
    with _progress(not as_json) as prog:
        task = prog.add_task(entry.name, total=None, stats="starting")
        try:
            r = run_config(entry, workers=workers, timeout=timeout,
                           dump=dump.resolve() if dump else None, recover=recover,
                           checkpoint_minutes=checkpoint_minutes,
                           progress=lambda g, d, q: prog.update(
                               task, stats=f"{d:,} distinct, {g:,} generated, {q:,} queued"))
        except RecoverError as e:
            prog.stop()
            _fail(f"--recover {e}", as_json)
    drawn = None
    if diagram is not None:
        try:
            drawn = draw_counterexample(r.to_json(), diagram)
        except DiagramError as e:
            drawn = e
    if as_json:
        doc = r.to_json()
        if diagram is not None:
            doc["diagram"] = str(drawn) if isinstance(drawn, Path) else None
            if isinstance(drawn, DiagramError):
                doc["diagram_error"] = str(drawn)
        print_json(doc)
    else:
        print_result(console, r)
        if isinstance(drawn, Path):
            console.print(f"diagram: {drawn}")
        elif isinstance(drawn, DiagramError):
            err_console.print(f"[red]error:[/] {drawn}")
    if r.unavailable() is not None:
        # TLC could not run (a junk or empty jar, a JVM that did not start): could not judge
        if not as_json:
            err_console.print(f"[red]error:[/] {safe(r.unavailable())}")
        raise typer.Exit(2)
    raise typer.Exit(0 if r.as_expected and not isinstance(drawn, DiagramError) else 1)


@tlc_app.command("diagram")
def diagram_cmd(result: Path = typer.Argument(..., help="A result saved by `tlc run --json`."),
                out: Path = typer.Option(..., "--out", help="The chart (.svg, .png or .pdf)."),
                as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Draw the counterexample of a saved TLC result as a message-sequence chart."""
    import json

    from kraftcheck.tlc.diagram import DiagramError, draw_counterexample

    try:
        doc = json.loads(result.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or "name" not in doc:
            raise DiagramError(f"{result}: not a `kraftcheck tlc run --json` result")
        path = draw_counterexample(doc, out)
    except OSError as e:
        _fail(f"{result}: {e.strerror or e}", as_json)
    except json.JSONDecodeError as e:
        _fail(f"{result}: line {e.lineno}: not JSON ({e.msg})", as_json)
    except (DiagramError, KeyError, TypeError) as e:
        _fail(f"{result}: cannot draw: {e}", as_json)
    if as_json:
        print_json({"diagram": str(path)})
    else:
        console.print(f"diagram: {path}")


@tlc_app.command("suite")
def suite(profile: str = choice_option("ci", "--profile", values=PROFILES + ("all",),
                                      what="TLC profile", help="The profile to run."),
          only: str = typer.Option(None, help="Only configs whose name matches this regex."),
          workers: int = typer.Option(None, help="TLC workers per run (default: the manifest's; "
                                             "1 with --jobs > 1)."),
          jobs: int = typer.Option(None, "--jobs", min=1, show_default=False,
                                   help="TLC runs at once, one TLC worker each unless --workers "
                                        "(default: 2 on 2 cores or more, else 1). --jobs 1 runs "
                                        "one at a time with the manifest's workers."),
          timeout: float = typer.Option(None, help="Per-config wall-clock limit (seconds)."),
          counterexamples: bool = typer.Option(False, help="Print counterexample tables."),
          cache: bool = typer.Option(True, help="Reuse the result of an identical earlier run "
                                                "(same modules, config, TLC jar and options; "
                                                "kraftcore/tlc/cache.py)."),
          as_json: bool = typer.Option(False, "--json", help="Print the results as JSON.")) -> None:
    """Run every config of a profile; exit 1 unless every outcome is the expected one."""
    if profile not in PROFILES + ("all",):
        _fail(f"unknown profile {profile!r} (ci, deep, bugs, all)", as_json)
    try:
        toolchain()
        entries = [e for e in load_manifest() if profile in ("all", e.profile)
                   and (only is None or re.search(only, e.name))]
    except (ToolchainError, ManifestError) as e:
        _fail(str(e), as_json)
    if not entries:
        _fail(f"no config in profile {profile!r}" + (f" matching {only!r}" if only else ""), as_json)
    t0 = time.monotonic()
    results = run_entries(entries, workers=workers, timeout=timeout, show_progress=not as_json,
                          jobs=jobs or default_jobs(), cache=cache)
    total = time.monotonic() - t0
    ok = all(r.as_expected for r in results)
    if as_json:
        print_json({"profile": profile, "all_as_expected": ok, "seconds": round(total, 1),
                    "results": [r.to_json() for r in results]})
    else:
        console.print(suite_table(results))
        for r in results:
            if not r.as_expected or (counterexamples and r.counterexample):
                print_result(console, r, show_counterexample=counterexamples or not r.as_expected)
        console.print(f"{sum(r.as_expected for r in results)}/{len(results)} as expected "
                      f"in {total:.0f}s")
    unexpected = [r for r in results if not r.as_expected]
    # 2 (could not run) when every unexpected outcome is TLC not running at all
    raise typer.Exit(0 if ok else 2 if all(r.unavailable() for r in unexpected) else 1)


def register(app: typer.Typer) -> None:
    app.add_typer(tlc_app, name="tlc")
